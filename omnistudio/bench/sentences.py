"""The sentence bench as a mode of ``omnistudio bench`` (the default one): stock against the fast sampler
on one engine per dtype and quantisation (:mod:`omnistudio.bench.speed`, :mod:`omnistudio.bench.quantized`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from omnistudio.bench import quantized
from omnistudio.bench.modes import agreement
from omnistudio.bench.quantized import print_engines
from omnistudio.bench.speed import DEFAULT_SENTENCES, Bench, BenchSettings, compile_modes
from omnistudio.checks import check_guidance

if TYPE_CHECKING:
    from omnistudio.bench.modes import OpenEngine
    from omnistudio.bench.sentence_result import SentenceBenchResult

__all__ = ["DEFAULT_SENTENCES", "print_result", "run"]


def run(args: argparse.Namespace, open_engine: OpenEngine) -> SentenceBenchResult:
    args.guidance = check_guidance(args.guidance)
    compile_modes(args.compile)  # a bad --compile refused before any model loads
    settings = BenchSettings(sentences=args.sentences, num_step=args.num_step, seed=args.seed,
                             guidance=args.guidance, variants=args.variants, compile=args.compile)

    # one engine per dtype and quantisation (--dtypes, --quantize), every variant at each; "stock": the
    # sentence bench installs its own samplers per variant
    return quantized.run(args, open_engine, Bench, settings)


def print_result(result: SentenceBenchResult) -> None:
    # lazy: start-up (rich)
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{result['model']} on {result['device']} ({','.join(result['dtypes'])}, "
                  f"{result['torch_threads']} threads, {result['num_step']} steps); ratios against "
                  f"{result['baseline']}")
    for col in ("variant", "wall s", "ratio", "step ratio", "loop ratio", "ms/step", "vocoder ms", "RTF", "TTFA s",
                "peak MB", "tokens = stock", "agree", "agree base", "max |diff|"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for v in result["variants"]:
        table.add_row(str(v["name"]), f"{v['total_s']:.2f}", f"{v['ratio']:.2f}x", f"{v['step_ratio']:.2f}x",
                      f"{v['loop_ratio']:.2f}x",
                      f"{v['ms_per_step']:.1f}", f"{v['vocoder_ms']:.0f}", f"{v['rtf']:.2f}", f"{v['ttfa_s']:.2f}",
                      f"{v['peak_mem_mb']:.0f}", "yes" if v["tokens_identical"] else "NO",
                      f"{100 * agreement(v, 'token_agreement'):.1f}%",
                      f"{100 * agreement(v, 'baseline_agreement'):.1f}%",
                      f"{v['max_abs_diff']:.3g}")
    Console().print(table)
    frames = ", ".join(f"{s['text_tokens']} text tokens / {s['target_frames']} frames" for s in result["sentences"])
    Console().print(f"inputs: reference {result['reference_frames']} frames; {frames}; compile {result['compile']}")
    if result.get("graphs"):
        Console().print(f"step graphs captured before timing: {result['graphs']}")

    print_engines(result)
    default = next((v for v in result["variants"] if v["name"] == result.get("default_variant")), None)
    if default is not None and len(result["dtypes"]) > 1:
        Console().print(f"what a user gets by default ({default['name']}: auto dtype = {result['auto_dtype']}, "
                        f"{result['auto_dtype_reason']}; fast sampler): {default['ratio']:.2f}x stock "
                        f"{result['dtypes'][0]}, RTF {default['rtf']:.2f}")
