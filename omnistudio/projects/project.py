"""A project: the script, every take of every sentence, and which take is chosen.

On disk ``NAME.omniproj/``::

    project.json     the manifest (format, default voice and language, the script, per sentence:
                     its takes and the chosen one); written last, through a temporary file + rename
    script.txt       a copy of the script, written before the manifest (opened when the manifest is broken)
    takes/ID.flac    one file per take (24-bit FLAC, 24 kHz), named by the SHA-256 of its bytes
    .lock            held while saving (two commands saving one project at once both land: see ``save``)

A take belongs to the text, voice and language it was rendered for, the text as spoken (what the text
front-end and the lexicon made of it, :meth:`Project.speak`): editing a sentence's text, or a lexicon
entry for a word in it, leaves its takes in place but stale (``Line.fresh_takes`` drops them, ``Line.chosen_take`` is None), and the
other sentences keep theirs. A manifest that is not valid JSON, a missing take file, or a take file
whose bytes do not match its name each add one line to ``Project.problems``; the rest opens.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import io
import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from omnistudio.audio.export import PROJECT_SUFFIX, project_holding  # noqa: F401 (re-exported)
from omnistudio.commit import atomic_write_bytes
from omnistudio.errors import UserError
from omnistudio.locks import exclusive
from omnistudio.projects.line import ID_CHARS, TAKES, Line, StoredTake, text_hash
from omnistudio.projects.speech_check import AsrResult
from omnistudio.text.lexicon import Lexicon

FORMAT = 1
SUFFIX = PROJECT_SUFFIX
MANIFEST = "project.json"
SCRIPT = "script.txt"
LOCK = ".lock"
HOLDS = f"a project is a folder named NAME{SUFFIX} holding {MANIFEST}, {SCRIPT} and {TAKES}/"
SAMPLE_RATE = 24_000


def encode_flac(pcm: np.ndarray, sample_rate: int) -> bytes:
    # lazy: start-up (soundfile)
    import soundfile as sf

    data = np.asarray(pcm, dtype=np.float32).reshape(-1)
    if not np.all(np.isfinite(data)):
        raise UserError("refusing to store a take containing NaN or infinite samples")
    buffer = io.BytesIO()
    sf.write(buffer, np.clip(data, -1.0, 1.0), sample_rate, format="FLAC", subtype="PCM_24")
    return buffer.getvalue()


def decode_flac(data: bytes) -> tuple[np.ndarray, int]:
    # lazy: start-up (soundfile)
    import soundfile as sf

    pcm, rate = sf.read(io.BytesIO(data), dtype="float32")
    return (pcm if pcm.ndim == 1 else pcm.mean(axis=1)).astype(np.float32), int(rate)


class Project:
    """A script with its takes; ``path`` is the ``NAME.omniproj`` folder."""

    def __init__(self, path: Path, script: str, lang: str = "en", voice: str = "", lines: list[Line] | None = None,
                 sample_rate: int = SAMPLE_RATE) -> None:
        self.path = Path(path)
        self.lang = lang
        self.voice = voice
        self.sample_rate = sample_rate
        self.script = ""
        self.lines: list[Line] = lines or []
        self.problems: list[str] = []
        self._audio: dict[str, np.ndarray] = {}
        self._pending: dict[str, bytes] = {}  # take files not yet on disk
        self.set_script(script)

    # ---------------------------------------------------------------- script
    def set_script(self, text: str) -> None:
        """Re-parse the script; sentences whose text is unchanged keep their takes, edited ones keep
        theirs as stale, new ones start empty."""
        # lazy: start-up (pysbd)
        from omnistudio.projects.presets import read_presets
        from omnistudio.script import parse_script

        script = parse_script(text, self.lang, presets=read_presets(self.path)[0])  # its duo presets are speakers
        new = [Line(s.text, s.speaker or self.voice, s.lang, s.line) for s in script.sentences]
        paired = list(_paired(self.lines, new))
        placed, moved = {id(after) for _b, after in paired}, {id(before) for before, _a in paired}
        left = {(ln.text, ln.voice, ln.lang): ln for ln in self.lines if id(ln) not in moved}
        paired += [(left[key], after) for after in new  # a sentence moved elsewhere in the script keeps its takes
                   if id(after) not in placed and (key := (after.text, after.voice, after.lang)) in left]
        for before, after in paired:
            after.takes, after.chosen, after.history = before.takes, before.chosen, before.history
            if before.text == after.text:
                after.spoken = before.spoken
            after.reclaim()
        self.script, self.lines = text, new

    def speak(self, spoken: list[str]) -> None:
        """Each sentence's text as the take pipeline says it (``PlannedSentence.said``, in order): a take
        is fresh only for the spoken text it was rendered from."""
        if len(spoken) != len(self.lines):
            raise UserError(f"the project has {len(self.lines)} sentences; {len(spoken)} spoken forms given (internal)")
        for line, said in zip(self.lines, spoken):
            line.spoken = said
            line.reclaim()

    def __len__(self) -> int:
        return len(self.lines)

    # ----------------------------------------------------------------- takes
    def add_take(self, index: int, pcm: np.ndarray, *, seed: int, num_step: int, guidance: float,
                 asr: AsrResult | None = None, choose: bool = True, sample_rate: int | None = None,
                 speed: float = 1.0, engine: dict[str, Any] | None = None, lexicon: Lexicon | None = None) -> StoredTake:
        """Store a rendering of sentence ``index`` (float32 mono) as a new take and return it. The
        audio is kept as the FLAC file will give it back, so what plays is what is stored. Its words are
        estimated over it by syllables (``lexicon``: the one its spoken form was made with), until a
        speech model measures them (:func:`omnistudio.projects.chosen.keep_words`)."""
        # lazy: start-up (pyebur128, pysbd)
        from omnistudio.audio.loudness import measure
        from omnistudio.captions.timing import SentenceTiming
        from omnistudio.voices.words import sentence_words

        rate = int(sample_rate or self.sample_rate)
        if rate != self.sample_rate:
            raise UserError(f"a take at {rate} Hz cannot join a {self.sample_rate} Hz project")
        line = self.lines[index]
        data = encode_flac(pcm, rate)
        take_id = hashlib.sha256(data).hexdigest()[:ID_CHARS]
        stored, _ = decode_flac(data)
        existing = next((t for t in line.takes if t.id == take_id), None)
        if existing is None:
            lufs = measure(stored, rate).integrated_lufs
            duration = round(stored.size / rate, 4)
            timing = SentenceTiming(index, line.text, line.spoken or line.text, line.lang, 0.0, duration)
            existing = StoredTake(take_id, line.voice, line.lang, int(seed), int(num_step), float(guidance),
                                  line.text_hash, duration, None if not np.isfinite(lufs) else round(float(lufs), 2),
                                  asr, datetime.now(UTC).isoformat(timespec="seconds"), float(speed), engine,
                                  tuple(w.as_dict() for w in sentence_words(timing, lexicon=lexicon)))
            line.takes.append(existing)
            self._pending[take_id] = data
        self._audio[take_id] = stored
        if choose:
            line.choose(existing.id)
        return existing

    def set_asr(self, index: int, take_id: str, asr: AsrResult) -> StoredTake:
        line = self.lines[index]
        for i, take in enumerate(line.takes):
            if take.id == take_id:
                line.takes[i] = replace(take, asr=asr)
                return line.takes[i]
        raise UserError(f"no take {take_id} for sentence {index + 1}")

    def audio(self, take: StoredTake) -> np.ndarray:
        """The take's samples (float32 mono at ``sample_rate``)."""
        if take.id not in self._audio:
            data = self._pending.get(take.id)
            if data is None:
                try:
                    data = read_take_file(self.path / take.file)
                except OSError as exc:
                    raise UserError(f"cannot read take {take.file}: {exc.strerror}") from None
            self._audio[take.id] = decode_flac(data)[0]
        return self._audio[take.id]

    def chosen(self) -> Iterator[tuple[int, Line, StoredTake | None]]:
        for index, line in enumerate(self.lines):
            yield index, line, line.chosen_take

    def missing(self) -> list[int]:
        """Sentences without a fresh chosen take (what ``render --project`` renders)."""
        return [i for i, line, take in self.chosen() if take is None]

    # ------------------------------------------------------------------ disk
    def manifest(self) -> dict[str, Any]:
        return {"format": FORMAT, "sample_rate": self.sample_rate, "lang": self.lang, "voice": self.voice,
                "script": self.script,
                "sentences": [{"text": ln.text, "spoken": ln.spoken or ln.text, "voice": ln.voice, "lang": ln.lang,
                               "line": ln.line, "chosen": ln.chosen, "history": ln.history,
                               "takes": [t.as_dict() for t in ln.takes]} for ln in self.lines]}

    def save(self) -> None:
        """Under the project's lock, so that two commands saving one project at once (two renders, a
        render and the studio) both land: first the takes another process saved since this project
        was read join it (:meth:`_merge_saved`); then take files (each atomic, named by content; one
        whose bytes no longer match its name is written again), script.txt, the manifest by rename,
        and last the removal of take files no sentence holds. A crash at any point leaves the
        previous manifest and every file it names intact."""
        folder = self.path
        (folder / TAKES).mkdir(parents=True, exist_ok=True)
        with exclusive(folder / LOCK):
            self._merge_saved()
            for take_id, data in list(self._pending.items()):
                target = folder / TAKES / f"{take_id}.flac"
                if not _holds(target, take_id):
                    atomic_write_bytes(target, _bytes_writer(data), suffix=".flac")
                del self._pending[take_id]
            atomic_write_bytes(folder / SCRIPT, lambda tmp: tmp.write_text(self.script, encoding="utf-8"))
            text = json.dumps(self.manifest(), indent=1, ensure_ascii=False) + "\n"
            atomic_write_bytes(folder / MANIFEST, lambda tmp: tmp.write_text(text, encoding="utf-8"))
            used = {t.id for ln in self.lines for t in ln.takes}
            for path in (folder / TAKES).glob("*.flac"):  # takes no sentence holds any more
                if path.stem not in used:
                    path.unlink(missing_ok=True)

    def _merge_saved(self) -> None:
        """Add the takes of the manifest on disk that this project does not hold (another process
        saved them since this one read it) to the sentences they belong to here, paired as an edit
        pairs sentences (:meth:`set_script`): a sentence this project dropped takes its takes with
        it, as when one process saves after the other. A take whose file is missing or changed stays
        out; choices and checks stay this project's."""
        try:
            data = json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))
            entries = list(data["sentences"] or [])
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
            return  # nothing readable saved: nothing to keep
        known = {t.id for ln in self.lines for t in ln.takes}
        for before, after in _paired(_saved_lines(self.path, entries, [], skip=known), self.lines):
            after.takes.extend(t for t in before.takes if t.id not in known)

    @classmethod
    def create(cls, path: Path, script: str, lang: str = "en", voice: str = "") -> Project:
        path = check_project_path(path)
        if (path / MANIFEST).exists():
            raise UserError(f"project {path} already exists")
        return cls(path, script, lang, voice)

    @classmethod
    def open(cls, path: Path) -> Project:
        """Open a project; damage that leaves the rest usable is listed in ``problems``."""
        path = check_project_path(path)
        if not path.is_dir():
            raise UserError(f"project {path} does not exist")
        if not (path / MANIFEST).exists() and not (path / SCRIPT).exists():
            raise UserError(f"{path} is not an OmniStudio project: it holds neither {MANIFEST} nor {SCRIPT} "
                            f"({HOLDS})")
        problems: list[str] = []
        try:
            data = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not isinstance(data.get("script"), str):
                raise ValueError("it has no script")
            if int(data.get("format", 0)) > FORMAT:
                raise UserError(f"project {path} was saved by a newer omnistudio (format {data['format']})")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            why = (f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
                   if isinstance(exc, json.JSONDecodeError) else f"cannot be read ({exc})")
            script = _read_script_copy(path)
            if script is None:
                raise UserError(f"{path / MANIFEST} {why}, and {SCRIPT} is missing too") from None
            project = cls(path, script)
            project.problems.append(f"{MANIFEST} {why}: opened the script from {SCRIPT} without its takes")
            return project
        lines = _saved_lines(path, list(data.get("sentences") or []), problems)
        for line in lines:
            if line.chosen is not None and all(t.id != line.chosen for t in line.takes):
                line.chosen = None
            line.history = [h for h in line.history if h is None or any(t.id == h for t in line.takes)]
        project = cls(path, data["script"], str(data.get("lang", "en")), str(data.get("voice", "")), lines,
                      int(data.get("sample_rate", SAMPLE_RATE)))
        project.problems = problems
        return project


