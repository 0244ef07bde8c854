"""The transport bar: what is playing and the keys that drive it."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

SYMBOL = {"stopped": "■ stopped", "playing": "▶ playing", "paused": "❚❚ paused", "exporting": "⇩ exporting"}


class Transport(Static):
    """One line: state, sentence position, audio output."""

    DEFAULT_CSS = """
    Transport { height: 1; width: 1fr; }
    """

    state: reactive[str] = reactive("stopped")
    """stopped | playing | paused | exporting."""
    position: reactive[str] = reactive("")
    """e.g. 'sentence 2/5'."""
    output: reactive[str] = reactive("")
    """Where audio goes: a device name, or 'no audio device (silent)'."""

    def render(self) -> Text:
        text = Text(SYMBOL.get(self.state, self.state), style="bold")
        if self.position:
            text.append(f"  {self.position}")
        if self.output:  # on a narrow screen, what fits of it (the state and position come first)
            output, room = f"  · {self.output}", self.content_size.width - text.cell_len
            if len(output) > room:
                output = output[:room - 1] + "…" if room > 6 else ""
            text.append(output, style="dim")
        return text
