"""Audio bytes for HTTP: whole files in every supported format, streamable PCM/WAV pieces, SSE frames.

libsndfile (through soundfile) writes WAV, FLAC, MP3 and Ogg/Opus into memory: no ffmpeg.
``pcm``, ``wav`` and ``opus`` are sent sentence by sentence (:class:`StreamEncoder`): raw PCM16, PCM16
after a WAV header whose sizes are left at 0xFFFFFFFF (as OpenAI's streaming WAV does), and the Ogg
pages libsndfile's Opus encoder has written so far (it never goes back to change a page, so the
pieces joined are exactly the file). FLAC and MP3 are sent whole when the take is done: both
encoders rewrite their header at the end (FLAC's STREAMINFO, MP3's Xing frame).
"""

from __future__ import annotations

import base64
import io
import json
import struct
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from typing_extensions import Buffer

MEDIA_TYPES = {"wav": "audio/wav", "flac": "audio/flac", "mp3": "audio/mpeg", "opus": "audio/ogg",
               "pcm": "audio/pcm"}
STREAMABLE = frozenset({"wav", "pcm", "opus"})
_SOUNDFILE = {"wav": ("WAV", "PCM_16"), "flac": ("FLAC", "PCM_16"), "mp3": ("MP3", "MPEG_LAYER_III"),
              "opus": ("OGG", "OPUS")}


def pcm16(pcm: np.ndarray) -> bytes:
    """Little-endian signed 16-bit samples (clipped to [-1, 1], rounded as libsndfile does)."""
    return np.rint(np.clip(np.asarray(pcm, dtype=np.float32), -1.0, 1.0) * 32767).astype("<i2").tobytes()


def f32(pcm: np.ndarray) -> bytes:
    """Little-endian float32 samples, exactly as rendered."""
    return np.ascontiguousarray(pcm, dtype="<f4").tobytes()


def wav_stream_header(sample_rate: int) -> bytes:
    """A 44-byte PCM16 mono WAV header for a stream of unknown length (sizes 0xFFFFFFFF)."""
    return (b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
            + b"data" + struct.pack("<I", 0xFFFFFFFF))


def encode(pcm: np.ndarray, sample_rate: int, fmt: str) -> bytes:
    """A whole file of ``fmt`` (wav, flac, mp3, opus; pcm is raw PCM16)."""
    if fmt == "pcm":
        return pcm16(pcm)
    # lazy: start-up (soundfile)
    import soundfile as sf

    container, subtype = _SOUNDFILE[fmt]
    data = np.clip(np.asarray(pcm, dtype=np.float32), -1.0, 1.0)
    if subtype == "PCM_16":  # our own rounding (libsndfile's differs between WAV and FLAC): = pcm16()
        data = np.frombuffer(pcm16(data), "<i2")
    buf = io.BytesIO()
    sf.write(buf, data, sample_rate, format=container, subtype=subtype)
    return buf.getvalue()


class _Pages(io.BytesIO):
    """The in-memory file libsndfile writes to; ``take()`` hands out what was appended since the last take."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def write(self, b: Buffer) -> int:
        if self.tell() < self.sent:
            raise RuntimeError("the encoder went back over bytes already sent")
        return super().write(b)

    def take(self) -> bytes:
        with self.getbuffer() as view:
            out = bytes(view[self.sent:])
        self.sent += len(out)
        return out


class StreamEncoder:
    """One response's audio, encoded piece by piece: ``start()``, ``audio(pcm)`` per sentence, ``end()``;
    the bytes they return, joined, are one valid file (or raw PCM16) of the whole take."""

    def __init__(self, fmt: str, sample_rate: int) -> None:
        if fmt not in STREAMABLE:
            raise ValueError(f"{fmt} cannot be streamed")
        self.fmt, self.sample_rate = fmt, sample_rate
        self._pages: _Pages | None = None
        self._file: Any = None

    def start(self) -> bytes:
        if self.fmt == "wav":
            return wav_stream_header(self.sample_rate)
        if self.fmt == "opus":
            # lazy: start-up (soundfile)
            import soundfile as sf

            self._pages = _Pages()
            self._file = sf.SoundFile(self._pages, "w", samplerate=self.sample_rate, channels=1,
                                      format="OGG", subtype="OPUS")
            return self._pages.take()
        return b""

    def audio(self, pcm: np.ndarray) -> bytes:
        if self._file is None:
            return pcm16(pcm)
        self._file.write(np.clip(np.asarray(pcm, dtype=np.float32), -1.0, 1.0))
        self._file.flush()
        assert self._pages is not None  # made with the file
        return self._pages.take()

    def end(self) -> bytes:
        if self._file is None:
            return b""
        self._file.close()
        self._file = None
        assert self._pages is not None  # made with the file
        return self._pages.take()


def decode_wav(body: bytes) -> tuple[np.ndarray, int]:
    """Samples of a WAV body as float (the figures in /tts/generate's headers are of these)."""
    # lazy: start-up (soundfile)
    import soundfile as sf

    data, rate = sf.read(io.BytesIO(body), dtype="float64")
    return data, rate


def sse(event: str, **fields: object) -> bytes:
    """One server-sent event: ``data: {"type": event, ...}`` and a blank line."""
    return f"data: {json.dumps({'type': event, **fields})}\n\n".encode()


def sse_delta(chunk: bytes) -> bytes:
    return sse("speech.audio.delta", audio=base64.b64encode(chunk).decode("ascii"))
