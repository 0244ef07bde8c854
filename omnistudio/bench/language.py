"""Language identification bench: what :func:`omnistudio.text.language.detect` costs a paragraph, and how
often it would flag a correctly tagged one (not a timed test; ``python -m omnistudio.bench.language``).

In a fresh interpreter it times the first call (lingua loads its English and Spanish models); then it
times every line of the news corpus (``tests/data/text/news_{es,en}.tsv``, each line a paragraph)
``--rounds`` times and counts the lines it reads as the other language (each would be a false warning).
One JSON object with the ``provenance`` (commit, machine, load), then one summary line."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from omnistudio.bench.provenance import provenance, provenance_line
from omnistudio.bench.text import CORPUS_DIR, corpus
from omnistudio.text.language import detect

_FIRST_CALL = ("import time; t0 = time.perf_counter(); from omnistudio.text.language import detect; "
               "detect('The Dow rose to 38,450 points.'); print((time.perf_counter() - t0) * 1000)")


def first_call_ms() -> float:
    """Import and first call (the models loaded), in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL], capture_output=True, text=True, check=True).stdout
    return round(float(out), 1)


def per_paragraph(rounds: int, folder: Path) -> dict[str, object]:
    detect("The Dow rose to 38,450 points.")  # the models loaded: timed apart, in first_call_ms
    times: list[float] = []
    flagged: dict[str, list[str]] = {"es": [], "en": []}
    undecided = 0
    for lang in ("es", "en"):
        for text in corpus(lang, folder):
            heard = None
            for _ in range(rounds):
                t0 = time.perf_counter()
                heard = detect(text)
                times.append((time.perf_counter() - t0) * 1000.0)
            undecided += heard is None
            if heard is not None and heard != lang:
                flagged[lang].append(text)
    times.sort()
    return {"paragraphs": len(times) // rounds, "rounds": rounds, "mean_ms": round(statistics.fmean(times), 4),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 4), "max_ms": round(times[-1], 3),
            "undecided": undecided, "false_flags": flagged}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnistudio.bench.language", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5, help="times each corpus line is identified")
    parser.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of news_es.tsv and news_en.tsv")
    args = parser.parse_args(argv)
    result = {"first_call_ms": first_call_ms(), **per_paragraph(args.rounds, args.corpus)}
    where = provenance()
    print(json.dumps({**result, "provenance": where}, indent=2, ensure_ascii=False))
    flags = result["false_flags"]
    assert isinstance(flags, dict)
    print(f"language id: first call {result['first_call_ms']:.0f} ms; per paragraph mean {result['mean_ms']} ms, "
          f"p95 {result['p95_ms']} ms over {result['paragraphs']} lines; undecided {result['undecided']}; "
          f"false flags {sum(len(v) for v in flags.values())}; {provenance_line(where)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
