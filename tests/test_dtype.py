"""The backbone dtype: automatic choice (forced CPU capability), bf16 parity of the lossless set, where it shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from omnistudio.cli import main
from omnistudio.engine.model import choose_dtype, cpu_bf16_feature
from omnistudio.engine.reference import Reference
from omnistudio.engine.sampler import LOSSLESS, TECHNIQUES, FastSampler, SamplerOptions
from omnistudio.errors import UserError
from support.audio import REF_TEXT

TEXTS = ["Good evening, here is the news at nine.", "Rain is expected over the weekend in the north."]
SEED = 7


def test_auto_dtype_follows_the_cpu_capability(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNISTUDIO_CPU_BF16", "1")
    present = choose_dtype("cpu")
    assert (present.dtype, present.name) == (torch.bfloat16, "bf16") and "auto" in present.reason
    assert choose_dtype("cpu", "fp32").dtype is torch.float32  # --dtype wins over the capability
    monkeypatch.setenv("OMNISTUDIO_CPU_BF16", "0")
    absent = choose_dtype("cpu")
    assert (absent.dtype, absent.name) == (torch.float32, "fp32")
    assert choose_dtype("cpu", "bf16").dtype is torch.bfloat16
    assert choose_dtype("cuda").dtype is torch.float16 and choose_dtype("mps").dtype is torch.float32
    with pytest.raises(UserError, match="unknown dtype 'int8'"):
        choose_dtype("cpu", "int8")


def test_cpu_probe_asks_torch_then_cpuinfo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OMNISTUDIO_CPU_BF16", raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    assert cpu_bf16_feature() == "AVX512-BF16"
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nflags : fpu sse avx2 avx512f\n")
    from omnistudio.engine import cpuinfo as cpuinfo_mod  # where /proc/cpuinfo is read

    real_path = cpuinfo_mod.Path
    monkeypatch.setattr(cpuinfo_mod, "Path", lambda p: cpuinfo if p == "/proc/cpuinfo" else real_path(p))
    assert cpu_bf16_feature() is None
    assert choose_dtype("cpu").name == "fp32"
    cpuinfo.write_text("processor : 0\nflags : fpu avx512f amx_tile amx_bf16\n")
    assert cpu_bf16_feature() == "AMX-BF16"
    assert choose_dtype("cpu").name == "bf16"


def _tokens(engine: Any, prompt: Any, sampler: Any) -> tuple[list[torch.Tensor], list[np.ndarray]]:
    model = engine.model
    loop = sampler or (lambda task, cfg: type(model)._generate_iterative(model, task, cfg))
    seen: list[torch.Tensor] = []

    def capture(task: Any, cfg: Any) -> list[torch.Tensor]:
        out = loop(task, cfg)
        seen.extend(t.clone() for t in out)
        return out

    torch.manual_seed(SEED)
    with engine._sampler_installed(capture):
        audio = model.generate(text=TEXTS, language=["en", "en"], voice_clone_prompt=[prompt, prompt], num_step=10,
                               guidance_scale=2.0, postprocess_output=False)
    return seen, audio


def test_lossless_set_is_token_identical_to_stock_in_bf16(bf16_engine: Any, ref_wav: Path) -> None:
    assert bf16_engine.loaded.dtype is torch.bfloat16
    assert next(bf16_engine.model.llm.parameters()).dtype is torch.bfloat16
    assert next(bf16_engine.model.audio_tokenizer.parameters()).dtype is torch.float32  # vocoder stays fp32
    prompt = bf16_engine.prompt_for(Reference(ref_wav, REF_TEXT))
    stock_tokens, stock_audio = _tokens(bf16_engine, prompt, None)
    for names in [(name,) for name in LOSSLESS] + [LOSSLESS]:
        tokens, audio = _tokens(bf16_engine, prompt, FastSampler(bf16_engine.model, SamplerOptions.only(*names)))
        assert len(tokens) == len(stock_tokens) == 2
        for ours, theirs in zip(tokens, stock_tokens):
            assert torch.equal(ours, theirs), f"{names}: bf16 tokens differ from stock bf16"
        for ours, theirs in zip(audio, stock_audio):
            assert float(np.max(np.abs(ours - theirs))) == 0.0


def test_bf16_is_not_fp32(bf16_engine: Any, tiny_engine: Any, ref_wav: Path) -> None:
    """The two dtypes really differ (so the bf16 parity above is not fp32 parity in disguise)."""
    assert tiny_engine.loaded.dtype is torch.float32
    a = bf16_engine.synthesize(TEXTS[0], Reference(ref_wav, REF_TEXT), seed=SEED, sampler=None).pcm
    b = tiny_engine.synthesize(TEXTS[0], Reference(ref_wav, REF_TEXT), seed=SEED, sampler=None).pcm
    assert len(a) != len(b) or float(np.max(np.abs(a - b))) > 0


def test_every_technique_is_known() -> None:
    """Each technique name is one boolean switch of SamplerOptions that ``only`` turns on alone, and the
    lossless set (the one the bf16 parity test above runs) is exactly the techniques that leave the
    backbone's shapes alone: not trimmed_guidance, length_bucketing, block_attention or static_step (which
    buckets the rows) (sampler docstring)."""
    from dataclasses import fields

    switches = {f.name: f for f in fields(SamplerOptions)}
    assert SamplerOptions.stock().enabled() == []
    for name in TECHNIQUES:
        assert name in switches and isinstance(getattr(SamplerOptions(), name), bool), name
        assert SamplerOptions.only(name).enabled() == [name]
    assert SamplerOptions.only(*TECHNIQUES).enabled() == list(TECHNIQUES)
    with pytest.raises(ValueError, match="unknown technique"):
        SamplerOptions.only("sliced_projection", "warp_drive")
    assert set(LOSSLESS) == set(TECHNIQUES) - {"trimmed_guidance", "length_bucketing", "block_attention",
                                               "static_step"}
    assert SamplerOptions.only(*LOSSLESS).enabled() == [t for t in TECHNIQUES if t in LOSSLESS]


def test_dtype_in_say_json(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    base = ["say", "--model", "tiny", "--device", "cpu", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT,
            "Good evening.", "--num-step", "4", "--json"]
    monkeypatch.setenv("OMNISTUDIO_CPU_BF16", "1")
    assert main([*base, "-o", str(tmp_path / "auto.wav")]) == 0
    auto = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert auto["dtype"] == "bf16" and auto["dtype_reason"].startswith("auto") and auto["vocoder_dtype"] == "fp32"
    assert main([*base, "--dtype", "fp32", "-o", str(tmp_path / "fp32.wav")]) == 0
    forced = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert forced["dtype"] == "fp32" and forced["dtype_reason"] == "--dtype fp32"
    assert main([*base, "--dtype", "fp8", "-o", str(tmp_path / "bad.wav")]) == 2
    assert "unknown dtype 'fp8'" in capsys.readouterr().err


def test_link_info_names_the_dtype(tiny_engine: Any, bf16_engine: Any) -> None:
    from omnistudio.take.link import LocalEngine

    assert LocalEngine(tiny_engine).info.dtype == "fp32"
    assert LocalEngine(bf16_engine).info.dtype == "bf16"
