"""The compiled backbone's cache slot and its compile process, without compiling (engine/compile_cache.py,
engine/compiled_backbone.py, engine/compile_child.py): the real child process in a session of its own,
one compile per slot, a failed compile not retried, a save that fails after a good switch, inductor's
folder per torch. tests/test_compile_cache.py compiles for real (slow tier)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from omnistudio.engine.compile_cache import CacheKey, CompileSlot, inductor_id, use_inductor_folder
from omnistudio.engine.compiled_backbone import CompiledBackbone, build_in_child
from omnistudio.locks import exclusive
from support.wait import HANG_S, wait_until

KEY = CacheKey("2.14.1", "fingerprint", "64x2x4x2x128x1000", "fp32", "cpu", "avx2", "default")


def fake_engine(path: Path) -> Any:
    """What CompiledBackbone and build_in_child read of an engine, with no model behind it."""
    loaded = SimpleNamespace(path=path, device="cpu", dtype_name="fp32", quantize="none")
    return SimpleNamespace(loaded=loaded, _lock=threading.RLock(), passes=7, compiled=None,
                           model=SimpleNamespace(llm=SimpleNamespace()))


def fill(slot: CompileSlot, data: bytes = b"graph") -> None:
    """Make ``slot`` warm as a compile would: artifacts, then the key."""
    slot.folder.mkdir(parents=True, exist_ok=True)
    slot.artifacts.write_bytes(data)
    key = asdict(slot.key) | ({} if data else {"inductor": inductor_id()})
    slot.key_file.write_text(json.dumps(key))


def children(name: str) -> list[int]:
    """The pids of this process's children whose command line holds ``name``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == os.getpid() and name in cmdline:
            found.append(int(entry.name))
    return found


@pytest.fixture
def inductor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Inductor's folder for the test (restored after), as a start points it."""
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    return use_inductor_folder(tmp_path / "root")


def test_the_compile_child_runs_in_its_own_session_and_waits_for_the_slot_lock(tmp_path: Path,
                                                                               inductor: Path) -> None:
    """The real child process: a session of its own (a Ctrl+C on the parent's terminal does not reach
    it), its output in the slot's log; while another process fills the slot it waits on the slot's
    lock, then finds the slot warm and exits without loading the model (which is not there)."""
    slot = CompileSlot(tmp_path / "root" / "backbone-x", KEY)
    backbone = SimpleNamespace(engine=fake_engine(tmp_path / "no-model"), slot=slot, root=tmp_path / "root",
                               mode="default")
    errors: list[BaseException] = []

    def run() -> None:
        try:
            build_in_child(backbone)  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    with exclusive(slot.lock_file):  # another start's child is compiling this slot
        thread = threading.Thread(target=run)
        thread.start()
        wait_until(lambda: children("omnistudio.engine.compile_child"), what="the compile child")
        pid = children("omnistudio.engine.compile_child")[0]
        assert os.getsid(pid) == pid != os.getsid(0)  # its own session, leading it
        fill(slot)  # the other child's work
    thread.join(HANG_S)
    assert not thread.is_alive() and errors == []
    assert "filled by another process" in slot.log_file.read_text()
    assert slot.state() == "warm" and slot.artifacts.read_bytes() == b"graph"


def test_a_child_that_fails_names_its_last_line_and_log(tmp_path: Path, inductor: Path) -> None:
    slot = CompileSlot(tmp_path / "root" / "backbone-x", KEY)
    backbone = SimpleNamespace(engine=fake_engine(tmp_path / "no-model"), slot=slot, root=tmp_path / "root",
                               mode="default")
    with pytest.raises(RuntimeError) as caught:
        build_in_child(backbone)  # type: ignore[arg-type]
    log = slot.log_file.read_text().strip().splitlines()
    assert log and log[-1] in str(caught.value) and str(slot.log_file) in str(caught.value)
    assert "no-model" in log[-1]
    assert slot.failed() is None  # the model did not load: not a compile failure, tried again next start


