"""`omnistudio lexicon add|remove|list|test|import|export` and `omnistudio normalize`, in process: what
each prints and writes, and one line for every bad input with nothing written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support.audio import REF_TEXT
from support.cli import one_line_error

from omnistudio.cli import main
from omnistudio.text.lexicon import Entry, Lexicon
from omnistudio.text.lexicon_files import load_lexicon, save_lexicon


@pytest.fixture()
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with its own OMNISTUDIO_HOME: the global lexicon is ``desk/home/config/lexicon.toml``."""
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def listed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[tuple[str, str, str | None, str]]:
    data = json.loads(run(capsys, "lexicon", "list", "--json", *argv))
    return [(e["word"], e["say"], e["lang"], e["source"]) for e in data["entries"]]


def test_add_list_remove_global_and_project(desk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "lexicon", "add", "Sheinbaum", "[SH AY1 N B AW0 M]", "--lang", "en", "--phones")
    assert out.startswith("added 'Sheinbaum'") and str(desk / "home" / "config" / "lexicon.toml") in out
    run(capsys, "lexicon", "add", "ONU", "o ene u", "--lang", "es", "--case-sensitive")
    run(capsys, "lexicon", "add", "Xi  Jinping", "shi yin ping")
    assert load_lexicon(desk / "home" / "config" / "lexicon.toml") == Lexicon((
        Entry("Sheinbaum", "[SH AY1 N B AW0 M]", "en", phones=True), Entry("ONU", "o ene u", "es", case_sensitive=True),
        Entry("Xi Jinping", "shi yin ping")))

    # A project's entry for the same word wins; the project folder is created as render --project does.
    out = run(capsys, "lexicon", "add", "ONU", "onu", "--lang", "es", "--case-sensitive", "--project", "news.omniproj")
    assert (desk / "news.omniproj" / "lexicon.toml").is_file() and "news.omniproj" in out
    assert listed(capsys, "--project", "news.omniproj") == [
        ("Sheinbaum", "[SH AY1 N B AW0 M]", "en", "global"), ("Xi Jinping", "shi yin ping", None, "global"),
        ("ONU", "onu", "es", "project")]
    assert ("ONU", "o ene u", "es", "global") in listed(capsys)  # without --project: the global one
    table = run(capsys, "lexicon", "list", "--project", "news.omniproj")
    assert "3 lexicon entries" in table and "project" in table and "Sheinbaum" in table

    # The same entry again replaces it; remove takes any case, only the file it is given.
    assert run(capsys, "lexicon", "add", "xi jinping", "si chin ping").startswith("replaced")
    assert run(capsys, "lexicon", "remove", "onu", "--project", "news.omniproj").startswith("removed 1 entry")
    assert ("ONU", "o ene u", "es", "global") in listed(capsys, "--project", "news.omniproj")
    run(capsys, "lexicon", "remove", "SHEINBAUM", "--lang", "en")
    assert [e[0] for e in listed(capsys)] == ["ONU", "xi jinping"]


