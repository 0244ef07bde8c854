"""The server's queue and batcher: one engine worker thread, items from concurrent requests batched.

:class:`BatchingLink` is an :class:`EngineLink`: each request's take calls ``render(items, ...)``
from its own thread exactly as it would call the in-process link; the call queues its items and
waits. The one worker thread owns the model: it takes the oldest waiting item and every other
waiting item with the same diffusion options (num_step, guidance, speed) and the same text-length
bucket, up to ``max_batch``, and renders them in one diffusion pass through the wrapped link. The
fast sampler gives each item its own noise generator, so an item's audio is the same whether it
ran alone or in a batch (tests check it bit for bit).

Decode lane: over a link whose decode may overlap the next diffusion (a CUDA engine: ``overlap_decode``),
a pass's vocoder runs on the lane's own thread while the worker diffuses the next pass, one pass ahead at
most (the queue between them holds one); the samples are the ones the inline decode gives (the same
call on the same tokens). On a CPU the two halves would share the cores, so the pass decodes inline.

Cancel: a request's cancel event stops the pass it is in at the next diffusion step; the other
items of that pass go back to the front of the queue and are rendered again (same seeds, same
audio), so nothing else is disturbed. :class:`Admission` bounds the requests in flight: past
``max_queue`` a request is refused at once (the HTTP layer answers 429 with Retry-After).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from omnistudio.errors import Cancelled, UserError, describe
from omnistudio.server.pipeline import CancelFlag, RenderItem, Rendered, TakeOptions, WholeGroupLink
from omnistudio.take.link import EngineLink, LinkInfo, Pending, PrepareProgress, VoiceList
from omnistudio.voices.resolve import VoiceRef

log = logging.getLogger(__name__)
T = TypeVar("T")

LENGTH_BUCKETS = (48, 96, 192, 384)  # characters; items of one pass come from one bucket


def length_bucket(text: str) -> int:
    return next((i for i, edge in enumerate(LENGTH_BUCKETS) if len(text) <= edge), len(LENGTH_BUCKETS))


@dataclass
class Stats:
    """What the worker did (read by /metrics and the bench)."""

    passes: int = 0
    items: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    cancelled_passes: int = 0
    steps_after_cancel: int = 0  # diffusion steps started after a cancel was asked (0 = within one step)
    cancel_latency_s: list[float] = field(default_factory=list)


@dataclass(eq=False)
class _Ticket:
    item: RenderItem
    options: TakeOptions
    cancel: CancelFlag
    future: Future[Rendered] = field(default_factory=Future)
    solo: bool = False  # rendered alone (after a batch it was in failed)

    @property
    def key(self) -> tuple[Any, ...]:
        o = self.options
        return (o.num_step, float(o.guidance_scale), o.speed, length_bucket(self.item.text))


class CancelEvent(threading.Event):
    """A request's cancel flag that remembers when it was set (for the steps-after-cancel count)."""

    set_at: float | None = None

    def set(self) -> None:
        super().set()
        if self.set_at is None:
            self.set_at = time.perf_counter()  # after the flag: a step timed later saw it set


def asked_at(cancel: Any) -> float | None:
    """When ``cancel`` (a :class:`CancelEvent`, or a stream's any-of several events) was set, if known."""
    at = getattr(cancel, "set_at", None)
    inner = [asked_at(e) for e in getattr(cancel, "events", ())]
    return min([x for x in [at, *inner] if x is not None], default=None)


@dataclass(frozen=True)
class _Decode:
    """A pass diffused and waiting for the decode lane."""

    group: list[_Ticket]
    pending: Pending
    started: float


class _Flag:
    """A cancel flag for the wrapped link: set when any request of the pass is (read at each step)."""

    def __init__(self, check: Callable[[], bool]) -> None:
        self.is_set = check


