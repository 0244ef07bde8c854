"""The anchor roster: the shipped file, where it is found, and every malformed-roster error."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnistudio.voices.roster import (LANGS, ROSTER_ENV, dump_anchors, load_files, load_roster,
                                      shipped_roster_path, slug)
from omnistudio.errors import UserError

ORIGINALS = {"ruby": "Ruby Vance", "valentina": "Valentina Paz", "atlas": "Atlas Vance",
             "mateo": "Mateo Beltran", "storm": "Storm", "camila": "Camila", "tomas": "Tomas", "austin": "Austin"}

HEADER = '''format = 1
[calibration]
en = "Good evening."
es = "Buenas noches."
'''


def anchor_toml(anchor_id: str = "ana", **fields: str) -> str:
    base = {"name": '"Ana"', "gender": '"female"', "age": '"young adult"', "pitch": '"low pitch"', "seed": "7"}
    base.update(fields)
    body = "\n".join(f"{k} = {v}" for k, v in base.items() if v is not None)
    return f'[[anchor]]\nid = "{anchor_id}"\n{body}\n'


def write(tmp_path: Path, text: str, name: str = "roster.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_roster_has_48_anchors_in_both_languages() -> None:
    roster = load_roster(shipped_roster_path())
    assert len(roster.anchors) == 48
    assert len({a.name for a in roster.anchors.values()}) == 48
    assert {k: roster.anchors[k].name for k in ORIGINALS} == ORIGINALS
    assert len(roster.pairs()) == 96
    assert set(roster.calibration) == set(LANGS)
    assert len({a.seed for a in roster.anchors.values()}) == 48


def test_shipped_instructs_are_accepted_by_omnivoice() -> None:
    from omnivoice.models.omnivoice import _resolve_instruct

    roster = load_roster(shipped_roster_path())
    for anchor in roster.anchors.values():
        for lang in LANGS:
            assert _resolve_instruct(anchor.instruct(lang)) == anchor.instruct(lang)
        assert "accent" not in anchor.instruct("es")  # accents are English-only items
    assert roster.get("ruby").instruct("en").endswith("american accent")


def test_shipped_duos_and_matches() -> None:
    roster = load_roster(shipped_roster_path())
    duos = {(d.anchors, d.langs, d.ratio) for d in roster.duos}
    assert duos == {(("ruby", "storm"), ("en",), 0.5), (("valentina", "camila"), ("es",), 0.5),
                    (("atlas", "mateo"), ("es", "en"), 0.5)}
    owner, _voice = roster.source_of("valentina", "en")
    assert owner.id == "ruby"
    assert roster.source_of("valentina", "es")[0].id == "valentina"
    assert roster.source_of("atlas", "es")[0].id == "atlas"


def test_roster_env_override_and_user_roster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    custom = write(tmp_path, HEADER + anchor_toml("ana"))
    monkeypatch.setenv(ROSTER_ENV, str(custom))
    monkeypatch.setattr("omnistudio.voices.roster.user_roster_path", lambda: tmp_path / "user.toml")
    assert shipped_roster_path() == custom
    assert list(load_roster().anchors) == ["ana"]
    write(tmp_path, dump_anchors([{"id": "bea", "name": "Bea", "gender": "female", "age": "elderly",
                                   "pitch": "high pitch", "seed": 3, "en": {"recording": "b.wav",
                                                                           "transcript": 'Say "hi".'}}]),
          "user.toml")
    roster = load_roster()
    assert list(roster.anchors) == ["ana", "bea"]
    assert roster.get("bea").voice("en").transcript == 'Say "hi".'
    assert roster.get("bea").voice("en").recording == tmp_path / "b.wav"
    monkeypatch.setenv(ROSTER_ENV, str(tmp_path / "nope.toml"))
    with pytest.raises(UserError, match="OMNISTUDIO_ROSTER=.*is not a file"):
        shipped_roster_path()


BAD_ROSTERS = [
    ("malformed TOML", HEADER + "[[anchor]\nid = 'x'\n", r"is not valid TOML: .*line 5"),
    ("duplicate ids", HEADER + anchor_toml("ana") + anchor_toml("ana"), "duplicate anchor id 'ana'"),
    ("unknown pitch", HEADER + anchor_toml(pitch='"squeaky"'), r"anchor 'ana': pitch 'squeaky' is not one OmniVoice"),
    ("misspelt gender", HEADER + anchor_toml(gender='"femle"'), r"did you mean 'female'"),
    ("unknown accent", HEADER + anchor_toml(accent='"argentine accent"'), r"accent 'argentine accent'"),
    ("unknown key", HEADER + anchor_toml(colour='"blue"'), r"unknown key 'colour'"),
    ("bad id", HEADER + anchor_toml("Ana Paz"), r"id 'Ana Paz' must be lowercase"),
    ("no seed", HEADER + anchor_toml(seed=None), r"seed must be a whole number"),
    ("recording without transcript", HEADER + anchor_toml(en='{ recording = "a.wav" }'),
     r"\(en\): the recording needs its exact transcript"),
    ("matched unknown", HEADER + anchor_toml(en='{ matched = "zed" }'), r"matched anchor 'zed' is not in the roster"),
    ("matched self", HEADER + anchor_toml(es='{ matched = "ana" }'), r"cannot be matched to itself"),
    ("matched chain", HEADER + anchor_toml(en='{ matched = "bo" }') + anchor_toml("bo", en='{ matched = "cy" }')
     + anchor_toml("cy"), r"'bo' is itself matched in en"),
    ("duo of unknown", HEADER + anchor_toml() + '[[duo]]\nanchors = ["ana", "zed"]\n', r"duo #1: unknown anchor 'zed'"),
    ("duo ratio", HEADER + anchor_toml() + anchor_toml("bo") + '[[duo]]\nanchors = ["ana", "bo"]\nratio = 1.5\n',
     r"ratio must be a number from 0 to 1"),
    ("no calibration", 'format = 1\n[calibration]\nen = "Hi."\n' + anchor_toml(), r"needs a sentence for es"),
    ("bad design steps", HEADER + "[design]\nnum_step = 0\n" + anchor_toml(), r"num_step 0 is out of range"),
    ("future format", HEADER.replace("format = 1", "format = 9") + anchor_toml(), r"has format 9"),
]


@pytest.mark.parametrize("text,pattern", [(t, p) for _n, t, p in BAD_ROSTERS], ids=[n for n, _t, _p in BAD_ROSTERS])
def test_bad_roster_is_one_clear_error(tmp_path: Path, text: str, pattern: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UserError, match=pattern) as info:
        load_roster(path)
    assert "\n" not in str(info.value)
    assert str(path) in str(info.value)


def test_duplicate_across_shipped_and_user_roster(tmp_path: Path) -> None:
    shipped = write(tmp_path, HEADER + anchor_toml("ana"), "a.toml")
    user = write(tmp_path, anchor_toml("ana"), "b.toml")
    with pytest.raises(UserError, match=r"duplicate anchor id 'ana' \(already defined in .*a.toml\)"):
        load_files([shipped, user])


def test_unknown_anchor_suggests_a_close_one() -> None:
    roster = load_roster(shipped_roster_path())
    with pytest.raises(UserError, match="did you mean 'valentina'"):
        roster.get("valentna")
    assert roster.get(" Ruby ").id == "ruby"


def test_slug() -> None:
    assert slug("Ana María  Paz") == "ana_maria_paz"
    with pytest.raises(UserError):
        slug("!!!")
