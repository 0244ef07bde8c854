"""`omnistudio render`: speak a whole script through the streaming path, to a file and/or the speakers."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from omnistudio.audio.finishing import add_finishing_options, live_stitcher, pauses
from omnistudio.errors import UserError


def add_parser(sub: argparse._SubParsersAction) -> None:
    from omnistudio.cli import add_model_options, add_synthesis_options

    p = sub.add_parser("render", help="speak a script (speaker tags, en/es) to a file and/or the speakers")
    p.add_argument("script", type=Path, help="UTF-8 script: one paragraph per line, optional [anchor] or "
                   "[anchor:lang] tags at line starts")
    p.add_argument("-o", "--output", type=Path, help="output .wav or .flac (written only if every sentence renders)")
    p.add_argument("--voice", help="anchor id for lines without a speaker tag")
    p.add_argument("--ref-audio", type=Path, help="reference recording for lines without a speaker tag")
    p.add_argument("--ref-text", help="exact transcript of --ref-audio")
    p.add_argument("--lang", default="en", help="language of untagged lines: en or es (default en)")
    p.add_argument("--play", action="store_true", help="play while rendering")
    p.add_argument("--json", action="store_true", help="print one JSON object: TTFA, per-sentence timings, underruns")
    add_synthesis_options(p, "random seed (sentence i uses seed + i)")
    p.add_argument("--batch", type=int, default=1, help="render consecutive lines N at a time in one "
                   "diffusion pass (dialogue; fast sampler; default 1)")
    p.add_argument("--audio-device", help="output device name or index for --play (default: system default)")
    p.add_argument("--blocksize", type=int, default=0, help="audio callback block in frames (0: device's choice)")
    p.add_argument("--latency", default="0.2", help="output latency: low, high or seconds (default 0.2: "
                   "PortAudio's 'high' is 35 ms on PulseAudio, too short for a busy engine thread)")
    add_model_options(p)
    add_finishing_options(p)


# --------------------------------------------------------------------- checks
def _latency(value: str) -> float | str:
    if value in {"low", "high"}:
        return value
    try:
        return float(value)
    except ValueError:
        raise UserError(f"latency '{value}' must be low, high or a number of seconds") from None


def _audio_device(value: str | None) -> int | str | None:
    if value is None:
        return None
    return int(value) if value.strip().isdigit() else value


def _known_speakers() -> set[str]:
    from omnistudio.voices.roster import load_roster

    return set(load_roster().anchors)


def _check_voice_options(args: argparse.Namespace, script: Any) -> None:
    from omnistudio.voices.session import check_voice_args

    if check_voice_args(args) is None:
        untagged = next((s for s in script.sentences if s.speaker is None), None)
        if untagged is not None:
            raise UserError(f"line {untagged.line} has no speaker tag: give --voice ANCHOR or "
                            "--ref-audio FILE --ref-text TEXT")


def _resolve_voices(engine: Any, args: argparse.Namespace, script: Any, update: Any) -> dict[Any, Any]:
    """Every voice the script needs, made before the first sentence renders (errors come first)."""
    from omnistudio.engine.reference import Reference

    voices: dict[Any, Any] = {}
    for speaker, lang in script.voices:
        anchor = speaker or args.voice
        if anchor is None:
            voices[(speaker, lang)] = Reference(args.ref_audio, args.ref_text)
            continue
        from omnistudio.voices.blend import anchor_blend
        from omnistudio.voices.prompts import anchor_prompt
        from omnistudio.script import blend_parts

        update(f"preparing voice {anchor} ({lang})")
        parts = blend_parts(anchor)
        voices[(speaker, lang)] = (anchor_blend(engine, parts[0], parts[1], lang, parts[2], progress=update)
                                   if parts else anchor_prompt(engine, anchor, lang, progress=update))
    return voices


def _open_player(args: argparse.Namespace, sample_rate: int) -> Any:
    """The player for --play, or None (with one warning) when there is no device but -o still works."""
    from omnistudio.audio.player import Player
    from omnistudio.console import err_console

    player = Player(sample_rate, device=_audio_device(args.audio_device), blocksize=args.blocksize,
                    latency=_latency(args.latency))
    try:
        return player.open()
    except UserError as exc:
        if args.output is None:
            raise
        err_console.print(f"omnistudio: warning: {exc}; writing {args.output} only", markup=False,
                          highlight=False, soft_wrap=True)
        return None


# ------------------------------------------------------------------------ run
def run(args: argparse.Namespace) -> int:
    from omnistudio.audio.export import check_output_path
    from omnistudio.audio.finishing import finish_render, finishing_options
    from omnistudio.config import SAMPLE_RATE
    from omnistudio.checks import check_language, check_num_step, check_seed
    from omnistudio.script import parse_script, read_script

    # Every cheap check first: nothing is loaded, played or written for bad input.
    if args.output is None and not args.play:
        raise UserError("nothing to do: give -o OUT.wav, --play, or both")
    if args.output is not None:
        check_output_path(args.output)
    options = finishing_options(args)
    if not 1 <= args.batch <= 16:
        raise UserError(f"--batch {args.batch} is out of range 1..16")
    lang = check_language(args.lang)
    num_step = check_num_step(args.num_step)
    seed = check_seed(args.seed)
    text = read_script(args.script)
    tagged = any(line.lstrip().startswith("[") for line in text.splitlines())
    script = parse_script(text, lang, speakers=_known_speakers() if tagged else None)
    _check_voice_options(args, script)

    player = _open_player(args, SAMPLE_RATE) if args.play else None
    if player is not None:
        sys.setswitchinterval(0.001)  # the audio callback needs the GIL promptly
    try:
        result = _render(args, script, num_step, seed, player, options)
    finally:
        if player is not None:
            player.close()
    if args.output is not None:
        timings = {k: result[k] for k in ("ttfa_s", "total_s", "rtf", "audio_s")}
        timings["sentences"] = result["sentences"]
        finished = finish_render(result["chunks"], result["sample_rate"], args.output, options, timings=timings)
        result["loudness"] = finished.sidecar.get("loudness")
        result["sidecar"] = str(finished.sidecar_path)
        result["shm"] = str(finished.shm_path) if finished.shm_path else None
    if args.json:
        payload = {key: value for key, value in result.items() if key not in {"pcm", "chunks"}}
        print(json.dumps({"output": str(args.output) if args.output else None, **payload}))
    return 0


def _render(args: argparse.Namespace, script: Any, num_step: int, seed: int, player: Any,
            options: Any) -> dict[str, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from omnistudio.console import err_console, status
    from omnistudio.take.stream import open_stream
    from omnistudio.voices.session import open_engine

    with status("loading model") as update:
        engine = open_engine(args, progress=update)
        voices = _resolve_voices(engine, args, script, update)
    stitcher = live_stitcher(engine.sample_rate, options)
    gaps = pauses([s.line for s in script.sentences])
    chunks: list[tuple[np.ndarray, float, int]] = []
    pieces: list[np.ndarray] = []
    sentences: list[dict[str, Any]] = []
    failures: list[str] = []
    columns = (TextColumn("rendering"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.description}"))
    stream = open_stream(engine, script, resolve=lambda s: voices[(s.speaker, s.lang)], num_step=num_step, seed=seed,
                           guidance_scale=args.guidance, batch=args.batch)
    with stream, Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("", total=len(script))
        for chunk in stream:
            sentences.append(chunk.as_dict())
            bar.update(task, advance=1, description=f"sentence {chunk.sentence_id + 1}")
            if not chunk.ok:
                failures.append(chunk.error or "")
                err_console.print(f"omnistudio: {chunk.error}", markup=False, highlight=False, soft_wrap=True)
                continue
            if failures:
                continue  # nothing will be written or played after a failure; keep reporting
            chunks.append((chunk.pcm, gaps[chunk.sentence_id], chunk.sentence_id))
            piece = stitcher.push(chunk.pcm, gaps[chunk.sentence_id], sentence_id=chunk.sentence_id)
            pieces.append(piece)
            if player is not None:
                player.write(piece)
        stream.join()
    if failures:
        raise UserError(f"{len(failures)} of {len(script)} sentences failed; nothing written")
    pieces.append(stitcher.finish())
    if player is not None:
        player.write(pieces[-1])
        player.drain()
    pcm = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
    audio_s = len(pcm) / engine.sample_rate
    total = stream.finished_s or 0.0
    stats = player.stats if player is not None else None
    return {"pcm": pcm, "chunks": chunks, "sample_rate": engine.sample_rate, "model": engine.loaded.spec.name,
            "device": engine.loaded.device, "num_step": num_step, "seed": seed,
            "ttfa_s": round(stream.ttfa_s or 0.0, 4), "total_s": round(total, 4), "audio_s": round(audio_s, 3),
            "rtf": round(total / audio_s, 4) if audio_s else None, "played": player is not None,
            "underruns": stats.underruns if stats else None, "xruns": stats.xruns if stats else None,
            "sentences": sentences}
