"""Synthesis on the tiny checkpoint: shape, length, determinism, timings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omnistudio.checks import check_language, check_num_step, check_seed, check_text
from omnistudio.engine.reference import Reference
from omnistudio.errors import UserError
from support.audio import REF_TEXT

TEXT = "Good evening and welcome."


def test_synthesize_returns_24k_float32_of_the_estimated_length(tiny_engine, ref_wav: Path) -> None:
    voice = Reference(ref_wav, REF_TEXT)
    out = tiny_engine.synthesize(TEXT, voice, language="en", num_step=10, seed=1, sampler=None)
    assert out.sample_rate == 24_000
    assert out.pcm.dtype == np.float32 and out.pcm.ndim == 1
    assert np.all(np.isfinite(out.pcm))
    assert np.abs(out.pcm).max() > 0
    frames = tiny_engine.estimate_target_frames(TEXT, tiny_engine.prompt_for(voice))
    pad = int(0.1 * 24_000)  # OmniVoice's stock edge padding, each side
    assert len(out.pcm) == frames * 960 + 2 * pad
    t = out.timings
    assert t.audio_s == pytest.approx(len(out.pcm) / 24_000)
    assert t.wall_s > 0 and t.rtf == pytest.approx(t.wall_s / t.audio_s)


def test_longer_text_gives_longer_audio(tiny_engine, ref_wav: Path) -> None:
    voice = Reference(ref_wav, REF_TEXT)
    short = tiny_engine.synthesize("Hello.", voice, seed=0, num_step=4, sampler=None)
    long = tiny_engine.synthesize("Hello and welcome to a much longer sentence about the evening news.",
                                  voice, seed=0, num_step=4, sampler=None)
    assert len(long.pcm) > 2 * len(short.pcm)


def test_same_seed_same_audio_other_seed_other_audio(tiny_engine, ref_wav: Path) -> None:
    voice = Reference(ref_wav, REF_TEXT)
    a = tiny_engine.synthesize(TEXT, voice, seed=7, sampler=None).pcm
    b = tiny_engine.synthesize(TEXT, voice, seed=7, sampler=None).pcm
    c = tiny_engine.synthesize(TEXT, voice, seed=8, sampler=None).pcm
    assert a.tobytes() == b.tobytes()
    assert len(a) == len(c) and not np.array_equal(a, c)


def test_prompt_is_made_once_per_reference(tiny_engine, ref_wav: Path) -> None:
    voice = Reference(ref_wav, REF_TEXT)
    p1 = tiny_engine.prompt_for(voice)
    p2 = tiny_engine.prompt_for(voice)
    assert p1 is p2
    assert p1.ref_audio_tokens.shape[0] == 8
    assert p1.ref_audio_tokens.max() < 1024  # real codes, never the mask id


def test_saved_prompt_is_accepted_as_a_voice(tiny_engine, ref_wav: Path) -> None:
    voice = Reference(ref_wav, REF_TEXT)
    prompt = tiny_engine.prompt_for(voice)
    a = tiny_engine.synthesize(TEXT, voice, seed=3, sampler=None).pcm
    b = tiny_engine.synthesize(TEXT, prompt, seed=3, sampler=None).pcm
    assert np.array_equal(a, b)


@pytest.mark.parametrize("bad", ["", "   \n\t"])
def test_empty_text_is_refused(bad: str) -> None:
    with pytest.raises(UserError, match="empty"):
        check_text(bad)


@pytest.mark.parametrize("lang", ["fr", "", "english", None])
def test_unknown_language_is_refused(lang) -> None:  # noqa: ANN001
    with pytest.raises(UserError, match="language"):
        check_language(lang)


@pytest.mark.parametrize("steps", [0, 1000, "ten", -3])
def test_num_step_out_of_range(steps) -> None:  # noqa: ANN001
    with pytest.raises(UserError, match="num_step"):
        check_num_step(steps)


def test_validators_accept_good_values() -> None:
    assert check_language("ES") == "es"
    assert check_num_step("10") == 10
    assert check_seed("42") == 42
    with pytest.raises(UserError):
        check_seed("x")


@pytest.mark.parametrize("text", [
    TEXT,
    # Over OmniVoice's 30 s threshold: generate() chunks it; the split must too.
    " ".join(["The council met tonight to discuss the budget for schools, roads and public transport."] * 7),
])
def test_split_halves_equal_generate(tiny_engine, ref_wav: Path, text: str) -> None:
    """render_tokens + decode (the streaming engine's halves) give generate()'s samples bit for bit."""
    import torch

    prompt = tiny_engine.prompt_for(Reference(ref_wav, REF_TEXT))
    pending = tiny_engine.render_tokens([text], [prompt], ["en"], num_step=4, seeds=[21], sampler=None)
    ours = tiny_engine.decode(pending)[0]
    torch.manual_seed(21)
    stock = tiny_engine.model.generate(text=text, language="en", voice_clone_prompt=prompt,
                                       **tiny_engine.generation_kwargs(4, 2.0))[0]
    assert np.array_equal(ours.pcm, stock)
    if len(text) > 200:
        assert len(stock) > 30 * 24_000  # really the chunked path
    assert 0 < ours.timings.decode_s < ours.timings.wall_s


def test_stock_batch_falls_back_to_one_at_a_time(tiny_engine, ref_wav: Path) -> None:
    """Stock draws one noise stream per batch, so per-line seeds mean one line at a time."""
    voice = Reference(ref_wav, REF_TEXT)
    texts = ["Good evening.", "Markets fell sharply tonight."]
    batch = tiny_engine.synthesize_batch(texts, [voice, voice], ["en", "en"], num_step=4, seeds=[5, 6],
                                         sampler=None)
    alone = [tiny_engine.synthesize(t, voice, num_step=4, seed=s, sampler=None) for t, s in zip(texts, [5, 6])]
    for b, a in zip(batch, alone):
        assert np.array_equal(b.pcm, a.pcm)
    with pytest.raises(UserError, match="fast sampler"):
        tiny_engine.render_tokens(texts, [voice, voice], ["en", "en"], sampler=None)
