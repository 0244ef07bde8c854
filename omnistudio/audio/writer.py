"""Mono float32 blocks to a delivered file, written as they come (flat memory), with what it says about itself.

- ``.wav``: Broadcast Wave, 32-bit float: ``bext`` (v2 loudness), ``iXML``, the samples, then ``cue `` and
  ``LIST``/``adtl`` (a marker per sentence, a region per story); the header is written again, filled in,
  when the file is done (:mod:`omnistudio.audio.bwf`). No PEAK chunk with a timestamp: the same samples on
  one day give the same bytes.
- ``.flac``: 24-bit (libsndfile), then Vorbis comments, chapters and a cue sheet (:mod:`omnistudio.audio.tags`).
- ``.mp3`` (LAME) and ``.m4a`` (FFmpeg's AAC), encoded by PyAV's FFmpeg, chapters and tags added after.

Use::

    with AudioWriter(tmp, 24000, ".wav", info) as writer:   # info: a bwf.Broadcast (None: a bare one)
        writer.write(block)                                 # as often as needed
        writer.loudness = LoudnessFields.of(report)         # once measured: bext v2 (and FLAC's tags)
"""

from __future__ import annotations

import errno
import os
from fractions import Fraction
from io import BufferedWriter
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from omnistudio.audio.bwf import Broadcast, LoudnessFields, cue_chunks, wav_header
from omnistudio.audio.export import FORMATS, atomic_write_bytes, check_output_path
from omnistudio.errors import UserError

if TYPE_CHECKING:
    from av.audio.frame import AudioFrame
    from av.audio.stream import AudioStream
    from av.container.core import Chapter
    from av.container.output import OutputContainer

# container, codec, bit/s (None: LAME's VBR -V 2, whose level stays within 0.05 LU of the source where a
# 64-128 kbit/s CBR at 24 kHz loses 0.4 LU of the top octave: docs/decisions.md)
ENCODERS: dict[str, tuple[str, Literal["libmp3lame", "aac"], int | None]] = {
    ".mp3": ("mp3", "libmp3lame", None), ".m4a": ("ipod", "aac", 96_000)}
LAME_QUALITY = 2  # -V 2 (PyAV's global_quality is LAME's VBR quality as it is: measured, 2 gives lame -V 2's file)


class _Blocks(Protocol):
    """What FLAC (libsndfile's SoundFile) and MP3/M4A (:class:`_Encoder`) are written with: float32 blocks."""

    def write(self, data: np.ndarray, /) -> object: ...

    def close(self) -> None: ...


class AudioWriter:
    """Mono float32 blocks to ``path`` in the format its ``suffix`` names (see the module's docstring)."""

    def __init__(self, path: Path, sample_rate: int, suffix: str, info: Broadcast | None = None) -> None:
        self.path, self.sample_rate, self.frames = Path(path), int(sample_rate), 0
        self.suffix = suffix
        self.info = info if info is not None else Broadcast()
        self.loudness: LoudnessFields | None = None  # set once measured (before close)
        kind = FORMATS[suffix][0]
        self._fh: BufferedWriter | _Blocks  # a WAV's file (its header is written again at close), else blocks
        if kind == "WAV":
            self._fh = open(self.path, "wb")  # noqa: SIM115 - closed by close()
            self._fh.write(wav_header(self.info, self.sample_rate, 0))
        elif kind == "FLAC":
            import soundfile as sf

            self._fh = sf.SoundFile(str(self.path), "w", self.sample_rate, 1, FORMATS[suffix][1], format="FLAC")
        else:
            self._fh = _Encoder(self.path, self.sample_rate, suffix, self.info)
        self._kind = kind

    def write(self, block: np.ndarray) -> None:
        data = np.ascontiguousarray(block, dtype="<f4").ravel()
        try:
            if isinstance(self._fh, BufferedWriter):  # WAV
                self._fh.write(data.tobytes())
            else:
                self._fh.write(data)
        except RuntimeError as exc:  # libsndfile says only "System error." for a full disk
            raise _os_error_of(exc, self.path) from None
        self.frames += data.size

    def close(self) -> None:
        from omnistudio.audio import tags

        try:
            if isinstance(self._fh, BufferedWriter):  # WAV
                tail = cue_chunks(self.info.markers, self.sample_rate)
                self._fh.write(tail)
                self._fh.seek(0)
                self._fh.write(wav_header(self.info, self.sample_rate, self.frames, loudness=self.loudness,
                                          tail=len(tail)))
            self._fh.close()
        except RuntimeError as exc:
            raise _os_error_of(exc, self.path) from None
        duration = self.frames / self.sample_rate
        if self._kind == "FLAC":
            tags.tag_flac(self.path, self.info, self.loudness, self.frames, self.sample_rate)
        elif self._kind == "MP3":
            tags.tag_mp3(self.path, self.info, self.loudness, duration)
        elif self._kind == "M4A":
            tags.tag_m4a(self.path, self.info, self.loudness)

    def __enter__(self) -> AudioWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            try:
                self._fh.close()
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass


