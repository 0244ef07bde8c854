"""How the studio reads a script now, as its helpers (the project's takes, the background builds) see the
controller (:class:`omnistudio.studio.controller.Studio` is one): a protocol of four calls, so a helper
reads the script as the controller does without importing it (the controller imports the helpers).
Everything else a helper uses comes through its constructor: the command queue, the take cache, the link,
the take player, the events' way out."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from omnistudio.script import Sentence
    from omnistudio.take.options import TakeOptions
    from omnistudio.voices.resolve import VoiceRef

VoiceFor = Callable[[Any], Any]  # a RenderItem -> the prompt object (tests: one fixed reference)


class ScriptReading(Protocol):
    """The selected voice (an anchor, a blend, a project's duo), the script's language, the settings as take
    options (language, seed, steps, the lexicon), and a script's sentences as the editor's are read (its duos
    included)."""

    @property
    def language(self) -> str: ...

    def voice(self, anchor: str | None = None) -> VoiceRef | None: ...

    def take_options(self, voice: VoiceRef | None = None) -> TakeOptions: ...

    def parse(self, text: str) -> list[Sentence]: ...
