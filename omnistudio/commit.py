"""Writing files all or nothing: every output (audio, sidecar, captions, /dev/shm, projects, settings,
lexicons, the compile cache) is staged in a hidden temp file beside its path and committed by rename.

A killed process never leaves a half-written file at the output path: the data goes to a hidden
temp file beside it (``.NAME.XXXX.wav``), is fsynced, then renamed over the path. A SIGKILL
mid-write leaves the previous file intact (and may leave that temp file behind, swept the next time
something is written in that folder).

What is at an output path decides how it is written (:func:`destination`): a regular file or
nothing is replaced atomically; a symbolic link is followed (its target is written, the link
stays); a FIFO, a character device or ``-`` (standard output) is written into once the whole
file is ready (never replaced by a file); a block device, a socket or a folder is refused. A
group of files is committed all or nothing (:class:`Staged`, :func:`commit`).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from omnistudio import tempfiles
from omnistudio.errors import UserError
from omnistudio.signals import held

STDOUT = "-"
Writer = Callable[[Path], object]  # writes a file's bytes at the temp path it is given


@dataclass(frozen=True)
class Destination:
    """Where an output's bytes go: ``path`` (a link's target), replaced atomically, or ``stream``: a FIFO,
    a character device or standard output (``-``), written into once the whole file is ready."""

    path: Path
    stream: bool = False

    @property
    def stdout(self) -> bool:
        return str(self.path) == STDOUT


def destination(path: Path) -> Destination:
    """How an output at ``path`` is written (see the module docstring); a refusal is one line."""
    if str(path) == STDOUT:
        return Destination(Path(STDOUT), stream=True)
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there yet (its folder is checked apart)
        return Destination(path)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
    if stat.S_ISLNK(mode):
        target = Path(os.path.realpath(path))
        if str(target) == STDOUT or os.path.islink(target):  # a loop: realpath stops on it
            raise UserError(f"output path {path} is a symbolic link that leads nowhere")
        return destination(target)
    if stat.S_ISREG(mode):
        return Destination(path)
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return Destination(path, stream=True)
    if stat.S_ISDIR(mode):
        raise UserError(f"output path {path} is a directory")
    kind = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
    raise UserError(f"output path {path} is {kind}: write to a file, a FIFO or - (standard output)")



def stage(path: Path, write: Writer, suffix: str = "", mode: int = 0o644) -> Path:
    """Call ``write(tmp_path)`` on a hidden temp file beside ``path`` (beside a link's target; in the
    temp folder for a FIFO, a device or standard output), fsync it and set its mode; return the temp
    path (removed again if anything fails). Temps left by a killed run are swept the next time
    something is written in that folder."""
    where = destination(path)
    folder = Path(tempfile.gettempdir()) if where.stream else where.path.parent if str(where.path.parent) else Path(".")
    tempfiles.sweep(folder)
    tmp = tempfiles.mkstemp(folder, path.name if not where.stdout else "stdout", suffix or ".tmp")
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None and exc.errno is not None:  # a write() failure names no file: name it
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def commit(staged: list[tuple[Path, Path]]) -> None:
    """Put every staged ``(tmp, path)`` in place, all or nothing, naming the user's file on failure.

    Streams (a FIFO, a device, standard output) are written first: they cannot be taken back, and a
    reader may be slow, so signals are not held for them. Then, with SIGINT/SIGTERM held: each file
    already at a path is kept aside (a hard link beside it: a file that cannot be linked, e.g.
    immutable, fails here, before anything changed), the temps are renamed into place, and if one
    rename fails the ones done are undone, so the group stays as it was. Every temp was written and
    fsynced before (``stage``). Only a SIGKILL or power cut between two renames leaves a mixed group;
    the sidecar names the audio's size (``audio_bytes``) so such a pair is recognisable."""
    places = [(tmp, destination(path), path) for tmp, path in staged]
    kept: list[tuple[Path, Path | None]] = []  # (target, its old file kept aside, or None: it was new)
    try:
        for tmp, where, path in places:
            if where.stream:
                _stream_into(tmp, where, path)
        with held():
            files = [(tmp, where.path, path) for tmp, where, path in places if not where.stream]
            for _tmp, target, path in files:
                kept.append((target, _keep_aside(target, path)))
            done = 0
            try:
                for tmp, target, path in files:
                    try:
                        os.replace(tmp, target)
                    except OSError as exc:
                        raise OSError(exc.errno, exc.strerror, str(path)) from None
                    done += 1
            except BaseException:
                for (target, old), _file in zip(reversed(kept[:done]), reversed(files[:done])):
                    _undo(target, old)
                raise
    finally:
        for tmp, _where, _path in places:
            tmp.unlink(missing_ok=True)
        for _target, old in kept:
            if old is not None:
                old.unlink(missing_ok=True)


def _keep_aside(target: Path, path: Path) -> Path | None:
    """A hard link to the file at ``target`` (None if there is none), to put back if the group fails."""
    if not target.exists():
        return None
    aside = tempfiles.mkstemp(target.parent if str(target.parent) else Path("."), target.name, ".old")
    aside.unlink()
    try:
        os.link(target, aside)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    return aside


def _undo(target: Path, old: Path | None) -> None:
    try:
        if old is None:
            target.unlink(missing_ok=True)
        else:
            os.replace(old, target)
    except OSError:  # best effort: the error being raised says what failed
        pass


def _stream_into(tmp: Path, where: Destination, path: Path) -> None:
    """Copy a finished temp file into a FIFO, a device or standard output."""
    try:
        if where.stdout:
            sys.stdout.flush()
            with open(tmp, "rb") as src:
                shutil.copyfileobj(src, sys.stdout.buffer, 1 << 20)
            sys.stdout.buffer.flush()
            return
        with open(tmp, "rb") as src, open(where.path, "wb", buffering=0) as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def discard(staged: list[tuple[Path, Path]]) -> None:
    for tmp, _path in staged:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: Path, write: Writer, suffix: str = "", mode: int = 0o644) -> None:
    """Call ``write(tmp_path)`` then rename over ``path`` (file mode ``mode``); a crash leaves the old file intact."""
    commit([(stage(path, write, suffix, mode), path)])


@dataclass
class Staged:
    """A group of files staged to be committed together: :meth:`add` stages one (``write(tmp)``), and
    :func:`staged` commits them all when its block ends, or discards them all if it fails."""

    files: list[tuple[Path, Path]] = field(default_factory=list)  # (temp, path)

    def add(self, path: Path, write: Writer, suffix: str = "", mode: int = 0o644) -> Path:
        """Stage ``path``; returns its temp file (written and fsynced)."""
        self.files.append((stage(path, write, suffix, mode), path))
        return self.files[-1][0]

    def take(self, tmp: Path, path: Path) -> None:
        """Take in a temp file staged elsewhere (the /dev/shm hand-off, which lives in another folder)."""
        self.files.append((tmp, path))


@contextmanager
def staged() -> Iterator[Staged]:
    """Stage files in the block, commit them all at its end, all or nothing; an error leaves none changed."""
    group = Staged()
    try:
        yield group
    except BaseException:
        discard(group.files)
        raise
    commit(group.files)


def json_writer(payload: Mapping[str, object]) -> Callable[[Path], object]:
    return lambda tmp: tmp.write_text(json.dumps(payload, indent=2) + "\n")


def write_json(path: Path, payload: Mapping[str, object]) -> None:
    """Write a JSON document atomically."""
    atomic_write_bytes(path, json_writer(payload), suffix=".json")