class BatchingLink(WholeGroupLink):
    """An EngineLink over ``inner`` (the in-process link) shared by every request of the server."""

    def __init__(self, inner: EngineLink, max_batch: int = 8, on_pass: Callable[[int, float], None] | None = None,
                 overlap_decode: bool | None = None) -> None:
        """``overlap_decode``: decode each pass on the decode lane (None: where ``inner`` overlaps, CUDA)."""
        if not 1 <= int(max_batch) <= 16:
            raise UserError(f"--max-batch {max_batch} is out of range 1..16")
        split = bool(getattr(inner, "splits_decode", False))
        overlap = split and bool(getattr(inner, "overlap_decode", False) if overlap_decode is None else overlap_decode)
        self._decodes: queue.Queue[_Decode | None] | None = queue.Queue(maxsize=1) if overlap else None
        self._lane = threading.Thread(target=self._decode_lane, name="omnistudio-decode", daemon=True)
        self.inner = inner
        self.max_batch = int(max_batch)
        self.sample_rate = inner.sample_rate
        self.stats = Stats()
        self._on_pass = on_pass
        self._waiting: list[_Ticket] = []
        self._calls: list[Callable[[], None]] = []  # prepare etc., run on the worker (each sets its future)
        self._cond = threading.Condition()
        self._closed = False
        self._held = False
        self._thread = threading.Thread(target=self._work, name="omnistudio-engine", daemon=True)
        self._thread.start()
        if self._decodes is not None:
            self._lane.start()

    # ------------------------------------------------------------- the link
    @property
    def info(self) -> LinkInfo:
        return self.inner.info

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the engine thread (voice preparation, listings) and return its result."""
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)

        with self._cond:
            self._calls.append(run)
            self._cond.notify()
        return future.result()

    def prepare(self, voices: Sequence[tuple[VoiceRef, str]], progress: PrepareProgress | None = None,
                cancel: CancelFlag | None = None) -> None:
        self.call(lambda: self.inner.prepare(voices, progress, cancel))

    def voices(self) -> VoiceList:
        return self.call(self.inner.voices)

    def build_voice(self, ref: VoiceRef, lang: str) -> None:
        """On the engine thread, between diffusion passes."""
        self.call(lambda: self.inner.build_voice(ref, lang))

    def forget_voice(self, anchor: str) -> None:
        """On the engine thread, between diffusion passes."""
        self.call(lambda: self.inner.forget_voice(anchor))

    def render(self, items: Sequence[RenderItem], options: TakeOptions,
               cancel: CancelFlag | None = None) -> list[Rendered]:
        cancel = cancel if cancel is not None else threading.Event()
        tickets = [_Ticket(item, options, cancel) for item in items]
        with self._cond:
            if self._closed:
                raise Cancelled("the server is shutting down")
            self._waiting.extend(tickets)
            self._cond.notify()
        out: list[Rendered] = []
        for ticket in tickets:
            while True:
                try:
                    out.append(ticket.future.result(timeout=0.05))
                    break
                except TimeoutError:
                    if cancel.is_set() and not ticket.future.running():
                        self._drop(tickets)
                        raise Cancelled("request cancelled") from None
        return out

    @property
    def queued(self) -> int:
        """Items waiting for a diffusion pass (not counting the pass under way)."""
        with self._cond:
            return len(self._waiting)

    def hold(self) -> None:
        """Start no new pass until :meth:`release` (calls such as voice preparation still run): the
        items of concurrent requests queue up meanwhile, and the passes after the release batch
        them. A pass under way finishes. Tests make a batch certain with it."""
        with self._cond:
            self._held = True

    def release(self) -> None:
        with self._cond:
            self._held = False
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=5)
        if self._decodes is not None:
            self._decodes.put(None)  # after the worker: a pass it handed over is still decoded
            self._lane.join(timeout=5)

    # ------------------------------------------------------------ the worker
    def _drop(self, tickets: list[_Ticket]) -> None:
        with self._cond:
            self._waiting = [t for t in self._waiting if t not in tickets]

    def _next_group(self) -> list[_Ticket] | Callable[[], None] | None:
        """Under the lock: a call to run, or the next batch (oldest item + compatible others)."""
        if self._calls:
            return self._calls.pop(0)
        for ticket in [t for t in self._waiting if t.cancel.is_set()]:
            self._waiting.remove(ticket)
            ticket.future.set_exception(Cancelled("request cancelled"))
        if not self._waiting or self._held:
            return None
        first = self._waiting[0]
        group = [first]
        if not first.solo:
            group += [t for t in self._waiting[1:] if not t.solo and t.key == first.key][:self.max_batch - 1]
        for ticket in group:
            self._waiting.remove(ticket)
            if not ticket.future.running():  # a requeued ticket is running already
                ticket.future.set_running_or_notify_cancel()
        return group

    def _work(self) -> None:
        while True:
            with self._cond:
                job = self._next_group()
                while job is None and not self._closed:
                    self._cond.wait(timeout=0.5)
                    job = self._next_group()
                if job is None:
                    return
            if callable(job):
                job()
            else:
                self._render(job)

    def _render(self, group: list[_Ticket]) -> None:
        started = time.perf_counter()
        step_starts: list[float] = []

        def should_cancel() -> bool:
            now = time.perf_counter()  # taken before the check, so a late step is a real one
            if any(t.cancel.is_set() for t in group):
                return True
            step_starts.append(now)
            return False

        items, flag = [t.item for t in group], _Flag(should_cancel)
        pending: Pending | None = None
        results: list[Rendered] = []
        try:
            if self._decodes is not None:
                pending = self.inner.render_tokens(items, group[0].options, flag)
            else:
                results = self.inner.render(items, group[0].options, flag)
        except Cancelled:
            self._cancelled(group)
            return
        except Exception as exc:  # noqa: BLE001 - one request's failure must not end the worker
            if len(group) > 1:  # find the culprit: the items go back, each to be rendered alone
                log.warning("a batch of %d failed (%s); rendering its items one by one", len(group), describe(exc))
                self._requeue(group, solo=True)
            else:
                group[0].future.set_exception(exc)
            return
        finally:
            self._count_late_steps(group, step_starts)
        if self._decodes is not None and pending is not None:  # the vocoder on the lane; the worker goes on
            self._decodes.put(_Decode(group, pending, started))
            return
        self._finish(group, results, started)

    def _decode_lane(self) -> None:
        """The decode lane's thread: each pass's vocoder, in the order the passes finished diffusing."""
        assert self._decodes is not None
        stream = self.inner.decode_stream()
        while (job := self._decodes.get()) is not None:
            try:
                results = self.inner.decode(job.pending, stream)
            except Exception as exc:  # noqa: BLE001 - a failed decode fails its pass's requests, not the lane
                for ticket in job.group:
                    ticket.future.set_exception(exc)
                continue
            self._finish(job.group, results, job.started)

    def _finish(self, group: list[_Ticket], results: list[Rendered], started: float) -> None:
        self.stats.passes += 1
        self.stats.items += len(group)
        self.stats.batch_sizes.append(len(group))
        if self._on_pass is not None:
            self._on_pass(len(group), time.perf_counter() - started)
        for ticket, rendered in zip(group, results):
            ticket.future.set_result(rendered)

    def _count_late_steps(self, group: list[_Ticket], step_starts: list[float]) -> None:
        """Steps of this pass that started after one of its requests asked to cancel (should be 0)."""
        asked = [at for t in group if (at := asked_at(t.cancel)) is not None]
        if asked:
            self.stats.steps_after_cancel += sum(1 for s in step_starts if s > min(asked))

    def _cancelled(self, group: list[_Ticket]) -> None:
        now = time.perf_counter()
        self.stats.cancelled_passes += 1
        gone = [t for t in group if t.cancel.is_set()]
        asked = min((asked_at(t.cancel) or now) for t in gone) if gone else now
        self.stats.cancel_latency_s.append(now - asked)
        for ticket in gone:
            ticket.future.set_exception(Cancelled("request cancelled"))
        self._requeue([t for t in group if not t.cancel.is_set()], solo=False)

    def _requeue(self, tickets: list[_Ticket], solo: bool) -> None:
        with self._cond:
            for ticket in tickets:
                fresh = _Ticket(ticket.item, ticket.options, ticket.cancel, ticket.future, solo=solo or ticket.solo)
                self._waiting.insert(0, fresh)
            self._waiting[:len(tickets)] = self._waiting[:len(tickets)][::-1]  # keep their order
            self._cond.notify()
