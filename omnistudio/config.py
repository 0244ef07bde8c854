"""Where OmniStudio keeps its files, and the environment overrides.

``OMNISTUDIO_HOME`` relocates every file the program writes (config, data,
caches, checkpoints, prompts) under one folder; without it the platform's
user directories (platformdirs) are used. ``OMNISTUDIO_MODEL`` picks the
default model. ``OMNISTUDIO_COMPILE`` (1 / 0) turns the persistent compiled
backbone (engine/compiled_backbone.py) on or off for every engine start; without
it, on for the CPU and off elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "omnistudio"
DEFAULT_MODEL = "k2-fsa/OmniVoice"
SAMPLE_RATE = 24_000
# --quantize: int8 linear layers in the backbone (engine/quantize.py); auto: int8 allowed, the CPU calibration
# decides (engine/calibration.py)
QUANTIZE = ("none", "int8", "auto")


@dataclass(frozen=True)
class Locations:
    """The user folders the program writes into."""

    config: Path
    data: Path
    cache: Path

    @property
    def checkpoints(self) -> Path:
        return self.cache / "checkpoints"

    @property
    def prompts(self) -> Path:
        return self.data / "prompts"

    @property
    def settings_file(self) -> Path:
        return self.config / "settings.json"

    @property
    def autosave_file(self) -> Path:
        return self.data / "autosave.script"

    @property
    def studio_log(self) -> Path:
        """Where the studio's log goes while its screen is up: the log records and whatever a C library
        (ALSA, PortAudio) writes to file descriptor 2, which would otherwise land on the screen."""
        return self.cache / "studio.log"


def locations() -> Locations:
    """Resolve the user folders now (the environment may change between calls)."""
    home = os.environ.get("OMNISTUDIO_HOME")
    if home:
        root = Path(home).expanduser().resolve()
        return Locations(config=root / "config", data=root / "data", cache=root / "cache")
    return Locations(
        config=Path(platformdirs.user_config_dir(APP_NAME)),
        data=Path(platformdirs.user_data_dir(APP_NAME)),
        cache=Path(platformdirs.user_cache_dir(APP_NAME)),
    )


def default_model() -> str:
    """The model used when ``--model`` is not given."""
    return os.environ.get("OMNISTUDIO_MODEL") or DEFAULT_MODEL


def compile_backbone(device: str = "cpu", model: str = "") -> bool:
    """Whether an engine start on ``device`` compiles the backbone: ``OMNISTUDIO_COMPILE`` (1/on/true or
    0/off/false) if set, else on for the CPU (measured in docs/benchmarks.md: the compiled backbone beats the
    eager default there once its cache is warm) and off elsewhere (unmeasured on a GPU). Never by default
    for ``model`` ``tiny``, the test and demo checkpoint: its steps take milliseconds, so the compiled
    graph never wins back what loading it adds to every start (measured: ready at 29.7 s instead of 15.5 s)."""
    chosen = compile_choice()
    if chosen is not None:
        return chosen
    return device.startswith("cpu") and model != "tiny"


def cuda_graphs() -> bool:
    """Whether the diffusion step replays captured CUDA graphs on CUDA (engine/cuda_graphs.py):
    ``OMNISTUDIO_CUDA_GRAPHS`` (0/off/false turns them off: the same static step runs eagerly), on
    by default."""
    return os.environ.get("OMNISTUDIO_CUDA_GRAPHS", "").strip().lower() not in ("0", "off", "false", "no")


def compile_choice() -> bool | None:
    """``OMNISTUDIO_COMPILE`` as the user set it (True / False), or None when unset: what ``serve --ray``
    hands its replicas, which may run on machines where the variable is not set."""
    value = os.environ.get("OMNISTUDIO_COMPILE", "").strip().lower()
    return value in ("1", "on", "true", "yes") if value else None
