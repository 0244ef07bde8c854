"""``omnistudio bench --stream``: time to first audio and whole-script time of a script streamed as fast as
it renders (with ``--server``, see :mod:`omnistudio.bench.remote`)."""

from __future__ import annotations

import argparse
from typing import Any

from omnistudio.bench.corpus import BULLETIN, reference_prompt, take
from omnistudio.checks import DEFAULT_NUM_STEP
from omnistudio.errors import UserError

DEFAULT_SENTENCES = 40
SUMMARY = ("TTFA {ttfa_s:.3f} s, whole script {total_s:.2f} s ({sentences} sentences, {audio_s:.1f} s of audio), "
           "TTFA / whole = {ttfa_ratio}")


def add_flags(parser: argparse.ArgumentParser, modes: Any) -> None:
    modes.add_argument("--stream", action="store_true", help="TTFA vs whole-script time of a streamed script "
                       "(default 40 sentences); with --server, this machine's engine against the server's, "
                       "same take (default 12 sentences)")


def stream_benchmark(engine: Any, n_sentences: int = 40, voice: Any = None,
                     num_step: int = DEFAULT_NUM_STEP, seed: int = 0) -> dict[str, Any]:
    """Stream an ``n_sentences`` script as fast as it renders: TTFA, whole-script time, their ratio."""
    from omnistudio.script import parse_script
    from omnistudio.take.stream import open_stream

    if n_sentences < 1:
        raise UserError("the stream benchmark needs at least one sentence")
    prompt = voice if voice is not None else reference_prompt(engine)
    script = parse_script("\n".join(take(BULLETIN, n_sentences)), "en")
    audio_s, render_s, failed = 0.0, 0.0, 0
    with open_stream(engine, script, prompt, num_step=num_step, seed=seed) as stream:
        for chunk in stream:
            failed += not chunk.ok
            if chunk.timings is not None:
                audio_s += chunk.timings.audio_s
                render_s += chunk.timings.wall_s
        stream.join()
    total = stream.finished_s or 0.0
    ttfa = stream.ttfa_s if stream.ttfa_s is not None else float("nan")
    return {"model": engine.loaded.spec.name, "device": engine.loaded.device, "num_step": num_step,
            "sentences": len(script), "failed": failed, "steps": stream.steps,
            "ttfa_s": round(ttfa, 4), "total_s": round(total, 4), "ttfa_ratio": round(ttfa / total, 4) if total else None,
            "audio_s": round(audio_s, 3), "render_s": round(render_s, 4),
            "rtf": round(total / audio_s, 4) if audio_s else None}


def run(args: argparse.Namespace, open_engine: Any) -> dict[str, Any]:
    engine = open_engine(args, "fast")
    args.progress(0, 1, f"streaming {args.sentences} sentences")
    return stream_benchmark(engine, n_sentences=args.sentences, num_step=args.num_step, seed=args.seed)


def print_result(result: dict[str, Any]) -> None:
    print(f"{result['model']} on {result['device']}: " + SUMMARY.format(**result))
