"""A project's chosen takes as a take of the pipeline: every sentence a cache hit, so the file (or
the player) gets them through the same stitcher, finishing and sinks as a rendered take."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnistudio.errors import UserError
from omnistudio.projects.line import StoredTake
from omnistudio.projects.project import Project
from omnistudio.take.captions import words_in_sentence
from omnistudio.take.delivery import Slate
from omnistudio.take.link import EngineLink, LinkInfo, Rendered, VoiceList, WholeGroupLink
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import PlannedSentence, Take, TakeCache, cache_key
from omnistudio.take.result import RenderedChunk
from omnistudio.take.sinks import FileSink

if TYPE_CHECKING:
    from omnistudio.audio.finishing import FinishedRender
    from omnistudio.captions.formats import CaptionOptions
    from omnistudio.captions.timing import SentenceTiming
    from omnistudio.voices.align import Hearer


class StoredTakesLink(WholeGroupLink):
    """The link of a take made only of stored takes: it renders nothing (the cache holds every sentence)."""

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self.info = LinkInfo("stored takes", "-", "-", "-")

    def prepare(self, *_a: Any, **_k: Any) -> None:
        raise UserError("stored takes need no voices (internal)")

    def render(self, *_a: Any, **_k: Any) -> Any:
        raise UserError("stored takes render nothing (internal)")

    def voices(self) -> VoiceList:
        return VoiceList((), ())  # it renders nothing, so it offers no voice

    def close(self) -> None:
        """Nothing is held."""


def use_chosen(project: Project, sentences: list[PlannedSentence], options: TakeOptions, link: EngineLink,
               cache: TakeCache) -> list[PlannedSentence]:
    """``sentences`` (planned, ids = project line indices) where each one whose line has a fresh
    chosen take in the same voice takes that take's seed, with its audio in ``cache``: a take of
    them plays or writes the chosen takes and renders only the others."""
    out = []
    for sentence in sentences:
        line = project.lines[sentence.id]
        line.spoken = sentence.said  # fresh only for what is said now (the lexicon may have changed)
        take = line.chosen_take
        if take is not None and (line.text, take.voice, take.lang) == (sentence.text, sentence.voice.key(),
                                                                       sentence.lang):
            sentence = use_take(project, sentence, take, options, link, cache)
        out.append(sentence)
    return out


def use_take(project: Project, sentence: PlannedSentence, take: StoredTake, options: TakeOptions, link: EngineLink,
             cache: TakeCache) -> PlannedSentence:
    """``sentence`` as the stored ``take`` plays it: the take's seed, and its audio in ``cache``, so
    a pipeline take of it renders nothing (what the studio's step and A/B play)."""
    sentence = replace(sentence, seed=take.seed)
    cache.put(cache_key(link, sentence, options), Rendered(sentence.id, project.audio(take)))
    return sentence


def keep_rendered(project: Project, sentences: list[PlannedSentence], chunks: Iterable[RenderedChunk],
                  options: TakeOptions, engine: dict[str, object] | None = None) -> list[int]:
    """Store what a take rendered as takes of its sentences (chosen where a sentence had none);
    sentences that played a chosen take add nothing. ``engine``: what rendered them (the take result's).
    Returns the indices that got a take."""
    seeds = {s.id: s.seed for s in sentences}
    added = []
    said = {s.id: s.said for s in sentences}
    for pcm, _pause, index, _breath in chunks:
        assert index is not None  # a take's chunks carry their sentences' ids
        line = project.lines[index]
        line.spoken = said[index]  # the take records the text it spoke
        take = line.chosen_take
        if take is not None and take.seed == seeds[index]:
            continue  # the chosen take itself
        project.add_take(index, pcm, seed=seeds[index], num_step=options.num_step, guidance=options.guidance_scale,
                         choose=take is None, speed=options.speed, engine=engine, lexicon=options.lexicon)
        added.append(index)
    return added


def chosen_take(project: Project, planned: list[PlannedSentence], options: TakeOptions,
                link: EngineLink | None = None) -> Take:
    """The pipeline take of ``project``'s chosen takes (``planned``: the script's planned sentences)."""
    missing = project.missing()
    if missing:
        raise UserError(f"sentence {missing[0] + 1} has no chosen take ({len(missing)} of {len(project)}): "
                        "render it first")
    link = link or StoredTakesLink(project.sample_rate)
    cache = TakeCache(max_bytes=1 << 62)  # holds the whole project: nothing is rendered
    return Take(link, use_chosen(project, planned, options, link, cache), options, cache, base_seed=options.seed)


def project_slate(project: Project | None) -> Slate:
    """What a file of ``project``'s takes is called (its project and title: the project's name) and what
    rendered them (the engine its chosen takes recorded, when they all name one; else none is named)."""
    if project is None:
        return Slate()
    name = project.path.name.removesuffix(project.path.suffix)
    engines = [line.chosen_take.engine for line in project.lines if line.chosen_take is not None]
    common = engines[0] if engines and all(e == engines[0] for e in engines) else None
    return Slate(project=name, title=name, engine=dict(common or {}))


def write_chosen(project: Project, planned: list[PlannedSentence], options: TakeOptions,
                 output: Path, captions: CaptionOptions | None = None,
                 hearer: Hearer | None = None) -> tuple[FinishedRender, list[SentenceTiming]]:
    """Write the chosen takes to ``output`` through the pipeline's file sink (with ``captions``, the
    caption files with it; ``hearer`` measures the words); the FinishedRender and the timed sentences
    (their words: :func:`keep_words`)."""

    sink = FileSink(output, captions=captions, hearer=hearer, slate=project_slate(project))
    chosen_take(project, planned, options).run([sink])
    if sink.finished is None:
        raise UserError(f"the render of {output} ended without a file")
    return sink.finished, sink.sentences


def keep_words(project: Project, sentences: Sequence[SentenceTiming]) -> int:
    """The words a render of the chosen takes measured (its timed sentences, whose ids are the sentences'
    indices) kept in those takes, in seconds from each take's start, where none of a sentence's words is
    estimated; returns how many takes got them."""

    kept = 0
    for sentence in sentences:
        words = words_in_sentence(sentence)
        if words is None or not 0 <= sentence.index < len(project.lines):
            continue
        line = project.lines[sentence.index]
        take = line.chosen_take
        if take is None:
            continue
        line.takes[line.takes.index(take)] = replace(take, words=tuple(w.as_dict() for w in words))
        kept += 1
    return kept
