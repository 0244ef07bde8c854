"""Playback through a sounddevice OutputStream fed from a ring buffer.

The PortAudio callback only pulls from the ring into the output buffer,
zero-fills what the ring cannot supply (and counts an underrun when audio was
expected), applies the pause/resume gain ramp in place, and copies what it
played into a tap ring for the meter. It never raises, takes no locks, logs
nothing and allocates no sample arrays (all buffers are made in ``__init__``).

Producer side (any one thread): ``write`` (blocks while the ring is full),
``finish`` (no more audio is coming: silence from now on is not an underrun),
``drain``, ``pause``/``resume``, ``stop`` (flushes what is queued; at most the
block being played still sounds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from omnistudio.audio.ring import Ring
from omnistudio.errors import UserError, first_line

if TYPE_CHECKING:
    from sounddevice import CallbackFlags, OutputStream

DEFAULT_RING_SECONDS = 30.0
DEFAULT_TAP_SECONDS = 2.0
DEFAULT_RAMP_MS = 10.0
# PortAudio's "high" latency on ALSA's pulse plugin is 35 ms: shorter than the GIL holds of an
# engine thread, and PortAudio flagged output underflows with it while the ring was never dry
# (7-12 per 22 s render through the null sink; "low": 153; 0.1 s: 3; 0.2 s: none, in runs here).
DEFAULT_LATENCY_S = 0.2
MAX_BLOCK = 16_384  # largest callback block handled in one pass (bigger ones loop)


@dataclass(frozen=True)
class PlayerStats:
    """What the callback counted."""

    callbacks: int
    underruns: int  # blocks that needed audio the ring did not have
    underrun_frames: int
    xruns: int  # PortAudio's own output-underflow flags
    frames_played: int  # frames taken from the ring
    tap_dropped: int  # frames not copied to the tap ring because it was full


def _no_device(reason: str) -> UserError:
    return UserError(f"no audio output device: {reason}; render to a file with -o instead")


class Player:
    """Mono float32 playback at ``sample_rate`` on ``device`` (None: the default output)."""

    def __init__(
        self,
        sample_rate: int = 24_000,
        device: int | str | None = None,
        blocksize: int = 0,
        latency: float | str = DEFAULT_LATENCY_S,
        ring_seconds: float = DEFAULT_RING_SECONDS,
        tap_seconds: float = DEFAULT_TAP_SECONDS,
        ramp_ms: float = DEFAULT_RAMP_MS,
    ) -> None:
        if blocksize < 0 or blocksize > MAX_BLOCK:
            raise UserError(f"block size {blocksize} is out of range 0..{MAX_BLOCK} (0: let the device choose)")
        if isinstance(latency, str) and latency not in {"low", "high"}:
            raise UserError(f"latency '{latency}' must be low, high or a number of seconds")
        if not isinstance(latency, str) and not 0 < float(latency) <= 2.0:
            raise UserError(f"latency {latency} s is out of range (0, 2]")
        self.sample_rate = int(sample_rate)
        self.device = device
        self.blocksize = int(blocksize)
        self.latency = latency
        self.ring = Ring(int(ring_seconds * sample_rate))
        self.tap = Ring(int(tap_seconds * sample_rate))
        self._scratch = np.zeros(MAX_BLOCK, dtype=np.float32)
        self._ramp_len = max(1, int(ramp_ms * sample_rate / 1000))
        # gain at ramp position p is _ramp[p] = p / R; position R is full gain.
        self._ramp = np.arange(self._ramp_len + 1, dtype=np.float32) / np.float32(self._ramp_len)
        self._ramp_pos = self._ramp_len
        self._paused = False  # target of the ramp: False -> gain 1, True -> gain 0
        self._flush_request = 0  # producer increments; callback drops the ring when it sees a new value
        self._flush_seen = 0
        self._expecting = False  # producer has audio coming: an empty ring is an underrun
        self._callbacks = 0
        self._underruns = 0
        self._underrun_frames = 0
        self._xruns = 0
        self._played = 0
        self._tap_dropped = 0
        self._stream: OutputStream | None = None
        self._closed = False

    # ------------------------------------------------------------------ setup
    def open(self) -> Player:
        """Open and start the output stream, or raise one clear UserError."""
        try:
            # lazy: start-up (sounddevice)
            import sounddevice as sd
        except OSError as exc:  # PortAudio library missing
            raise _no_device(f"PortAudio is not available ({first_line(exc)})") from None
        try:
            if self.device is None:
                default = sd.default.device[1] if isinstance(sd.default.device, (list, tuple)) else sd.default.device
                if default is None or (isinstance(default, int) and default < 0):
                    raise _no_device("the system has no default output device")
            else:
                sd.query_devices(self.device, "output")
            self._stream = sd.OutputStream(
                samplerate=self.sample_rate, blocksize=self.blocksize, device=self.device, channels=1,
                dtype="float32", latency=self.latency, callback=self._callback,
            )
            self._stream.start()
        except UserError:
            raise
        except (sd.PortAudioError, ValueError) as exc:
            self._stream = None
            name = "the default device" if self.device is None else f"device {self.device!r}"
            raise _no_device(f"cannot open {name} ({first_line(exc)})") from None
        return self

    def __enter__(self) -> Player:
        return self.open() if self._stream is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- callback
    def _callback(self, outdata: np.ndarray, frames: int, time_info: object, status: CallbackFlags) -> None:
        try:
            self._callbacks += 1
            if status and status.output_underflow:
                self._xruns += 1
            out = outdata[:, 0]
            if self._flush_request != self._flush_seen:
                self._flush_seen = self._flush_request
                self.ring.skip()
            done = 0
            short = 0
            while done < frames:
                n = min(frames - done, MAX_BLOCK)
                got = self._fill(out[done:done + n])
                short += n - got
                done += n
            if short and self._expecting and not self._paused:
                self._underruns += 1
                self._underrun_frames += short
        except BaseException:  # noqa: BLE001 - the audio thread must never raise
            outdata.fill(0)

    def _fill(self, out: np.ndarray) -> int:
        """Fill ``out`` (zero-padded); return the frames that came from the ring."""
        n = len(out)
        # While pausing only the rest of the fade-out is taken from the ring, so
        # resume continues exactly where the fade ended.
        want = min(n, self._ramp_pos) if self._paused else n
        got = self.ring.read_into(self._scratch[:want]) if want else 0
        if got < n:
            self._scratch[got:n] = 0.0
        if got:
            self._apply_ramp(self._scratch[:got])
            written = self.tap.write(self._scratch[:got])
            self._tap_dropped += got - written
            self._played += got
        out[:] = self._scratch[:n]
        return got

    def _apply_ramp(self, buf: np.ndarray) -> None:
        """Scale ``buf`` in place by the pause/resume ramp and advance it."""
        pos, R, m = self._ramp_pos, self._ramp_len, len(buf)
        if self._paused:  # fading out through gains (pos-1)/R ... (pos-m)/R; m <= pos
            buf *= self._ramp[pos - m:pos][::-1]
            self._ramp_pos = pos - m
        elif pos < R:  # fading in through gains (pos+1)/R ... R/R
            k = min(m, R - pos)
            buf[:k] *= self._ramp[pos + 1:pos + 1 + k]
            self._ramp_pos = pos + k

    # ---------------------------------------------------------------- producer
    def write(self, pcm: np.ndarray, timeout: float | None = None) -> int:
        """Queue ``pcm``; wait while the ring is full. Returns frames queued (fewer if stopped or timed out)."""
        data = np.asarray(pcm, dtype=np.float32).reshape(-1)
        self._expecting = True
        deadline = None if timeout is None else time.monotonic() + timeout
        done = 0
        wait = max(0.002, self.ring.capacity / self.sample_rate / 8)
        while done < len(data) and not self._closed:
            done += self.ring.write(data[done:])
            if done < len(data):
                if deadline is not None and time.monotonic() >= deadline:
                    break
                time.sleep(min(wait, 0.05))
        return done

    def finish(self) -> None:
        """No more audio is coming for now: silence after the queue ends is not an underrun."""
        self._expecting = False

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until everything queued has been played (or paused forever: respect ``timeout``)."""
        self.finish()
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.ring.available and self._stream is not None and not self._closed:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        if self._stream is not None:  # let the device play out its own buffer
            time.sleep(float(getattr(self._stream, "latency", 0.0) or 0.0))
        return not self.ring.available

    def pause(self) -> None:
        """Fade out over the ramp, then output silence without consuming the queue."""
        self._paused = True

    def resume(self) -> None:
        """Fade back in from where the queue stopped."""
        self._paused = False

    @property
    def paused(self) -> bool:
        return self._paused

    def stop(self) -> None:
        """Drop everything queued; the callback flushes on its next block."""
        self._expecting = False
        self._flush_request += 1

    def close(self) -> None:
        self.stop()
        self._closed = True
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                stream.stop()
            finally:
                stream.close()

    # ------------------------------------------------------------------ stats
    @property
    def stats(self) -> PlayerStats:
        return PlayerStats(self._callbacks, self._underruns, self._underrun_frames, self._xruns,
                           self._played, self._tap_dropped)

    @property
    def queued_seconds(self) -> float:
        return self.ring.available / self.sample_rate
