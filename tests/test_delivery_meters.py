"""Delivery every loudness meter accepts: each profile's file read by FFmpeg's ``ebur128`` filter at its
defaults (integrated within 0.1 LU of the target the file states, true peak under the ceiling), loudness
range as EBU Tech 3342 measures it (10 Hz short-term) on real speech, 48 kHz/24-bit playout files read
back by mediainfo with their markers at the new sample positions, 16-bit TPDF dither, a unique EBU R99
OriginatorReference per file, what the file records read back by ``analyze``, and a missed target said."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from omnistudio.audio.bwf import read_broadcast
from omnistudio.audio.finishing import FinishingOptions, Delivery, finish_render
from omnistudio.audio.profiles import RULES, DeliveryFormat
from omnistudio.cli import main
from support.speech import GOOD, GLUE, MINISTER, flite

USID = re.compile(r"^[A-Z0-9]{2}[A-Z0-9]{3}[0-9A-F]{12}[0-9]{6}[0-9]{9}$")  # EBU R99: CC OOO serial HHMMSS random


@pytest.fixture(scope="module")
def chunks() -> list[tuple[np.ndarray, float]]:
    """Three flite sentences and the pauses after them: about 10 s of real speech at 24 kHz."""
    return [(flite(GOOD), 0.4), (flite(MINISTER, "awb"), 0.45), (flite(f"{GLUE} {MINISTER}"), 0.0)]


def ffmpeg_meter(path: Path) -> dict[str, float]:
    """Integrated loudness, loudness range and true peak as FFmpeg's ``ebur128`` filter reads the file."""
    if shutil.which("ffmpeg") is None:
        pytest.fail("ffmpeg is not installed: run scripts/system-deps.sh")
    out = subprocess.run(["ffmpeg", "-nostats", "-hide_banner", "-i", str(path), "-af", "ebur128=peak=true",
                          "-f", "null", "-"], capture_output=True, text=True, check=True, timeout=120).stderr
    summary = out[out.rindex("Summary:"):]
    grab = {key: float(re.search(rf"{key}:\s+(-?[0-9.]+)", summary).group(1))  # type: ignore[union-attr]
            for key in ("I", "LRA", "Peak")}
    return {"integrated": grab["I"], "lra": grab["LRA"], "true_peak": grab["Peak"]}


def sidecar(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.with_name(path.name + ".json").read_text()))


@pytest.mark.parametrize("key", list(RULES))
@pytest.mark.parametrize("channels", [1, 2])
def test_every_meter_reads_the_target_the_file_states(key: str, channels: int, chunks: list[Any],
                                                      tmp_path: Path) -> None:
    rule = RULES[key]
    options = FinishingOptions.for_rule(rule, rule.format(channels=channels))
    out = tmp_path / f"{key}.wav"
    done = finish_render(chunks, Delivery(out, 24_000, options))
    target = rule.for_file(channels).target_lufs
    measured = ffmpeg_meter(out)
    assert measured["integrated"] == pytest.approx(target, abs=0.1)
    assert measured["true_peak"] <= rule.true_peak_dbtp
    stated = done.sidecar["loudness"]
    assert stated["integrated_lufs"] == pytest.approx(measured["integrated"], abs=0.1)
    assert stated["channel_mode"] == ("stereo" if channels == 2 else "mono") and stated["channels"] == channels
    assert sf.info(str(out)).channels == channels
    back = read_broadcast(out, sf.info(str(out)).samplerate)
    assert f"profile={key}" in back.ixml["USER"] and f"loudness_measurement={stated['channel_mode']}" in back.ixml["USER"]
    # analyze reads the rule and the measurement the file records: a pass, with no flag given
    assert main(["analyze", str(out), "--strict"]) == 0
    other = "ebu" if key != "ebu" else "podcast"  # --profile still overrides what the file records
    assert main(["analyze", str(out), "--profile", other, "--strict"]) == 3


def test_mono_stereo_targets_follow_the_published_rules() -> None:
    assert RULES["ebu"].for_file(1).target_lufs == -23.0 and RULES["atsc"].for_file(1).target_lufs == -24.0
    assert RULES["podcast"].for_file(1).target_lufs == -19.0 and RULES["podcast"].for_file(2).target_lufs == -16.0
    assert RULES["streaming"].for_file(1).target_lufs == -17.0
    assert RULES["ebu"].delivery == DeliveryFormat(2, 48_000, 24) == RULES["atsc"].delivery


def test_loudness_range_is_tech_3342_s_on_speech(chunks: list[Any], tmp_path: Path) -> None:
    """Short-term loudness at 10 Hz (Tech 3342 v3), not libebur128's once a second (0.5-0.7 LU low on speech):
    FFmpeg's meter within 0.1 LU, and Tech 3342's own computation on libebur128's 10 Hz readings."""
    import pyebur128 as eb

    from omnistudio.audio.loudness import analyze_file

    pause = np.zeros(int(0.4 * 24_000), dtype=np.float32)
    speech = np.concatenate([part for pcm, _gap in chunks for part in (pcm, pause)] * 2)  # 21.6 s
    path = tmp_path / "speech.wav"
    sf.write(str(path), speech, 24_000, subtype="FLOAT")
    ours = analyze_file(path, mono_as="mono").loudness_range_lu
    theirs = ffmpeg_meter(path)["lra"]
    assert theirs > 1.0 and ours == pytest.approx(theirs, abs=0.1)
    state, step, readings = eb.R128State(1, 24_000, eb.MeasurementMode.MODE_S), 2_400, []
    for start in range(0, speech.size - speech.size % step, step):
        state.add_frames(speech[start:start + step].astype(np.float64), step)
        if start + step >= 3 * 24_000:
            readings.append(eb.get_loudness_shortterm(state))
    gated = np.array([v for v in readings if v > -70])
    gated = np.sort(gated[gated >= 10 * np.log10(np.mean(10 ** (gated / 10))) - 20])
    last = gated.size - 1
    assert ours == pytest.approx(gated[int(last * 0.95 + 0.5)] - gated[int(last * 0.10 + 0.5)], abs=0.01)


