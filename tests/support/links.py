"""Stand-in engine links for take-pipeline tests: deterministic audio, every call recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from omnistudio.take.link import LinkInfo, PrepareEvent, Rendered, RenderItem, VoiceList, WholeGroupLink
from omnistudio.take.options import TakeOptions
from omnistudio.voices.resolve import VoiceRef


class FakeLink(WholeGroupLink):
    """An EngineLink that is not an engine (as a remote one is): deterministic tones, counted calls."""

    sample_rate = 24_000
    info = LinkInfo("fake", "cpu", "float32", "fast")

    def __init__(self, seconds: float = 0.5) -> None:
        self.seconds = seconds
        self.calls: list[list[int]] = []
        self.said: list[str] = []  # every item's text, as the model would get it
        self.prepared: list[tuple[str, str]] = []

    def prepare(self, voices: Sequence[tuple[VoiceRef, str]], progress: Any = None, cancel: Any = None) -> None:
        for n, (ref, lang) in enumerate(voices, start=1):
            self.prepared.append((ref.key(), lang))
            if progress:
                progress(PrepareEvent(n, len(voices), ref.key(), lang, "done"))

    def render(self, items: Sequence[RenderItem], options: TakeOptions, cancel: Any = None) -> list[Rendered]:
        self.calls.append([i.index for i in items])
        self.said.extend(i.text for i in items)
        n = int(self.seconds * self.sample_rate)
        return [Rendered(i.index, np.random.default_rng(i.seed).uniform(-0.3, 0.3, n).astype(np.float32), None, 1)
                for i in items]

    def voices(self) -> VoiceList:
        return VoiceList((), ())

    def close(self) -> None:
        pass
