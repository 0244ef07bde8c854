"""One blend on every path: a blend at alpha 1 is the voice alone, bit for bit, and at alpha 0 it is the
engine's blend (B's frames at A's reference positions, engine/morph.py), through `render -o` and the
studio (the server and the remote client: test_blend_server.py; `say`: test_blend.py). The anchors are
the test roster's recorded speakers (flite slt and kal), so a wrong voice or a wrong seed changes the audio.

A blend at alpha 1 must also take the voice's seed: the seed policy hashes the voice key, and the key of
``ruby+storm@1.00`` used to differ from ``ruby`` (a different seed, slightly different samples)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from support.wait import wait_until as wait

TEXT = "Markets rose today after a long week."
STEPS, SEED = 4, 3


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.size > 0 and np.array_equal(a, b)


def read(path: Path) -> np.ndarray:
    data, rate = sf.read(str(path), dtype="float32")
    return np.column_stack([data, np.full(len(data), rate, dtype=np.float32)])  # the rate is part of "same"


def direct_take(engine: Any, script: str, path: Path, voice_for: Any = None, finishing: Any = None) -> np.ndarray:
    """``script`` as a take on ``engine`` written by the file sink (what `render -o` writes); ``voice_for``
    replaces the voice resolver (item -> prompt object); ``finishing``: another file than render's default."""
    from omnistudio.take.link import LocalEngine
    from omnistudio.take.options import TakeOptions
    from omnistudio.take.pipeline import build_take
    from omnistudio.take.sinks import FileSink

    options = TakeOptions(num_step=STEPS, seed=SEED, **({"finishing": finishing} if finishing is not None else {}))
    build_take(LocalEngine(engine, voice_for=voice_for), script, options).run([FileSink(path)])
    return read(path)


def engine_blend_at_zero(engine: Any) -> Any:
    """The engine's own blend of ruby and storm at alpha 0 (blend_prompts, no voices/ cache in between)."""
    from omnistudio.engine.morph import blend_prompts
    from omnistudio.voices.prompts import anchor_prompt

    ruby, storm = (anchor_prompt(engine, name, "en") for name in ("ruby", "storm"))
    assert ruby.ref_audio_tokens.size(-1) != storm.ref_audio_tokens.size(-1)  # storm really is stretched
    blend = blend_prompts(engine.model, ruby, storm, 0.0, names=("ruby", "storm"), lang="en")
    return lambda _item: blend


def render(script: str, path: Path) -> np.ndarray:
    from omnistudio.cli import main

    source = path.with_suffix(".txt")
    source.write_text(script + "\n", encoding="utf-8")
    assert main(["render", str(source), "-o", str(path), "--model", "tiny", "--device", "cpu",
                 "--num-step", str(STEPS), "--seed", str(SEED)]) == 0
    return read(path)


def test_a_blend_at_one_is_the_plain_voice_value() -> None:
    """The one place: VoiceRef makes a blend at alpha 1 its first anchor (key, equality, hash), from every
    form a blend comes in (the typed value, the text a server or a script tag gives)."""
    from omnistudio.script import parse_script
    from omnistudio.take.stream import sentence_voice
    from omnistudio.voices.resolve import Blend, VoiceRef, parse_voice

    plain = VoiceRef.anchor_of("ruby")
    forms = [VoiceRef(blend=Blend("Ruby", "storm", 1.0)), VoiceRef.blend_of("ruby", "storm", 0.999),
             parse_voice("ruby+storm@1")[0], parse_voice("ruby+storm@1.00:en")[0],
             sentence_voice(parse_script("[ruby+storm@1.0] Hello.").sentences[0], None)]
    for ref in forms:
        assert ref == plain and hash(ref) == hash(plain) and ref.key() == "ruby" and ref.kind == "anchor"
    below = VoiceRef.blend_of("ruby", "storm", 0.99)
    assert below.kind == "blend" and below.key() == "ruby+storm@0.99"
    zero = VoiceRef.blend_of("ruby", "storm", 0.0)
    assert zero.kind == "blend" and zero.key() == "ruby+storm@0.00"


def test_render_blend_at_one_is_the_voice_alone_and_at_zero_the_engine_blend(
        voice_engine: Any, voice_roster: Any, tmp_path: Path) -> None:
    at_one = render(f"[ruby+storm@1.0] {TEXT}", tmp_path / "one.wav")
    alone = render(f"[ruby] {TEXT}", tmp_path / "ruby.wav")
    assert same(at_one, alone)  # bit for bit: same prompt, same seed, same finishing
    at_zero = render(f"[ruby+storm@0.0] {TEXT}", tmp_path / "zero.wav")
    want = direct_take(voice_engine, f"[ruby+storm@0.0] {TEXT}", tmp_path / "want.wav",
                       voice_for=engine_blend_at_zero(voice_engine))
    assert same(at_zero, want)
    assert not same(at_zero, alone)


@pytest.fixture()
def studio(tiny_engine: Any, voice_roster: Any) -> Any:
    """A studio on the test roster's recorded speakers (its own engine and caches), virtual audio."""
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler
    from omnistudio.studio.controller import Studio
    from omnistudio.studio.settings import StudioSettings

    events: list[object] = []
    engine = Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))
    s = Studio(engine=engine, warm=False, audio="virtual", report=events.append,
               settings=StudioSettings(num_step=STEPS, seed=SEED, seed_lock=True)).start()
    s.events = events  # type: ignore[attr-defined]
    wait(lambda: s.state == "ready", what="engine ready")
    yield s
    s.close()


def export(studio: Any, text: str, path: Path) -> np.ndarray:
    from omnistudio.studio.events import Exported

    def count() -> int:
        return sum(isinstance(e, Exported) for e in studio.events)

    before = count()
    studio.export(text, path)
    wait(lambda: count() > before, what=f"export of {path.name}")
    return read(path)


def test_studio_blend_at_one_is_the_voice_alone_and_at_zero_the_engine_blend(
        studio: Any, voice_engine: Any, tmp_path: Path) -> None:
    """The morph slider and the [a+b@x] tag, exported from the studio, against the same take rendered
    directly: at 1 the voice alone, at 0 the engine's blend."""
    from omnistudio.studio.adapters import finishing_options

    finishing = finishing_options(studio.settings)  # the studio's file: its loudness rule's
    alone = direct_take(voice_engine, f"[ruby] {TEXT}", tmp_path / "ruby.wav", finishing=finishing)
    studio.select("ruby", "en")
    assert studio.set_blend("storm", 1.0)
    assert same(export(studio, TEXT, tmp_path / "slider-one.wav"), alone)
    assert same(export(studio, f"[ruby+storm@1.0] {TEXT}", tmp_path / "tag-one.wav"), alone)
    want = direct_take(voice_engine, f"[ruby+storm@0.0] {TEXT}", tmp_path / "want.wav",
                       voice_for=engine_blend_at_zero(voice_engine), finishing=finishing)
    assert not same(want, alone)
    assert studio.set_blend("storm", 0.0)
    assert same(export(studio, TEXT, tmp_path / "slider-zero.wav"), want)
    assert same(export(studio, f"[ruby+storm@0.0] {TEXT}", tmp_path / "tag-zero.wav"), want)
