"""Normalised export reads back at target under the ceiling; SIGKILL mid-write keeps the old file."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnistudio.audio.profiles import check_target_lufs, check_true_peak
from omnistudio.audio.writer import write_audio
from omnistudio.audio.finishing import FinishingOptions, finish_pcm, Delivery, finish_render, SidecarRecord
from omnistudio.audio.loudness import analyze_file, measure
from omnistudio.commands.flags.finishing import add_finishing_options, finishing_options
from omnistudio.errors import UserError
from support.wait import HANG_S

SR = 24_000


def speechlike(seconds: float, seed: int = 0, f0: float = 140.0) -> np.ndarray:
    """Harmonics with a syllable envelope and a few sharp plosive-like peaks (crest about 20 dB)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    phase = 2 * np.pi * np.cumsum(f0 + 20 * np.sin(2 * np.pi * 0.7 * t)) / SR
    x = 0.05 * sum(np.sin(k * phase) / k for k in range(1, 8)) * (0.5 * (1 + np.sin(2 * np.pi * 4 * t))) ** 2
    for _ in range(int(seconds * 3)):
        i = int(rng.integers(0, x.size - 120))
        x[i:i + 120] += 0.5 * np.hanning(120) * rng.choice([-1.0, 1.0])
    return x.astype(np.float32)


@pytest.mark.parametrize("target", [-23.0, -16.0, -14.0])
@pytest.mark.parametrize("suffix", [".wav", ".flac"])
def test_finished_file_reads_back_at_target_under_ceiling(tmp_path: Path, target: float, suffix: str) -> None:
    chunks = [(speechlike(2.0, 1), 0.4, "s1"), (speechlike(1.5, 2, 180.0), 0.2, "s2"), (speechlike(2.5, 3), 0.0, "s3")]
    out = tmp_path / f"news{suffix}"
    result = finish_render(chunks, Delivery(out, SR, FinishingOptions(target_lufs=target, true_peak_db=-1.0),
                                             SidecarRecord(timings={"wall_s": 1.5, "rtf": 0.25})))
    report = analyze_file(out)
    assert report.integrated_lufs == pytest.approx(target, abs=0.5)
    assert report.true_peak_dbtp <= -1.0
    sidecar = json.loads((tmp_path / f"news{suffix}.json").read_text())
    assert sidecar == result.sidecar
    assert sidecar["loudness"]["integrated_lufs"] == pytest.approx(report.integrated_lufs, abs=0.01)
    assert sidecar["loudness"]["true_peak_dbtp"] <= -1.0 and sidecar["loudness"]["crest_factor_db"] > 10
    assert sidecar["loudness"]["channel_mode"] == "dual-mono"
    assert [s["id"] for s in sidecar["sentences"]] == ["s1", "s2", "s3"]
    assert sidecar["sentences"][1]["start_s"] == pytest.approx(sidecar["sentences"][0]["end_s"] + 0.4, abs=0.01)
    assert sidecar["sentences"][0]["breath_after"] and not sidecar["sentences"][1]["breath_after"]
    assert sidecar["timings"]["rtf"] == 0.25 and sidecar["timings"]["finishing_s"] > 0
    assert sidecar["settings"]["target_lufs"] == target


def test_room_tone_sits_at_minus_52_after_normalisation(tmp_path: Path) -> None:
    out = tmp_path / "a.wav"
    finish_render([(speechlike(2.0), 1.0), (speechlike(1.0), 0.0)], Delivery(out, SR, FinishingOptions(breaths=False)))
    pcm, _ = sf.read(out)
    gap = pcm[int(2.1 * SR):int(2.9 * SR)]
    assert 20 * np.log10(np.sqrt(np.mean(gap ** 2))) == pytest.approx(-52.0, abs=1.0)
    out2 = tmp_path / "b.wav"
    finish_render([(speechlike(2.0), 1.0), (speechlike(1.0), 0.0)],
                  Delivery(out2, SR, FinishingOptions(breaths=False, room_tone=False)))
    assert np.max(np.abs(sf.read(out2)[0][int(2.1 * SR):int(2.9 * SR)])) == 0.0