def _paired(old: list[Line], new: list[Line]) -> Iterator[tuple[Line, Line]]:
    """(old, new) pairs of the same sentence across an edit of the script: the unchanged runs, and
    the replaced runs in order (sentences inserted or deleted pair with nothing)."""
    matcher = difflib.SequenceMatcher(a=[text_hash(ln.text) for ln in old], b=[text_hash(ln.text) for ln in new],
                                      autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag in ("equal", "replace"):
            yield from zip(old[a0:a1], new[b0:b1])


def _saved_lines(folder: Path, entries: list[Any], problems: list[str],
                 skip: frozenset[str] | set[str] = frozenset()) -> list[Line]:
    """The sentences of a manifest with their takes, each take's file checked against its hash;
    takes named in ``skip`` are left out unread. Damage is one line each in ``problems``."""
    lines: list[Line] = []
    for number, entry in enumerate(entries, start=1):
        try:
            line = Line(str(entry["text"]), str(entry.get("voice", "")), str(entry.get("lang", "en")),
                        int(entry.get("line", 0)), chosen=entry.get("chosen"),
                        history=list(entry.get("history") or []), spoken=str(entry.get("spoken") or ""))
            raw_takes = [raw for raw in entry.get("takes") or []
                         if not (isinstance(raw, dict) and str(raw.get("id")) in skip)]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            problems.append(f"sentence {number}: manifest entry is damaged ({exc}); its takes were dropped")
            continue
        for raw in raw_takes:
            take = _open_take(folder, number, raw, problems)
            if take is not None:
                line.takes.append(take)
        lines.append(line)
    return lines


def _holds(file: Path, take_id: str) -> bool:
    """Whether ``file`` exists and its bytes match the take id that names it."""
    try:
        return hashlib.sha256(read_take_file(file)).hexdigest()[:ID_CHARS] == take_id
    except OSError:
        return False


def read_take_file(file: Path) -> bytes:
    """A take file's bytes: a regular file only (a FIFO would block, a device or a link is not a take)."""
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(file))
        return fh.read()


