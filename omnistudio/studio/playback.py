"""Playback bookkeeping for the studio: which sentence and word are being heard, and a virtual output.

The player's ring counts every frame the output callback took (``ring.total_read``); the
schedule maps those frame counts back to sentence indices and, inside a sentence, to its written
words, so the UI can highlight the sentence and the word being heard by pulling, not by being
pushed (the output callback never looks at any of it).

A played sentence's words are timed by :func:`omnistudio.voices.words.sentence_words`, the function
captions use: estimated by syllables over the sentence's audio (instant, no model), or measured ones
recorded for the same rendering (an export's, :meth:`Schedule` takes them as given). Their offsets
are into the sentence's written text as the script parser gives it (whitespace collapsed);
:func:`word_in_text` maps them onto the editor's text, or gives None when that text no longer says
the sentence that is playing.

``VirtualOutput`` stands in for a sound card when there is none (or in tests): a thread calls
the player's output callback at the pace of a real device (``rate`` times real time), so the
tap ring, meter and highlight behave as they do with a device, silently. ``rate=0`` holds the
clock: the output moves only by :meth:`VirtualOutput.advance` (tests drive the play position).
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from omnistudio.audio.player import Player
from omnistudio.captions.timing import SentenceTiming, WordTime
from omnistudio.config import SAMPLE_RATE
from omnistudio.errors import UserError
from omnistudio.voices.words import sentence_words

if TYPE_CHECKING:
    from omnistudio.text.lexicon import Lexicon

BLOCK_S = 0.02


@dataclass(frozen=True)
class WordMark:
    """One written word of a played sentence in the player's frame count."""

    start: int  # player frames (ring.total_read) when it is heard
    end: int
    text_start: int  # its character span in the sentence's written text
    text_end: int
    estimated: bool = True


@dataclass(frozen=True)
class SentenceWords:
    """A played sentence's written text and its words, in order."""

    text: str
    marks: tuple[WordMark, ...] = ()


def word_marks(words: Sequence[WordTime], start_frame: int, offset_s: float, sample_rate: int) -> tuple[WordMark, ...]:
    """``words`` (times in seconds, the sentence starting at ``offset_s``) placed at ``start_frame``,
    the frame the sentence's audio starts at in the player."""
    def frame(t: float) -> int:
        return start_frame + int(round((t - offset_s) * sample_rate))

    return tuple(WordMark(frame(w.start), frame(w.end), w.written_start, w.written_end, w.estimated)
                 for w in words if w.written_end > w.written_start)


def estimated_marks(text: str, spoken: str, lang: str, start_frame: int, frames: int, sample_rate: int,
                    lexicon: Lexicon | None = None) -> tuple[WordMark, ...]:
    """The words of a sentence whose audio is ``frames`` long from ``start_frame``, spread by syllables
    (the captions' estimate, through the same front-end and ``lexicon`` the take was spoken with)."""

    timing = SentenceTiming(0, text, spoken or text, lang, 0.0, frames / sample_rate)
    return word_marks(sentence_words(timing, lexicon=lexicon), start_frame, 0.0, sample_rate)


def word_in_text(text: str, span: tuple[int, int] | None, sentence: str, word: tuple[int, int]) -> tuple[int, int] | None:
    """The editor's character span of ``word`` (a span in the written ``sentence``, whitespace collapsed),
    where the editor's ``text[span]`` still says ``sentence``; None when it does not (edited since it
    was played: the sentence alone is highlighted)."""
    if span is None:
        return None
    a, b = span
    here = text[a:b]
    if " ".join(here.split()) != sentence or not 0 <= word[0] < word[1] <= len(sentence):
        return None
    if here == sentence:
        return a + word[0], a + word[1]
    marks = [i for i, ch in enumerate(here) if not ch.isspace()]  # the k-th visible character, in the editor
    before = sum(1 for ch in sentence[:word[0]] if not ch.isspace())
    inside = sum(1 for ch in sentence[word[0]:word[1]] if not ch.isspace())
    if inside == 0:
        return None
    return a + marks[before], a + marks[before + inside - 1] + 1


