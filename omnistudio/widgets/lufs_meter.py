"""Live loudness meter drawn with the Line API: momentary and short-term bars, integrated, true peak.

The widget only draws what it is given (``update_reading``): the app pulls the figures from the
controller on a timer. Colours: green within ±1 LU of the target, yellow under, red over (and a
true peak above the ceiling); ``│`` marks the target on each bar.
"""

from __future__ import annotations

from typing import Any

import math

from rich.segment import Segment
from rich.style import Style
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

FLOOR = -60.0  # LUFS at the left edge of a bar
TOP = 0.0
LABEL_W = 4
VALUE_W = 8
TRUE_PEAK_CEILING = -1.0
OK, UNDER, OVER, DIM = Style(color="green"), Style(color="yellow"), Style(color="red"), Style(dim=True)


def fmt(value: float, unit: str) -> str:
    return f"{value:6.1f} {unit}" if math.isfinite(value) else f"  -inf {unit}"


class LufsMeter(Widget):
    """Four lines: M bar, S bar, integrated, true peak."""

    DEFAULT_CSS = """
    LufsMeter { height: 4; width: 1fr; min-width: 24; }
    """

    target: reactive[float] = reactive(-23.0)
    """Target loudness in LUFS, marked on both bars."""

    def __init__(self, target: float = -23.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.set_reactive(LufsMeter.target, target)
        self.momentary = self.short_term = self.integrated = self.true_peak = -math.inf

    def update_reading(self, momentary: float, short_term: float, integrated: float, true_peak: float) -> None:
        values = (momentary, short_term, integrated, true_peak)
        if values != (self.momentary, self.short_term, self.integrated, self.true_peak):
            self.momentary, self.short_term, self.integrated, self.true_peak = values
            self.refresh()

    def watch_target(self) -> None:
        self.refresh()

    def _colour(self, value: float) -> Style:
        if not math.isfinite(value) or value < self.target - 1.0:
            return UNDER
        return OVER if value > self.target + 1.0 else OK

    def _bar(self, label: str, value: float, width: int) -> list[Segment]:
        track = max(4, width - LABEL_W - VALUE_W)
        span = TOP - FLOOR
        filled = 0 if not math.isfinite(value) else round(track * min(1.0, max(0.0, (value - FLOOR) / span)))
        mark = min(track - 1, round(track * (self.target - FLOOR) / span))
        style = self._colour(value)
        cells = []
        for i in range(track):
            if i == mark:
                cells.append(Segment("│", Style(bold=True)))
            elif i < filled:
                cells.append(Segment("█", style))
            else:
                cells.append(Segment("·", DIM))
        return [Segment(f"{label:<{LABEL_W}}"), *cells, Segment(f"{fmt(value, ''):>{VALUE_W}}"[:VALUE_W])]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            segments = self._bar("M", self.momentary, width)
        elif y == 1:
            segments = self._bar("S", self.short_term, width)
        elif y == 2:
            segments = [Segment("I   "), Segment(fmt(self.integrated, "LUFS"), self._colour(self.integrated)),
                        Segment(f"  target {self.target:g}", DIM)]
        elif y == 3:
            over = math.isfinite(self.true_peak) and self.true_peak > TRUE_PEAK_CEILING
            segments = [Segment("TP  "), Segment(fmt(self.true_peak, "dBTP"), OVER if over else OK),
                        Segment(f"  ceiling {TRUE_PEAK_CEILING:g}", DIM)]
        else:
            segments = []
        return Strip(segments).adjust_cell_length(width)
