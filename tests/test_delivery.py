"""Delivery files a broadcast chain accepts, read back by tools nobody here wrote: mediainfo and wavinfo
(Broadcast Wave: bext v2 loudness, iXML, a cue marker per sentence, a region per story), ffprobe (the
chapters of MP3 and M4A at the story boundaries; FLAC's tags and cue sheet), headless Chromium (the
compliance report's loudness plot); each rule's loudness and ceiling; damaged chunks as one line."""

from __future__ import annotations

import base64
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from omnistudio.cli import main
from support.audio import REF_TEXT

SCRIPT = """# Headlines
Good evening. Here is the news from Madrid.
[story Weather] Rain tomorrow in the north.
Sun returns on Friday.
## Sport
The final ends in a draw.
"""
STORIES = ["Headlines", "Weather", "Sport"]
SENTENCES = ["Good evening.", "Here is the news from Madrid.", "Rain tomorrow in the north.", "Sun returns on Friday.",
             "The final ends in a draw."]
# format: (profile, target, ceiling, tolerance of the decoded loudness)
# (profile, the file's target as a meter reads it, ceiling, tolerance): the podcast and streaming files are one
# channel, 3 LU under the stereo target (AES TD1004)
OUTPUTS = {"wav": ("ebu", -23.0, -1.0, 0.5), "flac": ("atsc", -24.0, -2.0, 1.0), "mp3": ("podcast", -19.0, -1.0, 0.5),
           "m4a": ("streaming", -17.0, -1.0, 0.5)}


def tool(*args: str) -> str:
    if shutil.which(args[0]) is None:
        pytest.fail(f"{args[0]} is not installed: run scripts/system-deps.sh")
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=120).stdout


def analyze(path: Path, *extra: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "omnistudio.cli", "analyze", str(path), "--json", *extra],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    return dict(json.loads(out))


@pytest.fixture(scope="module")
def delivered(tmp_path_factory: pytest.TempPathFactory, ref_wav: Path, tiny_engine: object) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("delivery")
    script = folder / "bulletin.txt"
    script.write_text(SCRIPT, encoding="utf-8")
    files = {}
    for fmt, (profile, *_rest) in OUTPUTS.items():
        out = folder / f"bulletin.{fmt}"
        assert main(["render", str(script), "-o", str(out), "--profile", profile, "--model", "tiny", "--device", "cpu",
                     "--num-step", "2", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT,
                     *(["--report"] if fmt == "wav" else [])]) == 0
        files[fmt] = out
    return files


def sidecar(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.with_name(path.name + ".json").read_text()))


def story_starts(path: Path) -> list[float]:
    """Where each story starts: its first sentence's start in the sidecar."""
    rows = sidecar(path)
    stories = [row["story"] for row in rows["timings"]["sentences"]]
    return [span["start_s"] for k, span in enumerate(rows["sentences"]) if k == 0 or stories[k] != stories[k - 1]]


def test_broadcast_wave_is_read_by_mediainfo_and_wavinfo(delivered: dict[str, Path]) -> None:
    from wavinfo import WavInfoReader

    wav = delivered["wav"]
    figures = analyze(wav)
    general, audio = json.loads(tool("mediainfo", "--Output=JSON", str(wav)))["media"]["track"][:2]
    assert general["Producer"] == "OmniStudio" and general["extra"]["bext_Version"] == "2"
    assert general["Description"].startswith("bulletin: 5 sentences")
    loudness = audio["extra"]
    for field, key in (("LoudnessValue", "integrated_lufs"), ("LoudnessRange", "loudness_range_lu"),
                       ("MaxTruePeakLevel", "true_peak_dbtp"), ("MaxMomentaryLoudness", "momentary_max_lufs"),
                       ("MaxShortTermLoudness", "short_term_max_lufs")):
        assert float(loudness[field]) == pytest.approx(figures[key], abs=0.1), field
    # EBU R128: -23 +- 0.5 LUFS, true peak <= -1 dBTP
    assert abs(figures["integrated_lufs"] + 23.0) <= 0.5 and figures["true_peak_dbtp"] <= -1.0
    assert figures["passed"] and figures["rule"] == "EBU R128"

    info = WavInfoReader(str(wav), info_encoding="utf-8")
    assert (info.ixml.project, info.ixml.scene) == ("bulletin", "bulletin") and info.ixml.take == "seed 0"
    user = dict(line.split("=", 1) for line in info.ixml.parsed.find("USER").text.splitlines())
    assert user["model"] == "tiny" and user["seed"] == "0" and user["num_step"] == "2" and "dtype" in user
    rows, rate = sidecar(wav)["sentences"], sf.info(str(wav)).samplerate
    cues = [(cue[1], *info.cues.label_and_note(cue[0])[:1], info.cues.range(cue[0])) for cue in info.cues.each_cue()]
    points = [(at, text) for at, text, length in cues if length is None]
    regions = [(at, text, length) for at, text, length in cues if length is not None]
    assert [text for _at, text in points] == SENTENCES  # one marker per sentence, labelled with its words
    for (at, _text), row in zip(points, rows):  # at the sentence's start sample (the sidecar's 0.1 ms)
        assert abs(at - row["start_s"] * rate) <= 3
    assert [text for _at, text, _n in regions] == STORIES
    starts = story_starts(wav)
    assert [at for at, _t, _n in regions] == pytest.approx([s * rate for s in starts], abs=3)
    assert regions[-1][0] + regions[-1][2] == pytest.approx(rows[-1]["end_s"] * rate, abs=3)


