"""What the studio's helpers (the project's takes, the background builds, the lexicon) read and call of the
controller that owns them (:class:`omnistudio.studio.controller.Studio` is one): a protocol, so a helper holds
a typed studio without importing the controller, which imports the helpers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from omnistudio.audio.player import Player
    from omnistudio.projects.project import Project
    from omnistudio.script import Sentence
    from omnistudio.studio.commands import CommandQueue
    from omnistudio.studio.events import StudioEvent
    from omnistudio.studio.playback import Schedule
    from omnistudio.studio.settings import StudioSettings
    from omnistudio.studio.take_view import TakeView
    from omnistudio.take.link import EngineLink, PrepareEvent
    from omnistudio.take.options import TakeOptions
    from omnistudio.take.pipeline import TakeCache
    from omnistudio.take.stream import Chunk
    from omnistudio.voices.resolve import VoiceRef

VoiceFor = Callable[[Any], Any]  # a RenderItem -> the prompt object (tests: one fixed reference)


class StudioCore(Protocol):
    """The controller as its helpers see it: its state, queue, player, caches and the calls they make."""

    @property
    def settings(self) -> StudioSettings: ...

    @property
    def state(self) -> str: ...

    @property
    def loaded(self) -> bool: ...  # the link is up and has answered once

    @property
    def rendering_play(self) -> bool: ...

    @property
    def link(self) -> EngineLink | None: ...

    @property
    def player(self) -> Player | None: ...

    @property
    def voice_resolver(self) -> VoiceFor | None: ...

    @property
    def commands(self) -> CommandQueue: ...

    @property
    def schedule(self) -> Schedule: ...

    @property
    def cache(self) -> TakeCache: ...

    @property
    def view(self) -> TakeView: ...

    @property
    def play_cancel(self) -> threading.Event: ...  # the current play's cancel flag

    @property
    def project(self) -> Project | None: ...  # the open project

    def report(self, event: StudioEvent) -> None: ...

    def parse(self, text: str) -> list[Sentence]: ...

    def voice(self, anchor: str | None = None) -> VoiceRef | None: ...

    def take_options(self, voice: VoiceRef | None = None) -> TakeOptions: ...

    def stop(self) -> None: ...

    def loaded_link(self) -> EngineLink: ...

    def loaded_player(self) -> Player: ...

    def set_state(self, state: str, detail: str = "") -> None: ...

    def preparing(self, event: PrepareEvent) -> None: ...

    def on_rendered(self, chunk: Chunk) -> None: ...
