"""The static diffusion step (engine/static_step.py): what a GPU replays from a captured graph, checked on CPU.

- tokens equal the fast sampler's at the same dtype and layout (bucketed rows, masked attention), for
  sentences of several lengths, batches of 1 to 8, blends and dialogue (different voices in one batch);
- no aten op inside a step reads a tensor on the host (a TorchDispatchMode records every op);
- every step of a sentence gives the backbone the same input shapes, a bucket of the ladder;
- the step compiles with ``fullgraph=True`` (no graph break) for each bucket;
- the replay plumbing (engine/cuda_graphs.py) with a stand-in for the CUDA graph: every shape a session
  meets is captured during warm-up, none on the audio path, and the backbone's hooks run once per step.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from omnistudio.engine.cuda_graphs import GRAPHS_KEPT, StepGraphs
from omnistudio.engine.morph import blend_prompts
from omnistudio.engine.reference import Reference
from omnistudio.engine.sampler import FastSampler
from omnistudio.engine.sampler_ops import bucket_ladder, bucket_length
from omnistudio.engine.static_step import StepPlan, StepRunner
from omnistudio.errors import Cancelled
from support.audio import REF_TEXT
from support.step import LINES, STATIC, STEPWISE, OpRecorder, render, step_replaced, three_voices, to_host

def assert_same(ours: list[torch.Tensor], theirs: list[torch.Tensor]) -> None:
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == b.shape, f"item {i}: {a.shape} != {b.shape}"
        assert torch.equal(a, b), f"item {i}: {(a != b).sum()} tokens differ"


@pytest.mark.parametrize(("guidance", "sizes"), [(2.0, range(1, 9)), (0.0, (1, 3))])
def test_tokens_equal_the_stepwise_sampler_for_batches_of_one_to_eight(tiny_engine: Any, voices: list[Any],
                                                                       guidance: float, sizes: Any) -> None:
    """Two steps a sentence (the first step and a later one: every later step is the same code)."""
    stepwise, static = FastSampler(tiny_engine.model, STEPWISE), FastSampler(tiny_engine.model, STATIC)
    lengths = set()
    for size in sizes:
        texts, speakers = LINES[:size], [voices[i % len(voices)] for i in range(size)]
        assert_same(render(tiny_engine, static, texts, speakers, guidance, num_step=2),
                    render(tiny_engine, stepwise, texts, speakers, guidance, num_step=2))
        assert static.last_stats.length == bucket_length(static.last_stats.length)
        lengths.add(static.last_stats.length)
    assert len(lengths) >= 2  # more than one bucket met
    assert len(static.runner.plans) == len(sizes)


def test_tokens_equal_for_blends_dialogue_and_class_noise(tiny_engine: Any, voices: list[Any]) -> None:
    model = tiny_engine.model
    stepwise, static = FastSampler(model, STEPWISE), FastSampler(model, STATIC)
    blend = blend_prompts(model, voices[0], voices[1], 0.4)
    assert blend.ref_embeddings is not None
    mixed = [voices[0], blend, voices[2]]  # a dialogue with a blended voice in the middle
    assert_same(render(tiny_engine, static, LINES[:3], mixed), render(tiny_engine, stepwise, LINES[:3], mixed))
    assert_same(render(tiny_engine, static, [LINES[1]], [blend]), render(tiny_engine, stepwise, [LINES[1]], [blend]))
    # class-temperature noise drawn before the position noise, per item, as stock draws it
    noisy = FastSampler(model, STEPWISE), FastSampler(model, STATIC)
    kw = {"guidance_scale": 2.0}
    stock_like = [render_with(tiny_engine, s, LINES[:3], voices, class_temperature=0.7, **kw) for s in noisy]
    assert_same(*stock_like)
    # the blend really changes the tokens (the override reached the static prefix)
    assert not torch.equal(render(tiny_engine, static, [LINES[1]], [blend])[0],
                           render(tiny_engine, static, [LINES[1]], [voices[0]])[0])


def render_with(engine: Any, sampler: FastSampler, texts: list[str], voices: list[Any], **gen: Any,
                ) -> list[torch.Tensor]:
    """``generate()`` with extra generation settings (class temperature): stock's entry point, one seed."""
    tokens: list[list[torch.Tensor]] = []

    def capture(task: Any, cfg: Any) -> list[torch.Tensor]:
        out = sampler(task, cfg)
        tokens.append([t.clone() for t in out])
        return out

    torch.manual_seed(11)
    with engine._sampler_installed(capture):
        engine.model.generate(text=texts, language="en", voice_clone_prompt=voices, num_step=4,
                              postprocess_output=False, **gen)
    return tokens[0]


