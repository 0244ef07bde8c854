"""Resolve a model name, load it, and pick the device, dtype and backend flags.

``--model`` / ``OMNISTUDIO_MODEL`` accepts:

- a hub id (default ``k2-fsa/OmniVoice``): taken from the local Hugging Face
  cache, or downloaded with progress on first use;
- a local checkpoint directory (what ``save_pretrained`` wrote, with an
  ``audio_tokenizer/`` folder inside);
- ``tiny``, ``mid`` or ``full``: random-weight checkpoints of the real classes,
  built offline (see :mod:`omnistudio.engine.checkpoints`). They make noise,
  not speech.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio import tempfiles
from omnistudio.config import default_model
from omnistudio.engine import checkpoints
from omnistudio.engine.cpuinfo import cpuinfo_flags
from omnistudio.engine.upstream import OmniVoiceModel
from omnistudio.errors import UserError, describe, first_line, out_of_memory

if TYPE_CHECKING:
    import torch

    from omnistudio.engine.quantize import QuantizeReport

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

# What a loadable checkpoint directory must hold (one of each group).
REQUIRED_FILES: list[tuple[str, ...]] = [
    ("config.json",),
    ("model.safetensors", "model.safetensors.index.json"),
    ("tokenizer.json", "tokenizer_config.json"),
    ("audio_tokenizer/config.json",),
    ("audio_tokenizer/model.safetensors", "audio_tokenizer/model.safetensors.index.json"),
    ("audio_tokenizer/preprocessor_config.json",),
]


@dataclass(frozen=True)
class ModelSpec:
    """What a ``--model`` value names."""

    kind: str  # "random" | "dir" | "hub"
    name: str
    path: Path | None = None

    @property
    def is_random(self) -> bool:
        return self.kind == "random"


@dataclass
class LoadedModel:
    """An OmniVoice model on its device, with what was chosen to load it."""

    model: OmniVoiceModel
    spec: ModelSpec
    path: Path
    device: str
    dtype: torch.dtype  # of the backbone (the vocoder is always fp32)
    fingerprint: str
    dtype_reason: str = ""
    quantize: str = "none"  # none | int8 (the backbone's linear layers; engine/quantize.py)
    quantized: QuantizeReport | None = None  # what quantizing did (layers, MB before and after, seconds)

    @property
    def dtype_name(self) -> str:
        return dtype_name(self.dtype)

    @property
    def label(self) -> str:
        """A few words for the studio's telemetry: where the backbone runs, in which dtype."""
        return (f"{self.device} · {self.dtype_name}" + (f" · {self.quantize}" if self.quantize != "none" else "")
                + (" · calibrated" if self.dtype_reason.startswith("calibrated") else ""))

    def describe(self) -> dict[str, str]:
        """What --json outputs and sidecars record about the model."""
        return {"model": self.spec.name, "device": self.device, "dtype": self.dtype_name,
                "dtype_reason": self.dtype_reason, "vocoder_dtype": "fp32", "quantisation": self.quantize}

    @property
    def sample_rate(self) -> int:
        return int(self.model.sampling_rate)


def resolve_model(name: str | None = None) -> ModelSpec:
    """Classify a ``--model`` value (no loading, no network)."""
    value = (default_model() if name is None else name).strip()
    if not value:
        raise UserError("empty --model: give a hub id, a checkpoint directory, or tiny|mid|full")
    if value in checkpoints.GEOMETRIES:
        return ModelSpec("random", value)
    path = Path(value).expanduser()
    if path.exists() or value.startswith((".", "/", "~")):
        if not path.is_dir():
            raise UserError(f"model path {value} is not a directory")
        return ModelSpec("dir", value, path.resolve())
    if value.count("/") == 1 and all(value.split("/")):
        return ModelSpec("hub", value)
    raise UserError(
        f"unknown model '{value}': give a hub id (owner/name), an existing checkpoint "
        "directory, or tiny|mid|full"
    )