def test_a_broadcast_wave_still_reads_everywhere(delivered: dict[str, Path]) -> None:
    from scipy.io import wavfile

    wav = delivered["wav"]
    data, rate = sf.read(str(wav), dtype="float32")  # EBU R128's playout file: 48 kHz, 24-bit, dual-mono
    assert rate == 48_000 and data.shape[1] == 2 and np.array_equal(data[:, 0], data[:, 1])
    assert len(data) / rate == pytest.approx(sidecar(wav)["duration_s"], abs=1e-3)
    with pytest.warns(wavfile.WavFileWarning):  # scipy names the chunks it skips (bext, iXML, cue, LIST)
        rate2, data2 = wavfile.read(str(wav))
    assert rate2 == rate and np.array_equal(data2.astype(np.float64) / 2**31, data.astype(np.float64))
    probe = json.loads(tool("ffprobe", "-v", "error", "-show_streams", "-of", "json", str(wav)))["streams"][0]
    assert probe["codec_name"] == "pcm_s24le" and int(probe["sample_rate"]) == rate and probe["channels"] == 2


def test_flac_has_tags_chapters_and_a_cue_sheet_and_meets_atsc(delivered: dict[str, Path]) -> None:
    from mutagen.flac import FLAC

    flac = delivered["flac"]
    figures = analyze(flac, "--profile", "atsc")
    assert abs(figures["integrated_lufs"] + 24.0) <= 1.0 and figures["true_peak_dbtp"] <= -2.0 and figures["passed"]
    tags = FLAC(str(flac))
    assert tags["TITLE"] == ["bulletin"] and float(tags["LOUDNESS_INTEGRATED_LUFS"][0]) == pytest.approx(
        figures["integrated_lufs"], abs=0.1)
    assert [tags[f"CHAPTER{n:03d}NAME"][0] for n in (1, 2, 3)] == STORIES
    rate = tags.info.sample_rate
    tracks = [t for t in tags.cuesheet.tracks if t.track_number != 255]
    assert [t.start_offset for t in tracks] == pytest.approx([r["start_s"] * rate for r in sidecar(flac)["sentences"]],
                                                             abs=3)


@pytest.mark.parametrize("fmt", ["mp3", "m4a"])
def test_podcast_files_have_chapters_at_the_stories_and_the_rule_s_loudness(fmt: str, delivered: dict[str, Path]) -> None:
    path = delivered[fmt]
    probe = json.loads(tool("ffprobe", "-v", "error", "-show_chapters", "-show_format", "-of", "json", str(path)))
    chapters = probe["chapters"]
    assert [c["tags"]["title"] for c in chapters] == STORIES
    assert [float(c["start_time"]) for c in chapters] == pytest.approx(story_starts(path), abs=0.010)
    assert probe["format"]["tags"]["title"] == "bulletin"
    _profile, target, _ceiling, _tol = OUTPUTS[fmt]
    decoded = analyze(path, "--profile", OUTPUTS[fmt][0])  # decoded by libsndfile (MP3) or FFmpeg (M4A)
    assert abs(decoded["integrated_lufs"] - target) <= 0.5


