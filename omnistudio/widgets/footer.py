"""The studio's footer: Textual's Footer, whose keys outside ``few`` can hide on a small screen.

Each key it shows is marked ``-extra`` unless its action is one of ``few``; studio.tcss hides the
``-extra`` keys under a ``-few-keys`` screen, so 80 columns show the main keys in full instead of a row
cut off at the edge. Hidden keys still work, and the command palette (ctrl+p) lists them all.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.widgets import Footer


class StudioFooter(Footer):
    def __init__(self, few: Iterable[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.few = frozenset(few)

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            action = getattr(widget, "action", None)  # a FooterKey's action, e.g. "panel('meter')"
            if isinstance(action, str) and not widget.has_class("-command-palette"):
                name = action.split("(", 1)[0].rpartition(".")[2]
                widget.set_class(name not in self.few, "-extra")
            yield widget
