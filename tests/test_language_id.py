"""Language identification of script paragraphs (omnistudio.text.language, lingua restricted to es/en)."""

from __future__ import annotations

from omnistudio.script import parse_script
from omnistudio.studio.languages import paragraph_languages
from omnistudio.text.language import Mismatch, mismatch_summary, detect, mismatches

DOW = "The Dow rose 1.2% to 38,450 points, and oil fell to $78.40 a barrel."


def test_detect_says_a_language_only_when_sure() -> None:
    assert detect(DOW) == "en"
    assert detect("El presidente habló hoy en Madrid sobre la economía.") == "es"
    assert detect("OK.") is None  # too short to tell
    assert detect("Buenas noches.") is None  # two words
    assert detect("[laughter] [pause 0.5] Hola.") is None  # inline tags are not words


def test_english_tagged_spanish_is_flagged_and_spanish_is_not() -> None:
    script = parse_script(f"[valentina:es] Buenas noches a todos, estas son las noticias.\n[ruby:es] {DOW}\n"
                          "OK.\n[:en] Good evening, and welcome to the news at nine.", "en")
    assert mismatches(script.sentences) == [Mismatch(2, "es", "en", "ruby")]


def test_a_short_line_is_never_flagged() -> None:
    assert mismatches(parse_script("[:es] OK.\n[:en] Buenas noches.").sentences) == []


def test_a_paragraph_is_judged_whole_and_described_in_one_line() -> None:
    # two sentences of one line: judged together, flagged once, by its line number
    script = parse_script(f"Good evening.\n[:es] {DOW} Oil fell again today.\n[storm:en] Hoy votaron tres "
                          "millones de personas en las elecciones.", "en")
    found = mismatches(script.sentences)
    assert found == [Mismatch(2, "es", "en", None), Mismatch(3, "en", "es", "storm")]
    assert mismatch_summary(found) == ("line 2 reads as English but is read in Spanish (tag it [:en]); "
                               "line 3 reads as Spanish but is read in English (tag it [storm:es])")
    assert mismatch_summary(found * 3, most=2).endswith("; and 4 more")


def test_paragraph_languages_per_editor_row_and_a_half_typed_script() -> None:
    assert paragraph_languages(f"[valentina:es] Buenas noches.\n\n[ruby] {DOW}\n[storm:es] {DOW}", "en") == {
        0: ("es", False), 2: ("en", False), 3: ("es", True)}
    assert paragraph_languages("[ruby Good evening, everyone at home.", "en") == {}  # an unclosed tag
    assert paragraph_languages("", "en") == {}
