"""Voices ready before they are asked for (issue 28): the studio's background prompt builds.

On a fresh home (the tiny model, an empty prompt folder, the shipped roster, whose anchors are built by
voice design: diffusion steps), with nothing asked of it:
- the example script's voices are built while the studio is idle; the first F5 then runs no prepare step
  (every voice was ready: no prompt built, loaded or blended, no prepare progress), and its path to the
  first audio is a second F5's plus the first sentence's render, nothing else;
- a play asked for while a background build runs starts after at most one more diffusion step of the
  build (a step counter, no clock); the build is built again once the play is over;
- the anchor list shows the highlighted anchor's prompt go missing -> building -> ready (Pilot);
- through a remote link the builds are the server's prepare requests (a stand-in server).
Every wait is on state (the builds settled, an event seen), bounded only by the hang guard.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from support.studio import wait_for
from support.wait import HANG_S, wait_until


@pytest.fixture
def fresh(tiny_engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fresh home for prompts: an empty prompt folder, no user roster, a new engine on the tiny model
    (its own prompt and blend caches) behind the fast sampler, as the studio opens it; prompt builds counted."""
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler
    from omnistudio.voices import prompts

    monkeypatch.setattr("omnistudio.voices.prompts.prompt_dir", lambda: tmp_path / "prompts")
    monkeypatch.setattr("omnistudio.voices.roster.user_roster_path", lambda: tmp_path / "no-user-roster.toml")
    built: list[tuple[str, str]] = []
    real = prompts.prompt_from_source

    def counted(engine: Any, source: Any, anchor_id: str, *args: Any, **kwargs: Any) -> Any:
        built.append((anchor_id, source.lang))
        return real(engine, source, anchor_id, *args, **kwargs)

    monkeypatch.setattr(prompts, "prompt_from_source", counted)
    engine = Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))
    engine.built = built  # type: ignore[attr-defined]
    return engine


def _studio(engine: Any, events: list[object], **kwargs: Any) -> Any:
    from omnistudio.studio.controller import Studio

    return Studio(engine=engine, warm=False, audio="virtual", virtual_rate=50.0, report=events.append, **kwargs)


def _to_first_audio(events: list[object]) -> list[tuple[Any, ...]]:
    """What a play did before its first audio: prepare steps (voice, lang, action) and sentences rendered."""
    from omnistudio.studio import events as ev

    out: list[tuple[Any, ...]] = []
    for event in events:
        if isinstance(event, ev.PlaybackStarted):
            return out
        if isinstance(event, ev.Preparing):
            out.append(("prepare", event.voice, event.lang, event.action))
        elif isinstance(event, ev.SentenceRendered):
            out.append(("rendered", event.index))
    raise AssertionError(f"no first audio in {events}")


def test_first_f5_after_the_background_builds_runs_no_prepare_step(fresh: Any, tmp_path: Path) -> None:
    asyncio.run(_first_f5(fresh, tmp_path))


async def _first_f5(engine: Any, tmp_path: Path) -> None:
    from omnistudio.app import StudioApp
    from omnistudio.studio import events as ev
    from omnistudio.studio.autosave import Autosave
    from omnistudio.studio.welcome import EXAMPLE_SCRIPT

    events: list[object] = []
    studio = _studio(engine, events)
    # a first start: the example script in the editor, its first anchor selected, the roster's own rows
    app = StudioApp(studio, autosave=Autosave(tmp_path / "autosave.script", interval=0.0), welcome=True)
    async with app.run_test(size=(120, 40)) as pilot:
        forward = studio.report
        studio.report = lambda event: (events.append(event), forward(event))
        prebuild = studio.prebuild
        await wait_for(pilot, lambda: len(prebuild.wanted()) == 3 and prebuild.settled(), timeout=HANG_S,
                       what="the example script's voices built in the background")
        assert app.main_screen.query_one("#editor").text == EXAMPLE_SCRIPT
        assert [(v.key(), lang) for v, lang in prebuild.wanted()] == [
            ("ruby", "en"), ("valentina", "es"), ("ruby+valentina@0.60", "en")]
        assert prebuild.built == 3 and not prebuild.failed
        assert sorted(engine.built) == [("ruby", "en"), ("valentina", "en"), ("valentina", "es")]
        assert not [e for e in events if isinstance(e, ev.Preparing)], "a background build showed prepare progress"
        plays = []
        for _ in range(2):
            del events[:]
            builds, passes = len(engine.built), studio.link.calls
            await pilot.press("f5")
            await wait_for(pilot, lambda: any(isinstance(e, ev.PlaybackFinished) for e in events), timeout=HANG_S,
                           what="the take played")
            assert [e.cancelled for e in events if isinstance(e, ev.PlaybackFinished)] == [False]
            plays.append((list(events), len(engine.built) - builds, studio.link.calls - passes))
    (first, first_builds, first_passes), (second, second_builds, second_passes) = plays
    # no prepare step ran: every voice was ready (nothing built, loaded or blended), no prompt built
    assert {e.action for e in first if isinstance(e, ev.Preparing)} <= {"ready", "done"}, first
    assert first_builds == second_builds == 0
    # the first F5's path to its first audio is the second's (seed locked: every sentence from the take
    # cache) plus one sentence's render, its voice found ready
    assert _to_first_audio(first) == [("prepare", "ruby", "en", "ready"), ("prepare", "ruby", "en", "done"),
                                      ("rendered", 0)]
    assert _to_first_audio(second) == [("rendered", 0)]
    assert first_passes >= 1 and second_passes == 0


