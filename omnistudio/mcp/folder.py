"""The one folder the MCP tools write into and read takes from: a name an agent gives is a plain
relative name inside it; ``..``, an absolute path, or a path that leads out through a symlink is refused."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath, PureWindowsPath

from omnistudio.errors import UserError

AUDIO_SUFFIXES = (".wav", ".flac")
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._ -]*$")


class OutputFolder:
    """``root`` (made on first write); :meth:`output` and :meth:`existing` give paths inside it only."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser().resolve()

    def _inside(self, name: str) -> Path:
        raw = str(name or "").strip()
        if not raw:
            raise UserError("the file name is empty")
        if PurePosixPath(raw).is_absolute() or PureWindowsPath(raw).is_absolute() or PureWindowsPath(raw).drive:
            raise UserError(f"'{raw}' is an absolute path: give a name inside the output folder")
        parts = re.split(r"[\\/]", raw)
        if any(part in ("..", ".") for part in parts):
            raise UserError(f"'{raw}' leaves the output folder: '..' and '.' are not allowed")
        bad = next((part for part in parts if not _SAFE.match(part)), None)
        if bad is not None:
            raise UserError(f"'{raw}': a name is letters, digits, '.', '_', '-' and spaces, one folder deep at most")
        if len(parts) > 2:
            raise UserError(f"'{raw}': a name is one folder deep at most (folder/name)")
        path = self.root.joinpath(*parts)
        if not path.resolve().is_relative_to(self.root):  # a symlink inside that leads out
            raise UserError(f"'{raw}' leads out of the output folder (through a link)")
        return path

    def output(self, name: str, audio_format: str) -> Path:
        """Where a new take named ``name`` goes (its suffix is the format's; a different one is refused)."""
        path = self._inside(name)
        suffix = f".{audio_format}"
        if path.suffix.lower() in AUDIO_SUFFIXES and path.suffix.lower() != suffix:
            raise UserError(f"'{name}' ends in {path.suffix} but the format is {audio_format}")
        if path.suffix.lower() != suffix:
            path = path.with_name(path.name + suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.parent.resolve().is_relative_to(self.root):
            raise UserError(f"'{name}' leads out of the output folder (through a link)")
        self._no_link_out(path, name)
        return path

    def _no_link_out(self, path: Path, name: str) -> None:
        """Writers follow a link to its target: none of the files a take writes (the audio, its sidecar, its
        captions) may be a link that leads out of the folder, nor anything but a file."""
        # lazy: start-up (numpy, pyebur128, scipy)
        from omnistudio.audio.export import sidecar_path
        from omnistudio.take.captions import caption_paths

        for each in (path, sidecar_path(path), *caption_paths(path, ("srt", "vtt")).values()):
            named = each.relative_to(self.root).as_posix()
            if each.is_symlink() and not each.resolve().is_relative_to(self.root):
                raise UserError(f"'{named}' leads out of the output folder (through a link)")
            if each.exists() and not each.is_file():
                raise UserError(f"'{named}' in the output folder is not a file")

    def existing(self, name: str) -> Path:
        """A file already in the folder (a take a tool wrote): one line when there is none."""
        path = self._inside(name)
        if not path.is_file():
            raise UserError(f"'{name}' is not a file in the output folder {self.root}")
        return path

    def name_of(self, path: Path) -> str:
        """``path``'s name relative to the folder (what a tool answers and takes back)."""
        return Path(path).resolve().relative_to(self.root).as_posix()
