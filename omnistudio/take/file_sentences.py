"""The timed sentences of an audio file that exists (for its captions).

The spans come from the file's sidecar (``NAME.wav.json``: each sentence's exact start and end,
and its written text) when it has one that describes this file; a text given instead of the
sidecar's must have as many sentences. Without a sidecar the text is needed: one sentence spans the
whole file, several share it in proportion to their written length (an estimate, as their words
are). The words: those the sidecar of a ``render --captions`` recorded (so the captions equal the
ones written with the file), else :func:`omnistudio.voices.words.sentence_words` on the file's own
samples."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from omnistudio.audio.bwf import Marker
from omnistudio.audio.compliance import Segment
from omnistudio.audio.export import sidecar_path
from omnistudio.captions.timing import SentenceTiming, WordTime
from omnistudio.checks import check_audio_file
from omnistudio.errors import UserError
from omnistudio.script import parse_script
from omnistudio.take.captions import recorded_word, timed_sentences
from omnistudio.take.options import TakeOptions, spoken_text
from omnistudio.take.rows import SentenceText, sentence_texts
from omnistudio.voices.align import Hearer
from omnistudio.voices.words import MAX_HEARD_SPAN_S


def file_sentences(audio: Path, text: str | None, lang: str | None, options: TakeOptions = TakeOptions(),
                   hearer: Hearer | None = None) -> tuple[list[SentenceTiming], list[str]]:
    """The sentences of ``audio`` with spans and words, and notes for the user (a sidecar left out).

    ``text``: the script the file says (None: the sidecar's); ``lang``: its untagged lines' language
    (None: the sidecar's first sentence's, else en); ``options``: the text front-end's settings;
    ``hearer``: the speech model that measures words the sidecar does not hold."""
    frames, rate = _audio_info(audio)
    notes: list[str] = []
    sidecar, unusable = _sidecar(audio, frames / rate)
    if unusable is not None:
        if text is None:
            raise UserError(f"{sidecar_path(audio).name} cannot be used ({unusable}): give --text or --script")
        notes.append(f"{sidecar_path(audio).name} is left out ({unusable})")
    spans: Sequence[Mapping[str, Any]]
    if sidecar is not None:
        spans, rows = sidecar["sentences"], sentence_texts(sidecar["timings"]["sentences"])
        if text is not None:
            rows = _rows(text, lang or (rows[0].lang if rows else "en"), options)
            if len(rows) != len(spans):
                raise UserError(f"the text has {len(rows)} sentences; the sidecar of {audio.name} times {len(spans)}: "
                                "give the text it was rendered from, or move the sidecar away to spread the text "
                                "over the file")
            rows = [replace(row, id=_id(span, row.id)) for row, span in zip(rows, spans)]
    else:
        if text is None:
            raise UserError(f"{audio} has no sidecar ({sidecar_path(audio).name}) to take its sentences from: "
                            "give --text or --script")
        rows = _rows(text, lang or "en", options)
        spans = _spread(rows, frames / rate)

    if hearer is not None and any(float(s["end_s"]) - float(s["start_s"]) > MAX_HEARD_SPAN_S for s in spans):
        notes.append(f"a sentence spans over {MAX_HEARD_SPAN_S:g} s of the file: its words are estimated, not "
                     "heard (give the text sentence by sentence, or render it with its sidecar)")
    recorded = _recorded_words(sidecar, notes) if text is None else None
    timed = timed_sentences(spans, rows, lambda k: _samples(audio, spans[k], rate), rate,
                            None if recorded else hearer, options.lexicon)
    if recorded is not None:
        timed = [replace(s, words=words) for s, words in zip(timed, recorded)]
    return timed, notes


def _recorded_words(sidecar: Mapping[str, Any] | None, notes: list[str]) -> list[tuple[WordTime, ...]] | None:
    """The words a ``render --captions`` recorded in the sidecar for its own text (so the captions made
    now are the ones written with the file); None where it recorded none (or they cannot be read)."""
    if sidecar is None or "captions" not in sidecar:
        return None
    try:
        return [tuple(recorded_word(w) for w in span["words"]) for span in sidecar["sentences"]]
    except (KeyError, TypeError, ValueError) as exc:
        notes.append(f"the sidecar's words cannot be read ({type(exc).__name__}: {exc}); made again")
        return None


def _audio_info(audio: Path) -> tuple[int, int]:
    # lazy: start-up (soundfile)
    import soundfile as sf

    check_audio_file(audio)
    try:
        info = sf.info(str(audio))
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise UserError(f"{audio} is not a readable audio file ({str(exc).splitlines()[0] if str(exc) else exc})") \
            from None
    if info.frames <= 0:
        raise UserError(f"{audio} holds no audio frames")
    return int(info.frames), int(info.samplerate)


def _sidecar(audio: Path, duration: float) -> tuple[dict[str, Any] | None, str | None]:
    """The file's sidecar when it times this file's sentences, else None; and why an existing sidecar
    cannot be used (None: it can, or there is none)."""
    path = sidecar_path(audio)
    if not path.exists():
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        spans, rows = data["sentences"], data["timings"]["sentences"]
        if not isinstance(spans, list) or not isinstance(rows, list) or not spans:
            raise ValueError("no sentences")
        check_spans([(float(span["start_s"]), float(span["end_s"])) for span in spans], duration)
        sentence_texts(rows)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        why = "not valid JSON" if isinstance(exc, json.JSONDecodeError) else f"{type(exc).__name__}: {exc}"
        return None, why
    size = data.get("audio_bytes")
    if isinstance(size, int) and size != audio.stat().st_size:
        return None, f"it describes another {audio.name}: {size} bytes, this one has {audio.stat().st_size}"
    return dict(data), None


def check_spans(spans: Sequence[tuple[float, float]], duration: float, slack: float = 0.05) -> None:
    """Sentence times a sidecar gives: finite, each starting before it ends, in order, inside the file
    (``slack`` seconds of overlap and past the end allowed: crossfades, rounding); a ValueError says which."""
    previous = 0.0
    for number, (start, end) in enumerate(spans, start=1):
        if not (math.isfinite(start) and math.isfinite(end)):
            raise ValueError(f"sentence {number}'s times are not finite")
        if start < previous - slack or end <= start or end > duration + slack:
            raise ValueError(f"sentence {number} is timed {start:g}-{end:g} s in a {duration:.3f} s file")
        previous = end


def _id(span: Mapping[str, Any], otherwise: int | None) -> int | None:
    """The sentence id a sidecar's span gives (a hand-edited one may give none)."""
    sentence_id = span.get("id")
    return sentence_id if isinstance(sentence_id, int) else otherwise


def _rows(text: str, lang: str, options: TakeOptions) -> list[SentenceText]:
    return [SentenceText(s.id, s.text, spoken_text(s.text, s.lang, options), s.lang)
            for s in parse_script(text, lang).sentences]


def _spread(rows: Sequence[SentenceText], duration: float) -> list[dict[str, Any]]:
    """Spans for sentences with no times: the file shared in proportion to their written length."""
    weights = [max(1, len(row.text)) for row in rows]
    total, at, spans = sum(weights), 0.0, []
    for row, weight in zip(rows, weights):
        end = at + duration * weight / total
        spans.append({"id": row.id, "start_s": at, "end_s": min(end, duration)})
        at = end
    return spans


def _samples(audio: Path, span: Mapping[str, Any], rate: int) -> NDArray[np.float32]:
    """The file's samples of one span, mono (for an aligner)."""
    # lazy: start-up (soundfile)
    import soundfile as sf

    data, _rate = sf.read(str(audio), start=int(float(span["start_s"]) * rate), stop=int(float(span["end_s"]) * rate),
                          dtype="float32", always_2d=True)
    return np.asarray(data.mean(axis=1), dtype=np.float32)


def file_segments(audio: Path, duration: float, markers: Sequence[Marker] = ()) -> tuple[list[Segment], str]:
    """The stories and sentences of a file for its compliance report, and where they come from: its
    sidecar when one describes it (each sentence's span and text, its story), else the markers it holds
    (``markers``: a Broadcast Wave's cues: points are sentences, regions stories), else none."""
    sidecar, _unusable = _sidecar(audio, duration)
    if sidecar is not None:
        rows = {row.get("id"): row for row in sidecar["timings"]["sentences"] if isinstance(row, Mapping)}
        sentences = [Segment("sentence", str(rows.get(span.get("id"), {}).get("text") or f"Sentence {k + 1}"),
                             float(span["start_s"]), float(span["end_s"]))
                     for k, span in enumerate(sidecar["sentences"])]
        names = [rows.get(span.get("id"), {}).get("story") for span in sidecar["sentences"]]
        stories: list[Segment] = []
        for name, sentence in zip(names, sentences):
            if name and stories and stories[-1].label == name and stories[-1].end_s <= sentence.start_s + 1e-6:
                stories[-1] = replace(stories[-1], end_s=sentence.end_s)
            elif name:
                stories.append(Segment("story", str(name), sentence.start_s, sentence.end_s))
        return _in_order(stories, sentences), f"the sidecar {sidecar_path(audio).name}"
    if markers:
        points = list(markers)
        sentences = [Segment("sentence", m.label, m.start_s,
                             next((n.start_s for n in points[k + 1:] if n.end_s is None), duration))
                     for k, m in enumerate(points) if m.end_s is None]
        stories = [Segment("story", m.label, m.start_s, m.end_s) for m in points if m.end_s is not None]
        return _in_order(stories, sentences), "the file's cue markers"
    return [], "none: the file has no sidecar and no markers"


def _in_order(stories: Sequence[Segment], sentences: Sequence[Segment]) -> list[Segment]:
    """Each story's row before the sentences it holds."""
    return sorted([*stories, *sentences], key=lambda s: (s.start_s, s.kind != "story"))
