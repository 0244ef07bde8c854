"""A take of text as it is written: a language model's tokens, a desk's lines, a pipe (``say -``, the
server's input-streaming WebSocket). Text arrives in chunks; each sentence goes to the engine once it is
complete, while the rest is still being written, and the take is finished when the text ends.

:class:`IncomingScript` reads the text a line at a time with the script's own reader
(:class:`~omnistudio.script.LineReader`: tags, ``[pause]``, stories, abbreviations and decimals exactly
as in a whole script). A sentence is complete once text follows it: the rest of its line (then the pause
after it is the in-line one, or the ``[pause]`` it asked for), or a line break (then the pause is the one
between lines, unless nothing else comes: :meth:`IncomingScript.close` makes it the last sentence's,
none). Each complete sentence is planned as :func:`~omnistudio.take.pipeline.plan` plans a script's
(voice, spoken form, the one seed policy), so the take's file is the file of the whole text rendered at
once with the same seed. What is played live can end with one pause more: the last sentence of a line
was already playing when the text ended.

:class:`IncomingTake` is a :class:`~omnistudio.take.pipeline.Take` over such a script: its sentences
render one at a time as they arrive (never from the take cache: nothing is known ahead)."""

from __future__ import annotations

import copy
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from omnistudio.audio.finishing import PAUSE_IN_LINE_S, PAUSE_NEW_LINE_S
from omnistudio.errors import UserError
from omnistudio.script import MAX_SCRIPT_BYTES, Blend, LineReader, Sentence
from omnistudio.take.link import CancelFlag, EngineLink, RenderItem
from omnistudio.take.options import TakeOptions, sentence_seed, spoken_text
from omnistudio.take.pipeline import PlannedSentence, Take, TakeCache, TakeResult
from omnistudio.take.stream import Chunk, Stream, sentence_voice

if TYPE_CHECKING:
    from omnistudio.audio.dsp import Stitcher

ENDS_RE = re.compile(r"[.!?…;:。\]\n\r\u2028\u2029]")  # a chunk without these ends no sentence: nothing to re-read
WAIT_S = 0.05  # how often a waiting stream looks at its cancel flag


class IncomingScript:
    """A script as it is written: :meth:`append` text, :meth:`close` at its end; :meth:`planned` gives the
    take's sentences as they complete (blocking), each planned with ``options`` and ``base_seed``.

    Bad text is one line: more than ``max_bytes`` (the script limit) is refused and nothing more is taken
    (what was complete still plays and the take is finished); a tag that never closes, an unknown speaker,
    text with no voice, as a script's. Thread-safe: one writer, one reader."""

    def __init__(self, options: TakeOptions, base_seed: int, speakers: Any = None,
                 presets: Mapping[str, Blend] | None = None, max_bytes: int = MAX_SCRIPT_BYTES) -> None:
        self.options, self.base_seed, self.max_bytes = options.validated(), int(base_seed), max_bytes
        self._reader = LineReader(self.options.lang, speakers, presets)
        self._text = ""
        self._bytes = 0
        self._done = 0  # characters of the text in complete lines
        self._lines = 0  # complete lines read
        self._given = 0  # sentences handed on
        self._queue: queue.Queue[PlannedSentence | BaseException | None] = queue.Queue()
        self._lock = threading.Lock()
        self.closed = False
        self.refused: str | None = None  # why text was refused (the take ended with what was complete)
        self.last: PlannedSentence | None = None  # the last sentence handed on
        self.handed_at: list[float] = []  # when each sentence was handed on (perf_counter; the bench reads it)

    # ------------------------------------------------------------ the writer
    def append(self, text: str) -> int:
        """Take more text; returns how many sentences it completed. Over the limit: a UserError, and the
        script is closed with what was complete."""
        with self._lock:
            if self.closed:
                raise UserError("the text has ended: nothing more can be added")
            size = len(text.encode("utf-8"))
            if self._bytes + size > self.max_bytes:
                self._finish()
                self.refused = (f"the text is over the script limit of {self.max_bytes} bytes: the take ends with "
                                "what was complete")
                raise UserError(self.refused)
            self._text += text
            self._bytes += size
            return self._complete(final=False) if ENDS_RE.search(text) else 0

    def flush(self) -> int:
        """Whatever is written so far is complete (a sentence without its full stop yet is spoken now)."""
        with self._lock:
            if self.closed:
                return 0
            if self._text[self._done:].strip():
                self._text += "\n"
            return self._complete(final=False)

    def close(self) -> int:
        """The text has ended: its last sentence is complete and the take finishes after it."""
        with self._lock:
            return self._finish()

    def fail(self, exc: BaseException) -> None:
        """End the take with ``exc`` (the writer went away)."""
        with self._lock:
            self.closed = True
            self._queue.put(exc)

    def _finish(self) -> int:
        if self.closed:
            return 0
        try:
            done = self._complete(final=True)
        except UserError as exc:
            self._queue.put(exc)
            done = 0
        self.closed = True
        self._queue.put(None)
        return done

    def _complete(self, final: bool) -> int:
        """Read every complete line, and the complete sentences of the line being written; hand them on."""
        text = self._text
        while (end := _line_end(text, self._done)) is not None:
            self._lines += 1
            self._reader.line(text[self._done:end], self._lines, self._done)
            self._done = end
        ready = self._reader.sentences[self._given:]
        handed = max(0, self._given - len(self._reader.sentences))  # of the line being written, handed on already
        tail = text[self._done:]
        if tail.strip():
            if final:
                self._lines += 1
                ready = ready + self._reader.line(tail, self._lines, self._done)[handed:]
                self._done = len(text)
            else:
                trial = copy.copy(self._reader)
                trial.sentences = list(self._reader.sentences)
                try:  # a tag being typed (a "[" not closed yet, "[pause" half written): wait for the rest
                    pending = [] if tail.rfind("[") > tail.rfind("]") else trial.line(tail, self._lines + 1, self._done)
                except UserError:
                    pending = []
                ready = ready + pending[handed:-1]  # the last one may still grow
        for k, sentence in enumerate(ready):
            following = ready[k + 1] if k + 1 < len(ready) else None
            # the line goes on after it (a sentence of the line being written is never its last), or not
            in_line = following.line == sentence.line if following is not None else sentence.line > self._lines
            self._hand_on(sentence, in_line, last=final and following is None)
        return len(ready)

    def _hand_on(self, sentence: Sentence, in_line: bool, last: bool = False) -> None:
        sentence = replace(sentence, id=self._given)
        self._given += 1
        voice = sentence_voice(sentence, self.options.voice)
        if voice is None:
            raise UserError(f"line {sentence.line} has no speaker tag and no voice is selected")
        spoken = spoken_text(sentence.text, sentence.lang, self.options)
        explicit = sentence.pause_s is not None
        pause = sentence.pause_s if explicit else 0.0 if last else PAUSE_IN_LINE_S if in_line else PAUSE_NEW_LINE_S
        planned = PlannedSentence(sentence.id, sentence.text, voice, sentence.lang,
                                  sentence_seed(self.base_seed, spoken, voice.key(), sentence.lang), float(pause or 0.0),
                                  sentence.line, sentence.speaker, sentence.start, sentence.end, not explicit, spoken,
                                  sentence.story)
        self.last = planned
        self.handed_at.append(time.perf_counter())
        self._queue.put(planned)

    # ------------------------------------------------------------ the reader
    def planned(self, cancel: CancelFlag) -> Iterator[PlannedSentence]:
        """The sentences as they complete, until the text ends (or ``cancel``); a bad text raises its line."""
        while not cancel.is_set():
            try:
                item = self._queue.get(timeout=WAIT_S)
            except queue.Empty:
                continue
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def followed(self, sentence_id: int) -> bool:
        """Whether a sentence after ``sentence_id`` has been handed on (then its pause is the one it keeps)."""
        return self._given > sentence_id + 1

    @property
    def final_pause(self) -> float:
        """The pause after the last sentence in the file: its ``[pause]``, else none (a whole script's)."""
        last = self.last
        return last.pause_s if last is not None and not last.breath else 0.0


