"""The one narrow interface a take renders through: :class:`EngineLink`, and :class:`LocalEngine`.

The take pipeline never touches a model: it hands :class:`RenderItem` groups to a link and gets
:class:`Rendered` sentences back. ``LocalEngine`` runs the Engine in this process (on the calling
thread: the pipeline's stream worker); the server adds a batching link, the remote studio a link over
the server's WebSocket. Cancel: ``render`` raises :class:`~omnistudio.errors.Cancelled` within one
diffusion step once ``cancel`` is set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from omnistudio.errors import Cancelled
from omnistudio.script import MAX_SENTENCE_CHARS, cut_long
from omnistudio.take.options import TakeOptions, sentence_seed
from omnistudio.voices.resolve import VoiceRef, resolve_voice, voice_action, voice_label

if TYPE_CHECKING:
    import torch

    from omnistudio.engine.engine import PendingAudio, Timings


@dataclass(frozen=True)
class RenderItem:
    """One sentence to render: its index in the take, text, voice, language and seed (already chosen)."""

    index: int
    text: str
    voice: VoiceRef
    lang: str
    seed: int


@dataclass
class Rendered:
    """One rendered sentence: float32 mono PCM at the link's rate (24 kHz), or the error that stopped it."""

    index: int
    pcm: NDArray[np.float32]
    timings: Timings | None = None  # None on error
    steps: int = 0  # diffusion steps the pass that made it ran
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class PrepareEvent:
    """Progress of the prepare phase: voice ``done``/``total`` (1-based while working on it)."""

    done: int
    total: int
    voice: str  # the voice's label (anchor, blend key, file name)
    lang: str
    action: str  # ready | load | build | blend (what is being done), then "done" once it is

    def describe(self) -> str:
        """``preparing voices 1/2: valentina (es)`` (+ what is happening when it takes time)."""
        what = {"build": " - building its prompt", "load": " - loading", "blend": " - blending"}.get(self.action, "")
        return f"preparing voices {self.done}/{self.total}: {self.voice} ({self.lang}){what}"


@dataclass(frozen=True)
class LinkInfo:
    """What renders behind a link: with the seed, text, voice and options, what a take's samples depend on."""

    model: str
    device: str
    dtype: str
    sampler: str  # fast | stock
    threads: int | None = None  # torch's thread count where it renders (float sums depend on it); None: unknown
    quantisation: str = "none"  # none | int8 (the backbone's linear layers, --quantize)
    compile: str = "off"  # the backbone: off | compiling (eager meanwhile) | switching | compiled | failed (eager)
    graphs: str = "off"  # the diffusion step's CUDA graphs: off, or "N captured in S s" (engine/cuda_graphs.py)
    path: str = ""  # how the dtype and int8 were chosen: a flag, the static rule, or this CPU's calibration


@dataclass(frozen=True)
class AnchorInfo:
    """One roster anchor and, per language, its prompt's state (the studio's picker row)."""

    id: str
    name: str
    langs: tuple[str, ...]
    state: dict[str, str] = field(default_factory=dict)  # lang -> ready (on the device) | saved | missing


@dataclass(frozen=True)
class VoiceList:
    anchors: tuple[AnchorInfo, ...]
    duos: tuple[tuple[str, str, float, tuple[str, ...]], ...]  # (a, b, ratio, langs)


PrepareProgress = Callable[[PrepareEvent], None]


def graph_status(engine: Any) -> str:
    """An engine's step graphs in a few words ("off" for an engine without them)."""
    status = getattr(engine, "graph_status", None)
    return status.describe() if status is not None else "off"


@runtime_checkable
class CancelFlag(Protocol):
    """A cancel flag: a threading.Event, or one set when any of several is (the stream's)."""

    def is_set(self) -> bool: ...


