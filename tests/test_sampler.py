"""Parity of the fast sampler with OmniVoice's stock loop (tiny checkpoint, fp32, CPU, same seed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from omnistudio.engine.reference import Reference
from omnistudio.engine.sampler import LOSSLESS, Cancelled, FastSampler, SamplerOptions
from support.audio import REF_TEXT

SINGLE = "Good evening, here is the news at nine."
BATCH = [
    "Good evening.",
    "The council met today to discuss the new budget for schools and roads across the region.",
    "Rain is expected over the weekend in the north.",
]
SEED = 7
# The largest logit drift of the near-lossless techniques on tiny (measured: about 3e-7, printed with -s).
LOGIT_BOUND = 1e-6


@pytest.fixture(scope="module")
def prompt(tiny_engine: Any, ref_wav: Any) -> Any:
    return tiny_engine.prompt_for(Reference(ref_wav, REF_TEXT))


@pytest.fixture(scope="module")
def batch_prompts(tiny_engine: Any, voice_roster_file: Any) -> list[Any]:
    """Three different speakers (flite recordings of the test roster), one per batch item."""
    from support.voices import ANCHORS, transcript

    return [tiny_engine.prompt_for(Reference(voice_roster_file.parent / f"{a}_en.wav", transcript(a)))
            for a in ANCHORS[:3]]


def voices_for(text: Any, prompt: Any, batch_prompts: list[Any]) -> Any:
    """A batch gets a different reference per item; a single sentence the plain one."""
    return batch_prompts[:len(text)] if isinstance(text, list) else prompt


def generate(engine: Any, prompt: Any, text: str | list[str], sampler: Any, guidance: float = 2.0,
             num_step: int = 10, **kwargs: Any) -> tuple[list[torch.Tensor], list[np.ndarray]]:
    """Run stock generate() with ``sampler`` (None: stock loop); return its tokens and waveforms."""
    model = engine.model
    loop = sampler or (lambda task, cfg: type(model)._generate_iterative(model, task, cfg))
    tokens: list[list[torch.Tensor]] = []

    def capture(task: Any, cfg: Any) -> list[torch.Tensor]:
        out = loop(task, cfg)
        tokens.append([t.clone() for t in out])
        return out

    torch.manual_seed(SEED)
    with engine._sampler_installed(capture):
        audio = model.generate(text=text, language="en", voice_clone_prompt=prompt, num_step=num_step,
                               guidance_scale=guidance, postprocess_output=False, **kwargs)
    assert len(tokens) == 1
    return tokens[0], audio


# Stock's run and the exact path's logits per case, computed once for the module: every parity test
# compares against the same reference (deterministic: same weights, seed, threads), so only the
# variant under test runs per test. Cleared when the module ends (no state leaks to other modules).
_REFERENCE: dict[tuple[Any, ...], Any] = {}


@pytest.fixture(scope="module", autouse=True)
def _forget_references() -> Any:
    yield
    _REFERENCE.clear()


def stock_run(engine: Any, prompt: Any, text: Any, guidance: float) -> tuple[list[torch.Tensor], list[np.ndarray]]:
    key = ("stock", tuple(text) if isinstance(text, list) else text, guidance)
    if key not in _REFERENCE:
        _REFERENCE[key] = generate(engine, prompt, text, None, guidance)
    return _REFERENCE[key]  # type: ignore[no-any-return]


CASES = [pytest.param(SINGLE, g, id=f"single-g{g:g}") for g in (0.0, 2.0)] + [
    pytest.param(BATCH, g, id=f"batch3-g{g:g}") for g in (0.0, 2.0)
]
# early_exit has nothing to skip at 10 steps on these sentences: it is tested alone at 30 steps below.
LOSSLESS_VARIANTS = [(name,) for name in LOSSLESS if name != "early_exit"] + [LOSSLESS]


@pytest.mark.parametrize(("text", "guidance"), CASES)
def test_lossless_techniques_match_stock_exactly(tiny_engine: Any, prompt: Any, batch_prompts: list[Any],
                                                 text: Any, guidance: float) -> None:
    prompt = voices_for(text, prompt, batch_prompts)
    stock_tokens, stock_audio = stock_run(tiny_engine, prompt, text, guidance)
    if isinstance(text, list):  # the batch really has different lengths
        assert len({t.size(-1) for t in stock_tokens}) == 3
    for names in LOSSLESS_VARIANTS:
        sampler = FastSampler(tiny_engine.model, SamplerOptions.only(*names))
        tokens, audio = generate(tiny_engine, prompt, text, sampler, guidance)
        assert len(tokens) == len(stock_tokens)
        for ours, theirs in zip(tokens, stock_tokens):
            assert torch.equal(ours, theirs), f"{names}: tokens differ from stock"
        for ours, theirs in zip(audio, stock_audio):
            assert ours.shape == theirs.shape
            assert float(np.max(np.abs(ours - theirs))) == 0.0, f"{names}: waveform differs from stock"


class LogitRecorder:
    """Keeps every step's target logits, as full (B, C, T, V) tensors."""

    def __init__(self) -> None:
        self.steps: list[tuple[torch.Tensor, torch.Tensor | None]] = []

    def __call__(self, step: int, cond: torch.Tensor, uncond: torch.Tensor | None) -> None:
        self.steps.append((cond.clone(), None if uncond is None else uncond.clone()))


