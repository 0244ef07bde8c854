"""Shared helpers for the studio tests: a studio on the tiny engine with fixed rows, where each anchor
speaks with its own recording (the test roster's flite speakers), so a wrong voice changes the audio."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from support.wait import HANG_S

from omnistudio.studio.adapters import AnchorRow

ROWS = [AnchorRow("ruby", "Ruby Vance", ("es", "en"), {"en": "ready", "es": "missing"}),
        AnchorRow("storm", "Storm", ("es", "en"), {"en": "saved", "es": "ready"}),
        AnchorRow("valentina", "Valentina Paz", ("es", "en"), {"en": "missing", "es": "ready"}),
        AnchorRow("atlas", "Atlas Vance", ("es", "en"), {"en": "ready", "es": "ready"})]
DUOS = [("ruby", "storm", 0.5, ("en",))]
SCRIPT = "[ruby] Good evening. Here is the news.\nAnd now the weather."


def voice_resolver(engine: Any, voices_dir: Path) -> Any:
    """The studio's ``voice_for(item)``: an anchor -> its own recording in ``voices_dir``
    (tests/support.voices.py writes them); in Spanish ruby borrows valentina's, as in the test
    roster. A blend mixes the two anchors' prompts; any other voice is the first anchor's."""
    from omnistudio.engine.morph import blend_prompts
    from omnistudio.engine.reference import Reference
    from support.voices import ANCHORS, transcript

    def reference(anchor: str, lang: str) -> Reference:
        owner = "valentina" if (anchor, lang) == ("ruby", "es") else anchor
        return Reference(voices_dir / f"{owner}_{lang}.wav", transcript(owner, lang))

    def resolve(item: Any) -> Any:
        ref, lang = item.voice, item.lang
        if ref.blend is not None:
            a, b = (engine.prompt_for(reference(x, lang)) for x in (ref.blend.a, ref.blend.b))
            return blend_prompts(engine.model, a, b, ref.blend.alpha)
        return engine.prompt_for(reference(ref.anchor if ref.anchor in ANCHORS else ANCHORS[0], lang))

    return resolve


def make_studio(engine: Any, voice_roster_file: Path, **kwargs: Any):  # noqa: ANN201
    from omnistudio.studio.controller import Studio

    kwargs.setdefault("audio", "virtual")
    return Studio(engine=engine, warm=False, voice_resolver=voice_resolver(engine, voice_roster_file.parent),
                  **kwargs)


def make_app(engine: Any, voice_roster_file: Path, autosave_path: Path, **kwargs: Any):  # noqa: ANN201
    from omnistudio.app import StudioApp
    from omnistudio.studio.autosave import Autosave

    studio = make_studio(engine, voice_roster_file, virtual_rate=kwargs.pop("virtual_rate", 1.0))
    kwargs.setdefault("welcome", False)  # pinned: an empty editor, no anchor selected (tests/test_studio_welcome.py)
    return StudioApp(studio, rows=ROWS, autosave=Autosave(autosave_path, interval=0.0), duo_list=DUOS, **kwargs)


def anchored_app(engine: Any, voice_roster_file: Path, tmp_path: Path, anchor: str | None = "ruby",
                 project: Path | None = None, script: str | None = None, **kwargs: Any):  # noqa: ANN201
    """:func:`make_app` (its autosave in ``tmp_path``) with ``anchor`` selected and, when ``project`` is
    named, that project open (created with ``script`` when it does not exist)."""
    app = make_app(engine, voice_roster_file, tmp_path / "autosave.script", **kwargs)
    if anchor is not None:
        app.studio.select(anchor)
    if project is not None:
        app.studio.takes.open(project, script)
    return app


async def wait_for(pilot: Any, predicate: Any, timeout: float = HANG_S, what: str = "condition") -> None:
    """Let the app run until ``predicate()`` holds (no fixed sleeps). The timeout only bounds a hang, and is
    generous for a loaded machine: no test asserts how long the wait took (timings belong in benches)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)
        await asyncio.sleep(0)