def _line_end(text: str, start: int) -> int | None:
    """Where the line starting at ``start`` ends, its line break included, as ``str.splitlines`` cuts a whole
    script (None: not ended yet)."""
    rest = text[start:]
    first = rest.splitlines(keepends=True)[0] if rest else ""
    if not first or first == first.splitlines()[0]:
        return None  # no line break yet
    if first.endswith("\r") and start + len(first) == len(text):
        return None  # a "\r" that may be the first half of "\r\n"
    return start + len(first)


class IncomingTake(Take):
    """A take whose sentences arrive as their text is written (:class:`IncomingScript`)."""

    def __init__(self, link: EngineLink, script: IncomingScript, cache: TakeCache | None = None) -> None:
        super().__init__(link, [], script.options, cache, script.base_seed)
        self.script = script
        self._pause = np.zeros(0, dtype=np.float32)  # the last sentence's pause, played when the next one comes

    def _played(self, piece: np.ndarray, stitcher: Stitcher) -> np.ndarray:
        """A sentence's pause plays at once when the next sentence is already known (so a slow render never
        adds it to the wait), else before the next sentence: whether the text goes on, and so which pause it
        is, is known only then. The take as played is the file's, pauses and all."""
        played = np.concatenate([self._pause, piece]) if len(self._pause) else piece
        self._pause = played[:0]
        last = stitcher.spans[-1].sentence_id if stitcher.spans else None
        if isinstance(last, int) and self.script.followed(last):
            return played
        end = len(played) - (len(piece) - stitcher.pause_after_last(piece))
        self._pause = played[end:]
        return played[:end]

    def _played_tail(self, tail: np.ndarray) -> np.ndarray:
        """The last sentence's pause as the file has it (its ``[pause]``, else none), then the stitcher's tail."""
        keep = int(round(self.script.final_pause * self.link.sample_rate))
        return np.concatenate([self._pause[:keep], tail])

    def _chunks(self, todo: list[PlannedSentence], hits: Mapping[int, Any], started: float, cancel: CancelFlag,
                prepare: Callable[[list[RenderItem]], None] | None = None) -> Iterator[Chunk]:
        def arriving() -> Iterator[PlannedSentence]:
            for sentence in self.script.planned(cancel):
                self.sentences.append(sentence)
                yield sentence

        stream = self.stream = Stream(self.link, arriving(), [], self.options, self.lookahead, cancel=cancel,
                                      prepare=prepare, item_of=lambda s: s.item())  # type: ignore[attr-defined]
        try:
            yield from stream
        finally:
            stream.close()

    def _stream(self, todo: list[PlannedSentence], hits: Mapping[int, Any], sinks: Sequence[Any], cancel: CancelFlag,
                on_chunk: Any, started: float, skip_failed: bool = False,
                prepare: Callable[[list[RenderItem]], None] | None = None) -> TakeResult:
        result = super()._stream(todo, dict(hits), sinks, cancel, on_chunk, started, skip_failed, prepare)
        if not self.sentences:
            raise UserError("no text came in: nothing to speak")
        if len(result.chunks):
            result.chunks.settle_last(self.script.final_pause)  # type: ignore[union-attr]
        return result
