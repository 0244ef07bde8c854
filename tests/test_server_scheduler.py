"""The server's batcher without a model: grouping, per-request cancel, failure isolation, admission."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

from omnistudio.errors import Cancelled, UserError
from omnistudio.server.pipeline import RenderItem, Rendered, TakeOptions, VoiceRef
from omnistudio.take.link import LinkInfo
from omnistudio.server.scheduler import Admission, BatchingLink, Busy, CancelEvent, length_bucket

VOICE = VoiceRef(anchor="ruby")


class FakeLink:
    """Renders an item as its seed repeated; a 'step' is 10 ms; 'boom' in a text fails its pass."""

    sample_rate = 24_000
    info = LinkInfo("fake", "cpu", "float32", "fast")

    def __init__(self, steps: int = 5) -> None:
        self.passes: list[list[int]] = []
        self.steps = steps
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()  # the worker is inside a pass (held at the gate if it is shut)

    def render(self, items: list[RenderItem], options: TakeOptions, cancel: Any) -> list[Rendered]:
        self.entered.set()
        self.gate.wait(30)
        self.passes.append([i.index for i in items])
        for _ in range(self.steps):
            if cancel.is_set():
                raise Cancelled("cancelled")
            time.sleep(0.01)
        if any("boom" in i.text for i in items):
            raise RuntimeError("boom")
        return [Rendered(i.index, np.full(4, i.seed, np.float32), None, self.steps) for i in items]


def item(index: int, text: str = "Short line.", seed: int | None = None) -> RenderItem:
    return RenderItem(index, text, VOICE, "en", index if seed is None else seed)


def run_all(link: BatchingLink, jobs: list[tuple[list[RenderItem], TakeOptions, Any]]) -> list[Any]:
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
    for t in threads:
        t.join(30)
    return out


def test_concurrent_items_share_passes_by_options_and_length() -> None:
    fake = FakeLink()
    fake.gate.clear()  # hold the worker in a first pass until every request has queued behind it
    link = BatchingLink(fake, max_batch=3)
    fast, slow = TakeOptions(num_step=4), TakeOptions(num_step=8)
    blocker = threading.Thread(target=link.render, args=([item(99)], TakeOptions(num_step=2), None))
    blocker.start()
    assert fake.entered.wait(20)  # the worker holds the blocker alone: nothing else has queued yet
    jobs = [([item(i)], fast, None) for i in range(4)] + [([item(10)], slow, None),
                                                           ([item(11, "long " * 60)], fast, None)]

    def open_when_queued() -> None:
        deadline = time.monotonic() + 20
        while len(link._waiting) < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
        fake.gate.set()

    threading.Thread(target=open_when_queued).start()
    out = run_all(link, jobs)
    blocker.join(30)
    assert [r[0].index for r in out] == [0, 1, 2, 3, 10, 11]
    assert all(float(r[0].pcm[0]) == r[0].index for r in out)  # each its own seed
    by_pass = sorted(sorted(p) for p in fake.passes)
    assert fake.passes[0] == [99]
    assert sorted(len(p) for p in fake.passes[1:]) == [1, 1, 1, 3]  # four short fast lines: max_batch, then 1
    assert [10] in by_pass and [11] in by_pass  # other num_step / other length bucket: not mixed in
    assert link.stats.items == 7
    link.close()


def test_cancel_stops_one_request_and_requeues_the_rest() -> None:
    fake = FakeLink(steps=50)
    link = BatchingLink(fake, max_batch=4)
    cancel = CancelEvent()

    def cancel_mid_pass() -> None:  # once a pass holding request 0 is under way
        deadline = time.monotonic() + 20
        while not any(0 in p for p in fake.passes) and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        cancel.set()

    threading.Thread(target=cancel_mid_pass).start()
    out = run_all(link, [([item(0)], TakeOptions(), cancel), ([item(1)], TakeOptions(), None)])
    assert isinstance(out[0], Cancelled)
    assert [r.index for r in out[1]] == [1]
    assert link.stats.cancelled_passes == 1 and link.stats.steps_after_cancel == 0
    assert fake.passes[-1] == [1]  # rendered again without the cancelled one
    link.close()


def test_a_failing_item_fails_only_its_request() -> None:
    fake = FakeLink()
    fake.gate.clear()
    link = BatchingLink(fake, max_batch=4)
    threading.Timer(0.2, fake.gate.set).start()
    out = run_all(link, [([item(0, "boom here.")], TakeOptions(), None), ([item(1)], TakeOptions(), None)])
    assert isinstance(out[0], RuntimeError) and [r.index for r in out[1]] == [1]
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


class SlowLink(FakeLink):
    """A link whose sentences take 50 steps of 10 ms, with the prepare step of a real one."""

    def __init__(self) -> None:
        super().__init__(steps=50)

    def prepare(self, voices: Any, progress: Any = None, cancel: Any = None) -> None:
        pass


def test_time_limit_cancels_a_request_with_504() -> None:
    import asyncio

    from omnistudio.server import protocol as p
    from omnistudio.server.serving import Failed, TakeRun

    job = p.generate_job(p.GenerateRequest(text="One. Two. Three. Four. Five.", voice="ruby"))
    slow = SlowLink()
    link = BatchingLink(slow)

    async def events() -> list[Any]:
        run = TakeRun(link, job, time_limit_s=0.3).start(asyncio.get_running_loop())
        return [e async for e in run.events()]

    seen = asyncio.run(events())
    assert isinstance(seen[-1], Failed) and seen[-1].status == 504 and "0.3 s limit" in seen[-1].message
    assert len(slow.passes) <= 1 and link.stats.items == 0  # stopped inside the first pass (or before it)
    assert link.stats.steps_after_cancel == 0
    link.close()
