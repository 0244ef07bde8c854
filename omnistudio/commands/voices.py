"""`omnistudio voices`: list the anchor roster with prompt states, or add an anchor from a recording."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from omnistudio.errors import UserError


def add_parser(sub: argparse._SubParsersAction) -> None:
    from omnistudio.commands.flags.engine import add_model_options
    from omnistudio.commands.flags.parser import OneLineParser

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
    add.add_argument("--replace", action="store_true",
                     help="replace an anchor you added before (its recording in this language, its attributes)")


def run(args: argparse.Namespace) -> int:
    if args.voices_command == "list":
        return list_voices(args)
    if args.voices_command == "add":
        return add_voice(args)
    raise UserError("give an action: omnistudio voices list | voices add NAME --ref-audio F --lang L")


def list_voices(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from omnistudio.console import status
    from omnistudio.voices.prompts import offline_fingerprint, prompt_path, prompt_state
    from omnistudio.voices.roster import LANGS, load_roster

    roster = load_roster()
    with status("checking the model") as update:
        update("fingerprinting the model")
        fingerprint = offline_fingerprint(getattr(args, "model", None))
    anchors: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for anchor in roster.anchors.values():
        entry = anchor.as_dict()
        entry["prompts"] = {}
        for lang in LANGS:
            state, why = prompt_state(roster, anchor.id, lang, fingerprint)
            counts[state] = counts.get(state, 0) + 1
            entry["prompts"][lang] = {"state": state, "why": why, "path": str(prompt_path(anchor.id, lang))}
        anchors.append(entry)
    if args.json:
        duos = [{"anchors": list(d.anchors), "langs": list(d.langs), "ratio": d.ratio} for d in roster.duos]
        print(json.dumps({"roster": [str(p) for p in roster.sources], "model_fingerprint": fingerprint,
                          "counts": counts, "anchors": anchors, "duos": duos}, ensure_ascii=False))
        return 0
    table = Table(title=f"{len(anchors)} anchors")
    for col in ("id", "name", "voice design", *LANGS):
        table.add_column(col)
    for entry in anchors:
        design = ", ".join(v for v in (entry["gender"], entry["age"], entry["pitch"], entry["style"],
                                       entry["accent"]) if v)
        cells = []
        for lang in LANGS:
            voice = entry["voices"][lang]
            how = f"= {voice['matched']}" if "matched" in voice else ("rec" if "recording" in voice else "design")
            cells.append(f"{entry['prompts'][lang]['state']} ({how})")
        table.add_row(entry["id"], entry["name"], design, *cells)
    console = Console()
    console.print(table)
    console.print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())), markup=False, highlight=False)
    return 0


def add_voice(args: argparse.Namespace) -> int:
    from omnistudio.audio.export import atomic_write_bytes
    from omnistudio.voices.asr import calibrate, open_transcriber
    from omnistudio.checks import check_language, check_seed
    from omnistudio.engine.reference import check_transcript, read_reference
    from omnistudio.voices.roster import load_roster, slug, update_user_roster, user_roster_path

    lang = check_language(args.lang)
    anchor_id = slug(args.name)
    user_file = user_roster_path()
    existing = load_roster().anchors.get(anchor_id)
    if existing is not None and existing.origin != user_file:
        raise UserError(f"anchor '{anchor_id}' is in the shipped roster ({existing.origin}); choose another name")
    wave, sr = read_reference(args.ref_audio)
    if args.ref_text is not None:
        transcript = check_transcript(args.ref_text)
        transcriber = open_transcriber(args.asr_model) if args.asr_model else None
        if transcriber is not None:
            cal = calibrate(transcriber, wave, sr, lang, transcript)
            transcript = cal.transcript
            agreement = "" if cal.agreement is None else f"; agreement with --ref-text {cal.agreement:.0%}"
            print(f"ASR: {cal.asr_text!r} ({cal.note}{agreement})")
    else:
        transcriber = open_transcriber(args.asr_model)
        if transcriber is None:
            raise UserError("give the recording's exact transcript with --ref-text, or --asr-model DIR")
        transcript = calibrate(transcriber, wave, sr, lang, None).transcript
        print(f"ASR transcript: {transcript}")

    suffix = args.ref_audio.suffix.lower() or ".wav"
    recording = Path("recordings") / f"{anchor_id}_{lang}{suffix}"
    attrs = {attr: getattr(args, attr) for attr in ("gender", "age", "pitch", "style", "accent")}

    def change(raws: list[dict[str, Any]]) -> None:
        """Under the roster lock: add the entry, or (with --replace) update it."""
        entry = next((r for r in raws if r.get("id") == anchor_id), None)
        if entry is not None and not args.replace:
            clash = [f"its {lang} recording"] if lang in entry else []
            clash += [attr for attr, value in attrs.items()
                      if value is not None and entry.get(attr) not in (None, value)]
            if clash:
                raise UserError(f"anchor '{anchor_id}' already exists in {user_file} and this would replace "
                                f"{', '.join(clash)}: give --replace to do that, or choose another name")
        if entry is None:
            if not args.gender:
                raise UserError("a new anchor needs --gender (male or female) for its voice in the other language")
            seed = int(hashlib.sha256(anchor_id.encode()).hexdigest()[:8], 16)
            entry = {"id": anchor_id, "name": " ".join(args.name.split()), **attrs, "seed": seed}
            raws.append(entry)
        entry.update({attr: value for attr, value in attrs.items() if value is not None})
        for attr in ("age", "pitch"):
            entry[attr] = entry.get(attr) or {"age": "middle-aged", "pitch": "moderate pitch"}[attr]
        if args.seed is not None:
            entry["seed"] = check_seed(args.seed)
        entry[lang] = {"recording": recording.as_posix(), "transcript": transcript}

    def copy_recording() -> None:
        """Under the lock, after the new roster checked as a whole, before it replaces the old one."""
        target = user_file.parent / recording
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, lambda t: shutil.copyfile(args.ref_audio, t), suffix=suffix)

    update_user_roster(change, before_commit=copy_recording)
    print(f"added anchor '{anchor_id}' ({lang}) to {user_file}; its prompt is built on first use "
          f"or with `omnistudio prevectorize --anchors {anchor_id}`")
    return 0

