"""A take's audio in ElevenLabs' ``output_format``s, piece by piece, with each character's time.

:class:`XiEncoder` converts the engine's 24 kHz pieces to the format's rate (libsoxr, one stream per
take: pieces join without a seam) and encodes them: ``pcm_*`` as 16-bit little-endian samples, ``mp3_*``
as one MP3 stream (FFmpeg's LAME through PyAV: frames as they fill, no header to rewrite). :func:`char_alignment` spreads a
sentence's characters over its piece evenly: an estimate (the engine does not say when each character
is spoken), enough for a framework to follow the words being said (Pipecat builds its word frames from it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from omnistudio.audio.finishing import rate_converter
from omnistudio.protocol.elevenlabs import XiAlignment, XiFormat, XiTimedAlignment
from omnistudio.server.encode import pcm16


class XiEncoder:
    """One take's pieces at ``rate`` as ``fmt``'s bytes; :meth:`end` gives what the converter held back."""

    def __init__(self, fmt: XiFormat, rate: int) -> None:
        self.fmt, self.rate = fmt, rate  # rate: the take's (what comes in)
        self._convert = rate_converter(rate, fmt.sample_rate)
        self._mp3: Any = None
        self._pts = 0
        if fmt.codec == "mp3":
            # lazy: start-up (av)
            import av

            self._mp3 = av.CodecContext.create("libmp3lame", "w")
            self._mp3.sample_rate, self._mp3.layout, self._mp3.format = fmt.sample_rate, "mono", "fltp"
            self._mp3.bit_rate = (fmt.kbps or 128) * 1000

    def audio(self, pcm: np.ndarray) -> bytes:
        return self._encode(self._convert(np.asarray(pcm, dtype=np.float32), False), last=False)

    def end(self) -> bytes:
        return self._encode(self._convert(np.zeros(0, dtype=np.float32), True), last=True)

    def _encode(self, pcm: np.ndarray, last: bool) -> bytes:
        if self._mp3 is None:
            return pcm16(pcm) if len(pcm) else b""
        # lazy: start-up (av)
        import av

        out = bytearray()
        frames: list[Any] = []
        if len(pcm):
            frame = av.AudioFrame.from_ndarray(np.clip(pcm, -1.0, 1.0).astype(np.float32).reshape(1, -1),
                                               format="fltp", layout="mono")
            frame.sample_rate, frame.pts = self.fmt.sample_rate, self._pts
            self._pts += frame.samples
            frames.append(frame)
        if last:
            frames.append(None)  # the encoder's last frames
        for frame in frames:
            for packet in self._mp3.encode(frame):
                out += bytes(packet)
        return bytes(out)


def char_alignment(text: str, seconds: float) -> XiAlignment:
    """``text`` (and a space after it, so the next sentence's first word stays apart) spread evenly over
    ``seconds``: each character's start and duration in whole ms, the durations summing to the span."""
    chars = list(text) + [" "] if text else []
    total = max(0, round(seconds * 1000))
    edges = [round(total * k / len(chars)) for k in range(len(chars) + 1)] if chars else [0]
    return XiAlignment(chars=chars, charStartTimesMs=edges[:-1],
                       charDurationsMs=[b - a for a, b in zip(edges[:-1], edges[1:])])


def timed_alignment(text: str, seconds: float, offset_s: float) -> XiTimedAlignment:
    """:func:`char_alignment` in seconds from the take's start (``offset_s``: where this piece begins)."""
    spread = char_alignment(text, seconds)
    starts = [offset_s + ms / 1000 for ms in spread.charStartTimesMs]
    ends = [start + ms / 1000 for start, ms in zip(starts, spread.charDurationsMs)]
    return XiTimedAlignment(characters=spread.chars, character_start_times_seconds=starts,
                            character_end_times_seconds=ends)
