"""The sentence bench's quantisation axis: ``bench --dtypes fp32,bf16 --quantize none,int8``.

One engine per (dtype, quantisation), every variant of :mod:`omnistudio.bench.speed` on each, in the same
interleaved run. An int8 engine's rows are named ``... fp32 int8``; their tokens are compared with stock at
their own dtype *unquantized* (``agree``) and with stock at the first dtype (``agree base``: stock fp32).
What loading and quantizing each engine cost (seconds, the int8 layers' weights before and after, the
process's memory after it loaded) goes in ``engines``; ``int8_default`` applies the rule that would make
int8 the CPU default (its agreement with stock fp32 at least stock bf16's, in this run).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from omnistudio.bench.modes import agreement
from omnistudio.bench.sentence_result import EngineLoad, Int8Rule
from omnistudio.config import QUANTIZE
from omnistudio.errors import UserError

if TYPE_CHECKING:
    from omnistudio.bench.modes import OpenEngine
    from omnistudio.bench.sentence_result import SentenceBenchResult
    from omnistudio.bench.speed import Bench, BenchSettings
    from omnistudio.engine.engine import Engine


def quantize_list(value: str | None) -> list[str]:
    """``"none,int8"`` -> ["none", "int8"] (default ["none"])."""

    names = [v.strip().lower() for v in (value or "none").split(",") if v.strip()]
    axis = [q for q in QUANTIZE if q != "auto"]  # rows are named by what they ran: auto would hide it
    if not names or any(n not in axis for n in names) or len(set(names)) != len(names):
        raise UserError(f"--quantize {value}: give a comma-separated list of {', '.join(axis)}, each once")
    return names


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return 0.0


def open_engines(args: argparse.Namespace,
                 open_engine: OpenEngine) -> tuple[Engine | dict[str, Engine], list[EngineLoad]]:
    """The bench's engines: one engine (no axis given), or ``{"fp32": e, "fp32 int8": e, ...}``; and what
    each cost to load."""
    quants = quantize_list(getattr(args, "quantize", None))
    dtypes: list[str | None] = list(args.dtypes or [getattr(args, "dtype", None)])
    engines: dict[str, Engine] = {}
    loads: list[EngineLoad] = []
    for dtype in dtypes:
        for quant in quants:
            before, started = _rss_mb(), time.perf_counter()
            engine = open_engine(argparse.Namespace(**{**vars(args), "dtype": dtype, "quantize": quant}), "stock")
            loaded = engine.loaded
            key = loaded.dtype_name + ("" if quant == "none" else f" {quant}")
            engines[key] = engine
            report = loaded.quantized
            loads.append({"engine": key, "dtype": loaded.dtype_name, "quantize": quant,
                          "load_s": round(time.perf_counter() - started, 2),
                          "quantize_s": round(report.seconds, 2) if report else 0.0,
                          "linear_mb": [round(report.float_mb, 3), round(report.int8_mb, 3)] if report else None,
                          "rss_growth_mb": round(_rss_mb() - before)})
    if len(engines) == 1 and not args.dtypes:
        return next(iter(engines.values())), loads
    return engines, loads


def own_stock(bench: Bench) -> None:
    """Each int8 row's tokens are compared with stock at its dtype unquantized (``stock fp32``), where it
    runs alongside; ``make_variants`` would pair it with stock on its own int8 engine."""
    names = {v.name for v in bench.variants}
    for i, v in enumerate(bench.variants):
        plain = v.stock.removesuffix(" int8")
        if plain != v.stock and plain in names:
            bench.variants[i] = replace(v, stock=plain)


def int8_default(result: SentenceBenchResult) -> Int8Rule | None:
    """The rule for int8 as the CPU default, applied to this run: stock int8's agreement with stock fp32
    against stock bf16's (None where the run has not both)."""

    rows = {v["name"]: v for v in result["variants"]}
    int8 = rows.get("stock fp32 int8")
    bf16 = rows.get("stock bf16")
    if int8 is None or bf16 is None:
        return None
    int8_share, bf16_share = agreement(int8, "baseline_agreement"), agreement(bf16, "baseline_agreement")
    return {"int8_agreement": int8_share, "bf16_agreement": bf16_share, "int8_at_least_bf16": int8_share >= bf16_share}


def run(args: argparse.Namespace, open_engine: OpenEngine, bench_class: type[Bench],
        settings: BenchSettings) -> SentenceBenchResult:
    """Open the engines, run the sentence bench over them, add what loading cost and the default's rule."""
    engines, loads = open_engines(args, open_engine)
    bench = bench_class(engines, settings, progress=args.progress)
    own_stock(bench)
    result = bench.run()
    result["engines"] = loads
    result["quantize"] = quantize_list(getattr(args, "quantize", None))
    result["int8_default"] = int8_default(result)
    return result


def print_engines(result: SentenceBenchResult) -> None:
    """One line per engine (load and quantize time, the int8 layers' weights), and the default's rule."""
    # lazy: start-up (rich)
    from rich.console import Console

    console = Console()
    for e in result.get("engines") or []:
        sizes = f", linear weights {e['linear_mb'][0]:.0f} -> {e['linear_mb'][1]:.0f} MB" if e["linear_mb"] else ""
        console.print(f"engine {e['engine']}: loaded in {e['load_s']:.1f} s (quantize {e['quantize_s']:.1f} s)"
                      f"{sizes}, process memory +{e['rss_growth_mb']} MB", markup=False)
    rule = result.get("int8_default")
    if rule:
        verdict = "met" if rule["int8_at_least_bf16"] else "not met"
        console.print(f"int8 as the CPU default: stock int8 agrees with stock fp32 on "
                      f"{100 * rule['int8_agreement']:.1f}% of tokens, stock bf16 on {100 * rule['bf16_agreement']:.1f}% "
                      f"({verdict})", markup=False)
