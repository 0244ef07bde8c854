"""A request's take, built by the take pipeline, with a network sink that turns it into events.

The take runs on its own thread (its stream blocks in ``link.render`` while the engine worker
batches its sentences with other requests'); the :class:`NetworkSink` puts each event on the
request's asyncio queue, which the route turns into HTTP chunks, SSE events or WebSocket frames.
The routes differ only in that last step.

Events, in order: per sentence ``SentenceStart`` -> ``Audio`` (the live-stitched piece; with
``stitch=False`` the sentence's PCM exactly as rendered) -> ``SentenceEnd`` (with the job's
``timestamps``, its span and words, :mod:`omnistudio.server.timestamps`, timed after its audio was
queued); then ``Audio`` (the stitcher's tail) and one ``Done`` -- or ``Failed``. A cancel (client
gone, WebSocket cancel, time limit) stops the render at the next diffusion step.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from omnistudio.audio.finishing import finish_pcm
from omnistudio.audio.loudness import measure
from omnistudio.captions.timing import SentenceTiming
from omnistudio.errors import Cancelled, UserError, describe, ran_past
from omnistudio.server.jobs import SpeechJob
from omnistudio.server.pipeline import PlannedSentence, Sink, Take, TakeCache
from omnistudio.server.scheduler import CancelEvent
from omnistudio.server.timestamps import SentenceTimer, server_hearer
from omnistudio.take.incoming import IncomingScript, IncomingTake
from omnistudio.take.link import EngineLink
from omnistudio.take.rows import SentenceRow
from omnistudio.take.sinks import SinkTake
from omnistudio.take.stream import Chunk


@dataclass(frozen=True)
class SentenceStart:
    sentence: PlannedSentence


@dataclass(frozen=True)
class Audio:
    index: int
    pcm: np.ndarray


@dataclass(frozen=True)
class SentenceEnd:
    sentence: PlannedSentence
    frames: int
    steps: int
    timings: Mapping[str, object]
    loudness: Mapping[str, object]
    timing: SentenceTiming | None = None  # its span in the take (and words): only when the job asks


@dataclass(frozen=True)
class Done:
    pcm: np.ndarray  # the whole take (normalised when the job asked for a target)
    summary: dict[str, Any]
    sentences: tuple[SentenceTiming, ...] = ()  # every sentence's timing, when the job asks for them
    rows: tuple[SentenceRow, ...] = ()  # the take's sentence rows (story, line, voice): what a file says of them
    options: Mapping[str, object] = field(default_factory=dict)  # the take's options (seed, steps, voice...)


@dataclass(frozen=True)
class Failed:
    message: str
    status: int  # 400 the request's fault, 499 cancelled, 504 time limit, 500 otherwise


def _figure(value: float) -> float | None:
    return round(float(value), 3) if math.isfinite(value) else None


def loudness_figures(pcm: np.ndarray, sample_rate: int) -> dict[str, float | None]:
    report = measure(pcm, sample_rate)
    return {"integrated_lufs": _figure(report.integrated_lufs), "true_peak_dbtp": _figure(report.true_peak_dbtp),
            "crest_factor_db": _figure(report.crest_factor_db)}


RunEvent = SentenceStart | Audio | SentenceEnd | Done | Failed  # what a take's run hands the event loop


class NetworkSink(Sink):
    """The take's sink for a network client: every piece and figure becomes an event."""

    def __init__(self, run: TakeRun) -> None:
        self.run = run
        self.timer: SentenceTimer | None = None

    def begin(self, take: SinkTake) -> None:
        mode = self.run.job.timestamps
        if mode is not None:
            hearer = server_hearer() if mode == "word" else None
            self.timer = SentenceTimer(mode, take.link.sample_rate, take.finishing, take.options.lexicon, hearer)

    def chunk(self, chunk: Chunk, piece: np.ndarray) -> None:
        run, sentence = self.run, cast(PlannedSentence, chunk.sentence)  # a server's take is planned
        run.put(SentenceStart(sentence))
        if run.ttfa_s is None:
            run.ttfa_s = time.perf_counter() - run.started
        if run.job.target_lufs is None:
            run.put(Audio(sentence.id, piece if run.job.stitch else chunk.pcm))
        timings = chunk.timings.as_dict() if chunk.timings is not None else {}
        timing = self.timer.time(chunk) if self.timer is not None else None  # after its audio went out
        if timing is not None:
            run.timed.append(timing)
        run.put(SentenceEnd(sentence, int(len(chunk.pcm)), int(chunk.steps), timings,
                            loudness_figures(chunk.pcm, run.link.sample_rate), timing))
        run.pieces.append(piece if run.job.stitch else chunk.pcm)

    def tail(self, pcm: np.ndarray) -> None:
        if self.run.job.stitch:
            self.run.pieces.append(pcm)
            if self.run.job.target_lufs is None:
                self.run.put(Audio(-1, pcm))


