"""bench/gpu.sh's setup on a bare GPU image (issue 47, part 1): a preflight that names what is missing in one
line before anything loads, a budget that bounds the wheels' install and the checkpoint build too, and the
wheel set derived from the project's dependency closure less what the image has (bench/wheelset.py).

The script runs here with stand-ins for the image's Python; the preflight runs for real with one package
blocked by a ``sitecustomize`` (``sys.modules[name] = None``: ``import name`` fails as if it were absent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.wait import HANG_S

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import wheelset  # noqa: E402

BLOCK = "import sys; sys.modules[{name!r}] = None  # as if {name} were not installed\n"


def _blocking(tmp_path: Path, *names: str) -> dict[str, str]:
    site = tmp_path / "blocked"
    site.mkdir()
    (site / "sitecustomize.py").write_text("".join(BLOCK.format(name=name) for name in names))
    return {**os.environ, "PYTHONPATH": str(site)}


def _stand_in(tmp_path: Path, script: str) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(script.replace("{python}", sys.executable))
    python.chmod(0o755)
    return venv


def _gpu_sh(tmp_path: Path, env: dict[str, str], budget: int = 300) -> subprocess.CompletedProcess[str]:
    results = tmp_path / "results.jsonl"
    env = {**env, "MODEL": "tiny", "DEVICE": "cpu", "BUDGET": str(budget), "MIN_STEP": "1", "GRACE": "1",
           "RESULTS": str(results), "OMNISTUDIO_HOME": str(tmp_path / "home")}
    return subprocess.run(["bash", str(ROOT / "bench" / "gpu.sh")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=HANG_S)


def test_gpu_sh_stops_at_the_preflight_naming_every_missing_package_before_loading_anything(tmp_path: Path) -> None:
    """gpu.sh with the real preflight in an environment lacking two packages the steps import (one a dependency
    of the server, one of the text front-end): its last line names both, it exits non-zero, and no checkpoint
    was built and no step ran (one preflight run: it imports the whole stack, about 12 s here)."""
    venv = _stand_in(tmp_path, '#!/usr/bin/env bash\nexec {python} "$@"\n')
    proc = _gpu_sh(tmp_path, {**_blocking(tmp_path, "num2words", "mcp"), "VENV": str(venv)})
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    last = lines[-1]
    assert last.startswith("gpu.sh: preflight: missing "), proc.stderr[-2000:]
    assert "num2words" in last and "mcp" in last, last
    assert sum(line.startswith("gpu.sh: preflight: missing") for line in lines) == 1  # one line for both
    assert (tmp_path / "results.jsonl").read_text() == ""
    assert not (tmp_path / "home").exists()  # nothing built


HANGS = """#!/usr/bin/env bash
case "$*" in
  *"{hang}"*) exec sleep 600 ;;
  *"preflight.py"*) exit 0 ;;
  *"import torch"*) exit 0 ;;
  *) exec {python} "$@" ;;
esac
"""


@pytest.mark.parametrize("hang", ["pip install", "ensure_checkpoint"])
def test_the_budget_bounds_the_install_and_the_checkpoint_build(hang: str, tmp_path: Path) -> None:
    """A wheels' install or a checkpoint build that hangs is cut at what is left of the budget: the run ends
    there with one line saying so (it does not wait for it), and no step runs."""
    script = HANGS.replace("{hang}", hang)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "x-1-py3-none-any.whl").write_bytes(b"")
    python = tmp_path / "image-python"
    python.write_text(script.replace("{python}", sys.executable))
    python.chmod(0o755)
    venv = _stand_in(tmp_path, script)
    env = {**os.environ, "VENV": str(venv), "WHEELS": str(wheels)}
    if hang == "pip install":  # the image's python has torch and the wheels are carried: gpu.sh installs them
        env |= {"PYTHON": str(python), "VENV": str(tmp_path / "new-venv")}
    proc = _gpu_sh(tmp_path, env, budget=6)
    assert proc.returncode in (124, 137), proc.stderr[-2000:]
    assert "ran past" in proc.stderr.strip().splitlines()[-1]
    assert (tmp_path / "results.jsonl").read_text() == ""


def _item(name: str, version: str, *requires: str) -> dict[str, object]:
    return {"metadata": {"name": name, "version": version, "requires_dist": list(requires)}}


REPORT = {"environment": {"python_version": "3.12", "sys_platform": "linux", "platform_machine": "x86_64",
                          "implementation_name": "cpython", "platform_system": "Linux"},
          "install": [_item("torch", "2.11.0", "triton==3.5; platform_machine == 'x86_64'", "sympy>=1.13",
                            "nvidia-cublas-cu12; sys_platform == 'linux'", "typing-extensions"),
                      _item("triton", "3.5.0"), _item("sympy", "1.14", "mpmath"), _item("mpmath", "1.3"),
                      _item("nvidia-cublas-cu12", "12.6"), _item("typing_extensions", "4.16"),
                      _item("torchaudio", "2.11.0", "torch==2.11.0"),
                      _item("omnivoice", "0.2.1", "torch>=2.4", "transformers>=5.3", "gradio", "accelerate"),
                      _item("gradio", "6.0", "pandas"), _item("pandas", "3.0"),
                      _item("transformers", "5.25.0", "numpy", "tokenizers", "typing-extensions"),
                      _item("accelerate", "1.16", "torch", "numpy", "psutil"), _item("psutil", "7.2"),
                      _item("numpy", "2.5"), _item("tokenizers", "0.23"),
                      _item("num2words", "0.5.6", "docopt; python_version < '3'"), _item("docopt", "0.6"),
                      _item("mcp", "1.30.0", "pydantic>=2", "anyio"), _item("pydantic", "2.14"),
                      _item("anyio", "4.16"), _item("lingua-language-detector", "2.2.0")]}


def test_the_wheel_set_is_the_imported_closure_less_the_image() -> None:
    imported = ["omnivoice", "transformers", "torch", "num2words", "mcp", "numpy", "accelerate", "omnistudio",
                "tokenizers", "pydantic", "anyio", "sympy", "typing_extensions"]
    picked = wheelset.select(REPORT, imported, ["numpy==1.26.4", "# a comment"])
    assert picked == ["accelerate==1.16", "anyio==4.16", "mcp==1.30.0", "num2words==0.5.6", "omnivoice==0.2.1",
                      "pydantic==2.14", "tokenizers==0.23", "transformers==5.25.0"]
    # torch's own closure (triton, nvidia-*, sympy, mpmath, typing-extensions) is the image's, imported or not;
    # gradio and its pandas are declared by omnivoice, psutil by accelerate, but none is imported; lingua is
    # not imported by any step; numpy is listed by the image


def test_gpu_wheels_sh_derives_the_set_rather_than_listing_it() -> None:
    """No hand list of packages in the script: it resolves pyproject.toml's requirements for the target and
    hands the report to wheelset.py."""
    text = (ROOT / "bench" / "gpu-wheels.sh").read_text()
    assert "--dry-run" in text and "--report" in text and "pyproject.toml" in text and "wheelset.py" in text
    assert "omnivoice==" not in text and "fastapi" not in text and "pydub" not in text
    assert json.dumps(REPORT)  # the report's shape above is what pip writes (metadata.name/version/requires_dist)
