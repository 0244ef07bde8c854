"""Many scripts rendered across a Ray cluster (``omnistudio render SCRIPT... --out-dir DIR --ray``).

One task per script on actors that each hold an engine (model, prompts, sampler loaded once). An
actor builds the take with the take pipeline (``build_take``, as ``omnistudio render`` does) through
its own :class:`LocalEngine` and sends back the take's result (the sentences' float32 PCM and pauses);
the caller finishes and writes the file and its sidecar with the same :class:`FileSink` as ``render
-o``, atomically, where the command runs (or on storage the user names with ``--out-dir``). Parsed
scripts and the reference recording travel with the task: workers need no shared filesystem.

Every actor runs torch with ``RenderSpec.threads`` threads (default: the caller's own count, so a file
equals ``render -o`` on the caller's machine bit for bit: float sums depend on the thread count, and
Ray would otherwise start an actor with OMP_NUM_THREADS=1).

Resumable: each sidecar records a ``source`` block (script sha256, voice, model, device, dtype,
threads, sampler, quantisation, seed and every take option, finishing). A script whose output exists
with a sidecar naming the same block is skipped. A failed script is reported by name; the others finish.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from omnistudio.audio.export import sidecar_path
from omnistudio.audio.finishing import FinishingOptions
from omnistudio.audio.spool import ChunkSpool
from omnistudio.engine.settings import EngineConfig
from omnistudio.errors import UserError, describe, first_line
from omnistudio.script import read_script
from omnistudio.take.captions import caption_paths, caption_record
from omnistudio.take.delivery import Slate
from omnistudio.take.link import LocalEngine
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import build_take
from omnistudio.take.sinks import FileSink

if TYPE_CHECKING:
    from ray import ObjectRef
    from rich.console import Console

    from omnistudio.captions.formats import CaptionOptions
    from omnistudio.script import Script
    from omnistudio.take.result import TakeResult
    from omnistudio.voices.align import Hearer


@dataclass(frozen=True)
class RenderSpec:
    """Everything that shapes the audio of every script in a batch (plain values: it travels to the actors)."""

    engine: EngineConfig  # model, device, dtype, sampler, --quantize; ``threads``: each actor's torch threads
    options: TakeOptions  # the render command's take options, default voice included
    ref_bytes: bytes | None = field(default=None, repr=False)  # the default voice's recording, if it is one

    @property
    def threads(self) -> int:
        """Torch threads of each actor (the caller passes its own count unless told otherwise)."""
        return max(1, self.engine.threads or 1)

    def voice_key(self) -> str:
        return self.options.voice.key() if self.options.voice is not None else "tagged"

    def source(self, script_sha256: str, spoken_sha256: str = "") -> dict[str, object]:
        """The sidecar's ``source`` block: what a later run compares to decide a script is done. Every
        take option is in it (a new option too: the options' fields are listed, not picked), so a
        changed seed, voice, model, device, dtype, thread count or option renders again. The lexicon
        is in it as what it changes: the digest of the script's spoken sentences (an entry for a word
        the script does not hold leaves the script done)."""
        options = {k: v for k, v in asdict(self.options).items() if k not in ("voice", "finishing", "lexicon")}
        finishing = {k: v for k, v in asdict(self.options.finishing).items()
                     if k != "shm_name" and not (k == "profile" and v is None)}  # a batch from before profiles
        engine = self.engine
        return {"script_sha256": script_sha256, "spoken_sha256": spoken_sha256, "voice": self.voice_key(),
                "model": engine.model, "device": engine.device, "dtype": engine.dtype, "threads": self.threads,
                "sampler": engine.sampler, "quantisation": engine.quantize, **options, "finishing": finishing}

    def worker_options(self, folder: Path) -> TakeOptions:
        """The options on a worker: a recording voice points at a copy written into ``folder``
        (its digest, hence its key and seeds, unchanged)."""
        voice = self.options.voice
        if voice is None or voice.recording is None or self.ref_bytes is None:
            return self.options
        copy = folder / Path(voice.recording).name
        copy.write_bytes(self.ref_bytes)
        return replace(self.options, voice=replace(voice, recording=copy))


@dataclass(frozen=True)
class ScriptJob:
    script: Path
    text: str
    output: Path
    parsed: Script | None = None  # the parsed script, checked before anything starts
    spoken_sha256: str = ""  # what the model is asked to say, every sentence (omnistudio.take.pipeline.plan)

    @property
    def name(self) -> str:
        return str(self.script)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass
class ScriptAudio:
    """What an actor sends back for one script: the take's result and finishing, or why it failed."""

    result: TakeResult | None = None  # detached: its sentences as arrays, no spools
    finishing: FinishingOptions | None = None  # the take's finishing (its seed is the take's base seed)
    error: str | None = None