class Recorder:
    """Timestamps every controller event (wraps the report hook the app installs on mount); the remote studio
    tests use it. The stamps order events against a moment (``since``); they are not for measuring."""

    def __init__(self, app) -> None:  # noqa: ANN001
        self.events: list[tuple[float, object]] = []
        forward = app.studio.report

        def report(event: object) -> None:
            self.events.append((time.monotonic(), event))
            forward(event)

        app.studio.report = report

    def first(self, kind: type, since: float = 0.0, **fields: object):  # noqa: ANN201
        return next(((at, e) for at, e in self.events if at >= since and isinstance(e, kind)
                     and all(getattr(e, k) == v for k, v in fields.items())), None)


def track_ui_while_held(app: Any, gate: Any) -> tuple[set[int], list[int]]:
    """A 10 ms UI timer: the UI thread's id (it runs only there) and, in ``ticks[0]``, how many times it
    ran while ``gate`` held a network call of the link (only while the UI loop runs)."""
    import threading

    ui_thread: set[int] = set()
    ticks = [0]

    def tick() -> None:
        ui_thread.add(threading.get_ident())
        if gate.held:
            ticks[0] += 1

    app.set_interval(0.01, tick)
    return ui_thread, ticks


async def ui_answers_while_link_blocked(pilot: Any, gate: Any, editor: Any, ticks: list[int]) -> None:
    """With the link's next network call held at ``gate`` (support.remote.LinkGate), the UI still handles
    key presses and runs its timers (``ticks[0]`` counts a 10 ms timer's ticks while the gate holds);
    then the gate is released. Fails if the gate had to give up waiting (the UI was stuck)."""
    stuck = "the UI was stuck while the link was blocked on the network (the gate gave up waiting for its release)"
    assert not gate.expired, stuck
    editor.focus()
    editor.move_cursor((0, 0))
    await pilot.press("right", "right", "right")
    await wait_for(pilot, lambda: ticks[0] >= 5 or gate.expired, what="UI timer ticks while the link was blocked")
    assert not gate.expired, stuck
    assert gate.held and editor.cursor_location == (0, 3), "a key press was not handled while the link was blocked"
    gate.release()


# ------------------------------------------------------------ the states the snapshots and the layout test share
SIZES = {"80x24": (80, 24), "120x40": (120, 40), "200x60": (200, 60)}


async def until_ready(pilot: Any) -> None:
    from omnistudio.widgets.telemetry import Telemetry

    await wait_for(pilot, lambda: pilot.app.main_screen.query_one(Telemetry).engine_state == "ready",
                   what="engine ready")


async def ready_with_script(pilot: Any) -> None:
    """Engine ready, Ruby picked from the anchor list (enter), the test script in the focused editor."""
    from omnistudio.widgets.script_editor import ScriptEditor

    await until_ready(pilot)
    screen = pilot.app.main_screen
    screen.query_one("#anchor-list").focus()
    await pilot.press("enter")  # picks Ruby Vance (first row)
    editor = screen.query_one(ScriptEditor)
    editor.load_text(SCRIPT)
    editor.focus()
    # the gutter's languages are identified off the UI thread after an edit: drawn before any snapshot
    await wait_for(pilot, lambda: bool(editor.languages), what="the paragraphs' languages")


async def show_playing(pilot: Any) -> None:
    """The main screen while playing, fed fixed values as the pull timer would (an app made with
    ``live=False``): sentence 2 of 3 marked, the meter's reading, the telemetry. On a narrow screen
    F12 shows the meter panel, as a producer would while listening."""
    from omnistudio.widgets.lufs_meter import LufsMeter
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry
    from omnistudio.widgets.transport import Transport

    await ready_with_script(pilot)
    screen = pilot.app.main_screen
    editor = screen.query_one(ScriptEditor)
    start = editor.text.index("Here is the news.")
    editor.set_playing((start, start + len("Here is the news.")))
    screen.query_one(LufsMeter).update_reading(-21.5, -24.0, -23.2, -3.1)
    transport = screen.query_one(Transport)
    transport.state, transport.position = "playing", "sentence 2/3"
    telemetry = screen.query_one(Telemetry)
    telemetry.engine_state, telemetry.ttfa, telemetry.render_s, telemetry.rtf = "rendering", 0.182, 0.240, 0.13
    show_take(screen)
    if screen.narrow:
        await pilot.press("f12")
    await settled_layout(pilot, *pilot.app.size)


