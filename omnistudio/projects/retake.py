"""Takes of a project's sentences: render, check with speech recognition, render again with new
seeds while the check fails, and choose the take with the lowest word error rate.

Rendering goes through a *synthesiser*: any callable ``(line, seed) -> float32 PCM`` at the
project's rate. ``render`` and the studio pass :func:`pipeline_synth` (the take pipeline over their
link); tests pass recordings of real speech.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from omnistudio.errors import UserError
from omnistudio.projects.line import Line, StoredTake
from omnistudio.projects.project import Project
from omnistudio.projects.speech_check import TakeChecker
from omnistudio.take.link import EngineLink
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import PlannedSentence, Take, TakeCache, TakeResult

Synthesise = Callable[[Line, int], np.ndarray]
Progress = Callable[[str], None]
SEED_LIMIT = 2**31


def new_seed(seed: int, used: Sequence[int] | set[int], attempt: int = 1) -> int:
    """A seed derived from ``seed`` that no take in ``used`` has (deterministic: the n-th retake of a
    sentence gets the same seed every time)."""
    taken = set(used) | {seed}
    while True:
        digest = hashlib.blake2b(f"retake\x1f{seed}\x1f{attempt}".encode(), digest_size=8).digest()
        candidate = int.from_bytes(digest, "big") % SEED_LIMIT
        if candidate not in taken:
            return candidate
        attempt += 1


class PipelineSynth:
    """The synthesiser of ``render`` and the studio: a line's planned sentence (``planned``, by
    sentence id = line index) with the try's seed, rendered as a pipeline take of that one sentence
    through ``link`` (``cache``: where the take keeps what it renders). ``run(take)`` runs it (the
    studio plays it on the way); default ``take.run()``. ``engine`` and ``speed``: what rendered the
    last call, for the take stored from it. ``link`` None: nothing may render (every sentence has its
    take; calling it then is an error)."""

    def __init__(self, project: Project, planned: Sequence[PlannedSentence], link: EngineLink | None,
                 options: TakeOptions, cache: TakeCache | None = None,
                 run: Callable[[Take], TakeResult] | None = None) -> None:
        self.project, self.link, self.options, self.cache, self.run = project, link, options, cache, run
        self.by_id = {p.id: p for p in planned}
        self.speed = options.speed
        self.engine: dict[str, object] | None = None

    def __call__(self, line: Line, seed: int) -> np.ndarray:
        index = next(i for i, ln in enumerate(self.project.lines) if ln is line)
        if self.link is None:
            raise UserError("nothing can render here: no engine was opened")
        take = Take(self.link, [replace(self.by_id[index], seed=seed)], self.options, self.cache)
        result = take.run() if self.run is None else self.run(take)
        self.engine = result.engine
        pcm: np.ndarray = result.chunks[0][0]
        return pcm


def pipeline_synth(project: Project, planned: Sequence[PlannedSentence], link: EngineLink | None, options: TakeOptions,
                   cache: TakeCache | None = None, run: Callable[[Take], TakeResult] | None = None) -> PipelineSynth:
    """The synthesiser of ``render`` and the studio (:class:`PipelineSynth`)."""
    return PipelineSynth(project, planned, link, options, cache, run)


def _store(project: Project, index: int, synth: Synthesise, seed: int, num_step: int, guidance: float,
           choose: bool) -> StoredTake:
    """A take of sentence ``index`` from ``synth`` with ``seed``, stored with what rendered it (when it says)."""
    pcm = synth(project.lines[index], seed)
    record = synth if isinstance(synth, PipelineSynth) else None
    return project.add_take(index, pcm, seed=seed, num_step=num_step, guidance=guidance, choose=choose,
                            speed=record.speed if record else 1.0, engine=record.engine if record else None,
                            lexicon=record.options.lexicon if record else None)


def _error(take: StoredTake) -> float:
    """Sort key: a failed or checked take by its WER; an unchecked take counts as 0 (it cannot be judged)."""
    return take.asr.wer if take.asr is not None and take.asr.wer is not None else 0.0


def check_take(project: Project, index: int, take: StoredTake, checker: TakeChecker) -> StoredTake:
    """Run the check on a stored take and record the result with it."""
    line = project.lines[index]
    result = checker.check(project.audio(take), project.sample_rate, line.text, line.lang)
    return project.set_asr(index, take.id, result)


def render_line(project: Project, index: int, synth: Synthesise, *, seed: int, num_step: int, guidance: float,
                checker: TakeChecker | None = None, retakes: int = 0, progress: Progress | None = None,
                tries: list[StoredTake] | None = None) -> list[StoredTake]:
    """Render sentence ``index`` with ``seed``; with a checker, while the take fails, render it again
    with a new seed, up to ``retakes`` more times. The take with the lowest WER is chosen (the
    earliest among equals). ``tries``: takes already made that count as tries. Returns every try."""
    line = project.lines[index]
    tries = list(tries or [])
    current = seed
    while len(tries) < 1 + (max(0, retakes) if checker is not None else 0):
        attempt = len(tries)
        if tries and tries[-1].asr is not None and tries[-1].asr.passed is not False:
            break
        if attempt:
            current = new_seed(seed, [t.seed for t in line.takes], attempt)
            if progress is not None:
                progress(f"sentence {index + 1}: retake {attempt}/{retakes} (seed {current})")
        take = _store(project, index, synth, current, num_step, guidance, choose=False)
        if checker is not None:
            take = check_take(project, index, take, checker)
        tries.append(take)
    best = min(tries, key=_error)
    line.choose(best.id)
    return tries


def regenerate(project: Project, index: int, synth: Synthesise, *, base_seed: int, num_step: int, guidance: float,
               checker: TakeChecker | None = None) -> StoredTake:
    """One more take of sentence ``index`` with a seed none of its takes has; it becomes the chosen
    take (undo goes back). What F9 in the studio does."""
    line = project.lines[index]
    seed = new_seed(base_seed, [t.seed for t in line.takes], len(line.takes) + 1)
    take = _store(project, index, synth, seed, num_step, guidance, choose=True)
    return check_take(project, index, take, checker) if checker is not None else take


def take_sentences(project: Project, synth: Synthesise, seed_for: Callable[[int, Line], int], *, num_step: int,
                   guidance: float, checker: TakeChecker | None = None, retakes: int = 0,
                   progress: Progress | None = None, done: Callable[[int], None] | None = None) -> list[int]:
    """Give every sentence a chosen take: a fresh chosen take is kept (with a checker, checked if it
    was not, and retaken if it fails); the others are rendered. Returns the sentences rendered."""
    rendered = []
    for index, line in enumerate(project.lines):
        chosen = line.chosen_take
        if chosen is not None and checker is not None and not checker.judged(chosen.asr):
            chosen = check_take(project, index, chosen, checker)
        if chosen is None or (checker is not None and chosen.asr is not None and chosen.asr.passed is False
                              and retakes > 0):
            render_line(project, index, synth, seed=seed_for(index, line), num_step=num_step, guidance=guidance,
                        checker=checker, retakes=retakes, progress=progress, tries=[chosen] if chosen else None)
            rendered.append(index)
        if done is not None:
            done(index)
    return rendered


def takes_report(project: Project) -> list[dict[str, object]]:
    """Per sentence: its text, chosen take, and every fresh take with what rendered it (seed, options, engine)
    and its check (the sidecar's ``takes``)."""
    report = []
    for index, line in enumerate(project.lines):
        chosen = line.chosen_take
        report.append({
            "sentence": index, "text": line.text, "voice": line.voice, "lang": line.lang,
            "chosen": chosen.id if chosen else None, "failed": line.failed,
            "takes": [{"id": t.id, "seed": t.seed, "num_step": t.num_step, "guidance": t.guidance, "speed": t.speed,
                       "engine": t.engine, "file": t.file, "duration_s": t.duration_s,
                       "wer": t.asr.wer if t.asr else None, "passed": t.asr.passed if t.asr else None,
                       "heard": t.asr.heard if t.asr else None} for t in line.fresh_takes]})
    return report
