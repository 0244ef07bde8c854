"""``omnistudio bench --stream-input``: text typed in as a language model writes it (``--rate`` tokens a second,
a token a word and the space before it) through an :class:`~omnistudio.take.incoming.IncomingTake`, against
the same script sent whole (:func:`~omnistudio.take.pipeline.build_take`), same seed, same engine.

Reported: first audio after the first sentence's last character (p50/p95 over ``--repeats`` runs); the
gaps a listener would hear (playback starts with the first sentence; each next one must be ready before
the one playing ends; a sentence whose text was not written yet when playback reached it is waiting on
the writer, not the engine, and is counted apart); and the whole script's time, streamed vs whole."""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import TYPE_CHECKING, TypedDict

from omnistudio.bench.corpus import BULLETIN, take
from omnistudio.take.incoming import IncomingScript, IncomingTake
from omnistudio.take.link import LocalEngine
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import build_take
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from omnistudio.bench.modes import Modes, OpenEngine
    from omnistudio.take.stream import Chunk

DEFAULT_SENTENCES = 12
REPEATS = 3


class StreamInputResult(TypedDict):
    model: str
    device: str
    sentences: int
    rate_tokens_s: float
    num_step: int
    first_audio_after_sentence_p50_ms: float
    first_audio_after_sentence_p95_ms: float
    engine_gaps: int  # a sentence late while its text had been written
    writer_waits: int  # a sentence late because its text was not written yet
    streamed_total_s: float
    whole_ttfa_s: float
    whole_total_s: float
    typing_s: float


def add_flags(parser: argparse.ArgumentParser, modes: Modes) -> None:
    modes.add_argument("--stream-input", action="store_true", help="text typed in at --rate tokens/s through "
                       "an incoming take vs the whole script at once: first audio after the first sentence ends, "
                       "gaps (default 12 sentences)")
    parser.add_argument("--rate", type=float, default=15.0, help="--stream-input: tokens (words) a second "
                        "(default 15, a language model writing)")


def _tokens(text: str) -> list[str]:
    words = text.split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)]


def _typed(script: IncomingScript, lines: list[str], rate: float, first_end: list[float]) -> None:
    """Write ``lines`` at ``rate`` tokens a second; note when the first sentence's last character went in."""
    pause = 1.0 / rate
    for n, line in enumerate(lines):
        for token in _tokens(line) + (["\n"] if n + 1 < len(lines) else []):
            script.append(token)
            if n == 0 and not first_end and token.rstrip().endswith((".", "!", "?")):
                first_end.append(time.perf_counter())
            time.sleep(pause)
    script.close()


def _one(link: LocalEngine, options: TakeOptions, lines: list[str], rate: float) -> tuple[float, int, int, float]:
    """(first audio after the first sentence's end, engine gaps, writer waits, total seconds) of one typed take."""
    script = IncomingScript(options, options.seed)
    first_end: list[float] = []
    ready: list[tuple[float, float, int]] = []  # (ready at, seconds of audio, sentence id)

    def on_chunk(chunk: Chunk) -> None:
        ready.append((time.perf_counter(), chunk.pcm.size / chunk.sample_rate, chunk.sentence_id))

    started = time.perf_counter()
    writer = threading.Thread(target=_typed, args=(script, lines, rate, first_end), daemon=True)
    writer.start()
    IncomingTake(link, script).run([], on_chunk=on_chunk)
    writer.join()
    written = dict(enumerate(script.handed_at))  # sentence id -> when its text was complete (handed on)
    clock = ready[0][0] + ready[0][1]  # playback: the first sentence, then each as soon as both are ready
    gaps = waits = 0
    for at, seconds, sentence_id in ready[1:]:
        if at > clock + 0.005:
            if written.get(sentence_id, at) > clock:
                waits += 1  # the writer had not finished its text when playback got there
            else:
                gaps += 1
            clock = at
        clock += seconds
    return ready[0][0] - first_end[0], gaps, waits, time.perf_counter() - started


def run(args: argparse.Namespace, open_engine: OpenEngine) -> StreamInputResult:
    engine = open_engine(args, "fast")
    link = LocalEngine(engine)
    options = TakeOptions(num_step=args.num_step, seed=args.seed, voice=VoiceRef(anchor="ruby")).validated()
    lines = take(BULLETIN, args.sentences)
    script_text = "\n".join(lines)
    args.progress(0, REPEATS + 2, "warming up")
    build_take(link, lines[0], options).run([])  # the voice prepared, the model warm: neither is timed
    firsts, gaps, waits, totals = [], 0, 0, []
    for k in range(REPEATS):
        args.progress(k + 1, REPEATS + 2, f"typed take {k + 1} of {REPEATS}")
        first, g, w, total = _one(link, options, lines, args.rate)
        firsts.append(first)
        gaps, waits = gaps + g, waits + w
        totals.append(total)
    args.progress(REPEATS + 1, REPEATS + 2, "the whole script at once")
    whole = build_take(link, script_text, options).run([])
    firsts.sort()
    p95 = firsts[min(len(firsts) - 1, round(0.95 * (len(firsts) - 1)))]
    typing_s = sum(len(_tokens(line)) + 1 for line in lines) / args.rate
    info = link.info
    return StreamInputResult(model=info.model, device=info.device, sentences=len(lines), rate_tokens_s=args.rate,
                             num_step=args.num_step, first_audio_after_sentence_p50_ms=statistics.median(firsts) * 1e3,
                             first_audio_after_sentence_p95_ms=p95 * 1e3, engine_gaps=gaps, writer_waits=waits,
                             streamed_total_s=statistics.median(totals), whole_ttfa_s=whole.ttfa_s,
                             whole_total_s=whole.total_s, typing_s=typing_s)


def print_result(result: StreamInputResult) -> None:
    print(f"stream input on {result['device']} ({result['model']}, {result['sentences']} sentences typed at "
          f"{result['rate_tokens_s']:g} tokens/s, {result['num_step']} steps, {REPEATS} runs):")
    print(f"  first audio after the first sentence ends: p50 {result['first_audio_after_sentence_p50_ms']:.0f} ms, "
          f"p95 {result['first_audio_after_sentence_p95_ms']:.0f} ms")
    print(f"  gaps while the text keeps up: {result['engine_gaps']} (waiting on the writer: {result['writer_waits']})")
    print(f"  streamed take {result['streamed_total_s']:.2f} s (typing alone {result['typing_s']:.2f} s); whole "
          f"script at once: first audio {result['whole_ttfa_s']:.3f} s, all {result['whole_total_s']:.2f} s")
