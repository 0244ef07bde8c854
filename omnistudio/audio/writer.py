"""Mono float32 blocks to a delivered file, written as they come (flat memory), with what it says about itself.

The file's channels and bits are its :class:`~omnistudio.audio.profiles.DeliveryFormat`'s: one channel, or
the voice on two (dual-mono); 32-bit float, or 24-bit PCM, or 16-bit PCM with TPDF dither (one LSB
peak-to-peak triangular noise, seeded: the same take gives the same bytes).

- ``.wav``: Broadcast Wave, 32-bit float or PCM: ``bext`` (v2 loudness), ``iXML``, the samples, then ``cue `` and
  ``LIST``/``adtl`` (a marker per sentence, a region per story); the header is written again, filled in,
  when the file is done (:mod:`omnistudio.audio.bwf`). No PEAK chunk with a timestamp: the same samples on
  one day give the same bytes.
- ``.flac``: 24-bit (16 where asked; libsndfile), then Vorbis comments, chapters and a cue sheet (:mod:`omnistudio.audio.tags`).
- ``.mp3`` (LAME) and ``.m4a`` (FFmpeg's AAC), encoded by PyAV's FFmpeg, chapters and tags added after.

Use::

    with AudioWriter(tmp, 24000, ".wav", info) as writer:   # info: a bwf.Broadcast (None: a bare one)
        writer.write(block)                                 # as often as needed
        writer.loudness = LoudnessFields.of(report)         # once measured: bext v2 (and FLAC's tags)
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from dataclasses import replace
from fractions import Fraction
from io import BufferedWriter
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from omnistudio.audio import tags
from omnistudio.audio.bwf import Broadcast, LoudnessFields, cue_chunks, usid, wav_header
from omnistudio.audio.export import FORMATS, check_output_path
from omnistudio.audio.profiles import DeliveryFormat
from omnistudio.audio.tags import chapter_spans
from omnistudio.commit import atomic_write_bytes
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

    def __init__(self, path: Path, sample_rate: int, suffix: str, info: Broadcast | None = None,
                 delivery: DeliveryFormat = DeliveryFormat(), seed: int = 0) -> None:
        self.path, self.sample_rate, self.frames = Path(path), int(sample_rate), 0
        self.suffix = suffix
        self.info = info if info is not None else Broadcast()
        self.loudness: LoudnessFields | None = None  # set once measured (before close)
        self.channels, self.bits = delivery.channels, delivery.bits
        self._dither = np.random.default_rng(seed & 0xFFFF_FFFF) if self.bits == 16 else None
        self._digest = hashlib.sha256()  # of a WAV's samples: its bext OriginatorReference (bwf.usid)
        kind = FORMATS[suffix][0]
        self._fh: BufferedWriter | _Blocks  # a WAV's file (its header is written again at close), else blocks
        if kind == "WAV":
            self._fh = open(self.path, "wb")  # noqa: SIM115 - closed by close()
            self._fh.write(self._header(0))
        elif kind == "FLAC":
            # lazy: start-up (soundfile)
            import soundfile as sf

            subtype = "PCM_16" if self.bits == 16 else FORMATS[suffix][1]
            self._fh = sf.SoundFile(str(self.path), "w", self.sample_rate, self.channels, subtype, format="FLAC")
        else:
            self._fh = _Encoder(self.path, self.sample_rate, suffix, self.info, self.channels)
        self._kind = kind

    def _header(self, frames: int, tail: int = 0) -> bytes:
        return wav_header(self.info, self.sample_rate, frames, loudness=self.loudness, tail=tail,
                          channels=self.channels, bits=self.bits)

    def write(self, block: np.ndarray) -> None:
        data = np.ascontiguousarray(block, dtype="<f4").ravel()
        frames = data.size
        if self._dither is not None:  # TPDF: the sum of two uniform draws of one LSB each
            lsb = 1.0 / 32768.0
            data = (data + (self._dither.random(frames) - self._dither.random(frames)) * lsb).astype("<f4")
        if self.channels == 2:
            data = np.repeat(data, 2)
        try:
            if isinstance(self._fh, BufferedWriter):  # WAV
                samples = _pcm_bytes(data, self.bits)
                self._digest.update(samples)
                self._fh.write(samples)
            else:
                self._fh.write(data.reshape(frames, self.channels) if self._kind == "FLAC" else data)
        except RuntimeError as exc:  # libsndfile says only "System error." for a full disk
            raise _os_error_of(exc, self.path) from None
        self.frames += frames

    def close(self) -> None:
        try:
            if isinstance(self._fh, BufferedWriter):  # WAV
                tail = cue_chunks(self.info.markers, self.sample_rate)
                if (self.frames * self.channels * self.bits // 8) % 2:
                    self._fh.write(b"\0")  # the data chunk's pad byte
                self._fh.write(tail)
                self._fh.seek(0)
                self.info = replace(self.info, usid=self.info.usid or usid(self.info, self._digest.digest()))
                self._fh.write(self._header(self.frames, len(tail)))
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


def _pcm_bytes(data: np.ndarray, bits: int) -> bytes:
    """Interleaved float samples as a WAV's data: float32 as they are, else little-endian PCM of ``bits``."""
    if bits == 32:
        return data.tobytes()
    full = float(1 << (bits - 1))
    ints = np.clip(np.round(data.astype(np.float64) * full), -full, full - 1).astype("<i4")
    if bits == 16:
        return ints.astype("<i2").tobytes()
    return ints.view(np.uint8).reshape(-1, 4)[:, :3].tobytes()  # 24-bit: the low three bytes of each


class _Encoder:
    """Float blocks to an MP3 or M4A file through PyAV (FFmpeg's LAME and AAC encoders); the M4A's chapters
    (the chapter track ``ffprobe`` and players read) are set before its trailer is written."""

    def __init__(self, path: Path, sample_rate: int, suffix: str, info: Broadcast, channels: int = 1) -> None:
        # lazy: start-up (av)
        import av

        container, codec, bit_rate = ENCODERS[suffix]
        self.info, self.sample_rate, self.suffix = info, sample_rate, suffix
        self.layout = "stereo" if channels == 2 else "mono"
        output = av.open(str(path), "w", format=container)
        stream = output.add_stream(codec, rate=sample_rate, layout=self.layout)
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
        # lazy: start-up (av)
        import av

        step = (1 << 15) * (2 if self.layout == "stereo" else 1)
        for start in range(0, data.size, step):
            piece = data[start:start + step].reshape(1, -1)  # packed: interleaved channels in one plane
            frame = av.AudioFrame.from_ndarray(piece, format="flt", layout=self.layout)
            frame.sample_rate, frame.pts = self.sample_rate, self.pts
            self.pts += frame.samples
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
    base = Fraction(1, 1000)
    return [{"id": n, "start": int(round(start * 1000)), "end": int(round(end * 1000)), "time_base": base,
             "metadata": {"title": title}}
            for n, (start, end, title) in enumerate(chapter_spans(info, duration_s), start=1)]


def _os_error_of(exc: BaseException, path: Path) -> BaseException:
    """libsndfile's "System error." as the OSError it hides (a full disk, most often)."""

    try:
        if shutil.disk_usage(path.parent).free < (1 << 20):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    except OSError:
        pass
    return OSError(errno.EIO, f"cannot write audio ({exc})", str(path))
