"""The anchor picker: the roster with each anchor's prompt state, filtered as you type.

The state beside each anchor (in the language shown) is its row's (ready on the device, saved, missing, stale),
with the background builds' marks over it (building, then ready: :meth:`AnchorPicker.show_marks`, pulled from
the controller by the app). The highlighted anchor is announced (``Highlighted``): the studio builds its prompt.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from omnistudio.script import Blend
from omnistudio.studio.adapters import AnchorRow

STATE_MARK = {"ready": ("●", "green"), "saved": ("◐", "yellow"), "missing": ("○", "dim"), "stale": ("◌", "red"),
              "building": ("◔", "cyan")}


class AnchorPicker(Vertical):
    """Type to filter; enter or click picks; the language shown is ``lang``."""

    DEFAULT_CSS = """
    AnchorPicker { width: 30; height: 1fr; }
    AnchorPicker > Input { height: 3; }
    AnchorPicker > OptionList { height: 1fr; }
    """

    lang: reactive[str] = reactive("en")
    """The language whose prompt state is shown (es | en)."""
    selected: reactive[str | None] = reactive(None)
    """The anchor id picked last."""

    @dataclass
    class Picked(Message):
        picker: AnchorPicker
        anchor: str

        @property
        def control(self) -> AnchorPicker:
            return self.picker

    @dataclass
    class Highlighted(Message):
        """The highlighted anchor (None: the list is empty) or the language shown changed."""

        picker: AnchorPicker
        anchor: str | None
        lang: str

        @property
        def control(self) -> AnchorPicker:
            return self.picker

    def __init__(self, rows: Sequence[AnchorRow] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows = list(rows)
        self.presets: dict[str, Blend] = {}  # the project's named duos, listed after the anchors
        self.marks: dict[tuple[str, str], str] = {}  # (anchor, lang) -> the background builds' state
        self._marks_version = -1

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter anchors", id="anchor-filter")
        yield OptionList(id="anchor-list")

    def on_mount(self) -> None:
        self._fill()

    def set_rows(self, rows: Sequence[AnchorRow]) -> None:
        self.rows = list(rows)
        self._fill()

    def set_presets(self, presets: dict[str, Blend]) -> None:
        """The project's duo presets, offered after the anchors (picking one picks its blend)."""
        self.presets = dict(presets)
        if self.is_mounted:
            self._fill()

    def watch_lang(self) -> None:
        if self.is_mounted:
            self._fill()
            self._announce()

    def state(self, row: AnchorRow) -> str:
        """The prompt state shown for ``row`` in the language shown (a background build's over the row's)."""
        return self.marks.get((row.id, self.lang)) or row.state.get(self.lang, "missing")

    def show_marks(self, version: int, marks: dict[tuple[str, str], str]) -> None:
        """The background builds' states (pulled by the app); only the rows whose label changed are redrawn."""
        if version == self._marks_version:
            return
        old, self.marks, self._marks_version = self.marks, marks, version
        options = self.query_one("#anchor-list", OptionList)
        for row in self.rows:
            key = (row.id, self.lang)
            if old.get(key) != marks.get(key):
                with suppress(OptionDoesNotExist):  # filtered out: drawn with its mark when shown again
                    options.replace_option_prompt(row.id, self._label(row))

    def watch_selected(self) -> None:
        if self.is_mounted:
            self._fill()

    def _label(self, row: AnchorRow) -> Text:
        mark, colour = STATE_MARK.get(self.state(row), ("?", "red"))
        text = Text()
        text.append("▸ " if row.id == self.selected else "  ", style="bold")
        text.append(f"{mark} ", style=colour)
        text.append(row.name)
        text.append(f" {self.lang}", style="dim")
        return text

    def _fill(self) -> None:
        query = self.query_one("#anchor-filter", Input).value.strip().lower()
        options = self.query_one("#anchor-list", OptionList)
        highlighted = options.highlighted_option.id if options.highlighted_option else None
        options.clear_options()
        shown = [r for r in self.rows if not query or query in r.id or query in r.name.lower()]
        options.add_options([Option(self._label(r), id=r.id) for r in shown])
        duos = [(name, b) for name, b in sorted(self.presets.items()) if not query or query in name or query in b.key()]
        options.add_options([Option(_preset_label(name, b, name == self.selected), id=name) for name, b in duos])
        ids = [r.id for r in shown] + [name for name, _b in duos]
        keep = highlighted if highlighted in ids else (self.selected if self.selected in ids else None)
        if keep is not None:
            options.highlighted = ids.index(keep)
        elif ids:
            options.highlighted = 0

    @on(OptionList.OptionHighlighted, "#anchor-list")
    def _announce(self) -> None:
        option = self.query_one("#anchor-list", OptionList).highlighted_option
        self.post_message(self.Highlighted(self, option.id if option is not None else None, self.lang))

    @on(Input.Changed, "#anchor-filter")
    def _filter(self) -> None:
        self._fill()

    @on(Input.Submitted, "#anchor-filter")
    def _pick_first(self) -> None:
        options = self.query_one("#anchor-list", OptionList)
        if options.highlighted_option is not None and options.highlighted_option.id:
            self.pick(options.highlighted_option.id)

    @on(OptionList.OptionSelected, "#anchor-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.pick(event.option.id)

    def pick(self, anchor: str) -> None:
        self.selected = anchor
        self.post_message(self.Picked(self, anchor))


def _preset_label(name: str, blend: Blend, selected: bool) -> Text:
    text = Text()
    text.append("▸ " if selected else "  ", style="bold")
    text.append("⇄ ", style="magenta")
    text.append(name)
    text.append(f" {blend.a}+{blend.b} {blend.alpha:.2f}", style="dim")
    return text
