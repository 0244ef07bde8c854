"""The headless Studio controller: blends from the morph slider, and stop within one diffusion step."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from support.wait import wait_until as wait

from omnistudio.engine.engine import Engine
from omnistudio.engine.sampler import FastSampler
from omnistudio.script import Sentence
from omnistudio.studio.controller import Studio
from omnistudio.studio.events import EngineState, Notice, SentenceRendered
from omnistudio.voices.resolve import Blend, VoiceRef




@pytest.fixture()
def studio(tiny_engine, voice_roster):  # noqa: ANN001, ANN201
    """A studio whose anchors are the test roster's recorded speakers (its own engine and caches)."""
    events: list[object] = []
    engine = Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))
    s = Studio(engine=engine, warm=False, audio="virtual", report=events.append).start()
    s.events = events  # type: ignore[attr-defined]
    wait(lambda: s.state == "ready", what="engine ready")
    yield s
    s.close()


def test_morph_slider_blend_is_built_and_auditioned(studio) -> None:  # noqa: ANN001
    from omnistudio.voices.blend import blend_cache_for

    studio.select("ruby", "en")
    assert studio.set_blend("storm", 0.7) is True
    wait(lambda: ("ruby", "storm", "en", 0.7) in blend_cache_for(studio.engine), what="blend built")
    studio.audition("ruby", "en")
    wait(lambda: any(isinstance(e, SentenceRendered) for e in studio.events), what="audition rendered")
    assert studio.last_take.sentences[0].voice == VoiceRef(blend=Blend("ruby", "storm", 0.7))  # used the blend
    assert studio.set_blend("ruby", 0.5) is False  # an anchor with itself
    assert any(isinstance(e, Notice) and "itself" in e.message for e in studio.events)
    assert studio.set_blend("storm", 1.0) is True and studio.blend is None  # alpha 1: the anchor alone


def test_stop_takes_effect_within_one_diffusion_step(studio) -> None:  # noqa: ANN001
    steps: list[int] = []

    def count(_module: Any, _args: Any) -> None:
        if threading.current_thread().name != "omnistudio-stream":  # the take's render worker
            return
        steps.append(1)
        if len(steps) == 3:
            studio.stop()  # as if the producer pressed stop during the third step

    handle = studio.engine.model.llm.register_forward_pre_hook(count)
    try:
        studio.select("ruby", "en")
        long = "This is a long sentence about the evening news that takes several diffusion steps to render."
        studio._start_play([Sentence(0, long, None, "en", 1, end=len(long))])
        wait(lambda: len(steps) >= 3, what="three steps")
        wait(lambda: studio.state == "ready" and not studio.rendering_play, what="back to ready")
    finally:
        handle.remove()
    assert len(steps) == 3  # the cancelled step never ran its forward pass; no further step started
    assert not any(isinstance(e, SentenceRendered) for e in studio.events)
    assert any(isinstance(e, EngineState) and e.state == "ready" for e in studio.events)
    # the telemetry's "ready" line names the backbone's device and dtype
    assert all(e.detail == "cpu · fp32" for e in studio.events if isinstance(e, EngineState) and e.state == "ready")


def test_a_read_through_is_monitored_and_metered_at_the_level_of_its_export(tiny_engine, tmp_path) -> None:  # noqa: ANN001
    """The monitor carries the finishing gain: after a whole read-through the meter's integrated figure is
    within 1 LU of the exported file's (the export is normalised to the target; the take was not)."""
    from omnistudio.audio.loudness import analyze_file
    from omnistudio.studio.events import Exported

    events: list[object] = []
    s = Studio(engine=tiny_engine, warm=False, audio="virtual", virtual_rate=0.0, report=events.append).start()
    try:
        wait(lambda: s.state == "ready", what="engine ready")
        s.select("ruby", "en")
        script = ("Good evening. Here are tonight's headlines.\nThe markets closed higher today, led by "
                  "technology shares.\nAnd now the weather: rain in the north, sun in the south.")
        s.play(script)
        output = s.output
        assert output is not None

        def played() -> bool:
            output.advance(2400)  # the held clock: 100 ms of the device at a time, the meter fed after each
            s.poll()
            return not s.rendering_play and s.player.ring.total_read >= s.schedule.end > 0

        wait(played, what="the read-through played")
        heard = s.meter.integrated()
        s.export(script, tmp_path / "take.wav", measure=False)
        wait(lambda: any(isinstance(e, Exported) for e in events), what="the export")
    finally:
        s.close()
    exported = analyze_file(tmp_path / "take.wav").integrated_lufs
    assert abs(exported - s.settings.target_lufs) < 0.5
    assert abs(heard - exported) <= 1.0, f"monitored at {heard:.1f} LUFS, exported at {exported:.1f}"
