"""Shared helpers for the studio tests: a studio on the tiny engine with a fixed voice and rows."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from omnistudio.studio.adapters import AnchorRow

ROWS = [AnchorRow("ruby", "Ruby Vance", ("es", "en"), {"en": "ready", "es": "missing"}),
        AnchorRow("storm", "Storm", ("es", "en"), {"en": "saved", "es": "ready"}),
        AnchorRow("valentina", "Valentina Paz", ("es", "en"), {"en": "missing", "es": "ready"}),
        AnchorRow("atlas", "Atlas Vance", ("es", "en"), {"en": "ready", "es": "ready"})]
DUOS = [("ruby", "storm", 0.5, ("en",))]
SCRIPT = "[ruby] Good evening. Here is the news.\nAnd now the weather."


def make_studio(engine: Any, ref_wav: Path, **kwargs: Any):  # noqa: ANN201
    from omnistudio.engine.reference import Reference
    from omnistudio.studio.controller import Studio

    from conftest import REF_TEXT

    reference = Reference(ref_wav, REF_TEXT)
    kwargs.setdefault("audio", "virtual")
    return Studio(engine=engine, warm=False, voice_resolver=lambda *_: reference, **kwargs)


def make_app(engine: Any, ref_wav: Path, autosave_path: Path, **kwargs: Any):  # noqa: ANN201
    from omnistudio.app import StudioApp
    from omnistudio.studio.autosave import Autosave

    studio = make_studio(engine, ref_wav, virtual_rate=kwargs.pop("virtual_rate", 1.0))
    kwargs.setdefault("welcome", False)  # pinned: an empty editor, no anchor selected (tests/test_studio_welcome.py)
    return StudioApp(studio, rows=ROWS, autosave=Autosave(autosave_path, interval=0.0), duo_list=DUOS, **kwargs)


async def wait_for(pilot: Any, predicate: Any, timeout: float = 20.0, what: str = "condition") -> None:
    """Let the app run until ``predicate()`` holds (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)
        await asyncio.sleep(0)
