"""Memory bench: render a long script as `omnistudio render -o` does and report peak RSS and RSS
growth per sentence (not a timed test; run it on its own: ``python -m omnistudio.bench.memory``).

It writes a script of ``--kb`` KB of news sentences (64 KB is the script limit: about 1,150
sentences, 80 minutes of speech), renders it in this process through the take pipeline into the
file sink ``render -o`` uses (the same ``build_take`` and ``FileSink``), and samples ``VmRSS`` from
/proc as each sentence is handed over (the take's ``on_chunk``); the file's finishing runs after the
last sentence, so the marks at the last sentence are those before finishing. Nothing of the product
is patched: what is measured is what runs. It prints one JSON object:
``peak_rss_mb`` (VmHWM: the whole run, model included), ``rss_at_first_sentence_mb``,
``growth_per_sentence_kb`` (least-squares slope over the second half of the render, after warm-up
allocations settle), ``audio_per_sentence_kb`` (the float32 audio a sentence makes, which render now
keeps on disk) and ``finishing_peak_mb``, and its ``provenance`` (commit, machine, load).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio.bench.corpus import BULLETIN, REF_TEXT, write_reference
from omnistudio.bench.provenance import provenance
from omnistudio.engine.settings import EngineConfig
from omnistudio.flags.engine import add_model_options
from omnistudio.flags.synthesis import add_num_step
from omnistudio.script import MAX_SCRIPT_BYTES
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from omnistudio.take.stream import Chunk


def _status(field: str) -> int:
    """A /proc/self/status figure in KB (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status (Linux only)")


def long_script(kb: int) -> str:
    """About ``kb`` KB of lines of two news sentences each (under the script limit)."""

    limit = min(kb * 1024, MAX_SCRIPT_BYTES)
    lines: list[str] = []
    size, i = 0, 0
    while True:
        a, b = BULLETIN[i % len(BULLETIN)], BULLETIN[(i * 3 + 1) % len(BULLETIN)]
        line = f"{a} {b} Item {i}."
        if size + len(line.encode()) + 1 > limit:
            return "\n".join(lines) + "\n"
        lines.append(line)
        size += len(line.encode()) + 1
        i += 1


def run(kb: int = 64, num_step: int = 4, model: str = "tiny", keep: Path | None = None, device: str = "cpu",
        dtype: str | None = None) -> dict[str, object]:
    # lazy: start-up (numpy, pyebur128, scipy)
    import numpy as np

    from omnistudio.engine.reference import Reference  # noqa: F401 - imported before sampling starts

    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.link import LocalEngine
    from omnistudio.take.options import TakeOptions
    from omnistudio.take.pipeline import build_take
    from omnistudio.take.scripts import plan_script
    from omnistudio.take.sinks import FileSink
    from omnistudio.voices.session import open_engine

    samples: list[tuple[int, int]] = []  # (sentences rendered, VmRSS KB)
    audio: list[int] = []
    last_chunk = [0.0]

    def on_chunk(chunk: Chunk) -> None:
        audio.append(int(np.asarray(chunk.pcm).size) * 4)
        samples.append((len(samples) + 1, _status("VmRSS")))
        last_chunk[0] = time.perf_counter()

    link = LocalEngine(open_engine(EngineConfig(model, device, dtype, sampler="fast")))
    with tempfile.TemporaryDirectory() as tmp:
        folder = keep or Path(tmp)
        ref = folder / "ref.wav"
        write_reference(ref)
        asked = TakeOptions(num_step=num_step, seed=0, seed_locked=True, normalize=True).validated()
        script, options = plan_script(long_script(kb), asked, VoiceRef.recording_of(ref, REF_TEXT))
        sink = FileSink(folder / "long.wav")
        started = time.perf_counter()
        build_take(link, script, options).run([sink], on_chunk=on_chunk)
        finished = time.perf_counter()
        hwm_before_finish = samples[-1][1] if samples else 0
        out_bytes = (folder / "long.wav").stat().st_size
    if len(samples) < 4:
        raise SystemExit(f"the render made {len(samples)} sentences")
    half = samples[len(samples) // 2:]
    slope = float(np.polyfit([n for n, _ in half], [r for _, r in half], 1)[0])
    return {"script_kb": round(script_bytes(kb) / 1024, 1), "sentences": len(samples), "model": model,
            "num_step": num_step, "audio_min": round(sum(audio) / 4 / 24_000 / 60, 1),
            "output_mb": round(out_bytes / 2**20, 1), "wall_s": round(finished - started, 1),
            "peak_rss_mb": round(_status("VmHWM") / 1024, 1),
            "rss_at_first_sentence_mb": round(samples[0][1] / 1024, 1),
            "rss_at_last_sentence_mb": round(samples[-1][1] / 1024, 1),
            "growth_per_sentence_kb": round(slope, 2),
            "growth_whole_render_per_sentence_kb": round((samples[-1][1] - samples[0][1]) / len(samples), 2),
            "audio_per_sentence_kb": round(sum(audio) / len(audio) / 1024, 1),
            "rss_before_finishing_mb": round(hwm_before_finish / 1024, 1),
            "finishing_s": int(finished - last_chunk[0])}


def script_bytes(kb: int) -> int:
    return len(long_script(kb).encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnistudio.bench.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=64, help="script size in KB (default 64, the limit)")
    add_num_step(parser, default=4, convert=int)
    add_model_options(parser)
    parser.set_defaults(model="tiny", device="cpu")  # this bench's defaults: tiny, on the CPU
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = parser.parse_args(argv)
    if args.threads:
        # lazy: start-up (torch)
        import torch

        torch.set_num_threads(args.threads)

    result = run(args.kb, args.num_step, args.model, device=args.device, dtype=args.dtype)
    print(json.dumps({**result, "provenance": provenance()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
