"""Engine.stream: order, 1-ahead, TTFA, cancel within one diffusion step, per-sentence errors."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnistudio.bench.stream import stream_benchmark
from omnistudio.engine.reference import Reference
from omnistudio.script import parse_script
from omnistudio.take.options import sentence_seed
from omnistudio.take.stream import Stream
from support.stream import open_stream
from support.audio import REF_TEXT, same_take
from support.wait import HANG_S

SCRIPT = "One two. Three four.\nFive six. Seven eight."
STEPS = 4


def taken(it: Any) -> Any:
    """The stream's next chunk, waited for at most HANG_S (a stream that never renders fails here, not at
    the run's hang guard)."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(next(it)), daemon=True)
    worker.start()
    worker.join(HANG_S)
    assert result, "the stream gave no chunk: it renders nothing ahead of its consumer"
    return result[0]


@pytest.fixture(scope="module")
def voice(tiny_engine: Any, ref_wav: Path) -> Any:
    return tiny_engine.prompt_for(Reference(ref_wav, REF_TEXT))


def test_chunks_in_order_match_single_synthesis(tiny_engine: Any, voice: Any) -> None:
    stream = open_stream(tiny_engine, SCRIPT, voice, num_step=STEPS, seed=7)
    chunks = list(stream)
    assert stream.join(timeout=HANG_S)
    assert [c.sentence_id for c in chunks] == [0, 1, 2, 3]
    assert [c.sentence.text for c in chunks] == ["One two.", "Three four.", "Five six.", "Seven eight."]
    assert all(c.ok and c.steps == STEPS and c.pcm.dtype == np.float32 for c in chunks)
    assert stream.steps == 4 * STEPS
    assert stream.ttfa_s == chunks[0].ready_s
    assert 0 < stream.ttfa_s <= chunks[-1].ready_s <= stream.finished_s
    # every sentence is rendered with the one seed policy: the same audio as a one-off synthesis
    for chunk in chunks:
        seed = sentence_seed(7, chunk.sentence.text, "voice", "en")
        again = tiny_engine.synthesize(chunk.sentence.text, voice, num_step=STEPS, seed=seed)
        assert same_take(chunk.pcm, again.pcm)


def test_renders_one_ahead_of_the_consumer(tiny_engine: Any, voice: Any) -> None:
    started = {i: threading.Event() for i in range(4)}
    taken_when_started: dict[int, int] = {}
    holder: dict[str, Stream] = {}

    def resolve(sentence: Any) -> Any:
        taken_when_started[sentence.id] = holder["s"].chunks_taken if "s" in holder else 0
        started[sentence.id].set()
        return voice

    script = parse_script(SCRIPT, "en")
    stream = open_stream(tiny_engine, script, resolve=resolve, num_step=STEPS)
    holder["s"] = stream
    it = iter(stream)
    first = taken(it)
    assert first.sentence_id == 0
    # while the consumer holds chunk 0, sentence 1 renders ...
    assert started[1].wait(timeout=HANG_S)
    second = taken(it)
    # ... and sentence 2 only starts once chunk 1 was taken
    assert started[2].wait(timeout=HANG_S)
    rest = list(it)
    assert [second.sentence_id, *[c.sentence_id for c in rest]] == [1, 2, 3]
    assert all(taken_when_started[i] >= i for i in range(4)), taken_when_started


def test_cancel_takes_effect_within_one_diffusion_step(tiny_engine: Any, voice: Any) -> None:
    script = parse_script(SCRIPT, "en")
    holder: dict[str, Stream] = {}
    events: list[str] = []
    calls = {"n": 0}
    worker = threading.current_thread

    def pre(_m: Any, _a: Any) -> None:
        if worker().name != "omnistudio-stream":
            return
        calls["n"] += 1
        events.append(f"start {calls['n']}")
        if calls["n"] == 11:  # third step of the second sentence
            holder["stream"].cancel()
            events.append("cancel")

    def post(_m: Any, _a: Any, _o: Any) -> None:
        if worker().name == "omnistudio-stream":
            events.append(f"end {calls['n']}")

    llm = tiny_engine.model.llm
    handles = [llm.register_forward_pre_hook(pre), llm.register_forward_hook(post)]
    try:
        # The hooks exist before the worker starts, so every step is seen. The worker's own
        # cancel hook runs after the test's, so the step during which cancel came never runs.
        stream = holder["stream"] = open_stream(tiny_engine, script, voice, num_step=8)
        chunks = list(stream)
        assert stream.join(timeout=HANG_S)
    finally:
        for h in handles:
            h.remove()
    after_cancel = events[events.index("cancel") + 1:]
    assert after_cancel == [], events  # no step runs after the cancel
    assert stream.cancelled and stream.steps == 10
    assert [c.sentence_id for c in chunks] in ([], [0])  # the cancelled sentence is never delivered
    # the engine is usable afterwards (the hook is gone, the lock released)
    assert tiny_engine.synthesize("After.", voice, num_step=2).pcm.size > 0


