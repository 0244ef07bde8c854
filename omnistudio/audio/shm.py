"""Hand finished PCM to another process (e.g. lip-sync) through a file in ``/dev/shm``.

``write_shm(name, pcm, rate)`` writes ``/dev/shm/NAME`` atomically (temp file, then rename) with
file mode 0600 (owner only). Layout, little-endian, a 64-byte header then the samples:

    offset size field
    0      8    magic        b"OMNIPCM\\0"
    8      2    version      uint16, 1
    10     2    channels     uint16 (1 = mono)
    12     4    sample_rate  uint32 (Hz; 24000 for OmniVoice)
    16     2    dtype        uint16, 1 = float32 little-endian (the only one in version 1)
    18     2    reserved     0
    20     8    frames       uint64, frames that follow (samples = frames * channels)
    28     4    data_offset  uint32, 64
    32     32   reserved     zeros
    64     ...  PCM, interleaved, frames * channels * 4 bytes

Reader example (numpy only)::

    import struct, numpy as np
    raw = open("/dev/shm/NAME", "rb").read()
    magic, version, channels, rate, dtype, _, frames, offset = struct.unpack_from("<8sHHIHHQI", raw)
    assert magic == b"OMNIPCM\\0" and version == 1 and dtype == 1
    pcm = np.frombuffer(raw, "<f4", frames * channels, offset).reshape(frames, channels)

The writer never reads or maps a segment a reader holds, and the rename means a reader sees the
old file or the new one, never a half-written one. Delete the file when done (``remove_shm``).
"""

from __future__ import annotations

import os
import re
import stat
import struct
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from omnistudio import tempfiles
from omnistudio.commit import commit, stage
from omnistudio.errors import UserError

SHM_DIR = Path("/dev/shm")
MAGIC = b"OMNIPCM\0"
VERSION = 1
DTYPE_FLOAT32 = 1
HEADER = struct.Struct("<8sHHIHHQI32x")  # 64 bytes
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def check_shm_name(name: str | None) -> str:
    """A plain file name for /dev/shm: letters, digits, '.', '_', '-'; no slash, not hidden."""
    if not name:
        raise UserError("shm name is empty")
    if "/" in name or "\\" in name:
        raise UserError(f"shm name '{name}' contains a slash: give a plain name, e.g. anchor-take1")
    if not _NAME.fullmatch(name):
        raise UserError(f"shm name '{name}' must be 1-200 letters, digits, '.', '_' or '-', "
                        "starting with a letter or digit")
    return name


def shm_path(name: str, root: Path = SHM_DIR) -> Path:
    return Path(root) / check_shm_name(name)


def check_shm_target(name: str, root: Path = SHM_DIR) -> Path:
    """Fail early (before any work) if ``root/NAME`` cannot be written; sweep temps a killed run left."""

    path = shm_path(name, root)
    if not Path(root).is_dir():
        raise UserError(f"shared-memory folder {root} does not exist (is /dev/shm mounted?)")
    check_replaceable(name, path)
    if not os.access(root, os.W_OK):
        raise UserError(f"shared-memory folder {root} is not writable")
    tempfiles.sweep(Path(root))
    return path


def check_replaceable(name: str, path: Path) -> None:
    """Refuse what is already at ``path`` unless it is a plain file of ours: /dev/shm is shared by every
    user, so a symlink there is never followed nor replaced, and another user's file is left alone
    (root could otherwise take it over). Checked with lstat before any work and again once the new
    file is staged."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise UserError(f"--shm {name}: {path} is a symbolic link; refusing to write through or over it")
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"--shm {name}: {path} is a directory; give the name of a file to write")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"--shm {name}: {path} is not a regular file; give another name")
    if st.st_uid != os.geteuid():
        raise UserError(f"--shm {name}: {path} belongs to another user (uid {st.st_uid}); "
                        "refusing to replace it: give another name")


def shm_writer(name: str, frames: int, sample_rate: int, root: Path, write_pcm: Callable[[BinaryIO], None],
               channels: int = 1) -> tuple[Path, Path]:
    """Stage a handoff file of ``frames`` float32 frames: the header, then ``write_pcm(fh)`` writes
    the samples in blocks. Returns ``(temp path, final path)`` for ``commit.commit``."""
    path = check_shm_target(name, root)
    header = HEADER.pack(MAGIC, VERSION, channels, int(sample_rate), DTYPE_FLOAT32, 0, frames, HEADER.size)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            fh.write(header)
            write_pcm(fh)
            if fh.tell() != HEADER.size + frames * channels * 4:
                raise RuntimeError(f"shm handoff {name}: wrote {fh.tell()} bytes for {frames} frames")

    tmp = stage(path, write, suffix=".tmp", mode=0o600)
    try:
        check_replaceable(name, path)  # again: something may have appeared there while the take was written
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, path


def write_shm(name: str, pcm: np.ndarray, sample_rate: int, root: Path = SHM_DIR) -> Path:
    """Write float32 PCM ([frames] or [frames, channels]) with the header above; return the path."""
    data = np.asarray(pcm, dtype="<f4")
    if data.ndim == 1:
        data = data[:, None]
    if data.ndim != 2 or not 1 <= data.shape[1] <= 64:
        raise UserError(f"PCM of shape {np.shape(pcm)} is not [frames] or [frames, channels]")
    return write_shm_blocks(name, data.shape[0], sample_rate, [data], root, channels=data.shape[1])


def write_shm_blocks(name: str, frames: int, sample_rate: int, blocks: Iterable[np.ndarray],
                     root: Path = SHM_DIR, channels: int = 1) -> Path:
    """Write ``frames`` frames given as float32 ``blocks`` (e.g. read back from a disk spool, so the
    whole take is never in memory twice); atomically, as :func:`write_shm`. Returns the path."""
    def write_pcm(fh: BinaryIO) -> None:
        for block in blocks:
            fh.write(np.ascontiguousarray(block, dtype="<f4").tobytes())

    staged = shm_writer(name, frames, sample_rate, root, write_pcm, channels)
    commit([staged])
    return staged[1]


def read_shm(name_or_path: str | Path, root: Path = SHM_DIR) -> tuple[np.ndarray, int]:
    """Read a handoff file back: (float32 [frames, channels], sample rate)."""
    path = Path(name_or_path) if "/" in str(name_or_path) else shm_path(str(name_or_path), root)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)  # a symlink in the shared folder is not followed
    with open(fd, "rb") as fh:
        raw = fh.read()
    if len(raw) < HEADER.size:
        raise UserError(f"{path} is too short to be an OmniStudio PCM handoff")
    magic, version, channels, rate, dtype, _, frames, offset = HEADER.unpack_from(raw)
    if magic != MAGIC or version != VERSION or dtype != DTYPE_FLOAT32:
        raise UserError(f"{path} is not an OmniStudio PCM handoff (version {VERSION}, float32)")
    if len(raw) < offset + frames * channels * 4:
        raise UserError(f"{path} is truncated")
    pcm = np.frombuffer(raw, "<f4", frames * channels, offset).reshape(frames, channels)
    return pcm, rate


def remove_shm(name: str, root: Path = SHM_DIR) -> None:
    shm_path(name, root).unlink(missing_ok=True)
