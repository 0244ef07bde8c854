"""The fast iterative-unmasking loop: a drop-in for ``OmniVoice._generate_iterative``.

``FastSampler(model)(task, gen_config)`` returns what stock returns (a list of
(C, T_i) token tensors). Each speed technique is a switch in
:class:`SamplerOptions`, so that it can be measured alone:

1. ``sliced_projection``: ``audio_heads`` only on the target frames;
2. ``static_prefix``: input embeddings built once per call, only the target
   frames re-embedded and written in place each step;
3. ``inplace_scatter``: all items scored at once (no per-item Python loop),
   tokens unmasked with one top-k and one in-place scatter;
4. ``trimmed_guidance``: the unconditional copy at its true length, packed
   after the conditional one in the same row (block-diagonal attention), and
   not computed at all when guidance is 0;
5. ``length_bucketing``: row length rounded up to a multiple of 32 tokens;
6. ``early_exit``: scoring only for codebooks that still hold masked frames
   and items that unmask something this step; steps with nothing to unmask
   are skipped;
7. ``block_attention``: attention once per block of a row (conditional,
   unconditional) without a mask, instead of a masked pass over the row
   (see :mod:`omnistudio.engine.block_attention`);
8. ``static_step``: every step on buffers allocated once per shape, with no host
   reads inside a step (see :mod:`omnistudio.engine.static_step`); on CUDA each
   shape's step is captured once as a CUDA graph and replayed (``cuda_graphs``).
   It implies bucketed rows and the masked pass (never ``block_attention``), and
   scores every item and codebook (early exit only skips empty steps).

1-3 and 6 leave every tensor the backbone sees unchanged: tokens and samples
are bit-identical to stock with the same seed *at the same backbone dtype*
(tested in fp32 and in bf16). 4, 5 and 7 change the shapes the attention sees,
so the logits differ at the rounding level: in fp32 about 1e-7 to 1e-6, and
tokens were identical on the test set; in bf16 (8 mantissa bits, rounded after
every layer) the drift is large enough to flip close top-k picks, so tokens
are *not* identical to stock bf16 (the bench reports the share that agree).
4 is on by default at every dtype (it removes 25-50 % of the backbone's work;
its drift is of the order of the dtype's own rounding, which stock at that
dtype carries too); 5 is on only on CUDA, where
repeated shapes let compiled graphs and kernel caches be reused (on CPU it
only adds padding); 7 only on CPU (on CUDA one masked kernel per layer beats
a launch per block; a compiled backbone keeps one graph over the masked pass);
8 only on CUDA, where the host's kernel launches are the bottleneck (its tokens
equal 5 without 7 at the same dtype: the backbone sees the same rows).

The Gumbel noise is drawn per item in stock's order and shapes, so the same
``torch.manual_seed`` gives the same tokens; ``generators`` (one
``torch.Generator`` per item) gives each item its own seed instead.
``should_cancel`` is polled before every step (raises :class:`Cancelled`);
the backbone (``model.llm``) is called exactly once per step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from omnistudio.config import cuda_graphs as graphs_wanted
from omnistudio.engine import cuda_graphs
from omnistudio.engine.block_attention import attention_blocks, install_block_attention
from omnistudio.engine.compile import apply_compile
from omnistudio.engine.cuda_graphs import GraphStatus
from omnistudio.engine.sampler_ops import (  # noqa: F401 (SamplerStats: re-exported)
    Layout,
    SamplerStats,
    build_layout,
    draw_uniforms,
    gumbel,
    noise_kinds,
    predict,
    scatter_topk,
    unmask_schedules,
)
from omnistudio.engine.static_step import StepRunner
from omnistudio.engine.upstream import GenerationConfig, GenerationTask, OmniVoiceModel
from omnistudio.errors import Cancelled

if TYPE_CHECKING:
    from transformers import PreTrainedModel


log = logging.getLogger(__name__)

TECHNIQUES = ("sliced_projection", "static_prefix", "inplace_scatter", "trimmed_guidance",
              "length_bucketing", "early_exit", "block_attention", "static_step")
LOSSLESS = ("sliced_projection", "static_prefix", "inplace_scatter", "early_exit")
COMPILE_MODES = ("off", "default", "reduce-overhead")




@dataclass(frozen=True)
class SamplerOptions:
    """One switch per technique (see the module docstring)."""

    sliced_projection: bool = True
    static_prefix: bool = True
    inplace_scatter: bool = True
    trimmed_guidance: bool = True
    length_bucketing: bool = False
    early_exit: bool = True
    block_attention: bool = False
    static_step: bool = False
    cuda_graphs: bool = True  # with static_step on CUDA: replay captured graphs (off: the same step eagerly)
    compile_vocoder: str = "off"  # off | default | reduce-overhead
    compile_backbone: bool = False

    def __post_init__(self) -> None:
        if self.compile_vocoder not in COMPILE_MODES:
            raise ValueError(f"compile_vocoder must be one of {', '.join(COMPILE_MODES)}")

    @classmethod
    def stock(cls) -> SamplerOptions:
        """Every technique off: the loop does what stock does (for measuring)."""
        # Any: every technique is a bool field, but ** is checked against every field (compile_vocoder too)
        switches: dict[str, Any] = {name: False for name in TECHNIQUES}
        return cls(**switches)

    @classmethod
    def only(cls, *names: str) -> SamplerOptions:
        """Every technique off except ``names``."""
        unknown = set(names) - set(TECHNIQUES)
        if unknown:
            raise ValueError(f"unknown technique(s): {', '.join(sorted(unknown))}")
        switches: dict[str, Any] = {name: True for name in names}  # bool fields (see stock)
        return replace(cls.stock(), **switches)

    @classmethod
    def for_device(cls, device: torch.device | str) -> SamplerOptions:
        """The defaults for a device: bucketing and the static (graph-replayed) step only on CUDA,
        attention per block only on CPU; ``OMNISTUDIO_CUDA_GRAPHS=0`` runs the static step eagerly."""
        cuda = str(device).startswith("cuda")
        return cls(length_bucketing=cuda, block_attention=not cuda, static_step=cuda, cuda_graphs=graphs_wanted())

    def enabled(self) -> list[str]:
        return [f.name for f in fields(self) if f.name in TECHNIQUES and getattr(self, f.name)]


class FastSampler:
    """``OmniVoice._generate_iterative`` with the techniques of :class:`SamplerOptions`."""

    def __init__(self, model: OmniVoiceModel, options: SamplerOptions | None = None) -> None:
        self.model = model
        self.options = options or SamplerOptions.for_device(model.device)
        self.should_cancel: Callable[[], bool] | None = None
        self.generators: Sequence[torch.Generator] | None = None  # per-item Gumbel seeds
        # Optional observer of each step's target logits (step, cond (B,C',T,V), uncond or None);
        # parity tests use it to measure the drift of techniques 4 and 5.
        self.on_logits: Callable[[int, torch.Tensor, torch.Tensor | None], None] | None = None
        self.last_stats = SamplerStats()
        self._step = 0
        self._runner: StepRunner | None = None
        cfg = model.config
        self.num_cb = int(cfg.num_audio_codebook)
        self.vocab = int(cfg.audio_vocab_size)
        self.mask_id = int(cfg.audio_mask_id)
        self.options = self._effective(self.options, model.llm)
        if self.options.compile_backbone or self.options.compile_vocoder != "off":
            apply_compile(model, backbone=self.options.compile_backbone, vocoder=self.options.compile_vocoder)

    @staticmethod
    def _effective(options: SamplerOptions, llm: PreTrainedModel) -> SamplerOptions:
        """The options as they will run: a compiled backbone and the static step keep one pass over the
        masked rows, which the static step buckets; block attention needs the backbone on transformers' SDPA."""
        if options.block_attention and (options.compile_backbone or options.static_step
                                         or not install_block_attention(llm)):
            options = replace(options, block_attention=False)
        if options.static_step and not options.length_bucketing:
            options = replace(options, length_bucketing=True)
        return options

    @property
    def runner(self) -> StepRunner:
        """The static step's runner (replaying captured graphs on CUDA unless ``cuda_graphs`` is off)."""
        if self._runner is None:
            graphs = None
            compiled = "forward" in vars(self.model.llm)  # the persistent compiled backbone is installed
            if self.options.cuda_graphs and cuda_graphs.available(self.model.device) and not (
                    self.options.compile_backbone or compiled):
                graphs = cuda_graphs.StepGraphs(self.model.device)
            self._runner = StepRunner(self, graphs)
        return self._runner

    @property
    def graph_status(self) -> GraphStatus:
        """Step graphs captured so far (none unless the static step runs on CUDA)."""

        runner = self._runner
        return runner.graphs.status if runner is not None and runner.graphs is not None else GraphStatus()

    def prepare_graphs(self, gen_config: GenerationConfig, batches: Sequence[int], longest: int) -> GraphStatus:
        """Capture the static step for every batch in ``batches`` and every row length up to ``longest``
        (the engine's warm-up), so no sentence of those shapes pays for a capture. Nothing to do
        without graphs (CPU, MPS, the static step off)."""
        if not self.options.static_step or self.runner.graphs is None:
            return self.graph_status
        with torch.inference_mode():
            return self.runner.prepare(gen_config, batches, longest)

    # ------------------------------------------------------------ override points
    def embed_inputs(self, layout: Layout, ids: torch.Tensor) -> torch.Tensor:
        """Input embeddings for the whole batch (stock's construction).

        The one place embeddings are built from ids: a subclass may replace the
        reference frames (``layout.target_start[i] - layout.ref_lens[i]`` up to
        ``layout.target_start[i]`` in row ``i``), e.g. for a voice blend.
        """
        return self.model._prepare_embed_inputs(ids, layout.audio_mask)

    def embed_targets(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, C, T) audio tokens -> (B, T, H), as stock embeds audio positions."""
        shifted = tokens + self.model.codebook_layer_offsets.view(1, -1, 1)
        embeds: torch.Tensor = self.model.audio_embeddings(shifted)  # (B, C, T, H)
        return embeds.sum(dim=1)

    # ------------------------------------------------------------------ the loop
    def __call__(self, task: GenerationTask, gen_config: GenerationConfig) -> list[torch.Tensor]:
        with torch.inference_mode():
            return self._run(task, gen_config)

    def _backbone(self, layout: Layout, embeds: torch.Tensor) -> torch.Tensor:
        """One backbone forward over the layout (last hidden states)."""
        with attention_blocks(layout.blocks if self.options.block_attention else None):
            hidden: torch.Tensor = self.model.llm(inputs_embeds=embeds, attention_mask=layout.attention,
                                                  return_dict=True, position_ids=layout.position_ids)[0]
            return hidden

    def _run(self, task: GenerationTask, gen_config: GenerationConfig) -> list[torch.Tensor]:
        model, opt = self.model, self.options
        started = time.perf_counter()
        if self.generators is not None and (not (opt.inplace_scatter or opt.static_step)
                                            or len(self.generators) != task.batch_size):
            raise ValueError("per-item generators need inplace_scatter (or static_step) and one generator per item")
        b, device = task.batch_size, model.device
        inputs = [model._prepare_inference_inputs(task.texts[i], task.target_lens[i], task.ref_texts[i],
                                                  task.ref_audio_tokens[i], task.langs[i], task.instructs[i],
                                                  gen_config.denoise) for i in range(b)]
        guided = gen_config.guidance_scale != 0
        ref_lens = [0 if r is None else int(r.size(-1)) for r in task.ref_audio_tokens]
        if opt.static_step:
            stats = SamplerStats()
            out = self.runner.run(inputs, task.target_lens, ref_lens, gen_config, stats)
            stats.loop_s = time.perf_counter() - started
            self.last_stats = stats
            return out
        layout = build_layout(inputs, task.target_lens, ref_lens, packed=opt.trimmed_guidance,
                              with_uncond=guided or not opt.trimmed_guidance, bucket=opt.length_bucketing,
                              pad_id=self.mask_id, device=device)
        t_lens, t_max = layout.t_lens, max(layout.t_lens)
        tokens = torch.full((b, self.num_cb, t_max), self.mask_id, dtype=torch.long, device=device)
        schedules = unmask_schedules(t_lens, self.num_cb, gen_config)
        write_at = self._write_index(layout)
        dirty = False
        ids = layout.ids
        embeds = self.embed_inputs(layout, ids) if opt.static_prefix else None
        stats = SamplerStats(rows=ids.size(0), length=ids.size(2))
        for step in range(gen_config.num_step):
            if self.should_cancel is not None and self.should_cancel():
                raise Cancelled("synthesis cancelled")
            ks = [sched[step] for sched in schedules]
            if opt.early_exit and not any(k > 0 for k in ks):
                continue
            t0 = time.perf_counter()
            if dirty:  # write the tokens unmasked so far into the inputs
                self._write_targets(layout, tokens, embeds, ids, write_at)
            dirty = True
            hidden = self._backbone(layout, embeds if embeds is not None else self.embed_inputs(layout, ids))
            self._unmask(hidden, layout, tokens, ks, gen_config, step)
            stats.steps += 1
            stats.step_s.append(time.perf_counter() - t0)
        stats.loop_s = time.perf_counter() - started
        self.last_stats = stats
        return [tokens[i, :, :t_lens[i]] for i in range(b)]

    @staticmethod
    def _write_index(layout: Layout) -> tuple[torch.Tensor, torch.Tensor]:
        """(rows, positions) of every real target frame: conditional ones, then unconditional ones."""
        layout.valid_idx = layout.valid.nonzero(as_tuple=True)  # once: boolean indexing syncs on CUDA
        rows = [layout.cond_rows[layout.valid]]
        pos = [layout.cond_pos[layout.valid]]
        if layout.uncond_rows is not None and layout.uncond_pos is not None:
            rows.append(layout.uncond_rows[layout.valid])
            pos.append(layout.uncond_pos[layout.valid])
        return torch.cat(rows), torch.cat(pos)

    def _write_targets(self, layout: Layout, tokens: torch.Tensor, embeds: torch.Tensor | None,
                       ids: torch.Tensor, write_at: tuple[torch.Tensor, torch.Tensor]) -> None:
        """Put the current target tokens where the backbone reads them (in place)."""
        copies = 1 if layout.uncond_rows is None else 2
        if embeds is not None:  # static prefix: re-embed the target frames only
            values = self.embed_targets(tokens)[layout.valid_idx]
            embeds.index_put_(write_at, values.repeat(copies, 1))
        else:
            values = tokens.permute(0, 2, 1)[layout.valid_idx]  # (N, C)
            ids.permute(0, 2, 1).index_put_(write_at, values.repeat(copies, 1))

    # ------------------------------------------------------------------- scoring
    def logits(self, hidden: torch.Tensor, rows: torch.Tensor, pos: torch.Tensor,
               cb: tuple[int, int]) -> torch.Tensor:
        """Audio logits (B, C', T, V) for target frames at (rows, pos), codebooks cb[0]:cb[1] (the step model's
        head: the static step calls it too)."""
        heads = self.model.audio_heads
        lo, hi = cb
        if self.options.sliced_projection:
            h = hidden[rows, pos]  # (B, T, H)
            weight = heads.weight if (lo, hi) == (0, self.num_cb) else heads.weight[lo * self.vocab:hi * self.vocab]
            flat = F.linear(h, weight)
            out = flat.view(h.size(0), h.size(1), hi - lo, self.vocab).permute(0, 2, 1, 3)
        else:
            full = heads(hidden)
            r, s = hidden.shape[:2]
            full = full.view(r, s, self.num_cb, self.vocab).permute(0, 2, 1, 3)  # (R, C, S, V)
            out = full[rows[:, :1], :, pos].permute(0, 2, 1, 3)[:, lo:hi]  # (B, C', T, V)
        return out.to(torch.float32)

    def _unmask(self, hidden: torch.Tensor, layout: Layout, tokens: torch.Tensor, ks: list[int],
                gen_config: GenerationConfig, step: int) -> None:
        self._step = step
        if self.options.inplace_scatter:
            self._unmask_batched(hidden, layout, tokens, ks, gen_config)
        else:
            self._unmask_per_item(hidden, layout, tokens, ks, gen_config)

    def _unmask_per_item(self, hidden: torch.Tensor, layout: Layout, tokens: torch.Tensor, ks: list[int],
                         gen_config: GenerationConfig) -> None:
        """Stock's per-item loop (global RNG), on this sampler's logits."""
        # lazy: start-up (omnivoice)
        from omnivoice.models.omnivoice import _gumbel_sample

        guided = gen_config.guidance_scale != 0
        c_all = self.logits(hidden, layout.cond_rows, layout.cond_pos, (0, self.num_cb))
        u_all = (self.logits(hidden, layout.uncond_rows, layout.uncond_pos, (0, self.num_cb))
                 if guided and layout.uncond_rows is not None and layout.uncond_pos is not None else c_all)
        if self.on_logits is not None:
            self.on_logits(self._step, c_all, u_all if guided else None)
        layer_ids = torch.arange(self.num_cb, device=tokens.device).view(1, -1, 1)
        for i, k in enumerate(ks):
            if k <= 0:
                continue
            t = layout.t_lens[i]
            pred, scores = self.model._predict_tokens_with_scoring(c_all[i:i + 1, :, :t], u_all[i:i + 1, :, :t],
                                                                   gen_config)
            scores = scores - (layer_ids * gen_config.layer_penalty_factor)
            if gen_config.position_temperature > 0.0:
                scores = _gumbel_sample(scores, gen_config.position_temperature)
            sample = tokens[i:i + 1, :, :t]
            scores.masked_fill_(sample != self.mask_id, -float("inf"))
            _, topk_idx = torch.topk(scores.flatten(), k)
            flat = sample.flatten()
            flat[topk_idx] = pred.flatten()[topk_idx]
            tokens[i:i + 1, :, :t] = flat.view_as(sample)

    def _unmask_batched(self, hidden: torch.Tensor, layout: Layout, tokens: torch.Tensor, ks: list[int],
                        gen_config: GenerationConfig) -> None:
        """Score every item at once; one top-k and one scatter for the whole batch."""
        device = tokens.device
        b, num_cb, t_max = tokens.shape
        cls_u, pos_u = draw_uniforms(layout.t_lens, ks, num_cb, self.vocab, noise_kinds(gen_config), device,
                                     self.generators)
        open_ = (tokens == self.mask_id) & layout.valid.unsqueeze(1)  # (B, C, T) still masked
        items = torch.tensor([k > 0 for k in ks], device=device)
        lo, hi, sel = 0, num_cb, None
        if self.options.early_exit:
            active_cb = (open_.any(dim=2) & items.unsqueeze(1)).any(dim=0).nonzero().flatten().tolist()
            lo, hi = active_cb[0], active_cb[-1] + 1
            if not all(k > 0 for k in ks):
                sel = items.nonzero().flatten()
        rows_c, pos_c = layout.cond_rows, layout.cond_pos
        rows_u, pos_u_idx = layout.uncond_rows, layout.uncond_pos
        if sel is not None:
            rows_c, pos_c = rows_c[sel], pos_c[sel]
            if rows_u is not None and pos_u_idx is not None:
                rows_u, pos_u_idx = rows_u[sel], pos_u_idx[sel]
        guided = gen_config.guidance_scale != 0
        c_logits = self.logits(hidden, rows_c, pos_c, (lo, hi))
        u_logits = (self.logits(hidden, rows_u, pos_u_idx, (lo, hi))
                    if guided and rows_u is not None and pos_u_idx is not None else None)
        if self.on_logits is not None:
            self.on_logits(self._step, c_logits, u_logits)

        def part(x: torch.Tensor | None) -> torch.Tensor | None:
            if x is None:
                return None
            x = x[:, lo:hi]
            return x if sel is None else x[sel]

        pred_p, conf_p = predict(c_logits, u_logits, gen_config, self.mask_id, part(cls_u))
        layer_ids = torch.arange(lo, hi, device=device).view(1, -1, 1)
        scores_p = conf_p - (layer_ids * gen_config.layer_penalty_factor)
        if gen_config.position_temperature > 0.0:
            pos_uniform = part(pos_u)
            assert pos_uniform is not None  # drawn when position_temperature > 0
            scores_p = gumbel(scores_p, gen_config.position_temperature, pos_uniform)
        if (lo, hi) == (0, num_cb) and sel is None:
            scores, pred = scores_p, pred_p
        else:
            scores = torch.full((b, num_cb, t_max), -float("inf"), device=device)
            pred = torch.full((b, num_cb, t_max), self.mask_id, dtype=torch.long, device=device)
            if sel is None:
                scores[:, lo:hi], pred[:, lo:hi] = scores_p, pred_p
            else:
                scores[sel, lo:hi], pred[sel, lo:hi] = scores_p, pred_p
        scores = scores.masked_fill(~open_, -float("inf"))
        scatter_topk(tokens, pred, scores, torch.tensor(ks, device=device), max(ks))
