"""Script in, finished audio out: the one take pipeline every client uses.

    text -> plan (sentences with voice, language, seed, pause) -> prepare (every voice the take needs,
    missing/stale prompts built, progress events) -> render (1-ahead :class:`Stream` through an
    :class:`EngineLink`, batch groups, decode lane) -> take cache (LRU, bounded in bytes)
    -> Stitcher (seams, breaths, room tone) -> sinks (player, file export, /dev/shm, network).

The studio, ``omnistudio render`` and the server build a :class:`Take` with :func:`plan` and
:meth:`Take.run` and differ only in the sinks they attach. A sentence whose (voice, language, text,
seed, synthesis settings) were rendered before is taken from the cache, not rendered again, so with
the seed locked a replay renders nothing and an export writes exactly what was heard.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from omnistudio.audio.finishing import live_stitcher, sentence_pauses
from omnistudio.audio.spool import ChunkSpool, PcmSpool
from omnistudio.errors import Cancelled, UserError
from omnistudio.script import Script, Sentence, parse_script
from omnistudio.take.link import CancelFlag, EngineLink, PrepareEvent, Rendered, RenderItem, link_record
from omnistudio.take.options import SEED_LIMIT, TakeOptions, sentence_seed, spoken_text
from omnistudio.take.result import TakeResult as TakeResult  # re-exported: the clients import it from here
from omnistudio.take.rows import SentenceRow
from omnistudio.take.sinks import Sink
from omnistudio.take.stream import Chunk, Stream, sentence_voice
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from omnistudio.audio.dsp import Stitcher

DEFAULT_CACHE_BYTES = 256 * 1024 * 1024  # about 45 minutes of float32 audio at 24 kHz


@dataclass(frozen=True)
class PlannedSentence:
    """One sentence of a take: what to say, in which voice and language, with which seed. ``text`` is
    what the producer wrote (shown, captioned, checked by ASR); ``spoken`` what the model is asked to
    say (the text front-end's form; empty: the same as written)."""

    id: int  # the sentence's index in its script (the studio highlights by it)
    text: str
    voice: VoiceRef
    lang: str
    seed: int
    pause_s: float  # silence after it
    line: int = 1
    speaker: str | None = None  # the script's tag (None: the default voice)
    start: int = 0  # character span in the source text
    end: int = 0
    breath: bool = True  # False: the pause was asked for (``[pause]``) and stays silence
    spoken: str = ""
    story: str | None = None  # the script's story (a chapter, a region of the delivered file)

    @property
    def said(self) -> str:
        """What the model says: the spoken form, or the text as written when there is none."""
        return self.spoken or self.text

    def item(self) -> RenderItem:
        return RenderItem(self.id, self.said, self.voice, self.lang, self.seed)


def plan(script: Script | str | Sequence[Sentence], options: TakeOptions, base_seed: int | None = None,
         speakers: Any = None) -> list[PlannedSentence]:
    """The sentences of ``script`` (text, a parsed Script, or script sentences) with voice, seed, pause.

    ``base_seed``: the take's base seed (default ``options.seed``). A sentence with no speaker tag
    takes ``options.voice``; with neither, one clear error naming the line."""
    options = options.validated()
    if isinstance(script, str):
        script = parse_script(script, options.lang, speakers)
    sentences = list(script.sentences if isinstance(script, Script) else script)
    base = options.seed if base_seed is None else int(base_seed)
    planned = []
    for sentence, (pause, breath) in zip(sentences, sentence_pauses(sentences)):
        voice = sentence_voice(sentence, options.voice)
        if voice is None:
            raise UserError(f"line {sentence.line} has no speaker tag and no voice is selected")
        spoken = spoken_text(sentence.text, sentence.lang, options)
        seed = sentence_seed(base, spoken, voice.key(), sentence.lang)
        planned.append(PlannedSentence(sentence.id, sentence.text, voice, sentence.lang, seed,
                                       pause, sentence.line, sentence.speaker,
                                       sentence.start, sentence.end, breath, spoken, sentence.story))
    if not planned:
        raise UserError("nothing to render")
    return planned


# ------------------------------------------------------------------ cache
class TakeCache:
    """Rendered sentences by (link, voice, language, text, seed, settings); LRU, bounded in bytes."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self._items: OrderedDict[tuple[Any, ...], Rendered] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: tuple[Any, ...]) -> bool:
        return key in self._items

    def get(self, key: tuple[Any, ...]) -> Rendered | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return hit

    def put(self, key: tuple[Any, ...], rendered: Rendered) -> None:
        size = int(rendered.pcm.nbytes)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= int(old.pcm.nbytes)
            if size > self.max_bytes:
                return  # larger than the whole cache: not kept
            self._items[key] = rendered
            self.bytes += size
            while self.bytes > self.max_bytes:
                _key, evicted = self._items.popitem(last=False)
                self.bytes -= int(evicted.pcm.nbytes)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0


def _link_key(link: EngineLink) -> Any:
    """The link's identity for the cache (model, device, dtype, sampler), hashable whatever its type."""
    info = link.info
    try:
        hash(info)
        return info
    except TypeError:  # e.g. a dict from a remote link
        return repr(sorted(info.items())) if isinstance(info, dict) else repr(info)


def cache_key(link: EngineLink, sentence: PlannedSentence, options: TakeOptions) -> tuple[Any, ...]:
    return (_link_key(link), sentence.voice.key(), sentence.lang, sentence.said, sentence.seed, options.num_step,
            options.guidance_scale, options.speed)


# ------------------------------------------------------------------- take
class Take:
    """One rendering of planned sentences through a link, into sinks. Use :func:`build_take`."""

    def __init__(self, link: EngineLink, sentences: Sequence[PlannedSentence], options: TakeOptions,
                 cache: TakeCache | None = None, base_seed: int = 0, lookahead: int = 1) -> None:
        self.link = link
        self.sentences = list(sentences)
        self.options = options.validated()
        self.base_seed = base_seed
        self.finishing = replace(self.options.finishing, seed=base_seed % SEED_LIMIT)
        self.cache = cache if cache is not None else TakeCache()
        self.lookahead = lookahead
        self.stream: Stream | None = None

    def voices(self, sentences: Sequence[PlannedSentence] | None = None) -> list[tuple[VoiceRef, str]]:
        """Every (voice, language) the take needs, in order of first use."""
        return list(dict.fromkeys((s.voice, s.lang) for s in (self.sentences if sentences is None else sentences)))

    def missing(self) -> list[PlannedSentence]:
        """The sentences the cache does not hold (these will be rendered)."""
        return [s for s in self.sentences if cache_key(self.link, s, self.options) not in self.cache]

    def run(self, sinks: Sequence[Sink] = (), progress: Callable[[PrepareEvent], None] | None = None,
            cancel: CancelFlag | None = None, on_chunk: Callable[[Chunk], None] | None = None,
            skip_failed: bool = False) -> TakeResult:
        """Prepare the first sentence's voice, render what the cache lacks (1-ahead), stitch, feed ``sinks``
        in order. A later sentence's voice is prepared on the stream's worker just before its group
        renders, while earlier sentences play: the first sentence waits for its own voice only.

        A failed sentence is reported through ``on_chunk`` and stops the take at once: UserError names
        it, the stream is closed and the sinks are aborted (nothing is written). With ``skip_failed`` it
        is left out instead (``TakeResult.skipped``; the take fails only if every sentence does).
        ``cancel``: Cancelled is raised (sinks aborted) within one diffusion step."""
        cancel = cancel if cancel is not None else threading.Event()
        started = time.perf_counter()
        events: list[PrepareEvent] = []

        def report(event: PrepareEvent) -> None:
            events.append(event)
            if progress is not None:
                progress(event)

        hits = {s.id: r for s in self.sentences if (r := self.cache.get(cache_key(self.link, s, self.options)))}
        todo = [s for s in self.sentences if s.id not in hits]
        prepared: set[tuple[VoiceRef, str]] = set()

        def prepare(voices: Sequence[tuple[VoiceRef, str]]) -> None:
            needed = [v for v in dict.fromkeys(voices) if v not in prepared]
            if needed:
                self.link.prepare(needed, report, cancel)
                prepared.update(needed)

        for sink in sinks:
            sink.begin(self)
        try:
            if todo:
                prepare(self.voices(todo[:1]))
            prepare_s = time.perf_counter() - started
            result = self._stream(todo, hits, sinks, cancel, on_chunk, started, skip_failed,
                                  lambda items: prepare([(item.voice, item.lang) for item in items]))
        except BaseException:
            for sink in sinks:
                sink.abort()
            raise
        result.prepare_s, result.events = prepare_s, events
        for sink in sinks:
            sink.end(result)
        return result

    def _chunks(self, todo: list[PlannedSentence], hits: dict[int, Rendered], started: float,
                cancel: CancelFlag, prepare: Callable[[list[RenderItem]], None] | None = None
                ) -> Iterator[Chunk]:
        stream = None
        if todo:
            stream = self.stream = Stream(self.link, todo, [s.item() for s in todo], self.options, self.lookahead,
                                          cancel=cancel, prepare=prepare)
        rate = self.link.sample_rate
        try:
            rendered = iter(stream) if stream is not None else iter(())
            for sentence in self.sentences:
                hit = hits.get(sentence.id)
                if hit is None:
                    chunk = next(rendered, None)
                    if chunk is None:
                        return  # the stream was cancelled
                    yield chunk
                else:
                    now = time.perf_counter() - started
                    yield Chunk(sentence, hit.pcm, rate, hit.timings, 0, now, now, None)
        finally:
            if stream is not None:
                stream.close()

    def _stream(self, todo: list[PlannedSentence], hits: dict[int, Rendered], sinks: Sequence[Sink],
                cancel: CancelFlag, on_chunk: Callable[[Chunk], None] | None, started: float,
                skip_failed: bool = False, prepare: Callable[[list[RenderItem]], None] | None = None) -> TakeResult:
        stitcher = live_stitcher(self.link.sample_rate, self.finishing)

        stitched = PcmSpool()  # the take as played, on disk: memory stays flat on a long render
        chunks = ChunkSpool()  # sentences for the file's finishing wait on disk, not in memory
        rows: list[SentenceRow] = []
        skipped: list[int] = []
        ttfa: float | None = None
        rendered = 0
        for chunk in self._chunks(todo, hits, started, cancel, prepare):
            if cancel.is_set():
                break
            sentence = chunk.sentence
            assert isinstance(sentence, PlannedSentence)  # a take's stream carries its planned sentences
            if ttfa is None:
                ttfa = time.perf_counter() - started
            rows.append(chunk.row(sentence.voice.key(), sentence.seed))
            rendered += sentence.id not in hits
            if on_chunk is not None:
                on_chunk(chunk)
            if not chunk.ok and skip_failed:
                skipped.append(sentence.id)
                continue
            if not chunk.ok:  # stop at the first failure: nothing more renders, nothing is written
                raise UserError(f"{chunk.error}; stopped at the first failed sentence, nothing written")
            if sentence.id not in hits:
                self.cache.put(cache_key(self.link, sentence, self.options),
                               Rendered(sentence.id, chunk.pcm, chunk.timings, chunk.steps))
            chunks.add(chunk.pcm, sentence.pause_s, sentence.id, sentence.breath)
            piece = self._played(stitcher.push(chunk.pcm, sentence.pause_s, sentence_id=sentence.id,
                                               breathe=sentence.breath), stitcher)
            stitched.append(piece)
            for sink in sinks:
                sink.chunk(chunk, piece)
        if cancel.is_set() or len(rows) < len(self.sentences):  # the stream only ends early when cancelled
            raise Cancelled("take cancelled")
        if skipped and len(skipped) == len(self.sentences):
            raise UserError(f"every sentence failed ({rows[-1].error}); nothing written")
        tail = self._played_tail(stitcher.finish())
        stitched.append(tail)
        for sink in sinks:
            sink.tail(tail)
        steps = self.stream.steps if self.stream is not None else 0
        return TakeResult(stitched, stitched.frames, self.link.sample_rate, chunks, rows, self.base_seed, rendered,
                          len(hits), steps, ttfa or 0.0, time.perf_counter() - started, 0.0, skipped=skipped,
                          engine=link_record(self.link), options=self.record())

    def _played(self, piece: np.ndarray, stitcher: Stitcher) -> np.ndarray:
        """What of the stitcher's piece plays now (all of it: every pause of a planned take is known)."""
        return piece

    def _played_tail(self, tail: np.ndarray) -> np.ndarray:
        return tail

    def record(self) -> dict[str, object]:
        """The take's options as its sidecar records them (the base seed, not the options' seed)."""
        o = self.options
        return {"seed": self.base_seed, "num_step": o.num_step, "guidance": o.guidance_scale, "speed": o.speed,
                "batch": o.batch, "lang": o.lang, "voice": o.voice.key() if o.voice is not None else None}


def build_take(link: EngineLink, script: Script | str | Sequence[Any], options: TakeOptions,
               cache: TakeCache | None = None, speakers: Any = None, lookahead: int = 1,
               base_seed: int | None = None) -> Take:
    """The one way every client makes a take: plan ``script`` with the seed policy and wrap it.

    With ``options.seed_locked`` off, the take draws a fresh base seed (so nothing is reused)
    unless ``base_seed`` names one (e.g. the studio exporting the take that was heard)."""
    options = options.validated()
    base = base_seed_for(options, base_seed)
    return Take(link, plan(script, options, base, speakers), options, cache, base, lookahead)


def base_seed_for(options: TakeOptions, base_seed: int | None = None) -> int:
    """A take's base seed: ``base_seed`` when named, else the options' seed when locked, else a fresh one."""
    if base_seed is not None:
        return int(base_seed)
    return options.seed if options.seed_locked else secrets.randbelow(SEED_LIMIT)
