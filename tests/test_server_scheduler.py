"""The server's batcher without a model: grouping, per-request cancel, failure isolation, admission."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from omnistudio.errors import Cancelled, UserError
from omnistudio.server.pipeline import RenderItem, Rendered, TakeOptions, VoiceRef
from omnistudio.take.link import LinkInfo
from omnistudio.server.admission import Admission, Busy
from omnistudio.server.scheduler import BatchingLink, CancelEvent, length_bucket
from support.wait import wait_until
from support.wait import HANG_S

VOICE = VoiceRef(anchor="ruby")


class FakeLink:
    """Renders an item as its seed repeated; a 'step' is 10 ms; 'boom' in a text fails its pass.
    ``on_step(indices, step)`` runs inside each step (a test cancels a request there)."""

    sample_rate = 24_000
    info = LinkInfo("fake", "cpu", "float32", "fast")

    def __init__(self, steps: int = 5, on_step: Callable[[list[int], int], None] | None = None) -> None:
        self.passes: list[list[int]] = []
        self.steps = steps
        self.on_step = on_step

    def render(self, items: list[RenderItem], options: TakeOptions, cancel: Any) -> list[Rendered]:
        indices = [i.index for i in items]
        self.passes.append(indices)
        for step in range(self.steps):
            if cancel.is_set():
                raise Cancelled("cancelled")
            if self.on_step is not None:
                self.on_step(indices, step)
            time.sleep(0.01)
        if any("boom" in i.text for i in items):
            raise RuntimeError("boom")
        return [Rendered(i.index, np.full(4, i.seed, np.float32), None, self.steps) for i in items]


def item(index: int, text: str = "Short line.", seed: int | None = None) -> RenderItem:
    return RenderItem(index, text, VOICE, "en", index if seed is None else seed)


def run_all(link: BatchingLink, jobs: list[tuple[list[RenderItem], TakeOptions, Any]],
            held: bool = False) -> list[Any]:
    """Every job from its own thread, at once; ``held``: the worker (held by the caller) is released
    only once every job's items have queued, so the first pass sees them all."""
    out: list[Any] = [None] * len(jobs)

    def one(k: int) -> None:
        items, options, cancel = jobs[k]
        try:
            out[k] = link.render(items, options, cancel)
        except Exception as exc:  # noqa: BLE001
            out[k] = exc

    threads = [threading.Thread(target=one, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    if held:
        try:
            wait_until(lambda: link.queued == sum(len(items) for items, _o, _c in jobs), timeout=HANG_S,
                       what="every item queued")
        finally:
            link.release()
    for t in threads:
        t.join(30)
    return out


def test_concurrent_items_share_passes_by_options_and_length() -> None:
    fake = FakeLink()
    link = BatchingLink(fake, max_batch=3)
    link.hold()  # no pass until every request has queued
    fast, slow = TakeOptions(num_step=4), TakeOptions(num_step=8)
    jobs = [([item(i)], fast, None) for i in range(4)] + [([item(10)], slow, None),
                                                           ([item(11, "long " * 60)], fast, None)]
    out = run_all(link, jobs, held=True)
    assert [r[0].index for r in out] == [0, 1, 2, 3, 10, 11]
    assert all(float(r[0].pcm[0]) == r[0].index for r in out)  # each its own seed
    by_pass = sorted(sorted(p) for p in fake.passes)
    assert sorted(len(p) for p in fake.passes) == [1, 1, 1, 3]  # four short fast lines: max_batch, then 1
    assert [10] in by_pass and [11] in by_pass  # other num_step / other length bucket: not mixed in
    assert link.stats.items == 6 and link.stats.batch_sizes.count(3) == 1
    link.close()


def test_hold_lets_calls_run_and_release_starts_the_pass() -> None:
    fake = FakeLink()
    link = BatchingLink(fake)
    link.hold()
    assert link.call(lambda: "ran") == "ran"  # voice preparation and listings are not held
    waiter = threading.Thread(target=link.render, args=([item(0)], TakeOptions()))
    waiter.start()
    wait_until(lambda: link.queued == 1, timeout=HANG_S, what="the item queued")
    assert fake.passes == []  # held: queued, not rendered
    link.release()
    waiter.join(30)
    assert fake.passes == [[0]] and link.queued == 0
    link.close()


def test_cancel_stops_one_request_and_requeues_the_rest() -> None:
    cancel = CancelEvent()

    def cancel_request_0(indices: list[int], step: int) -> None:  # mid-pass, in the pass holding both
        if 0 in indices and step == 2:
            cancel.set()

    fake = FakeLink(steps=50, on_step=cancel_request_0)
    link = BatchingLink(fake, max_batch=4)
    link.hold()
    out = run_all(link, [([item(0)], TakeOptions(), cancel), ([item(1)], TakeOptions(), None)], held=True)
    assert isinstance(out[0], Cancelled)
    assert [r.index for r in out[1]] == [1]
    assert sorted(fake.passes[0]) == [0, 1] and fake.passes[1:] == [[1]]  # rendered again without request 0
    assert link.stats.cancelled_passes == 1 and link.stats.steps_after_cancel == 0
    link.close()


def test_a_failing_item_fails_only_its_request() -> None:
    fake = FakeLink()
    link = BatchingLink(fake, max_batch=4)
    link.hold()
    out = run_all(link, [([item(0, "boom here.")], TakeOptions(), None), ([item(1)], TakeOptions(), None)], held=True)
    assert isinstance(out[0], RuntimeError) and [r.index for r in out[1]] == [1]
    assert sorted(fake.passes[0]) == [0, 1]  # the batch failed as a whole...
    assert sorted(fake.passes[1:]) == [[0], [1]]  # ...and each item was rendered again alone
    link.close()


def test_admission_refuses_past_the_limit() -> None:
    gate = Admission(2)
    gate.enter()
    gate.enter()
    with pytest.raises(Busy) as info:
        gate.enter()
    assert info.value.retry_after_s >= 1
    gate.leave()
    gate.enter()
    with pytest.raises(UserError, match="--max-queue 0"):
        Admission(0)
    with pytest.raises(UserError, match="--max-batch 17"):
        BatchingLink(FakeLink(), max_batch=17)


def test_length_buckets_are_ordered() -> None:
    assert length_bucket("a" * 10) < length_bucket("a" * 100) < length_bucket("a" * 1000)


@pytest.mark.parametrize(("value", "needle"), [("0", "1..64"), ("a,b", "numbers separated by commas"), ("", "1..64")])
def test_bench_serve_clients_are_checked(value: str, needle: str) -> None:
    from omnistudio.commands.bench import clients_list

    with pytest.raises(UserError, match=needle):
        clients_list(value)
    assert clients_list("8,1,4,4") == [1, 4, 8]


class StuckLink(FakeLink):
    """A link whose pass runs until it is cancelled (30 s at most), with the prepare step of a real one."""

    def render(self, items: list[RenderItem], options: TakeOptions, cancel: Any) -> list[Rendered]:
        self.passes.append([i.index for i in items])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if cancel.is_set():
                raise Cancelled("cancelled")
            time.sleep(0.005)
        return [Rendered(i.index, np.full(4, i.seed, np.float32), None, 1) for i in items]

    def prepare(self, voices: Any, progress: Any = None, cancel: Any = None) -> None:
        pass


def test_time_limit_cancels_a_request_with_504() -> None:
    """Only the time limit can end this request (its pass never finishes by itself): 504, within the pass."""
    import asyncio

    from omnistudio import protocol as wire
    from omnistudio.server import jobs
    from omnistudio.server.serving import Failed, TakeRun

    job = jobs.generate_job(wire.GenerateRequest(text="One. Two. Three. Four. Five.", voice="ruby"))
    stuck = StuckLink()
    link = BatchingLink(stuck)

    async def events() -> list[Any]:
        run = TakeRun(link, job, time_limit_s=0.05).start(asyncio.get_running_loop())
        return [e async for e in run.events()]

    seen = asyncio.run(events())
    assert isinstance(seen[-1], Failed) and seen[-1].status == 504 and "0.05 s limit" in seen[-1].message
    assert len(stuck.passes) <= 1 and link.stats.items == 0  # stopped inside the first pass (or before it)
    assert link.stats.steps_after_cancel == 0
    link.close()


class SplitLink(FakeLink):
    """A link whose decode is its own half: pass k's decode waits until pass k+1's diffusion has started,
    which only a decode lane running beside the worker can see (inline, it would wait forever)."""

    splits_decode = True
    overlap_decode = True

    def __init__(self) -> None:
        super().__init__(steps=1)
        self.diffusing: list[threading.Event] = [threading.Event() for _ in range(8)]
        self.threads: list[str] = []

    def render_tokens(self, items: list[RenderItem], options: TakeOptions, cancel: Any, on_step: Any = None) -> Any:
        from omnistudio.take.link import Pending

        self.diffusing[len(self.passes)].set()
        return Pending(list(items), None, 1, self.render(items, options, cancel))

    def decode(self, pending: Any, cuda_stream: Any = None) -> list[Rendered]:
        self.threads.append(threading.current_thread().name)
        k = next(i for i, p in enumerate(self.passes) if p == [it.index for it in pending.items])
        if k + 1 < 3:
            assert self.diffusing[k + 1].wait(HANG_S), "the next pass never started while this one decoded"
        return list(pending.rendered)

    def decode_stream(self) -> None:
        return None


def test_a_pass_decodes_on_the_lane_while_the_next_pass_diffuses() -> None:
    split = SplitLink()
    link = BatchingLink(split, max_batch=1)
    try:
        out = run_all(link, [([item(k, seed=10 + k)], TakeOptions(), None) for k in range(3)])
    finally:
        link.close()
    assert [r[0].pcm[0] for r in out] == [10.0, 11.0, 12.0]
    assert set(split.threads) == {"omnistudio-decode"} and link.stats.passes == 3


def test_the_decode_lane_gives_the_inline_decodes_samples(tiny_engine) -> None:  # noqa: ANN001
    from omnistudio.take.link import LocalEngine

    items = [item(0, "Good evening, here is the news."), item(1, "And now, the weather for the weekend.")]
    heard = {}
    for overlap in (False, True):
        link = BatchingLink(LocalEngine(tiny_engine), max_batch=2, overlap_decode=overlap)
        try:
            heard[overlap] = link.render(items, TakeOptions())
        finally:
            link.close()
    assert [r.pcm.tobytes() for r in heard[True]] == [r.pcm.tobytes() for r in heard[False]]