def recorded(engine: Any, prompt: Any, text: Any, guidance: float, *names: str,
             ) -> tuple[list[torch.Tensor], LogitRecorder]:
    sampler = FastSampler(engine.model, SamplerOptions.only("inplace_scatter", *names))
    sampler.on_logits = recorder = LogitRecorder()
    tokens, _ = generate(engine, prompt, text, sampler, guidance)
    return tokens, recorder


NEAR_LOSSLESS = ("trimmed_guidance", "length_bucketing", "block_attention")


@pytest.mark.parametrize(("text", "guidance"), CASES)
def test_near_lossless_techniques_together_same_tokens_bounded_logits(tiny_engine: Any, prompt: Any,
                                                                      batch_prompts: list[Any], text: Any,
                                                                      guidance: float, record_property: Any) -> None:
    """All three at once (the fast tier); each one alone is the slow tier's test below."""
    near_lossless_check(tiny_engine, voices_for(text, prompt, batch_prompts), text, guidance, NEAR_LOSSLESS,
                        record_property)


@pytest.mark.parametrize(("text", "guidance"), CASES)
@pytest.mark.parametrize("names", [(name,) for name in NEAR_LOSSLESS], ids="+".join)
def test_near_lossless_each_technique_alone(tiny_engine: Any, prompt: Any, batch_prompts: list[Any], text: Any,
                                            guidance: float, names: tuple[str, ...], record_property: Any) -> None:
    near_lossless_check(tiny_engine, voices_for(text, prompt, batch_prompts), text, guidance, names,
                        record_property)


def near_lossless_check(tiny_engine: Any, prompt: Any, text: Any, guidance: float, names: tuple[str, ...],
                        record_property: Any) -> None:
    """Same tokens as stock, and the logits within LOGIT_BOUND of the exact path's at every step."""
    stock_tokens, _ = stock_run(tiny_engine, prompt, text, guidance)
    key = ("exact", tuple(text) if isinstance(text, list) else text, guidance)
    if key not in _REFERENCE:
        _REFERENCE[key] = recorded(tiny_engine, prompt, text, guidance)
    ref_tokens, ref_logits = _REFERENCE[key]
    tokens, logits = recorded(tiny_engine, prompt, text, guidance, *names)
    for ours, base, stock in zip(tokens, ref_tokens, stock_tokens):
        assert torch.equal(base, stock)  # the reference path itself is exact
        assert torch.equal(ours, stock), f"{names}: tokens differ from stock"
    assert len(logits.steps) == len(ref_logits.steps) == 10
    drift = 0.0
    for (cond, uncond), (ref_cond, ref_uncond) in zip(logits.steps, ref_logits.steps):
        drift = max(drift, float((cond - ref_cond).abs().max()))
        assert (uncond is None) == (ref_uncond is None or guidance == 0)
        if uncond is not None and ref_uncond is not None:
            drift = max(drift, float((uncond - ref_uncond).abs().max()))
    record_property("max_logit_diff", drift)
    print(f"{'+'.join(names)} {'batch' if isinstance(text, list) else 'single'} g={guidance:g}: "
          f"max logit drift {drift:.3g}")
    assert drift <= LOGIT_BOUND, f"{names}: logits drifted by {drift:.3g}"


def test_default_options_match_stock_tokens_with_class_temperature(tiny_engine: Any, prompt: Any) -> None:
    """Class-temperature noise is drawn before position noise, per item, as stock does."""
    stock_tokens, _ = generate(tiny_engine, prompt, BATCH, None, class_temperature=0.7)
    tokens, _ = generate(tiny_engine, prompt, BATCH, FastSampler(tiny_engine.model, SamplerOptions()),
                         class_temperature=0.7)
    for ours, theirs in zip(tokens, stock_tokens):
        assert torch.equal(ours, theirs)


def test_backbone_called_once_per_step_and_cancel(tiny_engine: Any, prompt: Any) -> None:
    model = tiny_engine.model
    sampler = FastSampler(model)
    calls: list[int] = []
    handle = model.llm.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        generate(tiny_engine, prompt, SINGLE, sampler)
        assert len(calls) == sampler.last_stats.steps == 10
        polls: list[int] = []
        sampler.should_cancel = lambda: polls.append(1) is None and len(polls) > 3
        calls.clear()
        with pytest.raises(Cancelled):
            generate(tiny_engine, prompt, SINGLE, sampler)
        assert len(calls) == 3  # three steps ran, the fourth poll cancelled
    finally:
        handle.remove()


