"""Word times by alignment: when each written word of a sentence is heard in its audio.

The speech model (faster-whisper, :meth:`Transcriber.heard_words`) transcribes the sentence's audio with
word timestamps; its words are matched to the words the model was asked to SAY (``spoken.text``: both
sides lower-cased letters and digits, Whisper's digits read by the same text front-end, so "20" meets
"twenty"; difflib's longest matching blocks, and in a replaced run of equal length the pairs spelt
alike, "harbour"/"harbor"), then carried to the WRITTEN words through the front-end's span map: a
written word whose spoken words were all matched starts with the first one's start, ends with the
last one's end, and has the lowest of their probabilities as its confidence ("3,2 %" is one word).

Whisper's times are then set against the signal (:mod:`omnistudio.captions.pauses`): each stretch of
speech between pauses gets its words (the nearest by their measured middles), its first word starts
where the sound starts (Whisper puts it inside the silence before), and the other words keep Whisper's
times moved by :data:`INNER_SHIFT_S` (its measured lateness) and held inside their stretch.

Where alignment is not possible the words are estimated (spread by syllables, ``estimated=True``):
- the whole sentence when the model cannot hear the language (the packaged ``tiny.en`` hears English
  only), when no word matched, or when the matched words' mean confidence is below
  :data:`MIN_MEAN_CONFIDENCE`;
- otherwise each run of unmatched written words alone, between its measured neighbours (or the
  sentence's edges), so one misheard word does not throw away the rest.
Every time lies inside the sentence's exact span, and words never overlap or go backwards."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from omnistudio.captions.estimate import estimate_run, spread
from omnistudio.captions.pauses import assign_islands, speech_islands
from omnistudio.captions.syllables import syllables
from omnistudio.captions.timing import WordTime
from omnistudio.captions.words import WrittenWord, written_words
from omnistudio.errors import UserError
from omnistudio.text import Spoken
from omnistudio.voices.asr import HeardWord, plain_words, words

MIN_MEAN_CONFIDENCE = 0.35  # below this mean probability of the matched words, the sentence is estimated
CLOSE_SPELLING = 0.6  # difflib ratio at which a replaced heard word still counts as the spoken one
# Added to Whisper's times of the words inside a stretch of speech (not the first after a pause, which starts
# where the sound does). On the flite ground truth (python -m omnistudio.bench.align) tiny.en's starts there
# are late: a median of +97 ms over its 53 words inside phrases, +132 ms over 46 more from other phrases and
# voices (a held-out set); corrected by 5 of Whisper's 20 ms frames. Residual: docs/benchmarks.md.
INNER_SHIFT_S = -0.10
UNHEARD_WEIGHT = 0.5  # how much an unmatched word's guessed place counts when words are given to stretches of speech


class Hearer(Protocol):
    """What alignment needs of a speech model (:class:`omnistudio.voices.asr.Transcriber` is one)."""

    def can_hear(self, lang: str) -> bool: ...

    def heard_words(self, wave: np.ndarray, sample_rate: int, lang: str) -> list[HeardWord]: ...


@dataclass(frozen=True)
class _Token:
    text: str
    start: float = 0.0
    end: float = 0.0
    probability: float = 0.0
    owner: int = -1  # the written word a spoken token belongs to
    sure: bool = True  # False: heard in this place as something else


@dataclass(frozen=True)
class _Found:
    """A written word as heard: seconds in the sentence's audio; matched=False: only where it was."""

    start: float
    end: float
    confidence: float
    matched: bool


def align_sentence(transcriber: Hearer, pcm: np.ndarray, sample_rate: int, spoken: Spoken, lang: str,
                   offset_s: float, span: tuple[float, float]) -> tuple[WordTime, ...]:
    """The written words of one sentence with their times in the file (seconds).

    ``pcm`` is the sentence's audio (mono), which starts ``offset_s`` seconds into the file; ``span`` is the
    sentence's exact ``(start, end)`` in the file, inside which every time is kept; ``spoken`` is what the
    model was asked to say for it (:func:`omnistudio.text.normalize`'s answer)."""
    start, end = float(span[0]), float(span[1])
    if end < start:
        raise UserError(f"a sentence span cannot end before it starts ({start:.3f} s > {end:.3f} s)")
    written = written_words(spoken)
    if not written:
        return ()
    if not transcriber.can_hear(lang):
        return tuple(estimate_run(written, lang, start, end))
    audio = np.asarray(pcm, dtype=np.float32).reshape(-1)
    heard = transcriber.heard_words(audio, sample_rate, lang)
    found = _measured(written, heard, lang)
    sure = [f.confidence for f in found if f is not None and f.matched]
    if not sure or sum(sure) / len(sure) < MIN_MEAN_CONFIDENCE:
        return tuple(estimate_run(written, lang, start, end))
    return _in_file(_placed(written, found, lang, speech_islands(audio, sample_rate)), offset_s, start, end)


