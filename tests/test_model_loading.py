"""Loading a checkpoint needs no ``accelerate`` (loaded, then moved with ``.to``), and a checkpoint that fails
to load is moved aside only when one of its files is damaged: an import, device or memory error leaves it in
place and ends in one clear line (issue 47, part 1; issue 50, item 9)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from omnistudio.errors import UserError
from support.wait import HANG_S

BLOCK_ACCELERATE = "import sys; sys.modules['accelerate'] = None  # as if the package were not installed\n"


@pytest.fixture
def own_tiny(tmp_path: Path, omnistudio_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the session's tiny checkpoint in a home of this test's own."""
    from omnistudio.engine.checkpoints import checkpoint_dir, ensure_checkpoint

    built = ensure_checkpoint("tiny")
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path / "home"))
    shutil.copytree(built, checkpoint_dir("tiny"))
    return checkpoint_dir("tiny")


def _aside(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name + "."))


def test_loading_needs_no_accelerate(own_tiny: Path, tmp_path: Path) -> None:
    """In a process where ``import accelerate`` fails (and transformers sees no accelerate), tiny loads on
    the CPU and its checkpoint stays where it is."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_ACCELERATE)
    code = ("from omnistudio.engine.model import load_model; m = load_model('tiny', device='cpu'); "
            "import transformers.utils as u; "
            "print('loaded', m.device, u.is_accelerate_available(), next(m.model.parameters()).device)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["loaded", "cpu", "False", "cpu"]
    assert _aside(own_tiny) == [] and (own_tiny / "model.safetensors").is_file()


@pytest.mark.parametrize("error", [ImportError("No module named 'accelerate'"),
                                   RuntimeError("CUDA error: an illegal memory access was encountered\nmore"),
                                   ValueError("Using a `device_map` requires `accelerate`.")])
def test_an_import_or_device_error_leaves_the_checkpoint_and_is_one_line(
        error: Exception, own_tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omnivoice.models.omnivoice import OmniVoice

    from omnistudio.engine.model import load_model

    def fail(*_args: object, **_kwargs: object) -> None:
        raise error

    monkeypatch.setattr(OmniVoice, "from_pretrained", fail)
    with pytest.raises(UserError) as caught:
        load_model("tiny", device="cpu")
    line = str(caught.value)
    assert "\n" not in line and str(error).splitlines()[0] in line
    assert _aside(own_tiny) == [] and (own_tiny / "model.safetensors").is_file()


@pytest.mark.parametrize("error", [MemoryError(), RuntimeError("DefaultCPUAllocator: can't allocate memory")])
def test_out_of_memory_leaves_the_checkpoint_and_is_the_memory_error(
        error: Exception, own_tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omnivoice.models.omnivoice import OmniVoice

    from omnistudio.engine.model import load_model
    from omnistudio.errors import os_error_line

    def fail(*_args: object, **_kwargs: object) -> None:
        raise error

    monkeypatch.setattr(OmniVoice, "from_pretrained", fail)
    with pytest.raises(type(error)) as caught:
        load_model("tiny", device="cpu")
    assert (os_error_line(caught.value) or "").startswith("out of memory")  # the CLI's one line, rc 2
    assert _aside(own_tiny) == [] and (own_tiny / "model.safetensors").is_file()


def test_a_damaged_file_is_moved_aside_and_rebuilt(own_tiny: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A config that is not JSON passes the header check before loading, fails the load, and is damage."""
    from omnistudio.engine.model import load_model

    config = own_tiny / "audio_tokenizer" / "config.json"
    config.write_text(config.read_text()[: 40])
    loaded = load_model("tiny", device="cpu")
    assert loaded.path == own_tiny and json.loads(config.read_text())  # rebuilt whole, in place
    aside = _aside(own_tiny)
    assert len(aside) == 1 and ".damaged-" in aside[0]
    assert any(str(config) in r.getMessage() and "damaged" in r.getMessage() for r in caplog.records)
