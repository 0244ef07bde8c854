"""The pronunciation lexicon's storage: TOML files (global and per project, the project's winning),
atomic saves, and W3C PLS import/export parsed safely."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from omnistudio.errors import UserError
from omnistudio.text.lexicon import Entry, Lexicon
from omnistudio.text.lexicon_files import (edit_lexicon, effective_lexicon, global_lexicon_path, load_lexicon,
                                           project_lexicon_path, save_lexicon)
from omnistudio.text.pls import entries_for, export_pls, parse_pls

SAMPLE = Lexicon((
    Entry("Sheinbaum", "[SH AY1 N B AW0 M]", "en", phones=True),
    Entry("ONU", "o ene u", "es", case_sensitive=True),
    Entry("Xi Jinping", "shi yin ping"),
    Entry("AT&T", "ei ti an ti", "en"),
    Entry("Dra. \"Paz\" <Ana>", "doctora paz", "es"),
    Entry("US", "iu es", "en", case_sensitive=True),
))


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def one_line(exc: pytest.ExceptionInfo[UserError]) -> str:
    text = str(exc.value)
    assert text and "\n" not in text, text
    return text


# ------------------------------------------------------------------------------------------------ TOML

def test_toml_round_trip_in_a_layout_a_person_edits(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.toml"
    save_lexicon(path, SAMPLE)
    assert load_lexicon(path) == SAMPLE
    text = path.read_text(encoding="utf-8")
    assert text.splitlines().count("[[entry]]") == len(SAMPLE)  # one table per entry, not one inline array
    xi = text[text.index('word = "Xi Jinping"'):].split("[[entry]]")[0]
    assert "lang" not in xi and "case_sensitive" not in xi and "phones" not in xi  # defaults left out

    # What a producer types by hand, comments and all, reads the same way.
    path.write_text('# names\n[[entry]]\nword = "Milei"  # the president\nsay = "mi léi"\nlang = "es"\n\n'
                    '[[entry]]\nword = "NASA"\nsay = "nasa"\ncase_sensitive = true\n', encoding="utf-8")
    assert load_lexicon(path) == Lexicon((Entry("Milei", "mi léi", "es"), Entry("NASA", "nasa", case_sensitive=True)))


def test_missing_file_is_an_empty_lexicon(tmp_path: Path) -> None:
    assert load_lexicon(tmp_path / "none.toml") == Lexicon()


@pytest.mark.parametrize(("content", "needle"), [
    ('[[entry]\nword = "x"\n', "is not valid TOML"),
    (b"\xff\xfe[[entry]]", "is not UTF-8"),
    ('[[entry]]\nword = "a"\nsay = "b"\n\n[[entry]]\nword = "Milei"\nsay = "mi lei"\nlang = "fr"\n',
     "entry 2 ('Milei'): unknown language 'fr'"),
    ('[[entry]]\nword = "Milei"\nsya = "mi lei"\n', "entry 1 ('Milei'): unknown key 'sya'"),
    ('[[entry]]\nword = "Milei"\n', "entry 1 ('Milei'): 'say' is missing"),
    ('[[entry]]\nword = "Milei"\nsay = "mi lei"\ncase_sensitive = "yes"\n', "'case_sensitive' must be true or false"),
    ('[[entry]]\nword = "Milei"\nsay = "[M IH0 L EY1]"\nphones = true\n', "phone notation is English only"),
    ('[entry]\nword = "Milei"\n', "must be [[entry]] tables"),
    ('words = 3\n', "unknown key 'words'"),
])
def test_a_malformed_file_is_one_line_naming_the_file_and_the_entry(tmp_path: Path, content: str | bytes,
                                                                    needle: str) -> None:
    path = tmp_path / "lexicon.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError) as exc:
        load_lexicon(path)
    line = one_line(exc)
    assert str(path) in line and needle in line, line


def test_a_failed_save_leaves_the_old_file_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lexicon.toml"
    save_lexicon(path, SAMPLE)
    before = path.read_bytes()
    real_write = Path.write_bytes

    def half_then_full_disk(self: Path, data: bytes) -> int:  # type: ignore[override]
        real_write(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", half_then_full_disk)
    with pytest.raises(OSError):
        save_lexicon(path, SAMPLE.with_entry(Entry("Milei", "mi léi", "es")))
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["lexicon.toml"]

    # An edit that is refused (here: removing a word that is not there) writes nothing either.
    def refuse(lexicon: Lexicon) -> Lexicon:
        raise UserError("no entry for 'nadie'")

    with pytest.raises(UserError):
        edit_lexicon(path, refuse)
    assert path.read_bytes() == before


def test_the_project_wins_over_the_global_lexicon(home: Path, tmp_path: Path) -> None:
    assert global_lexicon_path() == home / "config" / "lexicon.toml"  # OMNISTUDIO_HOME relocates it
    project = tmp_path / "news.omniproj"
    save_lexicon(global_lexicon_path(), Lexicon((Entry("ONU", "o ene u", "es"), Entry("Milei", "mi léi", "es"))))
    save_lexicon(project_lexicon_path(project), Lexicon((Entry("onu", "onu", "es"),)))
    assert project_lexicon_path(project) == project / "lexicon.toml"

    both = effective_lexicon(project)
    assert [(e.word, e.say) for e in both.for_lang("es")] == [("Milei", "mi léi"), ("onu", "onu")]
    assert [(e.word, e.say) for e in effective_lexicon(None).for_lang("es")] == [("ONU", "o ene u"),
                                                                                ("Milei", "mi léi")]
    assert effective_lexicon(tmp_path / "empty.omniproj") == effective_lexicon(None)  # no project file yet


# ------------------------------------------------------------------------------------------------- PLS

@pytest.mark.parametrize("lang", ["en", "es"])
def test_pls_export_then_import_gives_the_same_entries(lang: str) -> None:
    data = export_pls(SAMPLE, lang)
    assert f'xml:lang="{"en-US" if lang == "en" else "es-AR"}"'.encode() in data
    imported = parse_pls(data, "out.pls")
    assert imported.lang == lang and imported.warnings == ()
    assert imported.lexicon.entries == entries_for(SAMPLE, lang)
    words = {e.word for e in imported.lexicon.entries}
    assert "Xi Jinping" in words  # the entries for both languages go in each language's file
    assert ("Sheinbaum" in words) == (lang == "en") and ("ONU" in words) == (lang == "es")


FOREIGN = b"""<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"
         alphabet="ipa" xml:lang="en-GB">
  <lexeme><grapheme>BLVD</grapheme><grapheme>blvd</grapheme><alias>boulevard</alias></lexeme>
  <lexeme><grapheme>Nguyen</grapheme><phoneme>\xc5\x8bw\xc9\x9bn</phoneme></lexeme>
  <lexeme><grapheme>Sheinbaum</grapheme><alias>shine bomb</alias>
          <phoneme alphabet="x-arpabet" prefer="true">sh ay1 n b aw0 m</phoneme></lexeme>
  <lexeme><grapheme>Kyiv</grapheme><phoneme>k\xc9\xaa\xcb\x88i\xcb\x90v</phoneme><alias>keev</alias></lexeme>
  <lexeme><grapheme>US</grapheme><alias>U S</alias></lexeme>
  <lexeme><grapheme>us</grapheme><alias>us</alias></lexeme>
