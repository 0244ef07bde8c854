"""The morph slider bound to the script: it shows and rewrites the ``[a+b@alpha]`` of the paragraph under
the cursor, and plays each ratio the producer rests on.

- On a paragraph with its own tag the slider is that paragraph's: a blend tag shows its partner and ratio
  (the label names both anchors); a plain ``[a]`` tag with a partner chosen (Ctrl+B, Ctrl+D) becomes
  ``[a+partner@alpha]`` once the slider moves. The tag is rewritten when the slider rests (``REST_S``), so
  one gesture is one undo step; ``@1.00`` is the first anchor alone, as everywhere a blend is read.
- At rest the paragraph's first sentence is rendered at the new ratio and played (an audition: it cancels
  an older one; Ctrl+R flips between the last two ratios heard), and the ratios one step either side (the
  producer's last step: 0.05, or 0.01 with shift) are rendered ahead in the background, so the next step
  of the slider is a cache hit.
- A paragraph with no tag of its own keeps the studio's blend of the selected anchor (auditions only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from textual.timer import Timer

from omnistudio.errors import UserError
from omnistudio.script import Blend
from omnistudio.studio.audition import Heard, neighbours
from omnistudio.studio.events import Notice
from omnistudio.studio.paragraph import Paragraph, TextEdit, with_blend
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from collections.abc import Callable

    from omnistudio.script import Sentence
    from omnistudio.studio.controller import Studio

REST_S = 0.25  # the slider is at rest once it has not moved for this long


class MorphHost(Protocol):
    """What the binding needs of its screen."""

    @property
    def studio(self) -> Studio: ...

    def paragraph(self) -> tuple[Paragraph, list[Sentence]]: ...

    def here(self) -> Paragraph: ...

    def apply_edit(self, edit: TextEdit) -> None: ...

    def show_morph(self, anchor: str, partner: str, value: float | None) -> None: ...

    def slider_step(self) -> float: ...

    def set_timer(self, delay: float, callback: Callable[[], object]) -> Timer: ...


class MorphBinding:
    """The slider's state between gestures: the rest timer and the value it rests on."""

    def __init__(self, host: MorphHost) -> None:
        self.host = host
        self._timer: Timer | None = None
        self.rests = 0  # gestures that came to rest (tests wait on it)

    def pair(self, here: Paragraph, sentences: list[Sentence]) -> tuple[str, str] | None:
        """The two anchors the slider blends on ``here``: its blend tag's, or its plain tag's anchor with the
        studio's partner; None where the paragraph has no tag of its own (or no partner is chosen)."""
        if here.blend is not None:
            return here.blend.a, here.blend.b
        studio = self.host.studio
        if here.tag is not None and here.tag.speaker and sentences and studio.partner \
                and studio.partner != here.tag.speaker:
            return here.tag.speaker, studio.partner
        return None

    def sync(self) -> None:
        """Show the paragraph under the cursor on the slider (cursor moved, script edited)."""
        if self._timer is not None:
            return  # a gesture is under way: its rest rewrites the tag, then this shows it
        here = self.host.here()
        studio = self.host.studio
        if here.blend is not None:
            self.host.show_morph(here.blend.a, here.blend.b, here.blend.alpha)
        else:
            anchor = here.tag.speaker if here.tag is not None and here.tag.speaker else studio.anchor
            self.host.show_morph(anchor or "—", studio.partner or "—", None)

    def moved(self, value: float) -> bool:
        """The producer moved the slider; False when nothing is bound and no partner is chosen."""
        here, sentences = self.host.paragraph()
        studio = self.host.studio
        if self.pair(here, sentences) is None:
            if studio.partner is None:
                return value >= 1.0
            studio.set_blend(studio.partner, value)
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.host.set_timer(REST_S, lambda: self.rest(value))
        return True

    def rest(self, value: float) -> None:
        """The slider rests on ``value``: rewrite the tag (one undo step), play the ratio, render its neighbours."""
        self._timer = None
        self.rests += 1
        here, sentences = self.host.paragraph()
        studio = self.host.studio
        pair = self.pair(here, sentences)
        if pair is None:
            voice = studio.voice()
            if voice is not None and sentences:
                studio.hear(voice, sentences[:1])
            return
        try:
            blend = Blend(pair[0], pair[1], value)
        except UserError as exc:
            studio.report(Notice(str(exc), "warning"))
            return
        if here.blend != blend:
            self.host.apply_edit(with_blend(here, blend))
        self.sync()
        if not sentences:
            return
        first = sentences[:1]
        studio.hear(VoiceRef(blend=blend), first)
        step = self.host.slider_step()  # one of the producer's own steps either side (0.05, or 0.01 with shift)
        studio.prebuild.ahead([Heard.of(VoiceRef(blend=b), first) for b in neighbours(blend, step)])
