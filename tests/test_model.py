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


def test_device_and_dtype_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.delenv("OMNISTUDIO_DEVICE", raising=False)

    def machine(cuda: bool, mps: bool) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)

    for cuda, mps, best in [(True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")]:
        machine(cuda, mps)
        assert pick_device() == best, (cuda, mps)  # cuda > mps > cpu
    machine(True, True)
    assert pick_device("cpu") == "cpu" and pick_device("cuda:1") == "cuda:1" and pick_device("mps") == "mps"
    monkeypatch.setenv("OMNISTUDIO_DEVICE", "cpu")
    assert pick_device() == "cpu"  # the environment names one
    assert pick_device("mps") == "mps"  # an explicit request wins over the environment
    monkeypatch.delenv("OMNISTUDIO_DEVICE")
    machine(False, False)
    with pytest.raises(UserError, match="CUDA is not available"):
        pick_device("cuda:0")
    with pytest.raises(UserError, match="MPS is not available"):
        pick_device("mps")
    with pytest.raises(UserError, match="unknown device 'tpu'"):
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


class _Built(Exception):
    """Raised by the stand-in OmniVoice once build_checkpoint has handed it its config."""


def _built_config(name: str, tmp_path: Path) -> object:
    """The OmniVoiceConfig that build_checkpoint makes for geometry ``name`` (nothing trained or saved)."""
    import omnivoice.models.omnivoice as omnivoice_mod

    geo = checkpoints.GEOMETRIES[name]

    class Tokenizer:  # the trained BPE is irrelevant here: only its size enters the config
        def __len__(self) -> int:
            return geo.bpe_vocab

        def save_pretrained(self, _path: object) -> None:
            pass

    def capture(config: object) -> None:
        raise _Built(config)

    with pytest.MonkeyPatch.context() as patch, pytest.raises(_Built) as built:
        patch.setattr(checkpoints, "_train_text_tokenizer", lambda _size: Tokenizer())
        patch.setattr(omnivoice_mod, "OmniVoice", capture)
        checkpoints.build_checkpoint(geo, tmp_path / name)
    return built.value.args[0]


def _millions(module: object) -> float:
    return round(sum(p.numel() for p in module.parameters()) / 1e6, 1)  # type: ignore[attr-defined]


def test_geometries_match_the_real_model(tmp_path: Path) -> None:
    """What build_checkpoint makes of ``full`` is the published model: Qwen3-0.6B's backbone config and
    OmniVoice's parameter counts (612.6M: transformer 440.5M, tied text embedding 155.3M, audio embeddings
    and heads 16.8M), with the 200.3M HiggsAudioV2 tokenizer; ``mid`` is that width with 4 of 28 layers.
    Built on the meta device: shapes only, no memory, no weights."""
    import torch
    from omnivoice.models.omnivoice import OmniVoice
    from transformers import HiggsAudioV2TokenizerModel

    config = _built_config("full", tmp_path)
    llm = config.llm_config  # type: ignore[attr-defined]
    assert (llm.vocab_size, llm.hidden_size, llm.intermediate_size, llm.num_hidden_layers, llm.num_attention_heads,
            llm.num_key_value_heads, llm.head_dim, llm.max_position_embeddings) == (
        151_676, 1024, 3072, 28, 16, 8, 128, 40_960)
    assert llm.rope_parameters["rope_theta"] == 1_000_000.0 and llm.tie_word_embeddings
    with torch.device("meta"):
        full = OmniVoice(config)
        mid = OmniVoice(_built_config("mid", tmp_path))
        vocoder = {name: HiggsAudioV2TokenizerModel(checkpoints._tokenizer_config(checkpoints.GEOMETRIES[name]))
                   for name in ("full", "mid")}
    assert _millions(full) == 612.6
    assert (_millions(full.llm.layers), _millions(full.llm.embed_tokens)) == (440.5, 155.3)
    assert _millions(full.audio_embeddings) + _millions(full.audio_heads) == pytest.approx(16.8)
    assert _millions(vocoder["full"]) == _millions(vocoder["mid"]) == 200.3
    assert len(mid.llm.layers) == 4 and _millions(mid.llm.layers) == round(440.466432 * 4 / 28, 1)
    assert mid.config.llm_config.hidden_size == llm.hidden_size
