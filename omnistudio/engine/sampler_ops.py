"""Tensor helpers of the fast sampler: batch layout, unmask schedule, noise, batched scoring.

Everything here reproduces a piece of ``OmniVoice._generate_iterative`` with
the same arithmetic in the same order, so that results stay bit-identical where
the shapes the backbone sees are unchanged (see :mod:`omnistudio.engine.sampler`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch
import torch.nn.functional as F

from omnistudio.engine.upstream import GenerationConfig


@dataclass
class SamplerStats:
    """What the last call did (for the bench and telemetry)."""

    steps: int = 0  # backbone forwards run
    rows: int = 0
    length: int = 0  # backbone sequence length
    loop_s: float = 0.0
    step_s: list[float] = field(default_factory=list)


class Scoring(Protocol):
    """The generation settings that scoring and its noise read (a ``GenerationConfig`` has them)."""

    @property
    def guidance_scale(self) -> float: ...

    @property
    def class_temperature(self) -> float: ...

    @property
    def position_temperature(self) -> float: ...


BUCKET = 32  # length bucketing granularity below 256 tokens; coarser above (see bucket_length)


@dataclass
class Layout:
    """Where every item's conditional and unconditional target frames sit in the backbone batch."""

    ids: torch.Tensor  # (R, C, L) input ids (text ids repeated over codebooks, audio ids)
    audio_mask: torch.Tensor  # (R, L) True at audio positions
    attention: torch.Tensor  # (R, 1, L, L) bool, bidirectional within each block
    position_ids: torch.Tensor | None  # (R, L), None: 0..L-1 as stock
    c_lens: list[int]  # conditional length per item (style + text + reference + target)
    t_lens: list[int]  # target frames per item
    ref_lens: list[int]  # reference frames per item (they end where the target starts)
    cond_rows: torch.Tensor  # (B, Tmax) backbone row of each target frame (conditional)
    cond_pos: torch.Tensor  # (B, Tmax) its position; frames past t_len point at the last real one
    uncond_rows: torch.Tensor | None  # same for the unconditional copy (None: not computed)
    uncond_pos: torch.Tensor | None
    valid: torch.Tensor  # (B, Tmax) True for real target frames
    valid_idx: tuple[torch.Tensor, ...] = ()  # valid.nonzero(as_tuple=True), filled by the sampler
    blocks: list[list[tuple[int, int]]] = field(default_factory=list)  # per row: [start, end) of each block

    @property
    def target_start(self) -> list[int]:
        """Conditional position of each item's first target frame (reference frames precede it)."""
        return [c - t for c, t in zip(self.c_lens, self.t_lens)]


