"""Voice prompt files, staleness, the device cache, and the voices/prevectorize commands (tiny model)."""

from __future__ import annotations

import hashlib
import json
from typing import Any
import shutil
from pathlib import Path

import numpy as np
import pytest

from support.audio import REF_TEXT, make_reference
from omnistudio.voices.state import AnchorPrompt
from omnistudio.voices import prompts
from omnistudio.voices.prompts import (PromptCache, PromptError, anchor_prompt, cache_for, ensure_prompt,
                                       load_prompt, prompt_path, prompt_state, save_prompt)
from omnistudio.voices.startup import warm_up
from omnistudio.engine.reference import Reference
from omnistudio.voices.roster import ROSTER_ENV, load_roster, shipped_roster_path
from omnistudio.errors import UserError

HEADER = 'format = 1\n[design]\nnum_step = 4\n[calibration]\nen = "Good evening."\nes = "Buenas noches."\n'


def recorded(anchor_id: str, recording: Path, transcript: str = REF_TEXT) -> str:
    return (f'[[anchor]]\nid = "{anchor_id}"\nname = "{anchor_id.title()}"\ngender = "female"\n'
            f'age = "middle-aged"\npitch = "low pitch"\nseed = 5\n'
            f'en = {{ recording = "{recording}", transcript = "{transcript}" }}\n')


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Prompts and the user roster in a fresh folder for this test."""
    monkeypatch.setattr(prompts, "prompt_dir", lambda: tmp_path / "prompts")
    monkeypatch.setattr("omnistudio.voices.roster.user_roster_path", lambda: tmp_path / "user" / "anchors.toml")
    return tmp_path


def small_roster(desk: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = desk / "roster.toml"
    path.write_text(HEADER + text, encoding="utf-8")
    monkeypatch.setenv(ROSTER_ENV, str(path))
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from omnistudio.cli import main

    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_save_load_round_trip_is_exact(tiny_engine, ref_wav: Path, desk: Path, monkeypatch) -> None:  # noqa: ANN001
    roster = load_roster(small_roster(desk, monkeypatch, recorded("ana", ref_wav)))
    made, action, cal = ensure_prompt(tiny_engine, roster, "ana", "en")
    assert action == "built" and cal is not None and cal.source == "roster"
    back = load_prompt(prompt_path("ana", "en"), "ana", "en")
    assert back.ref_audio_tokens.shape[0] == 8 and back.ref_audio_tokens.dtype.is_floating_point is False
    assert np.array_equal(back.ref_audio_tokens.numpy(), made.ref_audio_tokens.cpu().numpy())
    assert (back.ref_text, back.ref_rms) == (made.ref_text, made.ref_rms)
    assert back.fingerprint == tiny_engine.loaded.fingerprint
    assert back.meta["source_kind"] == "recording" and back.meta["format_version"] == "1"
    assert ensure_prompt(tiny_engine, roster, "ana", "en")[1] == "skipped"


def test_saved_prompt_speaks_like_its_recording(tiny_engine, ref_wav: Path, desk: Path, monkeypatch) -> None:  # noqa: ANN001
    roster = load_roster(small_roster(desk, monkeypatch, recorded("bea", ref_wav)))
    ensure_prompt(tiny_engine, roster, "bea", "en")
    saved = load_prompt(prompt_path("bea", "en"), "bea", "en")
    text = "The council met tonight to vote on the budget."
    from_recording = tiny_engine.synthesize(text, Reference(ref_wav, REF_TEXT), num_step=4, seed=11)
    from_file = tiny_engine.synthesize(text, saved, num_step=4, seed=11)
    assert from_file.pcm.size > 0
    assert np.array_equal(from_recording.pcm, from_file.pcm)


def test_stale_when_model_recording_or_transcript_changes(tiny_engine, tmp_path: Path, desk: Path,
                                                          monkeypatch) -> None:  # noqa: ANN001
    wav = make_reference(tmp_path / "cy.wav", seed=1)
    roster = load_roster(small_roster(desk, monkeypatch, recorded("cy", wav)))
    fp = tiny_engine.loaded.fingerprint
    assert prompt_state(roster, "cy", "en", fp)[0] == "missing"
    ensure_prompt(tiny_engine, roster, "cy", "en")
    assert prompt_state(roster, "cy", "en", fp) == ("ready", "")
    assert prompt_state(roster, "cy", "en", "another-model")[0] == "stale"
    edited = load_roster(small_roster(desk, monkeypatch, recorded("cy", wav, "A different transcript.")))
    assert prompt_state(edited, "cy", "en", fp) == ("stale", "its recording source changed")
    make_reference(wav, seed=2)  # the recording itself changes
    assert prompt_state(roster, "cy", "en", fp)[0] == "stale"
    assert ensure_prompt(tiny_engine, roster, "cy", "en")[1] == "rebuilt"
    assert prompt_state(roster, "cy", "en", fp)[0] == "ready"


def test_bad_prompt_files_fail_alone(tiny_engine, ref_wav: Path, desk: Path, monkeypatch) -> None:  # noqa: ANN001
    import torch
    from safetensors.torch import save_file

    ids = ["good", "trunc", "pickled", "other", "foreign", "empty", "shape"]
    roster = load_roster(small_roster(desk, monkeypatch, "".join(recorded(i, ref_wav) for i in ids)))
    good, _action, _cal = ensure_prompt(tiny_engine, roster, "good", "en")
    data = prompt_path("good", "en").read_bytes()
    prompt_path("trunc", "en").write_bytes(data[: len(data) // 2])
    torch.save({"ref_audio_tokens": good.ref_audio_tokens, "ref_text": "x", "ref_rms": 0.1},
               prompt_path("pickled", "en"))
    shutil.copy(prompt_path("good", "en"), prompt_path("other", "en"))  # right name, another anchor's metadata
    save_file({"x": torch.zeros(3)}, str(prompt_path("foreign", "en")))
    prompt_path("empty", "en").write_bytes(b"")
    bad_shape = AnchorPrompt(good.ref_audio_tokens[:3], good.ref_text, good.ref_rms, "shape", "en",
                                     dict(good.meta))
    save_prompt(prompt_path("shape", "en"), bad_shape)

    expected = {"trunc": "damaged or not a safetensors prompt", "pickled": "damaged or not a safetensors prompt",
                "other": r"holds anchor 'good' \(en\), not 'other' \(en\)", "foreign": "not an OmniStudio voice prompt",
                "empty": "damaged or not a safetensors prompt", "shape": r"shape \[3, "}
    for anchor_id, pattern in expected.items():
        with pytest.raises(PromptError, match=pattern) as info:
            load_prompt(prompt_path(anchor_id, "en"), anchor_id, "en")
        assert f"{anchor_id}_en.omni_prompt.safetensors" in str(info.value) and "\n" not in str(info.value)
        assert prompt_state(roster, anchor_id, "en", tiny_engine.loaded.fingerprint)[0] == "invalid"

    cache = PromptCache()
    report = cache.load_all(roster, tiny_engine.loaded.fingerprint, "cpu")
    assert report.loaded == 1 and cache.get("good", "en") is not None
    assert len(report.errors) == len(expected)
    assert all(report.not_ready[(i, "en")] == "invalid" for i in expected)
    # a damaged prompt is rebuilt in place; the good one is untouched
    assert ensure_prompt(tiny_engine, roster, "trunc", "en")[1] == "rebuilt"
    assert prompt_path("good", "en").read_bytes() == data


def test_anchor_prompt_builds_on_demand_then_caches(tiny_engine, ref_wav: Path, desk: Path,
                                                    monkeypatch) -> None:  # noqa: ANN001
    small_roster(desk, monkeypatch, recorded("dee", ref_wav))
    said: list[str] = []
    first = anchor_prompt(tiny_engine, "Dee", "en", progress=said.append)
    assert prompt_path("dee", "en").is_file()
    assert any("building the en voice prompt for 'dee'" in s for s in said)
    assert anchor_prompt(tiny_engine, "dee", "en") is first
    assert cache_for(tiny_engine).get("dee", "en") is first
    assert str(first.ref_audio_tokens.device) == "cpu"
    with pytest.raises(UserError, match="unknown anchor 'zed'"):
        anchor_prompt(tiny_engine, "zed", "en")
    with pytest.raises(UserError, match="unknown language 'fr'"):
        anchor_prompt(tiny_engine, "dee", "fr")
    timings = warm_up(tiny_engine, num_step=2)
    assert set(timings) == {"single_s", "batch3_s"} and min(timings.values()) > 0


def test_missing_recording_fails_alone_in_prevectorize(ref_wav: Path, desk: Path, monkeypatch,
                                                       capsys) -> None:  # noqa: ANN001
    small_roster(desk, monkeypatch, recorded("ok", ref_wav) + recorded("lost", desk / "gone.wav"))
    code, out = cli(capsys, "prevectorize", "--model", "tiny", "--lang", "en", "--json")
    rows = {r["anchor"]: r for r in map(json.loads, out.splitlines())}
    assert code == 1
    assert rows["ok"]["action"] == "built" and prompt_path("ok", "en").is_file()
    assert rows["lost"]["action"] == "failed" and "gone.wav does not exist" in rows["lost"]["note"]


def test_say_with_an_anchor_voice(tiny_engine, ref_wav: Path, desk: Path, monkeypatch, capsys) -> None:  # noqa: ANN001
    """`say --voice eve` speaks from eve's recording: its file is, sample for sample, that recording's
    synthesis on the fast sampler (the CLI's default) with the seed policy's seed for (text, "eve")."""
    import soundfile as sf

    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler
    from omnistudio.take.options import sentence_seed

    small_roster(desk, monkeypatch, recorded("eve", ref_wav))
    text, out = "Breaking news tonight.", desk / "eve.wav"
    code, _ = cli(capsys, "say", text, "--voice", "eve", "--lang", "en", "--model", "tiny", "--num-step", "4",
                  "--seed", "3", "-o", str(out))
    assert code == 0 and prompt_path("eve", "en").is_file()
    said, rate = sf.read(str(out), dtype="float32")
    fast = Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))
    want = fast.synthesize(text, Reference(ref_wav, REF_TEXT), num_step=4, seed=sentence_seed(3, text, "eve", "en"))
    assert rate == 24_000 and said.shape == want.pcm.shape and np.array_equal(said, want.pcm)


def test_voices_add_then_list(ref_wav: Path, desk: Path, monkeypatch, capsys) -> None:  # noqa: ANN001
    small_roster(desk, monkeypatch, recorded("fay", ref_wav))
    code, _ = cli(capsys, "voices", "add", "Nina Ruiz", "--ref-audio", str(ref_wav), "--lang", "en")
    assert code == 2  # no --ref-text and no ASR model
    code, _ = cli(capsys, "voices", "add", "Nina Ruiz", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT,
                  "--lang", "en")
    assert code == 2  # a new anchor needs --gender
    code, _ = cli(capsys, "voices", "add", "Fay", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT,
                  "--lang", "en", "--gender", "female")
    assert code == 2  # already in the shipped roster
    code, _ = cli(capsys, "voices", "add", "Nina Ruiz", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT,
                  "--lang", "en", "--gender", "female", "--pitch", "high pitch")
    assert code == 0
    nina = load_roster().get("nina_ruiz")
    stored = nina.voice("en").recording  # named by its content (sha256), never by the name it came with
    assert stored.parent == desk / "user" / "recordings" and stored.read_bytes() == ref_wav.read_bytes()
    assert stored.name == hashlib.sha256(ref_wav.read_bytes()).hexdigest()[:32] + ".wav"
    assert nina.pitch == "high pitch" and nina.voice("en").transcript == REF_TEXT
    code, out = cli(capsys, "voices", "list", "--json", "--model", "tiny")
    listing = json.loads(out)
    assert code == 0 and [a["id"] for a in listing["anchors"]] == ["fay", "nina_ruiz"]
    assert listing["counts"] == {"missing": 4}


def test_all_96_prompts_ready_resumable_and_stale_on_model_change(tiny_engine, desk: Path, monkeypatch,
                                                                   capsys) -> None:  # noqa: ANN001
    """The shipped roster (design renders at one step to keep the test short) through the CLI."""
    roster_copy = desk / "anchors.toml"
    roster_copy.write_text(shipped_roster_path().read_text().replace("num_step = 32", "num_step = 1"))
    monkeypatch.setenv(ROSTER_ENV, str(roster_copy))
    code, out = cli(capsys, "prevectorize", "--model", "tiny", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 96 and {r["action"] for r in rows} == {"built"}
    code, out = cli(capsys, "voices", "list", "--json", "--model", "tiny")
    assert json.loads(out)["counts"] == {"ready": 96}
    stamps = {p: p.stat().st_mtime_ns for p in (desk / "prompts").iterdir()}
    assert len(stamps) == 96
    code, out = cli(capsys, "prevectorize", "--model", "tiny", "--json")
    assert {json.loads(line)["action"] for line in out.splitlines()} == {"skipped"}
    assert {p: p.stat().st_mtime_ns for p in (desk / "prompts").iterdir()} == stamps

    other = desk / "other-model"
    shutil.copytree(tiny_engine.loaded.path, other)
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "omnistudio_test_variant": 1}))
    code, out = cli(capsys, "voices", "list", "--json", "--model", str(other))
    assert json.loads(out)["counts"] == {"stale": 96}
    matched = load_prompt(prompt_path("valentina", "en"), "valentina", "en")
    assert matched.meta["voice"] == "ruby"
    cache = PromptCache()
    report = cache.load_all(load_roster(), tiny_engine.loaded.fingerprint, "cpu")
    assert report.loaded == 96 and not report.errors

    # Engine start: every ready prompt onto the device, and the canonical duos built from them.
    from omnistudio.voices.blend import blend_cache_for
    from omnistudio.engine.engine import Engine
    from omnistudio.voices.startup import start_prompts

    engine = Engine(tiny_engine.loaded)
    started = start_prompts(engine, warm=False)
    assert started.loaded == 96 and started.duos == 4  # ruby+storm en, valentina+camila es, atlas+mateo es+en
    assert ("ruby", "storm", "en", 0.5) in blend_cache_for(engine)
    assert ("atlas", "mateo", "es", 0.5) in blend_cache_for(engine)


def test_one_engine_start_prepares_its_voices_then_warms(tiny_engine, ref_wav: Path, desk: Path,
                                                          monkeypatch) -> None:  # noqa: ANN001
    """warm_engine, what the studio, the server and each Ray replica run after loading: the voices asked
    for are built first, the warm-up runs only with a prompt to warm with, and says so otherwise."""
    from omnistudio.engine.engine import Engine
    from omnistudio.voices import startup
    from omnistudio.voices.resolve import VoiceRef
    from omnistudio.voices.session import warm_engine

    small_roster(desk, monkeypatch, recorded("dee", ref_wav))
    warmed: list[Any] = []
    real = startup.warm_up
    monkeypatch.setattr(startup, "warm_up", lambda engine, progress=None: warmed.append(real(engine, progress, 2)))
    engine = Engine(tiny_engine.loaded)  # a fresh engine: nothing on its device yet
    assert "no voice prompts saved yet" in (warm_engine(engine) or "") and warmed == []
    said: list[str] = []
    assert warm_engine(engine, said.append, voices=[(VoiceRef(anchor="dee"), "en")]) is None
    assert prompt_path("dee", "en").is_file() and cache_for(engine).get("dee", "en") is not None
    assert len(warmed) == 1 and set(warmed[0]) == {"single_s", "batch3_s"}
    assert said[0] == "preparing the voice dee (en)" and "warming up the engine" in said
