"""OmniVoice's ``generate()`` in its two halves: tokens, then audio.

``OmniVoice.generate`` runs text preprocessing and the duration estimate, the
iterative unmasking loop (chunked for long text) and then the vocoder, in one
call. The streaming engine needs the halves apart so that sentence k can be
decoded (on its own CUDA stream, or its own thread) while sentence k+1's
diffusion runs. These two functions are that method's body, cut where the
tokens are complete, calling the same upstream internals in the same order;
``tests/test_engine.py`` checks the halves together give ``generate()``'s
samples bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Unpack

import numpy as np

from omnistudio.engine.upstream import GenerationConfig, GenerationKwargs, OmniVoiceModel, VoicePrompt

if TYPE_CHECKING:
    import torch


@dataclass
class Tokens:
    """The first half's result: per item, its audio tokens (a tensor, or chunk tensors for long text)."""

    tokens: list[torch.Tensor | list[torch.Tensor]]
    ref_rms: list[float | None]
    gen_config: GenerationConfig


def generate_tokens(model: OmniVoiceModel, texts: list[str], languages: list[str], prompts: list[VoicePrompt],
                    speed: float | None, **config: Unpack[GenerationKwargs]) -> Tokens:
    """``generate()`` up to the tokens: preprocess, then the unmasking loop (chunked above 30 s)."""
    # lazy: start-up (omnivoice)
    from omnivoice.models.omnivoice import OmniVoiceGenerationConfig

    gen_config: GenerationConfig = OmniVoiceGenerationConfig.from_dict(config)
    model.eval()
    task = model._preprocess_all(text=texts, language=languages, voice_clone_prompt=prompts,
                                 preprocess_prompt=gen_config.preprocess_prompt, speed=speed)
    short_idx, long_idx = task.get_indices(gen_config, model.audio_tokenizer.config.frame_rate)
    results: dict[int, torch.Tensor | list[torch.Tensor]] = {}  # every index is short or long
    if short_idx:
        for idx, tensor in zip(short_idx, model._generate_iterative(task.slice_task(short_idx), gen_config)):
            results[idx] = tensor
    if long_idx:
        for idx, chunks in zip(long_idx, model._generate_chunked(task.slice_task(long_idx), gen_config)):
            results[idx] = chunks
    return Tokens([results[i] for i in range(task.batch_size)], list(task.ref_rms), gen_config)


def decode_tokens(model: OmniVoiceModel, tokens: Tokens) -> list[np.ndarray]:
    """``generate()``'s last step: the vocoder and stock post-processing, item by item."""
    return [model._decode_and_post_process(t, rms, tokens.gen_config)
            for t, rms in zip(tokens.tokens, tokens.ref_rms)]


def token_tensors(tokens: Tokens) -> list[torch.Tensor]:
    """Every tensor of ``tokens`` (chunked items hold several)."""
    out: list[torch.Tensor] = []
    for item in tokens.tokens:
        out.extend(item if isinstance(item, list) else [item])
    return out