@dataclass
class BatchReport:
    rendered: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    audio_s: float = 0.0
    wall_s: float = 0.0


def plan_jobs(scripts: list[Path], out_dir: Path, suffix: str = ".wav") -> list[ScriptJob]:
    """Read every script (one line for a missing, empty or over-long one) and name its output."""

    jobs: list[ScriptJob] = []
    seen: dict[Path, Path] = {}
    for script in scripts:
        output = out_dir / f"{script.stem}{suffix}"
        if output in seen:
            raise UserError(f"{script} and {seen[output]} would both write {output}: rename one")
        seen[output] = script
        jobs.append(ScriptJob(script, read_script(script), output))
    return jobs


def is_done(job: ScriptJob, spec: RenderSpec, captions: CaptionOptions | None = None) -> bool:
    """The output exists and its sidecar names this script's text and the same settings; with
    ``captions``, the caption files exist too, made with the same formats and limits."""

    side = sidecar_path(job.output)
    if not job.output.is_file() or not side.is_file():
        return False
    try:
        recorded = json.loads(side.read_text(encoding="utf-8"))
        source, made = recorded.get("source"), recorded.get("captions")
    except (OSError, ValueError, AttributeError):
        return False
    if source != json.loads(json.dumps(spec.source(job.sha256, job.spoken_sha256))):
        return False
    if captions is None:
        return True
    paths = caption_paths(job.output, captions.formats)
    return made == json.loads(json.dumps(caption_record(captions, paths))) and all(p.is_file() for p in paths.values())


class Renderer:
    """A Ray actor's body: one engine, many scripts (``ray.remote`` wraps it in :func:`render_batch`)."""

    def __init__(self, spec: RenderSpec) -> None:
        # lazy: start-up (torch); looked up when called (tests replace it)
        import torch

        # lazy: looked up when called (tests replace it)
        from omnistudio.voices.session import open_engine

        torch.set_num_threads(max(1, spec.threads))  # before anything runs: Ray set OMP_NUM_THREADS to its CPUs
        self._folder = tempfile.TemporaryDirectory(prefix="omnistudio-ref-")
        self.options = spec.worker_options(Path(self._folder.name))
        self.link = LocalEngine(open_engine(spec.engine))

    def render(self, script: Script, name: str) -> ScriptAudio:
        """``script`` through the take pipeline (the function every client builds takes with), no sinks."""

        try:
            take = build_take(self.link, script, self.options)
            result = take.run([])
            sent = result.detached()  # its spools are this actor's files: the sentences travel back as arrays
            chunks, stitched = result.chunks, result.stitched
            assert isinstance(chunks, ChunkSpool) and stitched is not None  # a take that ran holds its spools
            chunks.close()
            stitched.close()
            return ScriptAudio(sent, take.finishing)
        except UserError as exc:
            return ScriptAudio(error=str(exc))
        except Exception as exc:  # a bug in one script must not take the batch down
            return ScriptAudio(error=describe(exc))


