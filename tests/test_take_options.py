"""The take contract's plain values: Blend, VoiceRef and its keys, parse_voice, TakeOptions, the seed policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnistudio.errors import UserError
from omnistudio.take.options import TakeOptions, sentence_seed
from omnistudio.voices.resolve import Blend, VoiceRef, parse_voice


def test_blend_is_checked_once_and_typed() -> None:
    blend = Blend("Ruby", "storm", 0.7)
    assert (blend.a, blend.b, blend.alpha, blend.key()) == ("ruby", "storm", 0.7, "ruby+storm@0.70")
    assert Blend("ruby", "storm", 0.701) == blend  # rounded to 0.01: one cache entry per slider step
    with pytest.raises(UserError, match="itself"):
        Blend("ruby", "RUBY", 0.5)
    for bad in (-0.1, 1.5, float("nan"), "x"):
        with pytest.raises(UserError, match="alpha"):
            Blend("ruby", "storm", bad)  # type: ignore[arg-type]


def test_parse_voice_forms() -> None:
    assert parse_voice("ruby") == (VoiceRef(anchor="ruby"), None)
    assert parse_voice("Ruby:ES") == (VoiceRef(anchor="ruby"), "es")
    ref, lang = parse_voice("ruby+storm@0.7:en")
    assert ref.blend == Blend("ruby", "storm", 0.7) and lang == "en" and ref.key() == "ruby+storm@0.70"
    for bad, needle in [("", "empty"), ("ruby:fr", "unknown language"), ("ruby+ruby", "itself"),
                        ("a b", "voice 'a b'"), (":en", "names no anchor"), ("ruby+storm@2", "alpha")]:
        with pytest.raises(UserError, match=needle):
            parse_voice(bad)


def test_voice_ref_is_exactly_one_thing_with_a_canonical_key(tmp_path: Path, ref_wav: Path) -> None:
    rec = VoiceRef.recording_of(ref_wav, "This is the reference voice for our test.")
    assert rec.key().startswith("rec:") and len(rec.key()) == len("rec:") + 12
    assert VoiceRef.recording_of(ref_wav, "Another transcript.").key() != rec.key()  # the transcript counts
    copy = tmp_path / "copy.wav"
    copy.write_bytes(ref_wav.read_bytes())
    assert VoiceRef.recording_of(copy, "This is the reference voice for our test.").key() == rec.key()  # content
    assert VoiceRef.anchor_of("ruby").key() == "ruby" and VoiceRef.blend_of("a", "b", 0.25).key() == "a+b@0.25"
    assert VoiceRef.prompt_of(copy).key().startswith("prompt:")
    with pytest.raises(UserError):
        VoiceRef()
    with pytest.raises(UserError):
        VoiceRef(anchor="ruby", blend=Blend("a", "b"))
    with pytest.raises(UserError, match="transcript"):
        VoiceRef.recording_of(ref_wav, " ")
    assert len({VoiceRef.anchor_of("ruby"), VoiceRef(anchor="RUBY")}) == 1  # hashable, normalised


def test_sentence_seed_is_stable_and_depends_on_every_part() -> None:
    seed = sentence_seed(42, "Good evening.", "ruby", "en")
    assert seed == sentence_seed(42, "Good  evening.", "ruby", "en")  # whitespace does not count
    assert 0 <= seed < 2**31
    others = {sentence_seed(43, "Good evening.", "ruby", "en"), sentence_seed(42, "Good evening!", "ruby", "en"),
              sentence_seed(42, "Good evening.", "storm", "en"), sentence_seed(42, "Good evening.", "ruby", "es")}
    assert seed not in others and len(others) == 4
    # a fixed value: the policy must not drift between releases (the same take must sound the same)
    assert sentence_seed(0, "Hi.", "ruby", "en") == 1968671056


def test_take_options_are_validated() -> None:
    ok = TakeOptions(num_step="8", seed="3", lang="ES").validated()  # type: ignore[arg-type]
    assert (ok.num_step, ok.seed, ok.lang, ok.speed_arg) == (8, 3, "es", None)
    assert TakeOptions(speed=1.5).validated().speed_arg == 1.5
    for bad, needle in [({"num_step": 0}, "num_step"), ({"batch": 17}, "batch"), ({"speed": 9}, "speed"),
                        ({"guidance_scale": -1}, "guidance"), ({"lang": "fr"}, "language"),
                        ({"voice": "ruby"}, "VoiceRef"), ({"seed": -1}, "seed")]:
        with pytest.raises(UserError, match=needle):
            TakeOptions(**bad).validated()  # type: ignore[arg-type]


def test_take_options_are_checked_once_on_a_takes_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``validated()`` checks once: the options it returns come back as they are from the plan and the take
    (no check runs again), a ``replace`` of them is checked anew, and the mark is no field (``asdict`` and
    ``==`` see the same options)."""
    from dataclasses import asdict, replace

    from omnistudio.take import options as module
    from omnistudio.take.pipeline import build_take
    from support.links import FakeLink

    checked: list[object] = []
    real = module.check_num_step
    monkeypatch.setattr(module, "check_num_step", lambda value: checked.append(value) or real(value))
    options = TakeOptions(num_step=8, seed=3, voice=VoiceRef(anchor="ruby")).validated()
    take = build_take(FakeLink(), "Hello there. Second one.", options)
    assert checked == [8] and take.options is options and options.validated() is options
    assert options == TakeOptions(num_step=8, seed=3, voice=VoiceRef(anchor="ruby"))
    assert asdict(options) == asdict(TakeOptions(num_step=8, seed=3, voice=VoiceRef(anchor="ruby")))
    with pytest.raises(UserError, match="num_step"):
        replace(options, num_step=0).validated()
    assert checked == [8, 0]