def test_tokens_equal_in_bf16_and_with_padded_batches(bf16_engine: Any, tiny_engine: Any, voices: list[Any],
                                                      ref_wav: Any) -> None:
    """bf16 (rounded after every layer) sees the same rows, so the same tokens; a batch padded to a power
    of two (as graphs are captured) leaves the real items' tokens as they were."""
    prompt = bf16_engine.prompt_for(Reference(ref_wav, REF_TEXT))
    texts = LINES[:3]
    assert_same(render(bf16_engine, FastSampler(bf16_engine.model, STATIC), texts, [prompt] * 3),
                render(bf16_engine, FastSampler(bf16_engine.model, STEPWISE), texts, [prompt] * 3))
    padded = FastSampler(tiny_engine.model, STATIC)
    padded._runner = StepRunner(padded, None, pad_batches=True)
    assert_same(render(tiny_engine, padded, texts, voices), render(tiny_engine, FastSampler(tiny_engine.model,
                                                                                          STEPWISE), texts, voices))
    assert padded.last_stats.rows == 4  # three items in the plan of four


@pytest.fixture(scope="module")
def voices(tiny_engine: Any, voice_roster_file: Any) -> list[Any]:
    return three_voices(tiny_engine, voice_roster_file)


def test_no_op_inside_a_step_reads_a_tensor_on_the_host(tiny_engine: Any, voices: list[Any]) -> None:
    sampler = FastSampler(tiny_engine.model, STATIC)
    rec = OpRecorder()

    def recorded(_plan: StepPlan, step: Any) -> Any:
        def run() -> None:
            with rec:
                step()
        return run

    step_replaced(sampler, recorded)
    for texts in (LINES[:1], LINES[1:4]):
        render(tiny_engine, sampler, texts, voices[:len(texts)])
    assert rec.ops.count("topk") == 8  # the recorder saw every step (one top-k each), backbone included
    assert len(rec.ops) > 8 * 50
    assert rec.host_reads == []


def test_the_recorder_catches_each_kind_of_host_read() -> None:
    """The guard above is only as good as its recorder: each read a step could make is flagged."""
    x = torch.arange(6.0)
    cases = {"item": lambda: x[2].item(), "bool": lambda: bool(x[1] > 0), "nonzero": lambda: x.nonzero(),
             "mask": lambda: x[x > 2], "int": lambda: int(x.sum()), "equal": lambda: torch.equal(x, x),
             "masked write": lambda: x.clone().index_put_((x > 2,), torch.tensor(0.0))}
    for what, read in cases.items():
        with OpRecorder() as rec:
            read()
        assert rec.host_reads, what
    assert to_host("_to_copy", (torch.empty(1, device="meta"),), {"device": torch.device("cpu")})
    assert not to_host("_to_copy", (x,), {"dtype": torch.float16})
    with OpRecorder() as rec:
        _ = x[torch.tensor([0, 2])]  # integer indexing: a static shape, not a read
    assert rec.host_reads == [] and "index" in rec.ops