class Schedule:
    """Sentence spans in the player's frame count, each with its words (written by the engine thread,
    read by the UI)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._index: list[int] = []
        self._words: list[SentenceWords] = []

    def add(self, start: int, end: int, sentence: int, words: SentenceWords = SentenceWords("")) -> None:
        # appends happen in order, starts last; a reader copying a list under the GIL sees a consistent prefix
        self._ends.append(end)
        self._index.append(sentence)
        self._words.append(words)
        self._starts.append(start)

    def clear(self) -> None:
        self._starts, self._ends, self._index, self._words = [], [], [], []

    def _piece(self, frame: int) -> int | None:
        starts, ends = self._starts, self._ends
        k = bisect.bisect_right(starts, frame) - 1
        return k if 0 <= k < len(ends) and frame < ends[k] else None

    def at(self, frame: int) -> int | None:
        k = self._piece(frame)
        return None if k is None else self._index[k]

    def word_at(self, frame: int) -> tuple[str, tuple[int, int], bool] | None:
        """The word heard at ``frame``: its sentence's written text, its span in it, and whether its time
        is estimated; None between words (a pause) or outside a sentence."""
        k, words = self._piece(frame), self._words
        if k is None or k >= len(words):
            return None
        marks = words[k].marks
        j = bisect.bisect_right([m.start for m in marks], frame) - 1
        if j < 0 or frame >= marks[j].end:
            return None
        mark = marks[j]
        return words[k].text, (mark.text_start, mark.text_end), mark.estimated

    @property
    def end(self) -> int:
        return self._ends[-1] if self._ends else 0


class VirtualOutput:
    """Drives ``player``'s callback from a thread, like a device with no sound."""

    def __init__(self, player: Player, rate: float = 1.0, block_s: float = BLOCK_S) -> None:
        self.player = player
        self.rate = rate  # 0: held (only :meth:`advance` moves it)
        self.frames = max(1, int(player.sample_rate * block_s))
        self._buf = np.zeros((self.frames, 1), dtype=np.float32)
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one caller of the callback at a time (its thread, advance, service)
        self._thread = threading.Thread(target=self._run, name="studio-virtual-output", daemon=True)

    def start(self) -> VirtualOutput:
        if self.rate > 0:
            self._thread.start()
        return self

    def _play(self, frames: int) -> None:
        with self._lock:
            self.player._callback(self._buf[:frames], frames, None, None)  # noqa: SLF001 - the device's role

    def advance(self, frames: int) -> None:
        """Play ``frames`` more frames now, as the device would (a held clock's only way forward)."""
        while frames > 0:
            n = min(frames, self.frames)
            self._play(n)
            frames -= n

    def service(self) -> None:
        """A block of no frames now: a stop (the player's flush) takes effect at once, before the next
        take is queued (a held clock would otherwise flush that take at its first advance)."""
        self._play(0)

    def _run(self) -> None:
        # Faster than real time (tests), a wake-up plays several blocks, so it wakes no more often than a
        # device: at 50x, one block per 0.4 ms kept a core 10% busy and the process never idle.
        per_wake = max(1, math.ceil(self.rate))
        period = per_wake * self.frames / self.player.sample_rate / self.rate
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.advance(per_wake * self.frames)
            next_at += period
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_at = time.monotonic()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)


def open_output(device: str, mode: str, virtual_rate: float, warn: Callable[[str], None]
                ) -> tuple[Player, VirtualOutput | None]:
    """The studio's player on ``device`` (its name or number; empty: the system default) and, where it
    plays silently, the virtual output that is its clock: ``mode`` virtual, or auto with no device
    (``warn`` says so; mode device raises the UserError instead)."""
    name: int | str | None = device or None
    if isinstance(name, str) and name.isdigit():
        name = int(name)
    player = Player(SAMPLE_RATE, device=name)
    if mode != "virtual":
        try:
            player.open()
            return player, None
        except UserError as exc:
            if mode == "device":
                raise
            warn(f"{exc}. Playing silently (meter only); export still works.")
    return player, VirtualOutput(player, rate=virtual_rate).start()


def close_output(player: Player | None, output: VirtualOutput | None) -> None:
    if output is not None:
        output.close()
    if player is not None:
        player.close()
