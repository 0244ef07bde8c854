"""The server's streaming encoders, without a server: the pieces joined are one valid file."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from omnistudio.server import encode

SR = 24_000


def _sentences() -> list[np.ndarray]:
    t = np.arange(SR * 3) / SR
    tone = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    return [tone[:int(SR * 1.3)], tone[:int(SR * 0.8)], tone[:int(SR * 2.1)]]


@pytest.mark.parametrize("fmt", ["pcm", "wav", "opus"])
def test_streamed_pieces_join_into_one_file_of_the_whole_take(fmt: str) -> None:
    pieces = _sentences()
    enc = encode.StreamEncoder(fmt, SR)
    out = [enc.start()]
    out += [enc.audio(p) for p in pieces]
    out.append(enc.end())
    body = b"".join(out)
    total = sum(len(p) for p in pieces)
    assert all(out[1:4]), "every sentence adds bytes as soon as it is encoded"
    if fmt == "pcm":
        assert body == encode.pcm16(np.concatenate(pieces))
        return
    if fmt == "wav":
        assert body[44:] == encode.pcm16(np.concatenate(pieces))
        return
    data, rate = sf.read(io.BytesIO(body), dtype="float32")
    assert rate == SR and len(data) == total  # Ogg/Opus decodes to the very length of the take
    whole, _ = sf.read(io.BytesIO(encode.encode(np.concatenate(pieces), SR, "opus")), dtype="float32")
    assert np.corrcoef(data, whole)[0, 1] > 0.99  # the same audio as the file encoded in one go


def test_flac_and_mp3_are_not_streamed() -> None:
    for fmt in ("flac", "mp3"):
        assert fmt not in encode.STREAMABLE
        with pytest.raises(ValueError):
            encode.StreamEncoder(fmt, SR)
