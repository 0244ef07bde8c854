"""``omnistudio bench --stream``: time to first audio and whole-script time of a script streamed as fast as
it renders (with ``--server``, see :mod:`omnistudio.bench.remote`)."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import TYPE_CHECKING, TypedDict

from omnistudio.bench.corpus import BULLETIN, NEWS, reference_prompt, take
from omnistudio.checks import DEFAULT_NUM_STEP
from omnistudio.errors import UserError
from omnistudio.voices.resolve import parse_voice, resolve_voice

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from omnistudio.bench.modes import GraphCounts, Modes, OpenEngine
    from omnistudio.engine.engine import Engine
    from omnistudio.take.link import EngineLink
    from omnistudio.take.options import TakeOptions

DEFAULT_SENTENCES = 40
DEFAULT_VOICE = "ruby"
SUMMARY = ("TTFA {ttfa_s:.3f} s, whole script {total_s:.2f} s ({sentences} sentences, {audio_s:.1f} s of audio), "
           "TTFA / whole = {ttfa_ratio}")


class TakeTimes(TypedDict):
    """One take's figures (:func:`time_take`)."""

    model: str
    device: str
    sentences: int
    failed: int
    steps: int
    ttfa_s: float
    ttfa_overhead_s: float | None
    total_s: float
    audio_s: float
    rtf: float | None
    engine_rtf: float | None


class OneAtATime(TypedDict):
    """Sentences each alone through ``Engine.synthesize`` (:func:`one_at_a_time`)."""

    rtf: float
    cpu_rtf: float
    audio_s: float
    reference_frames: int


class StreamResult(TakeTimes):
    """The streamed take (:func:`stream_benchmark`): its figures, its options and TTFA / whole."""

    num_step: int
    voice: str
    ttfa_ratio: float | None


class StreamRun(StreamResult):
    """``bench --stream`` (:func:`run`): the streamed take, the CPU time it took, the step graphs captured
    before it, and the same sentences one at a time."""

    cpu_rtf: float | None
    graphs: GraphCounts
    one_at_a_time: OneAtATime
    stream_vs_one_at_a_time: float | None
    sentence_bench_inputs: OneAtATime


def add_flags(parser: argparse.ArgumentParser, modes: Modes) -> None:
    modes.add_argument("--stream", action="store_true", help="TTFA vs whole-script time of a streamed script "
                       "(default 40 sentences, --voice, through the take pipeline as every client renders); with "
                       "--server, this machine's engine against the server's, same take (default 12 sentences)")


def time_take(link: EngineLink, text: str, options: TakeOptions) -> tuple[TakeTimes, NDArray[np.float32]]:
    """One take through the take pipeline, as every client renders, with its voices prepared first (untimed:
    a prompt build is not part of time to first audio) and a cold cache (every sentence renders).

    Reported: TTFA (from the take's start to its first sentence ready; over a network that includes the
    connection, the request and the frames coming back), the part of it that is not the engine rendering
    the first sentence (``ttfa_overhead_s``), whole-script time, audio seconds, the real-time factor of
    the whole take and the engine's mean RTF per sentence; and the take's samples."""
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.pipeline import TakeCache, build_take

    take = build_take(link, text, options, cache=TakeCache(0))
    link.prepare(take.voices())
    result = take.run()
    rtfs = [row.rtf for row in result.sentences if row.rtf is not None]
    first = result.sentences[0].render_s if result.sentences else None
    info, audio = link.info, result.audio_s
    return ({"model": info.model, "device": info.device, "sentences": len(result.sentences),
             "failed": sum(1 for row in result.sentences if row.error), "steps": result.steps,
             "ttfa_s": round(result.ttfa_s, 4),
             "ttfa_overhead_s": round(result.ttfa_s - first, 4) if first is not None else None,
             "total_s": round(result.total_s, 4), "audio_s": round(audio, 3),
             "rtf": round(result.total_s / audio, 4) if audio else None,
             "engine_rtf": round(statistics.fmean(rtfs), 4) if rtfs else None},
            result.pcm)


def bench_options(voice: str, num_step: int, seed: int) -> TakeOptions:
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.options import TakeOptions

    ref, lang = parse_voice(voice)
    return TakeOptions(num_step=num_step, seed=seed, voice=ref, lang=lang or "en").validated()


