"""The take strip under the editor: the take's waveform, its sentences and the play position, and its
loudness history.

- ``Sparkline`` (Textual's own) draws the peak envelope, one column a bucket (``TakeStrip.peaks``: the
  peak of each column's samples, :meth:`omnistudio.studio.take_view.Shape.columns`);
- one line below it marks where each sentence starts (its number), the part heard and the play
  position (``▲``), and the sentence picked with the keys;
- ``PlotextPlot`` (textual-plotext) draws the short-term loudness over the take's time, the target as
  a line and each block whose true peak went over the ceiling as a ``×`` at the top.

The strip only draws what it is given (:meth:`TakeStrip.show`, from the app's pull). A click on a
sentence, or ←/→ then Enter with the strip focused, posts :class:`TakeStrip.Picked`: the screen moves
the editor's cursor to that sentence's start.
"""

from __future__ import annotations

from typing import Any, cast

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Sparkline
from textual_plotext import PlotextPlot

from omnistudio.studio.take_view import EMPTY, LoudPoint, Shape

SPAN_LU = (-24.0, 12.0)  # the history's range around the target, LU
HEARD, POSITION, PICKED, DIM = Style(color="cyan"), Style(color="cyan", bold=True), Style(reverse=True), Style(dim=True)


class SentenceMarks(Widget):
    """One line: each sentence's number where it starts, the part heard, ``▲`` at the play position."""

    DEFAULT_CSS = "SentenceMarks { height: 1; }"

    def render_line(self, y: int) -> Strip:
        strip = cast("TakeStrip", self.parent)
        width, shape = self.size.width, strip.shape
        if y or not shape.frames or width <= 0:
            return Strip.blank(width)
        cells = ["─"] * width
        for start, _end, index in shape.sentences:
            label, at = str(index + 1), shape.column_of(start, width)
            for k, ch in enumerate(label[:max(1, width - at)]):
                cells[at + k] = ch
        heard = shape.column_of(strip.position, width) if strip.position else -1
        picked = strip.picked_columns(width)
        segments = []
        for x, ch in enumerate(cells):
            style = POSITION if x == heard else (HEARD if x < heard else DIM)
            if x in picked:
                style += PICKED
            segments.append(Segment("▲" if x == heard and ch == "─" else ch, style))
        return Strip(segments).adjust_cell_length(width)


