"""Caption cues from timed words, under broadcast caption limits.

A cue holds words of one sentence only (never two), at most ``max_lines`` lines of at most
``max_line_chars`` characters. Where to break is chosen for the whole sentence at once (a shortest
path over the word boundaries) by these costs, cheapest first:

- after a word ending a clause (``, ; : — – …``, a closing quote or bracket after them counts too);
- before a conjunction or relative word (``and but or because which...``, ``y e o u ni pero sino
  porque aunque que...``: :data:`CONJUNCTIONS`);
- any other space; dearest after an article, preposition or possessive (:data:`WEAK`, "the", "de la").

Each cue costs the same, so text fills two lines before a new cue starts; lines of a cue are kept
near the same length; a line (or a cue) of one word alone costs more than any other choice, so it
happens only where nothing else fits (a one-word sentence, two words too long for one line). A cue
whose words are heard for less than its minimum time or faster than the reading speed costs more,
so a short phrase joins its neighbour where the two fit on two lines. A word longer than a line is
cut into line-long pieces.

Times: a cue shows from its first word's start to its last word's end, clamped inside its
sentence's exact span (and before the next sentence starts). Then each cue gets its need,
``max(min_duration_s, characters / max_chars_per_s)`` (at most ``max_duration_s``): it keeps its
start and ends later, pushing the next cue of the sentence later if it must; where the sentence's
end leaves no room it starts earlier instead. Cues never overlap and never leave their sentence's
span, so where a sentence is spoken faster than the limits allow (all its cues need more than its
span), its cues share the span in proportion to their needs: the captions keep up with the speech
rather than drift into the next sentence. A cue never lasts longer than ``max_duration_s``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache

from omnistudio.captions.timing import SentenceTiming, WordTime
from omnistudio.errors import UserError


@dataclass(frozen=True)
class CaptionLimits:
    """The limits every cue keeps (broadcast practice; the BBC's and Netflix's style guides)."""

    max_line_chars: int = 42
    """Characters a line at most (default 42, spaces and punctuation included)."""
    max_lines: int = 2
    """Lines a cue at most (default 2)."""
    min_duration_s: float = 1.0
    """Seconds a cue shows at least (default 1.0), where its sentence lasts that long."""
    max_duration_s: float = 7.0
    """Seconds a cue shows at most (default 7.0)."""
    max_chars_per_s: float = 17.0
    """Reading speed: characters a second at most (default 17, Netflix's adult figure for Spanish,
    used for English too), where the sentence is not spoken faster than that."""
    avoid_orphans: bool = True
    """Never one word alone on a line, or alone in a cue, where another break avoids it (default on)."""

    def validated(self) -> CaptionLimits:
        """These limits, or one clear error naming the one out of range."""
        _whole(self.max_line_chars, 10, 100, "characters a caption line")
        _whole(self.max_lines, 1, 3, "lines a caption")
        _seconds(self.max_duration_s, 1.0, 30.0, "longest caption")
        _seconds(self.min_duration_s, 0.0, self.max_duration_s, "shortest caption")
        _seconds(self.max_chars_per_s, 5.0, 40.0, "reading speed (characters a second)")
        return self


def _whole(value: object, lo: int, hi: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise UserError(f"{what}: {value!r} is not a whole number in {lo}..{hi}")


def _seconds(value: object, lo: float, hi: float, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not lo <= value <= hi:
        raise UserError(f"{what}: {value!r} is not a number in {lo:g}..{hi:g}")


@dataclass(frozen=True)
class Cue:
    """One caption: shown from ``start`` to ``end`` (seconds in the file), its ``lines``, the
    ``words`` it holds (times clamped inside the cue, for karaoke) and its sentence's index."""

    start: float
    end: float
    lines: tuple[str, ...]
    words: tuple[WordTime, ...]
    sentence: int

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def chars(self) -> int:
        """Characters read (the lines joined by one space)."""
        return len(" ".join(self.lines))


# ------------------------------------------------------------------------------ where to break
CLAUSE_END = (",", ";", ":", "—", "–", "…")
CLOSERS = "\"'»”’)]"
CONJUNCTIONS = {
    "en": frozenset("and but or nor so yet because although though while whereas which who whom whose where "
                    "when if unless until since after before as than".split()),
    "es": frozenset("y e o u ni pero sino porque aunque mientras que quien quienes cuyo cuya donde cuando "
                    "si pues como hasta tras".split()),
}
WEAK = {
    "en": frozenset("a an the of to in on at for with by from into about his her its their our my your this "
                    "that these those mr. mrs. ms. dr.".split()),
    "es": frozenset("el la los las un una unos unas lo de del al a en con por para sin sobre entre su sus mi "
                    "mis tu tus este esta estos estas ese esa sr. sra. dr. dra.".split()),
}
CUE_COST = 3.0  # each cue: fuller cues, fewer of them
ORPHAN_COST = 30.0  # one word alone on a line or in a cue
LINE_BREAK_WEIGHT = 0.5  # a break between two lines of a cue costs half a break between cues
BALANCE_COST = 2.0  # per line-length of difference between a cue's lines
TIMING_COST = 6.0  # a cue heard for less than its need (short, or fast to read), per missing fraction


