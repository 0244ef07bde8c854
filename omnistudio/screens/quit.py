"""Ctrl+Q while a render or an export runs: say what will be lost, and ask (Quit / Cancel).

When the studio is idle Ctrl+Q quits at once (StudioApp.action_quit asks :func:`render_in_progress` first).
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

EXPORTING = "exporting "  # the controller's engine-state detail while it exports: "exporting NAME.wav"


def render_in_progress(state: str, rendering_play: bool, detail: str, queued: bool = False) -> str | None:
    """What a quit now would lose (e.g. "export of bulletin.wav"), None when nothing renders. ``state`` and
    ``rendering_play``: the controller's; ``detail``: its last engine-state detail; ``queued``: a command of
    the producer's waits for the engine thread (F5 or an export asked a moment ago, not started yet)."""
    if state != "rendering" and not rendering_play:
        return "the play or export just asked for, not started yet" if queued else None
    if detail.startswith(EXPORTING):
        return f"export of {detail[len(EXPORTING):]}"
    if rendering_play:
        return "playback: the sentences not yet rendered"
    return detail or "render"


class QuitDialog(ModalScreen[bool]):
    """Asks before quitting mid-render; returns True to quit. Esc cancels; Ctrl+Q again quits (the app's)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, lost: str) -> None:
        super().__init__()
        self.lost = lost

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="quit"):
            yield Label("Quit?", id="dialog-title")
            yield Label(f"The render in progress ({self.lost}) will be lost.", id="quit-message", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Quit", id="quit", variant="error")
                yield Button("Cancel", id="cancel", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()  # Enter keeps the render; Ctrl+Q again, or Quit, quits

    @on(Button.Pressed, "#quit")
    def _quit(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)
