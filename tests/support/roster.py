"""A three-anchor test roster (ana, ben, cy) with no prompt saved yet, speaking with the recorded test
voices of support.voices (flite), so the anchors really sound different (on ``tiny`` every voice-design
anchor gets the same prompt tokens). Import the fixture in a test module: ``from support.roster import flite_desk, flite_recordings  # noqa: F401``."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.voices import record, transcript

# anchor of this roster -> the recorded test voice it speaks with (support.voices: slt, kal, awb)
VOICES = {"ana": "ruby", "ben": "storm", "cy": "atlas"}
LANGS = ("en", "es")


@pytest.fixture(scope="session")
def flite_recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    folder = tmp_path_factory.mktemp("flite")
    return {(anchor, lang): record(folder, voice, lang) for anchor, voice in VOICES.items() for lang in LANGS}


def roster_text(recordings: dict[tuple[str, str], Path]) -> str:
    parts = ['format = 1\n[design]\nnum_step = 4\nguidance = 2.0\n'
             '[calibration]\nen = "Good evening."\nes = "Buenas noches."\n']
    for anchor in VOICES:
        parts.append(f'[[anchor]]\nid = "{anchor}"\nname = "{anchor.title()}"\ngender = "female"\n'
                     f'age = "middle-aged"\npitch = "low pitch"\nseed = 5\n')
        for lang in LANGS:
            line = transcript(VOICES[anchor], lang)
            parts.append(f'{lang} = {{ recording = "{recordings[(anchor, lang)]}", transcript = "{line}" }}\n')
    parts.append('[[duo]]\nanchors = ["ana", "ben"]\nlangs = ["en"]\nratio = 0.5\n')
    return "".join(parts)


@pytest.fixture
def flite_desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flite_recordings) -> Path:  # noqa: ANN001
    """ana (slt), ben (kal) and cy (awb), en + es, with no prompt saved yet, in a folder of this test."""
    from omnistudio.voices import prompts
    from omnistudio.voices.roster import ROSTER_ENV

    roster = tmp_path / "roster.toml"
    roster.write_text(roster_text(flite_recordings), encoding="utf-8")
    monkeypatch.setenv(ROSTER_ENV, str(roster))
    monkeypatch.setattr(prompts, "prompt_dir", lambda: tmp_path / "prompts")
    monkeypatch.setattr("omnistudio.voices.roster.user_roster_path", lambda: tmp_path / "user" / "anchors.toml")
    return tmp_path
