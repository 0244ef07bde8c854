"""The studio's project: takes per sentence, regenerate (F9), step (Alt+Left/Right), A/B (F10),
choose (Enter on the take list), undo (Ctrl+Z).

The UI thread calls the public methods; each queues a command on the controller's engine thread,
which alone touches the project (renders, plays, saves). Plays and exports of the script use the
chosen takes (:func:`omnistudio.projects.chosen.use_chosen`); what a play renders becomes a take.
F9 is :func:`omnistudio.projects.retake.regenerate` over the pipeline synthesiser that plays as it renders.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio.errors import UserError
from omnistudio.projects.chosen import keep_rendered, project_slate, use_chosen, use_take
from omnistudio.projects.presets import read_presets, with_preset, write_presets
from omnistudio.projects.project import MANIFEST, Project, open_or_create
from omnistudio.projects.retake import pipeline_synth, regenerate
from omnistudio.script import Blend
from omnistudio.studio import commands as cmd
from omnistudio.studio.events import Notice, TakeRow, TakesChanged
from omnistudio.take.delivery import Slate
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import PlannedSentence, Take, TakeResult, build_take
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from omnistudio.studio.commands import CommandQueue
    from omnistudio.studio.core import ScriptReading
    from omnistudio.studio.events import StudioEvent
    from omnistudio.studio.playing import TakePlayer
    from omnistudio.take.link import EngineLink
    from omnistudio.take.pipeline import TakeCache


class ProjectTakes:
    """The open project's takes (UI-thread calls queue commands; the engine thread runs them). ``link``: the
    engine's (raises Unavailable until it is up); ``playback``: plays a take through the player; ``stop``:
    stops what plays and returns the next play's cancel flag; ``report``: the events' way out."""

    def __init__(self, commands: CommandQueue, cache: TakeCache, link: Callable[[], EngineLink],
                 playback: TakePlayer, reading: ScriptReading, stop: Callable[[], threading.Event],
                 report: Callable[[StudioEvent], None]) -> None:
        self._commands, self._cache, self._link, self._playback = commands, cache, link, playback
        self._reading, self._stop, self._report_event = reading, stop, report
        self.project: Project | None = None
        self.cursor: dict[int, str] = {}  # sentence -> the take Alt+Left/Right is on
        self.played: list[str] = []  # take ids played by step / A/B / regenerate, in order (tests read it)
        self.presets: dict[str, Blend] = {}  # the open project's named duos (replaced whole, never edited)
        self._edited: str | None = None  # the editor's script not yet saved in the project (UI thread)
        self._saved_script: str | None = None  # the script last saved by keep_script (engine thread)

    # ------------------------------------------------------- UI thread
    def open(self, path: Path, text: str | None = None) -> Project:
        """Open (or start) the project at ``path`` before anything plays; returns it (its script
        goes into the editor). Problems opening it are reported as notices."""

        voice = self._reading.voice()
        project = open_or_create(Path(path), text or "", self._reading.language,
                                 voice.key() if voice else "") if text else Project.open(Path(path))
        presets, damaged = read_presets(project.path)
        for problem in [*project.problems, *([damaged] if damaged else [])]:
            self._report_event(Notice(f"{Path(path).name}: {problem}", "warning"))
        self.project, self.presets = project, presets
        self._report()
        return project

    def save_preset(self, name: str, blend: Blend, anchors: Collection[str] = ()) -> str:
        """Keep ``blend`` as the project's duo preset ``name`` (UI thread: offered at once, written by the
        engine thread, which alone touches the project); returns the name as kept."""
        if self.project is None:
            raise UserError("duo presets live in a project: open one (omnistudio NAME.omniproj) to keep them")
        key, self.presets = with_preset(self.presets, name, blend, anchors)
        self._queue(cmd.KeepPreset(dict(self.presets)))
        return key

    def announce(self) -> None:
        """Report the open project's takes now (a client that attaches after :meth:`open`: the studio's
        gutter and take list show them at once)."""
        self._report()

    def sync(self, text: str) -> None:
        self._queue(cmd.SyncScript(text, self._reading.voice()))

    def edited(self, text: str) -> None:
        """The editor's script changed (UI thread): :meth:`keep_script` saves it in the project."""
        self._edited = text

    def keep_script(self) -> None:
        """Save the editor's last script in the project, if it changed (UI thread: the app's autosave timer
        and its close), so an edit made after the last play survives a quit or a crash."""
        text, self._edited = self._edited, None
        if text is not None:
            self._queue(cmd.SyncScript(text, self._reading.voice(), save=True))

    def regenerate(self, text: str, index: int) -> None:
        """F9: a new take of sentence ``index`` with a new seed; it plays and becomes the chosen one."""
        self._need()
        cancel = self._stop()
        self.sync(text)
        self._queue(cmd.Regenerate(index, cancel, self._reading.take_options()))

    def step(self, text: str, index: int, offset: int) -> None:
        """Alt+Left/Right: move to the previous/next take of sentence ``index`` and play it."""
        self._need()
        cancel = self._stop()
        self.sync(text)
        self._queue(cmd.StepTake(index, offset, cancel, self._reading.take_options()))

    def compare(self, text: str, index: int) -> None:
        """F10: the chosen take, then the one chosen before it, back to back."""
        self._need()
        cancel = self._stop()
        self.sync(text)
        self._queue(cmd.Compare(index, cancel, self._reading.take_options()))

    def choose(self, index: int, take_id: str | None = None) -> None:
        """Enter on the take list: choose ``take_id`` (default: the take Alt+Left/Right is on)."""
        self._need()
        self._queue(cmd.Choose(index, take_id))

    def undo(self, index: int) -> None:
        """Ctrl+Z in the take list: back to the previous choice."""
        self._need()
        self._queue(cmd.Undo(index))

    def _need(self) -> None:
        if self.project is None:
            raise UserError("no project is open: start the studio with --project NAME.omniproj")

    def _queue(self, action: cmd.ProjectAction) -> None:
        if self.project is not None:
            self._commands.put(action)

    # --------------------------------------------------- engine thread
    def run(self, action: cmd.Command) -> None:
        """One of the project's actions (the engine thread's: the controller hands them here)."""
        match action:
            case cmd.SyncScript(text, voice, save):
                try:
                    self._sync(text, voice)
                except UserError:
                    if not save:
                        raise
                    return  # the autosave of a script mid-edit (an unclosed tag): kept once it reads again
                if save and self.project is not None and self.project.script != self._saved_script:
                    self.project.save()
                    self._saved_script = self.project.script
            case cmd.Regenerate(index, cancel, options):
                self._regenerate(index, cancel, options)
            case cmd.StepTake(index, offset, cancel, options):
                self._step(index, offset, cancel, options)
            case cmd.Compare(index, cancel, options):
                self._compare(index, cancel, options)
            case cmd.Choose(index, take_id):
                self._choose(index, take_id)
            case cmd.Undo(index):
                self._undo(index)
            case cmd.KeepPreset(presets):
                self._keep_presets(presets)
            case _:
                raise TypeError(f"not a project action: {action!r}")

    def _keep_presets(self, presets: dict[str, Blend]) -> None:
        assert self.project is not None
        if not (self.project.path / MANIFEST).exists():  # a new project: on disk first
            self.project.save()
        write_presets(self.project.path, presets)

    def slate(self) -> Slate:
        """What an export is called: the open project's name (none open: the take's own words)."""

        return project_slate(self.project)

    def with_chosen(self, take: Take) -> Take:
        """The same take, playing the chosen takes where the project has them."""
        if self.project is None:
            return take
        sentences = use_chosen(self.project, take.sentences, take.options, take.link, take.cache)
        return Take(take.link, sentences, take.options, take.cache, take.base_seed, take.lookahead)

    def keep(self, take: Take, result: TakeResult) -> None:
        if self.project is not None and keep_rendered(self.project, take.sentences, result.chunks, take.options,
                                                      result.engine):
            self._save()

    def _sync(self, text: str, voice: VoiceRef | None) -> None:
        assert self.project is not None
        if voice is not None:
            self.project.voice = voice.key()
        self.project.lang = self._reading.language
        self.project.set_script(text)

    def _planned(self, index: int, options: TakeOptions) -> PlannedSentence:
        assert self.project is not None
        sentences = [s for s in self._reading.parse(self.project.script) if s.id == index]
        if not sentences:
            raise UserError(f"there is no sentence {index + 1}")
        return build_take(self._link(), sentences, options, self._cache).sentences[0]

    def _play(self, cancel: threading.Event, planned: list[PlannedSentence], options: TakeOptions) -> TakeResult:
        """Play planned sentences (cache hits or rendered) through the controller's player."""
        with self._playback.playing():
            return self._playback.run(Take(self._link(), planned, options, self._cache), cancel)

    def _regenerate(self, index: int, cancel: threading.Event, options: TakeOptions) -> None:
        """F9: :func:`regenerate`, its try played as it renders; the new take is chosen and saved
        before the play is reported finished."""
        assert self.project is not None
        planned = self._planned(index, options)
        synth = pipeline_synth(self.project, [planned], self._link(), options, self._cache,
                               run=lambda take: self._playback.run(take, cancel))
        with self._playback.playing():
            take = regenerate(self.project, index, synth, base_seed=planned.seed, num_step=options.num_step,
                              guidance=options.guidance_scale)
            self.cursor[index] = take.id
            self.played.append(take.id)
            self._save(take.id)

    def _step(self, index: int, offset: int, cancel: threading.Event, options: TakeOptions) -> None:
        assert self.project is not None
        take = self.project.lines[index].step(self.cursor.get(index), offset)
        if take is None:
            raise UserError(f"sentence {index + 1} has no takes yet: play it or press F9")
        self.cursor[index] = take.id
        self.played.append(take.id)
        planned = use_take(self.project, self._planned(index, options), take, options, self._link(),
                           self._cache)
        self._play(cancel, [planned], options)
        self._report(take.id)

    def _compare(self, index: int, cancel: threading.Event, options: TakeOptions) -> None:
        assert self.project is not None
        line = self.project.lines[index]
        a, b = line.chosen_take, line.previous_take()
        if a is None or b is None:
            raise UserError(f"sentence {index + 1} needs a chosen take and an earlier choice to compare")
        planned = self._planned(index, options)
        self.played.extend([a.id, b.id])
        self._play(cancel, [use_take(self.project, planned, t, options, self._link(), self._cache)
                            for t in (a, b)], options)

    def _choose(self, index: int, take_id: str | None) -> None:
        assert self.project is not None
        line = self.project.lines[index]
        chosen = take_id or self.cursor.get(index)
        if chosen is None:
            raise UserError("no take to choose: step to one with Alt+Left/Right")
        line.choose(chosen)
        self._save()

    def _undo(self, index: int) -> None:
        assert self.project is not None
        if not self.project.lines[index].undo():
            raise UserError(f"nothing to undo for sentence {index + 1}")
        self._save()

    def _save(self, played: str | None = None) -> None:
        assert self.project is not None
        self.project.save()
        self._report(played)

    def _report(self, played: str | None = None) -> None:
        if self.project is not None:
            rows = tuple(tuple(TakeRow(t.id, t.seed, t.duration_s, t.asr.wer if t.asr else None,
                                       t.asr.passed if t.asr else None, t.id == ln.chosen) for t in ln.fresh_takes)
                         for ln in self.project.lines)
            self._report_event(TakesChanged(rows, tuple(ln.failed for ln in self.project.lines), played))
