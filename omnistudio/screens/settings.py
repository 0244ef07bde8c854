"""Settings: engine options, finishing options, output device. Saved to the user config folder.

One line a setting (compact fields, check boxes), so the whole dialog fits an 80x24 terminal."""

from __future__ import annotations

from typing import Any

from dataclasses import replace

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select

from omnistudio.errors import UserError
from omnistudio.audio.profiles import RULES
from omnistudio.studio.settings import StudioSettings
from omnistudio.widgets.checkbox import StudioCheckbox

FIELDS = [("num_step", "diffusion steps"), ("guidance_scale", "guidance scale"), ("seed", "seed"),
          ("speed", "speed"), ("output_device", "output device"),
          ("server", "server (next start)"), ("api_key_file", "server key file")]
SWITCHES = [("seed_lock", "seed lock"), ("room_tone", "room tone"), ("breaths", "breaths")]
PLACEHOLDERS = {"output_device": "empty: the default device", "server": "empty: the model runs here",
                "api_key_file": "empty: none"}


def rule_select(key: str, widget_id: str) -> Select[str]:
    """A choice of the loudness rules (audio/profiles.py), ``key`` chosen (settings and export dialogs)."""
    return Select([(f"{r.name.split(' (')[0]} {r.target_lufs:g} LUFS", r.key) for r in RULES.values()],
                  value=key, allow_blank=False, id=widget_id, compact=True)


class SettingsScreen(ModalScreen[StudioSettings | None]):
    """Returns the new, validated settings, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, settings: StudioSettings) -> None:
        super().__init__()
        self.settings = settings

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="settings"):
            yield Label("Settings", id="dialog-title")
            with Grid(id="settings-grid"):
                for name, label in FIELDS:
                    yield Label(label)
                    yield Input(str(getattr(self.settings, name)), id=f"set-{name}", compact=True,
                                placeholder=PLACEHOLDERS.get(name, ""))
                for name, label in SWITCHES:
                    yield Label(label)
                    yield StudioCheckbox("", bool(getattr(self.settings, name)), id=f"set-{name}")
                yield Label("loudness rule")
                yield rule_select(self.settings.rule().key, "set-profile")
            yield Label("", id="settings-error")
            with Horizontal(classes="buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Cancel", id="cancel")

    def collect(self) -> StudioSettings:
        values: dict[str, Any] = {name: self.query_one(f"#set-{name}", Input).value for name, _ in FIELDS}
        values.update({name: self.query_one(f"#set-{name}", Checkbox).value for name, _ in SWITCHES})
        rule = RULES[str(self.query_one("#set-profile", Select).value)]
        values.update(profile=rule.key, target_lufs=rule.target_lufs)
        return replace(self.settings, **values).validated()

    @on(Button.Pressed, "#save")
    def _save(self) -> None:
        try:
            self.dismiss(self.collect())
        except UserError as exc:
            self.query_one("#settings-error", Label).update(f"⚠ {exc}")

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
