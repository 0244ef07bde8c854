"""Opening an engine from its settings (one :class:`~omnistudio.engine.settings.EngineConfig`) and warming
it: what every client does first (the CLI, the studio, the server, MCP and each Ray worker), one way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from omnistudio.config import compile_backbone as compile_setting
from omnistudio.engine.compiled_backbone import CompiledBackbone
from omnistudio.engine.engine import Engine
from omnistudio.engine.settings import EngineConfig
from omnistudio.voices.prompts import cache_for
from omnistudio.voices.resolve import resolve_voice

if TYPE_CHECKING:
    from omnistudio.voices.resolve import VoiceRef


def open_engine(config: EngineConfig, progress: Callable[[str], None] | None = None) -> Engine:
    """Load ``config.model`` (hub id, checkpoint directory, tiny/mid/full) as ``config`` says: device, dtype,
    int8 backbone, torch threads, and the sampler installed. Compilation is the warm-up's
    (:func:`warm_engine` takes ``config.compile``)."""
    config = config.checked()
    if config.threads is not None:
        # lazy: start-up (torch)
        import torch

        torch.set_num_threads(config.threads)
    config, reason = cpu_path(config, progress)
    engine = Engine.load(config.model, device=config.device, dtype=config.dtype, progress=progress,
                         quantize=config.quantize, reason=reason)
    return with_sampler(engine, config)


def with_sampler(engine: Engine, config: EngineConfig) -> Engine:
    """``engine`` with ``config``'s sampler installed (the fast one when its package is there)."""
    if config.sampler == "fast":
        try:
            # lazy: an optional dependency
            from omnistudio.engine.sampler import FastSampler
        except ImportError:
            return engine
        engine.sampler = FastSampler(engine.model)
    return engine


def cpu_path(config: EngineConfig, progress: Callable[[str], None] | None = None) -> tuple[EngineConfig, str | None]:
    """``config`` with its CPU path decided (engine/calibration.py): left to the machine (``--dtype auto``,
    ``--quantize auto``) on the CPU, the fastest measured here (stored, or calibrated now); else as given.
    Also how it was decided (None: as given, or not the CPU)."""
    # lazy: start-up (torch)
    from omnistudio.engine import calibration
    from omnistudio.engine.model import choose_dtype, cpu_bf16_feature, pick_device, resolve_model
    from omnistudio.engine.quantize import cpu_flags, int8_feature

    auto_dtype = (config.dtype or "auto").strip().lower() == "auto"
    auto_int8 = config.quantize == "auto"
    if not (auto_dtype or auto_int8) or pick_device(config.device) != "cpu":
        return (replace(config, quantize="none") if auto_int8 else config), None
    model = resolve_model(config.model).name
    if not calibration.calibrates(model):
        return replace(config, quantize="none" if auto_int8 else config.quantize), None
    # lazy: start-up (torch)
    import torch

    flags = cpu_flags()
    dtype = "auto" if auto_dtype else choose_dtype("cpu", config.dtype).name
    paths = calibration.candidates(cpu_bf16_feature() is not None, int8_feature(flags) is not None, dtype,
                                   config.quantize)
    if len(paths) == 1:  # one path here: nothing to measure (the dtype as given: the static rule's reason stands)
        return replace(config, quantize=paths[0].quantize), None

    def timed(path: calibration.CpuPath) -> float:
        chosen = replace(config, dtype=path.dtype, quantize=path.quantize)
        return calibration.time_steps(lambda p: with_sampler(
            Engine.load(model, device="cpu", dtype=p.dtype, quantize=p.quantize), chosen), path)

    key = calibration.cpu_key(torch.get_num_threads(), flags, str(torch.__version__))
    result = calibration.stored_or_calibrated(key, model, paths, timed, progress)
    return replace(config, dtype=result.chosen.dtype, quantize=result.chosen.quantize), result.describe()


def warm_engine(engine: Engine, progress: Callable[[str], None] | None = None,
                voices: Sequence[tuple[VoiceRef, str]] = (), warm: bool = True,
                compile_backbone: bool | None = None, batches: Sequence[int] = (1,)) -> str | None:
    """Make ``engine`` ready to answer at once: resolve ``voices`` (building what is missing), load every
    saved prompt onto the device with the canonical duos, then (``warm``) one warm-up pass of one sentence
    and one batch of three. With ``compile_backbone`` (default: ``OMNISTUDIO_COMPILE``, else on for the CPU)
    the compiled backbone is built from its cache before the warm-up, or, with no cache yet, compiled in the
    background after it while eager serves (engine/compiled_backbone.py). On CUDA the diffusion step of each
    batch size in ``batches`` (and the warm-up's) is captured at every row length the saved prompts can
    meet (engine/cuda_graphs.py), so no sentence pays a first-use cost. Returns a notice for the user, or None:
    nothing to warm with yet, or prompt files that could not be loaded."""
    # lazy: looked up when called (tests replace it)
    from omnistudio.voices.startup import WARM_UP_BATCH, longest_row, start_prompts, warm_up

    for ref, lang in voices:
        if progress is not None:
            progress(f"preparing the voice {ref.key()} ({lang})")
        resolve_voice(engine, ref, lang)
    report = start_prompts(engine, progress=progress, warm=False)
    if engine.graph_status.captured == 0 and str(engine.loaded.device).startswith("cuda"):
        if progress is not None:
            progress("capturing the diffusion step's graphs")
        engine.prepare_graphs(sorted({*batches, 1, WARM_UP_BATCH}), longest_row(engine))
    backbone = None
    if compile_setting(str(engine.loaded.device), engine.loaded.spec.name) if compile_backbone is None \
            else compile_backbone:
        backbone = CompiledBackbone(engine)
        if backbone.slot.state() == "warm":
            if progress is not None:
                progress("loading the compiled backbone")
            backbone.start()
    notice = None
    if warm and not len(cache_for(engine)):
        notice = "no voice prompts saved yet: each is built on first use (or run `omnistudio prevectorize`)"
    elif warm:
        warm_up(engine, progress=progress)
    if backbone is not None and backbone.state == "off":
        backbone.start(background=True)  # eager serves while a child process compiles
    if report.errors and notice is None:
        notice = f"{len(report.errors)} prompt file(s) could not be loaded (see the log)"
    return notice
