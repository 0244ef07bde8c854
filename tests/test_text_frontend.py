"""The front-end's contract beyond the corpus: the map from spoken words back to written spans, the
lexicon (whole words, case, language, phones, before the rules), bracketed tags, warnings."""

from __future__ import annotations

import re

import pytest

from omnistudio.errors import UserError
from omnistudio.text import Entry, Lexicon, Spoken, normalize
from tests.support.text_corpus import load_corpus

NEWS_ES = "El dólar cerró a US$ 1.245,50, un 3,2 % más que el 14/10."


def _check_map(spoken: Spoken) -> None:
    """Each spoken word maps back into the written text: inside a changed span, to that whole span; outside,
    to the same word as written."""
    for word in re.finditer(r"\S+", spoken.text):
        start, end = spoken.to_written(*word.span())
        inside = [s for s in spoken.spans if s.spoken_start <= word.start() and word.end() <= s.spoken_end]
        if inside:
            assert (start, end) == (inside[0].written_start, inside[0].written_end), (spoken.text, word.group())
        elif not any(s.spoken_start < word.end() and word.start() < s.spoken_end for s in spoken.spans):
            assert spoken.written[start:end] == word.group(), (spoken.text, word.group())
    for span in (s for s in spoken.spans if s.spoken_end > s.spoken_start):
        assert spoken.to_written(span.spoken_start, span.spoken_end) == (span.written_start, span.written_end)


def test_a_percentage_is_one_written_unit_for_each_of_its_spoken_words() -> None:
    spoken = normalize(NEWS_ES, "es")
    assert spoken.text == ("El dólar cerró a mil doscientos cuarenta y cinco dólares con cincuenta centavos, un tres "
                           "coma dos por ciento más que el catorce de octubre.")
    percent = spoken.text.index("tres coma dos por ciento")
    for word in ("tres", "coma", "dos", "por", "ciento"):
        at = spoken.text.index(word, percent)
        start, end = spoken.to_written(at, at + len(word))
        assert spoken.written[start:end] == "3,2 %"
    start, end = spoken.to_written(spoken.text.index("más"), spoken.text.index("más") + 3)
    assert spoken.written[start:end] == "más"
    assert spoken.to_written(0, len(spoken.text)) == (0, len(spoken.written))
    _check_map(spoken)


def test_every_corpus_sentence_maps_back_word_by_word() -> None:
    for lang in ("es", "en"):
        for line in load_corpus(lang):
            _check_map(normalize(line.written, lang))


def test_explain_names_each_changed_span_and_its_rule() -> None:
    spoken = normalize(NEWS_ES, "es")
    assert spoken.changed
    assert spoken.explain() == [
        "'US$ 1.245,50' -> 'mil doscientos cuarenta y cinco dólares con cincuenta centavos' (money: US$ = dólares)",
        "'3,2 %' -> 'tres coma dos por ciento' (percent)",
        "'14/10' -> 'catorce de octubre' (date)"]
    plain = normalize("Buenas noches.", "es")
    assert not plain.changed and plain.spans == () and plain.explain() == []


def test_whitespace_is_collapsed_as_the_sentence_splitter_does() -> None:
    spoken = normalize("  Hubo\t3 \n casos  ", "es")
    assert spoken.written == "Hubo 3 casos"
    assert spoken.text == "Hubo tres casos"


def test_an_unknown_language_is_one_line() -> None:
    with pytest.raises(UserError, match="unknown language 'fr'"):
        normalize("Bonjour", "fr")


# ------------------------------------------------------------------ lexicon
def test_an_entry_replaces_whole_words_only() -> None:
    lexicon = Lexicon((Entry("Xi", "Shi"),))
    spoken = normalize("Xi habló del xilófono, de Xilófono y del taxi de Xi.", "es", lexicon)
    assert spoken.text == "Shi habló del xilófono, de Xilófono y del taxi de Shi."
    assert [(s.rule, s.detail) for s in spoken.spans] == [("lexicon", "Xi")] * 2


def test_case_sensitive_and_insensitive_entries() -> None:
    folded = Lexicon((Entry("sheinbaum", "Sheinbáum"),))
    assert normalize("sheinBAUM y Sheinbaum", "es", folded).text == "Sheinbáum y Sheinbáum"
    exact = Lexicon((Entry("Sheinbaum", "Sheinbáum", case_sensitive=True),))
    assert normalize("sheinBAUM y Sheinbaum", "es", exact).text == "sheinBAUM y Sheinbáum"


def test_an_entry_applies_to_its_language_or_to_both() -> None:
    lexicon = Lexicon((Entry("Milei", "Miléi", lang="es"), Entry("Kicillof", "Kisilof")))
    assert normalize("Milei y Kicillof", "es", lexicon).text == "Miléi y Kisilof"
    assert normalize("Milei and Kicillof", "en", lexicon).text == "Milei and Kisilof"


