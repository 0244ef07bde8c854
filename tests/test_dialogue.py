"""Dialogue scripts: blend tags, batched rendering equal to one line at a time, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from omnistudio.cli import main
from omnistudio.engine.engine import Engine
from omnistudio.engine.sampler import FastSampler
from omnistudio.errors import UserError
from omnistudio.script import blend_parts, parse_script, parse_tag
from omnistudio.take.stream import open_stream

DIALOGUE = ("[ruby] Good evening. Here are tonight's headlines.\n"
            "[storm] Markets fell sharply after the announcement.\n"
            "[ruby+storm@0.7] Together, we bring you the news.\n"
            "[ruby] Back to you in the studio.\n")
ANCHORS = {"ruby", "storm", "valentina", "camila"}


def test_blend_tags_parse() -> None:
    tag = parse_tag("Ruby+Storm@0.7", 1)
    assert tag.speaker == "ruby+storm@0.70" and tag.lang is None
    assert blend_parts(tag.speaker) == ("ruby", "storm", 0.7)
    assert parse_tag("ruby+storm:es", 1).speaker == "ruby+storm@0.50"  # alpha defaults to 0.5
    assert blend_parts("ruby") is None
    script = parse_script(DIALOGUE, "en", speakers=ANCHORS)
    assert [s.speaker for s in script.sentences] == ["ruby", "ruby", "storm", "ruby+storm@0.70", "ruby"]


@pytest.mark.parametrize("line, needle", [
    ("[ruby+storm@1.5] Hi.", "outside"),
    ("[ruby+storm@abc] Hi.", "alpha"),
    ("[ruby+ruby@0.5] Hi.", "itself"),
    ("[ruby+nobody@0.5] Hi.", "unknown speaker 'nobody'"),
    ("[nobody] Hi.", "unknown speaker"),
])
def test_bad_blend_tags(line: str, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        parse_script(line, "en", speakers=ANCHORS)


@pytest.fixture(scope="module")
def fast_engine(tiny_engine):  # noqa: ANN001, ANN201
    return Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))


def _stream_pcm(engine: Engine, batch: int) -> list[np.ndarray]:
    from omnistudio.voices.blend import anchor_blend
    from omnistudio.voices.prompts import anchor_prompt

    script = parse_script(DIALOGUE, "en", speakers=ANCHORS)

    def voice(sentence):  # noqa: ANN001, ANN202
        parts = blend_parts(sentence.speaker)
        if parts:
            return anchor_blend(engine, parts[0], parts[1], sentence.lang, parts[2])
        return anchor_prompt(engine, sentence.speaker, sentence.lang)

    with open_stream(engine, script, resolve=voice, num_step=6, seed=9, batch=batch) as stream:
        chunks = list(stream)
    assert [c.sentence.id for c in chunks] == list(range(len(script)))  # streamed in script order
    assert all(c.ok for c in chunks)
    return [c.pcm for c in chunks]


def test_batched_stream_equals_one_line_at_a_time(fast_engine) -> None:  # noqa: ANN001
    one = _stream_pcm(fast_engine, 1)
    two = _stream_pcm(fast_engine, 2)
    three = _stream_pcm(fast_engine, 3)
    for a, b, c in zip(one, two, three):
        assert np.array_equal(a, b) and np.array_equal(a, c)


def test_render_dialogue_with_blends_and_batches(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import soundfile as sf

    script = tmp_path / "dialogue.txt"
    script.write_text(DIALOGUE, encoding="utf-8")
    out = tmp_path / "dialogue.wav"
    assert main(["render", str(script), "-o", str(out), "--model", "tiny", "--device", "cpu", "--batch", "2",
                 "--num-step", "6", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [s["speaker"] for s in result["sentences"]] == ["ruby", "ruby", "storm", "ruby+storm@0.70", "ruby"]
    data, sr = sf.read(str(out))
    assert sr == 24_000 and len(data) > 0


@pytest.mark.parametrize("batch", ["0", "17"])
def test_render_bad_batch(batch: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    script = tmp_path / "d.txt"
    script.write_text(DIALOGUE, encoding="utf-8")
    out = tmp_path / "d.wav"
    assert main(["render", str(script), "-o", str(out), "--model", "tiny", "--batch", batch]) == 2
    assert "--batch" in capsys.readouterr().err and not out.exists()
