"""A checkbox whose two states differ without colour: ``▐X▌`` checked, ``▐ ▌`` unchecked (Textual's shows
``▐X▌`` for both and tells them apart by colour alone, which a monochrome terminal does not show)."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Checkbox

CHECKED, UNCHECKED = "X", " "


class StudioCheckbox(Checkbox):
    def render(self) -> Content:
        self.BUTTON_INNER = CHECKED if self.value else UNCHECKED  # one column either way: the width holds
        return super().render()
