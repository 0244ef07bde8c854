"""Bad input never crashes the front-end: 10,000 random Unicode strings (hypothesis), every emoji
block, right-to-left scripts with bidi controls, C0/C1 control characters, combining marks, digits of
other scripts, a 400-digit number and long repetitive inputs. Each gets a Spoken whose spans lie in
bounds, in order, and rebuild the spoken text from the written one."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnistudio.text import Spoken, normalize


def _check(text: str, lang: str) -> Spoken:
    spoken = normalize(text, lang)
    written = " ".join(text.split())
    assert spoken.written == written and spoken.lang == lang
    rebuilt, at = [], 0
    for span in spoken.spans:
        assert at <= span.written_start < span.written_end <= len(written), span
        assert 0 <= span.spoken_start <= span.spoken_end <= len(spoken.text), span
        rebuilt.append(written[at:span.written_start])
        assert sum(map(len, rebuilt)) == span.spoken_start, span  # spoken offsets agree with the pieces
        rebuilt.append(spoken.text[span.spoken_start:span.spoken_end])
        at = span.written_end
    rebuilt.append(written[at:])
    assert "".join(rebuilt) == spoken.text
    for warning in spoken.warnings:
        assert 0 <= warning.written_start < warning.written_end <= len(written) and warning.message
    start, end = spoken.to_written(0, len(spoken.text))
    assert 0 <= start <= end <= len(written)
    return spoken


@settings(max_examples=10_000, deadline=None)
@given(st.text(), st.sampled_from(["es", "en"]))
def test_any_text_gets_a_spoken_form(text: str, lang: str) -> None:
    _check(text, lang)


EMOJI_BLOCKS = [(0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F700, 0x1F77F), (0x1F780, 0x1F7FF),
                (0x1F800, 0x1F8FF), (0x1F900, 0x1F9FF), (0x1FA00, 0x1FA6F), (0x1FA70, 0x1FAFF), (0x2600, 0x26FF),
                (0x2700, 0x27BF), (0x1F1E6, 0x1F1FF), (0x1F3FB, 0x1F3FF), (0x1F000, 0x1F02F), (0x1F0A0, 0x1F0FF)]
SEQUENCES = ["👩‍👩‍👧‍👦", "👍🏽", "🇦🇷🇺🇸", "1️⃣ 2️⃣ #️⃣", "🏴󠁧󠁢󠁥󠁮󠁧󠁿", "❤️‍🔥", "🧑🏿‍🚀", "☺︎ ☺️"]


@pytest.mark.parametrize(("first", "last"), EMOJI_BLOCKS, ids=[f"U+{a:X}" for a, _ in EMOJI_BLOCKS])
def test_every_emoji_is_kept_with_a_warning(first: int, last: int) -> None:
    emoji = "".join(chr(c) for c in range(first, last + 1) if unicodedata.category(chr(c)).startswith("S"))
    for lang in ("es", "en"):
        spoken = _check(f"Hubo 3 {emoji} y 21 {emoji[:5]}.", lang)
        assert emoji in spoken.text
        assert len(spoken.warnings) == 2 and "unknown symbol" in spoken.warnings[0].message


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_emoji_sequences(sequence: str) -> None:
    for lang in ("es", "en"):
        assert sequence.replace(" ", "") in _check(f"Ganó {sequence} por 2 goles", lang).text.replace(" ", "")


BIDI = "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@pytest.mark.parametrize("text", [
    "قال الرئيس إن ٣٤٥ شخصا \u200fأصيبوا في 2024\u200f.",
    "\u202bהממשלה אישרה 1,200 מיליון ₪ ב-14/10\u202c",
    f"El {BIDI} dólar {BIDI[::-1]} subió 3,2 %",
    "مرحبا [laughter] 12:30 h",
    "۱۲۳ ०१२ ௧௨ ១២ 12",  # digits of other scripts are not read as numbers
])
def test_right_to_left_and_bidi_controls(text: str) -> None:
    for lang in ("es", "en"):
        _check(text, lang)


def test_c0_and_c1_control_characters_are_dropped() -> None:
    controls = "".join(chr(c) for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)])
    for lang in ("es", "en"):
        spoken = _check(f"Hubo {controls} 3 casos{controls}.", lang)
        assert spoken.text in ("Hubo tres casos.", "Hubo three casos.")
        assert all(unicodedata.category(c) != "Cc" for c in spoken.text)


def test_combining_marks() -> None:
    for lang in ("es", "en"):
        _check("Cafe\u0301 3\u0301 a\u0300\u0301\u0302\u0303\u0304 \u0301 US$\u0301 5 Z\u0336\u0337a\u0338", lang)
        _check("\u0301" * 500, lang)


def test_a_400_digit_number_is_read_digit_by_digit() -> None:
    digits = "1234567890" * 40
    spoken = _check(f"El número {digits} es largo.", "es")
    assert len(spoken.text.split()) == 400 + 4 and spoken.text.startswith("El número uno dos tres")
    assert len(_check(f"It is {digits}.", "en").text.split()) == 400 + 2
    _check(".".join(["123"] * 200), "es")
    _check(",".join(["123"] * 200), "en")


@pytest.mark.parametrize("piece", ["1-", "1.", "1,", "@", "#", "[", "]", "US$", "$", "%", "-1", "www.", "a@b.", "(1)",
                                   "I ", "XX ", "1/", "1:", "A.", "Sr. ", "+1 ", "1.º ", "3 p. m. ", "Juan II ",
                                   "la Lic. ", "Main St. ", "km 5 ", "0800-"])
def test_long_repetitive_input(piece: str) -> None:
    for lang in ("es", "en"):
        _check(piece * 500, lang)


def test_lone_surrogates_and_private_use() -> None:
    for lang in ("es", "en"):
        _check("Hubo \ud800 3 \udfff casos \ue000 \U000f0000", lang)
