"""A finished take's captions: each sentence's exact span in the file with its written text and timed
words (the sidecar's ``words``), and the caption files, staged with the audio and renamed together
with it (:class:`~omnistudio.audio.finishing.ExtraOutputs`), or on their own for audio that exists.

``NAME.wav``'s captions are ``NAME.srt`` and ``NAME.vtt`` beside it (or in another folder)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from omnistudio.audio.dsp import SentenceSpan
from omnistudio.audio.export import check_not_input, check_writable_path
from omnistudio.audio.finishing import ExtraOutputs
from omnistudio.captions.formats import CaptionOptions, caption_texts
from omnistudio.captions.timing import SentenceTiming, WordTime
from omnistudio.commit import Writer, staged
from omnistudio.take.delivery import Slate, broadcast_info
from omnistudio.take.result import TakeResult
from omnistudio.take.rows import Written, matched
from omnistudio.text.lexicon import Lexicon
from omnistudio.voices.align import Hearer
from omnistudio.voices.words import with_words


def caption_paths(audio: Path, formats: Sequence[str], folder: Path | None = None) -> dict[str, Path]:
    """Where each format's captions of ``audio`` go: ``NAME.srt`` / ``NAME.vtt`` in ``folder`` (default
    the audio's own)."""
    audio = Path(audio)
    place = audio.parent if folder is None else Path(folder)
    return {fmt: place / f"{audio.stem}.{fmt}" for fmt in formats}


def check_caption_paths(paths: Mapping[str, Path], inputs: Mapping[str, Path | None] | None = None) -> None:
    """Before any work: each caption file can be written and is none of the command's inputs."""

    for path in paths.values():
        check_writable_path(path)
        check_not_input(path, dict(inputs or {}), sidecar=False)


def _span(span: SentenceSpan | Mapping[str, Any]) -> tuple[object, float, float]:
    """A span's sentence id, start and end as the sidecar records them (to 0.1 ms), so captions made
    later from the sidecar are the captions written with the file."""
    if isinstance(span, SentenceSpan):
        recorded = span.as_dict()
        return recorded["id"], recorded["start_s"], recorded["end_s"]
    return span.get("id"), float(span["start_s"]), float(span["end_s"])


def timed_sentences(spans: Sequence[SentenceSpan | Mapping[str, Any]], rows: Sequence[Written],
                    audio: Callable[[int], NDArray[np.float32]] | None = None, sample_rate: int = 24_000,
                    hearer: Hearer | None = None, lexicon: Lexicon | None = None,
                    words: bool = True) -> list[SentenceTiming]:
    """The sentences of a file in order: each span (the stitcher's, or a sidecar's ``sentences``
    entry) with its take row's written text, spoken form and language (rows matched by sentence
    id), and its words, measured by ``hearer`` where it hears them in ``audio(k)`` (the k-th
    sentence's samples), else estimated (:func:`omnistudio.voices.words.sentence_words`);
    ``lexicon``: the take's, which made the spoken forms. ``words=False``: the spans and texts only."""
    placed = [_span(span) for span in spans]
    sentences = []
    for k, ((sentence_id, start, end), row) in enumerate(zip(placed, matched(rows, [p[0] for p in placed]))):
        text = row.text if row is not None else ""
        sentences.append(SentenceTiming(sentence_id if isinstance(sentence_id, int) else k, text,
                                        (row.spoken if row is not None else "") or text,
                                        (row.lang if row is not None else "") or "en", start, end))
    if not words:
        return sentences
    timed = with_words(sentences, audio, sample_rate, hearer, lexicon)
    return [replace(s, words=tuple(recorded_word(w.as_dict()) for w in s.words)) for s in timed]


def recorded_word(row: Mapping[str, Any]) -> WordTime:
    """A word as the sidecar records it (times to the millisecond): captions made from a sidecar's
    words later are the captions written with the file."""
    confidence = row.get("confidence")
    return WordTime(str(row["text"]), float(row["start"]), float(row["end"]),
                    None if confidence is None else float(confidence), bool(row["estimated"]),
                    int(row.get("written_start", 0)), int(row.get("written_end", 0)))


def words_in_sentence(sentence: SentenceTiming) -> tuple[WordTime, ...] | None:
    """A timed sentence's words (as its file's sidecar records them) in seconds from the sentence's own
    start, where every one was measured (none estimated); None otherwise (the words of a take, kept for
    later)."""
    if not sentence.words or any(w.estimated for w in sentence.words):
        return None
    return tuple(replace(w, start=w.start - sentence.start, end=w.end - sentence.start) for w in sentence.words)


def caption_writers(sentences: Sequence[SentenceTiming], options: CaptionOptions,
                    paths: Mapping[str, Path]) -> list[tuple[Path, Writer]]:
    """``(path, write(tmp))`` for each asked-for caption file (the cues are built here, once)."""
    texts = caption_texts(sentences, options)

    def writer(text: str) -> Writer:
        return lambda tmp: tmp.write_text(text, encoding="utf-8")

    return [(paths[fmt], writer(text)) for fmt, text in texts.items()]


def caption_record(options: CaptionOptions, paths: Mapping[str, Path]) -> dict[str, Any]:
    """The sidecar's ``captions``: the files, the limits their cues keep, word timestamps or not."""
    return {"files": {fmt: path.name for fmt, path in paths.items()}, "limits": asdict(options.limits),
            "vtt_words": options.vtt_words}


class FileExtras:
    """What a take's file sink writes besides the audio once the spans are known (call it with them): each
    sentence's ``words`` in the sidecar (measured by ``hearer`` where it can, else estimated), with
    ``captions`` the caption files beside ``output``, and what the file says about itself (markers, story
    regions, chapters, iXML: :func:`~omnistudio.take.delivery.broadcast_info`, named by ``slate``; ``engine``:
    what rendered the take). Once called, ``sentences`` holds the timed sentences the sidecar's words and the
    captions were made from (what the studio keeps for its highlight)."""

    def __init__(self, take: TakeResult, output: Path, captions: CaptionOptions | None = None,
                 hearer: Hearer | None = None, lexicon: Lexicon | None = None, slate: Slate = Slate(),
                 engine: Mapping[str, object] | None = None) -> None:
        self.take, self.output, self.captions, self.hearer, self.lexicon = take, output, captions, hearer, lexicon
        self.slate, self.engine = slate, engine
        self.sentences: list[SentenceTiming] = []

    def __call__(self, spans: Sequence[SentenceSpan]) -> ExtraOutputs:
        chunks = self.take.chunks
        self.sentences = sentences = timed_sentences(
            spans, self.take.sentences, lambda k: np.asarray(chunks[k][0], dtype=np.float32), self.take.sample_rate,
            self.hearer, self.lexicon)
        words: list[dict[str, object]] = [{"words": [w.as_dict() for w in s.words]} for s in sentences]
        info = broadcast_info(self.take.sentences, spans, self.take.options, self.engine, self.slate)
        if self.captions is None:
            return ExtraOutputs(words, broadcast=info)
        paths = caption_paths(self.output, self.captions.formats)
        return ExtraOutputs(words, caption_writers(sentences, self.captions, paths),
                            {"captions": caption_record(self.captions, paths)}, info)


def write_captions(sentences: Sequence[SentenceTiming], options: CaptionOptions,
                   paths: Mapping[str, Path]) -> list[Path]:
    """Write the caption files of audio that exists: every file staged first, then all renamed
    together (a failure leaves none of them changed)."""
    with staged() as files:
        for path, write in caption_writers(sentences, options, paths):
            files.add(path, write, path.suffix)
    return [path for _tmp, path in files.files]
