"""``omnistudio bench --vocoder``: what one sentence's decode costs, and why it varies.

The first GPU run measured the vocoder (fp32 on every engine) at 26-33 ms a sentence on the fp16 and
bf16 engines and 86-130 ms on the fp32 engine and in the first rows of the fp16 run. This mode takes
the vocoder alone, on the tokens of real diffusion passes, and separates the suspects:

- ``after_diffusion``: the decode right after the sentence's diffusion pass (as a stream does it);
- ``again``: the same decode once more (warm memory and kernels);
- the caching allocator's device allocations and frees during each (``num_device_alloc``/``free``
  from ``torch.cuda.memory_stats``: a decode that must ask the driver for memory pays for it, and a
  free synchronises the device);
- ``cudnn.benchmark`` off (the engine's setting) and on;
- the same vocoder in fp16 and bf16 (CUDA; bf16 only on a CPU): time, and the samples' distance to
  fp32's (largest difference and signal-to-error ratio in dB), the evidence a lower-precision vocoder
  would need before it is used;
- length buckets (``buckets``): codes padded to a few fixed lengths, each length's first decode in this
  process against its repeated ones, in every dtype: whether a new length's first use (new convolution
  shapes, allocator growth) is what costs, the case for decoding at a few captured lengths. And what
  padding costs in samples (``padding``): the padded decode, cut back, differs from the exact one over the
  last ``changed_tail_ms`` (the decoder looks ahead), so buckets are measured here, not used.

Each row is the median over the sentences; every figure is measured here, in one run.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from typing import TYPE_CHECKING, NotRequired, TypedDict

from omnistudio.bench.corpus import NEWS, reference_prompt, take
from omnistudio.errors import UserError

if TYPE_CHECKING:
    import numpy as np
    import torch
    from numpy.typing import NDArray
    from transformers import HiggsAudioV2TokenizerModel

    from omnistudio.bench.modes import Modes, OpenEngine, Progress
    from omnistudio.engine.engine import Engine

DEFAULT_SENTENCES = 6


class DecodeRow(TypedDict):
    """One way of decoding, over the sentences (``max_abs_diff``, ``worst_snr_db``: a lower precision's
    distance to fp32)."""

    median_ms: float
    first_ms: float
    worst_ms: float
    device_allocs: int
    device_frees: int
    max_abs_diff: NotRequired[float]
    worst_snr_db: NotRequired[float]


class BucketRow(TypedDict):
    """One padded length in one dtype: its first decode in this process and the median of the repeats."""

    frames: int
    first_ms: float
    repeat_ms: float


class Padding(TypedDict):
    """What padding a sentence's codes to a bucket does to its samples (cut back to the sentence)."""

    changed_tail_ms: float
    max_abs_diff: float


class VocoderResult(TypedDict):
    model: str
    device: str
    sentences: int
    frames: list[int]
    rows: dict[str, DecodeRow]
    buckets: NotRequired[dict[str, list[BucketRow]]]
    padding: NotRequired[Padding]


BUCKETS = (64, 128, 256, 512)  # frames (25 a second): a news sentence is 50-400
REPEATS = 3


def add_flags(parser: argparse.ArgumentParser, modes: Modes) -> None:
    modes.add_argument("--vocoder", action="store_true", help="the vocoder alone on real sentences' tokens: right "
                       "after diffusion vs again, allocator activity, cudnn.benchmark, fp16/bf16 vs fp32 (default 6)")


def _sync(device: str) -> None:
    # lazy: start-up (torch)
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _allocations(device: str) -> tuple[int, int]:
    # lazy: start-up (torch)
    import torch

    if not device.startswith("cuda"):
        return 0, 0
    stats = torch.cuda.memory_stats()
    return int(stats.get("num_device_alloc", 0)), int(stats.get("num_device_free", 0))


