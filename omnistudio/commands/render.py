"""`omnistudio render`: speak a whole script through the take pipeline, to a file and/or the speakers (flags + sinks)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio.commands import render_takes
from omnistudio.commands.flags.frontend import add_frontend_options
from omnistudio.commands.flags.playback import add_playback_options
from omnistudio.commands.flags.ray import add_batch_options
from omnistudio.commands.flags.retakes import add_take_options, check_project_args, wanted
from omnistudio.commands.flags.take import check_voice_options, plan_script, take_options
from omnistudio.commands.stdin_text import check_stdin, feed_stdin, is_stdin
from omnistudio.commands.render_ray import run_batch
from omnistudio.config import SAMPLE_RATE
from omnistudio.errors import UserError
from omnistudio.flags.engine import add_model_options, add_server_options, check_link_args
from omnistudio.flags.synthesis import add_synthesis_options
from omnistudio.script import read_script
from omnistudio.text.language import mismatch_summary, mismatches
from omnistudio.voices.roster import recording_inputs

if TYPE_CHECKING:
    from omnistudio.audio.finishing import FinishingOptions
    from omnistudio.audio.player import Player
    from omnistudio.captions.formats import CaptionOptions
    from omnistudio.script import Script
    from omnistudio.take.link import PrepareEvent
    from omnistudio.take.options import TakeOptions
    from omnistudio.take.sinks import Sink
    from omnistudio.take.stream import Chunk


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.commands.flags.captions import add_caption_options
    from omnistudio.commands.flags.finishing import add_finishing_options

    p = sub.add_parser("render", help="speak a script (speaker tags, en/es) to a file and/or the speakers")
    p.add_argument("scripts", type=Path, nargs="+", metavar="SCRIPT", help="UTF-8 script: one paragraph per "
                   "line, optional [anchor] or [anchor:lang] tags at line starts (several with --ray); - reads "
                   "standard input as it arrives, each sentence spoken once text follows it")
    p.add_argument("-o", "--output", type=Path, help="output .wav (Broadcast Wave), .flac, .mp3 or .m4a (written "
                   "only if every sentence renders)")
    p.add_argument("--report", action="store_true", help="also write NAME.report.html beside the output: the "
                   "loudness rule's verdict (--profile), figures, loudness plot, a row per story and sentence")
    p.add_argument("--voice", help="anchor id for lines without a speaker tag")
    p.add_argument("--ref-audio", type=Path, help="reference recording for lines without a speaker tag")
    p.add_argument("--ref-text", help="exact transcript of --ref-audio")
    p.add_argument("--lang", default="en", help="language of untagged lines: en or es (default en)")
    p.add_argument("--play", action="store_true", help="play while rendering")
    p.add_argument("--json", action="store_true", help="print one JSON object: TTFA, per-sentence timings, underruns")
    p.add_argument("--strict", action="store_true", help="exit with status 3 when the file misses its loudness "
                   "target (the warning becomes an error; the file and its sidecar, which flags it, stay)")
    add_synthesis_options(p, "base seed (each sentence's seed is a hash of it, the text, voice and language)")
    p.add_argument("--batch", type=int, default=1, help="render consecutive lines N at a time in one "
                   "diffusion pass (dialogue; fast sampler; default 1)")
    p.add_argument("--skip-failed", action="store_true", help="leave out a sentence that fails to render "
                   "(one line each, listed in the sidecar) instead of stopping at it with nothing written")
    add_playback_options(p)
    add_model_options(p)
    add_server_options(p)
    add_finishing_options(p)
    add_caption_options(p)
    add_frontend_options(p)
    add_take_options(p)
    add_batch_options(p)


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


def _open_player(args: argparse.Namespace, sample_rate: int) -> Player | None:
    """The player for --play, or None (with one warning) when there is no device but -o still works."""
    # lazy: start-up (numpy, rich)
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
    # lazy: start-up (numpy)
    from omnistudio.audio.export import check_not_input, check_output_path, check_stream_output

    # lazy: start-up (numpy)
    from omnistudio.commands.flags.captions import caption_options

    check_project_args(args)  # no output inside a project folder, no --project FILE
    captions = caption_options(args)
    if args.ray or args.out_dir is not None:
        if args.report:
            raise UserError("--report writes one script's report: render -o OUT.wav --report, or run "
                            "omnistudio analyze FILE --report OUT.html on each file of the batch")
        return run_batch(args, captions)
    if len(args.scripts) > 1:
        raise UserError("several scripts render with --out-dir DIR --ray")
    args.script = args.scripts[0]
    # Every cheap check first: nothing is loaded, played or written for bad input.
    if args.output is None and not args.play and args.project is None:
        raise UserError("nothing to do: give -o OUT.wav, --play, or both")
    if args.output is not None:
        check_output_path(args.output)
        check_stream_output(args.output, prints_json=args.json,
                            beside="--captions" if captions is not None else ("--report" if args.report else ""))
        inputs = {"the script": args.script, "the reference recording": args.ref_audio, **recording_inputs()}
        check_not_input(args.output, inputs)
        if captions is not None:
            # lazy: start-up (numpy, pyebur128, scipy)
            from omnistudio.take.captions import caption_paths, check_caption_paths

            check_caption_paths(caption_paths(args.output, captions.formats), inputs)
        if args.report:
            # lazy: start-up (numpy, pyebur128)
            from omnistudio.take.qc import report_path

            check_not_input(report_path(args.output), inputs, sidecar=False)
    elif captions is not None:
        raise UserError("--captions writes beside the audio: give -o OUT.wav")
    elif args.report:
        raise UserError("--report writes beside the audio: give -o OUT.wav")
    if is_stdin(args.script):
        if wanted(args):
            raise UserError("--project, --verify and --retake read a script file: give its path, not -")
        check_stdin()
        return render_stdin(args, replace(take_options(args), voice=check_voice_options(args)), captions)
    text = read_script(args.script)
    script, options = plan_script(args, text, take_options(args))  # every check first
    _warn_languages(script)

    check_link_args(args)  # --server with --model, a key file without a server
    if wanted(args):
        code = render_takes.run(args, text, script, options)
        if code == 0 and args.report:
            _report(args, options.finishing)
        return code

    return _finish(args, _played(args, script, options, captions), options.finishing)


def render_stdin(args: argparse.Namespace, options: TakeOptions, captions: CaptionOptions | None = None) -> int:
    """Standard input rendered as it arrives (``render -``, ``say -``), played and/or written."""
    check_link_args(args)
    return _finish(args, _played(args, None, options, captions), options.finishing)


def _played(args: argparse.Namespace, script: Script | None, options: TakeOptions,
            captions: CaptionOptions | None) -> dict[str, object]:
    """Render (and play, with --play) ``script``, or standard input as it arrives when it is None."""
    player = _open_player(args, SAMPLE_RATE) if args.play else None
    if player is not None:
        sys.setswitchinterval(0.001)  # the audio callback needs the GIL promptly
    try:
        return _render(args, script, options, player, captions)
    finally:
        if player is not None:
            player.close()


def _finish(args: argparse.Namespace, result: dict[str, object], finishing: FinishingOptions) -> int:
    """The report, the JSON line and the exit status of a written take."""
    refused = result.pop("refused", None)
    if getattr(args, "report", False):
        result["report"] = _report(args, finishing, quiet=args.json)
    if args.json:
        print(json.dumps({"output": str(args.output) if args.output else None, **result}))
    missed = result.get("target_missed")
    if isinstance(missed, dict):
        # lazy: start-up (rich)
        from omnistudio.console import err_console

        strict = getattr(args, "strict", False)  # say - has no --strict
        err_console.print(f"omnistudio: {'error' if strict else 'warning'}: {args.output}: {missed['message']}",
                          markup=False, highlight=False, soft_wrap=True)
        return 3 if strict else 0
    if refused:
        raise UserError(str(refused))  # after the file of what was complete is written
    return 0


def _warn_languages(script: Script) -> None:
    """One warning line when a paragraph reads as the other language than the one it is read in."""
    # lazy: start-up (rich)
    from omnistudio.console import err_console

    found = mismatches(script.sentences)
    if found:
        err_console.print(f"omnistudio: warning: {mismatch_summary(found)}", markup=False, highlight=False, soft_wrap=True)


def _render(args: argparse.Namespace, script: Script | None, options: TakeOptions, player: Player | None,
            captions: CaptionOptions | None = None) -> dict[str, object]:
    """Build the take (the same function the studio and the server use) with this command's sinks; no
    ``script``: standard input, read as it arrives (:mod:`omnistudio.commands.stdin_text`)."""
    # lazy: start-up (numpy, pyebur128, rich, scipy); looked up when called (tests replace it)
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from omnistudio.commands.flags.captions import caption_hearer
    from omnistudio.console import progress_bar, status

    # lazy: start-up (numpy, pyebur128, rich, scipy); looked up when called (tests replace it)
    from omnistudio.flags.engine import open_link
    from omnistudio.take.incoming import IncomingScript, IncomingTake
    from omnistudio.take.pipeline import base_seed_for, build_take
    from omnistudio.take.sinks import FileSink, PlayerSink

    hearer = caption_hearer(args, captions)  # the speech model for the caption words (a bad --asr-model: first)
    incoming = IncomingScript(options, base_seed_for(options)) if script is None else None
    if incoming is not None:
        feed_stdin(incoming)  # the text gathers while the model loads
    with status("loading model") as update:
        link = open_link(args, progress=update)  # the model here, or the server's (--server)
    take = IncomingTake(link, incoming) if incoming is not None else build_take(link, script or (), options)
    sinks: list[Sink] = []
    # lazy: start-up (numpy, scipy)
    from omnistudio.take.delivery import Slate

    script_path = getattr(args, "script", "-")  # say - has none
    named = Slate(title=Path(script_path).stem if str(script_path) != "-" else "")
    files = FileSink(args.output, captions=captions, hearer=hearer, slate=named) if args.output is not None else None
    if player is not None:
        sinks.append(PlayerSink(player, drain=True))
    if files is not None:
        sinks.append(files)
    columns = (TextColumn("{task.fields[phase]}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.description}"))
    with progress_bar(*columns, transient=True) as bar:
        voices = take.voices()
        prep = bar.add_task("", total=len(voices), phase="preparing voices")
        task = bar.add_task("", total=len(take.sentences) if incoming is None else None, phase="rendering",
                            visible=False)

        def on_prepare(event: PrepareEvent) -> None:
            bar.update(prep, completed=event.done - (event.action != "done"),
                       description=f"{event.voice} ({event.lang})")

        def on_chunk(chunk: Chunk) -> None:
            bar.update(prep, visible=False)
            bar.update(task, visible=True, advance=1, description=f"sentence {chunk.sentence_id + 1}")
            # a failed chunk stops the take (its UserError is the one line that names it) unless skipped
            if not chunk.ok and getattr(args, "skip_failed", False):
                bar.console.print(f"omnistudio: skipped sentence {chunk.sentence_id + 1} "
                                  f"(line {chunk.sentence.line}): {chunk.error}", markup=False, highlight=False)

        result = take.run(sinks, progress=on_prepare, on_chunk=on_chunk, skip_failed=getattr(args, "skip_failed", False))
    stats = player.stats if player is not None else None
    # what the samples depend on: the engine (model, device, dtype, sampler, threads, quantisation), the options
    out = {"sample_rate": result.sample_rate, **(result.engine or {}), **result.options, **result.timings(),
           "played": player is not None, "underruns": stats.underruns if stats else None,
           "xruns": stats.xruns if stats else None, "refused": incoming.refused if incoming is not None else None}
    if files is not None and files.finished is not None:
        finished = files.finished
        out.update(loudness=finished.sidecar.get("loudness"), sidecar=str(finished.sidecar_path),
                   shm=str(finished.shm_path) if finished.shm_path else None,
                   captions=finished.sidecar.get("captions", {}).get("files"), target_missed=finished.target_missed)
    return out


def _report(args: argparse.Namespace, finishing: FinishingOptions, quiet: bool = False) -> dict[str, object]:
    """The compliance report of the written file, beside it (the rule: --profile with the targets used)."""
    # lazy: start-up (numpy, pyebur128, rich)
    from omnistudio.console import err_console
    from omnistudio.take.qc import check_file, report_path, write_report

    check = check_file(args.output, finishing.rule(), finishing.mono_as)
    path = write_report(check, report_path(args.output))
    verdict = check.compliance.verdict
    if not quiet:
        err_console.print(f"{verdict.rule.name}: {'PASS' if verdict.passed else 'FAIL'} "
                          f"({check.compliance.report.integrated_lufs:.1f} LUFS, "
                          f"{check.compliance.report.true_peak_dbtp:.1f} dBTP); report: {path}",
                          markup=False, highlight=False, soft_wrap=True)
    return {"path": str(path), **verdict.as_dict()}
