"""The studio's one main screen: picker | script + transport | meter, morph, telemetry.

Actions live here (bindings shown in the footer); the app adds them to the command palette.
Everything slow goes through the controller, which never blocks this thread.

The layout follows the terminal's width (:meth:`MainScreen.fit`, on mount, resize and resume; the UI
only: nothing here reaches the controller). From ``WIDE`` columns the anchor list, the editor and the
meter side by side; below it the two side columns fold into one panel on the right (the ``-narrow``
class), the anchor list or the meter, switched with F12. Where not every key fits, the footer shows the
keys of the focus's context (widgets/footer.py; every key still works, F1 lists them all, and they are
in the command palette). The editor keeps at least ``EDITOR_SHARE`` of the width either way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Header, Label, Static
from textual.widgets.text_area import Document

from omnistudio.commit import atomic_write_bytes
from omnistudio.errors import UserError
from omnistudio.screens.export import AskDialog, ExportChoice, export_dialog
from omnistudio.screens.keys import KeysScreen
from omnistudio.screens.lexicon import LexiconDialog
from omnistudio.screens.settings import SettingsScreen
from omnistudio.screens.studio_screen import StudioHost as StudioHost
from omnistudio.screens.studio_screen import StudioScreen
from omnistudio.script import read_script
from omnistudio.studio.lexicon import unresolved, word_at
from omnistudio.studio.settings import StudioSettings, save_settings
from omnistudio.widgets.anchor_picker import AnchorPicker
from omnistudio.widgets.footer import StudioFooter
from omnistudio.widgets.lufs_meter import LufsMeter
from omnistudio.widgets.morph_slider import MorphSlider
from omnistudio.widgets.script_editor import ScriptEditor
from omnistudio.widgets.spoken_line import SpokenLine
from omnistudio.widgets.take_list import TakeList
from omnistudio.widgets.take_strip import TakeStrip
from omnistudio.widgets.telemetry import Telemetry
from omnistudio.widgets.transport import Transport

if TYPE_CHECKING:
    from omnistudio.text.lexicon import Entry


BINDINGS = [
    Binding("f5", "play", "Play", id="play", priority=True),
    Binding("f6", "play_cursor", "From cursor", id="play_cursor", priority=True),
    Binding("f7", "pause", "Pause", id="pause", priority=True),
    Binding("f8", "stop", "Stop", id="stop", priority=True),
    Binding("ctrl+e", "export", "Export", id="export", priority=True),
    Binding("ctrl+t", "audition", "Audition", id="audition", priority=True,
            tooltip="the highlighted anchor reads the paragraph under the cursor"),
    Binding("ctrl+r", "flip", "A/B audition", id="flip", priority=True,
            tooltip="play the audition before the last one again (the last two anchors or ratios)"),
    Binding("ctrl+n", "assign", "Assign anchor", id="assign", priority=True,
            tooltip="the highlighted anchor speaks the paragraph under the cursor (its tag rewritten)"),
    Binding("ctrl+l", "toggle_lang", "es/en", id="toggle_lang", priority=True),
    Binding("ctrl+d", "next_duo", "Duo", id="next_duo", priority=True),
    Binding("alt+p", "save_preset", "Keep duo preset", id="save_preset", show=False, priority=True,
            tooltip="keep the blend under the cursor as a named duo preset of the project"),
    Binding("ctrl+b", "set_partner", "Partner", id="set_partner", show=False, priority=True),
    Binding("ctrl+o", "open", "Open", id="open", show=False, priority=True),
    Binding("ctrl+s", "save", "Save", id="save", show=False, priority=True),
    Binding("f2", "settings", "Settings", id="settings", priority=True),
    Binding("f1", "keys", "Keys", id="keys", priority=True, tooltip="every key of the studio, grouped"),
    Binding("f3", "toggle_spoken", "Said", id="toggle_spoken", priority=True,
            tooltip="show or hide what the sentence under the cursor is said as"),
    # a narrow screen's one side panel: F12 shows the other one (the footer names it; none when wide)
    Binding("f12", "panel('meter')", "Meter", id="panel_meter", priority=True,
            tooltip="show the loudness meter, morph, telemetry and takes in the side panel"),
    Binding("f12", "panel('anchors')", "Anchors", id="panel_anchors", priority=True,
            tooltip="show the anchor list in the side panel"),
    Binding("ctrl+g", "take_strip", "Take strip", id="take_strip", show=False, priority=True,
            tooltip="focus the take's waveform: left/right pick a sentence, enter moves the cursor there"),
    Binding("f4", "add_word", "Add word to lexicon", id="add_word", show=False, priority=True),
    Binding("f9", "regenerate", "Retake", id="regenerate", show=False, priority=True),
    Binding("f10", "compare", "A/B", id="compare", show=False, priority=True),
    Binding("alt+left", "step_take(-1)", "Prev take", id="prev_take", show=False, priority=True),
    Binding("alt+right", "step_take(1)", "Next take", id="next_take", show=False, priority=True),
    Binding("ctrl+z", "undo", "Undo edit", id="undo_edit", show=False),  # the editor's undo, from the picker too
]
PICKER_W, SIDE_W = 28, 36  # the side columns on a wide screen (studio.tcss sets the same widths)
PANEL_W = 30  # the one side panel on a narrow screen
EDITOR_SHARE = 0.6  # the least share of the width the editor keeps
WIDE = round((PICKER_W + SIDE_W) / (1 - EDITOR_SHARE))  # 160: from here both side columns fit beside the editor
FOOTER_FULL = 140  # from here the (compact) footer has room for every key, a take list's too; below, only these:
FOOTER_FEW = {"play", "pause", "stop", "export", "settings", "panel"}


class MainScreen(StudioScreen):
    """The studio's layout and its actions (the paragraph-bound ones are :class:`StudioScreen`'s)."""

    BINDINGS: ClassVar[list[BindingType]] = [*BINDINGS]
    last_export: ExportChoice | None = None  # the export dialog's last answer (path, captions)
    panel = "anchors"  # on a narrow screen, the side panel shown: anchors | meter
    fitted = 0  # the terminal width the layout was last fitted to (fit)

    def compose(self) -> ComposeResult:
        studio = self.host.studio
        yield Header()
        banner = getattr(self.app, "banner", None)
        if banner:
            yield Static(banner, id="banner")
        with Horizontal(id="body"):
            yield AnchorPicker(id="picker")
            with Vertical(id="center"):
                yield ScriptEditor(id="editor")
                yield TakeStrip(id="take-strip")  # the take's waveform and loudness history (ctrl+g: its sentences)
                yield Transport(id="transport")
            with Vertical(id="side"):
                yield Label("Loudness", classes="section")
                yield LufsMeter(studio.settings.target_lufs, id="meter")
                yield Label("Morph", classes="section", id="morph-label")
                yield MorphSlider(1.0, id="morph")
                yield Label("Telemetry", classes="section")
                yield Telemetry(id="telemetry")
                project = studio.takes.project is not None  # the take list shows only with a project
                yield Label("Takes", classes="section", id="takes-label").set_styles(f"display: {'block' if project else 'none'};")
                yield TakeList(id="takes").set_styles(f"display: {'block' if project else 'none'};")
        yield SpokenLine(id="spoken")
        yield StudioFooter(FOOTER_FEW)

    # ------------------------------------------------------------ layout (the UI only)
    def on_mount(self) -> None:
        self.fit(self.app.size.width)

    def on_resize(self, event: events.Resize) -> None:
        self.fit(event.size.width)

    def on_screen_resume(self) -> None:
        self.fit(self.app.size.width)  # a resize while a dialog was open

    @property
    def narrow(self) -> bool:
        return self.has_class("-narrow")

    def fit(self, width: int) -> None:
        """Fold the side columns into one panel below ``WIDE`` columns (a compact footer), and show only
        the main keys in the footer below ``FOOTER_FULL``; unfold them from there."""
        self.fitted = width
        self.set_class(width < FOOTER_FULL, "-few-keys")
        narrow = width < WIDE
        if narrow != self.narrow:
            self.set_class(narrow, "-narrow")
            self.query_one(StudioFooter).compact = narrow
            self._show_panel()

    def _show_panel(self) -> None:
        self.set_class(self.panel == "meter", "-panel-meter")
        self.refresh_bindings()
        focused = self.focused
        if self.narrow and focused is not None and self._panel_of(focused) not in (None, self.panel):
            self.editor.focus()  # never leave the focus in a panel that is not shown

    def _panel_of(self, widget: Widget) -> str | None:
        """The side panel ``widget`` is in (anchors | meter), None for the editor and the rest."""
        ancestors = widget.ancestors_with_self
        picker, side = self.query_one("#picker"), self.query_one("#side")
        return "anchors" if picker in ancestors else ("meter" if side in ancestors else None)

    @property
    def focus_chain(self) -> list[Widget]:
        """Tab's order: the take strip (Ctrl+G) after the side column, so Tab reaches the morph slider first."""
        chain = super().focus_chain
        strips = [w for w in chain if isinstance(w, TakeStrip)]
        return [w for w in chain if not isinstance(w, TakeStrip)] + strips

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        panel = self._panel_of(event.widget)
        if self.narrow and panel is not None and panel != self.panel:
            self.panel = panel  # the focus went into the folded panel (e.g. the take list): show it
            self._show_panel()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "panel":  # F12 names the panel it would show; it does nothing on a wide screen
            return self.narrow and parameters[0] != self.panel
        return True

    def action_panel(self, name: str) -> None:
        self.panel = name
        self._show_panel()
        if self.narrow and name == "anchors":
            self.query_one("#anchor-list").focus()  # F12 then arrows and enter pick an anchor

    # ------------------------------------------------------------ helpers
    # ------------------------------------------------------------ actions
    def action_play(self) -> None:
        self._start(0)

    def action_play_cursor(self) -> None:
        self._start(self.editor.cursor_offset)

    def _start(self, offset: int) -> None:
        sentences = self._try(self.studio.play, self.editor.text, offset)
        if sentences is not None:
            self.host.sentences = {s.id: (s.start, s.end) for s in sentences}

    def action_pause(self) -> None:
        self.studio.toggle_pause()

    def action_stop(self) -> None:
        self.studio.stop()
        self.editor.set_playing(None)

    def action_toggle_lang(self) -> None:
        picker = self.query_one(AnchorPicker)
        picker.lang = "es" if picker.lang == "en" else "en"
        self.studio.select(self.studio.anchor, picker.lang)
        self.notify(f"language: {picker.lang}", timeout=2)
        self.show_spoken()
        self.editor.identify_languages(picker.lang)  # untagged paragraphs are read in the other language now

    def action_settings(self) -> None:
        def done(settings: StudioSettings | None) -> None:
            if settings is not None:
                self._use_settings(settings)

        self.app.push_screen(SettingsScreen(self.studio.settings), done)

    def _use_settings(self, settings: StudioSettings) -> None:
        """New settings: the controller's, the meter's target, saved."""
        self._try(self.studio.apply_settings, settings)
        self.query_one(LufsMeter).target = self.studio.settings.target_lufs
        self._try(save_settings, self.studio.settings)

    def action_export(self) -> None:
        def done(choice: ExportChoice | None) -> None:
            if choice is not None:
                self.last_export = choice  # the next export starts from it (this session)
                if choice.profile and choice.profile != self.studio.settings.rule().key:
                    self._use_settings(replace(self.studio.settings, profile=choice.profile))  # meter, monitor, export
                self._try(self.studio.export, self.editor.text, choice.path, choice.captions, choice.measure,
                          choice.delivery)

        project = self.studio.project  # the project's name, beside it; else take.wav here
        default = project.path.with_suffix(".wav") if project is not None else Path.cwd() / "take.wav"
        self.app.push_screen(export_dialog(default, self.studio.settings.rule(), self.last_export), done)

    def action_open(self) -> None:
        def done(value: str | None) -> None:
            if value:
                text = self._try(read_script, Path(value).expanduser())
                if text is not None:
                    self.editor.load_text(text)

        self.app.push_screen(AskDialog("Open script", "a UTF-8 text file", str(Path.cwd() / "script.txt"), "Open"), done)

    def action_save(self) -> None:
        def done(value: str | None) -> None:
            if value:
                path, text = Path(value).expanduser(), self.editor.text
                self._try(atomic_write_bytes, path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
                self.notify(f"saved {path}", timeout=3)

        self.app.push_screen(AskDialog("Save script", "written atomically", str(Path.cwd() / "script.txt"), "Save"), done)

    # ------------------------------------------------------------ the text front-end (F3, F4)
    def action_toggle_spoken(self) -> None:
        self.query_one(SpokenLine).toggle_class("shown")
        self.show_spoken()

    def show_spoken(self) -> None:
        """The spoken form of the sentence under the cursor, when F3 shows it."""
        line = self.query_one(SpokenLine)
        if not line.has_class("shown"):
            return
        sentence = self.sentence_under_cursor()
        if sentence is None:
            line.clear("spoken: no sentence under the cursor")
            return
        spoken = self.studio.lexicon.spoken(sentence.text, sentence.lang)
        line.show(sentence.lang, spoken.text, [(s.spoken_start, s.spoken_end) for s in spoken.spans],
                  unresolved(spoken))

    def action_add_word(self) -> None:
        word = self.editor.selected_text.strip() or word_at(self.editor.text, self.editor.cursor_offset)
        if not word:
            self.notify("put the cursor on a word (or select a phrase) to add it to the lexicon", severity="warning")
            return
        sentence = self.sentence_under_cursor()

        def done(result: tuple[Entry, bool] | None) -> None:
            if result is not None:
                try:
                    self.studio.lexicon.add(*result)
                except UserError as exc:
                    self.notify(str(exc), severity="error")

        lang = sentence.lang if sentence is not None else self.studio.settings.language
        self.app.push_screen(LexiconDialog(word, lang, self.studio.takes.project is not None), done)

    # ------------------------------------------------------------ takes (a project is open)
    def sentence_at_cursor(self) -> int | None:
        sentence = self.sentence_under_cursor()
        return None if sentence is None else sentence.id

    def _on_sentence(self, fn: Callable[..., object], *args: object) -> None:
        index = self.sentence_at_cursor()
        if index is not None:
            self._try(fn, self.editor.text, index, *args)

    def action_regenerate(self) -> None:
        self._on_sentence(self.studio.takes.regenerate)

    def action_step_take(self, offset: int) -> None:
        self._on_sentence(self.studio.takes.step, offset)

    def action_compare(self) -> None:
        self._on_sentence(self.studio.takes.compare)

    def show_takes(self) -> None:
        """The take list follows the sentence under the cursor (from the last TakesChanged)."""
        changed = getattr(self.app, "takes", None)
        index = self.sentence_at_cursor()
        rows = changed.takes[index] if changed is not None and index is not None and index < len(changed.takes) else ()
        self.query_one(TakeList).show(index, rows)

    @on(TakeList.OptionSelected, "#takes")
    def _choose_take(self, event: TakeList.OptionSelected) -> None:
        takes = self.query_one(TakeList)
        if takes.sentence is not None and event.option.id:
            self._try(self.studio.takes.choose, takes.sentence, event.option.id)

    @on(TakeList.Undo)
    def _undo_take(self, event: TakeList.Undo) -> None:
        self._try(self.studio.takes.undo, event.sentence)

    @on(ScriptEditor.SelectionChanged)
    def _cursor_moved(self) -> None:
        self.show_takes()
        self.show_spoken()
        self.morph.sync()

    # ------------------------------------------------------------ the take strip
    def action_take_strip(self) -> None:
        self.query_one(TakeStrip).focus()

    @on(TakeStrip.Picked)
    def _go_to_sentence(self, event: TakeStrip.Picked) -> None:
        """A sentence picked in the take strip: the editor's cursor to its start (as last played)."""
        span = self.host.sentences.get(event.sentence)
        if span is not None:
            document = self.editor.document
            assert isinstance(document, Document)  # a TextArea's (DocumentBase names no index lookup)
            self.editor.move_cursor(document.get_location_from_index(min(span[0], len(self.editor.text))))
            self.editor.focus()

    # ------------------------------------------------------------ widget events
    @on(AnchorPicker.Picked)
    def _picked(self, event: AnchorPicker.Picked) -> None:
        preset = self.studio.takes.presets.get(event.anchor)
        if preset is not None:  # a duo preset: its two anchors and ratio
            self.use_duo(preset.a, preset.b, preset.alpha)
            return
        self.studio.select(event.anchor, event.picker.lang)  # (an anchor picked is no longer the partner)
        self.update_morph_label()

    @on(MorphSlider.Changed)
    def _morph(self, event: MorphSlider.Changed) -> None:
        if not self.morph.moved(event.value):
            self.notify("choose a partner: highlight an anchor and press ctrl+b, or ctrl+d for a duo",
                        severity="warning", timeout=3)

    @on(AnchorPicker.Highlighted)
    def _highlighted(self, event: AnchorPicker.Highlighted) -> None:
        if event.anchor not in self.studio.takes.presets:  # an anchor's prompt built in the background
            self.studio.prebuild.highlight(event.anchor, event.lang)

    @on(ScriptEditor.Changed)
    def _edited(self, event: ScriptEditor.Changed) -> None:
        self.host.autosave.save(event.text_area.text)
        self.studio.takes.edited(event.text_area.text)
        self.studio.prebuild.script(event.text_area.text)  # the script's voices built in the background
        self.show_spoken()
        self.morph.sync()
        self.editor.identify_languages(self.studio.settings.language)

    # ------------------------------------------------------------ F1: the studio's keys
    def action_keys(self) -> None:
        self.app.push_screen(KeysScreen(self.BINDINGS))
