"""An error the user must read; the studio keeps working behind it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label


class ErrorModal(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter", "dismiss", "Close")]

    def __init__(self, title: str, message: str) -> None:
        super().__init__()
        self.title_text = title
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="error"):
            yield Label(self.title_text, id="dialog-title")
            yield Label(self.message, id="error-message", markup=False)
            yield Button("Close", id="close", variant="error")

    def on_button_pressed(self) -> None:
        self.dismiss()
