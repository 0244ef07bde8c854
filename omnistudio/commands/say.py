"""`omnistudio say`: speak one text in a voice and write a WAV/FLAC file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from omnistudio.audio.bwf import Broadcast, Marker, label
from omnistudio.checks import check_guidance
from omnistudio.commands.flags.frontend import add_frontend_options, frontend_options
from omnistudio.commands.flags.playback import add_playback_options
from omnistudio.commands.flags.voice import check_voice_args, voice_from_args
from omnistudio.commands.stdin_text import check_stdin, is_stdin
from omnistudio.errors import UserError
from omnistudio.flags.engine import add_model_options, add_server_options
from omnistudio.flags.synthesis import add_synthesis_options
from omnistudio.voices.roster import recording_inputs


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("say", help="speak TEXT in a voice and write an audio file")
    p.add_argument("text", help="what to say; - reads standard input as it arrives (a language model's output, "
                   "a desk's lines): each sentence is spoken once text follows it")
    p.add_argument("--ref-audio", type=Path, help="reference recording (3-10 s works best)")
    p.add_argument("--ref-text", help="exact transcript of the reference recording")
    p.add_argument("--voice", help="anchor id from the roster (uses its saved prompt)")
    p.add_argument("--blend", metavar="ANCHOR", help="morph --voice with this second anchor")
    p.add_argument("--alpha", default=0.5, help="blend ratio in [0, 1]: 1 is --voice alone, 0 is --blend "
                   "stretched to --voice's reference length (default 0.5)")
    p.add_argument("--lang", default="en", help="language: en or es (default en)")
    add_synthesis_options(p, "random seed (same seed, same audio)")
    p.add_argument("-o", "--output", type=Path, help="output .wav, .flac, .mp3 or .m4a (with -: finished like a "
                   "render's, with its sidecar, when the input ends)")
    p.add_argument("--play", action="store_true", help="with -: play each sentence as it is rendered")
    add_playback_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object with timings and path")
    add_model_options(p)
    add_server_options(p)
    add_frontend_options(p)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up (numpy, rich); looked up when called (tests replace it)
    from omnistudio.audio.export import check_not_input, check_output_path, check_stream_output
    from omnistudio.audio.writer import write_audio
    from omnistudio.checks import check_language, check_num_step, check_seed, check_text
    from omnistudio.console import status

    if is_stdin(args.text):
        return _say_stdin(args)
    if args.play:
        raise UserError("--play plays text read from standard input (say - --play); say TEXT writes -o OUT.wav")
    if args.output is None:
        raise UserError("say TEXT needs -o OUT.wav (or read standard input: say - --play)")
    # Every cheap check first: nothing is loaded or written for bad input.
    text = check_text(args.text)
    lang = check_language(args.lang)
    num_step = check_num_step(args.num_step)
    seed = check_seed(args.seed)

    args.guidance = check_guidance(args.guidance)
    check_output_path(args.output)
    check_stream_output(args.output, prints_json=args.json)

    check_not_input(args.output, {"the reference recording": args.ref_audio, **recording_inputs()}, sidecar=False)
    voice_kind = check_voice_args(args)
    ref = voice_from_args(args)  # a blend is checked here (two anchors, alpha in [0, 1])
    if voice_kind is None or ref is None:
        raise UserError("give a voice: --voice ANCHOR or --ref-audio FILE --ref-text TEXT")

    # lazy: start-up (numpy, pyebur128, scipy); looked up when called (tests replace it)
    from omnistudio.flags.engine import check_link_args, open_link
    from omnistudio.take.link import RenderItem
    from omnistudio.take.options import TakeOptions, sentence_seed, spoken_text

    if check_link_args(args) is not None:
        # lazy: start-up (httpx, numpy, pydantic, pyebur128, scipy, urllib, websockets)
        from omnistudio.client.engine import voice_to_wire

        voice_to_wire(ref)  # a recording lives here, not on the server: one line, before connecting
    options = TakeOptions(num_step=num_step, guidance_scale=args.guidance, seed=seed, lang=lang,
                          **frontend_options(args)).validated()
    spoken = spoken_text(text, lang, options)  # what the model says: the same front-end as every take
    # Through the link, as every client renders: the same samples here and from a server (--server).
    with status("loading model") as update:
        link = open_link(args, progress=update)
        link.prepare([(ref, lang)], lambda event: update(event.describe()))
        update("synthesising")
        # the one seed policy: the same sentence, voice and seed as in a script, the studio or a server
        item = RenderItem(0, spoken, ref, lang, sentence_seed(seed, spoken, ref.key(), lang))
        result = link.render([item], options)[0]
        if not result.ok:
            raise UserError(result.error or "the sentence did not render")

        first = label(text)
        user = (("voice", ref.key()), ("lang", lang), ("seed", str(item.seed)), ("num_step", str(num_step)),
                ("model", link.info.model), ("device", link.info.device), ("dtype", link.info.dtype))
        write_audio(args.output, result.pcm, link.sample_rate,
                    Broadcast(description=f"{first}: read by {ref.key()}", title=first, artist=ref.key(), project=first,
                              scene=first, reference=f"seed {item.seed}", user=user, markers=(Marker(0.0, first),)))
    if args.json:
        info = link.info
        local = getattr(link, "engine", None)  # in process: the model's own description (dtype and why)
        described = local.loaded.describe() if local is not None else {
            "model": info.model, "device": info.device, "dtype": info.dtype}
        payload = {"output": str(args.output), "sample_rate": link.sample_rate, **described,
                   "sampler": info.sampler, "num_step": num_step, "seed": seed,
                   **(result.timings.as_dict() if result.timings is not None else {})}
        print(json.dumps(payload))
    return 0


def _say_stdin(args: argparse.Namespace) -> int:
    """``say -``: standard input through a take as it arrives, played (--play) and/or finished into -o, as
    ``render -`` does (its voice from --voice/--blend/--ref-audio; no speaker tags needed)."""
    # lazy: start-up (numpy, pyebur128, rich, scipy)
    from omnistudio.commands.render import render_stdin
    from omnistudio.take.options import TakeOptions

    check_stdin()
    if args.output is None and not args.play:
        raise UserError("nothing to do: give -o OUT.wav, --play, or both")
    ref = voice_from_args(args) if check_voice_args(args) is not None else None
    if ref is None:
        raise UserError("give a voice: --voice ANCHOR or --ref-audio FILE --ref-text TEXT")
    options = TakeOptions(num_step=args.num_step, guidance_scale=check_guidance(args.guidance), seed=args.seed,
                          lang=args.lang, voice=ref, **frontend_options(args)).validated()
    return render_stdin(args, options)

