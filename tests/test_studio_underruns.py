"""The telemetry counts the audio device's own underruns (issue 46: ALSA printed "underrun occurred" while the
telemetry said "underruns 0"): the player's callback counts PortAudio's output-underflow flag, and the
studio's telemetry shows the ring's underruns and the device's together."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from support.studio import make_app, until_ready, wait_for


def underflow():  # noqa: ANN201 - sounddevice's CallbackFlags, as PortAudio hands the callback
    import sounddevice as sd

    flags = sd.CallbackFlags()
    flags.output_underflow = True
    return flags


def test_the_callback_counts_the_devices_underflow() -> None:
    import sounddevice as sd

    from omnistudio.audio.player import Player

    player = Player(24_000)  # never opened: the test calls its callback as PortAudio would
    out = np.ones((256, 1), dtype=np.float32)
    player._callback(out, 256, None, sd.CallbackFlags())
    player._callback(out, 256, None, underflow())
    player._callback(out, 256, None, underflow())
    stats = player.stats
    assert (stats.callbacks, stats.xruns, stats.underruns) == (3, 2, 0)  # nothing was expected from the ring
    assert not out.any()  # and the block was silence, not what was in the buffer


def test_the_telemetry_shows_the_devices_underruns(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_telemetry_shows(tiny_engine, voice_roster_file, tmp_path))


async def _telemetry_shows(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.telemetry import Telemetry

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script")
    async with app.run_test(size=(200, 60)) as pilot:
        await until_ready(pilot)
        player = app.studio.player
        assert player is not None
        out = np.zeros((256, 1), dtype=np.float32)
        for _ in range(3):
            player._callback(out, 256, None, underflow())  # the device reported three underflows
        telemetry = app.main_screen.query_one(Telemetry)
        await wait_for(pilot, lambda: telemetry.device_underruns == 3, what="the device's underruns pulled")
        await pilot.pause()
        shown = [line for line in _text(telemetry).splitlines() if line.startswith("underruns")]
        assert shown == ["underruns 3 (device 3)"], shown


def _text(widget) -> str:  # noqa: ANN001
    """The widget's text as drawn, without styles."""
    from rich.console import Console

    console = Console(width=widget.size.width, record=True, color_system=None)
    console.print(widget.render())
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())
