"""Where the pronunciation lexicon is stored: TOML files a producer can edit by hand.

The global lexicon is ``lexicon.toml`` in the user config folder (``$OMNISTUDIO_HOME/config/`` when
set); a project's is ``NAME.omniproj/lexicon.toml``. What the front-end uses is the two merged, the
project's entries winning (:func:`effective_lexicon`). A file holds one ``[[entry]]`` table per entry::

    [[entry]]
    word = "Sheinbaum"
    say = "[SH AY1 N B AW0 M]"
    lang = "en"            # omitted: both languages
    case_sensitive = false # omitted: false
    phones = true          # say is CMU phone notation (English only); omitted: false

A missing file is an empty lexicon; a file that is not TOML, or an entry that is not one, is one
:class:`~omnistudio.errors.UserError` line naming the file and the entry. Writes are atomic (a temp
file beside it, then a rename) and a read-modify-write holds a lock (:func:`edit_lexicon`), so two
commands adding words at once both land. W3C PLS import and export: :mod:`omnistudio.text.pls`."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w

from omnistudio.checks import MAX_LEXICON_FILE_BYTES, read_small_file
from omnistudio.commit import atomic_write_bytes
from omnistudio.config import locations
from omnistudio.errors import UserError
from omnistudio.locks import exclusive
from omnistudio.text.lexicon import Entry, Lexicon

FILE_NAME = "lexicon.toml"
FIELDS = {"word": str, "say": str, "lang": str, "case_sensitive": bool, "phones": bool}
HEADER = """\
# OmniStudio pronunciation lexicon: one [[entry]] per word (or phrase).
#   word = as written; say = what is read instead (a respelling, or CMU phones in brackets);
#   lang = "es" or "en" (omitted: both); case_sensitive = true: only this spelling matches;
#   phones = true: say is phone notation such as "[SH AY1 N B AW0 M]" (English only).
"""


def global_lexicon_path() -> Path:
    """The global lexicon's file (resolved now: ``OMNISTUDIO_HOME`` may change between calls)."""

    return locations().config / FILE_NAME


def project_lexicon_path(project: Path) -> Path:
    """A project folder's lexicon file (``NAME.omniproj/lexicon.toml``)."""
    return Path(project) / FILE_NAME


def effective_lexicon(project: Path | None) -> Lexicon:
    """The global lexicon merged with ``project``'s (when given), the project's entries winning."""
    found = load_lexicon(global_lexicon_path())
    if project is None:
        return found
    return found.merged(load_lexicon(project_lexicon_path(project)))


def load_lexicon(path: Path) -> Lexicon:
    """The lexicon stored at ``path`` (empty when there is no file)."""

    if not os.path.lexists(path):
        return Lexicon()
    return parse_lexicon(read_small_file(path, "the lexicon file", MAX_LEXICON_FILE_BYTES), str(path))


def parse_lexicon(data: bytes, where: str) -> Lexicon:
    """The lexicon in TOML ``data``; ``where`` (the file) names it in the one-line error."""
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{where} is not UTF-8 text: save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{where} is not valid TOML: {exc}") from None
    unknown = sorted(set(document) - {"entry"})
    if unknown:
        raise UserError(f"{where}: unknown key '{unknown[0]}' (a lexicon holds [[entry]] tables only)")
    tables = document.get("entry", [])
    if not isinstance(tables, list):
        raise UserError(f"{where}: 'entry' must be [[entry]] tables")
    return Lexicon(tuple(_entry(table, n, where) for n, table in enumerate(tables, start=1)))


def _entry(table: Any, n: int, where: str) -> Entry:
    if not isinstance(table, dict):
        raise UserError(f"{where}: entry {n} must be an [[entry]] table")
    word = table.get("word")
    name = f"entry {n}" + (f" ('{word}')" if isinstance(word, str) else "")
    for key, value in table.items():
        kind = FIELDS.get(key)
        if kind is None:
            raise UserError(f"{where}: {name}: unknown key '{key}' (use {', '.join(FIELDS)})")
        if not isinstance(value, kind):
            raise UserError(f"{where}: {name}: '{key}' must be {'true or false' if kind is bool else 'text'}")
    for key in ("word", "say"):
        if key not in table:
            raise UserError(f"{where}: {name}: '{key}' is missing")
    try:
        return Entry(**table)
    except UserError as exc:
        raise UserError(f"{where}: {name}: {exc}") from None


def dump_lexicon(lexicon: Lexicon) -> str:
    """The TOML text of ``lexicon``: one ``[[entry]]`` table each, defaults left out (a short file)."""

    chunks = [HEADER]
    for entry in lexicon.entries:
        table: dict[str, object] = {"word": entry.word, "say": entry.say}
        if entry.lang is not None:
            table["lang"] = entry.lang
        if entry.case_sensitive:
            table["case_sensitive"] = True
        if entry.phones:
            table["phones"] = True
        chunks.append("\n[[entry]]\n" + tomli_w.dumps(table))  # one table each (tomli_w would inline them)
    return "".join(chunks)


def save_lexicon(path: Path, lexicon: Lexicon) -> None:
    """Write ``lexicon`` to ``path`` atomically (its folder created if missing): a failure leaves the
    file as it was, and no temp file."""

    data = dump_lexicon(lexicon).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, lambda tmp: tmp.write_bytes(data), suffix=".toml")


def edit_lexicon(path: Path, change: Callable[[Lexicon], Lexicon]) -> Lexicon:
    """Read the lexicon at ``path``, apply ``change`` and save the result, holding a lock beside the
    file (``.lexicon.toml.lock``) so that edits from two processes at once both land; the result.
    A ``change`` that raises leaves the file untouched."""

    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(path.with_name(f".{path.name}.lock")):
        lexicon = change(load_lexicon(path))
        save_lexicon(path, lexicon)
    return lexicon
