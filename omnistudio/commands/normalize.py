"""`omnistudio normalize TEXT --lang es|en [--project P] [--explain] [--json]`: what the model is asked
to say for a text (the front-end, :func:`omnistudio.text.normalize`, with the global lexicon and the
project's over it)."""

from __future__ import annotations

import argparse
import json

from omnistudio.checks import check_language, check_text
from omnistudio.commands.flags.lexicon import add_project_option, effective
from omnistudio.text import normalize


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("normalize", help="print the spoken form of a text (numbers, money, dates, lexicon...)")
    p.add_argument("text", help="the text as written")
    p.add_argument("--lang", required=True, help="es or en")
    add_project_option(p, "with this project's lexicon over the global one")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--explain", action="store_true",
                     help="also one line per changed span: the rule or lexicon entry that changed it")
    how.add_argument("--json", action="store_true", help="one JSON document: written, spoken, spans, warnings")


def run(args: argparse.Namespace) -> int:
    text, lang = check_text(args.text), check_language(args.lang)
    spoken = normalize(text, lang, effective(args))
    if args.json:
        spans = [{"written": spoken.written[s.written_start:s.written_end],
                  "spoken": spoken.text[s.spoken_start:s.spoken_end],
                  "written_start": s.written_start, "written_end": s.written_end,
                  "spoken_start": s.spoken_start, "spoken_end": s.spoken_end,
                  "rule": s.rule, "detail": s.detail} for s in spoken.spans]
        warnings = [{"written": spoken.written[w.written_start:w.written_end], "written_start": w.written_start,
                     "written_end": w.written_end, "message": w.message} for w in spoken.warnings]
        print(json.dumps({"lang": lang, "written": spoken.written, "spoken": spoken.text, "spans": spans,
                          "warnings": warnings}, ensure_ascii=False))
        return 0
    if spoken.warnings:
        # lazy: start-up (rich)
        from omnistudio.console import err_console

        for w in spoken.warnings:
            err_console.print(f"omnistudio: warning: '{spoken.written[w.written_start:w.written_end]}': {w.message}",
                              markup=False, highlight=False, soft_wrap=True)
    print(spoken.text)
    if args.explain:
        for line in spoken.explain():
            print(f"  {line}")
    return 0
