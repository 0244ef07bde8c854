"""Path dialogs: export (WAV or FLAC by extension, normalised to the settings' target, with captions
beside it if asked), open, save."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select

from omnistudio.captions.formats import CaptionOptions
from omnistudio.audio.profiles import RULES, DeliveryFormat, LoudnessRule
from omnistudio.errors import UserError
from omnistudio.screens.settings import rule_select
from omnistudio.widgets.checkbox import StudioCheckbox


class AskDialog(ModalScreen[str | None]):
    """Asks for one line of text (a file path, a name); returns it stripped, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, note: str, default: str, button: str) -> None:
        super().__init__()
        self.title_text, self.note, self.default, self.button = title, note, default, button

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title")
            yield Label(self.note)
            yield Input(self.default, id="export-path")
            with Horizontal(classes="buttons"):
                yield Button(self.button, id="export", variant="primary")
                yield Button("Cancel", id="cancel")

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#export")
    def _export(self) -> None:
        value = self.query_one("#export-path", Input).value.strip()
        if value:
            self.dismiss(value)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True)
class ExportChoice:
    """What the export dialog asks for: the audio file, its captions (None: none), whether their words are
    measured by the speech model (else estimated by syllables), and the loudness rule it is made to (a
    key of audio/profiles.RULES; empty: the settings')."""

    path: Path
    captions: CaptionOptions | None = None
    measure: bool = True
    profile: str = ""
    delivery: DeliveryFormat | None = None  # channels, rate, bits; None: the rule's


# The files the dialog offers: the rule's own, or one of these (channels, rate, bits).
FILES = (DeliveryFormat(2, 48_000, 24), DeliveryFormat(1, 48_000, 24), DeliveryFormat(2, 48_000, 16),
         DeliveryFormat(1, 24_000, 32))


def file_label(delivery: DeliveryFormat) -> str:
    """"48 kHz 24-bit dual-mono", "24 kHz float mono", "48 kHz 16-bit dual-mono (dithered)"."""
    bits = "float" if delivery.bits == 32 else f"{delivery.bits}-bit"
    side = "dual-mono" if delivery.channels == 2 else "mono"
    return f"{delivery.sample_rate / 1000:g} kHz {bits} {side}" + (" (dithered)" if delivery.bits == 16 else "")


def _file_key(delivery: DeliveryFormat | None) -> str:
    return "" if delivery is None else f"{delivery.channels}/{delivery.sample_rate}/{delivery.bits}"


class ExportDialog(ModalScreen[ExportChoice | None]):
    """The export path and, beside the file, captions: SRT and/or WebVTT (with karaoke word times), their
    words measured by Whisper where it hears the language, else estimated. Returns an
    :class:`ExportChoice`, or None when cancelled; a choice the captions cannot take is shown, not returned."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: Path, rule: LoudnessRule, last: ExportChoice | None = None) -> None:
        super().__init__()
        self.title_text, self.button = "Export", "Export"
        self.last = last or ExportChoice(default, profile=rule.key)
        self.rule = RULES.get(self.last.profile, rule)
        self.default = self.last.path

    @staticmethod
    def describe(rule: LoudnessRule) -> str:
        return (f"{rule.name.split(' (')[0]}: {rule.target_lufs:g} LUFS, peak ≤ {rule.true_peak_dbtp:g} dBTP, "
                f"{file_label(rule.delivery)}\n.wav (Broadcast Wave), .flac, .mp3 or .m4a, with a .json sidecar")

    def compose(self) -> ComposeResult:
        captions = self.last.captions
        formats = captions.formats if captions is not None else ()
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title")
            yield Label(self.describe(self.rule), id="export-note")
            yield Input(str(self.default), id="export-path")
            with Horizontal(id="export-rule"):
                yield Label("Loudness")
                yield rule_select(self.rule.key, "export-profile")
            with Horizontal(id="export-file"):
                yield Label("File")
                yield Select([("as the rule says", ""), *((file_label(f), _file_key(f)) for f in FILES)],
                             value=_file_key(self.last.delivery), allow_blank=False, id="export-format", compact=True)
            with Horizontal(id="export-captions"):
                yield Label("Captions")
                yield StudioCheckbox("SRT", "srt" in formats, id="cap-srt")
                yield StudioCheckbox("WebVTT", "vtt" in formats, id="cap-vtt")
                yield StudioCheckbox("karaoke words", captions is not None and captions.vtt_words, id="cap-words",
                               tooltip="each word's start as a WebVTT cue timestamp")
            yield StudioCheckbox("measure words with Whisper (else estimated)", self.last.measure, id="cap-measure")
            yield Label("", id="export-error")
            with Horizontal(classes="buttons"):
                yield Button(self.button, id="export", variant="primary")
                yield Button("Cancel", id="cancel")

    def choice(self, path: Path) -> ExportChoice:
        """The dialog's values, checked as ``render --captions`` checks its flags."""
        formats = tuple(fmt for fmt in ("srt", "vtt") if self.query_one(f"#cap-{fmt}", Checkbox).value)
        words = self.query_one("#cap-words", Checkbox).value
        if words and "vtt" not in formats:
            raise UserError("karaoke word times go in the WebVTT file: tick WebVTT too")
        captions = CaptionOptions(formats, vtt_words=words).validated() if formats else None
        chosen = str(self.query_one("#export-format", Select).value)
        delivery = next((f for f in FILES if _file_key(f) == chosen), None)
        return ExportChoice(path, captions, self.query_one("#cap-measure", Checkbox).value,
                            str(self.query_one("#export-profile", Select).value), delivery)

    @on(Select.Changed, "#export-profile")
    def _rule(self, event: Select.Changed) -> None:
        self.query_one("#export-note", Label).update(self.describe(RULES[str(event.value)]))

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#export")
    def _export(self) -> None:
        value = self.query_one("#export-path", Input).value.strip()
        if not value:
            return
        try:
            self.dismiss(self.choice(Path(value).expanduser()))
        except UserError as exc:
            self.query_one("#export-error", Label).update(f"⚠ {exc}")

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def export_dialog(default: Path, rule: LoudnessRule, last: ExportChoice | None = None) -> ExportDialog:
    return ExportDialog(default, rule, last)