def bucket_length(length: int) -> int:
    """The row length a bucketed layout pads ``length`` to: a multiple of 32 up to 256 tokens, then
    of an eighth of the next power of two (64 up to 512, 128 up to 1024, 256 up to 2048, ...): padding
    stays under a quarter of the row, and a session meets few shapes (20 up to 2048 tokens; each one
    captured graph per batch size on CUDA)."""
    if length <= 8 * BUCKET:
        step = BUCKET
    else:
        step = 1 << max(5, (length - 1).bit_length() - 3)
    return -(-length // step) * step


def bucket_ladder(longest: int) -> list[int]:
    """Every row length :func:`bucket_length` gives, from the shortest up to the one ``longest`` pads to."""
    out = [bucket_length(1)]
    while out[-1] < longest:
        out.append(bucket_length(out[-1] + 1))
    return out


def bucketed(length: int, on: bool) -> int:
    return bucket_length(length) if on else length


def frames_for(length: int, packed: bool, with_uncond: bool) -> int:
    """The most target frames a row of ``length`` can hold: half of it when the unconditional copy of
    the target shares the row (packed), else all of it."""
    return length // 2 if packed and with_uncond else length


def build_layout(inputs: Sequence[dict[str, torch.Tensor]], t_lens: Sequence[int], ref_lens: Sequence[int],
                 *, packed: bool, with_uncond: bool, bucket: bool, pad_id: int,
                 device: torch.device | str, frames: int | None = None) -> Layout:
    """Lay out ``inputs`` (from ``OmniVoice._prepare_inference_inputs``) as backbone rows.

    Stock layout (``packed=False``): 2B rows padded to the longest conditional
    length, unconditional rows padded the same way (exactly as stock).
    Packed layout (trimmed guidance): one row per item, ``[cond | uncond]`` at
    their true lengths with block-diagonal attention and positions restarting
    at 0 for the unconditional block; no unconditional block when guidance is off.
    ``frames`` (at least every target length) sizes the per-frame tensors (``cond_pos``, ``valid``...)
    instead of the longest target, for a step whose shapes do not depend on the sentence.
    """
    b = len(inputs)
    num_cb = inputs[0]["input_ids"].size(1)
    c_lens = [int(inp["input_ids"].size(2)) for inp in inputs]
    t_lens = [int(t) for t in t_lens]
    t_max = max(t_lens) if frames is None else int(frames)
    if t_max < max(t_lens):
        raise ValueError(f"frames={frames} is shorter than the longest target ({max(t_lens)})")
    if packed:
        rows = b
        real = [c + (t if with_uncond else 0) for c, t in zip(c_lens, t_lens)]
    else:
        rows = 2 * b
        real = c_lens + t_lens
    length = bucketed(max(real), bucket)
    ids = torch.full((rows, num_cb, length), pad_id, dtype=torch.long, device=device)
    audio_mask = torch.zeros((rows, length), dtype=torch.bool, device=device)
    attention = torch.zeros((rows, 1, length, length), dtype=torch.bool, device=device)
    position_ids = torch.zeros((rows, length), dtype=torch.long, device=device) if packed else None
    cond_start, uncond_row, uncond_start = [], [], []
    blocks: list[list[tuple[int, int]]] = [[] for _ in range(rows)]
    for i, inp in enumerate(inputs):
        c, t = c_lens[i], t_lens[i]
        ids[i, :, :c] = inp["input_ids"][0]
        audio_mask[i, :c] = inp["audio_mask"][0]
        attention[i, :, :c, :c] = True
        blocks[i].append((0, c))
        cond_start.append(c - t)
        if packed:
            assert position_ids is not None  # made above when packed
            position_ids[i, :c] = torch.arange(c, device=device)
            if with_uncond:
                ids[i, :, c:c + t] = inp["input_ids"][0, :, -t:]
                audio_mask[i, c:c + t] = inp["audio_mask"][0, -t:]
                attention[i, :, c:c + t, c:c + t] = True
                blocks[i].append((c, c + t))
                position_ids[i, c:c + t] = torch.arange(t, device=device)
            uncond_row.append(i)
            uncond_start.append(c)
        else:
            u = b + i
            ids[u, :, :t] = inp["input_ids"][0, :, -t:]
            audio_mask[u, :t] = inp["audio_mask"][0, -t:]
            attention[u, :, :t, :t] = True
            blocks[u].append((0, t))
            if length > t:  # stock: padded unconditional frames attend to themselves
                pad = torch.arange(t, length, device=device)
                attention[u, :, pad, pad] = True
            uncond_row.append(u)
            uncond_start.append(0)
    if bucket or packed:  # extra padding: let every pad position attend to itself (no empty rows)
        for r in range(rows):
            pad = torch.arange(real[r], length, device=device)
            attention[r, :, pad, pad] = True
    steps = torch.arange(t_max, device=device)
    t_len_t = torch.tensor(t_lens, device=device)
    valid = steps.unsqueeze(0) < t_len_t.unsqueeze(1)
    offset = torch.minimum(steps.unsqueeze(0), (t_len_t - 1).unsqueeze(1))
    cond_pos = torch.tensor(cond_start, device=device).unsqueeze(1) + offset
    cond_rows = torch.arange(b, device=device).unsqueeze(1).expand(b, t_max)
    has_uncond = with_uncond or not packed
    return Layout(
        ids=ids, audio_mask=audio_mask, attention=attention, position_ids=position_ids,
        c_lens=c_lens, t_lens=t_lens, ref_lens=[int(r) for r in ref_lens],
        cond_rows=cond_rows, cond_pos=cond_pos,
        uncond_rows=torch.tensor(uncond_row, device=device).unsqueeze(1).expand(b, t_max) if has_uncond else None,
        uncond_pos=(torch.tensor(uncond_start, device=device).unsqueeze(1) + offset) if has_uncond else None,
        valid=valid, blocks=blocks,
    )


def unmask_schedules(t_lens: Sequence[int], num_cb: int, gen_config: GenerationConfig) -> list[list[int]]:
    """How many tokens each item unmasks at each step (stock's arithmetic)."""
    # lazy: start-up (omnivoice)
    from omnivoice.models.omnivoice import _get_time_steps

    timesteps = _get_time_steps(t_start=0.0, t_end=1.0, num_step=gen_config.num_step,
                                t_shift=gen_config.t_shift).tolist()
    out = []
    for t_len in t_lens:
        total = t_len * num_cb
        rem = total
        sched = []
        for step in range(gen_config.num_step):
            if step == gen_config.num_step - 1:
                num = rem
            else:
                num = min(math.ceil(total * (timesteps[step + 1] - timesteps[step])), rem)
            sched.append(int(num))
            rem -= int(num)
        out.append(sched)
    return out


def draw_uniforms(t_lens: Sequence[int], ks: Sequence[int], num_cb: int, vocab: int, kinds: tuple[bool, bool],
                  device: torch.device | str, generators: Sequence[torch.Generator] | None = None,
                  out: tuple[torch.Tensor | None, torch.Tensor | None] | None = None,
                  ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The uniforms stock's Gumbel sampling draws at one step, in stock's order and shapes.

    Stock draws, for each item that unmasks something (in batch order), first
    the class noise (1, C, T_i, V) when class_temperature > 0, then the position
    noise (1, C, T_i) when position_temperature > 0 (``kinds``: whether each is drawn,
    :func:`noise_kinds`). ``generators`` (one per
    item) replaces the global generator, for per-item seeds. ``out`` (class, position buffers of at
    least (B, C, T_max[, V])) receives the draws in place instead of new tensors; frames no item
    draws hold 0.5.
    """
    b, t_max = len(t_lens), max(t_lens)
    cls = pos = None
    classes, positions = kinds
    if classes:
        cls = out[0] if out is not None and out[0] is not None else \
            torch.empty((b, num_cb, t_max, vocab), dtype=torch.float32, device=device)
        cls.fill_(0.5)
    if positions:
        pos = out[1] if out is not None and out[1] is not None else \
            torch.empty((b, num_cb, t_max), dtype=torch.float32, device=device)
        pos.fill_(0.5)
    for i, (t, k) in enumerate(zip(t_lens, ks)):
        if k <= 0:
            continue
        gen = generators[i] if generators is not None else None
        if cls is not None:
            cls[i, :, :t] = torch.rand((1, num_cb, t, vocab), generator=gen, device=device)[0]
        if pos is not None:
            pos[i, :, :t] = torch.rand((1, num_cb, t), generator=gen, device=device)[0]
    return cls, pos


def noise_kinds(gen_config: Scoring) -> tuple[bool, bool]:
    """Whether a step draws class noise and position noise under ``gen_config`` (:func:`draw_uniforms`)."""
    return gen_config.class_temperature > 0.0, gen_config.position_temperature > 0.0


def gumbel(scores: torch.Tensor, temperature: float | torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """``omnivoice._gumbel_sample`` with its uniforms given (``temperature`` a float or a 0-dim tensor)."""
    scaled = scores / temperature
    return scaled + -torch.log(-torch.log(uniform + 1e-10) + 1e-10)


def predict(c_logits: torch.Tensor, u_logits: torch.Tensor | None, gen_config: Scoring, mask_id: int,
            cls_uniform: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``OmniVoice._predict_tokens_with_scoring`` over any leading shape: (tokens, confidence)."""
    guided = gen_config.guidance_scale != 0
    if guided:
        assert u_logits is not None  # guided: the unconditional copy is scored
    noisy = gen_config.class_temperature > 0.0
    return score(c_logits, u_logits if guided else None, gen_config.guidance_scale, mask_id,
                 gen_config.class_temperature if noisy else None, cls_uniform)


def score(c_logits: torch.Tensor, u_logits: torch.Tensor | None, guidance: float | torch.Tensor, mask_id: int,
          class_temperature: float | torch.Tensor | None, cls_uniform: torch.Tensor | None,
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`predict` with the structure given (guided: ``u_logits`` not None; class noise:
    ``class_temperature`` not None) and the values as floats or 0-dim tensors (the static step's, which
    a captured graph reads where they are): no value decides anything on the host."""
    if u_logits is not None:
        c_lp = F.log_softmax(c_logits, dim=-1)
        u_lp = F.log_softmax(u_logits, dim=-1)
        log_probs = torch.log_softmax(c_lp + guidance * (c_lp - u_lp), dim=-1)
    else:
        log_probs = F.log_softmax(c_logits, dim=-1)
    log_probs[..., mask_id] = -float("inf")
    if class_temperature is not None:
        # lazy: start-up (omnivoice)
        from omnivoice.models.omnivoice import _filter_top_k

        assert cls_uniform is not None
        pred = gumbel(_filter_top_k(log_probs, ratio=0.1), class_temperature, cls_uniform).argmax(-1)
    else:
        pred = log_probs.argmax(dim=-1)
    return pred, log_probs.max(dim=-1)[0]


def scatter_topk(tokens: torch.Tensor, pred: torch.Tensor, scores: torch.Tensor, ks: torch.Tensor,
                 k_max: int) -> None:
    """Unmask the ``ks[b]`` best-scoring positions of every item at once, in place.

    ``tokens``/``pred``/``scores`` are (B, C, T); positions that must not be
    chosen carry -inf scores.
    """
    b = tokens.size(0)
    flat_scores = scores.reshape(b, -1)
    _, idx = torch.topk(flat_scores, k_max, dim=1)
    chosen = torch.arange(k_max, device=tokens.device).unsqueeze(0) < ks.unsqueeze(1)
    flat_tokens = tokens.view(b, -1)
    values = torch.where(chosen, pred.reshape(b, -1).gather(1, idx), flat_tokens.gather(1, idx))
    flat_tokens.scatter_(1, idx, values)
