"""Whether a path a user gives is a project: a folder named ``NAME.omniproj``. A copy of a project made
without the suffix (``cp -r P.omniproj copy``) is said to be one, with what to do, rather than looked
for as an audio file ("no such file")."""

from __future__ import annotations

from pathlib import Path

from omnistudio.errors import UserError
from omnistudio.projects.project import MANIFEST, SCRIPT, SUFFIX


def project_target(path: Path) -> bool:
    """True for ``NAME.omniproj``; False for anything else that is not a folder holding a project's files;
    a folder that holds them under another name is one line saying to rename it."""
    if path.suffix == SUFFIX:
        return True
    if path.is_dir() and ((path / MANIFEST).is_file() or (path / SCRIPT).is_file()):
        raise UserError(f"{path} holds a project but is not named NAME{SUFFIX}: rename it "
                        f"{path.name}{SUFFIX} (a project's folder name is how commands know it)")
    return False
