"""The engine and audio packages are a headless core: importing them never imports Textual."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("package", ["omnistudio.engine", "omnistudio.audio", "omnistudio.voices", "omnistudio.take"])
def test_core_does_not_import_textual(package: str) -> None:
    import pkgutil
    import importlib

    pkg = importlib.import_module(package)
    modules = [package] + [f"{package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"{package} imported {proc.stdout.strip()}"
    assert len(modules) > 1
