"""Prompts that could be another anchor's: each is checked by how it was made, not by its tokens alone.

On ``tiny`` every design-mode anchor renders the same tokens, so a design prompt is checked by its
recipe (the instruct and seed OmniVoice was called with, spied); recorded anchors (four flite
speakers) are checked by their tokens, which differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from omnistudio.voices import prompts
from omnistudio.voices.prompts import anchor_prompt, cache_for, ensure_prompt, source_for
from omnistudio.voices.roster import ROSTER_ENV, load_roster
from support.voices import ANCHORS

HEADER = 'format = 1\n[design]\nnum_step = 3\n[calibration]\nen = "Good evening."\nes = "Buenas noches."\n'
DESIGN = '''
[[anchor]]
id = "dan"
name = "Dan"
gender = "male"
age = "elderly"
pitch = "low pitch"
accent = "british accent"
seed = 31

[[anchor]]
id = "eva"
name = "Eva"
gender = "female"
age = "young adult"
pitch = "high pitch"
style = "whisper"
accent = "american accent"
seed = 77

[[anchor]]
id = "fay"
name = "Fay"
gender = "female"
age = "teenager"
pitch = "moderate pitch"
seed = 5
en = { matched = "eva" }
'''
# What OmniVoice must be asked for, per anchor and language (accents are English-only).
RECIPES = {("dan", "en"): ("male, elderly, low pitch, british accent", 31),
           ("dan", "es"): ("male, elderly, low pitch", 31),
           ("eva", "en"): ("female, young adult, high pitch, whisper, american accent", 77),
           ("eva", "es"): ("female, young adult, high pitch, whisper", 77),
           ("fay", "es"): ("female, teenager, moderate pitch", 5),
           ("fay", "en"): ("female, young adult, high pitch, whisper, american accent", 77)}  # matched: eva's


@pytest.fixture
def design_roster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    path = tmp_path / "roster.toml"
    path.write_text(HEADER + DESIGN, encoding="utf-8")
    monkeypatch.setenv(ROSTER_ENV, str(path))
    monkeypatch.setattr(prompts, "prompt_dir", lambda: tmp_path / "prompts")
    monkeypatch.setattr("omnistudio.voices.roster.user_roster_path", lambda: tmp_path / "none.toml")
    return load_roster()


def test_design_prompts_are_rendered_from_each_anchors_recipe(tiny_engine: Any, design_roster: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny_engine.model
    real = model.generate
    calls: list[dict[str, Any]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append({**kwargs, "seed": torch.initial_seed()})
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "generate", spy)
    made = {}
    for key in RECIPES:
        calls.clear()
        made[key], action, _cal = ensure_prompt(tiny_engine, design_roster, *key)
        assert action == "built" and len(calls) == 1, key
        call = calls[0]
        assert (call["instruct"], call["seed"]) == RECIPES[key], key
        assert (call["language"], call["num_step"], call["guidance_scale"]) == (key[1], 3, 2.0)
        assert call["text"] == design_roster.calibration[key[1]]
    shas = {key: prompt.source_sha256 for key, prompt in made.items()}
    own = [k for k in RECIPES if k != ("fay", "en")]
    assert len({shas[k] for k in own}) == len(own)  # every recipe hashes differently
    assert shas[("fay", "en")] == shas[("eva", "en")] == source_for(design_roster, "fay", "en").sha256
    assert made[("fay", "en")].meta["voice"] == "eva"


def test_recorded_anchors_have_different_prompts_and_matched_ones_their_owners(voice_engine: Any,
                                                                               voice_roster: Any) -> None:
    """The test roster's anchors are really different voices (what every speaker test relies on)."""
    tokens = {a: anchor_prompt(voice_engine, a, "en").ref_audio_tokens for a in ANCHORS}
    for i, a in enumerate(ANCHORS):
        for b in ANCHORS[i + 1:]:
            same_shape = tokens[a].shape == tokens[b].shape
            assert not (same_shape and torch.equal(tokens[a], tokens[b])), (a, b)
    shas = {a: anchor_prompt(voice_engine, a, "en").source_sha256 for a in ANCHORS}
    assert len(set(shas.values())) == len(ANCHORS)
    ruby_es, owner = anchor_prompt(voice_engine, "ruby", "es"), anchor_prompt(voice_engine, "valentina", "es")
    assert torch.equal(ruby_es.ref_audio_tokens, owner.ref_audio_tokens)
    assert ruby_es.ref_text == owner.ref_text and ruby_es.meta["voice"] == "valentina"
    assert not torch.equal(ruby_es.ref_audio_tokens[:, :8], tokens["ruby"][:, :8])  # not ruby's English


def test_warm_up_runs_its_three_sentences_as_one_batch(voice_engine: Any, voice_roster: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from omnistudio.voices.startup import warm_up

    for anchor in ANCHORS[:3]:
        anchor_prompt(voice_engine, anchor, "en")
    assert len(cache_for(voice_engine)) >= 3
    sampler = voice_engine.sampler
    real = sampler._run
    passes: list[list[str]] = []

    def spy(task: Any, cfg: Any) -> Any:
        passes.append(list(task.texts))
        return real(task, cfg)

    monkeypatch.setattr(sampler, "_run", spy)
    timings = warm_up(voice_engine, num_step=2)
    assert [len(p) for p in passes] == [1, 3], passes  # B=1, then one B=3 diffusion pass
    assert len(set(passes[1])) == 3
    assert timings["single_s"] > 0 and timings["batch3_s"] > 0
