"""Stream benchmark: time to first audio and whole-script time of a script streamed as fast as it renders."""

from __future__ import annotations

from typing import Any

import numpy as np

from omnistudio.checks import DEFAULT_NUM_STEP
from omnistudio.engine.engine import Engine
from omnistudio.errors import UserError
from omnistudio.script import parse_script
from omnistudio.take.stream import open_stream

BENCH_SENTENCES = [
    "Good evening, and welcome to the late news.",
    "The city council voted on the new budget this afternoon.",
    "Rain is expected across the north by Thursday morning.",
    "Officials said the bridge will reopen next week.",
    "Markets closed slightly higher after a quiet session.",
    "The home team won three to one in extra time.",
    "Researchers announced a new treatment for a rare disease.",
    "Traffic on the ring road is moving slowly tonight.",
]


def bench_voice(engine: Engine, seconds: float = 3.0) -> Any:
    """A voiced synthetic reference (harmonics with a syllable envelope) encoded as a prompt."""
    sr = engine.sample_rate
    t = np.arange(int(seconds * sr)) / sr
    phase = 2 * np.pi * np.cumsum(140 + 20 * np.sin(2 * np.pi * 0.7 * t)) / sr
    voiced = sum(np.sin(k * phase) / k for k in range(1, 8))
    wave = (0.15 * voiced * 0.5 * (1 + np.sin(2 * np.pi * 4 * t)) ** 2).astype(np.float32)
    return engine.prompt_from_audio(wave, sr, "This is the reference voice for our test.")


def stream_benchmark(engine: Engine, n_sentences: int = 40, voice: Any = None,
                     num_step: int = DEFAULT_NUM_STEP, seed: int = 0) -> dict[str, Any]:
    """Stream an ``n_sentences`` script as fast as it renders: TTFA, whole-script time, their ratio."""
    if n_sentences < 1:
        raise UserError("the stream benchmark needs at least one sentence")
    prompt = voice if voice is not None else bench_voice(engine)
    text = "\n".join(BENCH_SENTENCES[i % len(BENCH_SENTENCES)] for i in range(n_sentences))
    script = parse_script(text, "en")
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
