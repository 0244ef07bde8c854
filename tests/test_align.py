"""Word times by alignment (voices/align.py): accuracy on flite ground truth with the real Whisper model,
the mapping to the written words and the fallbacks with stand-in transcribers. Whisper tier (TIERS)."""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np
import pytest

from omnistudio.bench.align import MEDIAN_BOUND_MS, P95_BOUND_MS, align_benchmark
from omnistudio.bench.onsets import ground_truth
from omnistudio.text import normalize
from omnistudio.voices import align
from omnistudio.voices.align import align_sentence
from omnistudio.voices.asr import HeardWord

RATE = 24_000


class Heard:
    """A stand-in transcriber: hears ``words`` (text, start, end, probability) whatever the audio."""

    def __init__(self, words: list[tuple[str, float, float, float]], langs: tuple[str, ...] = ("en", "es")) -> None:
        self.words = [HeardWord(*w) for w in words]
        self.langs = langs
        self.calls = 0

    def can_hear(self, lang: str) -> bool:
        return lang in self.langs

    def heard_words(self, wave: np.ndarray, sample_rate: int, lang: str) -> list[HeardWord]:
        self.calls += 1
        return self.words


def sound(seconds: float, silent: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """A tone for ``seconds``, silent over ``silent`` (start, end)."""
    t = np.arange(int(seconds * RATE)) / RATE
    pcm = 0.3 * np.sin(2 * np.pi * 220 * t)
    pcm[(t >= silent[0]) & (t < silent[1])] = 0.0
    return pcm.astype(np.float32)


def test_onsets_on_flite_ground_truth_are_within_the_bounds(whisper: Any) -> None:
    if shutil.which("flite") is None:
        pytest.skip("Debian flite not installed: apt-get install flite (the CI test command does)")
    result = align_benchmark(whisper, ground_truth(200))
    every = result["all"]
    assert every["words"] >= 200
    assert every["median_ms"] <= MEDIAN_BOUND_MS, result
    assert every["p95_ms"] <= P95_BOUND_MS, result
    assert result["estimated_words"] < 0.1 * every["words"], result  # most words measured, not estimated


def test_a_number_is_one_written_word_timed_by_its_spoken_words() -> None:
    spoken = normalize("La inflación fue del 3,2 % en marzo.", "es")
    heard = Heard([("La", 0.0, 0.2, 0.9), ("inflación", 0.2, 0.8, 0.9), ("fue", 0.8, 1.0, 0.8),
                   ("del", 1.0, 1.2, 0.9), ("tres", 1.3, 1.5, 0.7), ("coma", 1.5, 1.8, 0.6),
                   ("dos", 1.8, 2.0, 0.95), ("por", 2.0, 2.1, 0.9), ("ciento", 2.1, 2.5, 0.9),
                   ("en", 2.5, 2.6, 0.9), ("marzo.", 2.6, 3.0, 0.9)])
    words = align_sentence(heard, sound(3.2), RATE, spoken, "es", offset_s=10.0, span=(10.0, 13.2))
    assert [w.text for w in words] == ["La", "inflación", "fue", "del", "3,2 %", "en", "marzo."]
    number = words[4]
    shift = align.INNER_SHIFT_S
    assert number.start == pytest.approx(10.0 + 1.3 + shift)  # "tres" starts it...
    assert number.end == pytest.approx(10.0 + 2.5 + shift)  # ... "ciento" ends it
    assert number.confidence == pytest.approx(0.6)  # the least sure of its five spoken words
    assert (number.written_start, number.written_end) == (21, 26)
    assert not any(w.estimated for w in words)
    assert words[0].start == pytest.approx(10.0)  # the first word starts where the sound does


def test_whisper_digits_meet_the_spoken_words() -> None:
    spoken = normalize("Inflation was 3.2% in March.", "en")  # said "three point two percent"
    heard = Heard([("Inflation", 0.0, 0.5, 0.9), ("was", 0.5, 0.7, 0.9), ("3.2%", 0.7, 1.7, 0.8),
                   ("in", 1.7, 1.8, 0.9), ("March.", 1.8, 2.2, 0.9)])
    words = align_sentence(heard, sound(2.4), RATE, spoken, "en", 0.0, (0.0, 2.4))
    number = next(w for w in words if w.text == "3.2%")
    assert not number.estimated and number.confidence == pytest.approx(0.8)
    assert number.start == pytest.approx(0.7 + align.INNER_SHIFT_S)
    assert number.end == pytest.approx(1.7 + align.INNER_SHIFT_S)


def test_an_unheard_word_is_estimated_between_its_neighbours() -> None:
    spoken = normalize("The minister resigned after twelve years.", "en")
    heard = Heard([("The", 0.0, 0.2, 0.9), ("minister", 0.2, 0.7, 0.9), ("is", 0.7, 0.8, 0.5),
                   ("signed", 0.8, 1.2, 0.5), ("after", 1.2, 1.5, 0.9), ("twelve", 1.5, 1.9, 0.9),
                   ("years.", 1.9, 2.3, 0.9)])
    words = align_sentence(heard, sound(2.5), RATE, spoken, "en", 5.0, (5.0, 7.5))
    by_text = {w.text: w for w in words}
    resigned, minister, after = by_text["resigned"], by_text["minister"], by_text["after"]
    assert resigned.estimated and resigned.confidence is None
    assert not minister.estimated and not after.estimated
    assert resigned.start == pytest.approx(minister.end) and resigned.end == pytest.approx(after.start)
    assert all(a.end <= b.start + 1e-9 for a, b in zip(words, words[1:]))


def test_the_first_word_after_a_pause_starts_where_the_sound_does() -> None:
    spoken = normalize("Good evening, and welcome.", "en")
    # Whisper's words tile the time: "and" starts inside the pause (1.0 to 1.6 s) before it
    heard = Heard([("Good", 0.0, 0.4, 0.9), ("evening,", 0.4, 1.1, 0.9), ("and", 1.1, 1.9, 0.9),
                   ("welcome.", 1.9, 2.5, 0.9)])
    words = align_sentence(heard, sound(2.6, silent=(1.0, 1.6)), RATE, spoken, "en", 0.0, (0.0, 2.6))
    assert words[2].text == "and"
    assert abs(words[2].start - 1.6) <= 0.01
    assert words[1].end <= 1.0 + 0.01  # "evening," ends where its sound ends, not in the pause


def test_times_stay_inside_the_sentence_span() -> None:
    spoken = normalize("Heavy rain is expected on Friday.", "en")
    heard = Heard([("Heavy", 0.0, 0.3, 0.9), ("rain", 0.3, 0.6, 0.9), ("is", 0.6, 0.7, 0.9),
                   ("expected", 0.7, 1.2, 0.9), ("on", 1.2, 1.3, 0.9), ("Friday.", 1.3, 2.9, 0.9)])
    words = align_sentence(heard, sound(3.0), RATE, spoken, "en", 1.0, (1.2, 2.5))
    assert all(1.2 <= w.start <= w.end <= 2.5 for w in words)
    assert words[-1].end == pytest.approx(2.5)


def test_low_confidence_estimates_the_whole_sentence() -> None:
    spoken = normalize("Heavy rain is expected.", "en")
    heard = Heard([("Heavy", 0.0, 0.3, 0.1), ("rain", 0.3, 0.6, 0.2), ("is", 0.6, 0.7, 0.1),
                   ("expected.", 0.7, 1.2, 0.2)])
    assert align.MIN_MEAN_CONFIDENCE > 0.15
    words = align_sentence(heard, sound(1.3), RATE, spoken, "en", 0.0, (0.0, 1.3))
    assert all(w.estimated and w.confidence is None for w in words)


def test_spanish_with_the_english_model_is_estimated(whisper: Any) -> None:
    assert not whisper.can_hear("es")  # the packaged model is tiny.en
    spoken = normalize("El dólar cerró a US$ 1.245,50 el 14/10.", "es")
    words = align_sentence(whisper, sound(4.0), RATE, spoken, "es", 20.0, (20.5, 23.5))
    assert [w.text for w in words] == ["El", "dólar", "cerró", "a", "US$ 1.245,50", "el", "14/10."]
    assert all(w.estimated and w.confidence is None for w in words)
    assert words[0].start == 20.5 and words[-1].end == 23.5
    assert all(20.5 <= w.start <= w.end <= 23.5 for w in words)


def test_a_model_that_cannot_hear_the_language_is_not_asked() -> None:
    heard = Heard([("Hola", 0.0, 0.5, 0.9)], langs=("en",))
    words = align_sentence(heard, sound(1.0), RATE, normalize("Hola a todos.", "es"), "es", 0.0, (0.0, 1.0))
    assert heard.calls == 0 and all(w.estimated for w in words)


def test_a_span_that_ends_before_it_starts_is_one_line() -> None:
    from omnistudio.errors import UserError

    with pytest.raises(UserError, match="cannot end before it starts"):
        align_sentence(Heard([]), sound(1.0), RATE, normalize("Hi.", "en"), "en", 0.0, (2.0, 1.0))
