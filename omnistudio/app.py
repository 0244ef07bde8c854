"""StudioApp: wires the main screen to a Studio controller. Thin by design.

The controller's events arrive on its engine thread and are posted here as ``StudioEvent``
messages (``post_message`` is thread-safe); the meter, the sentence and the word being heard and the
underrun count are pulled from the controller on a timer (20 Hz).
"""

from __future__ import annotations

import sys

from collections.abc import Iterable, Sequence
from typing import Any

from textual import on
from textual.actions import parse as parse_action
from textual.app import App, SystemCommand
from textual.screen import Screen

from omnistudio.screens.error import ErrorModal
from omnistudio.screens import messages as msg
from omnistudio.screens.main import BINDINGS, MainScreen
from omnistudio.screens.quit import EXPORTING, QuitDialog, render_in_progress
from omnistudio.studio import events as ev
from omnistudio.studio.adapters import AnchorRow, duos, load_anchor_rows
from omnistudio.studio.autosave import Autosave
from omnistudio.studio.controller import Studio
from omnistudio.studio.playback import word_in_text
from omnistudio.studio.welcome import EXAMPLE_SCRIPT, first_anchor
from omnistudio.take.link import graph_status
from omnistudio.widgets.anchor_picker import AnchorPicker
from omnistudio.widgets.lufs_meter import LufsMeter
from omnistudio.widgets.script_editor import ScriptEditor
from omnistudio.widgets.take_strip import TakeStrip
from omnistudio.widgets.telemetry import Telemetry
from omnistudio.widgets.transport import Transport

POLL_HZ = 20