def show_take(screen: Any) -> None:
    """The take strip fed a fixed take, as the pull timer would: 6 s, three sentences, heard up to 2.6 s
    (sentence 2), its loudness history so far with one block over the true-peak ceiling."""
    import numpy as np

    from omnistudio.studio.take_view import PEAK_FRAMES, LoudPoint, Shape
    from omnistudio.widgets.take_strip import TakeStrip

    rate, steps = 24_000, 600
    t = np.arange(steps)
    peaks = (0.3 + 0.25 * np.sin(t / 7.0) ** 2) * (np.abs(np.sin(np.pi * t / 200)) > 0.12)
    sentences = ((0, 48_000, 0), (48_000, 96_000, 1), (96_000, 144_000, 2))
    history = [LoudPoint(k * 2_400, -23.0 + 3.0 * float(np.sin(k / 4.0)), k == 17) for k in range(1, 27)]
    shape = Shape(peaks.astype(np.float32), steps * PEAK_FRAMES, sentences, live=False)
    screen.query_one(TakeStrip).show(shape, 62_400, history, -23.0, rate)


async def settled_layout(pilot: Any, width: int, height: int) -> None:
    """Wait until the main screen has been fitted to ``width`` x ``height`` and its side columns are
    drawn as its classes say (both when wide; the panel chosen when narrow). Asserts nothing about
    which classes are right: the tests do."""
    screen = pilot.app.main_screen

    def settled() -> bool:
        if screen.fitted != width or screen.size != (width, height):
            return False
        shown = {w.id for w in screen.query("#picker, #side") if w.region.area}
        return shown == ({"side" if screen.panel == "meter" else "picker"} if screen.narrow else {"picker", "side"})

    await wait_for(pilot, settled, what=f"the layout at {width}x{height}")


async def show_settings(pilot: Any) -> None:
    """F2 over the playing main screen."""
    await show_playing(pilot)
    await pilot.press("f2")
    await pilot.pause()


async def show_export(pilot: Any) -> None:
    """Ctrl+E over the playing main screen, its path pinned (the default is the working folder's)."""
    from omnistudio.screens.export import ExportChoice

    await show_playing(pilot)
    pilot.app.main_screen.last_export = ExportChoice(Path("bulletin.wav"))
    await pilot.press("ctrl+e")
    await pilot.pause()


SCREENS = {"playing": show_playing, "settings": show_settings, "export": show_export}


def layout_faults(screen: Any) -> list[str]:
    """What is cut off or overlaps on ``screen``: every widget shown (a region with an area) must lie
    inside the screen and inside its parent, and no two shown siblings on the same layer may overlap."""
    from textual.widget import Widget

    faults: list[str] = []
    shown = [w for w in screen.query("*") if w.region.area]
    for widget in shown:
        region, parent = widget.region, widget.parent
        if not screen.region.contains_region(region):
            faults.append(f"{widget!r} at {region} is outside the screen {screen.region}")
        if isinstance(parent, Widget) and parent is not screen and not parent.region.contains_region(region):
            faults.append(f"{widget!r} at {region} is cut off by its parent {parent!r} at {parent.region}")
    by_parent: dict[int, list[Any]] = {}
    for widget in shown:
        if widget.styles.overlay != "screen":
            by_parent.setdefault(id(widget.parent), []).append(widget)
    for siblings in by_parent.values():
        for i, a in enumerate(siblings):
            for b in siblings[i + 1:]:
                if a.styles.layer == b.styles.layer and a.region.overlaps(b.region):
                    faults.append(f"{a!r} at {a.region} overlaps {b!r} at {b.region}")
    return faults


def screen_text(screen: Any) -> list[str]:
    """``screen`` as drawn, one string per row, without styles (what a monochrome terminal shows)."""
    return [strip.text for strip in screen._compositor.render_strips()]