def test_playout_file_is_48k_24_bit_with_markers_at_the_new_positions(chunks: list[Any], tmp_path: Path) -> None:
    from omnistudio.audio.bwf import riff_chunks

    out = tmp_path / "playout.wav"
    options = FinishingOptions.for_rule(RULES["ebu"])
    finish_render(chunks, Delivery(out, 24_000, options))
    if shutil.which("mediainfo") is None:
        pytest.fail("mediainfo is not installed: run scripts/system-deps.sh")
    tracks = json.loads(subprocess.run(["mediainfo", "--Output=JSON", str(out)], capture_output=True, text=True,
                                       check=True).stdout)["media"]["track"]
    audio = next(t for t in tracks if t["@type"] == "Audio")
    assert (audio["SamplingRate"], audio["BitDepth"], audio["Channels"]) == ("48000", "24", "2")
    starts = [row["start_s"] for row in sidecar(out)["sentences"]]
    cue = riff_chunks(out)[b"cue "]  # type: ignore[index]
    points = [int.from_bytes(cue[4 + 24 * n + 20:4 + 24 * n + 24], "little") for n in range(len(starts))]
    assert starts[1] > 1.0 and points == [pytest.approx(s * 48_000, abs=2) for s in starts]
    history = out.read_bytes()
    assert b"A=PCM,F=48000,W=24,M=dual-mono" in history


def test_sixteen_bits_are_dithered(chunks: list[Any], tmp_path: Path) -> None:
    out = tmp_path / "sixteen.wav"
    options = FinishingOptions.for_rule(RULES["ebu"], RULES["ebu"].format(bits=16), room_tone=False, breaths=False)
    rows = finish_render(chunks, Delivery(out, 24_000, options)).sidecar["sentences"]
    data, rate = sf.read(str(out), dtype="int16")
    assert sf.info(str(out)).subtype == "PCM_16" and rate == 48_000
    middle = (rows[0]["end_s"] + rows[1]["start_s"]) / 2  # the pause after the first sentence: silence
    pause = data[int((middle - 0.05) * rate):int((middle + 0.05) * rate), 0]
    assert pause.any() and np.abs(pause).max() <= 2  # TPDF noise of one LSB either way, not digital zero


def test_originator_reference_is_unique_per_file(chunks: list[Any], tmp_path: Path) -> None:
    refs = []
    for n in range(3):  # a running order's three stories, one seed, one length of description: three references
        out = tmp_path / f"story{n}.wav"
        finish_render(chunks[n:n + 1], Delivery(out, 24_000))
        refs.append(read_broadcast(out, 24_000).reference)
    assert len(set(refs)) == 3 and all(USID.match(ref or "") for ref in refs), refs
    again = tmp_path / "again.wav"  # the same take written again: the same file, byte for byte
    finish_render(chunks[:1], Delivery(again, 24_000))
    assert again.read_bytes() == (tmp_path / "story0.wav").read_bytes()


def test_a_missed_target_is_said_and_strict_makes_it_an_error(tmp_path: Path, ref_wav: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from support.audio import REF_TEXT

    script = tmp_path / "loud.txt"
    script.write_text("Good evening and welcome to the news desk.\n", encoding="utf-8")
    common = ["--profile", "streaming", "--target-lufs", "-4", "--model", "tiny", "--device", "cpu", "--num-step", "2",
              "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT]
    assert main(["render", str(script), "-o", str(tmp_path / "a.wav"), *common]) == 0
    warned = capsys.readouterr().err
    assert "warning:" in warned and "asked for -4 LUFS, delivered" in warned and "ceiling" in warned
    missed = sidecar(tmp_path / "a.wav")["target_missed"]
    assert missed["asked_lufs"] == -4 and missed["delivered_lufs"] < -4.2
    assert main(["render", str(script), "-o", str(tmp_path / "b.wav"), *common, "--strict"]) == 3
    assert "error:" in capsys.readouterr().err
    assert main(["render", str(script), "-o", str(tmp_path / "c.wav"), "--profile", "streaming", "--strict",
                 *common[4:]]) == 0
    assert "target_missed" not in sidecar(tmp_path / "c.wav")


def test_long_chapter_titles_are_cut_to_what_readers_list(chunks: list[Any], tmp_path: Path) -> None:
    from omnistudio.audio.bwf import Broadcast, Marker
    from omnistudio.audio.writer import write_audio

    long = "Últimas noticias: " + "la lluvia vuelve al norte y el sol al sur " * 6
    pcm = np.concatenate([pcm for pcm, _gap in chunks])
    out = tmp_path / "chapters.mp3"
    write_audio(out, pcm, 24_000, Broadcast(title="news", chapters=(Marker(0.0, "Headlines"), Marker(3.0, long))))
    probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_chapters", "-of", "json", str(out)],
                                      capture_output=True, text=True, check=True).stdout)["chapters"]
    titles = [c["tags"]["title"] for c in probe]
    assert len(titles) == 2 and titles[0] == "Headlines"
    assert long.startswith(titles[1][:-1]) and titles[1].endswith("…") and len(titles[1].encode()) <= 120
