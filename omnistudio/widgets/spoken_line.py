"""The spoken form of the sentence under the cursor: what the model is asked to say (F3 toggles it).

What the front-end changed is tinted; what it could not resolve (kept as written, e.g. an unknown
symbol) is marked in reverse red, and the first such warning is named after the text."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

CHANGED_STYLE = Style(color="cyan")
UNRESOLVED_STYLE = Style(color="white", bgcolor="red", bold=True)


class SpokenLine(Static):
    """Up to three wrapped lines under the script; hidden until toggled."""

    DEFAULT_CSS = """
    SpokenLine { height: auto; max-height: 3; width: 1fr; padding: 0 1; display: none; }
    SpokenLine.shown { display: block; }
    """

    text: str = ""  # the spoken text shown ("" when there is no sentence)
    marked: tuple[tuple[int, int], ...] = ()  # the unresolved ranges of ``text``

    def show(self, lang: str, text: str, changed: list[tuple[int, int]],
             unresolved: list[tuple[int, int, str]]) -> None:
        """The spoken ``text`` in ``lang``; ``changed`` and ``unresolved`` are (start, end) ranges of it."""
        self.text, self.marked = text, tuple((a, b) for a, b, _ in unresolved)
        line = Text(f"spoken {lang}: ", style="dim")
        body = Text(text)
        for a, b in changed:
            body.stylize(CHANGED_STYLE, a, b)
        for a, b, _ in unresolved:
            body.stylize(UNRESOLVED_STYLE, a, b)
        line.append_text(body)
        if unresolved:
            more = f" (+{len(unresolved) - 1})" if len(unresolved) > 1 else ""
            line.append(f"  ⚠ {unresolved[0][2]}{more}", style="bold red")
        self.update(line)

    def clear(self, note: str) -> None:
        self.text, self.marked = "", ()
        self.update(Text(note, style="dim"))
