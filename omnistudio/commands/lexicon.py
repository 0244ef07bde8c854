"""`omnistudio lexicon add|remove|list|test|import|export`: the pronunciation lexicon (the global one in
the user config folder, or a project's with --project); storage in :mod:`omnistudio.text.lexicon_files`,
W3C PLS in :mod:`omnistudio.text.pls`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from omnistudio.checks import check_language, check_text
from omnistudio.commands.flags.lexicon import add_project_option, effective, lexicon_file, project_folder
from omnistudio.commands.flags.parser import OneLineParser
from omnistudio.commit import destination
from omnistudio.errors import UserError
from omnistudio.text import normalize
from omnistudio.text.lexicon import Entry, Lexicon
from omnistudio.text.lexicon_files import edit_lexicon, global_lexicon_path, load_lexicon, project_lexicon_path
from omnistudio.text.pls import entries_for, read_pls, write_pls

WHERE = ("this project's lexicon (NAME.omniproj/lexicon.toml, created if missing) instead of the global one")
USAGE = "give an action: omnistudio lexicon add | remove | list | test | import | export"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("lexicon", help="the pronunciation lexicon: words said the same in every take")
    actions = p.add_subparsers(dest="lexicon_command", metavar="ACTION", parser_class=OneLineParser)
    add = actions.add_parser("add", help="add a word (or phrase) and how to say it; replaces the same entry")
    add.add_argument("word", help="the word as written (a phrase is several words)")
    add.add_argument("say", help="what is read instead: a respelling, or with --phones CMU phones "
                                 "in brackets ('[SH AY1 N B AW0 M]')")
    add.add_argument("--lang", help="es or en (default: both languages)")
    add.add_argument("--case-sensitive", action="store_true", help="match only this spelling (ONU, not onu)")
    add.add_argument("--phones", action="store_true", help="SAY is OmniVoice's CMU phone notation (--lang en only)")
    add_project_option(add, f"add to {WHERE}")
    remove = actions.add_parser("remove", help="remove a word's entries")
    remove.add_argument("word", help="the word as written (any case)")
    remove.add_argument("--lang", help="only its entry for es or en (default: every entry for the word)")
    add_project_option(remove, "remove from this project's lexicon instead of the global one")
    ls = actions.add_parser("list", help="the entries in use: the global lexicon's and the project's")
    add_project_option(ls, "also this project's entries (they win over the global ones)")
    ls.add_argument("--json", action="store_true", help="print one JSON document")
    test = actions.add_parser("test", help="what the front-end says for a text, and which entries applied")
    test.add_argument("text", help="the text as written")
    test.add_argument("--lang", required=True, help="es or en")
    add_project_option(test, "with this project's lexicon over the global one")
    imp = actions.add_parser("import", help="add the entries of a W3C PLS file (its xml:lang: es or en)")
    imp.add_argument("file", type=Path, metavar="FILE.pls", help="a Pronunciation Lexicon Specification 1.0 file")
    add_project_option(imp, f"import into {WHERE}")
    exp = actions.add_parser("export", help="write one language's entries as a W3C PLS file")
    exp.add_argument("file", type=Path, metavar="FILE.pls", help="the PLS file to write (replaced atomically)")
    exp.add_argument("--lang", required=True, help="es or en (PLS holds one language a file)")
    add_project_option(exp, "export this project's lexicon instead of the global one")


def run(args: argparse.Namespace) -> int:
    actions = {"add": add_entry, "remove": remove_entry, "list": list_entries, "test": test_text,
               "import": import_pls, "export": export_pls}
    action = actions.get(args.lexicon_command or "")
    if action is None:
        raise UserError(USAGE)
    return action(args)


def _lang(value: str | None) -> str | None:
    return None if value is None else check_language(value)


def _project_lexicon(args: argparse.Namespace) -> Lexicon:
    """The --project folder's own lexicon (empty without --project): to say where an entry comes from."""

    folder = project_folder(args, must_exist=True)
    return Lexicon() if folder is None else load_lexicon(project_lexicon_path(folder))


def _describe(entry: Entry) -> str:
    how = ", ".join(x for x in (entry.lang or "es+en", "case-sensitive" if entry.case_sensitive else "",
                                "phones" if entry.phones else "") if x)
    return f"'{entry.word}' -> '{entry.say}' ({how})"


