"""Path dialogs: export (WAV or FLAC by extension, normalised to the settings' target), open, save."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class PathDialog(ModalScreen[Path | None]):
    """Asks for a file path; returns it, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, note: str, default: Path, button: str) -> None:
        super().__init__()
        self.title_text, self.note, self.default, self.button = title, note, default, button

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title")
            yield Label(self.note)
            yield Input(str(self.default), id="export-path")
            with Horizontal(classes="buttons"):
                yield Button(self.button, id="export", variant="primary")
                yield Button("Cancel", id="cancel")

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#export")
    def _export(self) -> None:
        value = self.query_one("#export-path", Input).value.strip()
        if value:
            self.dismiss(Path(value).expanduser())

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def export_dialog(default: Path, target_lufs: float) -> PathDialog:
    return PathDialog("Export", f"normalised to {target_lufs:g} LUFS, true peak ≤ -1 dBTP; .wav or .flac; "
                      "a .json sidecar is written next to it", default, "Export")
