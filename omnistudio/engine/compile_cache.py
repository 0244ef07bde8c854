"""The compiled backbone's cache on disk: what a later start loads instead of compiling again.

Two folders under the OmniStudio cache (``<cache>/compile/``):

- ``inductor/``: torch inductor's own cache (``TORCHINDUCTOR_CACHE_DIR``: its FX graph cache and the
  C++ kernels it built). On CPU this is what makes a second start fast: torch's portable artifacts
  (``torch.compiler.save_cache_artifacts``) hold the graph, but loading them alone still compiles every
  C++ kernel again (measured on ``tiny``: 53 s with the artifacts in a fresh folder, 15 s with this
  folder kept). Shared by every model (inductor names its entries by content hash); its key file
  holds the torch version and the CPU's vector ISA, and a folder made by another torch is emptied.
- one slot per model, dtype, quantisation, device and mode (``backbone-<model>-<dtype>[-int8]-<device>-<mode>/``): ``key.json`` (what
  the artifacts were made for: torch version, the checkpoint's fingerprint, the backbone's geometry,
  dtype, device, ISA, compile mode) and ``artifacts.bin`` (``save_cache_artifacts``). A slot whose key
  differs from the running one is *stale*: it is emptied and rebuilt, never loaded. The key is
  written last, so a slot cut off mid-write is never warm.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from omnistudio.audio.export import atomic_write_bytes

if TYPE_CHECKING:
    from omnistudio.engine.model import LoadedModel

log = logging.getLogger(__name__)

FORMAT = 1  # bump when what a slot holds changes
KEY_FILE = "key.json"
ARTIFACTS = "artifacts.bin"
SlotState = Literal["warm", "cold", "stale"]
GEOMETRY = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size",
            "vocab_size")


@dataclass(frozen=True)
class CacheKey:
    """What compiled artifacts depend on; artifacts made under another key are never loaded."""

    torch: str
    model: str  # the checkpoint's content fingerprint
    geometry: str  # hidden x layers x heads x kv heads x intermediate x vocabulary
    dtype: str
    device: str
    isa: str  # the CPU vector ISA inductor compiles for ("" on CUDA)
    mode: str  # torch.compile mode
    quantize: str = "none"  # the backbone's linear layers (none | int8)
    format: int = FORMAT


def cpu_isa() -> str:
    """The vector ISA inductor's CPU kernels are built for (``avx2``, ``avx512``...)."""
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    return str(pick_vec_isa())


def cache_key(loaded: LoadedModel, mode: str = "default") -> CacheKey:
    import torch

    cfg = loaded.model.config.llm_config
    geometry = "x".join(str(getattr(cfg, name, "?")) for name in GEOMETRY)
    device = str(loaded.device)
    return CacheKey(torch.__version__, loaded.fingerprint, geometry, loaded.dtype_name, device,
                    "" if device.startswith("cuda") else cpu_isa(), mode, str(getattr(loaded, "quantize", "none")))


def compile_root() -> Path:
    from omnistudio.config import locations

    return locations().cache / "compile"


def _read_key(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_key(path: Path, key: dict[str, object]) -> None:
    atomic_write_bytes(path, lambda tmp: tmp.write_text(json.dumps(key, indent=1, sort_keys=True) + "\n"))


def use_inductor_folder(root: Path) -> Path:
    """Point inductor's cache at ``root/inductor`` (unless the user set ``TORCHINDUCTOR_CACHE_DIR``),
    emptied first when another torch or ISA made it. Call before the first compile of the process."""
    import torch

    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    folder = root / "inductor"
    key: dict[str, object] = {"torch": torch.__version__, "isa": cpu_isa(), "format": FORMAT}
    if folder.exists() and _read_key(folder / KEY_FILE) != key:
        log.info("compile cache %s was made by another torch or CPU: emptied", folder)
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / KEY_FILE).exists():
        _write_key(folder / KEY_FILE, key)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)
    return folder


@dataclass(frozen=True)
class CompileSlot:
    """One model's compiled artifacts and the key they were made under."""

    folder: Path
    key: CacheKey

    @classmethod
    def for_model(cls, root: Path, loaded: LoadedModel, mode: str = "default") -> CompileSlot:
        key = cache_key(loaded, mode)
        quantized = "" if key.quantize == "none" else f"-{key.quantize}"  # an int8 and a float engine side by side
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_",
                      f"backbone-{loaded.spec.name}-{key.dtype}{quantized}-{key.device}-{key.mode}")
        return cls(root / name, key)

    @property
    def key_file(self) -> Path:
        return self.folder / KEY_FILE

    @property
    def artifacts(self) -> Path:
        return self.folder / ARTIFACTS

    def state(self) -> SlotState:
        """warm: artifacts made under this key; stale: made under another (rebuild); cold: none."""
        stored = _read_key(self.key_file)
        if stored is None:
            return "cold"
        return "warm" if stored == asdict(self.key) and self.artifacts.is_file() else "stale"

    def discard(self) -> None:
        """Empty the slot (the key first: a slot half removed is cold, never warm)."""
        self.key_file.unlink(missing_ok=True)
        self.artifacts.unlink(missing_ok=True)

    def load(self) -> bool:
        """Hand a warm slot's artifacts to torch's caches; False (nothing loaded) unless warm."""
        if self.state() != "warm":
            return False
        import torch

        try:
            data = self.artifacts.read_bytes()
            if data:  # empty: every entry was already in inductor's folder when the slot was saved
                torch.compiler.load_cache_artifacts(data)
        except Exception as exc:  # a damaged file: compile afresh (inductor checks what it reads again)
            log.warning("compile cache %s unreadable, rebuilding: %s", self.folder, exc)
            self.discard()
            return False
        return True

    def save(self) -> None:
        """Write what this process compiled, then the key. The artifacts are empty when inductor's folder
        already held every entry (its cache hit: torch then has nothing new to save); the slot is warm all
        the same, since the graph is in that folder."""
        import torch

        saved = torch.compiler.save_cache_artifacts()
        data = saved[0] if saved is not None else b""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.key_file.unlink(missing_ok=True)
        atomic_write_bytes(self.artifacts, lambda tmp: tmp.write_bytes(data))
        _write_key(self.key_file, asdict(self.key))