def test_a_failed_compile_is_not_tried_again_under_the_same_key(tmp_path: Path, inductor: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    slot = CompileSlot(root / "backbone-x", KEY)
    builds: list[str] = []

    def build(backbone: CompiledBackbone) -> None:  # the child's place: fills the slot
        builds.append(backbone.slot.state())
        fill(backbone.slot, b"")

    def no_compiler(_self: CompiledBackbone) -> Any:
        raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found")

    monkeypatch.setattr(CompiledBackbone, "_compile", no_compiler)
    first = CompiledBackbone(fake_engine(tmp_path), root, build=build, slot=slot).start(background=True)
    assert first.wait(HANG_S) and (first.state, builds) == ("failed", ["cold"]) and "C++ compiler" in first.detail
    assert "C++ compiler" in (slot.failed() or "")
    again = CompiledBackbone(fake_engine(tmp_path), root, build=build, slot=slot).start(background=True)
    assert again.done.is_set() and again.state == "failed" and builds == ["cold"]  # not tried again
    assert str(slot.failed_file) in again.detail and "C++ compiler" in again.detail
    other = CompiledBackbone(fake_engine(tmp_path), root, build=build,
                             slot=CompileSlot(slot.folder, CacheKey(**asdict(KEY) | {"torch": "2.15.0"})))
    assert other.slot.failed() is None  # another torch tries again (its start would discard the stale slot)
    slot.failed_file.unlink()
    slot.discard()  # cold again: the child's place is asked to fill it
    assert CompiledBackbone(fake_engine(tmp_path), root, build=build, slot=slot).start(background=True).wait(HANG_S)
    assert len(builds) == 2


def test_a_cache_that_cannot_be_saved_leaves_the_backbone_compiled(tmp_path: Path, inductor: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    engine = fake_engine(tmp_path)
    seen: list[str] = []
    backbone = CompiledBackbone(engine, tmp_path / "root", build=lambda _b: None,
                                slot=CompileSlot(tmp_path / "root" / "backbone-x", KEY))

    def compiled_forward(self: CompiledBackbone) -> Any:
        seen.append(self.state)
        return lambda **_kw: "compiled"

    def disk_full(_self: CompileSlot) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(CompiledBackbone, "_compile", compiled_forward)
    monkeypatch.setattr(CompileSlot, "save", disk_full)
    backbone.start(background=False)
    assert seen == ["switching"]  # the graph is built while requests wait: said, not "compiling"
    assert backbone.state == "compiled" and engine.model.llm.forward() == "compiled"
    assert "not saved" in backbone.detail and "No space left" in backbone.detail
    assert backbone.switched_at == 7 and backbone.slot.failed() is None


def test_inductor_folders_are_per_torch_and_empty_artifacts_need_theirs(tmp_path: Path, inductor: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    real_version = torch.__version__
    slot = CompileSlot(tmp_path / "root" / "backbone-x", KEY)
    fill(slot, b"")  # every entry was in inductor's folder when saved
    assert slot.state() == "warm"
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    other = use_inductor_folder(tmp_path / "root")  # another torch: a folder of its own, the first kept
    assert other != inductor and inductor.is_dir() and (inductor / "key.json").is_file()
    assert slot.state() == "cold"  # not the folder its entries are in
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor))
    assert slot.state() == "warm"
    shutil.rmtree(inductor)  # the user cleared it: a new folder in its place is not the one
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    monkeypatch.setattr(torch, "__version__", real_version)
    again = use_inductor_folder(tmp_path / "root")
    assert again == inductor and slot.state() == "cold"
    fill(slot, b"graph")  # artifacts of its own: warm whatever inductor holds
    assert slot.state() == "warm"


def test_the_folder_under_the_cache_is_used_after_torch_sets_its_default(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """In a fresh interpreter, as a start meets it: importing torch's dynamo (transformers does, so every
    ``import omnivoice``) sets ``TORCHINDUCTOR_CACHE_DIR`` to torch's default under the temp folder; that
    is not the user's choice, and the folder under the cache is used. A folder the user chose is kept."""
    import subprocess
    import sys

    probe = ("import os, sys, pathlib, torch._dynamo; from omnistudio.engine.compile_cache import use_inductor_folder; "
             "from torch._inductor.runtime.cache_dir_utils import cache_dir; cache_dir(); "  # what the import does today
             "print(os.environ.get('TORCHINDUCTOR_CACHE_DIR', '')); print(use_inductor_folder(pathlib.Path(sys.argv[1]))); "
             "print(os.environ['TORCHINDUCTOR_CACHE_DIR'])")
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "root")], capture_output=True, text=True,
                          timeout=HANG_S, env=env, check=True)
    before, got, now = done.stdout.split("\n")[:3]
    assert Path(before).name.startswith("torchinductor_")  # torch's default, as its import sets it
    assert Path(got).parent == tmp_path / "root" and Path(got).name.startswith("inductor-") and now == got
    assert (Path(got) / "key.json").is_file()
    mine = tmp_path / "mine"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(mine))
    assert use_inductor_folder(tmp_path / "root") == mine and os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(mine)


@pytest.mark.parametrize("field", ["dtype", "quantize", "mode", "isa", "torch", "device"])
def test_configurations_differing_in_one_setting_get_different_keys_and_folders(
        field: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key a configuration produces (not an edited stored key): dtype, quantisation, mode, CPU ISA and torch
    version each change it, and the slot folder too where two such engines would otherwise share one (an fp32
    and an int8 engine once emptied each other's slot)."""
    import torch

    import omnistudio.engine.compile_cache as cache

    def loaded(dtype: str = "fp32", quantize: str = "none", device: str = "cpu") -> Any:
        config = SimpleNamespace(llm_config=SimpleNamespace(hidden_size=64, num_hidden_layers=2))
        return SimpleNamespace(model=SimpleNamespace(config=config), fingerprint="fp", dtype_name=dtype,
                               device=device, quantize=quantize, spec=SimpleNamespace(name="tiny"))

    monkeypatch.setattr(cache, "cpu_isa", lambda: "avx2")
    base, mode = loaded(), "default"
    other, other_mode = base, mode
    if field == "dtype":
        other = loaded(dtype="bf16")
    elif field == "quantize":
        other = loaded(quantize="int8")
    elif field == "device":
        other = loaded(device="cuda:0")
    elif field == "mode":
        other_mode = "max-autotune"
    first = cache.cache_key(base, mode)
    if field == "isa":
        monkeypatch.setattr(cache, "cpu_isa", lambda: "avx512")
    if field == "torch":
        monkeypatch.setattr(torch, "__version__", "9.9.9")
    second = cache.cache_key(other, other_mode)
    changed = {k for k, v in asdict(first).items() if asdict(second)[k] != v}
    assert changed == ({"device", "isa"} if field == "device" else {field}), changed  # CUDA has no CPU ISA
    if field in ("dtype", "quantize", "mode", "device"):
        monkeypatch.setattr(cache, "cpu_isa", lambda: "avx2")
        assert CompileSlot.for_model(tmp_path, base, mode).folder != CompileSlot.for_model(tmp_path, other,
                                                                                            other_mode).folder
