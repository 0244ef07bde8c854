"""The engine, audio, voices, take and projects packages are a headless core: importing every module of
them loads the core and never a UI, a client or argparse (the runtime side of pyproject's import contract)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# What the headless-core contract (pyproject.toml) forbids the core to import.
FORBIDDEN_PACKAGES = ("textual", "rich", "argparse")
FORBIDDEN_OMNISTUDIO = ("omnistudio.app", "omnistudio.screens", "omnistudio.widgets", "omnistudio.studio",
                        "omnistudio.commands", "omnistudio.cli", "omnistudio.console")
# Modules each package must really load (a sample that every version of the core has).
CORE = {
    "omnistudio.engine": {"engine", "model", "sampler", "morph", "reference", "checkpoints"},
    "omnistudio.audio": {"export", "loudness", "dsp", "finishing"},
    "omnistudio.voices": {"prompts", "roster", "blend", "resolve", "session"},
    "omnistudio.take": {"pipeline", "stream", "link", "options", "sinks"},
    "omnistudio.projects": {"project", "chosen", "speech_check", "retake"},
}

# Run in a fresh interpreter: imports every module of the package with a spy on the import statement, and
# reports which omnistudio modules loaded, which forbidden modules are in sys.modules, and every import
# statement of a forbidden module written in an omnistudio module (argparse itself is loaded by numpy's
# f2py under scipy, so for argparse only the core's own import statements count).
PROBE = """
import builtins, importlib, importlib.util, json, pkgutil, sys
package, packages, ours = sys.argv[1], tuple(sys.argv[2].split(",")), tuple(sys.argv[3].split(","))
def forbidden(name):
    return name.split(".")[0] in packages or any(name == o or name.startswith(o + ".") for o in ours)
statements = []
real = builtins.__import__
def spy(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if importer.startswith("omnistudio"):
        full = importlib.util.resolve_name("." * level + name, globals.get("__package__")) if level else name
        for target in [full] + [f"{full}.{item}" for item in fromlist or ()]:
            if forbidden(target):
                statements.append([importer, target])
    return real(name, globals, locals, fromlist, level)
builtins.__import__ = spy
pkg = importlib.import_module(package)
modules = [package] + [f"{package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]
for name in modules:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m.startswith("omnistudio"))
present = sorted(m for m in sys.modules if forbidden(m) and m.split(".")[0] != "argparse")
print(json.dumps({"modules": modules, "loaded": loaded, "present": present, "statements": statements}))
"""


@pytest.mark.parametrize("package", list(CORE))
def test_core_loads_itself_and_no_ui_client_or_argparse(package: str) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, package, ",".join(FORBIDDEN_PACKAGES),
                           ",".join(FORBIDDEN_OMNISTUDIO)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {f"{package}.{name}" for name in CORE[package]} <= set(report["modules"])  # the package's own modules
    assert set(report["modules"]) <= set(report["loaded"])  # ...and every one of them really imported
    assert report["present"] == [], f"importing {package} loaded {report['present']}"
    assert report["statements"] == [], f"{package} imports what the core must not: {report['statements']}"