def test_finishing_limits_a_peaky_signal() -> None:
    """Loud targets push speech's peaks past the ceiling: the finishing's limiter holds them under it and
    the loudness still reaches the target; silence is refused with one line."""
    x = speechlike(6.0)
    loud = FinishingOptions(target_lufs=-12.0, true_peak_db=-1.0, room_tone=False, breaths=False)
    report = measure(finish_pcm([(x, 0.0)], SR, loud), SR)
    assert measure(x * 10 ** ((-12.0 - measure(x, SR).integrated_lufs) / 20), SR).true_peak_dbtp > -1.0  # needs it
    assert report.true_peak_dbtp <= -1.0
    assert report.integrated_lufs == pytest.approx(-12.0, abs=0.5)
    with pytest.raises(UserError, match="silent"):
        finish_pcm([(np.zeros(SR, dtype=np.float32), 0.0)], SR, loud)


@pytest.mark.parametrize("value,message", [("-80", "outside -70..0"), ("3", "outside -70..0"),
                                           ("loud", "not a number"), ("nan", "outside")])
def test_bad_target_loudness(value: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_target_lufs(value)


def test_presets_and_options_from_argparse() -> None:
    parser = argparse.ArgumentParser()
    add_finishing_options(parser)
    opts = finishing_options(parser.parse_args(["--target-lufs", "streaming", "--no-room-tone", "--shm", "take1"]))
    assert (opts.target_lufs, opts.room_tone, opts.breaths, opts.shm_name) == (-14.0, False, True, "take1")
    assert finishing_options(parser.parse_args([])) == FinishingOptions()
    atsc = finishing_options(parser.parse_args(["--profile", "atsc"]))  # a rule: its target and ceiling
    assert (atsc.target_lufs, atsc.true_peak_db, atsc.profile) == (-24.0, -2.0, "atsc")
    assert atsc.rule().name == "ATSC A/85" and atsc.rule().tolerance_lu == 2.0
    custom = finishing_options(parser.parse_args(["--profile", "podcast", "--target-lufs", "-18"]))
    assert (custom.target_lufs, custom.true_peak_db) == (-18.0, -1.0)  # --target-lufs overrides the rule's
    assert custom.rule().target_lufs == -18.0 and custom.rule().tolerance_lu == 1.0
    with pytest.raises(UserError, match="unknown loudness profile 'r128'"):
        finishing_options(parser.parse_args(["--profile", "r128"]))
    assert check_target_lufs("podcast") == -16.0 and check_true_peak("-2") == -2.0
    with pytest.raises(UserError, match="outside -70..0"):
        finishing_options(parser.parse_args(["--target-lufs", "-71"]))
    with pytest.raises(UserError, match="slash"):
        finishing_options(parser.parse_args(["--shm", "a/b"]))
    with pytest.raises(UserError, match="true-peak"):
        finishing_options(parser.parse_args(["--true-peak", "2"]))


def test_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"unknown output extension '.opus'.*use .wav, .flac, .mp3 or .m4a"):
        finish_render([(speechlike(1.0), 0.0)], Delivery(tmp_path / "x.opus", SR))
    with pytest.raises(UserError, match="unknown output extension"):
        write_audio(tmp_path / "x.ogg", np.zeros(10, dtype=np.float32), SR)


CHILD = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    from pathlib import Path
    from omnistudio.audio.writer import write_audio

    def stalled_fsync(fd):  # the samples are in the temp file; hold the export open until killed
        print("writing", flush=True)
        time.sleep(120)

    os.fsync = stalled_fsync
    write_audio(Path(sys.argv[1]), np.full(48_000 * 120, 0.25, dtype=np.float32), 48_000)
    print("finished", flush=True)
""")



def test_sigkill_mid_export_leaves_previous_file_intact(tmp_path: Path) -> None:
    out = tmp_path / "take.wav"
    previous = speechlike(1.0)
    write_audio(out, previous, SR)
    before = out.read_bytes()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "writing"
        temps = [p for p in tmp_path.iterdir() if p.name.startswith(".take.wav.")]
        assert temps and temps[0].stat().st_size > 48_000 * 120 * 4  # really mid-export, into a temp file
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=HANG_S)
    assert child.returncode == -signal.SIGKILL
    assert out.read_bytes() == before
    data, rate = sf.read(out, dtype="float32")
    assert rate == SR and np.array_equal(data, previous)
