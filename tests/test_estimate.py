"""Estimated word times (captions/estimate.py), the syllable counter, written words through the front-end's
span map, and the pauses that alignment sets Whisper's words against (captions/pauses.py)."""

from __future__ import annotations

import numpy as np
import pytest

from omnistudio.captions.estimate import estimate_words, spread
from omnistudio.captions.pauses import MIN_PAUSE_S, assign_islands, speech_islands
from omnistudio.captions.syllables import syllables
from omnistudio.captions.words import written_words
from omnistudio.errors import UserError
from omnistudio.text import normalize


@pytest.mark.parametrize(("word", "count"), [
    ("poesía", 4), ("país", 2), ("día", 2), ("leer", 2), ("creo", 2),  # two strong vowels: a hiatus
    ("cielo", 2), ("cuidado", 3), ("guerra", 2), ("Uruguay", 3), ("inflación", 3),  # a weak vowel joins
    ("hoy", 1), ("muy", 1), ("ayer", 2), ("y", 1),  # y: a vowel at the end or alone, else a consonant
])
def test_spanish_syllables_follow_the_diphthong_rule(word: str, count: int) -> None:
    assert syllables(word, "es") == count


@pytest.mark.parametrize(("word", "count"), [
    ("time", 1), ("hopes", 1), ("named", 1), ("whole", 1),  # a silent e
    ("table", 2), ("wanted", 2), ("horses", 2), ("free", 1), ("the", 1),  # ... and where it is not
    ("yellow", 2), ("minister", 3), ("percent", 2), ("b", 1),
])
def test_english_syllables_drop_the_silent_e(word: str, count: int) -> None:
    assert syllables(word, "en") == count


def test_a_symbol_is_counted_through_what_is_said_for_it() -> None:
    spoken = normalize("La inflación fue del 3,2 % en marzo.", "es")
    words = written_words(spoken)
    assert [w.text for w in words] == ["La", "inflación", "fue", "del", "3,2 %", "en", "marzo."]
    assert words[4].said == "tres coma dos por ciento"
    assert syllables(words[4].said, "es") == 7
    assert spoken.written[words[4].start:words[4].end] == "3,2 %"


def test_estimated_words_share_the_span_by_syllables() -> None:
    spoken = normalize("La inflación fue del 3,2 % en marzo.", "es")
    words = estimate_words(spoken, 10.0, 12.0)
    # La 1, inflación 3, fue 1, del 1, "3,2 %" 7 (tres coma dos por ciento), en 1, marzo 2: 16 syllables in 2 s
    assert [w.text for w in words] == ["La", "inflación", "fue", "del", "3,2 %", "en", "marzo."]
    assert words[0].start == 10.0 and words[-1].end == 12.0
    assert all(a.end == pytest.approx(b.start) for a, b in zip(words, words[1:]))  # no gaps, in order
    assert words[4].end - words[4].start == pytest.approx(2.0 * 7 / 16)
    assert words[1].end - words[1].start == pytest.approx(2.0 * 3 / 16)
    assert all(w.estimated and w.confidence is None for w in words)
    assert [(w.written_start, w.written_end) for w in words][4] == (21, 26)


def test_english_numbers_weigh_as_they_are_said() -> None:
    words = estimate_words(normalize("Inflation was 3.2% in March.", "en"), 0.0, 1.0)
    by_text = {w.text: w.end - w.start for w in words}
    # "three point two percent" is 5 syllables, "in" 1: the number takes five times as long
    assert by_text["3.2%"] == pytest.approx(5 * by_text["in"])


def test_a_word_said_as_nothing_takes_no_time() -> None:
    words = estimate_words(normalize("Hola — qué tal.", "es"), 0.0, 1.0)
    dash = next(w for w in words if w.text == "—")
    assert dash.start == dash.end
    assert words[-1].end == 1.0


def test_spread_edge_cases() -> None:
    assert spread([0, 0], 1.0, 2.0) == [(1.0, 1.5), (1.5, 2.0)]  # nothing to weigh: equal shares
    assert spread([], 1.0, 2.0) == []
    assert spread([1, 1], 3.0, 3.0) == [(3.0, 3.0), (3.0, 3.0)]
    with pytest.raises(UserError, match="cannot end before it starts"):
        spread([1], 2.0, 1.0)


def _bursts(pieces: list[tuple[float, float]], total: float, rate: int = 24_000) -> np.ndarray:
    """A 220 Hz tone where ``pieces`` say (seconds), silence elsewhere."""
    t = np.arange(int(total * rate)) / rate
    pcm = np.zeros_like(t)
    for start, end in pieces:
        on = (t >= start) & (t < end)
        pcm[on] = 0.3 * np.sin(2 * np.pi * 220 * t[on])
    return pcm.astype(np.float32)


def test_speech_islands_are_found_where_the_sound_is() -> None:
    pcm = _bursts([(0.3, 0.8), (1.2, 1.5), (1.5 + MIN_PAUSE_S / 2, 2.0)], 2.5)
    islands = speech_islands(pcm, 24_000)
    assert len(islands) == 2  # the short gap inside the second stretch is no pause
    (a0, a1), (b0, b1) = islands
    assert abs(a0 - 0.3) < 0.011 and abs(a1 - 0.8) < 0.011
    assert abs(b0 - 1.2) < 0.011 and abs(b1 - 2.0) < 0.011
    assert speech_islands(np.zeros(24_000, np.float32), 24_000) == []


def test_words_go_to_the_islands_nearest_their_middles() -> None:
    islands = [(0.2, 0.8), (1.2, 2.0)]
    assert assign_islands([0.5, 1.1, 1.5], islands) == [0, 1, 1]
    assert assign_islands([0.1, 0.4, 1.9], islands) == [0, 0, 1]
    assert assign_islands([0.1, 0.4, 0.7], islands) == [0, 0, 0]  # the second island is too far: left empty
    assert assign_islands([0.5, 0.7, 0.95], islands) == [0, 0, 1]  # nearer the first, but not left empty
    assert assign_islands([0.5], []) == []
