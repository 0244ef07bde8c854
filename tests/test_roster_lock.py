"""`voices add` changes the user roster under a lock (no lost update) and refuses to replace an anchor silently."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from omnistudio.cli import main
from support.audio import REF_TEXT



def _add(name: str, ref: Path, barrier: multiprocessing.synchronize.Barrier, *extra: str) -> None:
    import os
    import sys

    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    barrier.wait()
    os._exit(main(["voices", "add", name, "--ref-audio", str(ref), "--ref-text", REF_TEXT, "--lang", "en",
                   "--gender", "female", *extra]))


def test_two_concurrent_adds_keep_both_anchors_every_time(tmp_path: Path, ref_wav: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from omnistudio.voices.roster import load_roster, user_roster_path

    from omnistudio.cli import build_parser

    build_parser()  # import every command once here, so that each forked `voices add` starts at once
    ctx = multiprocessing.get_context("fork")
    for run in range(20):
        monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path / f"home{run}"))
        barrier = ctx.Barrier(2)
        procs = [ctx.Process(target=_add, args=(name, ref_wav, barrier)) for name in ("Ann Lee", "Bo Park")]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0, 0], f"run {run}"
        anchors = load_roster().anchors
        assert {"ann_lee", "bo_park"} <= set(anchors), f"run {run}: {sorted(set(anchors) & {'ann_lee', 'bo_park'})}"
        for anchor in ("ann_lee", "bo_park"):
            assert anchors[anchor].voice("en").recording.read_bytes() == ref_wav.read_bytes()
        assert not [p for p in user_roster_path().parent.iterdir() if p.name.startswith(".")]


def test_duplicate_name_is_refused_unless_replace(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np
    import soundfile as sf

    from omnistudio.voices.roster import load_roster, user_roster_path

    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path / "home"))
    other = tmp_path / "other.wav"
    sf.write(str(other), 0.3 * np.sin(np.arange(48_000) / 9.0).astype(np.float32), 24_000)
    add = ["voices", "add", "Dup", "--lang", "en", "--ref-audio"]
    assert main([*add, str(ref_wav), "--ref-text", REF_TEXT, "--gender", "female"]) == 0
    before = user_roster_path().read_bytes()
    recording = load_roster().get("dup").voice("en").recording
    capsys.readouterr()
    rc = main([*add, str(other), "--ref-text", "Another text.", "--gender", "male"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "--replace" in err and "already exists" in err
    assert user_roster_path().read_bytes() == before
    assert recording.read_bytes() == ref_wav.read_bytes()
    # A new language of the same anchor is an addition, not a replacement.
    assert main([*add[:3], "--lang", "es", "--ref-audio", str(other), "--ref-text", "Hola."]) == 0
    assert load_roster().get("dup").voice("es").transcript == "Hola."
    # --replace does replace, and says so by doing it.
    assert main([*add, str(other), "--ref-text", "Another text.", "--gender", "male", "--replace"]) == 0
    dup = load_roster().get("dup")
    assert dup.gender == "male" and dup.voice("en").transcript == "Another text."
    assert dup.voice("en").recording.read_bytes() == other.read_bytes()
    assert not recording.exists()  # the replaced recording is removed (no entry refers to it)
