"""The diffusion step with static shapes and no host reads: what a GPU replays from a captured graph.

Every step of a sentence is a forward over the same row (prompt + text + target), so everything a
step reads and writes lives in buffers allocated once per :class:`StepShape` (rows, row length,
batch, target frames, and which of the guidance and the two noises the arithmetic has: structure
only). Between sentences :meth:`StepPlan.load` copies a sentence in: its input embeddings, attention
mask (as an additive bias in the compute dtype), rotary tables, where its target frames sit in the
row, its unmasking schedule, and the generation settings' values (guidance scale, temperatures, layer
penalty) into 0-dim device tensors, so one captured graph serves every value. Each
:meth:`StepPlan.step` then reads and writes only those buffers:

- the target frames are re-embedded from the current tokens and put into the row with one
  ``torch.where`` over a per-sentence gather map (on the first step the row is used as built);
- the backbone runs without a KV cache over the prepared mask and tables
  (:class:`~omnistudio.engine.step_backbone.StepBackbone`: about 34 aten ops a layer instead of 81,
  the same numbers; a backbone it does not know gets the mask as transformers' ``{layer type: mask}``
  mapping and ``use_cache=False``);
- the step counter, the unmasking schedule (how many tokens each item unmasks at each step) and the
  noise live on the device; a top-k over every frame of an item with a per-item rank cut replaces a
  top-k of the step's largest count (a shape that changes from step to step);
- every item and codebook is scored (the fast sampler's early exit scores fewer: a shape decided by
  values); steps where no item unmasks anything are still skipped, a decision the host makes from
  the schedule (arithmetic on the target lengths) before the sentence starts.

Nothing in a step reads a tensor's value on the host (``tests/test_static_step.py`` records every
aten op of a step and compiles it with ``fullgraph=True``). The noise is drawn between steps, in
stock's order, into the plan's buffers (:func:`~omnistudio.engine.sampler_ops.draw_uniforms`).

Tokens equal the fast sampler's at the same dtype and the same layout (its ``length_bucketing``
without ``block_attention``: the row lengths the backbone sees are the same). On CUDA,
:mod:`omnistudio.engine.cuda_graphs` captures :meth:`StepPlan.step` once per shape and replays it;
elsewhere :class:`StepRunner` runs the same step eagerly.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch

from omnistudio.engine.sampler_ops import (
    Layout,
    SamplerStats,
    bucket_ladder,
    bucket_length,
    build_layout,
    draw_uniforms,
    frames_for,
    gumbel,
    score,
    scatter_topk,
    unmask_schedules,
)
from omnistudio.engine.step_backbone import StepBackbone, call_pre_hooks
from omnistudio.engine.upstream import GenerationConfig
from omnistudio.errors import Cancelled

if TYPE_CHECKING:
    from omnistudio.engine.cuda_graphs import GraphStatus, StepGraphs
    from omnistudio.engine.upstream import OmniVoiceModel

log = logging.getLogger(__name__)

MAX_STEPS = 100  # rows of the schedule buffer: check_num_step's upper bound (so num_step is not in the shape)
PLANS_KEPT = 64  # plans kept without graphs (CPU): least recently used dropped past this (with graphs: their bound)


class StepOptions(Protocol):
    """The sampler options the static step reads."""

    @property
    def trimmed_guidance(self) -> bool: ...

    @property
    def early_exit(self) -> bool: ...


class StepSampler(Protocol):
    """What the static step reads of its sampler (:class:`~omnistudio.engine.sampler.StepSampler`)."""

    model: OmniVoiceModel
    num_cb: int
    vocab: int
    mask_id: int
    generators: Sequence[torch.Generator] | None
    should_cancel: Callable[[], bool] | None
    on_logits: Callable[[int, torch.Tensor, torch.Tensor | None], None] | None

    @property
    def options(self) -> StepOptions: ...

    def embed_inputs(self, layout: Layout, ids: torch.Tensor) -> torch.Tensor: ...

    def embed_targets(self, tokens: torch.Tensor) -> torch.Tensor: ...

    def logits(self, hidden: torch.Tensor, rows: torch.Tensor, pos: torch.Tensor,
               cb: tuple[int, int]) -> torch.Tensor: ...


@dataclass(frozen=True)
class StepShape:
    """What one captured step is specialised on: its tensors' shapes and which ops its arithmetic has.
    Structure only: the settings' values (guidance scale, temperatures, layer penalty) are 0-dim device
    tensors of the plan, filled between sentences, so a new value never captures a new graph."""

    rows: int  # backbone rows (the batch; twice it in the stock layout)
    length: int  # row length (a bucket of sampler_ops.bucket_length)
    batch: int  # items (padded to a power of two for graphs)
    frames: int  # target frames per item (the most a row of this length holds)
    packed: bool  # trimmed guidance's layout: one row per item, positions restarting per block
    guided: bool  # the unconditional copy is scored (guidance scale not 0)
    class_noise: bool  # class temperature > 0: Gumbel noise over the classes
    position_noise: bool  # position temperature > 0: Gumbel noise over the positions

    def describe(self) -> str:
        return f"{self.batch}x{self.length}"

    @classmethod
    def of(cls, length: int, batch: int, gen_config: GenerationConfig, *, packed: bool) -> StepShape:
        """The shape of ``batch`` items in rows of ``length`` (a bucket) under ``gen_config``."""
        guided = gen_config.guidance_scale != 0
        return cls(rows=batch if packed else 2 * batch, length=length, batch=batch,
                   frames=frames_for(length, packed, guided or not packed), packed=packed, guided=guided,
                   class_noise=gen_config.class_temperature > 0.0,
                   position_noise=gen_config.position_temperature > 0.0)


def row_length(c_lens: Sequence[int], t_lens: Sequence[int], *, guided: bool, packed: bool) -> int:
    """The bucketed row length of a batch with conditional lengths ``c_lens`` and targets ``t_lens``
    (what :func:`~omnistudio.engine.sampler_ops.build_layout` pads to)."""
    if packed:
        real = [c + (t if guided else 0) for c, t in zip(c_lens, t_lens)]
    else:
        real = [*c_lens, *t_lens]
    return bucket_length(max(real))


def batch_bucket(items: int) -> int:
    """The batch a graph is captured for: the next power of two (1, 2, 4, 8, 16)."""
    return 1 << max(0, (items - 1).bit_length())


class StepPlan:
    """The buffers of one :class:`StepShape` and the step that reads and writes only them."""

    def __init__(self, sampler: StepSampler, shape: StepShape, backbone: StepBackbone | None = None) -> None:
        model = sampler.model
        self.sampler, self.shape, self.backbone = sampler, shape, backbone
        device = model.device
        dtype = model.audio_embeddings.weight.dtype
        hidden = int(model.config.llm_config.hidden_size)
        r, length, b, t, c = shape.rows, shape.length, shape.batch, shape.frames, sampler.num_cb
        self.hidden = hidden
        self.prefix = torch.zeros((r, length, hidden), dtype=dtype, device=device)
        # The attention mask as SDPA adds it (0 or -inf in the compute dtype), built between sentences.
        self.bias = torch.zeros((r, 1, length, length), dtype=dtype, device=device)
        self.position_ids = torch.zeros((r, length), dtype=torch.long, device=device) if shape.packed else None
        self.cos: torch.Tensor | None = None  # the rotary tables (R, 1, L, D) the step backbone reads
        self.sin: torch.Tensor | None = None
        self.src = torch.zeros((r * length,), dtype=torch.long, device=device)  # row position -> item frame
        self.is_target = torch.zeros((r, length, 1), dtype=torch.bool, device=device)
        self.cond_rows = torch.zeros((b, t), dtype=torch.long, device=device)
        self.cond_pos = torch.zeros((b, t), dtype=torch.long, device=device)
        self.uncond_rows = torch.zeros((b, t), dtype=torch.long, device=device) if shape.guided else None
        self.uncond_pos = torch.zeros((b, t), dtype=torch.long, device=device) if shape.guided else None
        self.valid = torch.zeros((b, t), dtype=torch.bool, device=device)
        self.tokens = torch.full((b, c, t), sampler.mask_id, dtype=torch.long, device=device)
        self.schedule = torch.zeros((MAX_STEPS, b), dtype=torch.long, device=device)
        self.step_idx = torch.zeros((1,), dtype=torch.long, device=device)
        self.layer_ids = torch.arange(c, device=device).view(1, -1, 1)
        # The settings' values: read by the step (and a captured graph) where they are, filled by set_scalars.
        self.guidance = torch.zeros((), dtype=torch.float32, device=device)
        self.class_temperature = torch.ones((), dtype=torch.float32, device=device)
        self.position_temperature = torch.ones((), dtype=torch.float32, device=device)
        self.layer_penalty = torch.zeros((1, c, 1), dtype=torch.float32, device=device)
        self.cls_uniform = (torch.full((b, c, t, sampler.vocab), 0.5, dtype=torch.float32, device=device)
                            if shape.class_noise else None)
        self.pos_uniform = (torch.full((b, c, t), 0.5, dtype=torch.float32, device=device)
                            if shape.position_noise else None)
        layer_types = set(getattr(model.llm.config, "layer_types", None) or ["full_attention"])
        self.masks = {name: self.bias for name in layer_types}  # the prepared mapping the backbone takes as is
        self.hooks_outside = False  # True while captured: the runner calls the backbone's pre-hooks itself
        self.observed_step = 0  # the step an observer (``on_logits``) is told of: the runner's count
        self.real_items = 0

    # ----------------------------------------------------------------- between sentences
    def set_scalars(self, gen_config: GenerationConfig) -> None:
        """The settings' values into the plan's 0-dim tensors (before the steps, or a capture)."""
        self.guidance.fill_(float(gen_config.guidance_scale))
        if self.shape.class_noise:
            self.class_temperature.fill_(float(gen_config.class_temperature))
        if self.shape.position_noise:
            self.position_temperature.fill_(float(gen_config.position_temperature))
        self.layer_penalty.copy_(self.layer_ids * float(gen_config.layer_penalty_factor))

    def load(self, layout: Layout, prefix: torch.Tensor, schedule: Sequence[Sequence[int]],
             gen_config: GenerationConfig | None = None) -> None:
        """Copy one sentence (batch) in: ``prefix`` its input embeddings as built once, ``schedule`` the
        tokens each item unmasks at each step that runs, ``gen_config``'s values (:meth:`set_scalars`)."""
        shape, b = self.shape, len(layout.t_lens)
        rows = layout.ids.size(0)
        self.real_items = b
        if gen_config is not None:
            self.set_scalars(gen_config)
        self.prefix[:rows].copy_(prefix)
        self.bias[:rows].fill_(-float("inf")).masked_fill_(layout.attention, 0.0)
        if self.position_ids is not None and layout.position_ids is not None:
            self.position_ids[:rows].copy_(layout.position_ids)
        self.cond_rows[:b].copy_(layout.cond_rows)
        self.cond_pos[:b].copy_(layout.cond_pos)
        if self.uncond_rows is not None and self.uncond_pos is not None:
            assert layout.uncond_rows is not None and layout.uncond_pos is not None  # guided: both scored
            self.uncond_rows[:b].copy_(layout.uncond_rows)
            self.uncond_pos[:b].copy_(layout.uncond_pos)
        self.valid[:b].copy_(layout.valid)
        if rows < shape.rows:
            self._pad_rows(rows, b)
        self.src.zero_()
        self.is_target.zero_()
        items, frames = layout.valid.nonzero(as_tuple=True)  # once per sentence, between sentences
        layout.valid_idx = (items, frames)
        source = items * shape.frames + frames
        places = [(layout.cond_rows, layout.cond_pos)]
        if layout.uncond_rows is not None and layout.uncond_pos is not None:
            places.append((layout.uncond_rows, layout.uncond_pos))
        flat_target = self.is_target.view(-1)
        for row_of, pos_of in places:
            at = row_of[items, frames] * shape.length + pos_of[items, frames]
            self.src[at] = source
            flat_target[at] = True
        self.tokens.fill_(self.sampler.mask_id)
        self.schedule.zero_()
        if schedule:
            self.schedule[:len(schedule), :b].copy_(torch.tensor(schedule, dtype=torch.long))
        self.step_idx.zero_()
        self._load_tables()

    def load_dummy(self) -> None:
        """A valid state with no sentence in it (every position attends to itself, nothing unmasks):
        what a graph is captured on."""
        self.prefix.zero_()
        if self.position_ids is not None:
            self.position_ids.zero_()
        self._pad_rows(0, 0)
        self.src.zero_()
        self.is_target.zero_()
        self.tokens.fill_(self.sampler.mask_id)
        self.schedule.zero_()
        self.step_idx.zero_()
        self.real_items = 0
        self._load_tables()

    def _load_tables(self) -> None:
        """The rotary tables of the loaded positions, into the plan's buffers (made on first use)."""
        if self.backbone is None:
            return
        positions = self.position_ids
        if positions is None:  # the stock layout: positions 0..L-1 in every row, as transformers makes them
            positions = torch.arange(self.shape.length, device=self.prefix.device).expand(self.shape.rows, -1)
        cos, sin = self.backbone.tables(self.prefix, positions)
        if self.cos is None or self.sin is None:
            self.cos, self.sin = cos.clone(), sin.clone()
        else:
            self.cos.copy_(cos)
            self.sin.copy_(sin)

    def _pad_rows(self, rows: int, items: int) -> None:
        """Rows and items past the real ones: self-attention only, no target frame, nothing to unmask."""
        shape = self.shape
        diagonal = torch.arange(shape.length, device=self.bias.device)
        self.bias[rows:].fill_(-float("inf"))
        self.bias[rows:, :, diagonal, diagonal] = 0.0
        self.prefix[rows:].zero_()
        if self.position_ids is not None:
            self.position_ids[rows:].zero_()
        spare = torch.arange(items, shape.batch, device=self.bias.device).unsqueeze(1)
        self.cond_rows[items:] = spare.clamp(max=shape.rows - 1)
        self.cond_pos[items:] = 0
        if self.uncond_rows is not None and self.uncond_pos is not None:
            self.uncond_rows[items:] = spare.clamp(max=shape.rows - 1)
            self.uncond_pos[items:] = 0
        self.valid[items:] = False

    def draw(self, t_lens: Sequence[int], ks: Sequence[int], generators: Sequence[torch.Generator] | None) -> None:
        """This step's noise into the plan's buffers, in stock's order (before the step runs)."""
        if self.cls_uniform is None and self.pos_uniform is None:
            return
        draw_uniforms(t_lens, ks, self.sampler.num_cb, self.sampler.vocab,
                      (self.shape.class_noise, self.shape.position_noise), self.tokens.device, generators,
                      out=(self.cls_uniform, self.pos_uniform))

    @property
    def backbone_module(self) -> torch.nn.Module:
        """The backbone whose forward pre-hooks a captured step calls outside the graph."""
        return self.sampler.model.llm

    def result(self, t_lens: Sequence[int]) -> list[torch.Tensor]:
        """Each item's (C, T_i) tokens, copied out of the plan (its buffers serve the next sentence)."""
        return [self.tokens[i, :, :t].clone() for i, t in enumerate(t_lens)]

    # ------------------------------------------------------------------------ the step
    def step(self) -> None:
        """One diffusion step over the plan's buffers: static shapes, no host reads."""
        sampler = self.sampler
        first = self.step_idx == 0
        targets = sampler.embed_targets(self.tokens)  # (B, T, H)
        gathered = targets.reshape(-1, self.hidden).index_select(0, self.src).view_as(self.prefix)
        embeds = torch.where(self.is_target & ~first, gathered, self.prefix)
        hidden = self._backbone(embeds)
        full = (0, sampler.num_cb)
        c_logits = sampler.logits(hidden, self.cond_rows, self.cond_pos, full)
        u_logits = None
        if self.uncond_rows is not None and self.uncond_pos is not None:
            u_logits = sampler.logits(hidden, self.uncond_rows, self.uncond_pos, full)
        if sampler.on_logits is not None and not self.hooks_outside:  # an observer (tests); never in a graph
            sampler.on_logits(self.observed_step, c_logits, u_logits)
        pred, confidence = score(c_logits, u_logits, self.guidance, sampler.mask_id,
                                 self.class_temperature if self.cls_uniform is not None else None, self.cls_uniform)
        scores = confidence - self.layer_penalty
        if self.pos_uniform is not None:
            scores = gumbel(scores, self.position_temperature, self.pos_uniform)
        still_masked = (self.tokens == sampler.mask_id) & self.valid.unsqueeze(1)
        scores = scores.masked_fill(~still_masked, -float("inf"))
        ks = self.schedule.index_select(0, self.step_idx).squeeze(0)
        scatter_topk(self.tokens, pred, scores, ks, self.tokens[0].numel())
        self.step_idx += 1

    def backbone_inputs(self, embeds: torch.Tensor | None = None) -> dict[str, Any]:
        """What the backbone is given, as keyword arguments (its pre-hooks see them)."""
        return {"inputs_embeds": self.prefix if embeds is None else embeds, "attention_mask": self.masks,
                "position_ids": self.position_ids}

    def _backbone(self, embeds: torch.Tensor) -> torch.Tensor:
        """The backbone's last hidden states for ``embeds``: the step backbone where the model has one
        (its pre-hooks called first, as a module call would, unless the runner calls them), else the
        module itself without a KV cache."""
        llm = self.sampler.model.llm
        if self.backbone is not None and self.cos is not None and self.sin is not None and "forward" not in vars(llm):
            if not self.hooks_outside:
                call_pre_hooks(llm, self.backbone_inputs(embeds))
            return self.backbone(embeds, self.bias, self.cos, self.sin)
        call: Callable[..., Any] = llm.forward if self.hooks_outside else llm
        hidden: torch.Tensor = call(**self.backbone_inputs(embeds), use_cache=False, return_dict=True)[0]
        return hidden