@runtime_checkable
class EngineLink(Protocol):
    """What the take pipeline needs from an engine, local or remote.

    A stream renders each group in two halves, ``render_tokens`` (diffusion) then ``decode`` (vocoder).
    A link that ``splits_decode`` does only the diffusion in the first, so the decode may run on its own
    lane (``decode_stream``) while the next group diffuses (by default when ``overlap_decode``); one that
    renders whole groups (remote, batching: :class:`WholeGroupLink`) renders in the first and hands the
    result over in the second."""

    sample_rate: int

    @property
    def info(self) -> LinkInfo: ...

    @property
    def splits_decode(self) -> bool: ...

    @property
    def overlap_decode(self) -> bool: ...

    def prepare(self, voices: Sequence[tuple[VoiceRef, str]], progress: PrepareProgress | None = None,
                cancel: CancelFlag | None = None) -> None: ...

    def render(self, items: Sequence[RenderItem], options: TakeOptions,
               cancel: CancelFlag | None = None) -> list[Rendered]: ...

    def render_tokens(self, items: Sequence[RenderItem], options: TakeOptions, cancel: CancelFlag | None = None,
                      on_step: Callable[[], None] | None = None) -> Pending: ...

    def decode(self, pending: Pending, cuda_stream: torch.cuda.Stream | None = None) -> list[Rendered]: ...

    def decode_stream(self) -> torch.cuda.Stream | None: ...

    def voices(self) -> VoiceList: ...

    def build_voice(self, ref: VoiceRef, lang: str) -> None:
        """Make ``ref``'s prompt in ``lang`` anew where the engine keeps it (what it kept of the voice is
        forgotten first): after its recording changed."""

    def forget_voice(self, anchor: str) -> None:
        """The engine forgets every prompt and blend of ``anchor`` (its recording was replaced or removed)."""

    def close(self) -> None: ...


@dataclass
class Pending:
    """A group's first half (:meth:`EngineLink.render_tokens`), waiting for :meth:`EngineLink.decode`:
    the diffusion's tokens (``audio``) or, from a link that renders whole groups, the ``rendered`` group."""

    items: list[RenderItem]
    audio: PendingAudio | None
    steps: int
    rendered: list[Rendered] | None = None


class WholeGroupLink:
    """Base of the links that render whole groups (remote, batching, tests): the two halves over
    ``render``, no decode lane. ``on_step`` runs once per diffusion step the pass ran, after it."""

    splits_decode = False
    overlap_decode = False

    def render(self, items: Sequence[RenderItem], options: TakeOptions,
               cancel: CancelFlag | None = None) -> list[Rendered]:
        raise NotImplementedError

    def render_tokens(self, items: Sequence[RenderItem], options: TakeOptions, cancel: CancelFlag | None = None,
                      on_step: Callable[[], None] | None = None) -> Pending:
        rendered = self.render(items, options, cancel)
        steps = max((r.steps for r in rendered), default=0)
        if on_step is not None:
            for _ in range(steps):
                on_step()
        return Pending(list(items), None, steps, rendered)

    def decode(self, pending: Pending, cuda_stream: torch.cuda.Stream | None = None) -> list[Rendered]:
        return list(pending.rendered or [])

    def decode_stream(self) -> torch.cuda.Stream | None:
        return None

    def prepare(self, voices: Sequence[tuple[VoiceRef, str]], progress: PrepareProgress | None = None,
                cancel: CancelFlag | None = None) -> None:
        """Nothing to prepare by default (a link that renders elsewhere prepares there)."""

    def build_voice(self, ref: VoiceRef, lang: str) -> None:
        self.prepare([(ref, lang)])

    def forget_voice(self, anchor: str) -> None:
        """Nothing kept here: the engine that renders keeps (and forgets) its own voices."""


