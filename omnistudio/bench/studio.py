"""``omnistudio bench --studio``: the studio's three jobs timed by ear, through Textual's pilot (issue 46).

The real :class:`~omnistudio.app.StudioApp` runs headless (``run_test``, 120x36) over the bench's engine,
the real roster, a virtual audio device at real time and a fresh home (a temporary ``OMNISTUDIO_HOME``:
settings, prompts, lexicon). Each try is timed from the key press (``perf_counter`` just before the pilot
presses the last key) to the controller's ``PlaybackStarted`` (the first audio queued to the player, stamped
as the engine thread reports it); the event's own ``ttfa_s`` (from the Play command's ask, i.e. from the
slider's rest for the slider) is reported beside it:

- audition, cold: Ctrl+T with another anchor highlighted, on a line not heard before (it changes each try);
- audition, A/B: Ctrl+R once a second anchor read that line (the first anchor's take is a take-cache hit);
- slider, cold: three arrow steps at once on a ``[ruby+storm@0.50]`` paragraph (0.65: its neighbours never
  rendered); the time from the key includes the rest delay (``REST_S``), "from rest" does not;
- slider, neighbour: one more step, once the background renders of both neighbours are done;
- F5 on an es/en script (``--sentences`` paragraphs, default 6) whose first line changes each try.

Before every key the studio is idle (its queue empty, state ready, no play rendering) and its background
builds have settled, so the voices the key needs are built (untimed); the audio stops (F8) at the first
sound. p95 is the nearest rank. Nothing is asserted: the figures are printed beside the issue's goals.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from omnistudio.bench.corpus import BULLETIN
from omnistudio.errors import UserError
from omnistudio.script import Blend
from omnistudio.studio.autosave import Autosave
from omnistudio.studio.events import Failure, PlaybackStarted
from omnistudio.studio.settings import StudioSettings
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from textual.pilot import Pilot

    from omnistudio.app import StudioApp
    from omnistudio.bench.modes import Modes, OpenEngine
    from omnistudio.engine.engine import Engine
    from omnistudio.studio.events import StudioEvent

    Want = tuple[VoiceRef, str]

T = TypeVar("T")
DEFAULT_SENTENCES = 6  # --sentences: the F5 script's paragraphs
DEFAULT_TRIES = 20
MAX_TRIES = 500
SIZE = (120, 36)
HANG_S = 1800.0  # a wait that should end: only a hang reaches it
AUDITION_ANCHORS = ("ruby", "atlas", "storm", "valentina")  # two a try, in turn: each audition is another anchor
F5_VOICES = (("valentina", "es"), ("ruby", "en"), ("mateo", "es"), ("atlas", "en"))
ES_LINES = ("El gobierno presentó hoy el nuevo plan de transporte para la ciudad.",
            "La lluvia seguirá en el norte del país hasta el sábado por la tarde.",
            "Los mercados cerraron con pocas variaciones después de una jornada tranquila.")
# row -> (what it times, goal in ms or None, the time the goal is judged on: "key" or "rest")
ROWS: dict[str, tuple[str, float | None, str]] = {
    "audition_cold": ("audition, new (Ctrl+T)", 600.0, "key"),
    "audition_ab": ("audition A/B (Ctrl+R)", 150.0, "key"),
    "slider_cold": ("slider 3 steps, cold", 600.0, "rest"),
    "slider_neighbour": ("slider 1 step, ahead", 150.0, "rest"),
    "f5": ("F5, es/en script", None, "key"),
}


def add_flags(parser: argparse.ArgumentParser, modes: Modes) -> None:
    modes.add_argument("--studio", action="store_true", help="the studio through Textual's pilot: audition, "
                       "A/B, slider rest and F5 to first sound, p50/p95 over --tries (--sentences: the F5 "
                       "script's paragraphs, default 6)")
    parser.add_argument("--tries", type=int, default=DEFAULT_TRIES,
                        help=f"--studio: tries of each key (default {DEFAULT_TRIES})")


def _en_line(i: int, where: str) -> str:
    return f"{BULLETIN[i % len(BULLETIN)].rstrip('.')}, {where} {i + 1}."


def f5_script(i: int, paragraphs: int) -> str:
    """Try ``i``'s script: es/en paragraphs in turn, the first line new each try (its render not cached)."""
    lines = []
    for k in range(paragraphs):
        anchor, lang = F5_VOICES[k % len(F5_VOICES)]
        text = (f"Buenas noches, edición número {i + 1}." if k == 0 else
                ES_LINES[k % len(ES_LINES)] if lang == "es" else BULLETIN[k % len(BULLETIN)])
        lines.append(f"[{anchor}{':es' if lang == 'es' else ''}] {text}")
    return "\n".join(lines)


