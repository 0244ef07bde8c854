"""What the sentence bench (``omnistudio bench``) reports: its result and the rows in it, typed (each a dict
when printed as JSON)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict

if TYPE_CHECKING:
    from omnistudio.bench.modes import GraphCounts


class EngineLoad(TypedDict):
    """What loading (and quantizing) one engine of the run cost."""

    engine: str
    dtype: str
    quantize: str
    load_s: float
    quantize_s: float
    linear_mb: list[float] | None  # the int8 layers' weights before and after (None: not quantized)
    rss_growth_mb: int


class Int8Rule(TypedDict):
    """The rule for int8 as the CPU default, applied to one run."""

    int8_agreement: float
    bf16_agreement: float
    int8_at_least_bf16: bool


class SentenceInput(TypedDict):
    """A sentence every variant speaks: its text tokens and the frames OmniVoice plans for it."""

    text: str
    text_tokens: int
    target_frames: int


class SentenceBenchResult(TypedDict):
    """What :meth:`Bench.run` reports (``variants``: :meth:`VariantResult.finish`'s rows); the quantisation
    axis adds ``engines``, ``quantize`` and ``int8_default`` (:func:`omnistudio.bench.quantized.run`)."""

    model: str
    device: str
    dtype: str
    dtypes: list[str]
    auto_dtype: str
    auto_dtype_reason: str
    baseline: str
    default_variant: str | None
    torch_threads: int
    num_step: int
    guidance_scale: float
    seed: int
    sentences: list[SentenceInput]
    reference_frames: int
    compile: dict[str, object]
    graphs: dict[str, GraphCounts]
    variants: list[dict[str, object]]
    engines: NotRequired[list[EngineLoad]]
    quantize: NotRequired[list[str]]
    int8_default: NotRequired[Int8Rule | None]