class LoudnessHistory(PlotextPlot):
    """Short-term loudness over the take's time, the target line and the true-peak overs."""

    DEFAULT_CSS = "LoudnessHistory { height: 3; }"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.points: Sequence[LoudPoint] = ()
        self.frames, self.target, self.rate = 0, -23.0, 24_000
        self._drawn: tuple[object, ...] = ()

    def show(self, points: Sequence[LoudPoint], frames: int, target: float, rate: int) -> None:
        """Draw ``points`` (a take ``frames`` long) against ``target``: one point a cell (the last in it), a
        cell with an over marked. Redrawn only when the last point reaches a new cell (or the take's
        length, the target or the width changed): a plotext build costs milliseconds."""
        self.points, self.frames, self.target, self.rate = points, frames, target, rate
        width = max(1, self.size.width)
        end = max(frames, points[-1].frame if points else 0, 1)
        key = (points[-1].frame * width // end if points else -1, bool(points) and points[-1].over, frames, target,
               width)
        if key == self._drawn:
            return
        self._drawn = key
        last: dict[int, LoudPoint] = {}
        overs: set[int] = set()
        for point in points:
            cell = min(width - 1, point.frame * width // end)
            last[cell] = point
            if point.over:
                overs.add(cell)
        plt = self.plt
        plt.clear_data()
        plt.frame(False)
        plt.xaxes(False, False)
        plt.yaxes(False, False)
        plt.xticks([])
        plt.yticks([])
        low, high = target + SPAN_LU[0], target + SPAN_LU[1]
        plt.xlim(0, end / rate)
        plt.ylim(low, high)
        plt.hline(target, "green")
        shown = [last[cell] for cell in sorted(last) if math.isfinite(last[cell].short_term)]
        if shown:
            plt.plot([p.frame / rate for p in shown], [min(high, max(low, p.short_term)) for p in shown],
                     marker="braille", color="cyan")
        if overs:
            plt.scatter([(cell + 0.5) * end / width / rate for cell in sorted(overs)], [high] * len(overs),
                        marker="×", color="red")
        self.refresh()


class TakeStrip(Vertical, can_focus=True):
    """The take being played or last played: waveform, sentences and position, loudness history."""

    DEFAULT_CSS = """
    TakeStrip { height: 6; }
    TakeStrip > Sparkline { height: 2; }
    TakeStrip:focus SentenceMarks { background: $boost; }
    """
    BINDINGS = [
        Binding("left", "step(-1)", "Previous sentence", show=False),
        Binding("right", "step(1)", "Next sentence", show=False),
        Binding("enter", "go", "Go to sentence", show=False),
    ]

    @dataclass
    class Picked(Message):
        """A sentence of the take was clicked or picked with Enter: move the editor there."""

        sentence: int

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shape: Shape = EMPTY
        self.position = 0  # the take's frame being heard
        self.picked: int | None = None  # the sentence picked with ←/→ (its index), None: the one heard
        self._columns: tuple[Shape, int] | None = None  # what the waveform's columns were made for

    def compose(self) -> ComposeResult:
        yield Sparkline([], id="wave")
        yield SentenceMarks(id="marks")
        yield LoudnessHistory(id="history")

    @property
    def peaks(self) -> list[float]:
        """The envelope drawn: the peak of each column's samples."""
        return list(self.query_one(Sparkline).data or [])

    def show(self, shape: Shape, position: int, history: Sequence[LoudPoint], target: float, rate: int) -> None:
        """Draw ``shape`` with ``position`` (its frame heard) and the loudness ``history``."""
        wave = self.query_one(Sparkline)
        width = wave.size.width
        if self._columns is None or self._columns[0] is not shape or self._columns[1] != width:
            self._columns = (shape, width)
            if shape is not self.shape:
                self.picked = None
            wave.data = shape.columns(width) if shape.frames and width else []
        if shape is not self.shape or position != self.position:
            self.shape, self.position = shape, position
            self.query_one(SentenceMarks).refresh()
        self.query_one(LoudnessHistory).show(history, shape.frames, target, rate)

    def on_resize(self) -> None:
        self.show(self.shape, self.position, self.query_one(LoudnessHistory).points,
                  self.query_one(LoudnessHistory).target, self.query_one(LoudnessHistory).rate)

    # ------------------------------------------------------------ picking a sentence
    def _order(self) -> list[int]:
        return [index for _s, _e, index in self.shape.sentences]

    def picked_columns(self, width: int) -> range:
        span = next(((s, e) for s, e, i in self.shape.sentences if i == self.picked), None)
        if span is None or not self.has_focus:
            return range(0)
        return range(self.shape.column_of(span[0], width), self.shape.column_of(max(span[0], span[1] - 1), width) + 1)

    def action_step(self, offset: int) -> None:
        order = self._order()
        if not order:
            return
        current = self.picked if self.picked in order else self.shape.sentence_at(self.position)
        k = order.index(current) + offset if current in order else 0
        self.picked = order[max(0, min(len(order) - 1, k))]
        self.query_one(SentenceMarks).refresh()

    def action_go(self) -> None:
        if self.picked is None:
            self.action_step(0)
        if self.picked is not None:
            self.post_message(self.Picked(self.picked))

    def on_click(self, event: events.Click) -> None:
        wave = self.query_one(Sparkline)
        width = wave.size.width
        if not self.shape.sentences or width <= 0:
            return
        column = event.screen_x - wave.region.x
        index = self.shape.sentence_at(self.shape.frame_of(column, width))
        if index is not None:
            self.picked = index
            self.post_message(self.Picked(index))

    def on_focus(self) -> None:
        self.query_one(SentenceMarks).refresh()

    def on_blur(self) -> None:
        self.query_one(SentenceMarks).refresh()
