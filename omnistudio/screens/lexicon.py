"""Add a word to the pronunciation lexicon (F4): what it is said as, its language, which lexicon.

Returns ``(entry, in_project)``, or None when cancelled (Esc). A bad entry (no respelling, phones
outside English...) is one notification line and the dialog stays open; nothing is saved."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

from omnistudio.errors import UserError
from omnistudio.text import Entry

LANGS = [("es", "es"), ("en", "en"), ("both", "both")]
PLACES = [("global", "global"), ("project", "project")]


class LexiconDialog(ModalScreen[tuple[Entry, bool] | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, word: str, lang: str, project: bool) -> None:
        super().__init__()
        self.word, self.lang, self.project = word, lang, project

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Add to the lexicon", id="dialog-title")
            with Grid(id="lexicon-grid"):
                yield Label("word")
                yield Input(self.word, id="lex-word")
                yield Label("said as")
                yield Input("", placeholder="a respelling, or [CMU PHONES] in English", id="lex-say")
                yield Label("language")
                with Horizontal(id="lexicon-where"):
                    yield Select(LANGS, value=self.lang, allow_blank=False, id="lex-lang")
                    if self.project:  # else the global lexicon, the only one there is
                        yield Label("lexicon")
                        yield Select(PLACES, value="project", allow_blank=False, id="lex-place")
            with Horizontal(classes="buttons"):
                yield Button("Add", id="add", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#lex-say", Input).focus()

    def entry(self) -> Entry:
        lang = self.query_one("#lex-lang", Select).value
        say = self.query_one("#lex-say", Input).value.strip()
        return Entry(self.query_one("#lex-word", Input).value, say, None if lang == "both" else str(lang),
                     phones=say.startswith("["))

    @on(Input.Submitted)
    @on(Button.Pressed, "#add")
    def _add(self) -> None:
        try:
            entry = self.entry()
        except UserError as exc:
            self.notify(str(exc), severity="error", timeout=4)
            return
        in_project = self.project and self.query_one("#lex-place", Select).value == "project"
        self.dismiss((entry, in_project))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