def _bare(word: str) -> str:
    return word.strip(CLOSERS + "\"'«“‘(¿¡.,;:!?").lower()


def _weak_word(word: str, lang: str) -> bool:
    low = word.lower().strip(CLOSERS + "\"'«“‘(¿¡")
    return any(low in WEAK[k] for k in ((lang,) if lang in WEAK else tuple(WEAK)))


def break_cost(before: str, after: str, lang: str) -> float:
    """What breaking between the words ``before`` and ``after`` costs: 0 at a clause end, 2 before a
    conjunction, 8 after an article or preposition, 4 anywhere else."""
    if before.rstrip(CLOSERS).endswith(CLAUSE_END):
        return 0.0
    langs = (lang,) if lang in CONJUNCTIONS else tuple(CONJUNCTIONS)
    if any(_bare(after) in CONJUNCTIONS[k] for k in langs):
        return 2.0
    return 8.0 if _weak_word(before, lang) else 4.0


# ----------------------------------------------------------------------------- lines of a cue
def _line_split(texts: tuple[str, ...], lang: str, limits: CaptionLimits) -> tuple[float, tuple[int, ...]] | None:
    """The cheapest way to set ``texts`` (one cue's words) on the fewest lines that hold them: its
    cost and where each line after the first starts; None when no way fits."""
    return _line_split_cached(texts, lang, limits.max_line_chars, limits.max_lines, limits.avoid_orphans)


@lru_cache(maxsize=4096)
def _line_split_cached(texts: tuple[str, ...], lang: str, width: int, max_lines: int,
                       avoid_orphans: bool) -> tuple[float, tuple[int, ...]] | None:
    total = len(" ".join(texts))
    if total <= width:
        return 0.0, ()
    for lines in range(2, max_lines + 1):
        found = _split_into(texts, lang, width, lines, (total - lines + 1) / lines, avoid_orphans)
        if found is not None:
            return found
    return None


def _split_into(texts: tuple[str, ...], lang: str, width: int, lines: int, ideal: float,
                avoid_orphans: bool) -> tuple[float, tuple[int, ...]] | None:
    """Exactly ``lines`` lines of at most ``width`` characters: cost (breaks, balance, orphans), starts."""
    n = len(texts)

    @cache
    def best(start: int, left: int) -> tuple[float, tuple[int, ...]] | None:
        if left == 1:
            length = len(" ".join(texts[start:]))
            return (_line_cost(length, n - start, n, ideal, width, avoid_orphans), ()) if length <= width else None
        found: tuple[float, tuple[int, ...]] | None = None
        length = -1
        for end in range(start + 1, n - left + 2):
            length += len(texts[end - 1]) + 1
            if length > width:
                break
            rest = best(end, left - 1)
            if rest is None:
                continue
            cost = (_line_cost(length, end - start, n, ideal, width, avoid_orphans) + rest[0]
                    + LINE_BREAK_WEIGHT * break_cost(texts[end - 1], texts[end], lang))
            if found is None or cost < found[0]:
                found = (cost, (end, *rest[1]))
        return found

    return best(0, lines)


def _line_cost(length: int, words: int, cue_words: int, ideal: float, width: int, avoid_orphans: bool) -> float:
    orphan = ORPHAN_COST if avoid_orphans and words == 1 and cue_words > 1 else 0.0
    return orphan + BALANCE_COST * abs(length - ideal) / width


# -------------------------------------------------------------------------------- the cues
def build_cues(sentences: Sequence[SentenceTiming], limits: CaptionLimits = CaptionLimits()) -> list[Cue]:
    """The cues of ``sentences`` (in file order, each with its exact span and its timed words), in
    order, every one inside its sentence's span (and ended before the next sentence starts); a
    sentence without words gives none."""
    limits = limits.validated()
    cues: list[Cue] = []
    for k, sentence in enumerate(sentences):
        words = [piece for word in sentence.words for piece in _pieces(word, limits.max_line_chars)]
        if not words:
            continue
        end = min(sentence.end, sentences[k + 1].start) if k + 1 < len(sentences) else sentence.end
        groups = _groups(words, sentence.lang, limits)
        cues.extend(_timed(groups, sentence.index, sentence.start, max(sentence.start, end), limits))
    return cues


