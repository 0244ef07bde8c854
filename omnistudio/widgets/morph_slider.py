"""A float slider 0.00-1.00 for the morph between two anchors (Textual has none built in)."""

from __future__ import annotations

from typing import Any

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

STEP = 0.05
FINE_STEP = 0.01


class MorphSlider(Widget, can_focus=True):
    """Arrow keys move 0.05, shift+arrows 0.01, home/end jump; click or drag with the mouse."""

    BINDINGS = [
        Binding("left", "step(-0.05)", "-0.05", show=False),
        Binding("right", "step(0.05)", "+0.05", show=False),
        Binding("shift+left", "step(-0.01)", "-0.01", show=False),
        Binding("shift+right", "step(0.01)", "+0.01", show=False),
        Binding("home", "set(0)", "0", show=False),
        Binding("end", "set(1)", "1", show=False),
    ]
    DEFAULT_CSS = """
    MorphSlider { height: 1; width: 1fr; min-width: 12; }
    """

    value: reactive[float] = reactive(1.0)
    """Blend weight of the selected anchor: 1.00 is the anchor alone, 0.00 the partner's timbre."""

    @dataclass
    class Changed(Message):
        slider: MorphSlider
        value: float

        @property
        def control(self) -> MorphSlider:
            return self.slider

    def __init__(self, value: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.set_reactive(MorphSlider.value, self._clamp(value))
        self._dragging = False
        self.step = STEP  # the last arrow step taken (the neighbours rendered ahead are one such step away)

    @staticmethod
    def _clamp(value: float) -> float:
        return round(min(1.0, max(0.0, float(value))), 2)

    def validate_value(self, value: float) -> float:
        return self._clamp(value)

    def watch_value(self, old: float, new: float) -> None:
        if old != new:
            self.post_message(self.Changed(self, new))

    def show(self, value: float) -> None:
        """Show ``value`` without a ``Changed`` message (the script's ratio, not the producer's gesture)."""
        self.set_reactive(MorphSlider.value, self._clamp(value))
        self.refresh()

    def action_step(self, delta: float) -> None:
        self.step = abs(delta)  # the producer's step: 0.05, or 0.01 with shift
        self.value = self.value + delta

    def action_set(self, value: float) -> None:
        self.value = value

    def _track(self) -> int:
        return max(2, self.size.width - 6)  # room for " 0.00"

    def render(self) -> Text:
        track = self._track()
        knob = round(self.value * (track - 1))
        bar = Text()
        bar.append("━" * knob, style="bold")
        bar.append("●", style="reverse" if self.has_focus else "bold")
        bar.append("─" * (track - knob - 1), style="dim")
        bar.append(f" {self.value:.2f}")
        return bar

    def _value_at(self, x: int) -> float:
        return x / (self._track() - 1)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        self._dragging = True
        self.capture_mouse()
        self.focus()
        self.value = self._value_at(event.x)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._dragging:
            self.value = self._value_at(event.x)

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._dragging:
            self._dragging = False
            self.release_mouse()
            self.value = self._value_at(event.x)
