"""``omnistudio bench`` (the default mode): stock ``OmniVoice.generate`` vs the fast sampler, side by side,
in one run.

Every variant (stock, each technique alone, the lossless set, the defaults,
optionally the defaults compiled) speaks the same sentences with the same
voice prompt and seed. Variants are interleaved sentence by sentence, in a
rotated order, so that a slow patch of a shared machine hits all of them.
Each fast variant's tokens and samples are compared with stock's.

With several backbone dtypes (``dtypes=["fp32", "bf16"]``, one engine each),
every variant runs at every dtype in the same interleaved run; a variant's
tokens are compared with stock's *at the same dtype*, and every ratio is
against stock at the first dtype (fp32). The row named ``default <auto dtype>``
is what a user gets without options: the automatic dtype and the fast sampler.

Figures per variant: total wall time, process CPU time (steadier on a
shared CPU), sampler-loop time, ms per diffusion
step (backbone forwards actually run), the median step time (the ratio of
medians is the figure least disturbed by other load on a shared machine), vocoder ms, RTF, time to first audio
(wall time of the first sentence: synthesis is not streamed here) and peak
memory (CUDA: max allocated; CPU: peak RSS sampled every 5 ms during the run).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, TypedDict

from omnistudio.bench.corpus import NEWS, reference_prompt, take
from omnistudio.engine.compiled_backbone import CompiledBackbone
from omnistudio.errors import UserError

if TYPE_CHECKING:
    import numpy as np
    import torch
    from numpy.typing import NDArray
    from omnivoice.models.omnivoice import OmniVoice

    from omnistudio.bench.modes import GraphCounts, Progress
    from omnistudio.bench.sentence_result import SentenceBenchResult
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import SamplerOptions
    from omnistudio.engine.upstream import GenerationConfig, GenerationTask, VoicePrompt

DEFAULT_SENTENCES = 3


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=["all", "combined", "graphs"], default="all",
                        help="all: each technique alone + lossless + defaults; combined: lossless + defaults; "
                        "graphs: the step as it ran before the static step, the static step eager, and replayed "
                        "from captured CUDA graphs (tokens compared with the eager static step)")
    parser.add_argument("--compile", default="off",
                        help="comma-separated backbone compile axis, e.g. off,default: each mode but off adds the "
                        "defaults on the persistent compiled backbone (built through its cache first; compile time "
                        "reported apart)")
    parser.add_argument("--dtypes", help="comma-separated backbone dtypes to compare in one run, e.g. fp32,bf16 "
                        "(one engine each; stock and fast at each dtype; ratios against stock at the first)")


def dtypes_list(value: str | None) -> list[str] | None:
    """``"fp32,bf16"`` -> ["fp32", "bf16"]."""
    # lazy: start-up (the model stack: omnistudio.engine.model and what it loads)
    from omnistudio.engine.model import DTYPES

    if value is None:
        return None

    names = [v.strip().lower() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in DTYPES]
    if bad or not names:
        raise UserError(f"--dtypes {value}: give a comma-separated list of {', '.join(DTYPES)}")
    if len(set(names)) != len(names):
        raise UserError(f"--dtypes {value} names a dtype twice")
    return names


@dataclass
class Variant:
    name: str
    options: SamplerOptions | None  # None: stock loop
    compiled: bool = False
    dtype: str | None = None  # key of the engine it runs on (None: the only one)
    stock: str = "stock"  # the variant whose tokens it must reproduce (stock at the same dtype)


@dataclass
class VariantResult:
    name: str
    techniques: list[str]
    total_s: float = 0.0
    loop_s: float = 0.0
    steps: int = 0
    vocoder_s: float = 0.0
    audio_s: float = 0.0
    ttfa_s: float = 0.0
    peak_mem_mb: float = 0.0
    dtype: str = ""
    tokens_identical: bool = True
    token_agreement: float = 1.0  # share of tokens equal to stock's at the same dtype
    baseline_agreement: float = 1.0  # share of tokens equal to the baseline's (stock at the first dtype)
    max_abs_diff: float = 0.0
    cpu_s: float = 0.0  # process CPU time (all threads): steadier than wall time on a shared CPU
    step_s: list[float] = field(default_factory=list)  # every diffusion step's duration
    first_worst_s: float = 0.0  # the slowest step of the first sentence (a first-use stall shows here)
    ratio: float = 1.0  # stock total / this total
    step_ratio: float = 1.0  # stock median step / this median step (robust to a busy machine)
    cpu_ratio: float = 1.0  # stock CPU time / this CPU time
    loop_ratio: float = 1.0  # stock sampler loop / this loop

    def finish(self, stock: VariantResult | None) -> dict[str, object]:
        # lazy: start-up (numpy)
        import numpy as np

        if stock is not None:
            self.ratio = stock.total_s / self.total_s if self.total_s else 0.0
            self.loop_ratio = stock.loop_s / self.loop_s if self.loop_s else 0.0
            self.cpu_ratio = stock.cpu_s / self.cpu_s if self.cpu_s else 0.0
            mine = float(np.median(self.step_s)) if self.step_s else 0.0
            self.step_ratio = float(np.median(stock.step_s)) / mine if mine else 0.0
        out = asdict(self)
        out.pop("step_s")
        out["median_step_ms"] = 1000 * float(np.median(self.step_s)) if self.step_s else 0.0
        out["worst_step_ms"] = 1000 * max(self.step_s, default=0.0)
        out["first_worst_step_ms"] = 1000 * out.pop("first_worst_s")
        out["ms_per_step"] = 1000 * self.loop_s / self.steps if self.steps else 0.0
        out["vocoder_ms"] = 1000 * self.vocoder_s
        out["rtf"] = self.total_s / self.audio_s if self.audio_s else 0.0
        return out


@dataclass
class BenchSettings:
    sentences: int = 3
    num_step: int = 10
    seed: int = 0
    guidance: float = 2.0
    variants: list[str] = field(default_factory=lambda: ["techniques", "lossless", "default"])
    compile: str = "off"  # off | default | reduce-overhead, or a list "off,default": each mode but off adds a
    # "default+compile" variant on the persistent compiled backbone (engine/compiled_backbone.py)


def make_variants(settings: BenchSettings, device: str, dtypes: list[str] | None = None) -> list[Variant]:
    """Stock and the fast variants; with several ``dtypes``, all of them at each dtype ("stock bf16", ...)."""
    # lazy: start-up (torch)
    from omnistudio.engine.sampler import LOSSLESS, TECHNIQUES, SamplerOptions

    out = []
    each: Sequence[str | None] = dtypes or [None]
    for dtype in each:
        tag = f" {dtype}" if dtypes and len(dtypes) > 1 else ""
        group = [Variant("stock", None)]
        if "techniques" in settings.variants:
            group += [Variant(name, SamplerOptions.only(name)) for name in TECHNIQUES]
        if "lossless" in settings.variants:
            group.append(Variant("lossless", SamplerOptions.only(*LOSSLESS)))
        defaults = SamplerOptions.for_device(device)
        if "steps" in settings.variants:  # the static step eager and replayed (graphs on CUDA), and without it
            static = replace(defaults, static_step=True, length_bucketing=True, block_attention=False)
            group += [Variant("stepwise", replace(static, static_step=False)),
                      Variant("static eager", replace(static, cuda_graphs=False)),
                      Variant("static replayed", static, stock="static eager")]
        if "default" in settings.variants:
            group.append(Variant("default", defaults))
        for mode in compile_modes(settings.compile):
            name = "default+compile" if mode == "default" else f"default+compile {mode}"
            group.append(Variant(name, defaults, compiled=True))
        out += [replace(v, name=v.name + tag, dtype=dtype, stock=v.stock + tag) for v in group]
    return out


class PeakMemory:
    """Peak memory during a block: CUDA max allocated, else RSS sampled by a thread."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        self.peak_mb = 0.0

    @staticmethod
    def _rss_mb() -> float:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    @contextmanager
    def measure(self) -> Iterator[None]:
        # lazy: start-up (torch)
        import torch

        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
            yield
            self.peak_mb = torch.cuda.max_memory_allocated() / 2**20
            return
        if not os.path.exists("/proc/self/statm"):
            yield
            return
        stop = threading.Event()
        peak = [self._rss_mb()]

        def sample() -> None:
            while not stop.wait(0.005):
                peak[0] = max(peak[0], self._rss_mb())

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.peak_mb = max(peak[0], self._rss_mb())


