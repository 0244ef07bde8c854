"""Player: the callback logic (no device needed) and real playback on a PulseAudio null sink.

Device tests (``-m device``) use the server that ``scripts/pulse-null-sink.sh start`` runs
(PULSE_SERVER in the environment); if none is reachable they start one themselves when
pulseaudio is installed, and are skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnistudio.audio.player import Player
from support.wait import wait_until
from omnistudio.errors import UserError
from support.stream import open_stream
from support.wait import HANG_S

ROOT = Path(__file__).resolve().parents[1]
SR = 24_000
BLOCK = 480


def run_callback(player: Player, frames: int = BLOCK) -> np.ndarray:
    out = np.full((frames, 1), np.nan, dtype=np.float32)
    player._callback(out, frames, None, None)
    return out[:, 0].copy()


def test_callback_zero_fills_and_counts_underruns_only_when_audio_was_expected() -> None:
    player = Player(SR, ramp_ms=1)
    assert np.all(run_callback(player) == 0) and player.stats.underruns == 0  # idle: silence is normal
    data = np.linspace(-0.5, 0.5, 700, dtype=np.float32)
    player.write(data)
    first, second = run_callback(player), run_callback(player)
    np.testing.assert_array_equal(first, data[:BLOCK])
    np.testing.assert_array_equal(second[:220], data[BLOCK:])
    assert np.all(second[220:] == 0)
    assert player.stats.underruns == 1 and player.stats.underrun_frames == 260
    player.finish()
    run_callback(player)
    assert player.stats.underruns == 1  # finished: the silence after the end is not an underrun
    tap = np.zeros(2000, dtype=np.float32)
    n = player.tap.read_into(tap)
    np.testing.assert_array_equal(tap[:n], data)  # the tap holds exactly what was played
    assert player.stats.frames_played == 700 and player.stats.callbacks == 4


def test_callback_never_raises() -> None:
    player = Player(SR)
    bad = np.zeros((BLOCK, 1), dtype=np.float32)
    player._callback(bad, BLOCK * 4, None, None)  # frames larger than the buffer it was given
    assert np.all(bad == 0)


def test_stop_flushes_within_one_block() -> None:
    player = Player(SR)
    player.write(np.ones(SR, dtype=np.float32) * 0.25)
    run_callback(player)
    player.stop()
    assert np.all(run_callback(player) == 0)
    assert player.ring.available == 0 and player.stats.frames_played == BLOCK


def test_pause_resume_has_no_discontinuity_above_the_ramp() -> None:
    ramp_ms = 5.0
    player = Player(SR, ramp_ms=ramp_ms)
    t = np.arange(SR) / SR
    freq, amp = 220.0, 0.5
    signal = (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    player.write(signal)
    out = [run_callback(player) for _ in range(5)]
    player.pause()
    out += [run_callback(player) for _ in range(4)]
    paused_at = player.stats.frames_played
    out += [run_callback(player) for _ in range(3)]
    assert player.stats.frames_played == paused_at  # paused: nothing consumed
    player.resume()
    player.finish()
    while player.ring.available:
        out.append(run_callback(player))
    y = np.concatenate(out)
    ramp = int(ramp_ms * SR / 1000)
    max_step = amp * 2 * np.pi * freq / SR + amp / ramp  # signal slope + ramp slope
    assert np.max(np.abs(np.diff(y))) <= max_step * 1.01
    assert player.stats.frames_played == len(signal)  # every sample played, none lost or repeated
    # away from the two ramps the output is the signal itself
    np.testing.assert_array_equal(y[:5 * BLOCK], signal[:5 * BLOCK])
    nonzero = np.flatnonzero(y)
    np.testing.assert_array_equal(y[nonzero[-1] - 1000:nonzero[-1] + 1], signal[-1001:])


def test_bad_device_is_one_clear_error() -> None:
    with pytest.raises(UserError, match="no audio output device: .*render to a file with -o instead"):
        Player(SR, device="no-such-device-xyz").open()
    with pytest.raises(UserError, match="block size"):
        Player(SR, blocksize=-1)
    with pytest.raises(UserError, match="latency"):
        Player(SR, latency="fast")


# ------------------------------------------------------------------ device
class Recorder:
    """Records the default input (the sink's monitor) at 24 kHz mono."""

    def __init__(self) -> None:
        import sounddevice as sd

        self.parts: list[np.ndarray] = []
        self.stream = sd.InputStream(samplerate=SR, channels=1, dtype="float32", device="default",
                                     callback=lambda data, *_: self.parts.append(data[:, 0].copy()))

    def __enter__(self) -> Recorder:
        self.stream.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.stop()
        self.stream.close()

    @property
    def audio(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=np.float32)


@pytest.fixture(scope="module")
def clip(tiny_engine: Any, ref_wav: Path) -> np.ndarray:
    from omnistudio.engine.reference import Reference

    pcm = tiny_engine.synthesize("A short clip for the loopback test.",
                                 Reference(ref_wav, "This is the reference voice for our test."), num_step=4).pcm
    return (0.5 * pcm / np.max(np.abs(pcm))).astype(np.float32)


@pytest.mark.device
def test_playback_is_recorded_back_from_the_monitor(null_sink: str, clip: np.ndarray) -> None:
    """What the callback played is the clip, every sample in order (its tap holds them all), and what
    the sink's monitor recorded is the clip at the same level. Whether the callback ever found the ring
    dry is not asserted: a loaded machine may delay a callback; the counting itself is tested exactly
    above (test_callback_zero_fills_and_counts_underruns_only_when_audio_was_expected)."""
    tap_seconds = 2 * len(clip) / SR
    with Recorder() as rec, Player(SR, device=None, blocksize=BLOCK, tap_seconds=tap_seconds) as player:
        wait_until(lambda: len(rec.parts) > 0, timeout=HANG_S, what="the recorder running")
        player.write(clip)
        assert player.drain(timeout=HANG_S)
        time.sleep(0.3)
    assert player.stats.frames_played == len(clip) and player.stats.tap_dropped == 0
    tapped = np.zeros(len(clip) + BLOCK, dtype=np.float32)
    assert player.tap.read_into(tapped) == len(clip)
    np.testing.assert_array_equal(tapped[:len(clip)], clip)  # played in order, none lost or repeated
    assert len(rec.audio) > len(clip)
    # The sink runs at 48 kHz, so the delay can be a half sample at 24 kHz: align at 48 kHz.
    from scipy.signal import fftconvolve, resample_poly

    y = resample_poly(rec.audio, 2, 1)
    ref = resample_poly(clip, 2, 1)
    lag = int(np.argmax(fftconvolve(y, ref[::-1], mode="valid")))
    seg, clip = y[lag:lag + len(ref)], ref
    r = float(np.corrcoef(seg, clip)[0, 1])
    gain_db = 20 * np.log10(np.sqrt(np.mean(seg ** 2)) / np.sqrt(np.mean(clip ** 2)))
    assert r > 0.99, r
    assert abs(gain_db) < 0.5, gain_db


@pytest.mark.device
def test_stop_during_playback_plays_at_most_one_more_block(null_sink: str) -> None:
    with Player(SR, blocksize=BLOCK) as player:
        player.write(np.full(SR * 2, 0.1, dtype=np.float32))
        deadline = time.monotonic() + 10
        while player.stats.frames_played < 5 * BLOCK and time.monotonic() < deadline:
            time.sleep(0.005)
        at_stop = player.stats.frames_played
        calls = player.stats.callbacks
        player.stop()
        while player.stats.callbacks < calls + 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert player.stats.callbacks >= calls + 3
        assert at_stop > 0
        assert player.stats.frames_played - at_stop <= BLOCK
        assert player.ring.available == 0


@pytest.mark.device
def test_render_play_five_sentences_plays_every_sample_in_order(null_sink: str, ref_wav: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`render --play`: the device callback plays exactly the take handed to the player, in order, and
    the JSON reports the player's underrun count. The count itself is not asserted: rendering on a
    loaded machine can fall behind real time and leave the ring dry for a moment (the callback then
    zero-fills and counts; test_callback_zero_fills_and_counts_underruns_only_when_audio_was_expected)."""
    from omnistudio.cli import main

    written: list[np.ndarray] = []
    played: list[np.ndarray] = []
    players: list[Player] = []
    write, fill, init = Player.write, Player._fill, Player.__init__

    def recording_init(self: Player, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        players.append(self)

    def recording_write(self: Player, pcm: np.ndarray, timeout: float | None = None) -> int:
        done = write(self, pcm, timeout)
        written.append(np.asarray(pcm, dtype=np.float32).reshape(-1)[:done].copy())
        return done

    def recording_fill(self: Player, out: np.ndarray) -> int:
        got = fill(self, out)
        played.append(out[:got].copy())  # what the callback took from the ring (the rest is zero-filled)
        return got

    monkeypatch.setattr(Player, "__init__", recording_init)
    monkeypatch.setattr(Player, "write", recording_write)
    monkeypatch.setattr(Player, "_fill", recording_fill)
    script = tmp_path / "five.txt"  # four sentence boundaries in the ring, 10 s of real-time playback
    script.write_text("\n".join(f"Line {i}." for i in range(1, 6)))
    out = tmp_path / "five.wav"
    rc = main(["render", str(script), "-o", str(out), "--play", "--json", "--model", "tiny", "--device", "cpu",
               "--num-step", "4", "--ref-audio", str(ref_wav), "--ref-text",
               "This is the reference voice for our test.", "--blocksize", str(BLOCK)])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["played"] is True
    assert len(result["sentences"]) == 5
    assert out.exists()
    take = np.concatenate(written)
    assert take.size > SR and np.array_equal(np.concatenate(played), take)  # every sample, in order
    [player] = players
    assert result["underruns"] == player.stats.underruns and player.stats.frames_played == take.size


@pytest.mark.device
def test_cancel_mid_script_with_playback(null_sink: str, tiny_engine: Any, ref_wav: Path) -> None:
    from omnistudio.engine.reference import Reference

    voice = tiny_engine.prompt_for(Reference(ref_wav, "This is the reference voice for our test."))
    stop_now = threading.Event()
    with Player(SR, blocksize=BLOCK) as player:
        stream = open_stream(tiny_engine, "One. Two. Three. Four. Five.", voice, num_step=4)
        for chunk in stream:
            player.write(chunk.pcm)
            if chunk.sentence_id == 1:
                stream.cancel()
                player.stop()
                stop_now.set()
        at_stop = player.stats.frames_played
        assert stream.join(timeout=HANG_S)
        calls = player.stats.callbacks
        deadline = time.monotonic() + 10
        while player.stats.callbacks < calls + 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert stop_now.is_set() and stream.cancelled
        assert stream.steps <= 3 * 4  # sentences 0 and 1, and what of sentence 2 ran before the cancel
        assert player.stats.frames_played - at_stop <= BLOCK
