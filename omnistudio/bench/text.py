"""Text front-end bench: what :func:`omnistudio.text.normalize` costs (not a timed test; run it on its
own: ``python -m omnistudio.bench.text``).

It measures, in a fresh interpreter, the import of ``omnistudio.text`` (patterns compiled, num2words
loaded) and the first call (num2words' language modules), then times every sentence of the test corpus
(``tests/data/text/news_{es,en}.tsv``) ``--rounds`` times in this process and prints one JSON object:
per language the sentences, mean and p95 milliseconds per sentence, and the ``provenance`` (commit,
machine, load), then one summary line."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TypedDict

from omnistudio.bench.provenance import provenance, provenance_line
from omnistudio.text import normalize

CORPUS_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "text"
_START_UP = ("import time; t0 = time.perf_counter(); import omnistudio.text as t; t1 = time.perf_counter(); "
             "t.normalize('El 21 % de US$ 1.245,50 el 14/10.', 'es'); t2 = time.perf_counter(); "
             "t.normalize('The S&P 500 rose 1.2% on Oct. 14.', 'en'); t3 = time.perf_counter(); "
             "print((t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000)")


def corpus(lang: str, folder: Path = CORPUS_DIR) -> list[str]:
    """The written column of the ``lang`` corpus."""
    path = folder / f"news_{lang}.tsv"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[1] for line in lines if line.strip() and not line.startswith("#")]


class StartUp(TypedDict):
    """Milliseconds of the import and of the first call in each language, in a fresh interpreter."""

    import_ms: float
    first_call_es_ms: float
    first_call_en_ms: float


class SentenceCost(TypedDict):
    """What normalising one language's corpus costs per sentence."""

    sentences: int
    mean_ms: float
    p95_ms: float
    max_ms: float
    mean_chars: float


class TextResult(StartUp):
    """The start-up, then each language's per-sentence cost, and how many rounds were timed."""

    es: SentenceCost
    en: SentenceCost
    rounds: int


def start_up() -> StartUp:
    """Import and first-call milliseconds, in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _START_UP], capture_output=True, text=True, check=True).stdout
    imported, first_es, first_en = (float(x) for x in out.split())
    return {"import_ms": round(imported, 1), "first_call_es_ms": round(first_es, 2),
            "first_call_en_ms": round(first_en, 2)}


def per_sentence(sentences: list[str], lang: str, rounds: int) -> SentenceCost:
    times = []
    for _ in range(rounds):
        for sentence in sentences:
            t0 = time.perf_counter()
            normalize(sentence, lang)
            times.append((time.perf_counter() - t0) * 1000.0)
    times.sort()
    return {"sentences": len(sentences), "mean_ms": round(statistics.fmean(times), 3),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3), "max_ms": round(times[-1], 3),
            "mean_chars": round(statistics.fmean(len(s) for s in sentences), 1)}


def text_benchmark(rounds: int = 5, folder: Path = CORPUS_DIR) -> TextResult:
    return {**start_up(), "es": per_sentence(corpus("es", folder), "es", rounds),
            "en": per_sentence(corpus("en", folder), "en", rounds), "rounds": rounds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnistudio.bench.text", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5, help="times each corpus sentence is normalised")
    parser.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of news_es.tsv and news_en.tsv")
    args = parser.parse_args(argv)
    result = text_benchmark(args.rounds, args.corpus)
    where = provenance()
    print(json.dumps({**result, "provenance": where}, indent=2))
    print(f"text front-end: import {result['import_ms']:.0f} ms, first call {result['first_call_es_ms']:.1f} ms (es) "
          f"/ {result['first_call_en_ms']:.1f} ms (en); per sentence es mean {result['es']['mean_ms']:.3f} ms, "
          f"p95 {result['es']['p95_ms']:.3f} ms; en mean {result['en']['mean_ms']:.3f} ms, "
          f"p95 {result['en']['p95_ms']:.3f} ms; {provenance_line(where)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
