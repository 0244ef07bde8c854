"""`omnistudio voices`: list the anchor roster with prompt states, or add an anchor from a recording."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio.commands.flags.parser import OneLineParser
from omnistudio.errors import UserError
from omnistudio.flags.engine import add_model_options
from omnistudio.voices.manage import add_voice as add
from omnistudio.voices.roster import LANGS, load_roster

if TYPE_CHECKING:
    from omnistudio.voices.roster import Anchor


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("voices", help="list the anchors and their prompts, or add an anchor")
    actions = p.add_subparsers(dest="voices_command", metavar="ACTION", parser_class=OneLineParser)
    ls = actions.add_parser("list", help="anchors, languages and prompt state (missing / ready / stale)")
    ls.add_argument("--json", action="store_true", help="print one JSON document")
    add_model_options(ls)
    add = actions.add_parser("add", help="add an anchor (or a language of one you added) from a recording")
    add.add_argument("name", help="display name; the anchor id is made from it ('Ana Paz' -> ana_paz)")
    add.add_argument("--ref-audio", type=Path, required=True, help="reference recording (3-10 s works best)")
    add.add_argument("--ref-text", help="its exact transcript (or give --asr-model to transcribe it)")
    add.add_argument("--lang", required=True, help="language of the recording: es or en")
    add.add_argument("--asr-model", type=Path, metavar="DIR", help="faster-whisper model directory")
    for attr, default in (("gender", None), ("age", "middle-aged"), ("pitch", "moderate pitch"),
                          ("style", None), ("accent", None)):
        add.add_argument(f"--{attr}", help=f"voice-design {attr} for the other language"
                         + (f" (default: {default})" if default else ""))
    add.add_argument("--seed", type=int, help="voice-design seed (default: derived from the id)")
    add.add_argument("--consent", metavar="TEXT", help="the speaker's consent statement, stored with the recording")
    add.add_argument("--replace", action="store_true",
                     help="replace an anchor you added before (its recording in this language, its attributes)")


def run(args: argparse.Namespace) -> int:
    if args.voices_command == "list":
        return list_voices(args)
    if args.voices_command == "add":
        return add_voice(args)
    raise UserError("give an action: omnistudio voices list | voices add NAME --ref-audio F --lang L")


def list_voices(args: argparse.Namespace) -> int:
    # lazy: start-up (numpy, rich)
    from rich.console import Console
    from rich.table import Table

    # lazy: start-up (numpy, rich)
    from omnistudio.console import status
    from omnistudio.voices.prompts import offline_fingerprint, prompt_path, prompt_state

    roster = load_roster()
    with status("checking the model") as update:
        update("fingerprinting the model")
        fingerprint = offline_fingerprint(getattr(args, "model", None))
    anchors: list[dict[str, object]] = []
    listed: list[tuple[Anchor, dict[str, dict[str, str]]]] = []  # each anchor with its prompts by language
    counts: dict[str, int] = {}
    for anchor in roster.anchors.values():
        entry = anchor.as_dict()
        prompts: dict[str, dict[str, str]] = {}
        entry["prompts"] = prompts
        for lang in LANGS:
            state, why = prompt_state(roster, anchor.id, lang, fingerprint)
            counts[state] = counts.get(state, 0) + 1
            prompts[lang] = {"state": state, "why": why, "path": str(prompt_path(anchor.id, lang))}
        anchors.append(entry)
        listed.append((anchor, prompts))
    if args.json:
        duos = [{"anchors": list(d.anchors), "langs": list(d.langs), "ratio": d.ratio} for d in roster.duos]
        print(json.dumps({"roster": [str(p) for p in roster.sources], "model_fingerprint": fingerprint,
                          "counts": counts, "anchors": anchors, "duos": duos}, ensure_ascii=False))
        return 0
    table = Table(title=f"{len(anchors)} anchors")
    for col in ("id", "name", "voice design", *LANGS):
        table.add_column(col)
    for anchor, prompts in listed:
        design = ", ".join(v for v in (anchor.gender, anchor.age, anchor.pitch, anchor.style, anchor.accent) if v)
        cells = []
        for lang in LANGS:
            voice = anchor.voice(lang)  # as its entry's "voices" says it (the fields that are set)
            how = (f"= {voice.matched}" if voice.matched is not None
                   else ("rec" if voice.recording is not None else "design"))
            cells.append(f"{prompts[lang]['state']} ({how})")
        table.add_row(anchor.id, anchor.name, design, *cells)
    console = Console()
    console.print(table)
    console.print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())), markup=False, highlight=False)
    return 0


def add_voice(args: argparse.Namespace) -> int:
    """``voices add``: :func:`omnistudio.voices.manage.add_voice` (the server's and MCP's too) with the flags."""
    # lazy: start-up (numpy)
    from omnistudio.voices.asr import ASR_ENV, open_transcriber

    if args.ref_text is None and not (args.asr_model or os.environ.get(ASR_ENV)):
        raise UserError("give the recording's exact transcript with --ref-text, or --asr-model DIR")
    added = add(args.name, args.lang, args.ref_audio, transcript=args.ref_text,
                transcriber=open_transcriber(args.asr_model), gender=args.gender, age=args.age, pitch=args.pitch,
                style=args.style, accent=args.accent, seed=args.seed, consent=args.consent, replace=args.replace,
                require_consent=False)
    if added.asr_text is not None and args.ref_text is not None:
        agreement = "" if added.agreement is None else f"; agreement with --ref-text {added.agreement:.0%}"
        print(f"ASR: {added.asr_text!r} ({added.note}{agreement})")
    elif added.transcript_source == "asr":
        print(f"ASR transcript: {added.transcript}")
    print(f"added anchor '{added.id}' ({added.lang}) to {added.roster}; its prompt is built on first use "
          f"or with `omnistudio prevectorize --anchors {added.id}`")
    return 0