def test_import_and_export_pls(desk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    save_lexicon(desk / "home" / "config" / "lexicon.toml", Lexicon((
        Entry("Sheinbaum", "[SH AY1 N B AW0 M]", "en", phones=True), Entry("US", "iu es", "en", case_sensitive=True),
        Entry("ONU", "o ene u", "es"))))
    out = run(capsys, "lexicon", "export", "en.pls", "--lang", "en")
    assert out.startswith("exported 2 en entries") and b'xml:lang="en-US"' in (desk / "en.pls").read_bytes()

    out = run(capsys, "lexicon", "import", "en.pls", "--project", "copy.omniproj")
    assert out.startswith("imported 2 en entries")
    assert load_lexicon(desk / "copy.omniproj" / "lexicon.toml") == Lexicon((
        Entry("Sheinbaum", "[SH AY1 N B AW0 M]", "en", phones=True), Entry("US", "iu es", "en", case_sensitive=True)))

    # A lexeme OmniStudio cannot say is one warning naming it; the others are imported.
    (desk / "desk.pls").write_text(
        '<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" '
        'xml:lang="es-AR"><lexeme><grapheme>Nguyen</grapheme><phoneme>ŋwɛn</phoneme></lexeme>'
        '<lexeme><grapheme>FMI</grapheme><alias>efe eme i</alias></lexeme></lexicon>', encoding="utf-8")
    assert main(["lexicon", "import", "desk.pls"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("imported 1 es entry") and "(1 skipped)" in captured.out
    warning = [line for line in captured.err.splitlines() if line.strip()]
    assert len(warning) == 1 and warning[0].startswith("omnistudio: warning: desk.pls: lexeme 1 ('Nguyen')")
    assert {("FMI", "efe eme i", "es", "global"), ("ONU", "o ene u", "es", "global")} <= set(listed(capsys))


def billion_laughs(path: Path) -> Path:
    path.write_text('<?xml version="1.0"?><!DOCTYPE lexicon [<!ENTITY a "aaaaaaaaaa">'
                    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
                    '<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" '
                    'alphabet="ipa" xml:lang="en"><lexeme><grapheme>a</grapheme><alias>&c;</alias></lexeme>'
                    '</lexicon>', encoding="utf-8")
    return path


def ipa_only(path: Path) -> Path:
    path.write_text('<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" '
                    'xml:lang="en"><lexeme><grapheme>Nguyen</grapheme><phoneme>ŋwɛn</phoneme></lexeme></lexicon>',
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("argv", "needle"), [
    (["lexicon"], "give an action"),
    (["lexicon", "add", "Milei", "mi léi", "--lang", "fr"], "unknown language 'fr'"),
    (["lexicon", "add", "Milei", "   "], "say what it is read as"),
    (["lexicon", "add", "Zorp", "zorp " * 2000, "--lang", "en"], "the limit is 300"),  # an entry is not a text
    (["lexicon", "add", os.fsdecode(b"caf\xe9"), "kafe"], "is not valid UTF-8: byte 0xE9"),
    (["lexicon", "import", "huge.pls"], "is over 8388608 bytes"),
    (["lexicon", "add", "...", "puntos"], "a word with letters or digits"),
    (["lexicon", "add", "Milei", "[M IH0 L EY1]", "--phones"], "phone notation is English only"),
    (["lexicon", "add", "Milei", "mi lei", "--lang", "en", "--phones"], "phones must look like"),
    (["lexicon", "add", "Milei", "mi lei", "--project", "news"], "a project is a folder named NAME.omniproj"),
    (["lexicon", "add", "Milei", "mi lei", "--project", "file.omniproj"], "is a file, not a project folder"),
    (["lexicon", "remove", "Kicillof"], "no entry for 'Kicillof'"),
    (["lexicon", "remove", "ONU", "--lang", "en"], "no entry for 'ONU' in en"),
    (["lexicon", "remove", "ONU", "--project", "none.omniproj"], "no project at none.omniproj"),
    (["lexicon", "list", "--project", "none.omniproj"], "no project at none.omniproj"),
    (["lexicon", "import", "missing.pls"], "no PLS file at missing.pls"),
    (["lexicon", "import", "laughs.pls"], "laughs.pls refused: it declares the XML entity"),
    (["lexicon", "import", "ipa.pls"], "nothing to import (1 lexemes skipped): lexeme 1 ('Nguyen')"),
    (["lexicon", "import", "broken.toml"], "broken.toml is not well-formed XML"),
    (["lexicon", "export", "out.pls", "--lang", "en"], "the lexicon has no entries for en"),
    (["lexicon", "export", "nowhere/out.pls", "--lang", "es"], "output folder nowhere does not exist"),
    (["lexicon", "export", "home/config/lexicon.toml", "--lang", "es"], "writing it would destroy an input"),
    (["lexicon", "list", "--project", "broken.omniproj"], "lexicon.toml is not valid TOML"),
    (["lexicon", "add", "x", "y", "--project", "broken.omniproj"], "lexicon.toml is not valid TOML"),
])
def test_each_bad_input_is_one_line_and_writes_nothing(desk: Path, capsys: pytest.CaptureFixture[str],
                                                       argv: list[str], needle: str) -> None:
    save_lexicon(desk / "home" / "config" / "lexicon.toml", Lexicon((Entry("ONU", "o ene u", "es"),)))
    (desk / "file.omniproj").write_text("not a folder", encoding="utf-8")
    (desk / "broken.omniproj").mkdir()
    (desk / "broken.omniproj" / "lexicon.toml").write_text("[[entry]\n", encoding="utf-8")
    (desk / "broken.toml").write_text("[[entry]\n", encoding="utf-8")
    billion_laughs(desk / "laughs.pls")
    ipa_only(desk / "ipa.pls")
    with open(desk / "huge.pls", "wb") as fh:  # a PLS over the limit: refused by its size, before it is parsed
        fh.truncate(9 << 20)
    before = {p: p.read_bytes() for p in desk.rglob("*") if p.is_file()}
    assert main(argv) == 2
    one_line_error(capsys, needle)
    after = {p: p.read_bytes() for p in desk.rglob("*") if p.is_file() and not p.name.endswith(".lock")}
    assert after == {p: b for p, b in before.items() if not p.name.endswith(".lock")}


# --------------------------------------------------------------------------- what the front-end says for a text

def test_lexicon_test_says_which_entry_applied_and_from_where(desk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "lexicon", "add", "Sheinbaum", "[SH AY1 N B AW0 M]", "--lang", "en", "--phones")
    run(capsys, "lexicon", "add", "Xi Jinping", "shi yin ping")
    run(capsys, "lexicon", "add", "Xi Jinping", "si chin ping", "--project", "news.omniproj")
    out = run(capsys, "lexicon", "test", "Sheinbaum met Xi Jinping on Oct. 14.", "--lang", "en",
              "--project", "news.omniproj")
    spoken, *applied = out.splitlines()
    assert spoken.startswith("[SH AY1 N B AW0 M] met si chin ping on ") and "Oct. 14" not in spoken
    assert applied == ["  'Sheinbaum' -> '[SH AY1 N B AW0 M]' (lexicon: Sheinbaum) [global]",
                       "  'Xi Jinping' -> 'si chin ping' (lexicon: Xi Jinping) [project]"]  # not the date's rule
    assert run(capsys, "lexicon", "test", "Good evening.", "--lang", "en").splitlines() == [
        "Good evening.", "  no lexicon entry applied"]
    # A Spanish text: the English-only phones entry does not apply, the entry for both languages does.
    out = run(capsys, "lexicon", "test", "Sheinbaum y Xi Jinping", "--lang", "es")
    assert out.splitlines()[0] == "Sheinbaum y shi yin ping"


def test_normalize_explain_and_json(desk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "lexicon", "add", "Kicillof", "kisilof", "--lang", "es")
    run(capsys, "lexicon", "add", "Kicillof", "kichilof", "--lang", "es", "--project", "news.omniproj")
    text = "Kicillof dijo que el dólar subió un 3,2 % ⌘"

    data = json.loads(run(capsys, "normalize", text, "--lang", "es", "--json"))
    assert data["written"] == text and data["lang"] == "es"
    spoken = data["spoken"]
    assert spoken.startswith("kisilof dijo que el dólar subió un ") and "3,2" not in spoken
    for span in data["spans"]:  # each span's text is the slice its offsets name, in both forms
        assert text[span["written_start"]:span["written_end"]] == span["written"]
        assert spoken[span["spoken_start"]:span["spoken_end"]] == span["spoken"]
    assert data["spans"][0] == {"written": "Kicillof", "spoken": "kisilof", "written_start": 0, "written_end": 8,
                                "spoken_start": 0, "spoken_end": 7, "rule": "lexicon", "detail": "Kicillof"}
    assert [s["written"] for s in data["spans"]] == ["Kicillof", "3,2 %"]
    assert [(w["written"], w["written_start"]) for w in data["warnings"]] == [("⌘", len(text) - 1)]

    # --explain: the spoken form, then one line per changed span; with --project its entry wins.
    assert main(["normalize", text, "--lang", "es", "--explain", "--project", "news.omniproj"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == spoken.replace("kisilof", "kichilof") and len(lines) == 3
    assert lines[1] == "  'Kicillof' -> 'kichilof' (lexicon: Kicillof)"
    assert lines[2].startswith("  '3,2 %' -> '") and "(percent" in lines[2]
    assert captured.err.strip() == "omnistudio: warning: '⌘': " + data["warnings"][0]["message"]

    assert run(capsys, "normalize", "Buenas noches.", "--lang", "es") == "Buenas noches.\n"


@pytest.mark.parametrize(("argv", "needle"), [
    (["normalize", "  ", "--lang", "es"], "the text is empty"),
    (["normalize", "hola", "--lang", "pt"], "unknown language 'pt'"),
    (["normalize", "hola", "--lang", "es", "--project", "none.omniproj"], "no project at none.omniproj"),
    (["normalize", "hola", "--lang", "es", "--project", "broken.omniproj"], "lexicon.toml is not valid TOML"),
    (["lexicon", "test", "hola", "--lang", "es", "--project", "none.omniproj"], "no project at none.omniproj"),
    (["lexicon", "test", "", "--lang", "es"], "the text is empty"),
])
def test_normalize_bad_input_is_one_line(desk: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                         needle: str) -> None:
    (desk / "broken.omniproj").mkdir()
    (desk / "broken.omniproj" / "lexicon.toml").write_text("[[entry]\n", encoding="utf-8")
    assert main(argv) == 2
    one_line_error(capsys, needle)


def test_a_sentence_that_expands_past_a_sentences_length_is_cut_like_one(
        desk: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a lexicon entry said twice made one sentence of its whole expansion (10 KB: 428 s, 6.5 GB).
    Entries are bounded now, and what a sentence says once expanded is cut as a long written sentence is:
    no text the model gets is longer than a sentence may be."""
    from omnistudio.engine.engine import Engine
    from omnistudio.script import MAX_SENTENCE_CHARS

    long_name = ", ".join(["the very long and official name of an institution"] * 5)  # 254 characters
    run(capsys, "lexicon", "add", "Zorp", long_name, "--lang", "en")
    texts: list[str] = []
    real = Engine.render_tokens

    def spy(self: Engine, batch: list[str], *args: Any, **kwargs: Any) -> Any:
        texts.extend(batch)
        return real(self, batch, *args, **kwargs)

    monkeypatch.setattr(Engine, "render_tokens", spy)
    script = desk / "s.txt"
    script.write_text("Zorp met Zorp today.\n", encoding="utf-8")
    out = desk / "out.wav"
    assert main(["render", str(script), "-o", str(out), "--model", "tiny", "--device", "cpu", "--num-step", "1",
                 "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT]) == 0
    assert len(texts) >= 2 and max(len(t) for t in texts) <= MAX_SENTENCE_CHARS, [len(t) for t in texts]
    assert sum(len(t) for t in texts) >= 2 * len(long_name)  # every part said, none dropped
    import soundfile as sf

    assert sf.info(str(out)).frames > 0