class LocalEngine:
    """An :class:`EngineLink` over an in-process Engine.

    ``voice_for`` (tests, special clients) replaces the resolver: item -> prompt object."""

    def __init__(self, engine: Any, voice_for: Callable[[RenderItem], Any] | None = None) -> None:
        self.engine = engine
        self.sample_rate = int(engine.sample_rate)
        self.voice_for = voice_for
        self.calls = 0  # diffusion passes run (tests count them)
        self.threads: int | None = None  # torch's thread count on the thread that last rendered
        self._decode_lane = str(getattr(engine.model, "device", "cpu")).startswith("cuda")

    @property
    def info(self) -> LinkInfo:
        loaded = self.engine.loaded
        dtype = getattr(loaded, "dtype_name", None) or str(getattr(loaded, "dtype", ""))  # "bf16", as --dtype says
        return LinkInfo(str(getattr(loaded.spec, "name", "?")), str(loaded.device), dtype,
                        "fast" if self.engine.sampler is not None else "stock", self.threads or torch_threads(),
                        quantisation=str(getattr(loaded, "quantize", "none")),
                        compile=str(getattr(self.engine, "compile_state", "off")),
                        graphs=graph_status(self.engine), path=str(getattr(loaded, "dtype_reason", "")))

    @property
    def splits_decode(self) -> bool:
        """``render_tokens`` is the diffusion only: the decode may run on its own lane."""
        return True

    @property
    def overlap_decode(self) -> bool:
        """On CUDA the vocoder runs on its own stream, overlapping the next group's diffusion."""
        return self._decode_lane

    def decode_stream(self) -> torch.cuda.Stream | None:
        """A CUDA stream of the model's device for the decode lane (None off CUDA)."""
        device = getattr(self.engine, "model", None)
        if device is None or not str(device.device).startswith("cuda"):
            return None
        # lazy: start-up (torch)
        import torch

        return torch.cuda.Stream(device=device.device)

    # --------------------------------------------------------------- voices
    def prepare(self, voices: Sequence[tuple[VoiceRef, str]], progress: PrepareProgress | None = None,
                cancel: CancelFlag | None = None) -> None:
        """Resolve every voice (building missing or stale prompts), reporting each before and after."""
        todo = list(dict.fromkeys(voices))
        for number, (ref, lang) in enumerate(todo, start=1):
            if cancel is not None and cancel.is_set():
                raise Cancelled("prepare cancelled")
            label = voice_label(ref)
            action = "ready" if self.voice_for is not None else voice_action(self.engine, ref, lang)
            if progress is not None:
                progress(PrepareEvent(number, len(todo), label, lang, action))
            if self.voice_for is None:
                handle = self.engine.on_each_step(cancel.is_set) if cancel is not None else None
                try:  # a prompt built by voice design stops within one diffusion step too
                    resolve_voice(self.engine, ref, lang)
                finally:
                    if handle is not None:
                        handle.remove()
            if progress is not None:
                progress(PrepareEvent(number, len(todo), label, lang, "done"))

    def build_voice(self, ref: VoiceRef, lang: str) -> None:
        """Forget what the engine kept of the voice, then make its prompt (built or loaded) again."""
        if ref.anchor is not None:
            self.forget_voice(ref.anchor)
        resolve_voice(self.engine, ref, lang)

    def forget_voice(self, anchor: str) -> None:
        # lazy: start-up (the model stack: a client links without loading it)
        from omnistudio.voices.blend import forget_voice

        forget_voice(self.engine, anchor)

    def _prompt(self, item: RenderItem) -> Any:
        if self.voice_for is not None:
            return self.voice_for(item)
        return resolve_voice(self.engine, item.voice, item.lang)

    def voices(self) -> VoiceList:
        return local_voices(self.engine)

    # -------------------------------------------------------------- render
    def render_tokens(self, items: Sequence[RenderItem], options: TakeOptions,
                      cancel: CancelFlag | None = None, on_step: Callable[[], None] | None = None) -> Pending:
        """The diffusion half for a group (one pass, one seed per item); raises Cancelled within one
        step. ``on_step`` runs before every diffusion step that is not cancelled. A text longer than a
        sentence may be (its spoken form grew: a lexicon entry, an SSML alias, numbers; or ``say``'s whole
        text) is cut as a long sentence is, and its parts render one pass each, joined: the group is then
        rendered whole here (``Pending.rendered``)."""
        items = list(items)
        if any(len(item.text) > MAX_SENTENCE_CHARS for item in items):
            return self._render_in_parts(items, options, cancel, on_step)
        steps = [0]

        def count() -> None:
            steps[0] += 1
            if on_step is not None:
                on_step()

        should_cancel = cancel.is_set if cancel is not None else (lambda: False)
        handle = self.engine.on_each_step(should_cancel, count)
        try:
            if should_cancel():
                raise Cancelled("render cancelled")
            prompts = [self._prompt(item) for item in items]
            self.calls += 1
            self.threads = torch_threads()  # this thread's: a thread keeps the count it started with
            audio = self.engine.render_tokens([i.text for i in items], prompts, [i.lang for i in items],
                                              num_step=options.num_step, seeds=[i.seed for i in items],
                                              guidance_scale=options.guidance_scale, speed=options.speed_arg)
        finally:
            handle.remove()
        return Pending(items, audio, steps[0])

    def _render_in_parts(self, items: list[RenderItem], options: TakeOptions, cancel: CancelFlag | None,
                         on_step: Callable[[], None] | None) -> Pending:
        """Each item whole, its long text in parts (the first part keeps the item's seed, the others take
        the one seed policy's seed of their own text), the parts' audio joined by a short pause."""
        out, steps = [], 0
        for item in items:
            pieces: list[Rendered] = []
            for number, part in enumerate(cut_long(item.text)):
                seed = item.seed if number == 0 else sentence_seed(item.seed, part, f"part {number}", item.lang)
                pending = self.render_tokens([replace(item, text=part, seed=seed)], options, cancel, on_step)
                pieces.extend(self.decode(pending))
                steps += pending.steps
            out.append(joined(item.index, pieces, self.sample_rate))
        return Pending(items, None, steps, rendered=out)

    def decode(self, pending: Pending, cuda_stream: torch.cuda.Stream | None = None) -> list[Rendered]:
        """The vocoder half (on ``cuda_stream`` when given, after the tokens' event)."""
        if pending.rendered is not None:  # rendered whole (a text in parts)
            return pending.rendered
        if pending.audio is None:
            raise ValueError("nothing to decode: the group was not rendered by this link's render_tokens")
        results = self.engine.decode(pending.audio, cuda_stream)
        return [Rendered(item.index, r.pcm, r.timings, pending.steps) for item, r in zip(pending.items, results)]

    def render(self, items: Sequence[RenderItem], options: TakeOptions,
               cancel: CancelFlag | None = None) -> list[Rendered]:
        return self.decode(self.render_tokens(items, options, cancel))

    def close(self) -> None:
        """The engine belongs to whoever made it; nothing to release here."""


