"""Telemetry: engine state, where it runs, time to first audio, last sentence's render time and RTF, underruns
(the ring's and the audio device's own), the compiled backbone's state (compiling / compiled) when it is on,
the diffusion step's captured CUDA graphs when there are any.

With a remote engine the TTFA is measured here (network included) and the render time and RTF are the
server's own, as its telemetry frames report them."""

from __future__ import annotations

import math

from rich.markup import escape
from rich.table import Table
from textual.reactive import reactive
from textual.widgets import Static

STATE_STYLE = {"loading": "yellow", "warming": "yellow", "ready": "green", "rendering": "cyan", "offline": "red",
               "error": "red"}
BACKBONE_STYLE = {"compiling": "yellow", "switching": "yellow", "compiled": "green", "failed": "red"}


class Telemetry(Static):
    engine_state: reactive[str] = reactive("loading")
    """loading | warming | ready | rendering | offline | error."""
    where: reactive[str] = reactive("")
    """The model and where it runs (``tiny on cuda:0 @ gpu-box:8005`` for a server)."""
    detail: reactive[str] = reactive("")
    """What the engine is doing (e.g. the loading step)."""
    ttfa: reactive[float] = reactive(math.nan)
    """Time to first audio of the last play, seconds."""
    render_s: reactive[float] = reactive(math.nan)
    """Render time of the last sentence, seconds."""
    rtf: reactive[float] = reactive(math.nan)
    """Real-time factor of the last sentence (render time / audio time)."""
    underruns: reactive[int] = reactive(0)
    """Output blocks the ring could not fill."""
    device_underruns: reactive[int] = reactive(0)
    """Output underflows the audio device itself reported (PortAudio's flag; ALSA's "underrun occurred")."""
    backbone: reactive[str] = reactive("off")
    """The compiled backbone: off (row hidden) | compiling (eager meanwhile) | switching | compiled | failed (eager)."""
    graphs: reactive[str] = reactive("off")
    """The diffusion step's CUDA graphs: off (row hidden), or how many were captured and in how long."""

    def render(self) -> Table:
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim")
        table.add_column()

        def ms(value: float) -> str:
            return "—" if math.isnan(value) else f"{value * 1000:.0f} ms"

        state = f"[{STATE_STYLE.get(self.engine_state, 'white')}]{self.engine_state}[/]"
        table.add_row("engine", state + (f" [dim]{escape(self.detail)}[/]" if self.detail else ""))
        if self.where:
            table.add_row("model", escape(self.where))
        table.add_row("TTFA", ms(self.ttfa))
        table.add_row("render", ms(self.render_s))
        table.add_row("RTF", "—" if math.isnan(self.rtf) else f"{self.rtf:.2f}")
        # the sum: a block the ring could not fill, or one the device played late, is heard as a gap either way
        total = self.underruns + self.device_underruns
        table.add_row("underruns", f"{total}" + (f" [dim](device {self.device_underruns})[/]"
                                                 if self.device_underruns else ""))
        if self.backbone != "off":
            table.add_row("backbone", f"[{BACKBONE_STYLE.get(self.backbone, 'white')}]{self.backbone}[/]")
        if self.graphs != "off":
            table.add_row("graphs", escape(self.graphs))
        return table