class _Render(TypedDict, total=False):
    """One synthesis of :meth:`Bench._once`: its timers, tokens and samples (filled as it runs)."""

    loop_s: float
    vocoder_s: float
    tokens: list[torch.Tensor]
    step_s: list[float]
    wall_s: float
    cpu_s: float
    audio: NDArray[np.float32]
    peak_mb: float
    steps: int


class Bench:
    """Runs the variants on one engine, or on one engine per dtype (``engine`` a dict keyed by dtype name).

    ``progress(done, total, label)`` reports each synthesis.
    """

    def __init__(self, engine: Engine | dict[str, Engine], settings: BenchSettings,
                 progress: Progress | None = None) -> None:
        self.engines: dict[str | None, Engine] = ({d: e for d, e in engine.items()} if isinstance(engine, dict)
                                                  else {None: engine})
        first = next(iter(self.engines.values()))
        self.engine, self.settings = first, settings
        self.model: OmniVoice = first.model  # OmniVoice's own object (its text tokenizer is read here)
        self.device = str(first.loaded.device)
        self.progress = progress or (lambda *_: None)
        # lazy: start-up (torch)
        from omnistudio.engine.sampler import FastSampler

        dtypes = [d for d in self.engines if d is not None] or None
        self.variants = make_variants(settings, self.device, dtypes)
        self.samplers = {v.name: FastSampler(self.engines[v.dtype].model, v.options) for v in self.variants
                         if v.options is not None}
        self.texts = take(NEWS, settings.sentences)

    def _sync(self) -> None:
        # lazy: start-up (torch)
        import torch

        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def _once(self, variant: Variant, text: str, prompt: VoicePrompt) -> _Render:
        """One synthesis with timers around the sampler loop and the vocoder."""
        # lazy: start-up (numpy, torch)
        import numpy as np
        import torch

        engine = self.engines[variant.dtype]
        model: OmniVoice = engine.model  # OmniVoice's own object: its loop and its vocoder's decode are wrapped
        loop = self.samplers.get(variant.name) or (lambda task, cfg: type(model)._generate_iterative(model, task, cfg))
        rec: _Render = {"loop_s": 0.0, "vocoder_s": 0.0, "tokens": []}
        decode = model.audio_tokenizer.decode

        marks: list[float] = []
        # torch leaves torch.compiler.disable unannotated: its type, as used here
        disable: Callable[[Callable[..., None]], Callable[..., None]] = torch.compiler.disable

        def mark(*_: object) -> None:  # a step starts when the backbone is called
            self._sync()
            marks.append(time.perf_counter())

        mark = disable(mark)  # a timer, not part of a compiled backbone's graph (else one graph per step)

        def timed_loop(task: GenerationTask, cfg: GenerationConfig) -> list[torch.Tensor]:
            self._sync()
            t0 = time.perf_counter()
            hook = model.llm.register_forward_pre_hook(mark)
            try:
                out = loop(task, cfg)
            finally:
                hook.remove()
            self._sync()
            end = time.perf_counter()
            rec["loop_s"] += end - t0
            rec["step_s"] = list(np.diff([*marks, end]))
            rec["tokens"] += [t.clone() for t in out]
            return out

        def timed_decode(*args: object, **kwargs: object) -> object:
            t0 = time.perf_counter()
            out = decode(*args, **kwargs)
            self._sync()
            rec["vocoder_s"] += time.perf_counter() - t0
            return out

        # lazy: start-up (torch)
        from omnistudio.engine.compile import eager

        mem = PeakMemory(self.device)
        model.audio_tokenizer.decode = timed_decode
        try:
            with (eager(model) if not variant.compiled else _nothing()), mem.measure():
                torch.manual_seed(self.settings.seed)
                self._sync()
                t0, c0 = time.perf_counter(), time.process_time()
                with engine._sampler_installed(timed_loop):
                    audio = model.generate(text=text, language="en", voice_clone_prompt=prompt,
                                           **engine.generation_kwargs(self.settings.num_step,
                                                                           self.settings.guidance))[0]
                rec["wall_s"] = time.perf_counter() - t0
                rec["cpu_s"] = time.process_time() - c0
        finally:
            del model.audio_tokenizer.decode
        rec["audio"] = audio
        rec["peak_mb"] = mem.peak_mb
        sampler = self.samplers.get(variant.name)
        rec["steps"] = sampler.last_stats.steps if sampler else self.settings.num_step
        return rec

    def _capture_graphs(self) -> dict[str, GraphCounts]:
        """Every variant whose static step replays CUDA graphs captures them before any timing (as the
        engine's warm-up does): how many, and the seconds it took."""
        # lazy: start-up (numpy, omnivoice)
        from omnivoice.models.omnivoice import OmniVoiceGenerationConfig

        # lazy: start-up (numpy)
        from omnistudio.engine.engine import LONGEST_ROW

        out: dict[str, GraphCounts] = {}
        for v in self.variants:
            sampler = self.samplers.get(v.name)
            if sampler is None or not (v.options and v.options.static_step) or sampler.runner.graphs is None:
                continue  # no graphs: the stock loop, the stepwise sampler, or no CUDA
            kwargs = self.engines[v.dtype].generation_kwargs(self.settings.num_step, self.settings.guidance)
            status = sampler.prepare_graphs(OmniVoiceGenerationConfig.from_dict(kwargs), (1,), LONGEST_ROW)
            out[v.name] = {"captured": status.captured, "capture_s": round(status.capture_s, 3),
                           "failed": status.failed}
        return out

    def run(self) -> SentenceBenchResult:
        # lazy: start-up (numpy, torch, the model stack)
        import numpy as np
        import torch

        from omnistudio.engine.model import choose_dtype

        # lazy: start-up (torch)
        from omnistudio.engine.compile import compile_status, dynamo_graphs

        engine, model = self.engine, self.model
        compiled = compile_engines(self.engines, self.variants, self.settings.compile)
        with engine._lock, torch.inference_mode():
            prompts = {d: reference_prompt(e) for d, e in self.engines.items()}
            prompt = prompts[next(iter(self.engines))]
            graphs = self._capture_graphs()
            # Warm-up (allocator, kernels, compilation) on a short and a long text, untimed.
            for v in self.variants:
                for text in ("Warm up.", NEWS[-1]) if v.compiled else ("Warm up.",):
                    self._once(v, text, prompts[v.dtype])
            graphs_warm = dynamo_graphs()
            results = {v.name: VariantResult(v.name, v.options.enabled() if v.options else [],
                                             dtype=self.engines[v.dtype].loaded.dtype_name) for v in self.variants}
            total = len(self.texts) * len(self.variants)
            done = 0
            for s, text in enumerate(self.texts):
                order = self.variants[s % len(self.variants):] + self.variants[:s % len(self.variants)]
                recs = {}
                for v in order:
                    self.progress(done, total, f"sentence {s + 1}/{len(self.texts)}: {v.name}")
                    recs[v.name] = self._once(v, text, prompts[v.dtype])
                    done += 1
                for v in self.variants:
                    name, rec, stock = v.name, recs[v.name], recs[v.stock]
                    r = results[name]
                    r.total_s += rec["wall_s"]
                    r.loop_s += rec["loop_s"]
                    r.cpu_s += rec["cpu_s"]
                    r.step_s += rec["step_s"]
                    r.steps += rec["steps"]
                    r.vocoder_s += rec["vocoder_s"]
                    r.audio_s += len(rec["audio"]) / engine.sample_rate
                    r.peak_mem_mb = max(r.peak_mem_mb, rec["peak_mb"])
                    if s == 0:
                        r.ttfa_s = rec["wall_s"]
                        r.first_worst_s = max(rec["step_s"], default=0.0)
                    same = all(torch.equal(a, b) for a, b in zip(rec["tokens"], stock["tokens"]))
                    r.tokens_identical &= same and len(rec["tokens"]) == len(stock["tokens"])
                    r.token_agreement = min(r.token_agreement, _agreement(rec["tokens"], stock["tokens"]))
                    r.baseline_agreement = min(r.baseline_agreement,
                                               _agreement(rec["tokens"], recs[self.variants[0].name]["tokens"]))
                    if len(rec["audio"]) == len(stock["audio"]):
                        r.max_abs_diff = max(r.max_abs_diff, float(np.max(np.abs(rec["audio"] - stock["audio"]))))
                    else:
                        r.max_abs_diff = float("inf")
            self.progress(total, total, "done")
        base = self.variants[0]  # stock at the first dtype: every ratio is against it
        stock_r = results[base.name]
        tok = model.text_tokenizer

        auto = choose_dtype(self.device)
        default_name = next((v.name for v in self.variants if v.name in ("default", f"default {auto.name}")), None)
        return {
            "model": engine.loaded.spec.name,
            "device": self.device,
            "dtype": engine.loaded.dtype_name,
            "dtypes": [e.loaded.dtype_name for e in self.engines.values()],
            "auto_dtype": auto.name,
            "auto_dtype_reason": auto.reason,
            "baseline": base.name,
            "default_variant": default_name,
            "torch_threads": torch.get_num_threads(),
            "num_step": self.settings.num_step,
            "guidance_scale": self.settings.guidance,
            "seed": self.settings.seed,
            "sentences": [{"text": t, "text_tokens": len(tok(t).input_ids),
                           "target_frames": engine.estimate_target_frames(t, prompt)} for t in self.texts],
            "reference_frames": int(prompt.ref_audio_tokens.size(-1)),
            "compile": {**compile_status(model), "recompiles_after_warmup": dynamo_graphs() - graphs_warm,
                        "builds": compiled},
            "graphs": graphs,
            "variants": [results[v.name].finish(None if v is base else stock_r) for v in self.variants],
        }


