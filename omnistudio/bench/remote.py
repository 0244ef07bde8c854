"""Remote vs local streaming, in one run: the same script, voice, seed and options rendered as a take
through an in-process engine and through a speech server (``omnistudio bench --stream --server URL``).

Each side prepares its voices first (untimed: a prompt build is not part of time to first audio), then
renders the take from a cold cache as fast as it renders. Reported per side: time to first audio
(TTFA: from the take's start to its first sentence ready; over the network that includes the
connection, the request and the frames coming back), the part of TTFA that is not the engine rendering
the first sentence (``ttfa_overhead_s``: the network and protocol, remotely), whole-script time, audio
seconds, the real-time factor of the whole take, and the engine's mean RTF per sentence (remotely: the
server's, as its telemetry reports it).
The ratios remote / local are measured in this run; ``identical`` says whether the two takes' samples
are bit for bit the same (they are under the reproducibility contract: the same model, kind of device,
dtype and torch thread count on both ends).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypedDict

from omnistudio.bench.corpus import BULLETIN, take
from omnistudio.bench.stream import bench_options, time_take
from omnistudio.checks import DEFAULT_NUM_STEP
from omnistudio.errors import UserError
from omnistudio.flags.engine import remote_link

if TYPE_CHECKING:
    import numpy as np

    from omnistudio.bench.modes import OpenEngine, Progress
    from omnistudio.bench.stream import TakeTimes
    from omnistudio.take.link import EngineLink

DEFAULT_VOICE = "ruby"
DEFAULT_SENTENCES = 12
SUMMARY = ("same take ({sentences} sentences, voice {voice}), server vs here: TTFA {remote[ttfa_s]:.3f} s vs "
           "{local[ttfa_s]:.3f} s (x{ttfa_ratio}; network and protocol {remote[ttfa_overhead_s]:.3f} s of "
           "it), whole script {remote[total_s]:.2f} s vs {local[total_s]:.2f} s (x{total_ratio}); engine "
           "RTF {remote[engine_rtf]} vs {local[engine_rtf]}; identical samples: {identical}")


class RemoteStream(TypedDict):
    """The same take here and on the server (``local``, ``remote``: :func:`~omnistudio.bench.stream.time_take`'s
    figures), the ratios remote / local and whether the samples are identical."""

    sentences: int
    voice: str
    num_step: int
    seed: int
    local: TakeTimes
    remote: TakeTimes
    ttfa_ratio: float | None
    total_ratio: float | None
    identical: bool


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--voice", default=DEFAULT_VOICE, help="--stream: the anchor (or a+b@alpha) the take speaks "
                        "with; with --server, both runs (default ruby)")


def remote_stream_benchmark(local: EngineLink, remote: EngineLink, n_sentences: int = 12, voice: str = DEFAULT_VOICE,
                            num_step: int = DEFAULT_NUM_STEP, seed: int = 0,
                            progress: Progress | None = None) -> RemoteStream:
    """Stream an ``n_sentences`` script through ``local`` then ``remote`` (two EngineLinks); compare."""

    if n_sentences < 1:
        raise UserError("the stream benchmark needs at least one sentence")
    options = bench_options(voice, num_step, seed)
    text = "\n".join(take(BULLETIN, n_sentences))
    rows: dict[str, TakeTimes] = {}
    takes: dict[str, np.ndarray] = {}
    for done, (name, link) in enumerate((("local", local), ("remote", remote))):
        if progress is not None:
            progress(done, 2, f"{name}: {n_sentences} sentences")
        rows[name], takes[name] = time_take(link, text, options)
    # lazy: start-up (numpy)
    import numpy as np

    loc, rem = rows["local"], rows["remote"]

    def ratio(key: Literal["ttfa_s", "total_s"]) -> float | None:
        return round(rem[key] / loc[key], 3) if loc.get(key) and rem.get(key) is not None else None

    return {"sentences": n_sentences, "voice": options.voice.key() if options.voice else voice, "num_step": num_step, "seed": seed,
            "local": loc, "remote": rem, "ttfa_ratio": ratio("ttfa_s"), "total_ratio": ratio("total_s"),
            "identical": bool(np.array_equal(takes["local"], takes["remote"]))}


def run(args: argparse.Namespace, open_engine: OpenEngine) -> dict[str, object]:
    """--stream --server URL: the same take through this machine's engine and the server's, in one run."""
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.link import LocalEngine

    remote = remote_link(args.server, args.api_key_file)
    if remote is None:  # this mode is the one --server picks: never without a URL
        raise UserError("bench --stream --server needs the server's URL")
    args.progress(0, 2, f"connecting to {remote.address}")
    info = remote.wait_ready(lambda text: args.progress(0, 2, text))
    args.model = args.model or info.model  # the local run: the server's model unless --model says otherwise
    local = LocalEngine(open_engine(args, "fast"))
    result = remote_stream_benchmark(local, remote, n_sentences=args.sentences, voice=args.voice,
                                     num_step=args.num_step, seed=args.seed, progress=args.progress)
    return {"model": f"{local.info.model} here / {info.model} on the server", "device": result["remote"]["device"],
            **result}


def print_result(result: Mapping[str, object]) -> None:
    print(f"{result['model']} on {result['device']}: " + SUMMARY.format(**result))
