"""Audio bytes for HTTP: whole files in every supported format, streamable PCM/WAV pieces, SSE frames.

libsndfile (through soundfile) writes WAV, FLAC, MP3 and Ogg/Opus into memory: no ffmpeg. Only
``pcm`` and ``wav`` can be sent sentence by sentence (raw PCM16 after a WAV header whose sizes are
left at 0xFFFFFFFF, as OpenAI's streaming WAV does); FLAC, MP3 and Opus files are sent whole when
the take is done (concatenated MP3 or Opus files do not decode as one stream).
"""

from __future__ import annotations

import base64
import io
import json
import struct
from typing import Any

import numpy as np

MEDIA_TYPES = {"wav": "audio/wav", "flac": "audio/flac", "mp3": "audio/mpeg", "opus": "audio/ogg",
               "pcm": "audio/pcm"}
STREAMABLE = frozenset({"wav", "pcm"})
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
    import soundfile as sf

    container, subtype = _SOUNDFILE[fmt]
    data = np.clip(np.asarray(pcm, dtype=np.float32), -1.0, 1.0)
    if subtype == "PCM_16":  # our own rounding (libsndfile's differs between WAV and FLAC): = pcm16()
        data = np.frombuffer(pcm16(data), "<i2")
    buf = io.BytesIO()
    sf.write(buf, data, sample_rate, format=container, subtype=subtype)
    return buf.getvalue()


def decode_wav(body: bytes) -> tuple[np.ndarray, int]:
    """Samples of a WAV body as float (the figures in /tts/generate's headers are of these)."""
    import soundfile as sf

    data, rate = sf.read(io.BytesIO(body), dtype="float64")
    return data, rate


def sse(event: str, **fields: Any) -> bytes:
    """One server-sent event: ``data: {"type": event, ...}`` and a blank line."""
    return f"data: {json.dumps({'type': event, **fields})}\n\n".encode()


def sse_delta(chunk: bytes) -> bytes:
    return sse("speech.audio.delta", audio=base64.b64encode(chunk).decode("ascii"))
