"""Random-weight OmniVoice checkpoints built offline with the real classes.

The real weights (``k2-fsa/OmniVoice``) come from the model hub. Where the hub
cannot be reached, these checkpoints let the whole pipeline run: they use
OmniVoice's own ``OmniVoice`` / ``OmniVoiceConfig`` classes, a Qwen3 backbone,
and transformers' ``HiggsAudioV2TokenizerModel``, with random weights drawn
from a fixed seed. **They make noise, not speech.** Compute cost does not depend
on weight values, so ``mid`` and ``full`` are fair for speed measurements.

- ``tiny``: a few MB, builds in seconds; for tests and demos.
- ``mid``: the real backbone width (Qwen3-0.6B layers) with 4 of 28 layers and
  the real tokenizer geometry; for CPU benchmarks.
- ``full``: the real geometry (Qwen3-0.6B backbone, 151,676-token vocabulary,
  the real HiggsAudioV2 tokenizer configuration).

Each is built once, deterministically, into the user cache directory and then
loaded through the normal ``OmniVoice.from_pretrained``.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import struct
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from omnistudio import tempfiles
from omnistudio.config import locations

if TYPE_CHECKING:
    from transformers import HiggsAudioV2TokenizerConfig, PreTrainedTokenizerFast

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
COMPLETE_MARKER = "omnistudio_checkpoint.json"
SPECIAL_TOKENS = [
    "<|denoise|>",
    "<|lang_start|>",
    "<|lang_end|>",
    "<|instruct_start|>",
    "<|instruct_end|>",
    "<|text_start|>",
    "<|text_end|>",
]
NOISE_WARNING = "random-weight checkpoint: it makes noise, not speech"


@dataclass(frozen=True)
class Geometry:
    """Shapes of one random checkpoint."""

    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    llm_vocab: int  # at least the text tokenizer's size; >1024 (audio ids index it too)
    bpe_vocab: int
    tokenizer: dict[str, Any] = field(default_factory=dict)
    seed: int = 1234


_TINY_TOKENIZER = {
    "codebook_dim": 8,
    "acoustic": {
        "encoder_hidden_size": 8,
        "decoder_hidden_size": 32,
        "hidden_size": 16,
    },
    "semantic": {
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 32,
        "conv_dim": [16] * 7,
        "num_conv_pos_embedding_groups": 4,
        "num_conv_pos_embeddings": 16,
    },
}
_REAL_TOKENIZER: dict[str, Any] = {
    "codebook_dim": 64,
    "acoustic": {"encoder_hidden_size": 64, "decoder_hidden_size": 1024, "hidden_size": 256},
    "semantic": {},  # HuBERT base, transformers' defaults
}

GEOMETRIES: dict[str, Geometry] = {
    "tiny": Geometry("tiny", 64, 128, 2, 4, 2, 16, 1088, 1088, _TINY_TOKENIZER),
    "mid": Geometry("mid", 1024, 3072, 4, 16, 8, 128, 4096, 4096, _REAL_TOKENIZER),
    "full": Geometry("full", 1024, 3072, 28, 16, 8, 128, 151_676, 4096, _REAL_TOKENIZER),
}


def checkpoint_dir(name: str) -> Path:
    """Where the named random checkpoint lives (built or not)."""
    return locations().checkpoints / f"{name}-v{FORMAT_VERSION}"


def is_built(path: Path) -> bool:
    return (path / COMPLETE_MARKER).is_file()


def ensure_checkpoint(name: str, progress: Callable[[str], None] | None = None) -> Path:
    """Return the directory of random checkpoint ``name``, building it if needed.

    ``progress`` is an optional callable taking a short status string.
    """
    if name not in GEOMETRIES:
        raise KeyError(name)

    target = checkpoint_dir(name)
    tempfiles.sweep(target.parent)  # build folders of killed runs
    if is_built(target):
        problem = damaged_file(target)
        if problem is None:
            return target
        moved = tempfiles.quarantine(target, "damaged")
        log.warning("checkpoint file %s is damaged (%s): moved aside to %s; rebuilding", problem[0], problem[1],
                    moved.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    log.warning("building the '%s' %s (once) in %s", name, NOISE_WARNING, target)
    tmp = tempfiles.mkdtemp(target.parent, name)
    try:
        build_checkpoint(GEOMETRIES[name], tmp, progress=progress)
        if is_built(target):  # another process won the race
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def damaged_file(path: Path) -> tuple[Path, str] | None:
    """The first weight file of a checkpoint whose safetensors header does not match its size
    (truncated, padded, garbage), with why; None when every one is whole. Reads headers only."""

    for file in sorted(path.rglob("*.safetensors")):
        try:
            size = file.stat().st_size
            with file.open("rb") as fh:
                (length,) = struct.unpack("<Q", fh.read(8))
                if not 2 <= length <= min(size - 8, 100 << 20):
                    return file, "bad header"
                header = json.loads(fh.read(length))
        except (OSError, struct.error, ValueError, UnicodeDecodeError):
            return file, "unreadable header"
        ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)]
        if 8 + length + max(ends, default=0) != size:
            return file, f"{size} bytes, its header describes {8 + length + max(ends, default=0)}"
    return None


def damage(path: Path) -> tuple[Path, str] | None:
    """The first damaged file of a checkpoint folder, with why, or None: a weight file whose safetensors
    header does not match its size (:func:`damaged_file`), or a JSON file (configs, tokenizers) that does not
    parse. What decides whether a checkpoint that failed to load is moved aside: an import, device or
    memory error leaves whole files, and the same checkpoint loads once the machine is put right."""
    problem = damaged_file(path)
    if problem is not None:
        return problem
    for file in sorted(path.rglob("*.json")):
        try:
            json.loads(file.read_bytes())
        except OSError as exc:
            return file, f"unreadable ({exc.strerror or type(exc).__name__})"
        except ValueError:
            return file, "not valid JSON"
    return None


def _train_text_tokenizer(vocab_size: int) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on a small bundled corpus, with OmniVoice's special tokens."""
    # lazy: start-up (transformers)
    from transformers import PreTrainedTokenizerFast

    corpus = resources.files("omnistudio.data").joinpath("bpe_corpus.txt").read_text("utf-8")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(SPECIAL_TOKENS) - 1,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus.splitlines(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": SPECIAL_TOKENS})
    return fast


def _tokenizer_config(geo: Geometry) -> HiggsAudioV2TokenizerConfig:
    # lazy: start-up (transformers)
    from transformers import DacConfig, HiggsAudioV2TokenizerConfig, HubertConfig

    spec = geo.tokenizer
    acoustic = DacConfig(
        downsampling_ratios=[8, 5, 4, 2, 3],
        sampling_rate=24_000,
        **spec["acoustic"],
    )
    # The real codec's decoder upsamples in the encoder's order, not reversed as DacConfig derives it
    # (an attribute, not an argument: assigned after construction, the saved config.json is the same).
    acoustic.upsampling_ratios = [8, 5, 4, 2, 3]
    semantic = HubertConfig(mask_time_prob=0.0, **spec["semantic"])
    return HiggsAudioV2TokenizerConfig(
        codebook_size=1024,
        codebook_dim=spec["codebook_dim"],
        target_bandwidths=[0.5, 1, 1.5, 2],
        acoustic_model_config=acoustic,
        semantic_model_config=semantic,
    )


def import_pydub_quietly() -> None:
    """Import pydub (omnivoice imports it) without its import-time "Couldn't find ffmpeg or avconv"
    RuntimeWarning: OmniStudio never has pydub read or write a file, so ffmpeg is not needed. Scoped to
    this import, so every other warning still shows. Call it before the first omnivoice import."""

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Couldn't find ffmpeg", category=RuntimeWarning)
        importlib.import_module("pydub")


def build_checkpoint(geo: Geometry, out: Path, progress: Callable[[str], None] | None = None) -> None:
    """Build checkpoint ``geo`` into directory ``out`` (deterministic for ``geo.seed``)."""
    import_pydub_quietly()
    # lazy: start-up (omnivoice, torch, transformers)
    import torch
    from omnivoice.models.omnivoice import OmniVoice, OmniVoiceConfig
    from transformers import DacFeatureExtractor, HiggsAudioV2TokenizerModel, Qwen3Config

    say = progress or (lambda _msg: None)
    out.mkdir(parents=True, exist_ok=True)
    say("training text tokenizer")
    text_tok = _train_text_tokenizer(geo.bpe_vocab)
    text_tok.save_pretrained(out)
    vocab = max(geo.llm_vocab, len(text_tok))

    say("building backbone")
    llm_config = Qwen3Config(
        vocab_size=vocab,
        hidden_size=geo.hidden,
        intermediate_size=geo.intermediate,
        num_hidden_layers=geo.layers,
        num_attention_heads=geo.heads,
        num_key_value_heads=geo.kv_heads,
        head_dim=geo.head_dim,
        max_position_embeddings=40_960,
        rope_parameters={"rope_theta": 1_000_000.0, "rope_type": "default"},
        tie_word_embeddings=True,
    )
    config = OmniVoiceConfig(llm_config=llm_config)
    torch.manual_seed(geo.seed)
    model = OmniVoice(config)
    say("saving backbone")
    model.save_pretrained(out)
    del model

    say("building audio tokenizer")
    torch.manual_seed(geo.seed + 1)
    tok_model = HiggsAudioV2TokenizerModel(_tokenizer_config(geo))
    generator = torch.Generator().manual_seed(geo.seed + 2)
    with torch.no_grad():
        # post_init zero-fills the RVQ codebooks; every code would decode the same.
        for name, buf in tok_model.named_buffers():
            if name.endswith("codebook.embed"):
                buf.copy_(torch.randn(buf.shape, generator=generator) * 0.5)
            elif name.endswith("codebook.embed_avg"):
                buf.copy_(tok_model.get_buffer(name[: -len("_avg")]))
            elif name.endswith("codebook.cluster_size"):
                buf.fill_(1.0)
    tok_dir = out / "audio_tokenizer"
    say("saving audio tokenizer")
    tok_model.save_pretrained(tok_dir)
    DacFeatureExtractor(sampling_rate=24_000, hop_length=960).save_pretrained(tok_dir)

    marker = {
        "format_version": FORMAT_VERSION,
        "name": geo.name,
        "seed": geo.seed,
        "warning": NOISE_WARNING,
    }
    (out / COMPLETE_MARKER).write_text(json.dumps(marker, indent=2))
