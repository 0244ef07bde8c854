"""Morph: A blended with itself is A, alpha 0 is B at A's positions, a blend differs from both anchors,
the distance to A grows as alpha falls; batched dialogue equals one at a time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from omnistudio.voices.blend import anchor_blend, blend_cache_for
from omnistudio.engine.morph import blend_prompts, resample_time
from omnistudio.checks import check_alpha
from omnistudio.engine.engine import Engine
from omnistudio.engine.reference import Reference
from omnistudio.engine.sampler import FastSampler
from omnistudio.errors import UserError
from support.audio import REF_TEXT, make_reference

TEXT = "Good evening, this is the late edition."


@pytest.fixture(scope="module")
def fast_engine(tiny_engine):  # noqa: ANN001, ANN201
    """The session's tiny model behind an engine with the fast sampler."""
    return Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))


@pytest.fixture(scope="module")
def two_prompts(fast_engine, tmp_path_factory):  # noqa: ANN001, ANN201
    folder = tmp_path_factory.mktemp("voices")
    a = fast_engine.prompt_for(Reference(make_reference(folder / "a.wav", 3.0, seed=1), REF_TEXT))
    b = fast_engine.prompt_for(Reference(make_reference(folder / "b.wav", 4.2, seed=2),
                                         "Another voice reads this sentence."))
    assert a.ref_audio_tokens.size(-1) != b.ref_audio_tokens.size(-1)
    return a, b


@pytest.mark.parametrize("engine_name", ["voice_engine", "voice_stock_engine"])
def test_blend_of_a_voice_with_itself_is_that_voice(engine_name: str, voice_roster, request) -> None:  # noqa: ANN001
    """0.5 * E_A + 0.5 * E_A is E_A in floating point: written over A's own frames, the audio is A's
    bit for bit, on the fast sampler and on OmniVoice's stock loop."""
    from omnistudio.voices.prompts import anchor_prompt

    engine = request.getfixturevalue(engine_name)
    a = anchor_prompt(engine, "ruby", "en")
    blend = blend_prompts(engine.model, a, a, 0.5)
    assert blend.ref_embeddings is not None  # the override really runs
    alone = engine.synthesize(TEXT, a, num_step=6, seed=11).pcm
    mixed = engine.synthesize(TEXT, blend, num_step=6, seed=11).pcm
    assert alone.shape == mixed.shape and np.array_equal(alone, mixed)


def test_blend_of_two_recorded_anchors_differs_from_both(voice_engine, voice_roster) -> None:  # noqa: ANN001
    from omnistudio.voices.prompts import anchor_prompt

    ruby, storm = (anchor_prompt(voice_engine, name, "en") for name in ("ruby", "storm"))
    blend = anchor_blend(voice_engine, "ruby", "storm", "en", 0.5)
    pcm = {name: voice_engine.synthesize(TEXT, voice, num_step=6, seed=4).pcm
           for name, voice in (("ruby", ruby), ("storm", storm), ("blend", blend))}
    # Same text, seed and sampler: only the voice differs, and bit-exact determinism makes any change count.
    assert not np.array_equal(pcm["ruby"], pcm["storm"])  # the two anchors differ to begin with
    assert not np.array_equal(pcm["blend"], pcm["ruby"]) and not np.array_equal(pcm["blend"], pcm["storm"])


