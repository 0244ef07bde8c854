"""One owner for an engine's state (issue 40): its settings are one value (EngineConfig) every client builds;
the prompts, prompt files and blends an engine keeps live on
the engine (its VoiceState), and every link kind forgets a voice through one operation, which drops exactly
that voice's prompts and the blends it is part of."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from omnistudio.engine.engine import Engine
from omnistudio.server.scheduler import BatchingLink
from omnistudio.take.link import LocalEngine
from omnistudio.voices.resolve import VoiceRef, parse_voice
from omnistudio.voices.state import VoiceState, voice_state

A, B, C = "ruby", "storm", "atlas"


def kept(engine: Engine) -> tuple[set[str], set[tuple[str, str]]]:
    state = voice_state(engine)
    return {anchor for anchor, _lang in state.prompts}, {(a, b) for a, b, _lang, _alpha in state.blends}


def fill(link: Any) -> None:
    for voice in (A, B, C, f"{A}+{B}@0.5", f"{B}+{C}@0.5", f"{C}+{A}@0.3"):
        link.build_voice(parse_voice(voice)[0], "en")


@pytest.mark.parametrize("kind", ["local", "batching"])
def test_forgetting_a_voice_through_a_link_drops_exactly_its_prompts_and_blends(
        kind: str, voice_roster: Any, tiny_engine: Engine) -> None:
    engine = Engine(tiny_engine.loaded)  # an engine of its own: its own voice state
    local = LocalEngine(engine)
    link = local if kind == "local" else BatchingLink(local, 4)
    try:
        fill(link)
        assert kept(engine) == ({A, B, C}, {(A, B), (B, C), (C, A)})
        link.forget_voice(A)
        assert kept(engine) == ({B, C}, {(B, C)})
        link.build_voice(VoiceRef(anchor=A), "en")  # built again on demand
        assert A in kept(engine)[0]
    finally:
        link.close()


def test_an_engines_voices_go_with_it(voice_roster: Any, tiny_engine: Engine) -> None:
    """No module-level cache keyed on engines: the state is the engine's, freed with it."""
    engine = Engine(tiny_engine.loaded)
    LocalEngine(engine).build_voice(VoiceRef(anchor=B), "en")
    state = weakref.ref(voice_state(engine))
    assert isinstance(engine.voice_state, VoiceState) and engine.voice_state is state()
    other = Engine(tiny_engine.loaded)
    assert voice_state(other).prompts == {}  # another engine keeps its own
    del engine
    gc.collect()
    assert state() is None


# ------------------------------------------------------------------------ one engine settings value
def test_quantisation_reaches_mcp_and_ray_workers_like_every_engine_setting(tmp_path: Any) -> None:
    """--quantize was refused by `omnistudio mcp` and `render --ray`; now both carry it in the one engine
    settings value every client builds (EngineConfig), and the engine they open is int8."""
    from omnistudio.cli import build_parser
    from omnistudio.cluster.batch import Renderer
    from omnistudio.commands.render_ray import _batch_spec
    from omnistudio.engine.settings import EngineConfig
    from omnistudio.mcp.backend import LocalBackend
    from support.audio import REF_TEXT, make_reference

    ref = make_reference(tmp_path / "ref.wav")
    script = tmp_path / "s.txt"
    script.write_text("Good evening.\n", encoding="utf-8")
    args = build_parser("render").parse_args(["render", str(script), "--out-dir", str(tmp_path), "--ray", "--model",
                                              "tiny", "--device", "cpu", "--quantize", "int8", "--ref-audio", str(ref),
                                              "--ref-text", REF_TEXT])
    spec = _batch_spec(args)
    assert spec.engine.quantize == "int8" and spec.source("x")["quantisation"] == "int8"
    worker = Renderer(spec)  # a Ray actor's body, here in process
    assert worker.link.info.quantisation == "int8"
    backend = LocalBackend(EngineConfig("tiny", "cpu", quantize="int8"))  # `omnistudio mcp --quantize int8`
    assert backend.link().info.quantisation == "int8"
    with pytest.raises(Exception, match="--quantize 'int4'"):
        EngineConfig(quantize="int4").checked()