def split_done(jobs: list[ScriptJob], spec: RenderSpec,
               captions: CaptionOptions | None = None) -> tuple[list[ScriptJob], BatchReport]:
    """The jobs still to render, and a report that already lists the ones skipped as done."""
    report = BatchReport()
    todo = []
    for job in jobs:
        (report.skipped.append(job.name) if is_done(job, spec, captions) else todo.append(job))
    return todo, report


def note_threads(result: TakeResult, local_threads: int) -> None:
    """Say in the take's engine record when it rendered with another thread count than ``render`` here."""
    engine = result.engine
    if engine is not None and engine.get("threads") not in (None, local_threads):
        engine["note"] = (f"rendered with {engine['threads']} torch threads; render on the machine that wrote this "
                          f"file uses {local_threads}: float sums differ, so the samples may too")


def render_batch(ray: ModuleType, spec: RenderSpec, jobs: list[ScriptJob], workers: int, cpus: float, gpus: float,
                 console: Console | None = None, report: BatchReport | None = None,
                 renderer: type[Renderer] | None = None, local_threads: int | None = None,
                 captions: CaptionOptions | None = None, hearer: Hearer | None = None) -> BatchReport:
    """Render ``jobs`` on up to ``workers`` actors (``renderer`` instances); write each output as it arrives.
    ``local_threads``: torch's thread count here (default ``spec.threads``): a file rendered with another
    count says so in its sidecar. ``captions``/``hearer``: caption files beside each output, its words
    measured by ``hearer`` here (``render -o OUT --captions``' sink)."""
    # lazy: start-up (rich)
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from omnistudio.console import progress_bar

    report = report or BatchReport()
    local_threads = spec.threads if local_threads is None else local_threads
    t0 = time.perf_counter()
    todo = deque(jobs)
    if not todo:
        return report
    actor_cls = ray.remote(num_cpus=cpus, num_gpus=gpus, max_restarts=0)(renderer or Renderer)
    idle = [actor_cls.remote(spec) for _ in range(min(workers, len(todo)))]
    # the actors' handles stay untyped: ray's ActorHandle types every actor method as Never
    pending: dict[ObjectRef[ScriptAudio], tuple[ScriptJob, Any]] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[audio]:.1f} s of audio"), TimeElapsedColumn())
    with progress_bar(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"rendering on {len(idle)} workers", total=len(todo), audio=0.0)
        while todo or pending:
            while todo and idle:
                actor, job = idle.pop(), todo.popleft()
                pending[actor.render.remote(job.parsed, job.name)] = (job, actor)
            done, _ = ray.wait(list(pending), num_returns=1)
            job, actor = pending.pop(done[0])
            try:
                audio: ScriptAudio = ray.get(done[0])
            except ray.exceptions.RayActorError as exc:  # the worker died (lost node, OOM, bad model)
                report.failed[job.name] = f"worker lost: {first_line(exc)}"
                idle.append(actor_cls.remote(spec))
            except ray.exceptions.RayTaskError as exc:  # raised past the renderer's own error handling
                report.failed[job.name] = describe(getattr(exc, "cause", None) or exc)
                idle.append(actor)
            else:
                idle.append(actor)
                if audio.error is not None:
                    report.failed[job.name] = audio.error
                else:
                    result = audio.result
                    assert result is not None  # a script that did not fail sends its result
                    note_threads(result, local_threads)
                    sink = FileSink(job.output, source=spec.source(job.sha256, job.spoken_sha256),  # as `render -o`
                                    captions=captions, hearer=hearer, slate=Slate(title=job.script.stem))
                    # the result names its engine; the captions' spoken forms are the front-end's own
                    assert audio.finishing is not None  # sent with the result
                    sink.write(result, audio.finishing)
                    report.rendered.append(job.name)
                    report.audio_s += result.audio_s
            bar.update(task, advance=1, audio=report.audio_s)
    for actor in idle:
        ray.kill(actor)
    report.wall_s = time.perf_counter() - t0
    return report