@pytest.mark.parametrize("engine_name", ["voice_engine", "voice_stock_engine"])
def test_alpha_zero_is_b_written_at_a_positions(engine_name: str, voice_roster, request) -> None:  # noqa: ANN001
    """At alpha 0 (and B as long as A) the blend conditions on B's frames at A's reference positions,
    with A's transcript: the same audio as a plain prompt made of B's tokens and A's transcript,
    which OmniVoice embeds itself (no blend code on that side)."""
    from omnistudio.voices.prompts import anchor_prompt
    from omnistudio.voices.state import AnchorPrompt

    engine = request.getfixturevalue(engine_name)
    # A is the shorter of two recorded anchors, B the longer one cut to A's length.
    a, b = sorted((anchor_prompt(engine, name, "en") for name in ("atlas", "valentina")),
                  key=lambda p: p.ref_audio_tokens.size(-1))
    length = a.ref_audio_tokens.size(-1)
    assert not torch.equal(b.ref_audio_tokens[:, :length], a.ref_audio_tokens)
    b_cut = AnchorPrompt(b.ref_audio_tokens[:, :length].clone(), b.ref_text, b.ref_rms, "b", "en")
    blend = blend_prompts(engine.model, a, b_cut, 0.0)
    plain = AnchorPrompt(b_cut.ref_audio_tokens, a.ref_text, a.ref_rms, "plain", "en")
    got = engine.synthesize(TEXT, blend, num_step=6, seed=8).pcm
    want = engine.synthesize(TEXT, plain, num_step=6, seed=8).pcm
    assert got.shape == want.shape and np.array_equal(got, want)
    assert not np.array_equal(got, engine.synthesize(TEXT, a, num_step=6, seed=8).pcm)


def test_distance_to_a_grows_as_alpha_falls(fast_engine, two_prompts) -> None:  # noqa: ANN001
    """Measured on the first step's conditional logits (the blend's direct effect) and on the audio.

    On random tiny weights the L2 distance grows steadily from alpha = 1 down to
    about 0.3 and then falls again towards alpha = 0: a linear mix of two
    unrelated embedding sequences has a smaller norm than either, so mid blends
    sit further from A than B itself does. The test covers 1.0 .. 0.4, the
    range where it is monotone (see docs/DESIGN.md, Morph).
    """
    a, b = two_prompts
    sampler = fast_engine.sampler
    first: list[torch.Tensor] = []

    def keep(step: int, cond: torch.Tensor, _uncond) -> None:  # noqa: ANN001
        if step == 0:
            first.append(cond.detach().clone())

    sampler.on_logits = keep
    try:
        outputs = {}
        for alpha in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4):
            outputs[alpha] = fast_engine.synthesize(TEXT, blend_prompts(fast_engine.model, a, b, alpha),
                                                    seed=5).pcm
    finally:
        sampler.on_logits = None
    base = first[0]
    logit_dist = [float((f - base).norm()) for f in first]
    assert logit_dist[0] == 0.0
    assert all(x < y for x, y in zip(logit_dist, logit_dist[1:])), logit_dist
    audio_dist = [float(np.sqrt(np.mean((outputs[al] - outputs[1.0]) ** 2))) for al in outputs]
    assert audio_dist[0] == 0.0 and all(d > 0 for d in audio_dist[1:]), audio_dist


def test_resample_time_keeps_end_points() -> None:
    e = torch.arange(10, dtype=torch.float32).view(5, 2)
    out = resample_time(e, 9)
    assert out.shape == (9, 2)
    torch.testing.assert_close(out[0], e[0])
    torch.testing.assert_close(out[-1], e[-1])
    torch.testing.assert_close(out[1], (e[0] + e[1]) / 2)
    torch.testing.assert_close(out[2], e[1])


def test_batched_dialogue_equals_one_at_a_time(fast_engine, two_prompts) -> None:  # noqa: ANN001
    a, b = two_prompts
    lines = ["Good evening.", "Markets fell sharply tonight after the central bank's announcement.",
             "Back to you."]
    voices = [a, blend_prompts(fast_engine.model, a, b, 0.5), b]
    seeds = [3, 4, 5]
    alone = [fast_engine.synthesize(t, v, seed=s).pcm for t, v, s in zip(lines, voices, seeds)]
    batched = fast_engine.synthesize_batch(lines, voices, ["en"] * 3, seeds=seeds)
    for one, many in zip(alone, batched):
        assert len(one) == len(many.pcm)
        assert np.abs(one - many.pcm).max() == 0.0


@pytest.mark.parametrize("alpha", [-0.1, 1.5, "x", float("nan"), None])
def test_bad_alpha(alpha) -> None:  # noqa: ANN001
    with pytest.raises(UserError, match="alpha"):
        check_alpha(alpha)