def compile_modes(value: str) -> list[str]:
    """``"off,default"`` -> ["default"]: the compile modes to add rows for (off is the eager rows)."""
    # lazy: start-up (torch)
    from omnistudio.engine.compile import MODES

    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names or any(n not in MODES for n in names) or len(set(names)) != len(names):
        raise UserError(f"--compile {value}: give a comma-separated list of {', '.join(MODES)}, each once")
    return [n for n in names if n != "off"]


def compile_engines(engines: dict[str | None, Engine], variants: list[Variant], value: str) -> list[dict[str, object]]:
    """Build the persistent compiled backbone (through its cache) on every engine a compiled row runs on,
    before any timing; what each build cost. One mode per run (the backbone holds one graph)."""
    modes = compile_modes(value)
    if len(modes) > 1:
        raise UserError("--compile: one compile mode per run besides off (the backbone holds one graph)")
    out: list[dict[str, object]] = []
    for dtype in dict.fromkeys(v.dtype for v in variants if v.compiled):
        backbone = CompiledBackbone(engines[dtype], mode=modes[0]).start(background=False)
        if backbone.state != "compiled":
            raise UserError(f"compiling the backbone failed: {backbone.detail}")
        out.append({"dtype": engines[dtype].loaded.dtype_name, "mode": modes[0], "source": backbone.source,
                    "compile_s": round(backbone.compile_s, 2)})
    return out


def _agreement(mine: list[torch.Tensor], stock: list[torch.Tensor]) -> float:
    """The share of token positions where two renders agree (0 when their shapes differ)."""
    if len(mine) != len(stock) or any(a.shape != b.shape for a, b in zip(mine, stock)):
        return 0.0
    total = sum(a.numel() for a in mine)
    return sum(int((a == b).sum()) for a, b in zip(mine, stock)) / total if total else 1.0


@contextmanager
def _nothing() -> Iterator[None]:
    yield
