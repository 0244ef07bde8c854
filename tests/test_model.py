"""Model resolution, device/dtype choice, checkpoint directories and their errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from omnistudio.engine import checkpoints
from omnistudio.engine.model import (
    check_model_dir,
    fingerprint,
    load_model,
    pick_device,
    pick_dtype,
    resolve_model,
    set_backend_flags,
)
from omnistudio.errors import UserError


def test_resolve_named_random_checkpoints() -> None:
    for name in ("tiny", "mid", "full"):
        spec = resolve_model(name)
        assert spec.kind == "random" and spec.is_random and spec.name == name


def test_resolve_hub_id_and_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_model("k2-fsa/OmniVoice").kind == "hub"
    monkeypatch.delenv("OMNISTUDIO_MODEL", raising=False)
    assert resolve_model(None).name == "k2-fsa/OmniVoice"
    monkeypatch.setenv("OMNISTUDIO_MODEL", "tiny")
    assert resolve_model(None).kind == "random"


def test_resolve_local_directory(tmp_path: Path) -> None:
    spec = resolve_model(str(tmp_path))
    assert spec.kind == "dir" and spec.path == tmp_path.resolve()


@pytest.mark.parametrize("value", ["", "not a model", "./does-not-exist", "a/b/c"])
def test_resolve_rejects_nonsense(value: str) -> None:
    with pytest.raises(UserError):
        resolve_model(value)


def test_resolve_rejects_a_file(tmp_path: Path) -> None:
    f = tmp_path / "model.bin"
    f.write_bytes(b"x")
    with pytest.raises(UserError, match="not a directory"):
        resolve_model(str(f))


def test_unreachable_hub_fails_with_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError) as info:
        load_model("someone/not-cached-model")
    message = str(info.value)
    assert "\n" not in message
    assert "--model tiny" in message and "/path/to/dir" in message


def test_device_and_dtype_choice() -> None:
    import torch

    assert pick_device() == ("cuda" if torch.cuda.is_available() else
                             "mps" if torch.backends.mps.is_available() else "cpu")
    assert pick_device("cpu") == "cpu"
    with pytest.raises(UserError):
        pick_device("tpu")
    assert pick_dtype("cpu") is torch.float32
    assert pick_dtype("cuda") is torch.float16
    assert pick_dtype("cpu", "bf16") is torch.bfloat16
    with pytest.raises(UserError):
        pick_dtype("cpu", "fp8")


def test_backend_flags_turn_cudnn_benchmark_off() -> None:
    import torch

    torch.backends.cudnn.benchmark = True
    set_backend_flags("cpu")
    assert torch.backends.cudnn.benchmark is False


def test_tiny_checkpoint_is_deterministic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = checkpoints.ensure_checkpoint("tiny")
    assert checkpoints.is_built(first)
    again = tmp_path / "again"
    checkpoints.build_checkpoint(checkpoints.GEOMETRIES["tiny"], again)
    assert fingerprint(first) == fingerprint(again)
    a = (first / "model.safetensors").read_bytes()
    b = (again / "model.safetensors").read_bytes()
    assert a == b
    assert (first / "audio_tokenizer" / "model.safetensors").read_bytes() == (
        again / "audio_tokenizer" / "model.safetensors").read_bytes()


def test_tiny_codebooks_are_not_zero() -> None:
    from safetensors import safe_open

    path = checkpoints.ensure_checkpoint("tiny") / "audio_tokenizer" / "model.safetensors"
    with safe_open(str(path), "pt") as f:
        embeds = [k for k in f.keys() if k.endswith("codebook.embed")]
        assert len(embeds) == 8
        for key in embeds:
            assert f.get_tensor(key).abs().sum() > 0


def test_model_dir_missing_files_are_named(tmp_path: Path) -> None:
    src = checkpoints.ensure_checkpoint("tiny")
    broken = tmp_path / "broken"
    shutil.copytree(src, broken)
    (broken / "model.safetensors").unlink()
    shutil.rmtree(broken / "audio_tokenizer")
    with pytest.raises(UserError) as info:
        check_model_dir(broken)
    assert "model.safetensors" in str(info.value) and "audio_tokenizer/config.json" in str(info.value)
    with pytest.raises(UserError):
        load_model(str(broken))


def test_load_tiny_from_directory_uses_the_real_classes() -> None:
    from omnivoice.models.omnivoice import OmniVoice
    from transformers import HiggsAudioV2TokenizerModel

    loaded = load_model(str(checkpoints.ensure_checkpoint("tiny")), device="cpu")
    assert isinstance(loaded.model, OmniVoice)
    assert isinstance(loaded.model.audio_tokenizer, HiggsAudioV2TokenizerModel)
    assert loaded.sample_rate == 24_000 and loaded.device == "cpu"
    assert loaded.model.audio_tokenizer.config.frame_rate == 25
    assert len(loaded.fingerprint) == 16


def test_geometries_match_the_real_model() -> None:
    full = checkpoints.GEOMETRIES["full"]
    assert (full.hidden, full.intermediate, full.layers, full.heads, full.kv_heads, full.head_dim,
            full.llm_vocab) == (1024, 3072, 28, 16, 8, 128, 151_676)
    mid = checkpoints.GEOMETRIES["mid"]
    assert mid.hidden == full.hidden and mid.layers < full.layers