def _pieces(word: WordTime, width: int) -> list[WordTime]:
    """A word longer than a line, cut into line-long pieces sharing its time in proportion."""
    text = word.text.strip()
    if not text:
        return []
    if len(text) <= width:
        return [replace(word, text=text)]
    parts = [text[i:i + width] for i in range(0, len(text), width)]
    step = (word.end - word.start) / len(parts)
    return [replace(word, text=part, start=word.start + i * step, end=word.start + (i + 1) * step,
                    written_start=word.written_start + i * width,
                    written_end=min(word.written_end, word.written_start + (i + 1) * width))
            for i, part in enumerate(parts)]


def _need(chars: int, limits: CaptionLimits) -> float:
    return min(max(limits.min_duration_s, chars / limits.max_chars_per_s), limits.max_duration_s)


def _groups(words: list[WordTime], lang: str, limits: CaptionLimits) -> list[tuple[list[WordTime], tuple[int, ...]]]:
    """The sentence's words cut into cues (each with its line starts): the cheapest path over the
    word boundaries (see the module's rules)."""
    n = len(words)
    texts = tuple(w.text for w in words)
    reach = limits.max_lines * (limits.max_line_chars + 1)
    best: list[float] = [0.0] + [math.inf] * n
    back: list[tuple[int, tuple[int, ...]]] = [(0, ())] * (n + 1)
    for j in range(1, n + 1):
        chars = -1
        for i in range(j - 1, -1, -1):
            chars += len(texts[i]) + 1
            if chars > reach:
                break
            if best[i] == math.inf:
                continue
            lines = _line_split(texts[i:j], lang, limits)
            heard = words[j - 1].end - words[i].start
            if lines is None or (j - i > 1 and heard > limits.max_duration_s):
                continue
            cost = best[i] + CUE_COST + lines[0] + _cue_cost(words, i, j, chars, heard, lang, limits)
            if cost < best[j]:
                best[j], back[j] = cost, (i, lines[1])
    groups = []
    j = n
    while j > 0:
        i, starts = back[j]
        groups.append((words[i:j], starts))
        j = i
    return groups[::-1]


def _cue_cost(words: list[WordTime], i: int, j: int, chars: int, heard: float, lang: str,
              limits: CaptionLimits) -> float:
    cost = break_cost(words[j - 1].text, words[j].text, lang) if j < len(words) else 0.0
    if limits.avoid_orphans and j - i == 1 and len(words) > 1:
        cost += ORPHAN_COST
    need = _need(chars, limits)
    if heard < need:
        cost += TIMING_COST * (need - max(heard, 0.0)) / need
    return cost


def _timed(groups: list[tuple[list[WordTime], tuple[int, ...]]], sentence: int, start: float, end: float,
           limits: CaptionLimits) -> list[Cue]:
    """Times for one sentence's cues inside [start, end] (the rules in the module's docstring)."""
    texts = [[w.text for w in words] for words, _starts in groups]
    lines = [tuple(" ".join(t[a:b]) for a, b in zip((0, *starts), (*starts, len(t))))
             for t, (_words, starts) in zip(texts, groups)]
    needs = [_need(len(" ".join(t)), limits) for t in texts]
    span = end - start
    times: list[tuple[float, float]] = []
    if sum(needs) > span:  # spoken faster than the limits allow: share the span by need
        at = start
        for need in needs:
            share = span * need / sum(needs)
            times.append((at, min(at + share, end)))
            at += share
    else:
        prev_end = start
        for k, (words, _starts) in enumerate(groups):
            hi_end = end - sum(needs[k + 1:])
            natural = min(max(words[0].start, start), end)
            cue_start = min(max(natural, prev_end), hi_end - needs[k])
            cue_end = max(min(max(words[-1].end, start), end), cue_start + needs[k])
            cue_end = min(cue_end, hi_end, cue_start + limits.max_duration_s)
            times.append((cue_start, cue_end))
            prev_end = cue_end
    return [Cue(a, b, line, tuple(_clamped(w, a, b) for w in words), sentence)
            for (a, b), line, (words, _starts) in zip(times, lines, groups)]


def _clamped(word: WordTime, start: float, end: float) -> WordTime:
    return replace(word, start=min(max(word.start, start), end), end=min(max(word.end, start), end))