PART_GAP_S = 0.15  # between the parts of a text cut as a long sentence (a pause inside a line)


def joined(index: int, pieces: Sequence[Rendered], sample_rate: int) -> Rendered:
    """One item's rendered parts as one: their samples in order with a short pause between, their times summed."""
    # lazy: start-up (the model stack: a client links without loading it)
    from omnistudio.engine.engine import Timings

    gap = np.zeros(int(PART_GAP_S * sample_rate), dtype=np.float32)
    pcm = np.concatenate([x for piece in pieces for x in (gap, piece.pcm)][1:]).astype(np.float32)
    wall = sum(p.timings.wall_s for p in pieces if p.timings is not None)
    audio = len(pcm) / sample_rate
    timings = Timings(wall_s=wall, audio_s=audio, rtf=wall / audio if audio else float("inf"),
                      prompt_s=sum(p.timings.prompt_s for p in pieces if p.timings is not None),
                      decode_s=sum(p.timings.decode_s for p in pieces if p.timings is not None))
    return Rendered(index, pcm, timings, sum(p.steps for p in pieces))


def link_record(link: Any) -> dict[str, object] | None:
    """What renders behind ``link`` (its :class:`LinkInfo`) as a dict for sidecars; None when it does not say."""

    info = getattr(link, "info", None)
    if not is_dataclass(info) or isinstance(info, type):
        return None
    record = asdict(info)
    record.pop("graphs", None)  # how many step graphs were captured: telemetry, not what the samples depend on
    return record


def torch_threads() -> int:
    """torch's intra-op thread count as the calling thread sees it."""
    # lazy: start-up (torch)
    import torch

    return int(torch.get_num_threads())


def local_voices(engine: Any = None) -> VoiceList:
    """The roster with each (anchor, language) prompt's state: ready (on ``engine``'s device), saved
    (a prompt file exists), else missing (built on first use). States are advisory: on an error
    reading them every state is "missing"."""
    # lazy: start-up (the model stack: a client links without loading it)
    from omnistudio.voices import prompts
    from omnistudio.voices.roster import LANGS, load_roster

    roster = load_roster()
    try:
        loaded = set(prompts.cache_for(engine).keys()) if engine is not None else set()
        folder = prompts.prompt_dir()
        saved = {p.name for p in folder.glob("*" + prompts.SUFFIX)} if folder.is_dir() else set()
        states = {(a, lang): "ready" if (a, lang) in loaded else
                  ("saved" if prompts.prompt_path(a, lang, folder).name in saved else "missing")
                  for a, lang in roster.pairs()}
    except Exception:  # noqa: BLE001 - the state column is advisory
        states = {}
    anchors = tuple(AnchorInfo(a.id, a.name, tuple(LANGS), {lang: states.get((a.id, lang), "missing") for lang in LANGS})
                    for a in roster.anchors.values())
    return VoiceList(anchors, tuple((d.anchors[0], d.anchors[1], d.ratio, tuple(d.langs)) for d in roster.duos))