def test_phones_pass_to_the_model_untouched() -> None:
    lexicon = Lexicon((Entry("Sheinbaum", "[SH EY1 N B AW0 M]", lang="en", phones=True),))
    spoken = normalize("Sheinbaum won 59% of the vote.", "en", lexicon)
    assert spoken.text == "[SH EY1 N B AW0 M] won fifty-nine percent of the vote."


def test_the_lexicon_wins_over_the_rules_and_is_not_read_again() -> None:
    lexicon = Lexicon((Entry("FMI", "Fondo Monetario"), Entry("Ruta 40", "la Ruta 40"),
                       Entry("Xi Jinping", "Shi Yinping"), Entry("Xi", "Si")))
    spoken = normalize("El FMI, Xi Jinping y Xi en la Ruta 40.", "es", lexicon)
    assert spoken.text == "El Fondo Monetario, Shi Yinping y Si en la la Ruta 40."  # the longest entry first
    assert [s.rule for s in spoken.spans] == ["lexicon"] * 4


# ------------------------------------------------------------------ brackets, warnings, controls
def test_bracketed_tags_and_phones_pass_through() -> None:
    spoken = normalize("[laughter] Hubo 3 casos [B EY1 S] [pause 0.6] y 2 más.", "es")
    assert spoken.text == "[laughter] Hubo tres casos [B EY1 S] [pause 0.6] y dos más."
    assert not spoken.warnings


def test_an_unknown_symbol_is_kept_with_a_warning_where_it_is() -> None:
    written = "Ganó © 2024 con 3 ✓ y 🇦🇷 al final"
    spoken = normalize(written, "es")
    assert spoken.text == "Ganó © dos mil veinticuatro con tres ✓ y 🇦🇷 al final"
    marks = [(written[w.written_start:w.written_end], w.message) for w in spoken.warnings]
    assert marks == [("©", "unknown symbol '©' kept as written"), ("✓", "unknown symbol '✓' kept as written"),
                     ("🇦🇷", "unknown symbol '🇦🇷' kept as written")]


def test_control_characters_are_dropped() -> None:
    spoken = normalize("\x07Hubo 3\x00 casos \x1b hoy", "es")
    assert spoken.text == "Hubo tres casos hoy"
    _check_map(spoken)


def test_the_same_text_gives_the_same_spoken_form() -> None:
    assert normalize(NEWS_ES, "es") == normalize(NEWS_ES, "es")


@pytest.mark.parametrize(("written", "spoken"), [
    ("1 casa", "una casa"), ("21 personas", "veintiuna personas"), ("200 casas", "doscientas casas"),
    ("201 casas", "doscientas una casas"), ("21 años", "veintiún años"), ("1 de cada 3", "uno de cada tres"),
    ("200 millones", "doscientos millones"), ("31 mujeres", "treinta y una mujeres"),
    ("500 páginas", "quinientas páginas"), ("1 hombre", "un hombre"),
])
def test_spanish_numbers_agree_with_the_noun_they_count(written: str, spoken: str) -> None:
    """Feminine agreement, focused (a broken rule once showed only in the corpus's overall rate)."""
    assert normalize(written, "es").text == spoken


@pytest.mark.parametrize(("lang", "written", "spoken"), [
    ("en", "5G, 3D, 4x4, B2B, 4K", "five G, three D, four by four, B to B, four K"),
    ("en", "H2O and 1920x1080", "H two O and one thousand nine hundred twenty by one thousand eighty"),
    ("en", "Windows11", "Windows eleven"),
    ("es", "5G, 3D, 4x4, H2O", "cinco ge, tres de, cuatro por cuatro, hache dos o"),
    ("es", "Elecciones2023", "Elecciones dos mil veintitrés"),
    ("en", "G7, MP3, 2nd, 9am, 5km", "G seven, M P three, second, nine A M, five kilometers"),  # earlier rules'
])
def test_digits_glued_to_letters_are_read_as_a_newsreader_reads_them(lang: str, written: str, spoken: str) -> None:
    """Before: "fiveG, threeD, fourxfour, BtwoB" (the number rule read the digits alone)."""
    said = normalize(written, lang)
    assert said.text == spoken and said.warnings == ()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_an_unknown_mix_of_digits_and_letters_is_kept_with_a_warning(lang: str) -> None:
    said = normalize("The 1e5 and i7 chips.", lang)
    assert said.text == "The 1e5 and i7 chips."  # not "oneefive"
    assert [said.written[w.written_start:w.written_end] for w in said.warnings] == ["1e5", "i7"]
    assert all("lexicon entry" in w.message for w in said.warnings)