@dataclass
class TakeRun:
    """One request's take on a thread; iterate ``events()`` from the event loop."""

    link: EngineLink  # the server's shared (batching) link
    job: SpeechJob
    time_limit_s: float = 300.0
    cancel: CancelEvent = field(default_factory=CancelEvent)
    timed_out: bool = False
    ttfa_s: float | None = None
    wall_s: float = 0.0
    audio_s: float = 0.0
    pieces: list[np.ndarray] = field(default_factory=list)
    timed: list[SentenceTiming] = field(default_factory=list)  # the sentences timed so far (timestamps)
    cache: TakeCache = field(default_factory=lambda: TakeCache(0))  # the server's shared one (0 bytes: off)
    incoming: IncomingScript | None = None  # a streamed input: its sentences arrive as the client writes them
    notices: list[tuple[str, int]] = field(default_factory=list)  # a streamed input's refusals and their status
    violation: str | None = None  # a message that broke the protocol: ``error`` and close 1008

    def start(self, loop: asyncio.AbstractEventLoop) -> TakeRun:
        self._loop = loop
        self._queue: asyncio.Queue[RunEvent] = asyncio.Queue()
        self.started = time.perf_counter()
        self._timer = threading.Timer(self.time_limit_s, self._time_up)
        self._timer.daemon = True
        self._timer.start()
        threading.Thread(target=self._run, name="omnistudio-take", daemon=True).start()
        return self

    def _time_up(self) -> None:
        self.timed_out = True
        self.cancel.set()

    def put(self, event: RunEvent) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, event)

    async def events(self) -> AsyncIterator[RunEvent]:
        while True:
            event = await self._queue.get()
            yield event
            if isinstance(event, (Done, Failed)):
                return

    def _run(self) -> None:
        try:
            self.put(self._render())
        except Cancelled:
            self.put(Failed(ran_past(self.time_limit_s), 504)
                     if self.timed_out else Failed("cancelled", 499))
        except UserError as exc:
            self.put(Failed(str(exc), 400))
        except Exception as exc:  # noqa: BLE001 - reported to this request only
            self.put(Failed(describe(exc), 500))
        finally:
            self._timer.cancel()
            self.wall_s = time.perf_counter() - self.started

    def _render(self) -> Done:
        job = self.job
        take = (IncomingTake(self.link, self.incoming, self.cache) if self.incoming is not None
                else Take(self.link, job.sentences, job.options, self.cache, job.options.seed))
        result = take.run([NetworkSink(self)], cancel=self.cancel)
        if self.cancel.is_set():
            raise Cancelled("request cancelled")
        pcm = np.concatenate(self.pieces) if self.pieces else np.zeros(0, dtype=np.float32)
        if job.target_lufs is not None:  # the finishing `render -o` applies: the same samples

            # one channel at the engine's rate, measured dual-mono as the server always has (its headers and
            # its WAV's iXML say so); the rule gives the target and the ceiling
            finishing = replace(take.finishing, target_lufs=job.target_lufs, profile=None,
                                true_peak_db=take.finishing.true_peak_db if job.true_peak_db is None else job.true_peak_db)
            pcm = finish_pcm(result.chunks, self.link.sample_rate, finishing)
            self.put(Audio(-1, pcm))
        wall = time.perf_counter() - self.started
        self.audio_s = len(pcm) / self.link.sample_rate
        summary = {"sentences": len(take.sentences), "frames": int(len(pcm)), "audio_s": round(self.audio_s, 4),
                   "wall_s": round(wall, 4), "ttfa_s": round(self.ttfa_s or wall, 4),
                   "rtf": round(wall / self.audio_s, 4) if self.audio_s else None,
                   "steps": int(getattr(result, "steps", 0)), **loudness_figures(pcm, self.link.sample_rate)}
        return Done(pcm, summary, tuple(self.timed), tuple(result.sentences), dict(result.options))