def check_model_dir(path: Path) -> None:
    """Fail with one line naming every file a checkpoint directory lacks."""
    missing = [" or ".join(group) for group in REQUIRED_FILES if not any((path / f).is_file() for f in group)]
    if missing:
        raise UserError(f"model directory {path} is missing: {', '.join(missing)}")


def _hub_path(repo: str, progress: Progress) -> Path:
    # lazy: start-up (huggingface_hub)
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo, local_files_only=True))
    except Exception:
        pass
    progress(f"downloading {repo} from the model hub")
    try:
        return Path(snapshot_download(repo))
    except Exception as exc:  # network, auth, missing repo: all end the same way
        reason = type(exc).__name__
        raise UserError(
            f"cannot fetch model '{repo}' from the hub ({reason}); download it where the hub "
            "is reachable and pass --model /path/to/dir, or use --model tiny for an offline "
            "random-weight model (noise, not speech)"
        ) from None


def checkpoint_path(spec: ModelSpec, progress: Progress | None = None) -> Path:
    """The local directory for ``spec``: built, found in the cache, or downloaded."""
    say = progress or (lambda _m: None)
    if spec.kind == "random":
        path = checkpoints.ensure_checkpoint(spec.name, progress=say)
    elif spec.kind == "dir":
        assert spec.path is not None
        path = spec.path
    else:
        path = _hub_path(spec.name, say)
    check_model_dir(path)
    return path


def pick_device(requested: str | None = None) -> str:
    """cuda > mps > cpu, unless ``requested`` (or ``OMNISTUDIO_DEVICE``) names one."""
    # lazy: start-up (torch)
    import torch

    choice = requested or os.environ.get("OMNISTUDIO_DEVICE")
    if choice:
        if choice.startswith("cuda") and not torch.cuda.is_available():
            raise UserError(f"device '{choice}' requested but CUDA is not available")
        if choice == "mps" and not torch.backends.mps.is_available():
            raise UserError("device 'mps' requested but MPS is not available")
        if choice.split(":")[0] not in {"cpu", "cuda", "mps"}:
            raise UserError(f"unknown device '{choice}': use cpu, cuda, cuda:N or mps")
        return choice
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


DTYPES = ("auto", "fp32", "bf16", "fp16")
_TORCH_DTYPES = {"fp32": "float32", "float32": "float32", "fp16": "float16", "float16": "float16",
                 "bf16": "bfloat16", "bfloat16": "bfloat16"}
