"""Streaming synthesis: a worker thread renders a take sentence by sentence, one ahead.

``Stream`` renders group k+1 (through an :class:`~omnistudio.take.link.EngineLink`) while the
consumer holds (plays) group k: the worker takes a slot before rendering a group and the consumer
gives it back when it takes that group's last chunk, so at most ``lookahead`` finished groups wait
unconsumed. Chunks come out in order with their sentence and timings. Time to first audio (TTFA)
runs from the call that made the stream to the first chunk being ready.

With a link that splits the decode from the diffusion (a :class:`~omnistudio.take.link.LocalEngine`;
by default on CUDA) the decode half of group k runs on its own lane (a CUDA stream there) while group
k+1 diffuses; a remote link renders whole groups.

Cancel takes effect within one diffusion step (the link raises :class:`Cancelled` in the worker
once the cancel event is set). A failure in one sentence becomes a chunk with ``error`` set (naming
the sentence); the worker goes on with the next one.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from omnistudio.errors import Cancelled, Unavailable, UserError, describe
from omnistudio.script import Sentence
from omnistudio.take.link import CancelFlag, EngineLink, Pending, Rendered, RenderItem
from omnistudio.take.options import TakeOptions
from omnistudio.take.rows import SentenceRow
from omnistudio.voices.resolve import VoiceRef

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import torch

    from omnistudio.engine.engine import Timings

VoiceResolver = Callable[[Sentence], Any]


class _End:
    """The end of a queue (the worker's to the lane, the stream's to the consumer)."""


_END = _End()


class StreamSentence(Protocol):
    """What a stream and its chunks read of a sentence: a script's Sentence or a planned one."""

    @property
    def id(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def lang(self) -> str: ...

    @property
    def speaker(self) -> str | None: ...

    @property
    def story(self) -> str | None: ...

    @property
    def said(self) -> str: ...


@dataclass(frozen=True)
class Chunk:
    """One rendered sentence (or the error that stopped it)."""

    sentence: StreamSentence  # script.Sentence or the pipeline's PlannedSentence
    pcm: NDArray[np.float32]  # mono; empty when ``error`` is set
    sample_rate: int
    timings: Timings | None  # None on error
    steps: int  # diffusion steps (backbone forwards) this sentence ran
    started_s: float  # since the stream was made
    ready_s: float
    error: str | None = None

    @property
    def sentence_id(self) -> int:
        return self.sentence.id

    @property
    def ok(self) -> bool:
        return self.error is None

    def row(self, voice: str | None = None, seed: int | None = None) -> SentenceRow:
        """This sentence as a take's result reports it (``voice``, ``seed``: the take's)."""
        t, sentence = self.timings, self.sentence
        return SentenceRow(sentence.id, sentence.line, sentence.speaker, sentence.lang, sentence.text,
                           sentence.story, sentence.said, self.steps,
                           round(t.wall_s, 4) if t else None, round(t.audio_s, 4) if t else None,
                           round(t.rtf, 4) if t else None, round(self.ready_s, 4), self.error, voice, seed)


@dataclass
class _Job:
    """A group whose diffusion is done (or failed), waiting to be decoded and handed over."""

    group: list[StreamSentence]
    pending: Pending | None  # None on error
    started: float
    steps: int
    error: str | None = None
    parts: list[_Job] | None = None  # a failed batch, redone one sentence at a time


class _AnyOf:
    """Set when any of its events is set (``set`` sets the first: the stream's own)."""

    def __init__(self, *events: CancelFlag) -> None:
        self.events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)

    def set(self) -> None:
        first = self.events[0]
        assert isinstance(first, threading.Event)  # the stream's own, made first
        first.set()

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.perf_counter() + timeout
        while not self.is_set():
            if deadline is not None and time.perf_counter() >= deadline:
                return False
            time.sleep(0.005)
        return True


def _describe(exc: BaseException) -> str:
    if isinstance(exc, UserError):
        return str(exc)
    return describe(exc)