def test_anchor_blends_are_cached_and_checked(fast_engine) -> None:  # noqa: ANN001
    blend = anchor_blend(fast_engine, "ruby", "storm", "en", 0.7)
    assert anchor_blend(fast_engine, "Ruby", "storm", "en", 0.701) is blend  # rounded to 0.01
    assert len(blend_cache_for(fast_engine)) >= 1
    with pytest.raises(UserError, match="itself"):
        anchor_blend(fast_engine, "ruby", "ruby", "en", 0.5)
    with pytest.raises(UserError, match="same language"):
        anchor_blend(fast_engine, "ruby", "valentina", "en", 0.5, lang_b="es")
    with pytest.raises(UserError, match="unknown anchor"):
        anchor_blend(fast_engine, "ruby", "nobody-here", "en", 0.5)


@pytest.mark.parametrize("extra, needle", [
    (["--voice", "ruby", "--blend", "ruby"], "itself"),
    (["--voice", "ruby", "--blend", "storm", "--alpha", "1.5"], "alpha"),
    (["--voice", "ruby", "--blend", "storm", "--alpha", "abc"], "alpha"),
    (["--blend", "storm"], "--voice"),
    (["--voice", "ruby", "--blend", "nobody-here", "--alpha", "1"], "unknown anchor"),  # checked at alpha 1 too
])
def test_say_blend_bad_input(extra: list[str], needle: str, tmp_path: Path,
                             capsys: pytest.CaptureFixture) -> None:
    from omnistudio.cli import main

    out = tmp_path / "o.wav"
    rc = main(["say", "--model", "tiny", "Hello.", "-o", str(out), *extra])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and needle in err and "\n" not in err
    assert not out.exists()


def test_say_with_a_blend_writes_audio(voice_engine, voice_roster, tmp_path: Path) -> None:  # noqa: ANN001
    """`say --voice ruby --blend storm --alpha A` writes the blend of two recorded voices (flite slt and kal):
    sample for sample what the engine makes of that blend with the seed policy's seed, and at that same
    seed not ruby alone nor storm alone; --alpha 1 is `say --voice ruby` bit for bit (the voice's own key,
    so its seed), --alpha 0 is storm's frames at ruby's reference positions (neither voice alone, nor the
    0.7 blend)."""
    import soundfile as sf

    from omnistudio.cli import main
    from omnistudio.take.options import sentence_seed
    from omnistudio.voices.prompts import anchor_prompt

    text, steps, seed = "Good evening.", 6, 2
    said = {}
    for alpha in ("0.7", "1", "0", "alone"):
        out = tmp_path / f"blend-{alpha}.wav"
        blend = [] if alpha == "alone" else ["--blend", "storm", "--alpha", alpha]
        assert main(["say", "--model", "tiny", "--device", "cpu", "--voice", "ruby", *blend,
                     "--num-step", str(steps), "--seed", str(seed), text, "-o", str(out)]) == 0
        said[alpha], sr = sf.read(str(out), dtype="float32")
        assert sr == 24_000

    def engine(voice, alpha: float) -> np.ndarray:  # noqa: ANN001
        key = "ruby" if alpha == 1.0 else f"ruby+storm@{alpha:.2f}"  # a blend at 1 is ruby: ruby's key
        at = sentence_seed(seed, text, key, "en")  # the seed `say` gives the voice
        return voice_engine.synthesize(text, voice, num_step=steps, seed=at).pcm

    def same(a: np.ndarray, b: np.ndarray) -> bool:
        return a.shape == b.shape and np.array_equal(a, b)

    ruby, storm = (anchor_prompt(voice_engine, name, "en") for name in ("ruby", "storm"))
    assert same(said["0.7"], engine(anchor_blend(voice_engine, "ruby", "storm", "en", 0.7), 0.7))
    assert not same(said["0.7"], engine(ruby, 0.7)) and not same(said["0.7"], engine(storm, 0.7))
    assert same(said["1"], said["alone"]) and same(said["1"], engine(ruby, 1.0))  # alpha 1: exactly --voice
    assert same(said["0"], engine(anchor_blend(voice_engine, "ruby", "storm", "en", 0.0), 0.0))
    assert not same(said["0"], engine(ruby, 0.0)) and not same(said["0"], engine(storm, 0.0))
    assert not same(said["0"], said["0.7"])
