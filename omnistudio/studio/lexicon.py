"""The studio's pronunciation lexicon: the global one with the open project's over it, as takes speak it.

Threads: :attr:`StudioLexicon.current` is the lexicon last read, in memory (the UI thread builds take
options and shows the spoken form from it, never touching the disk); the engine thread calls
:meth:`StudioLexicon.refreshed` as each play, export or take starts, which reads the files again when
they changed (a ``lexicon add`` from another terminal is spoken from the next play); :meth:`add` (the
UI's lexicon key) edits a file on the lexicon's own worker thread, so a long render does not hold it.
Each read reports :class:`~omnistudio.studio.events.LexiconChanged`; a file that cannot be read or
edited is one notice, and the lexicon read before stays in use."""

from __future__ import annotations

import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING

from omnistudio.errors import UserError, first_line
from omnistudio.studio.events import LexiconChanged, Notice
from omnistudio.take.options import TakeOptions
from omnistudio.text import Entry, Lexicon, Spoken, normalize
from omnistudio.text.lexicon_files import edit_lexicon, effective_lexicon, global_lexicon_path, project_lexicon_path

if TYPE_CHECKING:
    from omnistudio.projects.project import Project
    from omnistudio.studio.events import StudioEvent

log = logging.getLogger(__name__)
Signature = tuple[tuple[str, tuple[int, int, int] | None], ...]  # each file: its path and (mtime, size, inode)


def _signature(paths: list[Path]) -> Signature:
    def stat(path: Path) -> tuple[int, int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    return tuple((str(path), stat(path)) for path in paths)


def unresolved(spoken: Spoken) -> list[tuple[int, int, str]]:
    """The front-end's warnings as ranges of the spoken text (what it kept as written), with their messages."""
    out = []
    for warning in spoken.warnings:
        shift = 0  # spoken offset - written offset after the changed spans before the warning
        for span in spoken.spans:
            if span.written_end > warning.written_start:
                break
            shift = span.spoken_end - span.written_end
        out.append((warning.written_start + shift, warning.written_end + shift, warning.message))
    return out


WORD_RE = re.compile(r"\w+(?:['’-]\w+)*")  # "Sheinbaum", "O'Neill", "Bío-Bío"


def word_at(text: str, offset: int) -> str:
    """The word of ``text`` at character ``offset`` (touching it on either side), or ""."""
    return next((m.group() for m in WORD_RE.finditer(text) if m.start() <= offset <= m.end()), "")


class StudioLexicon:
    def __init__(self, project: Callable[[], Project | None], report: Callable[[StudioEvent], None]) -> None:
        self._project, self._report = project, report  # the open project (read when the lexicon is), the events' way out
        self.current = Lexicon()
        self._signature: Signature | None = None
        self._reading = threading.Lock()  # one read at a time (the engine thread's, the worker's)
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="studio-lexicon")

    # ------------------------------------------------------- UI thread
    def start(self) -> None:
        """Read the lexicon (on the worker thread)."""
        self._worker.submit(self._guarded, self._read)

    def close(self) -> None:
        self._worker.shutdown(wait=True)  # an edit under way lands

    @property
    def project(self) -> Path | None:
        project = self._project()
        return None if project is None else Path(project.path)

    def spoken(self, text: str, lang: str) -> Spoken:
        """What a take says for ``text`` in ``lang`` with the lexicon read last (pure, no disk)."""
        return normalize(text, lang, self.current)

    def add(self, entry: Entry, in_project: bool) -> None:
        """Add ``entry`` to the global lexicon, or the open project's (on the worker thread)."""
        if in_project and self.project is None:
            raise UserError("no project is open: the entry can go into the global lexicon")
        path = project_lexicon_path(self.project) if in_project and self.project else global_lexicon_path()
        self._worker.submit(self._guarded, self._add, entry, path)

    # --------------------------------------------------- other threads
    def refreshed(self, options: TakeOptions) -> TakeOptions:
        """``options`` with the lexicon as the files hold it now."""
        if not options.normalize:
            return options
        self._read(force=False)
        return replace(options, lexicon=self.current)

    def _paths(self) -> list[Path]:
        project = self.project
        return [global_lexicon_path(), *([project_lexicon_path(project)] if project else [])]

    def _read(self, force: bool = True, added: str = "") -> None:
        with self._reading:
            signature = _signature(self._paths())  # before reading: a change while it reads is read next time
            if not force and signature == self._signature:
                return
            self._signature = signature
            try:
                lexicon = effective_lexicon(self.project)
            except (UserError, OSError) as exc:  # said once per change of the files
                self._report(Notice(f"{first_line(exc)} (the lexicon read before is kept)", "error"))
                return
            self.current = lexicon
        self._report(LexiconChanged(len(lexicon), added))

    def _add(self, entry: Entry, path: Path) -> None:
        try:
            edit_lexicon(path, lambda lexicon: lexicon.with_entry(entry))
        except (UserError, OSError) as exc:
            self._report(Notice(f"lexicon not changed: {first_line(exc)}", "error"))
            return
        where = "the project's lexicon" if path.parent == self.project else "the global lexicon"
        self._read(added=f"'{entry.word}' is said '{entry.say}'{f' ({entry.lang})' if entry.lang else ''}: {where}")

    def _guarded(self, fn: Callable[..., object], *args: object) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - the worker must report, never die silently
            log.exception("studio lexicon %s failed", getattr(fn, "__name__", fn))
            self._report(Notice(f"lexicon: {first_line(exc)}", "error"))

