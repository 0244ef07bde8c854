"""One owner for an engine's voices (issue 40): the prompts, prompt files and blends an engine keeps live on
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
