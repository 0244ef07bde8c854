"""A project's chosen takes as a take of the pipeline: every sentence a cache hit, so the file (or
the player) gets them through the same stitcher, finishing and sinks as a rendered take."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from omnistudio.errors import UserError
from omnistudio.take.link import LinkInfo, Rendered
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import PlannedSentence, Take, TakeCache, cache_key
from omnistudio.take.project import Project


class StoredTakes:
    """The link of a take made only of stored takes: it renders nothing (the cache holds every sentence)."""

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self.info = LinkInfo("stored takes", "-", "-", "-")

    def prepare(self, *_a: Any, **_k: Any) -> None:
        raise UserError("stored takes need no voices (internal)")

    def render(self, *_a: Any, **_k: Any) -> Any:
        raise UserError("stored takes render nothing (internal)")


def chosen_take(project: Project, planned: list[PlannedSentence], options: TakeOptions, link: Any = None) -> Take:
    """The pipeline take of ``project``'s chosen takes (``planned``: the script's planned sentences;
    each keeps its plan but takes the seed its chosen take was rendered with)."""
    missing = project.missing()
    if missing:
        raise UserError(f"sentence {missing[0] + 1} has no chosen take ({len(missing)} of {len(project)}): "
                        "render it first")
    link = link or StoredTakes(project.sample_rate)
    cache = TakeCache(max_bytes=1 << 62)  # holds the whole project: nothing is rendered
    sentences = []
    for (index, _line, take), sentence in zip(project.chosen(), planned, strict=True):
        sentence = replace(sentence, seed=take.seed)
        cache.put(cache_key(link, sentence, options), Rendered(index, project.audio(take)))
        sentences.append(sentence)
    return Take(link, sentences, options, cache, base_seed=options.seed)


def write_chosen(project: Project, planned: list[PlannedSentence], options: TakeOptions, output: Path) -> Any:
    """Write the chosen takes to ``output`` through the pipeline's file sink; the FinishedRender."""
    from omnistudio.take.sinks import FileSink

    sink = FileSink(output)
    chosen_take(project, planned, options).run([sink])
    return sink.finished
