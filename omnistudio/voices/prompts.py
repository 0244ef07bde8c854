"""Voice prompts for the anchors: make, save/load (safetensors), staleness, the device cache.

A prompt file ``{anchor}_{lang}.omni_prompt.safetensors`` holds the reference's
8-codebook tokens as a tensor and, as string metadata, the anchor, language,
exact ref_text, ref_rms, the model fingerprint, the sha256 of the source (the
recording and its transcript, or the voice-design recipe) and a format version.
Nothing is pickled. A prompt whose model fingerprint or source hash differs
from now is stale and gets rebuilt; a damaged or foreign file fails with an
error naming that file, and the other prompts still load.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from omnistudio import tempfiles
from omnistudio.checks import check_language
from omnistudio.commit import atomic_write_bytes
from omnistudio.config import locations
from omnistudio.engine.reference import read_reference
from omnistudio.errors import UserError, first_line
from omnistudio.voices.asr import Calibration, Transcriber, calibrate
from omnistudio.voices.roster import Anchor, Roster, load_roster
from omnistudio.voices.state import AnchorPrompt, voice_state

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine

log = logging.getLogger(__name__)

SUFFIX = ".omni_prompt.safetensors"
FORMAT = "omnistudio.voice_prompt"
FORMAT_VERSION = "1"
DESIGN_VERSION = 1  # bump when the design render changes (makes every designed prompt stale)
NUM_CODEBOOKS = 8
CODEBOOK_SIZE = 1024
Progress = Callable[[str], None]


class PromptError(UserError):
    """A prompt file that cannot be used (damaged, foreign, or another anchor's)."""


@dataclass(frozen=True)
class Source:
    """Where an anchor's reference in one language comes from, and its content hash."""

    kind: str  # "recording" | "design"
    voice: str  # the anchor whose voice it is (differs from the anchor when matched)
    lang: str
    sha256: str
    text: str  # the roster's transcript, or the calibration sentence for design
    recording: Path | None = None
    instruct: str = ""
    seed: int = 0
    num_step: int = 0
    guidance: float = 0.0


def prompt_dir() -> Path:
    return locations().prompts


def prompt_path(anchor: str, lang: str, folder: Path | None = None) -> Path:
    return (folder or prompt_dir()) / f"{anchor}_{lang}{SUFFIX}"


def sha256_file(path: Path) -> str:
    """The sha256 of a file's content (hex), read a megabyte at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_for(roster: Roster, anchor_id: str, lang: str) -> Source:
    """The reference recipe for ``anchor_id`` in ``lang`` (fails if its recording is missing)."""
    owner, voice = roster.source_of(anchor_id, lang)
    if voice.recording is not None:
        if not voice.recording.is_file():
            raise UserError(f"anchor '{anchor_id}' ({lang}): recording {voice.recording} does not exist")
        recipe: dict[str, object] = {"kind": "recording", "audio_sha256": sha256_file(voice.recording),
                  "transcript": voice.transcript}
        sha = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
        return Source("recording", owner.id, lang, sha, voice.transcript or "", recording=voice.recording)
    return design_source(roster, owner, lang)


def design_source(roster: Roster, owner: Anchor, lang: str) -> Source:
    """The voice-design recipe of ``owner`` in ``lang``: its instruct and seed, the roster's calibration
    sentence and design settings (an anchor not in the roster, such as a request's design voice, too)."""
    recipe = {"kind": "design", "version": DESIGN_VERSION, "instruct": owner.instruct(lang), "seed": owner.seed,
              "text": roster.calibration[lang], "lang": lang, **roster.design}
    sha = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
    return Source("design", owner.id, lang, sha, roster.calibration[lang], instruct=owner.instruct(lang),
                  seed=owner.seed, num_step=int(roster.design["num_step"]),
                  guidance=float(roster.design["guidance"]))


# ------------------------------------------------------------------------ files
def save_prompt(path: Path, prompt: AnchorPrompt) -> None:
    """Write ``prompt`` as safetensors (tokens + string metadata), atomically."""
    # lazy: start-up (safetensors)
    from safetensors.torch import save_file

    meta = {**prompt.meta, "format": FORMAT, "format_version": FORMAT_VERSION, "anchor": prompt.anchor,
            "lang": prompt.lang, "ref_text": prompt.ref_text, "ref_rms": repr(float(prompt.ref_rms))}
    tokens = prompt.ref_audio_tokens.detach().to("cpu").contiguous()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, lambda tmp: save_file({"ref_audio_tokens": tokens}, str(tmp), metadata=meta),
                       suffix=".safetensors")


def load_prompt(path: Path, anchor: str | None = None, lang: str | None = None,
                device: str | None = None) -> AnchorPrompt:
    """Read and check one prompt file; ``anchor``/``lang`` must match its metadata when given."""
    # lazy: start-up (torch)
    import torch

    tokens, meta = read_prompt(path, anchor, lang)
    return AnchorPrompt(torch.tensor(tokens, dtype=torch.long, device=device or "cpu"), meta["ref_text"],
                        float(meta["ref_rms"]), meta["anchor"], meta["lang"], meta)


def read_prompt(path: Path, anchor: str | None = None, lang: str | None = None) -> tuple[np.ndarray, dict[str, str]]:
    """The checks of :func:`load_prompt` without torch (``voices list`` judges every file with them):
    the reference tokens as a numpy array and the metadata, or a PromptError naming the file."""
    # lazy: start-up (safetensors)
    from safetensors import safe_open

    name = path.name
    try:
        with safe_open(str(path), framework="numpy") as fh:
            meta = dict(fh.metadata() or {})
            keys = set(fh.keys())
            tokens = fh.get_tensor("ref_audio_tokens") if "ref_audio_tokens" in keys else None
    except FileNotFoundError:
        raise PromptError(f"prompt file {path} does not exist") from None
    except Exception as exc:  # truncated, pickled, random bytes: safetensors refuses them all
        raise PromptError(f"prompt file {name} is damaged or not a safetensors prompt ({first_line(exc)})") from None
    if meta.get("format") != FORMAT:
        raise PromptError(f"prompt file {name} is not an OmniStudio voice prompt (no '{FORMAT}' metadata)")
    if meta.get("format_version") != FORMAT_VERSION:
        raise PromptError(f"prompt file {name} has format version {meta.get('format_version')!r}; "
                          f"this version reads {FORMAT_VERSION}")
    if anchor is not None and (meta.get("anchor"), meta.get("lang")) != (anchor, lang):
        raise PromptError(f"prompt file {name} holds anchor '{meta.get('anchor')}' ({meta.get('lang')}), "
                          f"not '{anchor}' ({lang})")
    if tokens is None or tokens.ndim != 2 or tokens.shape[0] != NUM_CODEBOOKS or tokens.shape[1] == 0:
        shape = None if tokens is None else list(tokens.shape)
        raise PromptError(f"prompt file {name} has reference tokens of shape {shape}; expected [8, T>0]")
    if tokens.dtype.kind not in "iu" or int(tokens.min()) < 0 or int(tokens.max()) >= CODEBOOK_SIZE:
        raise PromptError(f"prompt file {name} has reference tokens outside the codebook (0..1023)")
    try:
        rms = float(meta["ref_rms"])
        text = meta["ref_text"]
    except (KeyError, ValueError):
        raise PromptError(f"prompt file {name} lacks a valid ref_text/ref_rms") from None
    if not text.strip() or not rms > 0 or rms == float("inf"):
        raise PromptError(f"prompt file {name} has an empty ref_text or a bad ref_rms ({rms})")
    return tokens, meta


def prompt_state(roster: Roster, anchor_id: str, lang: str, fingerprint: str | None,
                 folder: Path | None = None) -> tuple[str, str]:
    """("missing" | "ready" | "stale" | "invalid" | "error" | "unchecked", why)."""
    path = prompt_path(anchor_id, lang, folder)
    if not path.exists():
        return "missing", "no prompt file"
    try:
        _tokens, meta = read_prompt(path, anchor_id, lang)
        source = source_for(roster, anchor_id, lang)
    except PromptError as exc:
        return "invalid", str(exc)
    except UserError as exc:
        return "error", str(exc)
    return _freshness(meta, source, fingerprint)


def _freshness(meta: dict[str, str], source: Source, fingerprint: str | None) -> tuple[str, str]:
    """A prompt's state from its metadata: made from this source, with this model."""
    made_with = meta.get("model_fingerprint", "")
    if meta.get("source_sha256", "") != source.sha256:
        return "stale", f"its {source.kind} source changed"
    if fingerprint is None:
        return "unchecked", "model not available locally"
    if made_with != fingerprint:
        return "stale", f"made with model {made_with or '?'}, now {fingerprint}"
    return "ready", ""


# ------------------------------------------------------------------------ build
def reference_audio(engine: Engine, source: Source) -> tuple[np.ndarray, int]:
    """The reference waveform: the recording, or a voice-design render with the anchor's seed."""
    # lazy: start-up (torch)
    import torch

    if source.recording is not None:
        return read_reference(source.recording)
    with engine._lock, torch.inference_mode():
        torch.manual_seed(source.seed)
        # postprocess_output=False: upstream trims random-weight design output to nothing and raises.
        wave = engine.model.generate(text=source.text, language=source.lang, instruct=source.instruct,
                                     num_step=source.num_step, guidance_scale=source.guidance,
                                     postprocess_output=False)[0]
    return np.ascontiguousarray(wave, dtype=np.float32), int(engine.sample_rate)


def build_prompt(engine: Engine, roster: Roster, anchor_id: str, lang: str,
                 transcriber: Transcriber | None = None) -> tuple[AnchorPrompt, Calibration]:
    """Make the prompt for ``anchor_id`` in ``lang`` from its source (not saved)."""
    return prompt_from_source(engine, source_for(roster, anchor_id, lang), anchor_id, transcriber)


def prompt_from_source(engine: Engine, source: Source, anchor_id: str,
                       transcriber: Transcriber | None = None) -> tuple[AnchorPrompt, Calibration]:
    """Make the prompt of ``source`` (a recording, or a voice design: its instruct and seed are stored in
    the metadata), named ``anchor_id`` (not saved)."""
    lang = source.lang
    wave, sr = reference_audio(engine, source)
    calibration = calibrate(transcriber, wave, sr, lang, source.text)
    made = engine.prompt_from_audio(wave, sr, calibration.transcript)
    meta = {"model_fingerprint": engine.loaded.fingerprint, "source_sha256": source.sha256,
            "source_kind": source.kind, "voice": source.voice, "transcript_source": calibration.source,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if source.kind == "design":
        meta.update(instruct=source.instruct, seed=str(source.seed))
    tokens = made.ref_audio_tokens.to(engine.loaded.device)
    return AnchorPrompt(tokens, made.ref_text, float(made.ref_rms), anchor_id, lang, meta), calibration


def ensure_prompt(engine: Engine, roster: Roster, anchor_id: str, lang: str,
                  transcriber: Transcriber | None = None, progress: Progress | None = None,
                  folder: Path | None = None, force: bool = False,
                  ) -> tuple[AnchorPrompt, str, Calibration | None]:
    """Load the saved prompt if ready, else build and save it: (prompt, action, calibration)."""
    state, why = ("missing", "forced") if force else prompt_state(
        roster, anchor_id, lang, engine.loaded.fingerprint, folder)
    path = prompt_path(anchor_id, lang, folder)
    if state == "ready":
        return load_prompt(path, anchor_id, lang, device=engine.loaded.device), "skipped", None
    if state == "error":
        raise UserError(why)
    if state == "invalid":
        moved = tempfiles.quarantine(path, "damaged") if path.exists() else path
        log.warning("%s; moved aside to %s and rebuilding it", why, moved.name)
    if progress:
        progress(f"building the {lang} voice prompt for '{anchor_id}' ({why})")
    prompt, calibration = build_prompt(engine, roster, anchor_id, lang, transcriber)
    save_prompt(path, prompt)
    return prompt, ("built" if state == "missing" else "rebuilt"), calibration


# ------------------------------------------------------------------------ cache
@dataclass
class LoadReport:
    loaded: int = 0
    seconds: float = 0.0
    not_ready: dict[tuple[str, str], str] = field(default_factory=dict)  # (anchor, lang) -> state
    errors: list[str] = field(default_factory=list)
    duos: int = 0  # canonical duo blends built at start


class PromptCache:
    """Prompts on the model's device, looked up by (anchor, lang) in a dict (an engine's: its VoiceState's)."""

    def __init__(self, items: dict[tuple[str, str], AnchorPrompt] | None = None) -> None:
        self._items: dict[tuple[str, str], AnchorPrompt] = {} if items is None else items

    def __len__(self) -> int:
        return len(self._items)

    def get(self, anchor: str, lang: str) -> AnchorPrompt | None:
        return self._items.get((anchor, lang))

    def put(self, prompt: AnchorPrompt) -> None:
        self._items[(prompt.anchor, prompt.lang)] = prompt

    def drop(self, anchor: str) -> None:
        """Forget every language of ``anchor`` (it was removed or replaced)."""
        for key in [k for k in self._items if k[0] == anchor]:
            del self._items[key]

    def keys(self) -> list[tuple[str, str]]:
        return list(self._items)

    def load_all(self, roster: Roster, fingerprint: str, device: str, folder: Path | None = None) -> LoadReport:
        """Load every ready prompt of the roster; one bad file is reported, the rest still load."""
        report = LoadReport()
        started = time.perf_counter()
        for anchor_id, lang in roster.pairs():
            path = prompt_path(anchor_id, lang, folder)
            if not path.exists():
                report.not_ready[(anchor_id, lang)] = "missing"
                continue
            try:
                prompt = load_prompt(path, anchor_id, lang, device=device)
                state, _why = _freshness(prompt.meta, source_for(roster, anchor_id, lang), fingerprint)
            except UserError as exc:
                report.errors.append(str(exc))
                report.not_ready[(anchor_id, lang)] = "invalid"
                continue
            if state == "ready":
                self.put(prompt)
                report.loaded += 1
            else:
                report.not_ready[(anchor_id, lang)] = state
        report.seconds = time.perf_counter() - started
        return report


def cache_for(engine: Engine) -> PromptCache:
    """The prompt cache that belongs to ``engine`` (its :class:`~omnistudio.voices.state.VoiceState`'s)."""
    return PromptCache(voice_state(engine).prompts)


def anchor_prompt(engine: Engine, anchor_id: str, lang: str, progress: Progress | None = None) -> AnchorPrompt:
    """The anchor's prompt on the model's device: cached, loaded, or built on demand and saved."""

    lang = check_language(lang)
    key = (anchor_id or "").strip().lower()
    cache = cache_for(engine)
    hit = cache.get(key, lang)
    if hit is not None:
        return hit
    roster = load_roster()
    anchor = roster.get(key)
    prompt, _action, _cal = ensure_prompt(engine, roster, anchor.id, lang, progress=progress)
    cache.put(prompt)
    return prompt


def offline_fingerprint(model: str | None) -> str | None:
    """The fingerprint of ``--model`` without downloading anything (None for a hub id not cached)."""
    # lazy: start-up (the model stack: omnistudio.engine.model and what it loads)
    from omnistudio.engine.model import checkpoint_path, fingerprint, resolve_model

    spec = resolve_model(model)
    if spec.kind == "hub":
        # lazy: start-up (huggingface_hub)
        from huggingface_hub import snapshot_download

        try:
            return fingerprint(Path(snapshot_download(spec.name, local_files_only=True)))
        except Exception:
            return None
    return fingerprint(checkpoint_path(spec))