class Stream:
    """Iterate to get chunks in order; ``cancel()`` to stop; use as a context manager.

    ``sentences[i]`` is rendered as ``items[i]`` (same index); ``options`` gives steps, guidance,
    speed and the batch size (the first sentence alone, for time to first audio, then groups).
    ``prepare(items)``, when given, runs on the worker before each group renders (a take prepares a
    later sentence's voice there, while earlier sentences play); a UserError it raises ends the stream
    with that error. ``sentences`` that are an iterator, not a sequence, arrive as they are written (text
    in as it comes: :mod:`omnistudio.take.incoming`): each renders alone once the iterator gives it (it may
    block; it ends the stream when it ends), its item made by ``item_of``."""

    def __init__(self, link: EngineLink, sentences: Sequence[StreamSentence] | Iterator[StreamSentence],
                 items: Sequence[RenderItem],
                 options: TakeOptions, lookahead: int = 1, overlap_decode: bool | None = None,
                 cancel: CancelFlag | None = None,
                 prepare: Callable[[list[RenderItem]], None] | None = None,
                 item_of: Callable[[StreamSentence], RenderItem] | None = None) -> None:
        self.created = time.perf_counter()
        if lookahead < 1:
            raise ValueError("lookahead must be at least 1")
        self._source = sentences if isinstance(sentences, Iterator) else None
        if self._source is None and len(sentences) != len(items):  # type: ignore[arg-type]
            raise ValueError("one render item per sentence")
        if self._source is not None and item_of is None:
            raise ValueError("sentences as they arrive need item_of")
        self.options = options.validated()
        self.batch = self.options.batch
        self.link = link
        self._prepare = prepare
        self._item_of = item_of
        self.sentences = [] if self._source is not None else list(sentences)
        self._items = {id(s): item for s, item in zip(self.sentences, items)}
        self._cancel: _AnyOf | threading.Event = (_AnyOf(threading.Event(), cancel) if cancel is not None
                                                  else threading.Event())
        split = link.splits_decode
        if overlap_decode is None:  # on CUDA the vocoder has its own stream; on CPU it shares the cores
            overlap_decode = split and link.overlap_decode
        overlap_decode = bool(overlap_decode and split)
        # With the decode lane one more group may be in flight: k decoding while k+1 diffuses.
        self._lane: queue.Queue[_Job | _End] | None = queue.Queue() if overlap_decode else None
        self._slots = threading.Semaphore(lookahead + (1 if overlap_decode else 0))
        self._queue: queue.Queue[Chunk | BaseException | _End] = queue.Queue()
        self._group_ends: set[int] = set()  # a slot frees when a group's last sentence is taken
        self._plan = self._groups() if self._source is None else self._arriving(self._source)
        self.steps = 0  # diffusion steps run by this stream's worker
        self.ttfa_s: float | None = None
        self.finished_s: float | None = None
        self.chunks_taken = 0
        self.cancelled = False
        self._thread = threading.Thread(target=self._run, name="omnistudio-stream", daemon=True)
        self._decoder = (threading.Thread(target=self._decode_lane, name="omnistudio-decode", daemon=True)
                         if overlap_decode else None)
        if self._decoder is not None:
            self._decoder.start()
        self._thread.start()

    # ----------------------------------------------------------------- worker
    def _count_step(self) -> None:
        self.steps += 1

    def _run(self) -> None:
        """Diffusion, group by group; the decode half runs inline or on the decode lane."""
        try:
            for group in self._plan:
                while not self._slots.acquire(timeout=0.05):
                    if self._cancel.is_set():
                        return
                if self._cancel.is_set():
                    return
                if self._prepare is not None:
                    self._prepare([self._items[id(s)] for s in group])
                job = self._tokens(group)
                if job is None:
                    return
                if self._lane is not None:
                    self._lane.put(job)
                elif not self._deliver(job):
                    return
        except Cancelled:
            return
        except (Unavailable, UserError) as exc:  # a server gone, a voice that cannot be prepared
            log.debug("stream stopped: %s", exc)  # the consumer reports it
            self._queue.put(exc)
        except BaseException as exc:  # noqa: BLE001 - a bug here must not hang the consumer
            log.exception("stream worker failed")
            self._queue.put(exc)
        finally:
            if self._lane is not None:
                self._lane.put(_END)  # the lane ends the stream once it has decoded what is queued
            else:
                self._end()

    def _decode_lane(self) -> None:
        """Decode group k (on its own CUDA stream there) while the worker runs group k+1's diffusion."""
        lane = self._lane
        assert lane is not None  # this thread runs only with the decode lane
        cuda_stream = self.link.decode_stream()
        try:
            while True:
                job = lane.get()
                if isinstance(job, _End) or not self._deliver(job, cuda_stream):
                    return
        except BaseException as exc:  # noqa: BLE001
            log.exception("stream decode lane failed")
            self._queue.put(exc)
        finally:
            self._end()

    def _end(self) -> None:
        self.cancelled = self._cancel.is_set()
        self.finished_s = time.perf_counter() - self.created
        self._queue.put(_END)

    def _groups(self) -> list[list[StreamSentence]]:
        """The first sentence alone (time to first audio), then consecutive lines ``batch`` at a time."""
        sentences = self.sentences
        if self.batch == 1 or len(sentences) < 2:
            groups = [[s] for s in sentences]
        else:
            rest = sentences[1:]
            groups = [[sentences[0]]] + [rest[i:i + self.batch] for i in range(0, len(rest), self.batch)]
        self._group_ends.update(id(group[-1]) for group in groups)
        return groups

    def _arriving(self, source: Iterator[StreamSentence]) -> Iterator[list[StreamSentence]]:
        """Each sentence alone, as the source gives it (on the worker, which waits for it)."""
        assert self._item_of is not None
        for sentence in source:
            self.sentences.append(sentence)
            self._items[id(sentence)] = self._item_of(sentence)
            self._group_ends.add(id(sentence))
            yield [sentence]

    def _tokens(self, group: list[StreamSentence]) -> _Job | None:
        """The diffusion half for ``group`` (one pass for the group, per-sentence seeds as when
        rendered alone; a remote link renders it whole); if that fails, one sentence at a time so
        an error names its sentence."""
        started = time.perf_counter() - self.created
        items = [self._items[id(s)] for s in group]
        steps_before = self.steps
        try:
            pending = self.link.render_tokens(items, self.options, self._cancel, on_step=self._count_step)
            return _Job(group, pending, started, self.steps - steps_before)
        except Cancelled:
            return None
        except Unavailable:
            raise  # the engine is gone (a server down): the take stops, the client says so and retries
        except Exception as exc:  # noqa: BLE001 - reported with its sentence; the worker goes on
            if len(group) > 1:
                log.debug("batch failed; rendering its sentences one at a time", exc_info=True)
                jobs = [self._tokens([s]) for s in group]
                parts = [j for j in jobs if j is not None]
                if len(parts) < len(jobs):
                    return None
                return _Job(group, None, started, 0, parts=parts)
            return _Job(group, None, started, self.steps - steps_before, error=_describe(exc))

    def _deliver(self, job: _Job, cuda_stream: torch.cuda.Stream | None = None) -> bool:
        """Decode ``job`` and queue its chunks in order; False once cancelled."""
        if job.parts:
            return all(self._deliver(part, cuda_stream) for part in job.parts)
        if self._cancel.is_set():
            return False
        error, results = job.error, None
        if error is None and job.pending is not None:
            try:
                results = self.link.decode(job.pending, cuda_stream)
            except Exception as exc:  # noqa: BLE001
                error = _describe(exc)
        if self._cancel.is_set():
            return False
        ready = time.perf_counter() - self.created
        rate = self.link.sample_rate
        for i, sentence in enumerate(job.group):
            result: Rendered | None = results[i] if results is not None else None
            if result is not None and result.ok:
                chunk = Chunk(sentence, result.pcm, rate, result.timings, job.steps, job.started, ready, None)
            else:
                why = result.error if result is not None else error
                where = f"sentence {sentence.id + 1} (line {sentence.line}, \"{_short(sentence.text)}\")"
                chunk = Chunk(sentence, np.zeros(0, dtype=np.float32), rate, None, job.steps,
                              job.started, ready, f"{where}: {why}")
            if self.ttfa_s is None:
                self.ttfa_s = ready
            self._queue.put(chunk)
        return True

    # --------------------------------------------------------------- consumer
    def __iter__(self) -> Iterator[Chunk]:
        while True:
            if self._cancel.is_set():
                return
            try:
                item = self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(item, _End):
                return
            if isinstance(item, BaseException):
                raise item
            self.chunks_taken += 1
            if id(item.sentence) in self._group_ends:
                self._slots.release()  # the worker may render the next group while this one plays
            yield item

    def cancel(self) -> None:
        """Stop: the model's next diffusion step raises in the worker; iteration ends."""
        self._cancel.set()

    def join(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.perf_counter() + timeout
        for thread in (self._thread, self._decoder):
            if thread is not None:
                thread.join(None if deadline is None else max(0.0, deadline - time.perf_counter()))
        return not any(t is not None and t.is_alive() for t in (self._thread, self._decoder))

    def close(self) -> None:
        self.cancel()
        self.join()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def sentence_voice(sentence: Sentence, default: VoiceRef | None) -> VoiceRef | None:
    """The VoiceRef a script sentence names (its blend or anchor tag), else ``default``."""
    if sentence.blend is not None:
        return VoiceRef(blend=sentence.blend)
    if sentence.speaker is not None:
        return VoiceRef(anchor=sentence.speaker)
    return default
