"""The Engine: one loaded OmniVoice model, voice prompts, and synthesis with timings.

``Engine.synthesize`` goes through OmniVoice's own ``generate()`` (text
preprocessing, duration estimate, chunking of long text, decoding, fades). The
fast sampler, when selected, replaces only the iterative unmasking loop that
``generate()`` calls, so everything around it stays stock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict, TypeGuard, Unpack

import numpy as np

from omnistudio.checks import DEFAULT_NUM_STEP, LANGUAGES, check_language, check_num_step, check_seed, check_text  # noqa: F401
from omnistudio.engine.generation import decode_tokens, generate_tokens, token_tensors
from omnistudio.engine.model import LoadedModel, Progress, load_model
from omnistudio.engine.morph import embedding_overrides
from omnistudio.engine.reference import Reference, check_transcript, read_reference
from omnistudio.engine.upstream import GenerationKwargs, OmniVoiceModel, Sampler, SeededSampler, VoicePrompt
from omnistudio.engine.voice_state import VoiceState
from omnistudio.errors import Cancelled, UserError

if TYPE_CHECKING:
    import torch

    from omnistudio.engine.cuda_graphs import GraphStatus
    from omnistudio.engine.generation import Tokens

log = logging.getLogger(__name__)

# The longest backbone row a session meets without chunking, in tokens: a 30 s target (OmniVoice chunks
# longer text) and its unconditional copy at 25 frames/s, a 10 s reference and the text. The warm-up
# captures step graphs up to it; a longer row is captured when first met.
LONGEST_ROW = 2 * 750 + 250 + 256


class CompileState(Protocol):
    """What the engine reads of its compiled backbone (engine/compiled_backbone.py sets itself here)."""

    @property
    def state(self) -> str:  # off | compiling | switching | compiled | failed
        ...

@dataclass(frozen=True)
class Timings:
    """How long one synthesis took, and how much audio it made."""

    wall_s: float
    audio_s: float
    rtf: float  # wall time / audio time; below 1 is faster than real time
    prompt_s: float = 0.0
    decode_s: float = 0.0  # of wall_s: the vocoder

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass
class PendingAudio:
    """Tokens made by :meth:`Engine.render_tokens`, waiting for :meth:`Engine.decode`."""

    tokens: Tokens
    started: float  # perf_counter at the start of the render
    prompt_s: float
    tokens_s: float  # wall time of the diffusion half, prompts included
    ready: torch.cuda.Event | None = None  # a CUDA event recorded when the tokens were complete (None on CPU)


@dataclass
class Synthesis:
    """Float32 mono PCM and its timings."""

    pcm: np.ndarray
    sample_rate: int
    timings: Timings


class RenderOptions(TypedDict, total=False):
    """The keywords of :meth:`Engine.render_tokens` after its first three arguments."""

    num_step: int
    seeds: list[int] | None
    guidance_scale: float
    speed: float | None
    sampler: Sampler | None | Literal["engine"]


def _with_seed(options: RenderOptions, seed: int) -> RenderOptions:
    """``options`` for one item of a batch rendered item by item: its own seed."""
    one: RenderOptions = {**options, "seeds": [seed]}
    return one


def _seeded(sampler: Sampler | None) -> TypeGuard[SeededSampler]:
    """Whether ``sampler`` takes one generator per item (the fast sampler does; the stock loop does not)."""
    return sampler is not None and hasattr(sampler, "generators")


class Engine:
    """Holds a loaded model and synthesises speech from text and a voice."""

    def __init__(self, loaded: LoadedModel, sampler: Sampler | None = None) -> None:
        self.loaded = loaded
        self.model: OmniVoiceModel = loaded.model
        self.sample_rate = loaded.sample_rate
        self.sampler = sampler  # None: OmniVoice's stock loop
        self._lock = threading.RLock()  # one synthesis at a time on the model
        self.compiled: CompileState | None = None  # the persistent compiled backbone, once started
        self.voice_state = VoiceState()  # its voices: anchor prompts, blends, prompts made from recordings
        self.passes = 0  # diffusion passes run (each holds the lock from its first step to its last)

    @property
    def compile_state(self) -> str:
        """off | compiling | switching | compiled | failed: the backbone's compilation (/health, the telemetry)."""
        return self.compiled.state if self.compiled is not None else "off"

    @property
    def graph_status(self) -> GraphStatus:
        """The static step's captured CUDA graphs (none on CPU): /health, the telemetry, the bench."""
        # lazy: start-up (torch)
        from omnistudio.engine.cuda_graphs import GraphStatus

        status = getattr(self.sampler, "graph_status", None)
        return status if isinstance(status, GraphStatus) else GraphStatus()

    def prepare_graphs(self, batches: Sequence[int] = (1,), longest: int = LONGEST_ROW,
                       num_step: int = DEFAULT_NUM_STEP, guidance_scale: float = 2.0) -> GraphStatus:
        """Capture the diffusion step for each batch size in ``batches`` at every row length up to
        ``longest`` tokens (CUDA with the fast sampler's static step; elsewhere nothing), so that no
        sentence of those shapes pays for a capture. Part of the warm-up."""
        # lazy: start-up (omnivoice)
        from omnivoice.models.omnivoice import OmniVoiceGenerationConfig

        prepare = getattr(self.sampler, "prepare_graphs", None)
        if prepare is None:
            return self.graph_status
        gen_config = OmniVoiceGenerationConfig.from_dict(self.generation_kwargs(num_step, guidance_scale))
        with self._lock:
            status: GraphStatus = prepare(gen_config, batches, longest)
        log.info("step graphs: %s", status.describe())
        return status

    @classmethod
    def load(
        cls,
        model: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        progress: Progress | None = None,
        quantize: str | None = None,
        reason: str | None = None,
    ) -> Engine:
        """``reason``: how ``dtype`` and ``quantize`` were chosen, when not by the caller's flags (a calibration)."""
        return cls(load_model(model, device=device, dtype=dtype, progress=progress, quantize=quantize,
                              reason=reason))

    # ---------------------------------------------------------------- prompts
    def prompt_from_audio(self, wave: np.ndarray, sample_rate: int, text: str) -> VoicePrompt:
        """Encode a reference waveform into a VoiceClonePrompt (8-codebook tokens)."""
        # lazy: start-up (torch)
        import torch

        transcript = check_transcript(text)
        with self._lock, torch.inference_mode():
            try:
                return self.model.create_voice_clone_prompt(
                    ref_audio=(torch.from_numpy(np.ascontiguousarray(wave)), sample_rate),
                    ref_text=transcript,
                )
            except ValueError as exc:  # e.g. empty after silence removal
                raise UserError(f"reference audio is unusable: {exc}".splitlines()[0]) from None

    def holds_prompt_for(self, voice: Reference) -> bool:
        """Whether :meth:`prompt_for` has ``voice``'s prompt already (a recording already encoded)."""
        path = Path(voice.audio)
        return any(k[0] == str(path.resolve()) and k[2] == voice.text.strip() for k in self.voice_state.recordings)

    def prompt_for(self, voice: Reference | VoicePrompt) -> VoicePrompt:
        """A VoiceClonePrompt for ``voice`` (a :class:`Reference` or a prompt already made)."""
        if isinstance(voice, Reference):
            path = Path(voice.audio)
            transcript = check_transcript(voice.text)
            key = (str(path.resolve()), path.stat().st_mtime if path.exists() else 0.0, transcript)
            memo = self.voice_state.recordings
            if key not in memo:
                wave, sr = read_reference(path)
                memo[key] = self.prompt_from_audio(wave, sr, transcript)
            return memo[key]
        if hasattr(voice, "ref_audio_tokens") and hasattr(voice, "ref_text"):
            return voice
        raise UserError(f"unsupported voice {voice!r}: give a reference recording or a prompt")

    # ----------------------------------------------------------- cancelling
    def on_each_step(self, should_cancel: Callable[[], bool],
                     on_step: Callable[[], None] | None = None) -> torch.utils.hooks.RemovableHandle:
        """Before every diffusion step run on *this* thread: raise :class:`Cancelled` if
        ``should_cancel()``, else call ``on_step``. Works for the stock loop and the fast sampler
        alike (the backbone runs once per step). Returns a handle; ``handle.remove()`` ends it."""
        thread = threading.get_ident()

        def hook(_module: torch.nn.Module, _args: object) -> None:
            if threading.get_ident() != thread:
                return  # another thread using the model: not ours to stop
            if should_cancel():
                raise Cancelled("synthesis cancelled")
            if on_step is not None:
                on_step()

        return self.model.llm.register_forward_pre_hook(hook)

    # -------------------------------------------------------------- synthesis
    @contextmanager
    def _sampler_installed(self, sampler: Sampler | None) -> Iterator[None]:
        """Route generate()'s unmasking loop through ``sampler`` for one call."""
        if sampler is None:
            yield
            return
        self.model._generate_iterative = sampler
        try:
            yield
        finally:
            del self.model._generate_iterative

    def generation_kwargs(self, num_step: int, guidance_scale: float) -> GenerationKwargs:
        return {
            "num_step": num_step,
            "guidance_scale": float(guidance_scale),
            # Silence trimming would change lengths unpredictably; the studio's
            # DSP stitches sentences itself. Fades and edge padding stay stock.
            "postprocess_output": False,
        }

    def synthesize(
        self,
        text: str,
        voice: Reference | VoicePrompt,
        language: str = "en",
        num_step: int = DEFAULT_NUM_STEP,
        seed: int = 0,
        guidance_scale: float = 2.0,
        speed: float | None = None,
        sampler: Sampler | None | Literal["engine"] = "engine",
    ) -> Synthesis:
        """Speak ``text`` in ``voice``: float32 PCM at 24 kHz plus timings.

        Deterministic for a given seed (on the same device and sampler).
        ``sampler="engine"`` uses the engine's configured sampler; ``None``
        forces OmniVoice's stock loop. ``voice`` may be a
        :class:`~omnistudio.engine.morph.BlendedPrompt` (morph of two anchors).
        """
        return self.synthesize_batch([text], [voice], [language], num_step=num_step, seeds=[seed],
                                     guidance_scale=guidance_scale, speed=speed, sampler=sampler)[0]

    def synthesize_batch(self, texts: list[str], voices: Sequence[Reference | VoicePrompt], languages: list[str],
                         **options: Unpack[RenderOptions]) -> list[Synthesis]:
        """Several lines (speakers, blends, lengths) in one diffusion pass, one seed per item.

        ``options``: those of :meth:`render_tokens` (num_step, seeds, guidance_scale, speed,
        sampler). With the fast sampler each item's noise comes from its own generator, so item
        ``i`` gets the tokens it would get alone with ``seeds[i]``. OmniVoice's stock loop draws
        one stream for the whole batch, so there a batch is rendered one item at a time instead.
        """
        sampler = options.get("sampler", "engine")
        chosen = self.sampler if sampler == "engine" else sampler
        if len(texts) > 1 and not _seeded(chosen):
            seeds = options.pop("seeds", None) or [0] * len(texts)
            return [self.decode(self.render_tokens([t], [v], [lang], **_with_seed(options, sd)))[0]
                    for t, v, lang, sd in zip(texts, voices, languages, seeds)]
        return self.decode(self.render_tokens(texts, voices, languages, **options))

    def render_tokens(
        self,
        texts: list[str],
        voices: Sequence[Reference | VoicePrompt],
        languages: list[str],
        num_step: int = DEFAULT_NUM_STEP,
        seeds: list[int] | None = None,
        guidance_scale: float = 2.0,
        speed: float | None = None,
        sampler: Sampler | None | Literal["engine"] = "engine",
    ) -> PendingAudio:
        """The diffusion half of a synthesis (one pass for the batch); :meth:`decode` is the other."""
        # lazy: start-up (torch)
        import torch

        if not (len(texts) == len(voices) == len(languages)) or not texts:
            raise UserError("a batch needs one voice and one language per text")
        texts = [check_text(t) for t in texts]
        langs = [check_language(lang) for lang in languages]
        steps = check_num_step(num_step)
        seed_list = [check_seed(s) for s in (seeds if seeds is not None else [0] * len(texts))]
        chosen = self.sampler if sampler == "engine" else sampler
        seeded = chosen if _seeded(chosen) else None  # per-item noise
        if len(texts) > 1 and seeded is None:
            raise UserError("a batch of several lines needs the fast sampler (per-item seeds)")
        started = time.perf_counter()
        with self._lock:
            self.passes += 1
            prompts = [self.prompt_for(v) for v in voices]
            prompt_s = time.perf_counter() - started
            torch.manual_seed(seed_list[0])
            if seeded is not None:
                seeded.generators = [torch.Generator(device=self.model.device).manual_seed(sd) for sd in seed_list]
            try:
                with torch.inference_mode(), self._sampler_installed(chosen), embedding_overrides(
                        self.model, [getattr(p, "ref_embeddings", None) for p in prompts]):
                    tokens = generate_tokens(self.model, texts, langs, prompts, speed,
                                             **self.generation_kwargs(steps, guidance_scale))
            finally:
                if seeded is not None:
                    seeded.generators = None
            ready = None
            if str(self.model.device).startswith("cuda"):
                ready = torch.cuda.Event()
                ready.record()  # the tokens are complete on the current stream at this point
        return PendingAudio(tokens, started, prompt_s, time.perf_counter() - started, ready)

    def decode(self, pending: PendingAudio, cuda_stream: torch.cuda.Stream | None = None) -> list[Synthesis]:
        """The vocoder half: audio for ``pending``'s tokens. With ``cuda_stream`` the decode runs on
        that stream after the tokens' event, so it can overlap the next sentence's diffusion."""
        # lazy: start-up (torch)
        import torch

        t0 = time.perf_counter()
        with torch.inference_mode():
            if cuda_stream is not None and pending.ready is not None:
                cuda_stream.wait_event(pending.ready)
                for tensor in token_tensors(pending.tokens):
                    tensor.record_stream(cuda_stream)  # the allocator must not reuse them early
                with torch.cuda.stream(cuda_stream):
                    audios = decode_tokens(self.model, pending.tokens)
            else:
                audios = decode_tokens(self.model, pending.tokens)
        decode_s = time.perf_counter() - t0
        wall = pending.tokens_s + decode_s
        total_audio = sum(len(a) for a in audios) / self.sample_rate
        results = []
        for audio in audios:
            pcm = np.ascontiguousarray(audio, dtype=np.float32)
            audio_s = len(pcm) / self.sample_rate
            share = (audio_s / total_audio) if total_audio else 1.0
            results.append(Synthesis(pcm=pcm, sample_rate=self.sample_rate, timings=Timings(
                wall_s=wall * share, audio_s=audio_s, rtf=wall * share / audio_s if audio_s else float("inf"),
                prompt_s=pending.prompt_s, decode_s=decode_s * share)))
        return results

    def estimate_target_frames(self, text: str, prompt: VoicePrompt, speed: float = 1.0) -> int:
        """OmniVoice's duration estimate for ``text`` in ``prompt``'s voice, in 25 Hz frames."""
        return int(self.model._estimate_target_tokens(
            text, prompt.ref_text, prompt.ref_audio_tokens.size(-1), speed=speed))