def _open_take(folder: Path, number: int, raw: Any, problems: list[str]) -> StoredTake | None:
    try:
        take = StoredTake.from_dict(raw)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        problems.append(f"sentence {number}: a take entry is damaged ({exc}); it was dropped")
        return None
    file = folder / take.file
    try:
        data = read_take_file(file)
    except OSError:
        problems.append(f"sentence {number}: take file {take.file} is missing; the take was dropped")
        return None
    if hashlib.sha256(data).hexdigest()[:ID_CHARS] != take.id:
        problems.append(f"sentence {number}: take file {take.file} does not match its hash (changed on disk); "
                        "the take was dropped")
        return None
    return take


def _bytes_writer(data: bytes) -> Callable[[Path], int]:
    """A writer for :func:`atomic_write_bytes` that writes ``data``."""
    return lambda tmp: tmp.write_bytes(data)


def _read_script_copy(folder: Path) -> str | None:
    try:
        return (folder / SCRIPT).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def check_project_path(path: Path | str) -> Path:
    path = Path(path).expanduser()
    if path.suffix != SUFFIX:
        raise UserError(f"a project is a folder named NAME{SUFFIX}, not {path.name}")
    if path.exists() and not path.is_dir():
        raise UserError(f"{path} is a file, not a project folder ({HOLDS})")
    return path


def open_or_create(path: Path, script: str, lang: str = "en", voice: str = "") -> Project:
    """Open ``path`` and bring its script up to ``script`` (edited sentences' takes go stale), or
    start a new project there."""
    path = check_project_path(path)
    if not (path / MANIFEST).exists() and not (path / SCRIPT).exists():
        return Project(path, script, lang, voice)
    project = Project.open(path)
    project.lang, project.voice = lang, voice
    project.set_script(script)
    return project