def test_cancel_from_the_consumer_ends_iteration(tiny_engine: Any, voice: Any) -> None:
    stream = open_stream(tiny_engine, SCRIPT, voice, num_step=STEPS)
    got = []
    for chunk in stream:
        got.append(chunk.sentence_id)
        stream.cancel()
    assert stream.join(timeout=HANG_S)
    assert got == [0]
    assert stream.steps <= 2 * STEPS  # at most the sentence being rendered when cancel came


def test_error_in_one_sentence_is_reported_and_the_worker_goes_on(tiny_engine: Any, voice: Any) -> None:
    def resolve(sentence: Any) -> Any:
        if sentence.id == 1:
            raise RuntimeError("voice exploded\nsecond line")
        return voice

    with open_stream(tiny_engine, parse_script(SCRIPT, "en"), resolve=resolve, num_step=STEPS) as stream:
        chunks = list(stream)
    assert [c.ok for c in chunks] == [True, False, True, True]
    assert chunks[1].error == 'sentence 2 (line 1, "Three four."): RuntimeError: voice exploded'
    assert chunks[1].pcm.size == 0 and chunks[2].pcm.size > 0


def test_stream_needs_a_voice(tiny_engine: Any) -> None:
    from omnistudio.errors import UserError

    with pytest.raises(UserError, match="needs a voice"):
        open_stream(tiny_engine, "Hello.")


def test_stream_benchmark(tiny_engine: Any) -> None:
    """The bench streams a take through the take pipeline, as every client renders."""
    from omnistudio.take.link import LocalEngine

    result = stream_benchmark(LocalEngine(tiny_engine), n_sentences=3, voice="ruby", num_step=2)
    assert result["sentences"] == 3 and result["failed"] == 0 and result["steps"] == 6
    assert 0 < result["ttfa_s"] <= result["total_s"]
    assert result["ttfa_ratio"] == pytest.approx(result["ttfa_s"] / result["total_s"], abs=2e-3)
    assert result["audio_s"] > 0


def test_decode_lane_gives_the_same_chunks_in_order(tiny_engine: Any, voice: Any) -> None:
    """Decoding group k on its own lane while k+1 diffuses changes nothing but the timing."""
    inline = list(open_stream(tiny_engine, SCRIPT, voice, num_step=STEPS, seed=3, overlap_decode=False))
    with open_stream(tiny_engine, SCRIPT, voice, num_step=STEPS, seed=3, overlap_decode=True) as stream:
        lane = list(stream)
        assert stream.join(timeout=HANG_S)
    assert [c.sentence_id for c in lane] == [0, 1, 2, 3]
    for a, b in zip(inline, lane):
        np.testing.assert_array_equal(a.pcm, b.pcm)
        assert b.timings is not None and 0 < b.timings.decode_s < b.timings.wall_s
    assert stream.finished_s is not None and stream.ttfa_s == lane[0].ready_s


def test_decode_lane_reports_errors_and_cancels(tiny_engine: Any, voice: Any) -> None:
    def resolve(sentence: Any) -> Any:
        if sentence.id == 1:
            raise RuntimeError("voice exploded")
        return voice

    with open_stream(tiny_engine, parse_script(SCRIPT, "en"), resolve=resolve, num_step=STEPS,
                     overlap_decode=True) as stream:
        chunks = list(stream)
    assert [c.ok for c in chunks] == [True, False, True, True]
    assert "voice exploded" in (chunks[1].error or "")

    long_script = "\n".join(f"Sentence {i} of a long bulletin." for i in range(12))
    stream = open_stream(tiny_engine, parse_script(long_script, "en"), voice, num_step=STEPS, overlap_decode=True)
    first = next(iter(stream))
    stream.cancel()
    assert stream.join(timeout=HANG_S)
    assert first.sentence_id == 0 and stream.cancelled
    assert stream.steps <= 3 * STEPS  # at most the groups in flight when cancel came
