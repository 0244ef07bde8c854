"""torch.compile of the vocoder: equal to eager within fp32 tolerance, and no recompilation on new lengths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from omnistudio.engine.compile import (apply_compile, compile_status, dynamo_graphs, eager, snake, snake_modules)

LENGTHS = (31, 58, 97)  # frames: none of them the 25 frames of the compile trial


@pytest.fixture(scope="module")
def compiled_model(omnistudio_home: Path) -> Any:
    from omnistudio.engine.model import load_model

    model = load_model("tiny", device="cpu").model  # its own copy: the shared tiny engine stays eager
    status = apply_compile(model, vocoder="default")
    assert status == {"backbone": "off", "vocoder": "on"}
    return model


def test_compiled_vocoder_equals_eager_on_three_lengths_without_recompiling(compiled_model: Any) -> None:
    tok = compiled_model.audio_tokenizer
    num_cb = int(compiled_model.config.num_audio_codebook)
    before = dynamo_graphs()
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for frames in LENGTHS:
            codes = torch.randint(0, 1024, (1, num_cb, frames), generator=gen)
            compiled = tok.decode(codes, return_dict=False)
            with eager(compiled_model):
                assert compile_status(compiled_model)["vocoder"] == "off"
                plain = tok.decode(codes, return_dict=False)
            assert compiled.shape == plain.shape and compiled.shape[-1] > frames * 900
            assert float(plain.abs().max()) > 0
            torch.testing.assert_close(compiled, plain, rtol=1e-4, atol=1e-5)
    assert compile_status(compiled_model)["vocoder"] == "on"
    assert dynamo_graphs() == before  # three new lengths, not one new graph


def test_snake_function_is_the_module() -> None:
    from transformers.models.dac.modeling_dac import Snake1d

    module = Snake1d(6)
    with torch.no_grad():
        module.alpha.uniform_(0.5, 2.0)
    x = torch.randn(1, 6, 40)
    assert torch.equal(snake(x, module.alpha), module(x))


def test_every_snake_of_the_vocoder_is_routed(compiled_model: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Snake1d of the decoder runs through the compiled kernel with its own alpha: a compiled decode
    calls no Snake1d.forward, an eager one calls every one of them, and with a different alpha per
    activation the two decodes still agree."""
    from transformers.models.dac.modeling_dac import Snake1d

    tok = compiled_model.audio_tokenizer
    every = [m for m in tok.acoustic_decoder.modules() if isinstance(m, Snake1d)]
    assert len(every) > 1 and [id(m) for m in snake_modules(compiled_model)] == [id(m) for m in every]
    eager_calls: list[int] = []
    real_forward = Snake1d.forward
    monkeypatch.setattr(Snake1d, "forward", lambda self, x: eager_calls.append(id(self)) or real_forward(self, x))
    codes = torch.randint(0, 1024, (1, int(compiled_model.config.num_audio_codebook), LENGTHS[0]),
                          generator=torch.Generator().manual_seed(1))
    saved = [m.alpha.detach().clone() for m in every]
    try:
        with torch.no_grad():
            for i, module in enumerate(every):  # a different alpha per activation (they are all ones as built)
                module.alpha.fill_(0.6 + 0.1 * i)
        with torch.inference_mode():
            compiled = tok.decode(codes, return_dict=False)
            assert eager_calls == [], "a Snake1d ran eagerly inside a compiled decode"
            with eager(compiled_model):
                plain = tok.decode(codes, return_dict=False)
    finally:
        with torch.no_grad():
            for module, alpha in zip(every, saved):
                module.alpha.copy_(alpha)
    assert sorted(eager_calls) == sorted(id(m) for m in every)  # each activation is on the decode path, once
    torch.testing.assert_close(compiled, plain, rtol=1e-4, atol=1e-5)