# ---------------------------------------------------------------------- the same shapes every step
def test_every_step_of_a_sentence_sees_the_same_shapes(tiny_engine: Any, voices: list[Any]) -> None:
    sampler = FastSampler(tiny_engine.model, STATIC)
    seen: list[tuple[Any, ...]] = []

    def shapes(_module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        masks = kwargs["attention_mask"]
        seen.append((tuple(kwargs["inputs_embeds"].shape), tuple(kwargs["position_ids"].shape),
                     tuple(sorted((k, tuple(v.shape)) for k, v in masks.items()))))

    handle = tiny_engine.model.llm.register_forward_pre_hook(shapes, with_kwargs=True)
    try:
        for texts in (LINES[:1], LINES[1:3], LINES[3:4]):
            seen.clear()
            render(tiny_engine, sampler, texts, voices[:len(texts)], num_step=10)
            assert len(seen) == sampler.last_stats.steps == 10
            assert len(set(seen)) == 1, f"{texts}: the inputs changed shape mid-sentence: {set(seen)}"
            rows, length, _hidden = seen[0][0]
            assert rows == len(texts) and length in bucket_ladder(length)
    finally:
        handle.remove()


# ------------------------------------------------------------------------ compiles in one graph
def test_the_step_compiles_whole_for_each_bucket(tiny_engine: Any, voices: list[Any]) -> None:
    """dynamo traces the step (backbone and scoring) without a graph break, for each bucket met; the
    compiled step gives the eager step's tokens."""
    import torch._dynamo

    eager = FastSampler(tiny_engine.model, STATIC)
    compiled = FastSampler(tiny_engine.model, STATIC)
    step_replaced(compiled, lambda _plan, step: torch.compile(step, fullgraph=True, backend="eager", dynamic=False))
    torch._dynamo.reset()
    try:
        for texts in (LINES[:1], LINES[1:3]):
            assert_same(render(tiny_engine, compiled, texts, voices[:len(texts)]),
                        render(tiny_engine, eager, texts, voices[:len(texts)]))
        assert len(compiled.runner.plans) == 2  # two buckets, each compiled whole (fullgraph raises on a break)
    finally:
        torch._dynamo.reset()


# ------------------------------------------------------------------- replaying captured graphs
class InputsRecorder(TorchDispatchMode):
    """The storages a block reads that it did not make itself (its inputs), by address."""

    def __init__(self) -> None:
        super().__init__()
        self.inputs: dict[int, torch.Tensor] = {}
        self.made: set[int] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if "lift_fresh" not in func.__name__:  # a constant lifted into the op: baked into a captured graph
            for t in tree_flatten((args, kwargs))[0]:
                if isinstance(t, torch.Tensor) and t.numel() and (ptr := t.untyped_storage().data_ptr()) not in self.made:
                    self.inputs.setdefault(ptr, t)
        out = func(*args, **kwargs)
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.numel():
                self.made.add(t.untyped_storage().data_ptr())
        return out


class StandInGraph:
    """A captured step on CPU: replay runs the plan's step with its hooks outside, as a CUDA graph would,
    and checks that it reads only the tensors the capture read. A CUDA graph replays fixed addresses: a
    tensor made anew between steps (noise drawn into a new tensor instead of the plan's buffer) is never
    seen by it. The captured inputs are held, so no new tensor can take one's address."""

    def __init__(self, plan: StepPlan) -> None:
        self.plan = plan
        self.replays = 0
        with InputsRecorder() as rec:
            plan.step()  # the capture runs the step once, on the dummy state
        self.inputs = rec.inputs

    def replay(self) -> None:
        self.replays += 1
        with InputsRecorder() as rec:
            self.plan.step()
        unseen = [tuple(t.shape) for ptr, t in rec.inputs.items() if ptr not in self.inputs]
        assert not unseen, f"the replayed step read tensors the capture never saw: {unseen}"


class StandInGraphs(StepGraphs):
    """engine/cuda_graphs.py's bookkeeping with :class:`StandInGraph` in place of torch.cuda.CUDAGraph
    (1 MB of pool a graph)."""

    def __init__(self, capacity: int = GRAPHS_KEPT, failing: Any = lambda _shape: False) -> None:
        super().__init__("cpu", capacity)
        self.captures: list[Any] = []
        self.made: list[StandInGraph] = []
        self.failing = failing

    def _capture(self, plan: StepPlan) -> Any:
        plan.hooks_outside = True
        plan.load_dummy()
        if self.failing(plan.shape):
            raise RuntimeError("operation not permitted when stream is capturing")
        self.captures.append(plan.shape)
        self.made.append(StandInGraph(plan))
        return self.made[-1]

    def _memory_bytes(self) -> int:
        return len(self.graphs) * 2**20


def test_warm_up_captures_every_shape_and_replays_fire_the_hooks(tiny_engine: Any, voices: list[Any]) -> None:
    from omnivoice.models.omnivoice import OmniVoiceGenerationConfig

    model = tiny_engine.model
    sampler = FastSampler(model, STATIC)
    graphs = StandInGraphs()
    sampler._runner = StepRunner(sampler, graphs, pad_batches=True)  # as on CUDA
    gen_config = OmniVoiceGenerationConfig.from_dict(tiny_engine.generation_kwargs(10, 2.0))
    status = sampler.prepare_graphs(gen_config, (1, 2, 3), 640)
    assert status.captured == len(graphs.captures) == 3 * len(bucket_ladder(640))  # batch buckets 1, 2 and 4
    assert {s.batch for s in graphs.captures} == {1, 2, 4}
    assert [g.replays for g in graphs.made] == [1] * status.captured  # each replayed once right after capture
    before = list(graphs.captures)
    calls: list[int] = []
    handle = model.llm.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        reference = FastSampler(model, STEPWISE)
        for texts in (LINES[:1], LINES[1:4], LINES[4:5], LINES[:2]):
            calls.clear()
            ours = render(tiny_engine, sampler, texts, voices[:len(texts)])
            assert len(calls) == 4  # the pre-hooks once per replayed step (the cancel hook, step timers)
            assert_same(ours, render(tiny_engine, reference, texts, voices[:len(texts)]))
    finally:
        handle.remove()
    assert graphs.captures == before  # nothing captured on the audio path
    # cancel still lands within a step: polled before each replay
    polls: list[int] = []
    sampler.should_cancel = lambda: polls.append(1) is None and len(polls) > 3
    with pytest.raises(Cancelled):
        render(tiny_engine, sampler, LINES[:1], voices[:1])
    assert "captured in" in sampler.graph_status.describe()


def warmed(engine: Any, graphs: StandInGraphs, batches: Any = (1, 2, 3), longest: int = 640,
           guidance: float = 2.0) -> FastSampler:
    """A static sampler on ``graphs`` (padded batches, as on CUDA), warmed up as the engine's warm-up does."""
    from omnivoice.models.omnivoice import OmniVoiceGenerationConfig

    sampler = FastSampler(engine.model, STATIC)
    sampler._runner = StepRunner(sampler, graphs, pad_batches=True)
    sampler.prepare_graphs(OmniVoiceGenerationConfig.from_dict(engine.generation_kwargs(10, guidance)), batches,
                           longest)
    return sampler


def test_a_guidance_or_temperature_change_replays_the_same_graphs(tiny_engine: Any, voices: list[Any]) -> None:
    """The API takes guidance 0-20: a value the warm-up did not use captures nothing (the values are device
    scalars of the plan), and the replayed tokens are the stepwise sampler's at that value."""
    graphs = StandInGraphs()
    sampler = warmed(tiny_engine, graphs)
    before = list(graphs.captures)
    reference = FastSampler(tiny_engine.model, STEPWISE)
    for texts, guidance in ((LINES[:1], 3.5), (LINES[1:3], 0.7)):
        speakers = voices[:len(texts)]
        assert_same(render(tiny_engine, sampler, texts, speakers, guidance),
                    render(tiny_engine, reference, texts, speakers, guidance))
    other = {"guidance_scale": 5.0, "position_temperature": 1.5, "layer_penalty_factor": 2.0}
    assert_same(render_with(tiny_engine, sampler, LINES[:1], voices[:1], **other),
                render_with(tiny_engine, reference, LINES[:1], voices[:1], **other))
    assert graphs.captures == before  # no capture on the audio path
    assert sum(g.replays for g in graphs.made) > len(graphs.made)  # the warm-up's graphs replayed


def test_a_failing_capture_is_counted_reported_and_runs_eagerly(tiny_engine: Any, voices: list[Any]) -> None:
    from omnistudio.bench.modes import graph_failures
    from omnistudio.take.link import graph_status

    graphs = StandInGraphs(failing=lambda shape: shape.batch == 2)
    sampler = warmed(tiny_engine, graphs, batches=(1, 2), longest=200)
    status = sampler.graph_status
    assert status.failed == len(bucket_ladder(200)) and status.captured == len(bucket_ladder(200))
    engine = type("Engine", (), {"graph_status": status})()
    shown = graph_status(engine)  # what /health and the telemetry show
    assert f"{status.captured} captured" in shown and f"{status.failed} eager (capture failed)" in shown
    assert f"{status.captured} MB" in shown  # the pool's memory
    # the failed shape runs eagerly, with the same tokens
    assert_same(render(tiny_engine, sampler, LINES[1:3], voices[:2]),
                render(tiny_engine, FastSampler(tiny_engine.model, STEPWISE), LINES[1:3], voices[:2]))
    # a bench that met one fails
    counts = {"captured": status.captured, "capture_s": 0.1, "failed": status.failed}
    assert graph_failures({"graphs": counts}) == status.failed
    assert graph_failures({"graphs": {"static replayed": counts, "static eager": {}}}) == status.failed
    assert graph_failures({"graphs": {"captured": 3, "capture_s": 0.1, "failed": 0}}) == 0


def test_the_graphs_are_bounded_least_recently_used_first(tiny_engine: Any, voices: list[Any]) -> None:
    graphs = StandInGraphs(capacity=3)
    sampler = warmed(tiny_engine, graphs, batches=(1,), longest=640)
    ladder = bucket_ladder(640)
    assert len(ladder) > 3
    status = sampler.graph_status
    assert status.captured == len(graphs.graphs) == 3 and status.evicted == len(ladder) - 3
    assert len(sampler.runner.plans) <= 3  # each graph's plan (its buffers) dropped with it
    assert "3 captured" in status.describe() and "3 MB" in status.describe() and "bound 3" in status.describe()
    assert {s.length for s in graphs.graphs} == set(ladder[-3:])  # the last three captured are kept
    render(tiny_engine, sampler, LINES[:1], voices[:1])  # a short row: its bucket is captured again
    assert len(graphs.graphs) == 3 and graphs.captures[-1].length == sampler.last_stats.length


def test_replay_hands_keyword_pre_hooks_the_backbone_inputs(tiny_engine: Any, voices: list[Any]) -> None:
    """A pre-hook registered with kwargs (as a module call would run it) sees the step's inputs on a replay."""
    sampler = warmed(tiny_engine, StandInGraphs(), batches=(1,), longest=300)
    seen: list[tuple[int, ...]] = []
    handle = tiny_engine.model.llm.register_forward_pre_hook(
        lambda _m, _a, kw: seen.append(tuple(kw["inputs_embeds"].shape)), with_kwargs=True)
    try:
        render(tiny_engine, sampler, LINES[:1], voices[:1])
    finally:
        handle.remove()
    assert len(seen) == 4 and len(set(seen)) == 1