def test_early_exit_skips_steps_with_nothing_to_unmask(tiny_engine: Any, prompt: Any) -> None:
    # A 1-frame target (8 tokens) over 30 steps: the schedule is empty long before the end.
    kwargs = {"duration": 0.04, "num_step": 30}
    fast = FastSampler(tiny_engine.model, SamplerOptions.only("early_exit", "inplace_scatter"))
    stock_tokens, _ = generate_steps(tiny_engine, prompt, None, **kwargs)
    tokens, _ = generate_steps(tiny_engine, prompt, fast, **kwargs)
    assert torch.equal(tokens[0], stock_tokens[0])
    assert 0 < fast.last_stats.steps < 30


SHORT_ITEM = {"duration": [0.04, None, None], "num_step": 30}


@pytest.fixture(scope="module")
def stock_short_item(tiny_engine: Any, batch_prompts: list[Any]) -> Any:
    return generate(tiny_engine, batch_prompts, BATCH, None, **SHORT_ITEM)


@pytest.mark.parametrize("names", [("early_exit",), LOSSLESS], ids="+".join)
def test_early_exit_per_item_matches_stock(tiny_engine: Any, batch_prompts: list[Any], stock_short_item: Any,
                                           names: tuple[str, ...]) -> None:
    """A 1-frame item beside two sentences at 30 steps: the short one runs out of tokens to unmask
    after 8 steps, so early exit scores only the others (the per-item branch); samples equal stock's."""
    kwargs = SHORT_ITEM
    stock_tokens, stock_audio = stock_short_item
    fast = FastSampler(tiny_engine.model, SamplerOptions.only(*names))
    scored: list[int] = []
    fast.on_logits = lambda _step, cond, _uncond: scored.append(cond.size(0))
    tokens, audio = generate(tiny_engine, batch_prompts, BATCH, fast, **kwargs)
    assert stock_tokens[0].size(-1) == 1 and min(t.size(-1) for t in stock_tokens[1:]) > 30
    for ours, theirs in zip(tokens, stock_tokens):
        assert torch.equal(ours, theirs)
    for ours, theirs in zip(audio, stock_audio):
        assert ours.shape == theirs.shape and float(np.max(np.abs(ours - theirs))) == 0.0
    assert len(scored) == 30
    if "inplace_scatter" in names:  # items with nothing left are not scored: the branch really ran
        assert scored.count(2) == 30 - 8 and scored.count(3) == 8, scored


def generate_steps(engine: Any, prompt: Any, sampler: Any, num_step: int, **kwargs: Any) -> Any:
    model = engine.model
    loop = sampler or (lambda task, cfg: type(model)._generate_iterative(model, task, cfg))
    out: list[Any] = []
    torch.manual_seed(SEED)
    with engine._sampler_installed(lambda task, cfg: out.append(loop(task, cfg)) or out[-1]):
        audio = model.generate(text=SINGLE, language="en", voice_clone_prompt=prompt, num_step=num_step,
                               postprocess_output=False, **kwargs)
    return out[0], audio


def test_per_item_generators(tiny_engine: Any, prompt: Any) -> None:
    sampler = FastSampler(tiny_engine.model)
    same = [SINGLE, SINGLE]
    sampler.generators = [torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)]
    tokens, _ = generate(tiny_engine, prompt, same, sampler)
    assert torch.equal(tokens[0], tokens[1])
    sampler.generators = [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)]
    tokens2, _ = generate(tiny_engine, prompt, same, sampler)
    assert torch.equal(tokens2[0], tokens[0])  # item 0 keeps its seed
    assert not torch.equal(tokens2[1], tokens[1])
    sampler.options = SamplerOptions.only("static_prefix")
    with pytest.raises(ValueError, match="generators"):
        generate(tiny_engine, prompt, same, sampler)


def test_options() -> None:
    assert SamplerOptions.only("early_exit").enabled() == ["early_exit"]
    assert SamplerOptions.stock().enabled() == []
    assert "trimmed_guidance" in SamplerOptions().enabled()
    assert SamplerOptions.for_device("cuda").length_bucketing
    assert not SamplerOptions.for_device("cpu").length_bucketing
    assert SamplerOptions.for_device("cpu").block_attention and not SamplerOptions.for_device("cuda").block_attention
    assert SamplerOptions.for_device("cuda").static_step and not SamplerOptions.for_device("cpu").static_step
    with pytest.raises(ValueError, match="unknown technique"):
        SamplerOptions.only("warp_drive")
    with pytest.raises(ValueError, match="compile_vocoder"):
        SamplerOptions(compile_vocoder="max")
