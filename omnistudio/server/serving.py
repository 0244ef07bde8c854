"""A request's take: planned sentences rendered through the shared link, as a stream of events.

The take runs on its own thread (it blocks in ``link.render`` while the engine worker batches it
with other requests' items); each event goes to the request's asyncio queue, which the route
turns into HTTP chunks, SSE events or WebSocket frames. The route's sinks are the only thing
that differs between the routes.

Events, in order: ``SentenceStart`` -> ``Audio`` (stitched PCM that is final now; with
``stitch=False`` the item's PCM exactly as rendered) -> ``SentenceEnd`` per sentence, then one
``Done`` (or ``Failed``). A cancel (client gone, WebSocket cancel, time limit) stops the render at
the next diffusion step.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from omnistudio.audio.loudness import measure
from omnistudio.errors import Cancelled, UserError, describe
from omnistudio.server.pipeline import RenderItem, Rendered
from omnistudio.server.protocol import SpeechJob
from omnistudio.server.scheduler import CancelEvent


@dataclass(frozen=True)
class SentenceStart:
    item: RenderItem


@dataclass(frozen=True)
class Audio:
    index: int
    pcm: np.ndarray


@dataclass(frozen=True)
class SentenceEnd:
    item: RenderItem
    rendered: Rendered
    loudness: dict[str, Any]


@dataclass(frozen=True)
class Done:
    pcm: np.ndarray  # the whole take (normalised when the job asked for a target)
    summary: dict[str, Any]


@dataclass(frozen=True)
class Failed:
    message: str
    status: int  # 400 for the user's error, 499 cancelled, 504 time limit, 500 otherwise


def _figure(value: float) -> float | None:
    return round(float(value), 3) if math.isfinite(value) else None


@dataclass
class TakeRun:
    """One request's take on a thread; iterate ``events()`` from the event loop."""

    link: Any
    job: SpeechJob
    time_limit_s: float = 300.0
    cancel: CancelEvent = field(default_factory=CancelEvent)
    timed_out: bool = False
    ttfa_s: float | None = None
    wall_s: float = 0.0
    audio_s: float = 0.0

    def start(self, loop: asyncio.AbstractEventLoop) -> TakeRun:
        self._loop = loop
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._started = time.perf_counter()
        self._timer = threading.Timer(self.time_limit_s, self._time_up)
        self._timer.daemon = True
        self._timer.start()
        threading.Thread(target=self._run, name="omnistudio-take", daemon=True).start()
        return self

    def _time_up(self) -> None:
        self.timed_out = True
        self.cancel.set()

    def _put(self, event: Any) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, event)

    async def events(self) -> Any:
        while True:
            event = await self._queue.get()
            yield event
            if isinstance(event, (Done, Failed)):
                return

    # ----------------------------------------------------------- the thread
    def _run(self) -> None:
        try:
            self._put(self._render())
        except Cancelled:
            self._put(Failed(f"the request ran past the server's {self.time_limit_s:g} s limit", 504)
                      if self.timed_out else Failed("cancelled", 499))
        except UserError as exc:
            self._put(Failed(str(exc), 400))
        except Exception as exc:  # noqa: BLE001 - reported to this request only
            self._put(Failed(describe(exc), 500))
        finally:
            self._timer.cancel()
            self.wall_s = time.perf_counter() - self._started

    def _render(self) -> Done:
        from omnistudio.audio.dsp import Stitcher

        job, link = self.job, self.link
        link.prepare(job.voices, None, self.cancel)
        stitcher = Stitcher(link.sample_rate, seed=job.options.seed) if job.stitch else None
        pieces: list[np.ndarray] = []
        sentences = []
        for item in job.items:
            if self.cancel.is_set():
                raise Cancelled("request cancelled")
            self._put(SentenceStart(item))
            rendered = link.render([item], job.options, self.cancel)[0]
            if rendered.error:
                raise UserError(f"sentence {item.index + 1}: {rendered.error}")
            piece = stitcher.push(rendered.pcm, item.pause_s, item.index) if stitcher else rendered.pcm
            if self.ttfa_s is None:
                self.ttfa_s = time.perf_counter() - self._started
            pieces.append(piece)
            if job.target_lufs is None:
                self._put(Audio(item.index, piece))
            loudness = measure(rendered.pcm, link.sample_rate)
            sentences.append(rendered)
            self._put(SentenceEnd(item, rendered, {"integrated_lufs": _figure(loudness.integrated_lufs),
                                                   "true_peak_dbtp": _figure(loudness.true_peak_dbtp)}))
        if stitcher is not None:
            pieces.append(stitcher.finish())
            if job.target_lufs is None:
                self._put(Audio(-1, pieces[-1]))
        pcm = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
        if job.target_lufs is not None:
            from omnistudio.audio.export import normalise

            pcm = normalise(pcm, link.sample_rate, job.target_lufs).pcm
            self._put(Audio(-1, pcm))
        return Done(pcm, self._summary(pcm, sentences))

    def _summary(self, pcm: np.ndarray, sentences: list[Rendered]) -> dict[str, Any]:
        report = measure(pcm, self.link.sample_rate)
        wall = time.perf_counter() - self._started
        self.audio_s = len(pcm) / self.link.sample_rate
        return {"sentences": len(sentences), "frames": int(len(pcm)), "audio_s": round(self.audio_s, 4),
                "wall_s": round(wall, 4), "ttfa_s": round(self.ttfa_s or wall, 4),
                "rtf": round(wall / self.audio_s, 4) if self.audio_s else None,
                "integrated_lufs": _figure(report.integrated_lufs), "true_peak_dbtp": _figure(report.true_peak_dbtp),
                "crest_factor_db": _figure(report.crest_factor_db),
                "steps": sum(r.steps for r in sentences)}
