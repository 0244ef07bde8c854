"""``omnistudio bench --stream``: time to first audio and whole-script time of a script streamed as fast as
it renders (with ``--server``, see :mod:`omnistudio.bench.remote`)."""

from __future__ import annotations

import argparse
import statistics
from typing import TYPE_CHECKING, Any

from omnistudio.bench.corpus import BULLETIN, take
from omnistudio.checks import DEFAULT_NUM_STEP
from omnistudio.errors import UserError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from omnistudio.take.link import EngineLink
    from omnistudio.take.options import TakeOptions

DEFAULT_SENTENCES = 40
DEFAULT_VOICE = "ruby"
SUMMARY = ("TTFA {ttfa_s:.3f} s, whole script {total_s:.2f} s ({sentences} sentences, {audio_s:.1f} s of audio), "
           "TTFA / whole = {ttfa_ratio}")


def add_flags(parser: argparse.ArgumentParser, modes: Any) -> None:
    modes.add_argument("--stream", action="store_true", help="TTFA vs whole-script time of a streamed script "
                       "(default 40 sentences, --voice, through the take pipeline as every client renders); with "
                       "--server, this machine's engine against the server's, same take (default 12 sentences)")


def time_take(link: EngineLink, text: str, options: TakeOptions) -> tuple[dict[str, Any], NDArray[np.float32]]:
    """One take through the take pipeline, as every client renders, with its voices prepared first (untimed:
    a prompt build is not part of time to first audio) and a cold cache (every sentence renders).

    Reported: TTFA (from the take's start to its first sentence ready; over a network that includes the
    connection, the request and the frames coming back), the part of it that is not the engine rendering
    the first sentence (``ttfa_overhead_s``), whole-script time, audio seconds, the real-time factor of
    the whole take and the engine's mean RTF per sentence; and the take's samples."""
    from omnistudio.take.pipeline import TakeCache, build_take

    take = build_take(link, text, options, cache=TakeCache(0))
    link.prepare(take.voices())
    result = take.run()
    rtfs = [row["rtf"] for row in result.sentences if row.get("rtf") is not None]
    first = result.sentences[0].get("render_s") if result.sentences else None
    info, audio = link.info, result.audio_s
    return ({"model": info.model, "device": info.device, "sentences": len(result.sentences),
             "failed": sum(1 for row in result.sentences if row.get("error")), "steps": result.steps,
             "ttfa_s": round(result.ttfa_s, 4),
             "ttfa_overhead_s": round(result.ttfa_s - first, 4) if first is not None else None,
             "total_s": round(result.total_s, 4), "audio_s": round(audio, 3),
             "rtf": round(result.total_s / audio, 4) if audio else None,
             "engine_rtf": round(statistics.fmean(rtfs), 4) if rtfs else None},
            result.pcm)


def bench_options(voice: str, num_step: int, seed: int) -> TakeOptions:
    from omnistudio.take.options import TakeOptions
    from omnistudio.voices.resolve import parse_voice

    ref, lang = parse_voice(voice)
    return TakeOptions(num_step=num_step, seed=seed, voice=ref, lang=lang or "en").validated()


def stream_benchmark(link: EngineLink, n_sentences: int = DEFAULT_SENTENCES, voice: str = DEFAULT_VOICE,
                     num_step: int = DEFAULT_NUM_STEP, seed: int = 0) -> dict[str, Any]:
    """Stream an ``n_sentences`` script through ``link`` as fast as it renders: TTFA, whole-script time,
    their ratio."""
    if n_sentences < 1:
        raise UserError("the stream benchmark needs at least one sentence")
    row, _pcm = time_take(link, "\n".join(take(BULLETIN, n_sentences)), bench_options(voice, num_step, seed))
    total = row["total_s"]
    return {**row, "num_step": num_step, "voice": voice,
            "ttfa_ratio": round(row["ttfa_s"] / total, 4) if total else None}


def run(args: argparse.Namespace, open_engine: Any) -> dict[str, Any]:
    from omnistudio.take.link import LocalEngine

    link = LocalEngine(open_engine(args, "fast"))
    args.progress(0, 1, f"streaming {args.sentences} sentences")
    return stream_benchmark(link, n_sentences=args.sentences, voice=args.voice, num_step=args.num_step,
                            seed=args.seed)


def print_result(result: dict[str, Any]) -> None:
    print(f"{result['model']} on {result['device']}: " + SUMMARY.format(**result))
