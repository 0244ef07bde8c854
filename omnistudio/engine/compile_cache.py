"""The compiled backbone's cache on disk: what a later start loads instead of compiling again.

Under the OmniStudio cache (``<cache>/compile/``):

- ``inductor-<torch>-<isa>/``: torch inductor's own cache (``TORCHINDUCTOR_CACHE_DIR``, unless the
  user set it: its FX graph cache and the C++ kernels it built). On CPU this is what makes a second
  start fast: torch's portable artifacts (``torch.compiler.save_cache_artifacts``) hold the graph, but
  loading them alone still compiles every C++ kernel again (measured on ``tiny``: 53 s with the
  artifacts in a fresh folder, 15 s with this folder kept). One folder per torch version and CPU ISA,
  shared by every model (inductor names its entries by content hash), never emptied: another torch
  gets a folder of its own, so two installs side by side never remove what the other is reading.
  Its ``key.json`` carries an id made when the folder was, which a slot saved with empty artifacts
  records (below).
- one slot per model, dtype, quantisation, device and mode (``backbone-<model>-<dtype>[-int8]-<device>-<mode>/``):
  ``key.json`` (what the artifacts were made for: torch version, the checkpoint's fingerprint, the
  backbone's geometry, dtype, device, ISA, compile mode) and ``artifacts.bin``
  (``save_cache_artifacts``). A slot whose key differs from the running one is *stale*: it is emptied and
  rebuilt, never loaded. The key is written after the artifacts (both atomically), so a slot cut off
  mid-write is never warm with artifacts made under another key. Artifacts are empty when inductor's
  folder already held every entry; such a slot is warm only while that same folder (its id) is there.
  ``lock`` is held by the process filling the slot (concurrent first starts compile once),
  ``compile.log`` is the compile process's output, ``failed.json`` says a compilation under this key
  failed (no C++ compiler, say): later starts stay eager without trying again until it is removed.
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from omnistudio.commit import atomic_write_bytes
from omnistudio.config import locations

if TYPE_CHECKING:
    from omnistudio.engine.model import LoadedModel

log = logging.getLogger(__name__)

FORMAT = 1  # bump when what a slot holds changes
KEY_FILE = "key.json"
ARTIFACTS = "artifacts.bin"
FAILED = "failed.json"
LOCK = "lock"
LOG = "compile.log"
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
    # lazy: start-up (torch)
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    return str(pick_vec_isa())


def cache_key(loaded: LoadedModel, mode: str = "default") -> CacheKey:
    # lazy: start-up (torch)
    import torch

    cfg = loaded.model.config.llm_config
    geometry = "x".join(str(getattr(cfg, name, "?")) for name in GEOMETRY)
    device = str(loaded.device)
    return CacheKey(torch.__version__, loaded.fingerprint, geometry, loaded.dtype_name, device,
                    "" if device.startswith("cuda") else cpu_isa(), mode, str(getattr(loaded, "quantize", "none")))


def compile_root() -> Path:
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
    """Point inductor's cache at this torch and CPU's folder under ``root`` (unless the user set
    ``TORCHINDUCTOR_CACHE_DIR``). Call before the first compile of the process."""
    # lazy: start-up (torch)
    import torch

    chosen = users_inductor_folder()
    if chosen is not None:
        return chosen
    isa = cpu_isa()
    folder = root / re.sub(r"[^A-Za-z0-9_.-]+", "_", f"inductor-{torch.__version__}-{isa or 'none'}")
    folder.mkdir(parents=True, exist_ok=True)
    if _read_key(folder / KEY_FILE) is None:
        _write_key(folder / KEY_FILE, {"torch": torch.__version__, "isa": isa, "format": FORMAT,
                                       "id": uuid.uuid4().hex})
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)
    return folder


def users_inductor_folder() -> Path | None:
    """``TORCHINDUCTOR_CACHE_DIR`` when the user chose it. Importing torch's dynamo (transformers does, so
    every ``import omnivoice``) sets the variable to torch's default folder under the temp folder, which
    is no choice: that folder is emptied at reboot, and a slot saved with empty artifacts would then be
    warm with nothing behind it."""
    # lazy: start-up (torch)
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    chosen = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not chosen or os.path.abspath(chosen) == os.path.abspath(default_cache_dir()):
        return None
    return Path(chosen)


def inductor_id() -> str:
    """Which inductor folder this process compiles into: its id, or its path when it has none (a folder
    the user chose). A new folder where an old one was removed has a new id."""
    folder = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    key = _read_key(Path(folder) / KEY_FILE) if folder else None
    return str(key["id"]) if key and key.get("id") else folder


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

    @property
    def failed_file(self) -> Path:
        return self.folder / FAILED

    @property
    def lock_file(self) -> Path:
        """Held (``omnistudio.locks.exclusive``) by the process filling the slot; the folder is made."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return self.folder / LOCK

    @property
    def log_file(self) -> Path:
        return self.folder / LOG

    def state(self) -> SlotState:
        """warm: artifacts made under this key; stale: made under another (rebuild); cold: none, or empty
        artifacts whose entries were in an inductor folder that is gone."""
        stored = _read_key(self.key_file)
        if stored is None:
            return "cold"
        inductor = stored.pop("inductor", None)
        if stored != asdict(self.key) or not self.artifacts.is_file():
            return "stale"
        if self.artifacts.stat().st_size == 0 and inductor != inductor_id():
            return "cold"
        return "warm"

    def discard(self) -> None:
        """Empty the slot (the key first: a slot half removed is cold, never warm)."""
        self.key_file.unlink(missing_ok=True)
        self.artifacts.unlink(missing_ok=True)
        self.failed_file.unlink(missing_ok=True)

    def load(self) -> bool:
        """Hand a warm slot's artifacts to torch's caches; False (nothing loaded) unless warm."""
        if self.state() != "warm":
            return False
        # lazy: start-up (torch)
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
        already held every entry (its cache hit: torch then has nothing new to save); the slot is warm
        while that folder stays, so the key then names it."""
        # lazy: start-up (torch)
        import torch

        saved = torch.compiler.save_cache_artifacts()
        data = saved[0] if saved is not None else b""
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.artifacts, lambda tmp: tmp.write_bytes(data))
        _write_key(self.key_file, asdict(self.key) | ({} if data else {"inductor": inductor_id()}))
        self.failed_file.unlink(missing_ok=True)

    def failed(self) -> str | None:
        """Why a compilation under this slot's key failed, if one did (else None)."""
        stored = _read_key(self.failed_file)
        if stored is None or stored.get("key") != asdict(self.key):
            return None
        return str(stored.get("reason") or "no reason recorded")

    def mark_failed(self, reason: str) -> None:
        """Record that compiling under this key failed: later starts stay eager without trying again."""
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_key(self.failed_file, {"key": asdict(self.key), "reason": reason})
