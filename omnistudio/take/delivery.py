"""What a take's delivered file says about itself (:class:`~omnistudio.audio.bwf.Broadcast`), from the
take's sentences, where they landed, its options and what rendered it.

- a marker per sentence at its start, labelled with its first words; a region per story (the script's
  ``# Weather`` or ``[story Weather]``) from its first sentence's start to its last one's end;
- chapters at story starts, else at paragraph (script line) starts, titled by the story or the
  paragraph's first words;
- iXML's project (``Slate.project``: a project's name, else the title), scene (the story when the
  file holds one, else the title), take (``Slate.take``, else the base seed) and the reproducibility
  fields (voice, seed, steps, guidance, model, device, dtype, sampler, threads...).

The title is the client's (``render``: the script's name), else the first story's, else the first words.
Nothing here comes from the output's own name or the clock (beyond bext's date): the same take written
to two paths gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from omnistudio.audio.bwf import Broadcast, Marker, label
from omnistudio.audio.dsp import SentenceSpan
from omnistudio.take.rows import SentenceRow, matched

ENGINE_FIELDS = ("model", "device", "dtype", "sampler", "threads", "quantize", "quantisation")
TAKE_FIELDS = ("voice", "lang", "seed", "num_step", "guidance", "speed", "batch")


@dataclass(frozen=True)
class Slate:
    """What a clapperboard says, the names a client knows and the take does not: the project, the take's id
    and the file's title; and, for a file of stored takes, what rendered them (``engine``: their record;
    ``{}``: name none)."""

    project: str = ""
    take: str = ""
    title: str = ""
    engine: Mapping[str, object] | None = None  # None: the link's record


def broadcast_info(rows: Sequence[SentenceRow], spans: Sequence[SentenceSpan],
                   take: Mapping[str, object] | None = None, engine: Mapping[str, object] | None = None,
                   slate: Slate = Slate()) -> Broadcast:
    """The Broadcast of a take's file (see the module's docstring); ``rows``: the take's sentence rows,
    matched to ``spans`` by sentence id."""
    placed = list(zip(spans, matched(rows, [span.sentence_id for span in spans])))
    markers = [Marker(span.start_s, label(row.text if row is not None and row.text else f"Sentence {k + 1}"))
               for k, (span, row) in enumerate(placed)]
    stories = _runs(placed, lambda row: row.story)
    regions = [Marker(first.start_s, str(name), last.end_s) for name, first, last, _first_text in stories if name]
    named = [run for run in stories if run[0]]
    chapters = ([Marker(first.start_s, str(name) if name else label(text))
                 for name, first, _last, text in stories] if named
                else [Marker(first.start_s, label(text)) for _line, first, _l, text in _runs(placed, lambda row: row.line)])
    engine = slate.engine if slate.engine is not None else engine
    take, engine = dict(take or {}), dict(engine or {})
    title = slate.title or (str(named[0][0]) if named else label(_text(placed[0][1])) if placed else "OmniStudio")
    voices = list(dict.fromkeys(str((row.speaker if row is not None else None) or take.get("voice") or "")
                                for _s, row in placed))
    voices = [v for v in voices if v]
    user = [(key, str(take[key])) for key in TAKE_FIELDS if take.get(key) is not None]
    user += [("voices", ", ".join(voices))] if voices else []  # every voice heard, script tags' included
    user += [(key, str(engine[key])) for key in ENGINE_FIELDS if engine.get(key) is not None]
    scene = str(named[0][0]) if len(named) == 1 else title
    description = f"{title}: {len(spans)} sentences" + (f", read by {', '.join(voices)}" if voices else "")
    return Broadcast(description=description, reference=slate.take or f"seed {take.get('seed', '')}".strip(),
                     title=title, artist=", ".join(voices), project=slate.project or title, scene=scene,
                     note=f"{len(spans)} sentences, {len(regions)} stories", user=tuple(user),
                     markers=tuple(markers + regions), chapters=tuple(chapters))


Placed = Sequence[tuple[SentenceSpan, SentenceRow | None]]


Run = tuple[object, SentenceSpan, SentenceSpan, str]


def _runs(placed: Placed, key: Callable[[SentenceRow], object]) -> list[Run]:
    """Runs of consecutive sentences sharing ``key`` (a story, a line): its value, first and last span, and
    the first sentence's text."""
    runs: list[Run] = []
    for span, row in placed:
        value = key(row) if row is not None else None
        if runs and runs[-1][0] == value:
            runs[-1] = (value, runs[-1][1], span, runs[-1][3])
        else:
            runs.append((value, span, span, _text(row)))
    return runs


def _text(row: SentenceRow | None) -> str:
    return row.text if row is not None else ""