# /proc/cpuinfo flags of CPUs that run bf16 matrix products natively (not emulated through fp32).
BF16_CPU_FLAGS = (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16"))


@dataclass(frozen=True)
class DtypeChoice:
    """The backbone dtype picked for a device, and why (logged, and shown in --json outputs)."""

    dtype: torch.dtype
    name: str  # fp32 | bf16 | fp16
    reason: str


def cpu_bf16_feature() -> str | None:
    """The CPU feature that makes bf16 fast here ("AMX-BF16" or "AVX512-BF16"), or None.

    Asks torch first (``torch.cpu._is_amx_tile_supported`` / ``_is_avx512_bf16_supported``, what
    oneDNN dispatches on), then ``/proc/cpuinfo``. ``OMNISTUDIO_CPU_BF16=1|0`` forces the answer
    (tests use it; so can a user whose CPU is misjudged).
    """
    forced = os.environ.get("OMNISTUDIO_CPU_BF16", "").strip()
    if forced in ("0", "1"):
        return "forced by OMNISTUDIO_CPU_BF16=1" if forced == "1" else None
    # lazy: start-up (torch)
    import torch

    cpu = getattr(torch, "cpu", None)
    for probe, label in (("_is_amx_tile_supported", "AMX-BF16"), ("_is_avx512_bf16_supported", "AVX512-BF16")):
        try:
            if getattr(cpu, probe)():
                return label
        except Exception:  # a torch without the probe: fall through to cpuinfo
            pass
    flags = cpuinfo_flags()
    return next((label for flag, label in BF16_CPU_FLAGS if flag in flags), None)


def choose_dtype(device: str, requested: str | None = None) -> DtypeChoice:
    """The backbone dtype: ``requested`` if given, else automatic (the vocoder always stays fp32).

    auto: CUDA fp16 (tensor cores; three more mantissa bits than bf16); CPU bf16 where the CPU
    has AMX-BF16 or AVX512-BF16 (see :func:`cpu_bf16_feature`), else fp32; MPS fp32.
    """
    # lazy: start-up (torch)
    import torch

    value = (requested or "auto").strip().lower()
    if value != "auto":
        if value not in _TORCH_DTYPES:
            raise UserError(f"unknown dtype '{requested}': use auto, fp32, bf16 or fp16")
        dtype = getattr(torch, _TORCH_DTYPES[value])
        return DtypeChoice(dtype, dtype_name(dtype), f"--dtype {value}")
    if device.startswith("cuda"):
        return DtypeChoice(torch.float16, "fp16", "auto: CUDA")
    if device == "cpu":
        feature = cpu_bf16_feature()
        if feature:
            return DtypeChoice(torch.bfloat16, "bf16", f"auto: CPU has {feature}")
        return DtypeChoice(torch.float32, "fp32", "auto: CPU without native bf16")
    return DtypeChoice(torch.float32, "fp32", f"auto: {device}")


def dtype_name(dtype: torch.dtype) -> str:
    """torch.bfloat16 -> "bf16" (the short names --dtype takes)."""
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(str(dtype).removeprefix("torch."),
                                                                         str(dtype))


def pick_dtype(device: str, requested: str | None = None) -> torch.dtype:
    """The torch dtype of :func:`choose_dtype`."""
    return choose_dtype(device, requested).dtype


def set_backend_flags(device: str) -> None:
    """cudnn.benchmark off (shapes vary per sentence), TF32 on for CUDA matmuls."""
    # lazy: start-up (torch)
    import torch

    torch.backends.cudnn.benchmark = False
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("high")


def quiet_third_party() -> None:
    """Silence transformers' weight-loading bars and pydub's missing-ffmpeg warning."""
    checkpoints.import_pydub_quietly()
    # lazy: start-up (transformers)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def fingerprint(path: Path) -> str:
    """A short content fingerprint of a checkpoint (configs + samples of every weight file)."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in {".json", ".safetensors"})
    for file in files:
        rel = file.relative_to(path).as_posix()
        if rel == checkpoints.COMPLETE_MARKER:
            continue
        digest.update(rel.encode())
        size = file.stat().st_size
        digest.update(str(size).encode())
        with file.open("rb") as fh:
            if file.suffix == ".json" or size <= 2 << 20:
                digest.update(fh.read())
            else:
                digest.update(fh.read(1 << 20))
                fh.seek(size - (1 << 20))
                digest.update(fh.read())
    return digest.hexdigest()[:16]


def _from_pretrained(path: Path, device: str, dtype: torch.dtype) -> OmniVoiceModel:
    """OmniVoice's ``from_pretrained`` without ``device_map`` (which needs ``accelerate``): the backbone and
    the audio tokenizer are loaded on the CPU, the way upstream's inference load assembles them, then moved
    with ``.to(device)`` (the audio tokenizer stays on the CPU under MPS, as upstream keeps it)."""
    # lazy: start-up (omnivoice, transformers)
    from omnivoice.models.omnivoice import OmniVoice
    from omnivoice.utils.duration import RuleDurationEstimator
    from transformers import AutoFeatureExtractor, AutoTokenizer, HiggsAudioV2TokenizerModel

    model = OmniVoice.from_pretrained(str(path), dtype=dtype, train=True)  # train: the backbone alone
    model.text_tokenizer = AutoTokenizer.from_pretrained(str(path))
    vocoder = path / "audio_tokenizer"
    if not vocoder.is_dir():  # an older checkpoint layout: upstream fetches the tokenizer on its own
        # lazy: start-up (omnivoice)
        from omnivoice.models.omnivoice import _resolve_model_path

        vocoder = Path(_resolve_model_path("eustlb/higgs-audio-v2-tokenizer"))
    model.audio_tokenizer = HiggsAudioV2TokenizerModel.from_pretrained(str(vocoder))
    model.feature_extractor = AutoFeatureExtractor.from_pretrained(str(vocoder))
    model.sampling_rate = model.feature_extractor.sampling_rate
    model.duration_estimator = RuleDurationEstimator()
    model.to(device)
    if device == "mps":
        model.audio_tokenizer.to("cpu")
    loaded: OmniVoiceModel = model
    return loaded


def _load_error(spec: ModelSpec, path: Path, device: str, exc: BaseException,
                problem: tuple[Path, str] | None) -> BaseException:
    """What a load that failed raises: out of memory as itself (the one out-of-memory line), else one line
    naming the damaged file, the missing package, or the device's error; the checkpoint stays in place."""
    if out_of_memory(exc):
        return exc
    if problem is not None:
        return UserError(f"cannot load model: {problem[0]} is damaged ({problem[1]}); download or copy it again")
    if isinstance(exc, ImportError):
        return UserError(f"cannot load model {spec.name}: a package is missing ({first_line(exc)}); "
                         "install omnistudio's requirements")
    return UserError(f"cannot load model {spec.name} from {path} on {device}: {describe(exc)}")


def load_model(
    name: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    progress: Progress | None = None,
    quantize: str | None = None,
    reason: str | None = None,
) -> LoadedModel:
    """Resolve, fetch or build, and load a model onto the best device (``quantize="int8"``: int8 linear
    layers in the backbone, refused with one line where the CPU has no int8 acceleration)."""
    say = progress or (lambda _m: None)
    spec = resolve_model(name)
    dev = pick_device(device)
    choice = choose_dtype(dev, dtype)
    if reason is not None:  # chosen by a calibration, not by the flags: said as such in the log and the records
        choice = replace(choice, reason=reason)
    quant, report = "none", None
    if (quantize or "none").strip().lower() != "none":
        # lazy: start-up (torch)
        from omnistudio.engine.quantize import check_quantize

        quant = "int8" if check_quantize(quantize, dev) == "int8" else "none"  # auto reaching here: none
    path = checkpoint_path(spec, say)
    torch_dtype = choice.dtype
    set_backend_flags(dev)
    if spec.is_random:
        log.warning("model '%s' is a %s", spec.name, checkpoints.NOISE_WARNING)
    say(f"loading {spec.name} on {dev}, backbone {choice.name} ({choice.reason})")
    quiet_third_party()
    try:
        model = _from_pretrained(path, dev, torch_dtype)
    except (Exception, MemoryError) as exc:  # noqa: BLE001 - sorted below: damage, or the machine
        problem = checkpoints.damage(path)
        if problem is None or not spec.is_random:
            raise _load_error(spec, path, dev, exc, problem) from None

        moved = tempfiles.quarantine(path, "damaged")
        log.warning("checkpoint file %s is damaged (%s): moved aside to %s; rebuilding", problem[0], problem[1],
                    moved.name)
        path = checkpoints.ensure_checkpoint(spec.name, progress=say)
        model = _from_pretrained(path, dev, torch_dtype)
    model.audio_tokenizer.float()  # fp16 underflows in the vocoder
    model.eval()
    if quant == "int8":
        # lazy: start-up (torch)
        from omnistudio.engine.quantize import quantize_backbone

        say("quantizing the backbone to int8")
        report = quantize_backbone(model.llm)
        log.info("%s", report.describe())
    log.info("model %s (%s) on %s, backbone %s (%s), vocoder fp32, cudnn.benchmark off%s",
             spec.name, spec.kind, dev, choice.name, choice.reason, ", TF32 on" if dev.startswith("cuda") else "")
    return LoadedModel(model, spec, path, dev, torch_dtype, fingerprint(path), choice.reason, quant, report)
