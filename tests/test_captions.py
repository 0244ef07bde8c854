"""Caption cues and files: every cue under the broadcast limits, inside its sentence's span, breaks at
clause boundaries, no word alone on a line; SRT and WebVTT read back with their libraries, the
WebVTT's word timestamps in order (words estimated by syllables through ``voices/words.py``, or given)."""

from __future__ import annotations

import pytest

from omnistudio.captions.cues import CaptionLimits, Cue, build_cues
from omnistudio.captions.formats import (CaptionOptions, ReadCue, caption_texts, check_formats, read_srt, read_vtt,
                                         vtt_text)
from omnistudio.captions.timing import SentenceTiming, WordTime
from omnistudio.errors import UserError
from omnistudio.voices.words import with_words

LIMITS = CaptionLimits()
EN_LONG = ("The minister said on Tuesday that the new budget, which parliament will debate next week, includes "
           "deep cuts to health and education, but the opposition and several unions have already announced "
           "protests in the capital and in three other cities, because they say the plan will hurt the poorest "
           "families most while leaving the largest companies untouched for another year.")
ES_LONG = ("El ministro dijo el martes que el nuevo presupuesto, que el Congreso debatirá la semana próxima, "
           "incluye recortes profundos en salud y educación, pero la oposición y varios sindicatos ya anunciaron "
           "protestas en la capital y en otras tres ciudades, porque sostienen que el plan golpeará sobre todo a "
           "las familias más pobres mientras deja intactas a las grandes empresas otro año.")
SHORT = {"en": "Good evening, everyone.", "es": "Buenas noches, Argentina."}


def timed(texts: list[tuple[str, str]], cps: float = 14.0, pause: float = 0.45, start: float = 0.3) -> list[SentenceTiming]:
    """Sentences one after another, each lasting its length at ``cps`` characters a second (a newsreader's
    pace; 0.6 s at least), with their words spread evenly (the words every caption gets today)."""
    out, at = [], start
    for index, (text, lang) in enumerate(texts):
        end = at + max(0.6, len(text) / cps)
        out.append(SentenceTiming(index, text, text, lang, at, end))
        at = end + pause
    return with_words(out)


def check_limits(cues: list[Cue] | list[ReadCue], sentences: list[SentenceTiming], limits: CaptionLimits = LIMITS) -> None:
    """Every limit a cue must keep, and where it may give way, that it gives way only as documented."""
    spans = {s.index: s for s in sentences}
    owner = [_owner(cue, sentences) for cue in cues]
    for k, cue in enumerate(cues):
        sentence = spans[owner[k]]
        duration, chars = cue.end - cue.start, len(" ".join(cue.lines))
        assert 1 <= len(cue.lines) <= limits.max_lines, cue
        assert all(0 < len(line) <= limits.max_line_chars for line in cue.lines), cue
        assert sentence.start - 1e-3 <= cue.start < cue.end <= sentence.end + 1e-3, (cue, sentence)
        assert duration <= limits.max_duration_s + 1e-3, cue
        # the minimum time and the reading speed hold wherever the sentence's own span allows them
        needs = sum(max(limits.min_duration_s, len(" ".join(c.lines)) / limits.max_chars_per_s)
                    for c, o in zip(cues, owner) if o == owner[k])
        if needs <= sentence.end - sentence.start:
            assert duration >= limits.min_duration_s - 1e-3, cue
            assert chars / duration <= limits.max_chars_per_s + 0.05, (cue, chars / duration)
        if k:
            assert cues[k - 1].end <= cue.start + 1e-3, (cues[k - 1], cue)  # in order, never overlapping
        if limits.avoid_orphans and len(sentence.text.split()) >= 3:
            assert all(len(line.split()) > 1 for line in cue.lines), cue  # no word alone on a line


def _owner(cue: Cue | ReadCue, sentences: list[SentenceTiming]) -> int:
    if isinstance(cue, Cue):
        return cue.sentence
    return next(s.index for s in sentences if s.start - 1e-3 <= cue.start < s.end)