def _measured(written: Sequence[WrittenWord], heard: Sequence[HeardWord], lang: str) -> list[_Found | None]:
    """Each written word as heard, in the audio's seconds: matched where all its spoken words were heard
    (confidence: the lowest probability); else where Whisper heard something else in its place (a replaced
    run: "Take it" for "ticket"), that place, unmatched; else None (nothing was heard for it)."""
    said = [_Token(t, owner=i) for i, w in enumerate(written) for piece in w.spoken for t in plain_words(piece.text)]
    got = _heard_tokens(heard, lang)
    heard_as: dict[int, _Token] = {}  # a spoken token's heard token; sure=False: only where it was
    blocks = difflib.SequenceMatcher(None, [t.text for t in said], [t.text for t in got], autojunk=False)
    for op, i1, i2, j1, j2 in blocks.get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            for i, j in zip(range(i1, i2), range(j1, j2)):
                close = difflib.SequenceMatcher(None, said[i].text, got[j].text).ratio() >= CLOSE_SPELLING
                heard_as[i] = replace(got[j], sure=op == "equal" or close)
        elif op == "replace":
            places = spread([syllables(t.text, lang) for t in said[i1:i2]], got[j1].start, got[j2 - 1].end)
            for i, (p_start, p_end) in zip(range(i1, i2), places):
                heard_as[i] = _Token(said[i].text, p_start, p_end, sure=False)
    owned: dict[int, list[int]] = {}
    for i, token in enumerate(said):
        owned.setdefault(token.owner, []).append(i)
    out: list[_Found | None] = []
    for k in range(len(written)):
        mine = owned.get(k, [])
        if not mine or any(i not in heard_as for i in mine):
            out.append(None)
            continue
        first, last = heard_as[mine[0]], heard_as[mine[-1]]
        sure = all(heard_as[i].sure for i in mine)
        out.append(_Found(first.start, max(first.start, last.end),
                          min(heard_as[i].probability for i in mine) if sure else 0.0, sure))
    return out


def _heard_tokens(heard: Sequence[HeardWord], lang: str) -> list[_Token]:
    """The heard words as compared: each read by the text front-end ("20" -> "twenty"), a word that reads
    as several ("3.2%") sharing its time among them by syllables."""
    out: list[_Token] = []
    for word in heard:
        tokens = words(word.text, lang)
        pieces = spread([syllables(t, lang) for t in tokens], word.start, max(word.start, word.end))
        out += [_Token(t, s, e, word.probability) for t, (s, e) in zip(tokens, pieces)]
    return out


def _placed(written: Sequence[WrittenWord], found: Sequence[_Found | None], lang: str,
            islands: Sequence[tuple[float, float]]) -> list[WordTime]:
    """Word times in the audio's seconds: each island's first word starts where the island does; the
    other matched words where Whisper says, moved by :data:`INNER_SHIFT_S` and kept inside their island;
    each run of unmatched words estimated between its neighbours."""
    if not islands:  # (no sound above the floor: Whisper's times as they are)
        islands = [(0.0, max([f.end for f in found if f is not None], default=0.0))]
    middles, weights = _middles(written, found, lang, islands[-1][1])
    home = assign_islands(middles, islands, weights)
    out: list[WordTime] = []
    run: list[WrittenWord] = []
    floor = 0.0  # where the next word may start
    for i, (word, heard) in enumerate(zip(written, found)):
        onset, close = islands[home[i]]
        first = i == 0 or home[i - 1] != home[i]
        if first:
            if run:  # the run ends where its island ends
                out += estimate_run(run, lang, floor, max(floor, islands[home[i - 1]][1]))
                run = []
            floor = max(floor, onset)
        if heard is None or not heard.matched:
            run.append(word)
            continue
        w_start = floor if first else min(max(heard.start + INNER_SHIFT_S, floor), close)
        if run:
            out += estimate_run(run, lang, floor, w_start)
            run = []
        w_end = min(max(heard.end + INNER_SHIFT_S, w_start), max(close, w_start))
        out.append(WordTime(word.text, w_start, w_end, heard.confidence, False, word.start, word.end))
        floor = w_end
    if run:
        out += estimate_run(run, lang, floor, max(floor, islands[home[-1]][1]))
    return out


def _middles(written: Sequence[WrittenWord], found: Sequence[_Found | None], lang: str,
             last: float) -> tuple[list[float], list[float]]:
    """Where each word's middle is thought to be, and how far to trust it: a matched word's middle (weight
    1); an unmatched word's where something else was heard in its place, else by syllables between its
    neighbours (weight :data:`UNHEARD_WEIGHT`)."""
    middles: list[float] = []
    weights: list[float] = []
    run: list[WrittenWord] = []
    floor = 0.0
    for word, heard in zip(written, found):
        if heard is None:
            run.append(word)
            continue
        middles += _run_middles(run, lang, floor, heard.start)
        weights += [UNHEARD_WEIGHT] * len(run)
        run = []
        middles.append((heard.start + heard.end) / 2)
        weights.append(1.0 if heard.matched else UNHEARD_WEIGHT)
        floor = max(floor, heard.end)
    middles += _run_middles(run, lang, floor, last)
    weights += [UNHEARD_WEIGHT] * len(run)
    return middles, weights


def _run_middles(run: Sequence[WrittenWord], lang: str, start: float, end: float) -> list[float]:
    return [(w.start + w.end) / 2 for w in estimate_run(run, lang, start, max(start, end))]


def _in_file(words: Sequence[WordTime], offset: float, start: float, end: float) -> tuple[WordTime, ...]:
    """``words`` moved by ``offset`` into the file and clamped into the sentence's span."""
    out: list[WordTime] = []
    floor = start
    for w in words:
        w_start = min(max(w.start + offset, floor), end)
        w_end = min(max(w.end + offset, w_start), end)
        out.append(replace(w, start=w_start, end=w_end))
        floor = w_end
    return tuple(out)
