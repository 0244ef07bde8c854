"""What OmniStudio uses of OmniVoice, as Protocols (OmniVoice ships no type information).

Besides its public ``generate()`` and ``create_voice_clone_prompt()``, OmniStudio calls a few of
OmniVoice's private methods: the two halves of ``generate()`` (:mod:`omnistudio.engine.generation`),
the unmasking loop the fast sampler replaces and the embedding step a blend overrides. Naming them
here gives them types, and lists what an OmniVoice upgrade must keep. The objects themselves are
OmniVoice's (``omnivoice.models.omnivoice``): nothing here is instantiated.

Importing this module imports neither torch nor transformers (they are named for the type checker
only), so the modules that annotate with it stay cheap to import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypedDict

if TYPE_CHECKING:
    import numpy as np
    import torch
    from transformers import PreTrainedModel


class VoicePrompt(Protocol):
    """A voice: ``VoiceClonePrompt`` (reference tokens, transcript, RMS), or a prompt built on one
    (:class:`~omnistudio.engine.morph.BlendedPrompt`, :class:`~omnistudio.voices.state.AnchorPrompt`)."""

    @property
    def ref_audio_tokens(self) -> torch.Tensor: ...  # (C, T) long

    @property
    def ref_text(self) -> str: ...

    @property
    def ref_rms(self) -> float: ...


class GenerationConfig(Protocol):
    """``OmniVoiceGenerationConfig``: the fields the unmasking loop reads."""

    @property
    def num_step(self) -> int: ...

    @property
    def guidance_scale(self) -> float: ...

    @property
    def t_shift(self) -> float: ...

    @property
    def layer_penalty_factor(self) -> float: ...

    @property
    def position_temperature(self) -> float: ...

    @property
    def class_temperature(self) -> float: ...

    @property
    def denoise(self) -> bool: ...

    @property
    def preprocess_prompt(self) -> bool: ...


class GenerationKwargs(TypedDict):
    """The generation options :meth:`~omnistudio.engine.engine.Engine.generation_kwargs` gives
    (``generate()`` keywords; ``OmniVoiceGenerationConfig`` fields)."""

    num_step: int
    guidance_scale: float
    postprocess_output: bool


class GenerationTask(Protocol):
    """``GenerationTask``: a preprocessed batch, one entry per item."""

    @property
    def batch_size(self) -> int: ...

    @property
    def texts(self) -> list[str]: ...

    @property
    def target_lens(self) -> list[int]: ...

    @property
    def langs(self) -> list[str | None]: ...

    @property
    def instructs(self) -> list[str | None]: ...

    @property
    def ref_texts(self) -> list[str | None]: ...

    @property
    def ref_audio_tokens(self) -> list[torch.Tensor | None]: ...

    @property
    def ref_rms(self) -> list[float | None]: ...

    def get_indices(self, config: GenerationConfig, frame_rate: int) -> tuple[list[int], list[int]]: ...

    def slice_task(self, indices: list[int]) -> GenerationTask: ...  # (None for no indices: not called so)


class Sampler(Protocol):
    """An iterative unmasking loop: what replaces ``OmniVoice._generate_iterative``. Returns one
    (C, T_i) token tensor per item."""

    def __call__(self, task: GenerationTask, gen_config: GenerationConfig, /) -> list[torch.Tensor]: ...


class SeededSampler(Sampler, Protocol):
    """A sampler that draws each item's noise from its own generator (set for one call)."""

    generators: Sequence[torch.Generator] | None


class LlmConfig(Protocol):
    @property
    def hidden_size(self) -> int: ...


class OmniVoiceConfig(Protocol):
    @property
    def num_audio_codebook(self) -> int: ...

    @property
    def audio_vocab_size(self) -> int: ...

    @property
    def audio_mask_id(self) -> int: ...

    @property
    def llm_config(self) -> LlmConfig: ...


class FrameRate(Protocol):
    @property
    def frame_rate(self) -> int: ...


class AudioTokenizer(Protocol):
    """The codec (``HiggsAudioV2TokenizerModel``): reference audio -> tokens, tokens -> audio."""

    @property
    def config(self) -> FrameRate: ...

    @property
    def device(self) -> torch.device: ...

    @property
    def acoustic_decoder(self) -> torch.nn.Module: ...

    def decode(self, audio_codes: torch.Tensor) -> object: ...

    def float(self) -> object: ...


class OmniVoiceModel(Protocol):
    """``omnivoice.models.omnivoice.OmniVoice``, loaded for inference."""

    @property
    def config(self) -> OmniVoiceConfig: ...

    @property
    def device(self) -> torch.device: ...

    @property
    def sampling_rate(self) -> int: ...

    @property
    def llm(self) -> PreTrainedModel: ...  # the backbone, called once per unmasking step

    @property
    def audio_tokenizer(self) -> AudioTokenizer: ...

    @property
    def audio_embeddings(self) -> torch.nn.Embedding: ...

    @property
    def audio_heads(self) -> torch.nn.Linear: ...

    @property
    def codebook_layer_offsets(self) -> torch.Tensor: ...  # (C,) a buffer

    # Replaced for one call by the engine (a sampler) and by a blend (embedding overrides).
    _generate_iterative: Callable[[GenerationTask, GenerationConfig], list[torch.Tensor]]
    _prepare_embed_inputs: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (ids, audio mask) -> embeds

    def eval(self) -> object: ...

    def generate(self, text: str | list[str], **kwargs: object) -> list[np.ndarray]: ...

    def create_voice_clone_prompt(self, ref_audio: tuple[torch.Tensor, int], ref_text: str | None = None,
                                  preprocess_prompt: bool = True) -> VoicePrompt: ...

    def _preprocess_all(self, text: list[str], language: list[str], voice_clone_prompt: list[VoicePrompt],
                        preprocess_prompt: bool, speed: float | None) -> GenerationTask: ...

    def _generate_chunked(self, task: GenerationTask,
                          gen_config: GenerationConfig) -> list[list[torch.Tensor]]: ...

    def _decode_and_post_process(self, tokens: torch.Tensor | list[torch.Tensor], rms: float | None,
                                 gen_config: GenerationConfig) -> np.ndarray: ...

    def _estimate_target_tokens(self, text: str, ref_text: str, num_ref_audio_tokens: int,
                                speed: float = 1.0) -> int: ...

    def _prepare_inference_inputs(self, text: str, num_target_tokens: int, ref_text: str | None,
                                  ref_audio_tokens: torch.Tensor | None, lang: str | None,
                                  instruct: str | None, denoise: bool) -> dict[str, torch.Tensor]: ...

    def _predict_tokens_with_scoring(self, c_logits: torch.Tensor, u_logits: torch.Tensor,
                                     gen_config: GenerationConfig) -> tuple[torch.Tensor, torch.Tensor]: ...