class StudioApp(App[None]):
    CSS_PATH = "studio.tcss"
    TITLE = "OmniStudio"

    def __init__(self, studio: Studio, rows: Sequence[AnchorRow] | None = None, autosave: Autosave | None = None,
                 duo_list: Sequence[tuple[str, str, float, tuple[str, ...]]] | None = None, live: bool = True,
                 subtitle: str = "", banner: str | None = None, welcome: bool = True) -> None:
        super().__init__()
        self.studio = studio
        self.rows = rows
        self.autosave = autosave or Autosave()
        self.duo_list = duo_list
        self._listed_duos = duo_list is None  # duos come from the engine's roster unless given
        self.live = live  # False: no polling (snapshot tests feed the widgets fixed values)
        self.sub_title = subtitle
        self.banner = banner  # shown above the editor (e.g. the demo model's notice)
        self.welcome = welcome  # first start: an anchor selected, the example script in an empty editor
        self.sentences: dict[int, tuple[int, int]] = {}
        self.takes: ev.TakesChanged | None = None  # the project's takes, as last reported
        self._duo_index = -1
        self.rendering_detail = ""  # what the render in progress does, as the engine state said ("exporting X.wav")

    async def on_mount(self) -> None:
        # The engine thread runs Python between torch ops; a short switch interval hands the GIL
        # back to the audio callback (and the UI) within a millisecond instead of five.
        sys.setswitchinterval(0.001)
        screen = MainScreen()
        await self.push_screen(screen)
        picker = screen.query_one(AnchorPicker)
        picker.lang = self.studio.settings.language
        picker.set_rows(self.rows if self.rows is not None else self._roster_rows())
        picker.set_presets(self.studio.takes.presets)  # the project's duo presets
        if not self.studio.anchor and self.welcome:
            self.studio.select(first_anchor([row.id for row in picker.rows]))
        if self.studio.anchor:
            picker.selected = self.studio.anchor
        restored = self.autosave.restore()
        project = self.studio.takes.project
        if project is not None:
            screen.query_one(ScriptEditor).load_text(project.script)
        elif restored:
            screen.query_one(ScriptEditor).load_text(restored)
            self.notify("restored the autosaved script", timeout=3)
        elif self.welcome:
            screen.query_one(ScriptEditor).load_text(EXAMPLE_SCRIPT)
        screen.update_morph_label()
        self.studio.report = self._report
        self.studio.takes.announce()  # a reopened project's take counts and list, before any take action
        try:
            self.studio.start()
        except Exception as exc:  # noqa: BLE001 - e.g. audio forced on a machine without one
            self.push_screen(ErrorModal("Cannot start", str(exc)))
        output = "no audio device (silent)" if self.studio.silent else "audio: " + (
            self.studio.settings.output_device or "default device")
        screen.query_one(Transport).output = output
        if self.live:
            self.set_interval(1 / POLL_HZ, self.pull)
        self.set_interval(1.0, self._keep)

    def _roster_rows(self) -> list[AnchorRow]:
        try:
            # this machine's roster until the engine's own list arrives (VoicesListed): asking a remote
            # link here would put a network call on the UI thread
            return load_anchor_rows(self.studio.engine)
        except Exception as exc:  # noqa: BLE001 - the studio still edits and exports
            self.notify(f"roster not loaded: {exc}", severity="error")
            return []

    def next_duo(self) -> tuple[str, str, float, tuple[str, ...]] | None:
        if self.duo_list is None:
            self.duo_list = duos(self.studio.engine)  # the engine's own duos replace these (VoicesListed)
        if not self.duo_list:
            return None
        self._duo_index = (self._duo_index + 1) % len(self.duo_list)
        return self.duo_list[self._duo_index]

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, MainScreen):
            for binding in BINDINGS:
                _, name, params = parse_action(binding.action)
                if screen.check_action(name, params) is False:
                    continue  # e.g. F12's panel switch on a wide screen, or the panel already shown
                yield SystemCommand(f"{binding.description} ({binding.key})", f"studio: {binding.action}",
                                    lambda action=binding.action: self.run_action(action, screen))

    async def action_quit(self) -> None:
        """Ctrl+Q: quit at once when idle; while a render or an export runs, say what would be lost and ask
        (Ctrl+Q again on the question quits)."""
        lost = render_in_progress(self.studio.state, self.studio.rendering_play, self.rendering_detail,
                                  self.studio.commands.user_waiting())
        if lost is None or isinstance(self.screen, QuitDialog):
            self.exit()
            return

        def answered(quit: bool | None) -> None:
            if quit:
                self.exit()

        self.push_screen(QuitDialog(lost), answered)

    @property
    def main_screen(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    # --------------------------------------------------------- pulled state
    def pull(self) -> None:
        """Timer: meter, sentence and word highlight, transport and underruns from the controller."""
        screen = self.main_screen
        if screen is None or not screen.is_mounted or not screen.query(LufsMeter):
            return
        snap = self.studio.poll()
        with self.batch_update():
            m = snap.meter
            screen.query_one(LufsMeter).update_reading(m.momentary, m.short_term, m.integrated, m.true_peak)
            span = self.sentences.get(snap.sentence) if snap.sentence is not None else None
            editor = screen.query_one(ScriptEditor)
            word = snap.word
            # the word where the editor still says the sentence being heard; else the sentence alone
            at = None if word is None else word_in_text(editor.text, span, word.sentence, (word.start, word.end))
            editor.set_playing(span if snap.playing else None, at)
            transport = screen.query_one(Transport)
            transport.state = "paused" if snap.paused and snap.playing else ("playing" if snap.playing else "stopped")
            transport.position = (f"sentence {snap.sentence + 1}/{len(self.sentences)}"
                                  if span is not None and snap.sentence is not None and snap.playing else "")
            screen.query_one(Telemetry).underruns = snap.underruns
            screen.query_one(Telemetry).device_underruns = snap.device_underruns  # PortAudio's flag
            screen.query_one(Telemetry).backbone = getattr(self.studio.engine, "compile_state", "off")
            screen.query_one(Telemetry).graphs = graph_status(self.studio.engine)
            screen.query_one(AnchorPicker).show_marks(*self.studio.prebuild.marks())  # building / ready
            view = self.studio.view  # the take's waveform and loudness history (the meter's, just fed)
            screen.query_one(TakeStrip).show(view.shape, view.now(), view.history, self.studio.settings.target_lufs,
                                             self.studio.meter.sample_rate)

    # --------------------------------------------------------- pushed events (one message each)
    def _report(self, event: ev.StudioEvent) -> None:
        """The controller's report (any thread): its event posted as the message that carries it."""
        message = msg.message_for(event)
        if message is not None:
            self.post_message(message)

    def _telemetry(self) -> tuple[MainScreen, Telemetry] | None:
        """The main screen and its telemetry, or None while starting or closing (an event from the engine
        thread may arrive with no screen)."""
        screen = self.main_screen
        if screen is None or not screen.is_mounted or not screen.query(Telemetry):
            return None
        return screen, screen.query_one(Telemetry)

    @on(msg.EngineStateChanged)
    def _engine_state(self, message: msg.EngineStateChanged) -> None:
        event = message.event
        if event.state != "rendering":
            self.rendering_detail = ""
        elif not self.rendering_detail.startswith(EXPORTING):  # an export's voices being built: still its export
            self.rendering_detail = event.detail
        if (shown := self._telemetry()) is not None:
            shown[1].engine_state, shown[1].detail = event.state, event.detail

    @on(msg.SentenceRendered)
    def _sentence_rendered(self, message: msg.SentenceRendered) -> None:
        if (shown := self._telemetry()) is not None:
            shown[1].render_s, shown[1].rtf = message.event.render_s, message.event.rtf

    @on(msg.PlaybackStarted)
    def _playback_started(self, message: msg.PlaybackStarted) -> None:
        if (shown := self._telemetry()) is not None:
            shown[1].ttfa = message.event.ttfa_s

    @on(msg.EngineReady)
    def _engine_ready(self, message: msg.EngineReady) -> None:
        if (shown := self._telemetry()) is not None:
            shown[1].where = f"{message.event.model} on {message.event.device}"

    @on(msg.VoicesListed)
    def _voices_listed(self, message: msg.VoicesListed) -> None:
        if (shown := self._telemetry()) is None:
            return
        if self.rows is None:  # the engine's roster: this machine's, or the server's
            shown[0].query_one(AnchorPicker).set_rows(message.event.rows)
        if self._listed_duos:
            self.duo_list = list(message.event.duos)

    @on(msg.NoticeRaised)
    def _notice(self, message: msg.NoticeRaised) -> None:
        if self._telemetry() is not None:
            self.notify(message.event.message, severity=message.event.severity, timeout=5)

    @on(msg.FailureRaised)
    def _failure(self, message: msg.FailureRaised) -> None:
        if self._telemetry() is not None:
            self.push_screen(ErrorModal(message.event.title, message.event.message))

    @on(msg.TakesChanged)
    def _takes_changed(self, message: msg.TakesChanged) -> None:
        if (shown := self._telemetry()) is not None:
            self.takes = message.event
            self._show_takes(shown[0], message.event)

    @on(msg.LexiconChanged)
    def _lexicon_changed(self, message: msg.LexiconChanged) -> None:
        if (shown := self._telemetry()) is None:
            return
        if message.event.added:
            self.notify(f"lexicon: {message.event.added}", timeout=4)
        shown[0].show_spoken()

    @on(msg.Exported)
    def _exported(self, message: msg.Exported) -> None:
        if self._telemetry() is None:
            return
        event = message.event
        loud = event.report.integrated_lufs
        self.notify(f"exported {event.path}" + (f" ({loud:.1f} LUFS)" if loud is not None else "")
                    + _captions_note(event.report), timeout=8)

    def _show_takes(self, screen: MainScreen, event: ev.TakesChanged) -> None:
        """Gutter marks per script row (take count per sentence, ✗ on a failed check) and the take list."""
        editor = screen.query_one(ScriptEditor)
        marks: dict[int, list[str]] = {}
        rendered = any(event.takes)  # a project with no take yet shows no counts (all would be 0)
        for sentence in self.studio.parse(editor.text) if rendered else []:
            if sentence.id < len(event.takes):
                row = editor.text.count("\n", 0, sentence.start)
                mark = f"{len(event.takes[sentence.id])}" + ("✗" if event.failed[sentence.id] else "")
                marks.setdefault(row, []).append(mark)
        editor.set_take_marks({row: " ".join(parts) for row, parts in marks.items()})
        screen.show_takes()

    def _keep(self) -> None:
        """Every second: the script to the autosave file and, with a project open, into the project."""
        self.autosave.flush()
        self.studio.takes.keep_script()

    def on_unmount(self) -> None:
        self._keep()  # the project's script is saved before the engine thread ends (its queue is in order)
        self.studio.close()


def _captions_note(report: ev.ExportReport) -> str:
    """What an export wrote besides the audio: its caption files and how their words were timed."""
    files = report.captions
    if not files:
        return ""
    words, estimated = report.words, report.words_estimated
    if not report.measured:
        how = "words estimated by syllables"
    elif estimated == 0:
        how = "words measured by Whisper"
    else:
        how = f"words measured by Whisper, {estimated} of {words} estimated (a language it cannot hear)"
    return f"; captions {', '.join(files)} ({how})"