def timed_decode(decoder: HiggsAudioV2TokenizerModel, codes: torch.Tensor,
                 device: str) -> tuple[float, NDArray[np.float32], tuple[int, int]]:
    """Seconds, the samples (float32 on the CPU), and the device allocations and frees of one decode."""
    # lazy: start-up (torch, transformers)
    import torch
    from transformers.models.higgs_audio_v2_tokenizer.modeling_higgs_audio_v2_tokenizer import (
        HiggsAudioV2TokenizerDecoderOutput,
    )

    before = _allocations(device)
    _sync(device)
    t0 = time.perf_counter()
    with torch.inference_mode():
        decoded = decoder.decode(codes)
    _sync(device)
    seconds = time.perf_counter() - t0
    after = _allocations(device)
    if not isinstance(decoded, HiggsAudioV2TokenizerDecoderOutput) or decoded.audio_values is None:
        raise TypeError(f"the vocoder's decode gave {type(decoded).__name__}, not audio values")
    audio = decoded.audio_values
    return seconds, audio.float().flatten().cpu().numpy(), (after[0] - before[0], after[1] - before[1])


def snr_db(reference: NDArray[np.float32], other: NDArray[np.float32]) -> float:
    # lazy: start-up (numpy)
    import numpy as np

    error = float(np.sum((reference - other) ** 2))
    power = float(np.sum(reference ** 2))
    return float("inf") if error == 0 else 10 * float(np.log10(power / error)) if power else float("-inf")


def vocoder_bench(engine: Engine, sentences: int = DEFAULT_SENTENCES, num_step: int = 10, seed: int = 0,
                  progress: Progress | None = None) -> VocoderResult:
    # lazy: start-up (numpy, torch, transformers)
    import numpy as np
    import torch
    from transformers import HiggsAudioV2TokenizerModel

    say = progress or (lambda *_: None)
    device = str(engine.loaded.device)
    tokenizer = engine.model.audio_tokenizer
    if not isinstance(tokenizer, HiggsAudioV2TokenizerModel):
        raise UserError(f"the vocoder bench times transformers' HiggsAudioV2 tokenizer, not {type(tokenizer).__name__}")
    prompt = reference_prompt(engine)
    lowered = {name: copy.deepcopy(tokenizer).to(getattr(torch, name))
               for name in (("float16", "bfloat16") if device.startswith("cuda") else ("bfloat16",))}
    rows: dict[str, list[float]] = {}
    allocs: dict[str, list[tuple[int, int]]] = {}
    errors: dict[str, list[tuple[float, float]]] = {name: [] for name in lowered}
    frames: list[int] = []
    codes: torch.Tensor | None = None  # the last sentence's
    texts = take(NEWS, sentences)
    for i, text in enumerate(texts):
        say(i, len(texts), f"sentence {i + 1}/{len(texts)}")
        pending = engine.render_tokens([text], [prompt], ["en"], num_step=num_step, seeds=[seed])
        tokens = pending.tokens.tokens[0]
        codes = (tokens if isinstance(tokens, torch.Tensor) else torch.cat(tokens, dim=-1)).unsqueeze(0)
        frames.append(int(codes.size(-1)))
        samples: dict[str, NDArray[np.float32]] = {}
        for label, benchmark in (("after_diffusion", False), ("again", False), ("cudnn_benchmark", True)):
            torch.backends.cudnn.benchmark = benchmark
            try:
                seconds, samples[label], alloc = timed_decode(tokenizer, codes, device)
            finally:
                torch.backends.cudnn.benchmark = False
            rows.setdefault(label, []).append(seconds)
            allocs.setdefault(label, []).append(alloc)
        reference = samples["again"]
        for name, decoder in lowered.items():
            seconds, audio, alloc = timed_decode(decoder, codes, device)
            rows.setdefault(name, []).append(seconds)
            allocs.setdefault(name, []).append(alloc)
            n = min(len(audio), len(reference))
            errors[name].append((float(np.max(np.abs(audio[:n] - reference[:n]))), snr_db(reference[:n], audio[:n])))
    out: VocoderResult = {"model": engine.loaded.spec.name, "device": device, "sentences": len(texts),
                          "frames": frames, "rows": {}}
    if codes is not None:  # the last sentence's codes, padded to each bucket
        say(len(texts), len(texts), "length buckets")
        out["buckets"] = bucket_rows({"float32": tokenizer, **lowered}, codes, device)
        out["padding"] = padding_cost(tokenizer, codes, device)
    say(len(texts), len(texts), "done")
    for label, times in rows.items():
        row: DecodeRow = {"median_ms": round(1000 * statistics.median(times), 2),
                               "first_ms": round(1000 * times[0], 2), "worst_ms": round(1000 * max(times), 2),
                               "device_allocs": sum(a for a, _ in allocs[label]),
                               "device_frees": sum(f for _, f in allocs[label])}
        if label in errors:
            row["max_abs_diff"] = max(e for e, _ in errors[label])
            row["worst_snr_db"] = round(min(s for _, s in errors[label]), 2)
        out["rows"][label] = row
    return out