def percentile(values: list[float], share: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


class Driver:
    """The pilot's side of the run: waits on the studio's state, presses keys, stamps the first sound."""

    def __init__(self, app: StudioApp, pilot: Pilot[None]) -> None:
        self.app, self.pilot = app, pilot
        self.events: list[tuple[float, object]] = []
        self.samples: dict[str, list[tuple[float, float, bool]]] = {row: [] for row in ROWS}
        forward = app.studio.report

        def report(event: StudioEvent) -> None:  # the engine thread's report, stamped before the app gets it
            self.events.append((time.perf_counter(), event))
            forward(event)

        app.studio.report = report

    async def until(self, probe: Callable[[], T | None], what: str) -> T:
        deadline = time.monotonic() + HANG_S
        while not (found := probe()):
            failed = next((e for _, e in self.events if isinstance(e, Failure)), None)
            if failed is not None:
                raise UserError(f"the studio failed while waiting for {what}: {failed.title}: {failed.message}")
            if time.monotonic() > deadline:
                raise UserError(f"gave up waiting for {what} after {HANG_S:.0f} s")
            await self.pilot.pause(0.005)
        return found

    def idle(self, wants: set[Want]) -> bool:
        studio = self.app.studio
        prebuild = studio.prebuild
        return (studio.commands.empty() and studio.state == "ready" and not studio.rendering_play
                and prebuild.settled() and wants <= prebuild.done | prebuild.failed)

    async def press(self, row: str | None, keys: tuple[str, ...], wants: set[Want], voice: VoiceRef) -> None:
        """Wait until idle with ``wants`` built, press ``keys``, time the last one to the first sound (kept in
        ``row``), check that ``voice`` is heard, then stop the audio."""

        studio = self.app.studio
        await self.until(lambda: self.idle(wants), "the studio at rest")
        misses = studio.cache.misses
        for key in keys[:-1]:
            await self.pilot.press(key)
        t0 = time.perf_counter()
        await self.pilot.press(keys[-1])
        at, event = await self.until(lambda: next(((t, e) for t, e in list(self.events)
                                                   if t >= t0 and isinstance(e, PlaybackStarted)), None),
                                     f"the first sound after {'+'.join(keys)}")
        take = studio.last_take
        heard = take.sentences[0].voice if take is not None else None
        if heard != voice:
            raise UserError(f"{'+'.join(keys)} played {heard} instead of {voice}")
        if row is not None:
            assert isinstance(event, PlaybackStarted)
            self.samples[row].append(((at - t0) * 1000.0, event.ttfa_s * 1000.0, studio.cache.misses == misses))
        await self.pilot.press("f8")

    def script(self, text: str, column: int) -> None:
        # lazy: start-up (rich, textual)
        from omnistudio.widgets.script_editor import ScriptEditor

        editor = self.app.screen.query_one(ScriptEditor)
        editor.load_text(text)
        editor.focus()
        editor.move_cursor((0, column))

    def highlight(self, anchor: str) -> None:
        # lazy: start-up (textual)
        from textual.widgets import OptionList

        options = self.app.screen.query_one("#anchor-list", OptionList)
        options.highlighted = [o.id for o in options._options].index(anchor)

    async def audition(self, i: int) -> None:
        a, b = (AUDITION_ANCHORS[(2 * i + k) % len(AUDITION_ANCHORS)] for k in (0, 1))
        self.script(f"[ruby] {_en_line(i, 'said the desk on take')}", 10)
        for anchor, row in ((a, "audition_cold"), (b, None)):
            self.highlight(anchor)
            await self.press(row, ("ctrl+t",), {(VoiceRef(anchor=anchor), "en")}, VoiceRef(anchor=anchor))
        await self.press("audition_ab", ("ctrl+r",), set(), VoiceRef(anchor=a))

    async def slider(self, i: int) -> None:
        # lazy: start-up (rich, textual)
        from omnistudio.widgets.morph_slider import MorphSlider

        line = _en_line(i, "on line")
        self.script(f"[ruby+storm@0.50] {line}", 20)
        slider = self.app.screen.query_one(MorphSlider)
        await self.until(lambda: slider.value == 0.50, "the slider on the paragraph's ratio")
        slider.focus()
        start = VoiceRef(blend=Blend("ruby", "storm", 0.50))
        cold, next_ = (VoiceRef(blend=Blend("ruby", "storm", alpha)) for alpha in (0.65, 0.70))
        await self.press("slider_cold", ("right", "right", "right"), {(start, "en")}, cold)
        prebuild = self.app.studio.prebuild
        await self.until(lambda: any(h.voice == next_ and h.sentences[0].text == line for h in prebuild.rendered),
                         "the neighbour rendered ahead")
        await self.press("slider_neighbour", ("right",), set(), next_)

    async def f5(self, i: int, paragraphs: int) -> None:
        self.script(f5_script(i, paragraphs), 0)
        wants = {(VoiceRef(anchor=a), lang) for a, lang in F5_VOICES[:paragraphs]}
        await self.press("f5", ("f5",), wants, VoiceRef(anchor=F5_VOICES[0][0]))


async def drive(engine: Engine, args: argparse.Namespace, home: Path) -> dict[str, list[tuple[float, float, bool]]]:
    # lazy: start-up (concurrent, numpy, pyebur128, rich, scipy, textual, urllib)
    from omnistudio.app import StudioApp
    from omnistudio.studio.controller import Studio

    settings = StudioSettings(num_step=args.num_step, seed=args.seed, guidance_scale=args.guidance, anchor="ruby")
    studio = Studio(engine=engine, settings=settings, audio="virtual", virtual_rate=1.0)
    app = StudioApp(studio, autosave=Autosave(home / "autosave.script", interval=0.0), welcome=False)
    async with app.run_test(size=SIZE) as pilot:
        driver = Driver(app, pilot)
        await driver.until(lambda: app.studio.loaded and app.studio.state == "ready", "the engine")
        jobs: list[tuple[str, Callable[[int], Any]]] = [
            ("audition", driver.audition), ("slider", driver.slider),
            ("F5", lambda i: driver.f5(i, args.sentences))]
        for j, (name, job) in enumerate(jobs):
            for i in range(args.tries):
                args.progress(j * args.tries + i, len(jobs) * args.tries, f"studio: {name}, try {i + 1}")
                await job(i)
    return driver.samples


def run(args: argparse.Namespace, open_engine: OpenEngine) -> dict[str, object]:
    if not 1 <= args.tries <= MAX_TRIES:
        raise UserError(f"--tries {args.tries} is out of range 1..{MAX_TRIES}")
    engine = open_engine(args, "fast")
    saved = os.environ.get("OMNISTUDIO_HOME")
    with tempfile.TemporaryDirectory(prefix="omnistudio-bench-studio-") as home:
        os.environ["OMNISTUDIO_HOME"] = home
        try:
            samples = asyncio.run(drive(engine, args, Path(home)))
        finally:
            if saved is None:
                os.environ.pop("OMNISTUDIO_HOME", None)
            else:
                os.environ["OMNISTUDIO_HOME"] = saved
    # lazy: start-up (textual)
    from omnistudio.screens.morph import REST_S

    rows: dict[str, dict[str, object]] = {}
    for row, (label, goal, on) in ROWS.items():
        key = [k for k, _, _ in samples[row]]
        rest = [r for _, r, _ in samples[row]]
        judged = key if on == "key" else rest
        rows[row] = {"label": label.replace("es/en", f"{args.sentences}-paragraph es/en"),
                     "key_p50_ms": round(statistics.median(key), 1), "key_p95_ms": round(percentile(key, 0.95), 1),
                     "asked_p50_ms": round(statistics.median(rest), 1),
                     "asked_p95_ms": round(percentile(rest, 0.95), 1),
                     "goal_p95_ms": goal, "goal_on": on,
                     "meets_goal": None if goal is None else percentile(judged, 0.95) <= goal,
                     "cache_hits": sum(hit for _, _, hit in samples[row]), "tries": len(key),
                     "key_ms": [round(k, 1) for k in key], "asked_ms": [round(r, 1) for r in rest]}
    return {"model": engine.loaded.spec.name, "device": str(engine.loaded.device), "dtype": engine.loaded.dtype_name,
            "compile": engine.compile_state, "tries": args.tries, "num_step": args.num_step,
            "paragraphs": args.sentences, "rest_s": REST_S, "size": list(SIZE), "audio": "virtual, real time",
            "first_sound": "the controller's PlaybackStarted (first audio queued to the player); key: from the "
                           "key press (the slider's includes its rest delay); asked: PlaybackStarted.ttfa_s, from "
                           "the Play command's ask (the slider: from its rest)",
            "rows": rows}


def print_result(result: Mapping[str, Any]) -> None:
    # lazy: start-up (rich)
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"studio: {result['model']} on {result['device']} ({result['dtype']}, compile "
                  f"{result['compile']}), {result['tries']} tries, {result['num_step']} steps, "
                  f"{result['size'][0]}x{result['size'][1]}, audio {result['audio']}")
    for col in ("key -> first sound", "key p50", "key p95", "asked p50", "asked p95", "cached", "goal p95"):
        table.add_column(col, justify="left" if col.startswith("key ->") else "right", no_wrap=True)
    for row in result["rows"].values():
        goal = row["goal_p95_ms"]
        verdict = "" if goal is None else f"{goal:.0f} {row['goal_on']}: {'met' if row['meets_goal'] else 'NOT met'}"
        table.add_row(row["label"], f"{row['key_p50_ms']:.0f}", f"{row['key_p95_ms']:.0f}",
                      f"{row['asked_p50_ms']:.0f}", f"{row['asked_p95_ms']:.0f}",
                      f"{row['cache_hits']}/{row['tries']}", verdict)
    console = Console()
    if not console.is_terminal:  # a file or a pipe: no terminal width to keep to
        console = Console(width=110)
    console.print(table)
    console.print(f"ms; first sound = {result['first_sound']}; the slider rests {result['rest_s'] * 1000:.0f} ms "
                    "after its last step (in its key times, not in its asked times); goal p95 judged on the key "
                    "time (key) or from the slider's rest (rest); p95 = nearest rank")