def test_compliance_report_opens_in_chromium_with_the_loudness_plot(delivered: dict[str, Path], tmp_path: Path) -> None:
    from PIL import Image

    report = delivered["wav"].with_name("bulletin.report.html")
    page = report.read_text(encoding="utf-8")
    assert "EBU R128: PASS" in page.replace("\n", " ") and all(s in page for s in STORIES + SENTENCES)
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.fail("chromium is not installed: run scripts/system-deps.sh")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600"]
    dom = subprocess.run([browser, *flags, "--dump-dom", report.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    img = dom.split('id="loudness-plot"', 1)[0].rsplit("<img", 1)[1] + dom.split('id="loudness-plot"', 1)[1].split(">", 1)[0]
    svg = base64.b64decode(img.split("data:image/svg+xml;base64,", 1)[1].split('"', 1)[0]).decode("utf-8")
    assert svg.count("<path") > 10 and "short-term" in svg
    shot = tmp_path / "shot.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", report.as_uri()], capture_output=True, timeout=120,
                   check=True)
    pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3).astype(int)
    line = np.abs(pixels - np.array([0x0B, 0x3D, 0x91])).sum(axis=1) < 40  # the short-term curve's blue
    band = np.abs(pixels - np.array([0xC6, 0xE7, 0xC6])).sum(axis=1) < 40  # the target band, drawn at 45 %
    assert line.sum() > 300 and band.sum() > 5000, (line.sum(), band.sum())


def _chunk_at(data: bytes, kind: bytes) -> int:
    at = 12
    while data[at:at + 4] != kind:
        at += 8 + struct.unpack("<I", data[at + 4:at + 8])[0]
        at += at % 2
    return at


@pytest.mark.parametrize("damage", ["bext", "iXML", "cue"])
def test_a_damaged_broadcast_chunk_is_one_line(damage: str, delivered: dict[str, Path], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(delivered["wav"].read_bytes())
    kind = {"bext": b"bext", "iXML": b"iXML", "cue": b"cue "}[damage]
    at = _chunk_at(bytes(data), kind)
    if damage == "bext":  # shorter than bext's fixed fields: the same bytes, a chunk 100 bytes long and a filler
        size = struct.unpack("<I", data[at + 4:at + 8])[0]
        data[at + 4:at + 8] = struct.pack("<I", 100)
        data[at + 108:at + 116] = b"JUNK" + struct.pack("<I", size - 108 + size % 2)
    elif damage == "iXML":
        data[at + 8:at + 20] = b"<BWFXML><oop"
    else:
        data[at + 8:at + 12] = struct.pack("<I", 9999)
    bad = tmp_path / "damaged.wav"
    bad.write_bytes(bytes(data))
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("omnistudio: error:") and "\n" not in err and "Traceback" not in err, err
    assert f"{kind.decode().strip()} chunk is damaged" in err, err


def test_a_rule_is_checked_and_strict_fails(delivered: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    wav = delivered["wav"]  # made to EBU R128: -23 LUFS, outside the podcast rule's -16 +- 1
    assert main(["analyze", str(wav), "--profile", "podcast"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" in out and "loudness outside the tolerance" in out
    assert main(["analyze", str(wav), "--profile", "podcast", "--strict"]) == 3
    capsys.readouterr()
    assert main(["analyze", str(wav), "--profile", "bbc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "omnistudio: error: unknown loudness profile 'bbc': use one of ebu, atsc, podcast, streaming"


def test_a_file_without_stories_is_chaptered_by_paragraph_and_titled_by_its_first_words() -> None:
    """broadcast_info() on its own: no story in the script, so a chapter at each script line's first sentence,
    titled by that sentence's words; a marker per sentence; the title the first sentence's words."""
    from omnistudio.audio.dsp import SentenceSpan
    from omnistudio.take.delivery import broadcast_info
    from omnistudio.take.rows import SentenceRow

    def row(i: int, line: int, text: str) -> SentenceRow:
        return SentenceRow(i, line, "ruby", "en", text, None, text, 10, 1.0, 1.0, 1.0, 0.0, None, "ruby", 7)

    rows = [row(0, 1, "Good evening."), row(1, 1, "Rain tonight."), row(2, 2, "In sport, a win.")]
    spans = [SentenceSpan(k, 2.0 * k, 2.0 * k + 1.5, k) for k in range(3)]
    info = broadcast_info(rows, spans, {"seed": 7})
    assert [(c.start_s, c.label) for c in info.chapters] == [(0.0, "Good evening."), (4.0, "In sport, a win.")]
    assert [m.label for m in info.markers] == ["Good evening.", "Rain tonight.", "In sport, a win."]
    assert info.title == "Good evening." and info.artist == "ruby"
    assert ("voices", "ruby") in info.user  # the voice came from the script's tags, not the take's options
