"""F1: a sheet of this studio's keys, grouped, read from the bindings themselves (each key as the footer shows
it, and its description), so it never drifts from what the keys do. Esc or F1 closes it.

A binding whose id no group names is listed under "Other", so a new key is never missing from the sheet.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, Static

# The groups, in order, by binding id (screens/main.py's BINDINGS; "quit" is the app's Ctrl+Q).
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Playback", ("play", "play_cursor", "pause", "stop")),
    ("Script", ("toggle_spoken", "add_word", "toggle_lang", "undo_edit")),
    ("Voices/Duo", ("audition", "flip", "assign", "next_duo", "set_partner", "save_preset")),
    ("Takes", ("regenerate", "compare", "prev_take", "next_take", "take_strip")),
    ("Files", ("open", "save", "export")),
    ("Panels", ("panel_meter", "panel_anchors", "settings", "keys", "quit")),
)
OTHER = "Other"
COLUMNS = 2


def grouped(bindings: Sequence[Binding]) -> list[tuple[str, list[tuple[Binding, str]]]]:
    """``bindings`` in :data:`GROUPS` (then "Other"), each with its description; one row per key, a key
    bound to several actions (F12: the panel it shows) with their descriptions joined."""
    order = {binding_id: n for n, (_, ids) in enumerate(GROUPS) for binding_id in ids}
    names = [name for name, _ in GROUPS] + [OTHER]
    rows: dict[str, dict[str, tuple[Binding, str]]] = {name: {} for name in names}
    for binding in bindings:
        group = names[order.get(binding.id or "", len(GROUPS))]
        key = binding.key
        if key in rows[group]:
            first, text = rows[group][key]
            rows[group][key] = (first, f"{text} / {binding.description}")
        else:
            rows[group][key] = (binding, binding.description)
    return [(name, list(rows[name].values())) for name in names if rows[name]]


class KeysScreen(ModalScreen[None]):
    """The studio's keys, grouped, from ``bindings`` (and the app's own, Ctrl+Q)."""

    BINDINGS = [Binding("escape,f1", "dismiss", "Close")]

    def __init__(self, bindings: Sequence[BindingType]) -> None:
        super().__init__()
        self.studio_bindings = [b for b in bindings if isinstance(b, Binding)]

    def compose(self) -> ComposeResult:
        app_keys = [b for b in self.app.BINDINGS if isinstance(b, Binding) and b.action == "quit"]
        groups = grouped([*self.studio_bindings, *(Binding(b.key, b.action, b.description, id="quit")
                                                   for b in app_keys)])
        columns = _balanced(groups, COLUMNS)
        with Vertical(id="dialog", classes="keys"):
            yield Label("Keys", id="dialog-title")
            with Horizontal(id="keys-columns"):
                for column in columns:
                    yield Static(self._table(column), classes="keys-column")
            yield Label("Esc or F1 closes · ctrl+p finds any command", classes="keys-note")

    def _table(self, groups: list[tuple[str, list[tuple[Binding, str]]]]) -> Table:
        table = Table.grid(padding=(0, 1))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for n, (name, rows) in enumerate(groups):
            table.add_row(Text(name, style="bold underline"), "", end_section=False)
            for binding, description in rows:
                table.add_row(self.app.get_key_display(binding), description)
            if n < len(groups) - 1:
                table.add_row("", "")
        return table


def _balanced(groups: list[tuple[str, list[tuple[Binding, str]]]], columns: int,
              ) -> list[list[tuple[str, list[tuple[Binding, str]]]]]:
    """The groups, in order, cut into ``columns`` runs of about equal height."""
    heights = [len(rows) + 2 for _, rows in groups]
    share = sum(heights) / columns
    out: list[list[tuple[str, list[tuple[Binding, str]]]]] = [[]]
    filled = 0
    for group, height in zip(groups, heights):
        if out[-1] and filled + height / 2 > share * len(out) and len(out) < columns:
            out.append([])
        out[-1].append(group)
        filled += height
    return out
