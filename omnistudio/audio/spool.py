"""Audio kept on disk instead of in memory while a long take renders and is finished.

``PcmSpool`` appends mono float32 blocks to an anonymous temp file (already unlinked: nothing is
left behind, even after a SIGKILL) and reads them back in blocks, so finishing an 80-minute take
holds a few seconds of audio in memory, not all of it. ``ChunkSpool`` keeps rendered sentences
(PCM, the pause after each, its id) the same way; iterating it yields ``(pcm, pause_s, id)``
tuples, the chunk form :func:`omnistudio.audio.finishing.finish_render` takes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

_ITEM = 4  # bytes per float32 sample


class PcmSpool:
    """Mono float32 samples in an unlinked temp file in ``folder`` (default: the system temp folder)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or Path(tempfile.gettempdir())
        self._fh = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115 - closed by close()
        self.frames = 0

    def append(self, block: np.ndarray) -> int:
        """Append samples; return the frame offset where they start."""
        data = np.ascontiguousarray(block, dtype="<f4").ravel()
        start = self.frames
        try:
            os.pwrite(self._fh.fileno(), data.tobytes(), start * _ITEM)
        except OSError as exc:  # an unlinked file has no name: name its folder
            raise OSError(exc.errno, exc.strerror, str(self.folder)) from None
        self.frames += data.size
        return start

    def read(self, start: int, frames: int) -> NDArray[np.float32]:
        """``frames`` samples from ``start`` (fewer at the end)."""
        start, stop = max(0, start), min(self.frames, start + frames)
        if stop <= start:
            return np.zeros(0, dtype=np.float32)
        raw = os.pread(self._fh.fileno(), (stop - start) * _ITEM, start * _ITEM)
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)

    def blocks(self, size: int) -> Iterator[NDArray[np.float32]]:
        for start in range(0, self.frames, size):
            yield self.read(start, size)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> PcmSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ChunkSpool:
    """Rendered sentences on disk: ``add(pcm, pause_s, sentence_id, breath)``; iterate for the chunks back
    as ``(pcm, pause_s, sentence_id, breath)`` (``breath`` False: the pause stays silence)."""

    def __init__(self, folder: Path | None = None) -> None:
        self._pcm = PcmSpool(folder)
        self._index: list[tuple[int, int, float, int | None, bool]] = []

    def add(self, pcm: np.ndarray, pause_s: float, sentence_id: int | None = None, breath: bool = True) -> None:
        data = np.asarray(pcm, dtype=np.float32).ravel()
        self._index.append((self._pcm.append(data), data.size, float(pause_s), sentence_id, bool(breath)))

    def settle_last(self, pause_s: float) -> None:
        """The pause after the last sentence, once it is known (text that arrives as it is written)."""
        start, frames, _pause, sentence_id, breath = self._index[-1]
        self._index[-1] = (start, frames, float(pause_s), sentence_id, breath)

    def __len__(self) -> int:
        return len(self._index)

    @property
    def frames(self) -> int:
        return self._pcm.frames

    def __getitem__(self, i: int) -> tuple[np.ndarray, float, int | None, bool]:
        start, frames, pause, sentence_id, breath = self._index[i]
        return self._pcm.read(start, frames), pause, sentence_id, breath

    def __iter__(self) -> Iterator[tuple[np.ndarray, float, int | None, bool]]:
        for i in range(len(self._index)):
            yield self[i]

    def close(self) -> None:
        self._pcm.close()

    def __enter__(self) -> ChunkSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