def write_audio(path: Path, pcm: np.ndarray, sample_rate: int, info: Broadcast | None = None) -> None:
    """Write mono float32 PCM as Broadcast WAV (float), FLAC (24-bit), MP3 or M4A, atomically; ``info``: what
    the file says about itself (a :class:`~omnistudio.audio.bwf.Broadcast`; None: a bare one)."""
    suffix = check_output_path(path)
    data = np.asarray(pcm, dtype=np.float32)
    if not np.all(np.isfinite(data)):
        raise UserError("refusing to write audio containing NaN or infinite samples")

    def write(tmp: Path) -> None:
        with AudioWriter(tmp, sample_rate, suffix, info) as writer:
            writer.write(data)

    atomic_write_bytes(path, write, suffix=suffix)


class _Encoder:
    """Float blocks to an MP3 or M4A file through PyAV (FFmpeg's LAME and AAC encoders); the M4A's chapters
    (the chapter track ``ffprobe`` and players read) are set before its trailer is written."""

    def __init__(self, path: Path, sample_rate: int, suffix: str, info: Broadcast) -> None:
        import av

        container, codec, bit_rate = ENCODERS[suffix]
        self.info, self.sample_rate, self.suffix = info, sample_rate, suffix
        output = av.open(str(path), "w", format=container)
        stream = output.add_stream(codec, rate=sample_rate, layout="mono")
        if bit_rate is None:
            stream.codec_context.qscale = True
            stream.codec_context.global_quality = LAME_QUALITY
        else:
            stream.bit_rate = bit_rate
        self.container: OutputContainer = output
        self.stream: AudioStream = stream
        self.pts = 0
        self.closed = False

    def write(self, data: np.ndarray) -> None:
        import av

        for start in range(0, data.size, 1 << 15):
            piece = data[start:start + (1 << 15)].reshape(1, -1)
            frame = av.AudioFrame.from_ndarray(piece, format="flt", layout="mono")
            frame.sample_rate, frame.pts = self.sample_rate, self.pts
            self.pts += piece.shape[1]
            self._mux(frame)

    def _mux(self, frame: AudioFrame | None) -> None:
        for packet in self.stream.encode(frame):
            self.container.mux(packet)

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._mux(None)
            if self.suffix == ".m4a" and self.info.chapters:
                self.container.set_chapters(_av_chapters(self.info, self.pts / self.sample_rate))
        finally:
            self.container.close()
            self.closed = True


def _av_chapters(info: Broadcast, duration_s: float) -> list[Chapter]:
    from omnistudio.audio.tags import chapter_spans

    base = Fraction(1, 1000)
    return [{"id": n, "start": int(round(start * 1000)), "end": int(round(end * 1000)), "time_base": base,
             "metadata": {"title": title}}
            for n, (start, end, title) in enumerate(chapter_spans(info, duration_s), start=1)]


def _os_error_of(exc: BaseException, path: Path) -> BaseException:
    """libsndfile's "System error." as the OSError it hides (a full disk, most often)."""
    import shutil

    try:
        if shutil.disk_usage(path.parent).free < (1 << 20):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    except OSError:
        pass
    return OSError(errno.EIO, f"cannot write audio ({exc})", str(path))