@pytest.mark.parametrize("lang,long", [("en", EN_LONG), ("es", ES_LONG)])
def test_cues_keep_every_limit_on_long_and_short_sentences(lang: str, long: str) -> None:
    assert len(long.split()) >= 60
    sentences = timed([(SHORT[lang], lang), ("Thank you all." if lang == "en" else "Muchas gracias, señores.", lang),
                       (long, lang), ("Sí." if lang == "es" else "Yes.", lang)])
    cues = build_cues(sentences)
    check_limits(cues, sentences)
    # never across sentences: each sentence's words, in order, are exactly its cues' words
    for sentence in sentences:
        mine = [c for c in cues if c.sentence == sentence.index]
        assert " ".join(line for c in mine for line in c.lines) == " ".join(sentence.text.split())
        assert [w.text for c in mine for w in c.words] == [w.text for w in sentence.words]
    long_cues = [c for c in cues if c.sentence == 2]
    assert 4 <= len(long_cues) <= len(long) / LIMITS.max_line_chars  # cues fill more than a line on average
    assert [len(c.lines) for c in cues if c.sentence in (0, 1, 3)] == [1, 1, 1]  # short ones: one line, one cue


def test_three_word_sentence_is_one_line_and_a_one_word_sentence_shows_alone() -> None:
    sentences = timed([("Good evening, everyone.", "en"), ("Hola.", "es")])
    cues = build_cues(sentences)
    assert [c.lines for c in cues] == [("Good evening, everyone.",), ("Hola.",)]
    check_limits(cues, sentences)


def test_breaks_fall_at_clause_boundaries() -> None:
    text = ("The storm closed the airport on Monday, flights were moved to Ezeiza, and the port stayed shut "
            "all morning, officials said.")
    es = ("La tormenta cerró el aeropuerto el lunes, los vuelos pasaron a Ezeiza, y el puerto siguió cerrado "
          "toda la mañana, dijeron las autoridades.")
    sentences = timed([(text, "en"), (es, "es")])
    cues = build_cues(sentences)
    lines = [line for c in cues for line in c.lines]
    assert all(line.endswith((",", ".")) for line in lines), lines
    # without a comma, the break goes before the conjunction, and never after an article or preposition
    plain = timed([("The mayor spoke briefly and then left the hall in silence", "en"),
                   ("El intendente habló brevemente y después dejó la sala en silencio", "es")])
    assert [c.lines for c in build_cues(plain)] == [("The mayor spoke briefly", "and then left the hall in silence"),
                                                    ("El intendente habló brevemente",
                                                     "y después dejó la sala en silencio")]
    weak = timed([("Officials confirmed on Monday the closure of the border crossing", "en")])
    assert [c.lines for c in build_cues(weak)] == [("Officials confirmed on Monday", "the closure of the border crossing")]


def test_no_word_alone_on_a_line_where_another_break_avoids_it() -> None:
    # the comma makes the cheapest break by punctuation and balance alone leave the name alone on a line
    text = "The court confirmed the result on Sunday, Vázquez-Rodríguez."
    sentences = timed([(text, "en")])
    kept = build_cues(sentences)
    assert [c.lines for c in kept] == [("The court confirmed the result", "on Sunday, Vázquez-Rodríguez.")]
    loose = build_cues(sentences, CaptionLimits(avoid_orphans=False))
    assert [c.lines for c in loose] == [("The court confirmed the result on Sunday,", "Vázquez-Rodríguez.")]
    # two words that cannot share a line: one each is all there is
    pair = "Constantinopolitanísimos anticonstitucionalmente."
    assert [c.lines for c in build_cues(timed([(pair, "es")]))] == [tuple(pair.split())]


def test_slow_speech_is_cut_at_the_longest_cue() -> None:
    # 14 words that fit two lines, spoken over 20 s: no cue lasts more than 7 s
    text = "We will return after a short break with more news from the capital tonight."
    sentence = with_words([SentenceTiming(0, text, text, "en", 1.0, 21.0)])
    cues = build_cues(sentence)
    assert len(cues) >= 3
    check_limits(cues, sentence)