def test_a_play_preempts_a_background_build_within_one_step(fresh: Any) -> None:
    from omnistudio.studio import events as ev

    events: list[object] = []
    studio = _studio(fresh, events).start()
    try:
        prebuild = studio.prebuild
        wait_until(lambda: studio.state == "ready", what="the studio ready")
        prebuild.highlight("ruby", "en")
        wait_until(lambda: prebuild.settled() and prebuild.done, what="ruby's prompt built in the background")
        reached, go = threading.Event(), threading.Event()
        held_at: list[int] = []

        def hold_at_third_step() -> None:  # the engine thread, inside valentina's build
            if prebuild.building is not None and prebuild.building[0].key() == "valentina" and not held_at:
                if prebuild.steps - start == 3:
                    held_at.append(prebuild.steps)
                    reached.set()
                    assert go.wait(HANG_S), "the test never asked for the play"

        start = prebuild.steps
        prebuild.step_hook = hold_at_third_step
        prebuild.highlight("valentina", "en")
        assert reached.wait(HANG_S), "valentina's build never reached its third step"
        asked_at = prebuild.steps  # the third step is under way: it may finish
        studio.audition("ruby", "en")  # a ready voice
        go.set()
        wait_until(lambda: any(isinstance(e, ev.PlaybackStarted) for e in events), what="the audition's first audio")
        assert prebuild.steps - asked_at <= 1, f"the build ran {prebuild.steps - asked_at} steps after the play was asked for"
        assert prebuild.preempted == 1 and ("valentina", "en") not in {(v.key(), lang) for v, lang in prebuild.done}
        assert {e.action for e in events if isinstance(e, ev.Preparing)} <= {"ready", "done"}
        # once the audition is over the build starts again, and finishes
        wait_until(lambda: any(isinstance(e, ev.PlaybackFinished) for e in events), what="the audition played")
        prebuild.step_hook = None
        wait_until(lambda: prebuild.settled() and len(prebuild.done) == 2, what="valentina built after the play")
        assert prebuild.marks()[1] == {("ruby", "en"): "ready", ("valentina", "en"): "ready"}
        assert sorted(fresh.built) == [("ruby", "en"), ("valentina", "en"), ("valentina", "en")]
    finally:
        studio.close()


def test_the_anchor_list_shows_missing_building_ready(fresh: Any, tmp_path: Path) -> None:
    asyncio.run(_anchor_states(fresh, tmp_path))


async def _anchor_states(engine: Any, tmp_path: Path) -> None:
    from omnistudio.app import StudioApp
    from omnistudio.studio.autosave import Autosave
    from omnistudio.voices import prompts
    from omnistudio.widgets.anchor_picker import STATE_MARK, AnchorPicker

    studio = _studio(engine, [])
    studio.prebuild.enabled = False  # until the list was seen as it starts
    reached, go = threading.Event(), threading.Event()

    def hold() -> None:  # the engine thread: the first step of the build is held until the test saw it
        reached.set()
        assert go.wait(HANG_S), "the test never let the build go on"

    studio.prebuild.step_hook = hold
    app = StudioApp(studio, autosave=Autosave(tmp_path / "autosave.script", interval=0.0), welcome=False)
    async with app.run_test(size=(120, 40)) as pilot:
        picker = app.main_screen.query_one(AnchorPicker)
        options = picker.query_one("#anchor-list")
        await wait_for(pilot, lambda: studio.state == "ready" and len(picker.rows) > 1, what="ready, with the roster")
        row = picker.rows[1]

        def shown() -> str:
            """The state the list shows for the row: its mark, read from the option's label."""
            label = str(options.get_option(row.id).prompt)
            return next(state for state, (mark, _) in STATE_MARK.items() if label[2:].startswith(mark))

        seen = [shown()]
        studio.prebuild.enabled = True
        options.focus()
        await pilot.press("down")  # the second anchor highlighted: its prompt is built in the background
        await wait_for(pilot, lambda: reached.is_set() and shown() == "building", what="the list showing it building")
        seen.append(shown())
        assert studio.prebuild.building is not None and studio.prebuild.building[0].key() == row.id
        go.set()
        await wait_for(pilot, lambda: shown() == "ready", what="the list showing it ready")
        seen.append(shown())
        assert seen == ["missing", "building", "ready"]
        assert prompts.prompt_path(row.id, picker.lang).is_file()  # built and saved
        assert prompts.cache_for(engine).get(row.id, picker.lang) is not None  # and on the device


def test_through_a_remote_link_the_builds_are_the_servers_prepares() -> None:
    from omnistudio.client.engine import RemoteEngine
    from omnistudio.studio import events as ev
    from omnistudio.studio.controller import Studio
    from omnistudio.studio.settings import StudioSettings
    from omnistudio.studio.welcome import EXAMPLE_SCRIPT
    from support.remote import FakeServer

    server = FakeServer().start()
    events: list[object] = []
    studio = Studio(link=RemoteEngine(server.url), audio="virtual", warm=False, report=events.append,
                    settings=StudioSettings(anchor="ruby")).start()
    try:
        wait_until(lambda: studio.state == "ready", what="the studio ready")
        studio.prebuild.script(EXAMPLE_SCRIPT)
        wait_until(lambda: studio.prebuild.settled() and studio.prebuild.built == 3, what="the background builds")
        asked = [(v["voice"], v["lang"]) for m in server.requests if m.get("type") == "prepare" for v in m["voices"]]
        assert asked == [("ruby", "en"), ("valentina", "es"), ("ruby+valentina@0.60", "en")]
        assert studio.prebuild.marks()[1] == {("ruby", "en"): "ready", ("valentina", "es"): "ready",
                                              ("valentina", "en"): "ready"}
        assert not [e for e in events if isinstance(e, (ev.Preparing, ev.Failure, ev.Notice))]
    finally:
        studio.close()
        server.stop()
