"""Named duo presets of a project: ``morning`` = ``ruby+storm@0.65``, kept in ``NAME.omniproj/presets.json``.

A preset is a speaker tag of its own in the project's script (``[morning] Good morning.`` reads with the
blend; :func:`omnistudio.script.parse_script` takes them as ``presets``), a row of the studio's anchor
picker, and what the morph slider shows on such a paragraph. The file is small JSON written atomically
(``{"presets": {"morning": {"a": "ruby", "b": "storm", "alpha": 0.65}}}``); a damaged one reads as no
presets and is said once (:func:`read_presets` returns the problem), never a crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from pathlib import Path

from omnistudio.commit import write_json
from omnistudio.errors import UserError
from omnistudio.script import Blend

FILE = "presets.json"
NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
MAX_PRESETS = 200


def check_preset_name(name: str, anchors: Collection[str] = ()) -> str:
    """A preset's name, lower case: a letter, then letters, digits, '-' or '_' (32 at most), no anchor's id."""
    key = name.strip().lower()
    if not NAME_RE.match(key):
        raise UserError(f"preset name '{name}': use a letter, then letters, digits, '-' or '_' (32 at most)")
    if key in anchors:
        raise UserError(f"preset name '{key}' is an anchor's id: choose another name")
    return key


def read_presets(folder: Path) -> tuple[dict[str, Blend], str | None]:
    """The presets kept in the project ``folder`` and the problem with its file (None: none, or no file)."""
    path = Path(folder) / FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return {}, f"{FILE} cannot be read ({exc}); its duo presets are left out"
    try:
        items = data["presets"]
        presets = {check_preset_name(str(name)): Blend(str(v["a"]), str(v["b"]), float(v["alpha"]))
                   for name, v in dict(items).items()}
    except (KeyError, TypeError, ValueError, AttributeError, UserError) as exc:
        return {}, f"{FILE} is damaged ({exc}); its duo presets are left out"
    return presets, None


def with_preset(presets: Mapping[str, Blend], name: str, blend: Blend,
                anchors: Collection[str] = ()) -> tuple[str, dict[str, Blend]]:
    """``presets`` with ``blend`` kept as ``name`` (replacing a preset of that name), checked: the name as
    kept and the presets now (a new dict)."""
    key = check_preset_name(name, anchors)
    if key not in presets and len(presets) >= MAX_PRESETS:
        raise UserError(f"the project keeps {MAX_PRESETS} duo presets at most")
    return key, {**presets, key: blend}


def save_preset(folder: Path, name: str, blend: Blend, anchors: Collection[str] = ()) -> dict[str, Blend]:
    """Keep ``blend`` as ``name`` in the project ``folder`` (replacing a preset of that name); the presets now."""
    _key, presets = with_preset(read_presets(folder)[0], name, blend, anchors)
    write_presets(folder, presets)
    return presets


def write_presets(folder: Path, presets: Mapping[str, Blend]) -> None:
    """Write the project ``folder``'s presets file (atomically)."""

    write_json(Path(folder) / FILE, {"presets": _as_json(presets)})


def _as_json(presets: Mapping[str, Blend]) -> dict[str, object]:
    return {name: {"a": b.a, "b": b.b, "alpha": b.alpha} for name, b in sorted(presets.items())}
