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


def test_every_snake_of_the_vocoder_is_routed(compiled_model: Any) -> None:
    snakes = snake_modules(compiled_model)
    assert snakes and all(s._compiled_call_impl is not None for s in snakes)