class StepRunner:
    """Runs a batch's steps on the plan of its shape: replayed from a captured graph where the device
    has them (:class:`~omnistudio.engine.cuda_graphs.StepGraphs`), else eagerly."""

    def __init__(self, sampler: StepSampler, graphs: StepGraphs | None = None, pad_batches: bool | None = None) -> None:
        self.sampler = sampler
        self.graphs = graphs
        # Batches padded to a power of two (fewer shapes to capture), by default on CUDA, graphs or not, so
        # that the eager and the replayed step see the same shapes (and give the same tokens).
        cuda = str(sampler.model.device).startswith("cuda")
        self.pad_batches = cuda if pad_batches is None else pad_batches
        self.plans: OrderedDict[StepShape, StepPlan] = OrderedDict()
        self.backbone = StepBackbone.of(sampler.model.llm)

    @property
    def kernels(self) -> str:
        """Which backbone the step runs: the step backbone's kernels ("exact", "liger") or "module"."""
        return self.backbone.kernels.name if self.backbone is not None else "module"

    def plan(self, shape: StepShape) -> StepPlan:
        """The plan of ``shape`` (made on first use; the least recently used dropped past the bound, with
        its graph)."""
        plan = self.plans.get(shape)
        if plan is None:
            plan = self.plans[shape] = StepPlan(self.sampler, shape, self.backbone)
            kept = self.graphs.capacity if self.graphs is not None else PLANS_KEPT
            while len(self.plans) > kept:
                dropped, _ = self.plans.popitem(last=False)
                if self.graphs is not None:
                    self.graphs.drop(dropped)
        self.plans.move_to_end(shape)
        return plan

    def prepare(self, gen_config: GenerationConfig, batches: Sequence[int], longest: int) -> GraphStatus:
        """Capture the step of every batch in ``batches`` (bucketed) at every row length up to ``longest``."""
        assert self.graphs is not None
        packed = self.sampler.options.trimmed_guidance
        sizes = sorted({batch_bucket(b) if self.pad_batches and packed else b for b in batches})

        def plans() -> Iterator[StepPlan]:
            for b in sizes:
                for length in bucket_ladder(longest):
                    plan = self.plan(StepShape.of(length, b, gen_config, packed=packed))
                    plan.set_scalars(gen_config)
                    yield plan

        return self.graphs.prepare(plans())

    def run(self, inputs: Sequence[dict[str, torch.Tensor]], t_lens: Sequence[int], ref_lens: Sequence[int],
            gen_config: GenerationConfig, stats: SamplerStats) -> list[torch.Tensor]:
        """The unmasking loop of one batch (``inputs`` from ``_prepare_inference_inputs``)."""
        sampler, opt = self.sampler, self.sampler.options
        packed = opt.trimmed_guidance
        c_lens = [int(inp["input_ids"].size(2)) for inp in inputs]
        items = len(t_lens)
        padded = batch_bucket(items) if self.pad_batches and packed else items
        guided = gen_config.guidance_scale != 0
        shape = StepShape.of(row_length(c_lens, t_lens, guided=guided, packed=packed), padded, gen_config,
                             packed=packed)
        layout = build_layout(inputs, t_lens, ref_lens, packed=packed, with_uncond=shape.guided or not packed,
                              bucket=True, pad_id=sampler.mask_id, device=sampler.model.device, frames=shape.frames)
        assert layout.ids.size(2) == shape.length  # the layout's bucket is the shape's
        schedules = unmask_schedules(t_lens, sampler.num_cb, gen_config)
        steps = [s for s in range(gen_config.num_step) if not opt.early_exit or any(sc[s] > 0 for sc in schedules)]
        plan = self.plan(shape)
        if self.graphs is not None and not self.graphs.has(shape):
            plan.set_scalars(gen_config)  # a capture on the audio path (a shape the warm-up did not meet)
        graph = self.graphs.graph(plan) if self.graphs is not None else None
        plan.load(layout, sampler.embed_inputs(layout, layout.ids), [[sc[s] for sc in schedules] for s in steps],
                  gen_config)
        stats.rows, stats.length = shape.rows, shape.length
        for step in steps:
            if sampler.should_cancel is not None and sampler.should_cancel():
                raise Cancelled("synthesis cancelled")
            plan.observed_step = step
            t0 = time.perf_counter()
            plan.draw(t_lens, [sc[step] for sc in schedules], sampler.generators)
            if graph is not None:
                assert self.graphs is not None
                self.graphs.replay(plan, graph)
            else:
                plan.step()
            stats.steps += 1
            stats.step_s.append(time.perf_counter() - t0)
        return plan.result(t_lens)
