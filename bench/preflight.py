"""bench/gpu.sh's preflight: import every module the bench steps need, before anything is loaded, and end
in ONE line naming each missing module (exit 1); silent with exit 0 when all import.

What the steps need: every module of the ``omnistudio`` package (the bench modes, the server and its MCP
endpoint, the engine, takes, voices, audio, text, and the CLI that runs them), imported with all they import
in turn, and every module the take path imports inside a function (omnivoice, transformers and the rest of
the model's load, pysbd's sentence splitter: every step loads a model and renders takes), read from the
source of TAKE_PATH. Lazy imports elsewhere (lingua in text.language, av in audio.writer, matplotlib in
audio.report, srt in captions) belong to render, the studio and deliveries, which no step runs. Passed over: a module that fails only for
want of an optional extra's package (``ray``, ``faster-whisper``: in pyproject.toml's optional dependencies,
not in its dependencies), and an import made inside a ``try`` that catches its ImportError (an
optional kernel library, off where it is missing).

``--distributions`` prints instead, one a line, the distributions whose modules the import loaded:
bench/gpu-wheels.sh roots the wheel set at them (with their own dependencies).

Runs with the standard library and the project alone (no third-party import of its own), from any folder.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import pkgutil
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Where the steps' lazy imports are read from: the engine, takes, voices and the sentence splitter.
TAKE_PATH = ("omnistudio/engine", "omnistudio/take", "omnistudio/voices", "omnistudio/script.py")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _requirement_name(spec: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    return _norm(match.group(1)) if match else ""


def extras_only() -> set[str]:
    """The normalised names of the packages only optional extras need (pyproject.toml)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    base = {_requirement_name(r) for r in project["dependencies"]}
    extra = {_requirement_name(r) for group in project.get("optional-dependencies", {}).values() for r in group}
    return extra - base


def modules() -> list[str]:
    """Every module of the omnistudio package, by name."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import omnistudio

    return ["omnistudio", *(info.name for info in pkgutil.walk_packages(omnistudio.__path__, "omnistudio."))]


def take_path_imports() -> dict[str, str]:
    """Each module (``module`` or ``module:name`` for ``from module import name``) that TAKE_PATH imports
    anywhere outside a guarded ``try``, with the omnistudio module that imports it."""
    found: dict[str, str] = {}
    sources = sorted(f for part in TAKE_PATH for f in ([ROOT / part] if part.endswith(".py")
                                                       else (ROOT / part).rglob("*.py")))
    for source in sources:
        tree = ast.parse(source.read_text("utf-8"))
        guarded = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.Try) and _catches_import(node)
                   for stmt in node.body for inner in ast.walk(stmt)}
        owner = ".".join(source.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(tree):
            if id(node) in guarded:
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"{node.module}:{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] not in sys.stdlib_module_names:
                    found.setdefault(name, owner)
    return found


def _catches_import(node: ast.Try) -> bool:
    for handler in node.handlers:
        caught = handler.type
        kinds = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if caught is None or any(isinstance(k, ast.Name) and k.id in {"ImportError", "ModuleNotFoundError",
                                                                       "Exception", "BaseException"} for k in kinds):
            return True
    return False


def missing() -> dict[str, list[str]]:
    """Each missing module (its top-level name) with the omnistudio modules that needed it."""
    optional = extras_only()
    needed: dict[str, list[str]] = {}
    for name in modules():
        try:
            importlib.import_module(name)
        except ImportError as exc:
            absent = (exc.name or name).split(".")[0]
            if _norm(absent) in optional:
                continue  # an optional extra's module: no step needs it
            needed.setdefault(absent, []).append(name)
    for name, owner in take_path_imports().items():
        module, _, attr = name.partition(":")
        try:
            loaded = importlib.import_module(module)
            if attr and not hasattr(loaded, attr):
                importlib.import_module(f"{module}.{attr}")  # a submodule, or an ImportError naming it
        except ImportError as exc:
            absent = exc.name or module
            if _norm(absent.split(".")[0]) in optional:
                continue
            needed.setdefault(f"{module}.{attr}" if absent == f"{module}.{attr}" else absent.split(".")[0],
                              []).append(owner)
    return needed


def distributions() -> list[str]:
    """The distributions of every module loaded now (after :func:`missing`)."""
    owners = importlib.metadata.packages_distributions()
    found = {dist for top in {m.split(".")[0] for m in list(sys.modules)} for dist in owners.get(top, [])}
    return sorted(found, key=str.lower)


def main(argv: list[str]) -> int:
    gaps = missing()
    if "--distributions" in argv:
        print("\n".join(distributions()))
    if gaps:
        named = ", ".join(f"{top} (for {needers[0]}{f' and {len(needers) - 1} more' if len(needers) > 1 else ''})"
                          for top, needers in sorted(gaps.items()))
        print(f"gpu.sh: preflight: missing {named}: install the wheels of bench/gpu-wheels.sh", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