def _padded(codes: torch.Tensor, frames: int) -> torch.Tensor:
    """``codes`` ([1, codebooks, n]) to ``frames``: its last frame repeated, or its first ``frames`` kept."""
    # lazy: start-up (torch)
    import torch

    n = int(codes.size(-1))
    return codes[..., :frames] if n >= frames else torch.cat([codes, codes[..., -1:].repeat(1, 1, frames - n)], -1)


def bucket_rows(decoders: dict[str, HiggsAudioV2TokenizerModel], codes: torch.Tensor,
                device: str) -> dict[str, list[BucketRow]]:
    """Each bucket length's first decode and its repeats, per dtype (the lengths in a fresh order per dtype,
    so a first decode is a first for that dtype's weights)."""
    out: dict[str, list[BucketRow]] = {}
    for name, decoder in decoders.items():
        rows: list[BucketRow] = []
        for frames in BUCKETS:
            padded = _padded(codes, frames)
            first = timed_decode(decoder, padded, device)[0]
            repeats = [timed_decode(decoder, padded, device)[0] for _ in range(REPEATS)]
            rows.append({"frames": frames, "first_ms": round(1000 * first, 2),
                         "repeat_ms": round(1000 * statistics.median(repeats), 2)})
        out[name] = rows
    return out


def padding_cost(decoder: HiggsAudioV2TokenizerModel, codes: torch.Tensor, device: str) -> Padding:
    """The sentence decoded exactly against padded to the next bucket and cut back: how far from its end the
    samples differ (the decoder's look-ahead) and by how much."""
    # lazy: start-up (numpy)
    import numpy as np

    n = int(codes.size(-1))
    bucket = next((b for b in BUCKETS if b > n), n + BUCKETS[0])
    exact = timed_decode(decoder, codes, device)[1]
    padded = timed_decode(decoder, _padded(codes, bucket), device)[1][:exact.size]
    differ = np.flatnonzero(np.abs(exact - padded) > 1e-6)
    tail = (exact.size - int(differ[0])) / exact.size * n / 25.0 * 1000 if differ.size else 0.0
    return {"changed_tail_ms": round(tail, 1), "max_abs_diff": float(np.max(np.abs(exact - padded)))}


def run(args: argparse.Namespace, open_engine: OpenEngine) -> VocoderResult:
    engine = open_engine(args, "fast")
    return vocoder_bench(engine, args.sentences, args.num_step, args.seed, progress=args.progress)


def print_result(result: VocoderResult) -> None:
    print(f"vocoder on {result['device']} ({result['model']}, {result['sentences']} sentences of "
          f"{min(result['frames'])}-{max(result['frames'])} frames):")
    for label, row in result["rows"].items():
        extra = (f", max |diff| {row['max_abs_diff']:.3g}, worst SNR {row['worst_snr_db']} dB"
                 if "worst_snr_db" in row else "")
        print(f"  {label:16} median {row['median_ms']:8.2f} ms, first {row['first_ms']:8.2f}, worst "
              f"{row['worst_ms']:8.2f}; device allocs/frees {row['device_allocs']}/{row['device_frees']}{extra}")
    for name, rows in result.get("buckets", {}).items():
        print(f"  buckets {name:8} " + "; ".join(f"{r['frames']} frames first {r['first_ms']:.2f} ms, then "
                                                  f"{r['repeat_ms']:.2f}" for r in rows))
    if "padding" in result:
        pad = result["padding"]
        print(f"  padding to a bucket changes the last {pad['changed_tail_ms']:.0f} ms of a sentence "
              f"(max |diff| {pad['max_abs_diff']:.3g}): buckets are measured, not used")