</lexicon>
"""


def test_pls_import_of_a_newsroom_file() -> None:
    imported = parse_pls(FOREIGN, "desk.pls")
    got = {(e.word, e.say, e.lang, e.case_sensitive, e.phones) for e in imported.lexicon.entries}
    assert got == {
        ("blvd", "boulevard", "en", False, False),  # two graphemes, one entry each (one word in any case: one)
        ("Sheinbaum", "[SH AY1 N B AW0 M]", "en", False, True),  # the preferred ARPAbet phoneme
        ("Kyiv", "keev", "en", False, False),  # IPA first, then an alias OmniStudio can say
        ("US", "U S", "en", True, False), ("us", "us", "en", True, False),  # two cases, two sounds
    }
    assert len(imported.warnings) == 1  # IPA only: skipped, named
    assert "lexeme 2 ('Nguyen')" in imported.warnings[0] and "alphabet 'ipa'" in imported.warnings[0]


def test_pls_phonemes_only_in_english_and_each_grapheme_an_entry() -> None:
    spanish = (b'<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="x-cmu" '
               b'xml:lang="es-AR"><lexeme><grapheme>Sheinbaum</grapheme><phoneme>SH AY1 N B AW0 M</phoneme>'
               b'</lexeme><lexeme><grapheme>EE. UU.</grapheme><grapheme>EEUU</grapheme><alias>Estados Unidos'
               b'</alias></lexeme></lexicon>')
    imported = parse_pls(spanish, "es.pls")
    assert imported.lexicon == Lexicon((Entry("EE. UU.", "Estados Unidos", "es"), Entry("EEUU", "Estados Unidos", "es")))
    assert len(imported.warnings) == 1 and "'Sheinbaum'" in imported.warnings[0]


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lexicon [
  <!ENTITY lol "lol">
  <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en">
  <lexeme><grapheme>lol</grapheme><alias>&lol4;</alias></lexeme>
</lexicon>
"""


def external_entity(secret: Path) -> bytes:
    return (f'<?xml version="1.0"?>\n<!DOCTYPE lexicon [<!ENTITY xxe SYSTEM "file://{secret}">]>\n'
            '<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" '
            'xml:lang="en"><lexeme><grapheme>key</grapheme><alias>&xxe;</alias></lexeme></lexicon>').encode()


def test_pls_with_entities_is_refused_in_one_line(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2", encoding="utf-8")
    for data in (BILLION_LAUGHS, external_entity(secret)):
        with pytest.raises(UserError) as exc:
            parse_pls(data, "evil.pls")
        line = one_line(exc)
        assert line.startswith("evil.pls refused: it declares the XML entity") and "hunter2" not in line


@pytest.mark.parametrize(("data", "needle"), [
    (b"<lexicon", "is not well-formed XML"),
    (b'<speak xml:lang="en"/>', "its root element is <speak>"),
    (b'<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"/>', "has no xml:lang"),
    (b'<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" xml:lang="fr-FR"/>',
     "is a 'fr-FR' lexicon"),
])
def test_pls_that_is_not_one_is_one_line(data: bytes, needle: str) -> None:
    with pytest.raises(UserError) as exc:
        parse_pls(data, "x.pls")
    assert needle in one_line(exc)


def test_pls_export_of_a_language_with_no_entries_is_refused() -> None:
    with pytest.raises(UserError) as exc:
        export_pls(Lexicon((Entry("ONU", "o ene u", "es"),)), "en")
    assert "no entries for en" in one_line(exc)
