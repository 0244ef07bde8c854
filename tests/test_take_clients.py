"""Every client builds a take the same way: the studio's export, `omnistudio render -o` and a direct
take call give bit-identical samples; the studio reuses takes (seed locked) and prepares each voice
before its own first sentence. Voices are recorded (flite) references, so the three anchors really differ."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.wait import wait_until as wait
import soundfile as sf

SCRIPT = ("[ana] Good evening, here is the news.\n"
          "[ben:es] Buenas noches, estas son las noticias.\n"
          "[cy:en] The weather stays dry tonight.\n"
          "[ana+ben@0.6] And now, the sport.\n")
STEPS, SEED = 2, 7




def finished(studio: Any) -> int:
    from omnistudio.studio.events import PlaybackFinished

    done = [e for e in studio.events if isinstance(e, PlaybackFinished)]
    assert not any(e.cancelled for e in done)
    return len(done)


def fast_engine(tiny_engine: Any) -> Any:
    """A fresh engine over the session's tiny weights (empty prompt cache), with the fast sampler."""
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler

    return Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))


def open_studio(engine: Any, **kwargs: Any) -> Any:
    from omnistudio.studio.controller import Studio
    from omnistudio.studio.settings import StudioSettings

    events: list[object] = []
    stamps: list[float] = []  # when each event was reported (time.monotonic)

    def report(event: object) -> None:
        stamps.append(time.monotonic())
        events.append(event)

    settings = StudioSettings(num_step=STEPS, seed=SEED, seed_lock=True)
    studio = Studio(engine=engine, warm=False, settings=settings, report=report, **kwargs).start()
    studio.events = events  # type: ignore[attr-defined]
    studio.stamps = stamps  # type: ignore[attr-defined]
    wait(lambda: studio.state == "ready", what="studio ready")
    return studio


