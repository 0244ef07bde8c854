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
are bit for bit the same (they are when both ends run the same model on the same kind of device).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from omnistudio.bench.stream import BENCH_SENTENCES
from omnistudio.checks import DEFAULT_NUM_STEP
from omnistudio.errors import UserError

DEFAULT_VOICE = "ruby"


def _side(link: Any, text: str, options: Any) -> tuple[dict[str, Any], np.ndarray]:
    from omnistudio.take.pipeline import TakeCache, build_take

    take = build_take(link, text, options, cache=TakeCache(0))  # a cold cache: every sentence renders
    link.prepare(take.voices())
    result = take.run()
    rtfs = [row["rtf"] for row in result.sentences if row.get("rtf") is not None]
    first = result.sentences[0].get("render_s") if result.sentences else None
    info = link.info
    audio = result.audio_s
    return ({"model": info.model, "device": info.device, "ttfa_s": round(result.ttfa_s, 4),
             "ttfa_overhead_s": round(result.ttfa_s - first, 4) if first is not None else None,
             "total_s": round(result.total_s, 4), "audio_s": round(audio, 3),
             "rtf": round(result.total_s / audio, 4) if audio else None,
             "engine_rtf": round(statistics.fmean(rtfs), 4) if rtfs else None, "steps": result.steps},
            result.pcm)


def remote_stream_benchmark(local: Any, remote: Any, n_sentences: int = 12, voice: str = DEFAULT_VOICE,
                            num_step: int = DEFAULT_NUM_STEP, seed: int = 0,
                            progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    """Stream an ``n_sentences`` script through ``local`` then ``remote`` (two EngineLinks); compare."""
    from omnistudio.take.options import TakeOptions
    from omnistudio.voices.resolve import parse_voice

    if n_sentences < 1:
        raise UserError("the stream benchmark needs at least one sentence")
    ref, lang = parse_voice(voice)
    options = TakeOptions(num_step=num_step, seed=seed, voice=ref, lang=lang or "en").validated()
    text = "\n".join(BENCH_SENTENCES[i % len(BENCH_SENTENCES)] for i in range(n_sentences))
    rows: dict[str, dict[str, Any]] = {}
    takes: dict[str, np.ndarray] = {}
    for done, (name, link) in enumerate((("local", local), ("remote", remote))):
        if progress is not None:
            progress(done, 2, f"{name}: {n_sentences} sentences")
        rows[name], takes[name] = _side(link, text, options)
    loc, rem = rows["local"], rows["remote"]

    def ratio(key: str) -> float | None:
        return round(rem[key] / loc[key], 3) if loc.get(key) and rem.get(key) is not None else None

    return {"sentences": n_sentences, "voice": ref.key(), "num_step": num_step, "seed": seed,
            "local": loc, "remote": rem, "ttfa_ratio": ratio("ttfa_s"), "total_ratio": ratio("total_s"),
            "identical": bool(np.array_equal(takes["local"], takes["remote"]))}
