"""STAND-IN for take/pipeline.py and take/sinks.py of issue 12 (not on main yet), in their shape:
``build_take(link, script, options)`` / ``Take(link, planned, options)`` and ``Take.run(sinks,
progress, cancel)`` with sinks getting ``begin/chunk/tail/end/abort``. Smallest form: no take
cache, no 1-ahead. Deleted when the real pipeline lands; only server/pipeline.py imports it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from omnistudio.audio.finishing import live_stitcher, pauses
from omnistudio.errors import Cancelled, UserError
from omnistudio.script import parse_script
from omnistudio.take.link import RenderItem
from omnistudio.take.options import TakeOptions, sentence_seed
from omnistudio.take.stream import Chunk, sentence_voice
from omnistudio.voices.resolve import VoiceRef


@dataclass(frozen=True)
class PlannedSentence:
    id: int
    text: str
    voice: VoiceRef
    lang: str
    seed: int
    pause_s: float
    line: int = 1
    speaker: str | None = None

    def item(self) -> RenderItem:
        return RenderItem(self.id, self.text, self.voice, self.lang, self.seed)


class Sink:
    def begin(self, take: Any) -> None: ...
    def chunk(self, chunk: Chunk, piece: np.ndarray) -> None: ...
    def tail(self, pcm: np.ndarray) -> None: ...
    def end(self, result: Any) -> None: ...
    def abort(self) -> None: ...


@dataclass
class TakeResult:
    pcm: np.ndarray
    sample_rate: int
    steps: int
    ttfa_s: float
    total_s: float


class TakeCache:
    def __init__(self, max_bytes: int = 0) -> None:
        self.max_bytes = max_bytes


def plan(text: str, options: TakeOptions, base_seed: int | None = None, speakers: Any = None) -> list[PlannedSentence]:
    options = options.validated()
    script = parse_script(text, options.lang, speakers)
    out = []
    for s, gap in zip(script.sentences, pauses([s.line for s in script.sentences])):
        voice = sentence_voice(s, options.voice)
        if voice is None:
            raise UserError(f"line {s.line} has no speaker tag and no voice is selected")
        out.append(PlannedSentence(s.id, s.text, voice, s.lang, sentence_seed(options.seed, s.text, voice.key(), s.lang),
                                   gap, s.line, s.speaker))
    return out


class Take:
    def __init__(self, link: Any, sentences: Sequence[PlannedSentence], options: TakeOptions,
                 cache: Any = None, base_seed: int = 0, lookahead: int = 1) -> None:
        self.link, self.sentences, self.options, self.base_seed = link, list(sentences), options.validated(), base_seed

    def run(self, sinks: Sequence[Sink] = (), progress: Any = None, cancel: threading.Event | None = None,
            on_chunk: Any = None) -> TakeResult:
        cancel = cancel or threading.Event()
        started = time.perf_counter()
        for sink in sinks:
            sink.begin(self)
        try:
            self.link.prepare(list(dict.fromkeys((s.voice, s.lang) for s in self.sentences)), progress, cancel)
            stitcher = live_stitcher(self.link.sample_rate, self.options.finishing)
            pieces, steps, ttfa = [], 0, None
            for s in self.sentences:
                t0 = time.perf_counter() - started
                r = self.link.render([s.item()], self.options, cancel)[0]
                if cancel.is_set():
                    raise Cancelled("take cancelled")
                if r.error:
                    raise UserError(f"1 of {len(self.sentences)} sentences failed; nothing written")
                ttfa = ttfa if ttfa is not None else time.perf_counter() - started
                steps += r.steps
                chunk = Chunk(s, r.pcm, self.link.sample_rate, r.timings, r.steps, t0, time.perf_counter() - started)
                pieces.append(stitcher.push(r.pcm, s.pause_s, sentence_id=s.id))
                for sink in sinks:
                    sink.chunk(chunk, pieces[-1])
            pieces.append(stitcher.finish())
            for sink in sinks:
                sink.tail(pieces[-1])
        except BaseException:
            for sink in sinks:
                sink.abort()
            raise
        result = TakeResult(np.concatenate(pieces), self.link.sample_rate, steps, ttfa or 0.0,
                            time.perf_counter() - started)
        for sink in sinks:
            sink.end(result)
        return result


def build_take(link: Any, script: str, options: TakeOptions, cache: Any = None, speakers: Any = None) -> Take:
    options = options.validated()
    return Take(link, plan(script, options, None, speakers), options, cache, options.seed)
