"""The takes of the sentence under the cursor: Enter chooses one, Ctrl+Z undoes the last choice."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from omnistudio.studio.events import TakeRow


def take_label(number: int, row: TakeRow) -> str:
    check = "" if row.passed is None else (f"  WER {row.wer:.0%} " + ("ok" if row.passed else "✗ failed"))
    return f"{'★' if row.chosen else ' '} take {number}  seed {row.seed}  {row.duration_s:.1f}s{check}"


class TakeList(OptionList):
    """Lists :class:`TakeRow` s of one sentence; posts :class:`TakeList.Undo` on Ctrl+Z."""

    BINDINGS = [Binding("ctrl+z", "undo", "Undo choice", id="undo_take")]

    @dataclass
    class Undo(Message):
        sentence: int

    sentence: int | None = None

    def show(self, sentence: int | None, rows: tuple[TakeRow, ...]) -> None:
        self.sentence = sentence
        highlighted = self.highlighted
        self.clear_options()
        self.add_options([Option(take_label(n, row), id=row.id) for n, row in enumerate(rows, start=1)])
        if rows:
            chosen = next((i for i, row in enumerate(rows) if row.chosen), len(rows) - 1)
            self.highlighted = highlighted if highlighted is not None and highlighted < len(rows) else chosen

    def action_undo(self) -> None:
        if self.sentence is not None:
            self.post_message(self.Undo(self.sentence))