def test_a_short_cue_is_held_for_its_minimum_inside_its_sentence() -> None:
    # the words say "Breaking news." lasts 0.5 s, but the sentence's span runs on: the cue is held 1 s
    words = (WordTime("Breaking", 2.0, 2.25, 0.9), WordTime("news.", 2.25, 2.5, 0.9))
    sentence = [SentenceTiming(0, "Breaking news.", "Breaking news.", "en", 1.8, 4.0, words)]
    (cue,) = build_cues(sentence)
    assert cue.start == pytest.approx(2.0) and cue.end == pytest.approx(3.0)
    # near the sentence's end there is no room after it: it starts earlier instead, still inside the span
    late = [SentenceTiming(0, "Breaking news.", "", "en", 1.0, 2.6, words)]
    (cue,) = build_cues(late)
    assert cue.end == pytest.approx(2.6) and cue.start == pytest.approx(1.6)
    # and it ends before the next sentence starts even where its own span says otherwise
    two = [SentenceTiming(0, "Breaking news.", "", "en", 1.8, 4.0, words),
           *timed([("And now, the weather.", "en")], start=2.7)]
    first = build_cues(two)[0]
    assert first.end <= 2.7 + 1e-9
    # a cue that ends where the sentence's last words are crowded gives them room: the earlier cue ends sooner
    texts = "Good evening to all, said the minister.".split()
    times = [(1.0, 1.5), (1.5, 2.2), (2.2, 2.5), (2.5, 3.0), (3.0, 3.1), (3.1, 3.2), (3.2, 3.3)]
    crowded = [SentenceTiming(0, " ".join(texts), "", "en", 1.0, 3.3,
                              tuple(WordTime(t, a, b, 0.9) for t, (a, b) in zip(texts, times)))]
    narrow = CaptionLimits(max_line_chars=20, max_lines=1)
    cues = build_cues(crowded, narrow)
    assert [c.lines for c in cues] == [("Good evening to all,",), ("said the minister.",)]
    assert cues[0].end == pytest.approx(cues[1].start) == pytest.approx(3.3 - 18 / 17)
    check_limits(cues, crowded, narrow)


def test_uneven_measured_words_keep_every_limit() -> None:
    """Measured words are not even: bursts, long words, pauses inside a sentence, words crowded at its
    end; 200 such sentences in a row keep every limit, in order and inside their spans."""
    import numpy as np

    rng = np.random.default_rng(26)
    pool = (EN_LONG + " " + ES_LONG).split()
    sentences, at = [], 0.2
    for index in range(200):
        count = int(rng.integers(1, 70))
        texts = [pool[int(i)] for i in rng.integers(0, len(pool), count)]
        lengths = rng.uniform(0.05, 0.9, count) * rng.choice([0.2, 1.0, 3.0], count, p=[0.2, 0.7, 0.1])
        gaps = rng.choice([0.0, 0.0, 0.02, 0.6], count)
        starts = at + np.cumsum(np.concatenate([[rng.uniform(0.0, 0.4)], (lengths + gaps)[:-1]]))
        words = tuple(WordTime(t, float(a), float(a + d), 0.9) for t, a, d in zip(texts, starts, lengths))
        end = words[-1].end + float(rng.choice([0.0, 0.05, 1.5]))
        text = " ".join(texts)
        sentences.append(SentenceTiming(index, text, text, "es" if index % 2 else "en", at, end, words))
        at = end + float(rng.choice([0.0, 0.15, 0.45]))
    check_limits(build_cues(sentences), sentences)


def test_speech_faster_than_the_reading_speed_shares_its_span() -> None:
    sentences = timed([(EN_LONG, "en")], cps=25.0)  # faster than anyone reads: the limit cannot hold here
    cues = build_cues(sentences)
    assert cues[0].start == pytest.approx(sentences[0].start) and cues[-1].end == pytest.approx(sentences[0].end)
    check_limits(cues, sentences)  # lines, order and span still hold
    speeds = [c.chars / (c.end - c.start) for c in cues]
    assert max(speeds) - min(speeds) < 0.5  # every cue read at the same (the speech's) pace


def test_measured_words_keep_their_times_and_a_long_word_is_cut() -> None:
    url = "www.argentina.gob.ar/economia/presupuesto-2025-detalle"  # longer than a line
    text = f"Details at {url} tonight."
    words = (WordTime("Details", 1.0, 1.4, 0.8), WordTime("at", 1.45, 1.6, 0.7), WordTime(url, 1.7, 4.5, 0.6),
             WordTime("tonight.", 4.6, 5.0, 0.9))
    cues = build_cues([SentenceTiming(0, text, text, "en", 0.9, 5.2, words)])
    lines = [line for c in cues for line in c.lines]
    assert all(len(line) <= 42 for line in lines) and "".join(lines).replace(" ", "") == text.replace(" ", "")
    karaoke = [w for c in cues for w in c.words]
    assert karaoke[0].start == 1.0 and karaoke[0].confidence == 0.8 and not karaoke[0].estimated
    assert all(c.start <= w.start <= w.end <= c.end for c in cues for w in c.words)