def test_studio_export_render_and_direct_take_are_bit_identical(tiny_engine: Any, flite_desk: Path,  # noqa: F811
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.cli import main
    from omnistudio.studio.events import Exported
    from omnistudio.take.link import LocalEngine
    from omnistudio.take.options import TakeOptions
    from omnistudio.take.pipeline import build_take
    from omnistudio.take.sinks import FileSink

    script = flite_desk / "script.txt"
    script.write_text(SCRIPT, encoding="utf-8")
    from omnistudio.audio.finishing import FinishingOptions
    from omnistudio.audio.profiles import RULES

    # 1. omnistudio render -o (its own engine, loaded from the tiny checkpoint; builds the prompts), to the
    # studio's loudness rule (EBU R128 by default: its 48 kHz 24-bit dual-mono file)
    by_render = flite_desk / "render.wav"
    assert main(["render", str(script), "-o", str(by_render), "--model", "tiny", "--device", "cpu",
                 "--num-step", str(STEPS), "--seed", str(SEED), "--profile", "ebu"]) == 0
    # 2. a direct take call
    direct = flite_desk / "direct.wav"
    engine = fast_engine(tiny_engine)
    build_take(LocalEngine(engine), SCRIPT, TakeOptions(num_step=STEPS, seed=SEED,
                                                        finishing=FinishingOptions.for_rule(RULES["ebu"]))
               ).run([FileSink(direct)])
    # 3. the studio: play, then export what was heard
    studio = open_studio(fast_engine(tiny_engine), audio="virtual", virtual_rate=50.0)
    try:
        studio.play(SCRIPT)
        wait(lambda: finished(studio) == 1, what="played through")
        calls = studio.link.calls
        by_studio = flite_desk / "studio.wav"
        studio.export(SCRIPT, by_studio)
        wait(lambda: any(isinstance(e, Exported) for e in studio.events), what="export")
        exported = next(e for e in studio.events if isinstance(e, Exported))
        assert studio.link.calls == calls and exported.report.rendered == 0  # what was heard, not re-rendered
        assert exported.report.reused == 4
    finally:
        studio.close()
    a, sr = sf.read(str(by_render), dtype="float32")
    b, _ = sf.read(str(direct), dtype="float32")
    c, _ = sf.read(str(by_studio), dtype="float32")
    assert sr == 48_000 and a.shape[1] == 2 and a.size > 0
    assert np.array_equal(a, b) and np.array_equal(a, c)


def test_replay_with_the_seed_locked_renders_nothing_again(tiny_engine: Any, flite_desk: Path) -> None:  # noqa: F811
    from omnistudio.studio.events import SentenceRendered

    studio = open_studio(fast_engine(tiny_engine), audio="virtual", virtual_rate=50.0)
    try:
        counted: list[int] = []
        real = studio.engine.render_tokens

        def counting(*args: Any, **kwargs: Any) -> Any:
            counted.append(len(args[0]))
            return real(*args, **kwargs)

        studio.engine.render_tokens = counting  # every engine call of the studio goes through here
        for n in (1, 2):
            studio.play(SCRIPT)
            wait(lambda n=n: finished(studio) == n, what="played through")
        assert sum(counted) == 4  # four sentences rendered once; the replay took every one from the cache
        assert sum(isinstance(e, SentenceRendered) for e in studio.events) == 8  # both plays reported
        studio.play(SCRIPT.replace("dry tonight", "wet tomorrow"))
        wait(lambda: finished(studio) == 3, what="edited play")
        assert sum(counted) == 5  # only the edited sentence
    finally:
        studio.close()


@pytest.mark.device
def test_each_prompt_is_built_before_its_own_first_sentence(
        tiny_engine: Any, flite_desk: Path, null_sink: str) -> None:  # noqa: F811
    """The first sound waits for the first sentence's voice only: ben's prompt is built while ana's first
    sentence plays, and before ben's own sentence renders. (Ben's build is held until the first sound: a
    studio that built every prompt first would hold it to the hang guard and show it before the sound.)
    What is asserted is the order of the builds and the sound, not seconds."""
    from omnistudio.studio.events import Failure, PlaybackStarted, Preparing, SentenceRendered

    engine = fast_engine(tiny_engine)
    builds: list[float] = []
    build = engine.prompt_from_audio

    def sounding() -> bool:
        return any(isinstance(e, PlaybackStarted) for e in studio.events)

    def held_build(*args: Any, **kwargs: Any) -> Any:
        if builds:  # the second build, ben's: only once ana's first sentence sounds
            deadline = time.monotonic() + 60  # a hang guard: nothing asserts on it
            while not sounding() and time.monotonic() < deadline:
                time.sleep(0.01)
        builds.append(time.monotonic())
        return build(*args, **kwargs)

    engine.prompt_from_audio = held_build  # every prompt build of this engine
    studio = open_studio(engine, audio="device")
    try:
        assert not studio.silent
        text = ("[ana] Good evening. The news.\n"  # short: the whole take plays in real time on the null sink
                "[ben:es] Buenas noches.\n"
                "[ana:en] That is all for tonight.\n")
        studio.play(text)
        wait(lambda: finished(studio) == 1, what="rendered through")
        studio.player.drain(timeout=10)
        assert not any(isinstance(e, Failure) for e in studio.events)
        kinds = [(e.action, e.voice, e.lang) if isinstance(e, Preparing) else "sound"
                 for e in studio.events if isinstance(e, (Preparing, PlaybackStarted))]
        first_sound = kinds.index("sound")
        assert ("build", "ana", "en") in kinds[:first_sound] and ("build", "ben", "es") in kinds[first_sound:]
        sound_at = next(at for at, e in zip(studio.stamps, studio.events) if isinstance(e, PlaybackStarted))
        ben_rendered_at = next(at for at, e in zip(studio.stamps, studio.events)
                               if isinstance(e, SentenceRendered) and e.index == 2)
        assert len(builds) == 2 and builds[0] < sound_at < builds[1] < ben_rendered_at, (builds, sound_at)
    finally:
        studio.close()
