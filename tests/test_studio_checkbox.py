"""Checked and unchecked boxes look different in monochrome too (issue 46: both drew "▐X▌", told apart by
colour alone): every checkbox of the settings and the export dialog, drawn in each state, compared as text
without styles."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from support.studio import make_app, screen_text, until_ready, wait_for


def drawn(screen, widget) -> str:  # noqa: ANN001
    """What ``widget`` draws on ``screen``, as plain text."""
    region = widget.region
    return "\n".join(row[region.x:region.right] for row in screen_text(screen)[region.y:region.bottom])


@pytest.mark.parametrize("key", ["f2", "ctrl+e"], ids=["settings", "export"])
def test_checked_and_unchecked_differ_without_colour(tiny_engine, voice_roster_file: Path, tmp_path: Path,  # noqa: ANN001
                                                     key: str) -> None:
    asyncio.run(_differ(tiny_engine, voice_roster_file, tmp_path, key))


async def _differ(tiny_engine, voice_roster_file: Path, tmp_path: Path, key: str) -> None:  # noqa: ANN001
    from textual.screen import ModalScreen
    from textual.widgets import Checkbox

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script")
    async with app.run_test(size=(120, 40)) as pilot:
        await until_ready(pilot)
        await pilot.press(key)
        await wait_for(pilot, lambda: isinstance(app.screen, ModalScreen) and bool(app.screen.query(Checkbox)),
                       what=f"the dialog of {key}")
        await pilot.pause()
        dialog = app.screen
        boxes = [box for box in dialog.query(Checkbox) if box.region.area]
        assert boxes
        for box in boxes:
            looks = {}
            for value in (box.value, not box.value):
                box.value = value
                await pilot.pause()
                looks[value] = drawn(dialog, box)
            assert "▐X▌" in looks[True] and "X" not in looks[False].replace(str(box.label), ""), (box.id, looks)
            assert looks[True] != looks[False], box.id
