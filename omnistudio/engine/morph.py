"""Morph: a continuous blend of two anchors' voice prompts.

A reference frame is embedded as the sum of its 8 codebook embeddings (as
OmniVoice embeds every audio position). A blend of A and B at ``alpha``:

    E = alpha * E_A + (1 - alpha) * resample_time(E_B, len(E_A))

where ``resample_time`` interpolates linearly along the time axis (so at
``alpha = 0`` the voice is B's timbre stretched or squeezed to A's length).
``E`` is written into the reference positions of the input embeddings; A's
tokens fix the positions and A's exact transcript conditions the text. At
``alpha = 1`` nothing is overridden, so the audio is exactly A's.

The override works for the stock loop and the fast sampler alike: both build
input embeddings through ``model._prepare_embed_inputs``, where item ``i``'s
conditional row is row ``i`` and its first audio position is its first
reference frame.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from omnistudio.checks import check_alpha
from omnistudio.engine.upstream import OmniVoiceModel, VoicePrompt

if TYPE_CHECKING:
    import torch


@dataclass
class BlendedPrompt:
    """A's prompt (tokens, transcript, RMS) with blended reference embeddings."""

    ref_audio_tokens: torch.Tensor  # A's tokens [8, T_A]: they fix the reference positions
    ref_text: str
    ref_rms: float
    ref_embeddings: torch.Tensor | None  # [T_A, H] blended embeddings; None at alpha = 1 (exactly A)
    a: str
    b: str
    lang: str
    alpha: float


def reference_embeddings(model: OmniVoiceModel, tokens: torch.Tensor) -> torch.Tensor:
    """[8, T] reference tokens -> [T, H]: the sum of the codebook embeddings, as stock embeds them."""
    # lazy: start-up (torch)
    import torch

    with torch.inference_mode():
        ids = tokens.to(model.device).unsqueeze(0) + model.codebook_layer_offsets.view(1, -1, 1)
        embeds: torch.Tensor = model.audio_embeddings(ids)  # [1, 8, T, H]
        return embeds.sum(dim=1)[0]


def resample_time(embeds: torch.Tensor, length: int) -> torch.Tensor:
    """[T, H] -> [length, H] by linear interpolation along time (end points kept)."""
    # lazy: start-up (torch)
    import torch.nn.functional as F

    if embeds.size(0) == length:
        return embeds
    x = embeds.t().unsqueeze(0).float()  # (1, H, T)
    out = F.interpolate(x, size=length, mode="linear", align_corners=True)
    return out[0].t().to(embeds.dtype)


def blend_prompts(model: OmniVoiceModel, prompt_a: VoicePrompt, prompt_b: VoicePrompt, alpha: float, names: tuple[str, str] = ("a", "b"),
                  lang: str = "") -> BlendedPrompt:
    """Blend two prompts' reference embeddings (milliseconds: no audio is re-encoded)."""
    value = check_alpha(alpha)
    embeds = None
    if value < 1.0:
        e_a = reference_embeddings(model, prompt_a.ref_audio_tokens)
        e_b = resample_time(reference_embeddings(model, prompt_b.ref_audio_tokens), e_a.size(0))
        embeds = value * e_a + (1.0 - value) * e_b
    return BlendedPrompt(prompt_a.ref_audio_tokens, prompt_a.ref_text, prompt_a.ref_rms, embeds,
                         names[0], names[1], lang, value)


@contextmanager
def embedding_overrides(model: OmniVoiceModel, per_item: Sequence[torch.Tensor | None]) -> Iterator[None]:
    """While active, item ``i``'s reference frames get ``per_item[i]`` ([T_ref, H]) as embeddings."""
    if all(e is None for e in per_item):
        yield
        return
    stock = model._prepare_embed_inputs

    def with_blends(input_ids: torch.Tensor, audio_mask: torch.Tensor) -> torch.Tensor:
        embeds = stock(input_ids, audio_mask)
        for row, override in enumerate(per_item):
            if override is None or row >= audio_mask.size(0):
                continue
            start = int(audio_mask[row].int().argmax())  # first audio position = first reference frame
            embeds[row, start:start + override.size(0)] = override.to(embeds.dtype)
        return embeds

    model._prepare_embed_inputs = with_blends
    try:
        yield
    finally:
        del model._prepare_embed_inputs
