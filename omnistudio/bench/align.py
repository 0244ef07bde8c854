"""Word-timing accuracy bench: word onsets measured by alignment against flite ground truth (not a timed
test; run it on its own: ``python -m omnistudio.bench.align``).

It builds the ground truth of :mod:`omnistudio.bench.onsets` (flite words and short phrases with known
silences between them; flite must be installed), aligns each of its sentences with
:func:`omnistudio.voices.align.align_sentence` and Whisper (``--asr-model``, ``OMNISTUDIO_ASR_MODEL`` or
the packaged tiny.en) and prints one JSON object: the word-onset error (median, 95th percentile, in ms)
over all words, over the words after a pause (the first of each item) and inside speech (the other words
of a phrase), how many words were estimated rather than measured, the alignment's CPU seconds per
second of audio, and the ``provenance`` (commit, machine, load); then one summary line."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from omnistudio.bench.onsets import RATE, GroundTruth, ground_truth
from omnistudio.bench.provenance import provenance, provenance_line
from omnistudio.errors import UserError
from omnistudio.text import normalize
from omnistudio.voices.asr import Transcriber, find_model_dir

if TYPE_CHECKING:
    from omnistudio.voices.align import Hearer

MEDIAN_BOUND_MS = 40.0  # issue 26: the median word-onset error at most this
P95_BOUND_MS = 120.0  # and the 95th percentile at most this


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[round(q * (len(ordered) - 1))] if ordered else float("nan")


class OnsetErrors(TypedDict):
    """Word-onset errors of a set of words (ms, aligned minus true; None without words)."""

    words: int
    median_ms: float | None
    p95_ms: float | None
    signed_median_ms: float | None


class AlignResult(TypedDict):
    """What :func:`align_benchmark` measures (``main`` adds the model and the thread count)."""

    audio_s: float
    sentences: int
    estimated_words: int
    all: OnsetErrors
    after_pause: OnsetErrors
    inside_speech: OnsetErrors
    cpu_s_per_audio_s: float
    wall_s_per_audio_s: float
    cpu_s: float
    model: NotRequired[str]
    threads: NotRequired[int]


def _summary(errors: list[float]) -> OnsetErrors:
    magnitudes = [abs(e) for e in errors]
    return {"words": len(errors), "median_ms": round(statistics.median(magnitudes), 1) if errors else None,
            "p95_ms": round(_percentile(magnitudes, 0.95), 1) if errors else None,
            "signed_median_ms": round(statistics.median(errors), 1) if errors else None}


def align_benchmark(transcriber: Hearer, truth: GroundTruth) -> AlignResult:
    """Align every sentence of ``truth``; the onset errors (ms, aligned minus true) summarised, and the cost."""
    # lazy: looked up when called (tests replace it)
    from omnistudio.voices.align import align_sentence

    errors: dict[str, list[float]] = {"all": [], "after_pause": [], "inside_speech": []}
    estimated = 0
    cpu = wall = 0.0
    for sentence in truth.sentences:
        spoken = normalize(sentence.text, "en")
        c0, w0 = time.process_time(), time.perf_counter()
        words = align_sentence(transcriber, truth.audio(sentence), RATE, spoken, "en", sentence.start,
                               (sentence.start, sentence.end))
        cpu += time.process_time() - c0
        wall += time.perf_counter() - w0
        if len(words) != len(sentence.words):
            raise RuntimeError(f"{sentence.text!r}: {len(words)} words aligned, {len(sentence.words)} true")
        for word, true in zip(words, sentence.words):
            error = (word.start - true.onset) * 1000.0
            errors["all"].append(error)
            errors["after_pause" if true.after_pause else "inside_speech"].append(error)
            estimated += word.estimated
    audio_s = truth.pcm.size / RATE
    return {"audio_s": round(audio_s, 1), "sentences": len(truth.sentences), "estimated_words": estimated,
            "all": _summary(errors["all"]), "after_pause": _summary(errors["after_pause"]),
            "inside_speech": _summary(errors["inside_speech"]),
            "cpu_s_per_audio_s": round(cpu / audio_s, 3), "wall_s_per_audio_s": round(wall / audio_s, 3),
            "cpu_s": round(cpu, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnistudio.bench.align", description=__doc__)
    parser.add_argument("--words", type=int, default=200, help="at least this many words of ground truth")
    parser.add_argument("--asr-model", type=Path, default=None, help="a faster-whisper model folder "
                        "(default: OMNISTUDIO_ASR_MODEL, else the packaged Whisper tiny.en)")
    parser.add_argument("--threads", type=int, default=1, help="Whisper's CPU threads (default 1)")
    args = parser.parse_args(argv)
    try:
        truth = ground_truth(args.words)
        transcriber = Transcriber(find_model_dir(args.asr_model), threads=args.threads)
    except UserError as exc:
        print(f"omnistudio.bench.align: {exc}", file=sys.stderr)
        return 2
    result = align_benchmark(transcriber, truth)
    result["model"] = str(transcriber.path)
    result["threads"] = args.threads
    where = provenance()
    print(json.dumps({**result, "provenance": where}, indent=2))
    every, pause, inside = result["all"], result["after_pause"], result["inside_speech"]
    print(f"word onsets by alignment over {every['words']} flite words ({result['estimated_words']} estimated): "
          f"median {every['median_ms']:.0f} ms, p95 {every['p95_ms']:.0f} ms (bounds {MEDIAN_BOUND_MS:.0f} / "
          f"{P95_BOUND_MS:.0f}); after a pause {pause['median_ms']:.0f} / {pause['p95_ms']:.0f} ms, inside speech "
          f"{inside['median_ms']:.0f} / {inside['p95_ms']:.0f} ms; cost {result['cpu_s_per_audio_s']:.3f} CPU s per "
          f"audio s ({args.threads} thread); {provenance_line(where)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