def stream_benchmark(link: EngineLink, n_sentences: int = DEFAULT_SENTENCES, voice: str = DEFAULT_VOICE,
                     num_step: int = DEFAULT_NUM_STEP, seed: int = 0) -> StreamResult:
    """Stream an ``n_sentences`` script through ``link`` as fast as it renders: TTFA, whole-script time,
    their ratio."""
    if n_sentences < 1:
        raise UserError("the stream benchmark needs at least one sentence")
    row, _pcm = time_take(link, "\n".join(take(BULLETIN, n_sentences)), bench_options(voice, num_step, seed))
    total = row["total_s"]
    return {**row, "num_step": num_step, "voice": voice,
            "ttfa_ratio": round(row["ttfa_s"] / total, 4) if total else None}


def one_at_a_time(engine: Engine, texts: list[str], voice: str | None, num_step: int, seed: int) -> OneAtATime:
    """Sentences each alone through ``Engine.synthesize`` (the one-sentence bench's path): the stream's own
    (``voice``: its prompt, its seeds), or with ``voice`` None the one-sentence bench's synthetic reference.
    RTF by wall time and by process CPU time, frames of reference, to set beside the take's."""

    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.options import sentence_seed

    ref, lang = parse_voice(voice or DEFAULT_VOICE)
    lang = lang or "en"
    prompt = resolve_voice(engine, ref, lang) if voice else reference_prompt(engine)
    wall = cpu = audio = 0.0
    for text in texts:
        t0, c0 = time.perf_counter(), time.process_time()
        out = engine.synthesize(text, prompt, lang, num_step=num_step, seed=sentence_seed(seed, text, ref.key(), lang))
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        audio += out.timings.audio_s
    return {"rtf": round(wall / audio, 4), "cpu_rtf": round(cpu / audio, 4), "audio_s": round(audio, 3),
            "reference_frames": int(prompt.ref_audio_tokens.size(-1))}


def run(args: argparse.Namespace, open_engine: OpenEngine) -> StreamRun:

    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.link import LocalEngine

    engine = open_engine(args, "fast")
    link = LocalEngine(engine)

    ref, lang = parse_voice(args.voice)
    link.prepare([(ref, lang or "en")])  # the prompt built before the CPU clock starts (the take's prepare is untimed)
    # lazy: start-up (numpy)
    from omnistudio.voices.startup import longest_row

    graphs = engine.prepare_graphs((1,), longest_row(engine))  # as the studio's warm-up does
    args.progress(0, 1, f"streaming {args.sentences} sentences")
    c0 = time.process_time()
    result = stream_benchmark(link, n_sentences=args.sentences, voice=args.voice, num_step=args.num_step,
                              seed=args.seed)
    cpu_rtf = round((time.process_time() - c0) / result["audio_s"], 4) if result["audio_s"] else None
    counts: GraphCounts = {"captured": graphs.captured, "capture_s": round(graphs.capture_s, 3),
                           "failed": graphs.failed}
    args.progress(0, 1, f"the same {args.sentences} sentences one at a time")
    alone = one_at_a_time(engine, take(BULLETIN, args.sentences), args.voice, args.num_step, args.seed)
    ratio = round(result["rtf"] / alone["rtf"], 4) if result["rtf"] else None
    args.progress(0, 1, "the one-sentence bench's sentences and reference")
    inputs = one_at_a_time(engine, take(NEWS, min(args.sentences, len(NEWS))), None, args.num_step, args.seed)
    return {**result, "cpu_rtf": cpu_rtf, "graphs": counts, "one_at_a_time": alone, "stream_vs_one_at_a_time": ratio,
            "sentence_bench_inputs": inputs}


def print_result(result: StreamRun) -> None:
    print(f"{result['model']} on {result['device']}: " + SUMMARY.format(**result))
    alone = result.get("one_at_a_time")
    if alone:
        print(f"RTF streamed {result['rtf']:.2f} (CPU {result['cpu_rtf']:.2f}); the same sentences one at a time "
              f"{alone['rtf']:.2f} (CPU {alone['cpu_rtf']:.2f}): stream / one at a time = "
              f"{result['stream_vs_one_at_a_time']:.2f}; the one-sentence bench's sentences and reference "
              f"{result['sentence_bench_inputs']['rtf']:.2f} (CPU {result['sentence_bench_inputs']['cpu_rtf']:.2f})")