def add_entry(args: argparse.Namespace) -> int:
    entry = Entry(args.word, args.say, _lang(args.lang), args.case_sensitive, args.phones)
    path = lexicon_file(args, must_exist=False)
    replaced: list[Entry] = []

    def change(lexicon: Lexicon) -> Lexicon:
        replaced.extend(e for e in lexicon.entries if e.key == entry.key)
        return lexicon.with_entry(entry)

    edit_lexicon(path, change)
    print(f"{'replaced' if replaced else 'added'} {_describe(entry)} in {path}")
    return 0


def remove_entry(args: argparse.Namespace) -> int:
    lang = _lang(args.lang)
    path = lexicon_file(args, must_exist=True)
    if not path.exists():
        raise UserError(f"{path} does not exist: there is nothing to remove")
    gone: list[int] = []

    def change(lexicon: Lexicon) -> Lexicon:
        kept, count = lexicon.without(args.word, lang)
        if not count:
            raise UserError(f"no entry for '{args.word}'{f' in {lang}' if lang else ''} in {path}")
        gone.append(count)
        return kept

    edit_lexicon(path, change)
    print(f"removed {gone[0]} {'entry' if gone[0] == 1 else 'entries'} for '{args.word}' from {path}")
    return 0


def list_entries(args: argparse.Namespace) -> int:
    folder = project_folder(args, must_exist=True)
    files = {"global": global_lexicon_path(), "project": None if folder is None else project_lexicon_path(folder)}
    from_project = set(_project_lexicon(args).entries)
    rows = [{**dataclasses.asdict(e), "source": "project" if e in from_project else "global"}
            for e in effective(args).entries]
    if args.json:
        print(json.dumps({"files": {k: None if v is None else str(v) for k, v in files.items()},
                          "entries": rows}, ensure_ascii=False))
        return 0
    if not rows:
        where = " or ".join(str(p) for p in files.values() if p is not None)
        print(f"no lexicon entries ({where})")
        return 0
    # lazy: start-up (rich)
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(rows)} lexicon {'entry' if len(rows) == 1 else 'entries'}")
    for column in ("word", "say", "lang", "case", "from"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["word"], row["say"], row["lang"] or "es+en",
                      "sensitive" if row["case_sensitive"] else "", row["source"])
    Console().print(table, markup=False, highlight=False)
    return 0


def test_text(args: argparse.Namespace) -> int:
    text, lang = check_text(args.text), check_language(args.lang)
    spoken = normalize(text, lang, effective(args))
    print(spoken.text)
    from_project = {e.word for e in _project_lexicon(args).for_lang(lang)}  # a span names its entry's word
    used = [f"{line} [{'project' if span.detail in from_project else 'global'}]"
            for span, line in zip(spoken.spans, spoken.explain(), strict=True) if span.rule == "lexicon"]
    for line in used or ["no lexicon entry applied"]:
        print(f"  {line}")
    return 0


def import_pls(args: argparse.Namespace) -> int:
    # lazy: start-up (rich)
    from omnistudio.console import err_console

    if not args.file.is_file():
        raise UserError(f"no PLS file at {args.file}")
    path = lexicon_file(args, must_exist=False)
    imported = read_pls(args.file)
    if not imported.lexicon.entries:
        first = f": {imported.warnings[0]}" if imported.warnings else ""
        raise UserError(f"{args.file}: nothing to import ({len(imported.warnings)} lexemes skipped){first}")
    for warning in imported.warnings:
        err_console.print(f"omnistudio: warning: {args.file}: {warning}", markup=False, highlight=False,
                          soft_wrap=True)
    edit_lexicon(path, lambda lexicon: lexicon.merged(imported.lexicon))
    count = len(imported.lexicon)
    print(f"imported {count} {imported.lang} {'entry' if count == 1 else 'entries'} from {args.file} into {path}"
          + (f" ({len(imported.warnings)} skipped)" if imported.warnings else ""))
    return 0


def export_pls(args: argparse.Namespace) -> int:
    # lazy: start-up (numpy)
    from omnistudio.audio.export import check_not_input, check_writable_path

    lang = _lang(args.lang)
    assert lang is not None  # --lang is required
    path = lexicon_file(args, must_exist=True)
    target: Path = args.file
    check_writable_path(target)  # not a folder, a socket or inside a project; a FIFO or - is written into
    check_not_input(target, {"the lexicon file": path}, sidecar=False)
    lexicon = load_lexicon(path)
    write_pls(target, lexicon, lang)
    count = len(entries_for(lexicon, lang))
    said = f"exported {count} {lang} {'entry' if count == 1 else 'entries'} from {path} to {target}"
    print(said, file=sys.stderr if destination(target).stdout else sys.stdout)
    return 0
