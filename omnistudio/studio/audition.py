"""Auditions: a voice reading the producer's own paragraph, the last two kept for an instant A/B.

An audition is a :class:`Heard`: one voice (an anchor, or a blend at a ratio) reading sentences (the
paragraph under the editor's cursor in its own language, or :data:`FIXED_LINE` when the editor is empty).
Its sentences carry no speaker of their own, so the take's voice reads them all; its seed is the
settings' seed whether or not the seed is locked, so hearing the same voice on the same line again is a
take-cache hit (no render), and :meth:`Auditions.flip` (one key) plays the audition before the last one:
the last two anchors, or the last two slider ratios, heard on that line.

The morph slider's neighbours (one step either side of the ratio at rest) are auditions too, rendered
ahead into the take cache by the background builds (:meth:`Prebuild.ahead
<omnistudio.studio.prebuild.Prebuild.ahead>`) so that the next step of the slider plays at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from omnistudio.script import Blend, Sentence
from omnistudio.voices.resolve import VoiceRef

FIXED_LINE = {"en": "Good evening, and welcome to the news at nine.",
              "es": "Buenas noches, estas son las noticias de las nueve."}
SLIDER_STEP = 0.05  # the morph slider's arrow-key step: the neighbours rendered ahead are one step away


@dataclass(frozen=True)
class Heard:
    """One audition: ``voice`` reading ``sentences`` (their own speakers cleared)."""

    voice: VoiceRef
    sentences: tuple[Sentence, ...]

    @classmethod
    def of(cls, voice: VoiceRef, sentences: Sequence[Sentence]) -> Heard:
        return cls(voice, tuple(replace(s, id=i, speaker=None, blend=None) for i, s in enumerate(sentences)))

    @property
    def lang(self) -> str:
        return self.sentences[0].lang


def fixed_line(lang: str) -> list[Sentence]:
    """The audition line for an empty editor, in ``lang``."""
    text = FIXED_LINE[lang]
    return [Sentence(0, text, None, lang, 1, end=len(text))]


def neighbours(blend: Blend, step: float = SLIDER_STEP) -> list[Blend]:
    """The ratios one slider step either side of ``blend``'s (within 0..1)."""
    out = []
    for alpha in (blend.alpha - step, blend.alpha + step):
        alpha = round(alpha, 2)
        if 0.0 <= alpha <= 1.0:
            out.append(Blend(blend.a, blend.b, alpha))
    return out


class Auditions:
    """The auditions heard, the last two kept; ``play(heard)`` starts one (the controller's)."""

    def __init__(self, play: Callable[[Heard], None]) -> None:
        self._play = play
        self._lock = threading.Lock()
        self.history: list[Heard] = []  # oldest first, at most two

    def hear(self, heard: Heard) -> None:
        with self._lock:
            if not self.history or self.history[-1] != heard:
                self.history = [*self.history[-1:], heard]
        self._play(heard)

    def flip(self) -> Heard | None:
        """Play the audition before the last one (it becomes the last); None when fewer than two were heard."""
        with self._lock:
            if len(self.history) < 2:
                return None
            self.history = [self.history[1], self.history[0]]
            heard = self.history[-1]
        self._play(heard)
        return heard