@pytest.mark.parametrize("words", [False, True])
def test_files_read_back_with_their_libraries_and_keep_the_limits(words: bool) -> None:
    sentences = timed([(SHORT["en"], "en"), (EN_LONG, "en"), (SHORT["es"], "es"), (ES_LONG, "es"),
                       ("Fin.", "es")])
    options = CaptionOptions(("srt", "vtt"), LIMITS, vtt_words=words)
    texts = caption_texts(sentences, options)
    cues = build_cues(sentences)
    srt, vtt = read_srt(texts["srt"]), read_vtt(texts["vtt"])
    for read in (srt, vtt):
        assert [c.lines for c in read] == [c.lines for c in cues]
        assert [(c.start, c.end) for c in read] == [(round(c.start, 3), round(c.end, 3)) for c in cues]
        check_limits(read, sentences)
    if not words:
        assert all(c.word_starts == () for c in vtt) and "<00:" not in texts["vtt"]
        return
    for read, cue in zip(vtt, cues):  # every word after the first has its start, rising, inside the cue
        assert len(read.word_starts) == len(cue.words) - 1
        assert list(read.word_starts) == sorted(set(read.word_starts))
        assert all(read.start < t < read.end for t in read.word_starts)
        assert list(read.word_starts) == [round(w.start, 3) for w in cue.words[1:]]


def test_vtt_escapes_what_would_be_markup() -> None:
    text = "AT&T shares <fell> 3 % --> analysts."
    sentences = timed([(text, "en")])
    for words in (False, True):
        (read,) = read_vtt(vtt_text(build_cues(sentences), words))
        assert " ".join(read.lines) == text


def test_bad_limits_and_formats_are_one_clear_error() -> None:
    for bad, needle in ((CaptionLimits(max_line_chars=5), "characters a caption line"),
                        (CaptionLimits(max_lines=0), "lines a caption"),
                        (CaptionLimits(min_duration_s=9.0), "shortest caption"),
                        (CaptionLimits(max_duration_s=float("nan")), "longest caption"),
                        (CaptionLimits(max_chars_per_s=0.0), "reading speed")):
        with pytest.raises(UserError, match=needle):
            build_cues(timed([("Hello there.", "en")]), bad)
    assert check_formats("SRT, vtt") == ("srt", "vtt") and check_formats("vtt,vtt") == ("vtt",)
    for bad, needle in (("", "give srt, vtt"), ("srt,", "give srt, vtt"), ("ass", "unknown caption format 'ass'")):
        with pytest.raises(UserError, match=needle):
            check_formats(bad)
    with pytest.raises(UserError, match="word timestamps go in the WebVTT"):
        caption_texts(timed([("Hi.", "en")]), CaptionOptions(("srt",), vtt_words=True))


def test_a_sentences_measured_words_are_kept_from_its_own_start() -> None:
    """What the studio and a project keep of an export's words (for the highlight when the same rendering
    plays again): a sentence's words in seconds from its own start, and only where every one was measured."""
    from dataclasses import replace

    from omnistudio.take.captions import words_in_sentence

    words = (WordTime("Good", 2.1, 2.4, 0.9), WordTime("evening.", 2.5, 3.0, 0.8))
    sentence = SentenceTiming(3, "Good evening.", "Good evening.", "en", 2.0, 3.2, words)
    kept = words_in_sentence(sentence)
    assert kept is not None
    assert [(w.text, round(w.start, 6), round(w.end, 6)) for w in kept] == [("Good", 0.1, 0.4), ("evening.", 0.5, 1.0)]
    one_estimated = replace(sentence, words=(words[0], replace(words[1], estimated=True)))
    assert words_in_sentence(one_estimated) is None and words_in_sentence(replace(sentence, words=())) is None
