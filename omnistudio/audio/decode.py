"""Audio files libsndfile does not read (M4A/AAC, and any other FFmpeg reads), decoded through PyAV's FFmpeg."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def decode_av(path: Path) -> tuple[np.ndarray, int]:
    """The first audio stream of ``path`` as float32 ([frames] for mono, else [frames, channels]) and its
    rate; ValueError when FFmpeg cannot read it as audio."""
    # lazy: start-up (av)
    import av

    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                raise ValueError("no audio stream")
            stream = container.streams.audio[0]
            rate, channels = int(stream.rate or 0), int(stream.channels or 0)
            blocks = [frame.to_ndarray() for frame in container.decode(stream)]
    except av.error.FFmpegError as exc:
        raise ValueError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if not blocks or rate <= 0 or channels <= 0:
        raise ValueError("no audio frames")
    planar = [b if b.shape[0] == channels else b.reshape(-1, channels).T for b in blocks]
    data = np.concatenate(planar, axis=1).astype(np.float32)
    kind = blocks[0].dtype
    if np.issubdtype(kind, np.integer):
        data /= float(2 ** (8 * kind.itemsize - 1))
    return (data[0] if channels == 1 else data.T.copy()), rate
