"""A project's chosen takes as the timed sentences of the file ``render --project`` writes from them
(the same stitcher places them), for captions of a project without rendering anything."""

from __future__ import annotations

from omnistudio.audio.finishing import sentence_pauses, sentence_spans
from omnistudio.captions.timing import SentenceTiming
from omnistudio.errors import UserError
from omnistudio.projects.project import Project
from omnistudio.script import parse_script
from omnistudio.take.captions import timed_sentences
from omnistudio.take.options import TakeOptions, spoken_text
from omnistudio.take.rows import SentenceText
from omnistudio.voices.align import Hearer


def chosen_sentences(project: Project, options: TakeOptions, hearer: Hearer | None = None) -> list[SentenceTiming]:
    """Each sentence of ``project`` where its chosen take lands in the rendered file, with its words.

    ``options``: the text front-end's settings the takes were rendered with (``normalize`` and the
    lexicon): a take is fresh only for the text as spoken now. Every sentence needs a fresh chosen
    take (else one clear error: render it first). ``hearer`` measures the words in the takes where it
    can hear them, as ``render --project --captions`` does."""

    script = parse_script(project.script, project.lang)
    spoken = [spoken_text(s.text, s.lang, options) for s in script.sentences]
    project.speak(spoken)
    missing = project.missing()
    if missing:
        raise UserError(f"sentence {missing[0] + 1} of {project.path} has no fresh chosen take "
                        f"({len(missing)} of {len(project)}): render it first (render --project)")
    chunks = []
    for index, (line, (pause, breath)) in enumerate(zip(project.lines, sentence_pauses(script.sentences))):
        take = line.chosen_take
        assert take is not None  # checked above
        chunks.append((project.audio(take), pause, index, breath))
    rows = [SentenceText(i, line.text, spoken[i], line.lang) for i, line in enumerate(project.lines)]
    spans = sentence_spans(chunks, project.sample_rate)
    return timed_sentences(spans, rows, lambda k: chunks[k][0], project.sample_rate, hearer, options.lexicon)
