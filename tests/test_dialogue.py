"""Dialogue scripts: blend tags, batched rendering equal to one line at a time, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from omnistudio.cli import main
from omnistudio.engine.engine import Engine
from omnistudio.errors import UserError
from omnistudio.script import blend_parts, parse_script, parse_tag
from omnistudio.take.options import sentence_seed
from support.stream import open_stream
from support.audio import same_take

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


# What each sentence of DIALOGUE must be spoken with: (anchor, blend partner, alpha, the voice's key).
EXPECTED = [("ruby", None, 1.0, "ruby"), ("ruby", None, 1.0, "ruby"), ("storm", None, 1.0, "storm"),
            ("ruby", "storm", 0.7, "ruby+storm@0.70"), ("ruby", None, 1.0, "ruby")]
SEED, STEPS = 9, 6


def _stream_pcm(engine: Engine, batch: int) -> list[np.ndarray]:
    from omnistudio.voices.blend import anchor_blend
    from omnistudio.voices.prompts import anchor_prompt

    script = parse_script(DIALOGUE, "en", speakers=ANCHORS)

    def voice(sentence):  # noqa: ANN001, ANN202
        parts = blend_parts(sentence.speaker)
        if parts:
            return anchor_blend(engine, parts[0], parts[1], sentence.lang, parts[2])
        return anchor_prompt(engine, sentence.speaker, sentence.lang)

    with open_stream(engine, script, resolve=voice, num_step=STEPS, seed=SEED, batch=batch) as stream:
        chunks = list(stream)
    assert [c.sentence.id for c in chunks] == list(range(len(script)))  # streamed in script order
    assert all(c.ok for c in chunks)
    return [c.pcm for c in chunks]


def _expected_pcm(engine: Engine) -> list[np.ndarray]:
    """Each line on its own, with the voice and seed it must get (the seed policy: base seed, text,
    voice key and language)."""
    from omnistudio.engine.morph import blend_prompts
    from omnistudio.voices.prompts import anchor_prompt

    texts = [s.text for s in parse_script(DIALOGUE, "en", speakers=ANCHORS).sentences]
    out = []
    for text, (a, b, alpha, key) in zip(texts, EXPECTED):
        voice = anchor_prompt(engine, a, "en")
        if b is not None:
            voice = blend_prompts(engine.model, voice, anchor_prompt(engine, b, "en"), alpha)
        seed = sentence_seed(SEED, text, key, "en")
        out.append(engine.synthesize(text, voice, num_step=STEPS, seed=seed).pcm)
    return out


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_each_streamed_line_is_its_speaker_and_seed(voice_engine, voice_roster, batch: int) -> None:  # noqa: ANN001
    """Batched or not, chunk i is synthesize(line i, its speaker, its seed) bit for bit: a speaker
    mix-up, a wrong blend or a wrong seed changes it (the four anchors are different recordings)."""
    expected = _expected_pcm(voice_engine)
    from omnistudio.voices.prompts import anchor_prompt

    storm_line = parse_script(DIALOGUE, "en", speakers=ANCHORS).sentences[2].text
    as_ruby = voice_engine.synthesize(storm_line, anchor_prompt(voice_engine, "ruby", "en"), num_step=STEPS,
                                      seed=sentence_seed(SEED, storm_line, "storm", "en")).pcm
    assert not same_take(as_ruby, expected[2])  # ruby and storm really sound different here, beyond the tolerance
    got = _stream_pcm(voice_engine, batch)
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert same_take(g, e), f"line {i} ({EXPECTED[i]}) differs"


def test_render_dialogue_with_blends_and_batches(voice_engine, voice_roster, tmp_path: Path,  # noqa: ANN001
                                                 capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """`render --batch 2` of the dialogue (recorded voices): every sentence the file is finished from is
    synthesize(line, its speaker or blend, its seed) bit for bit, and the file is `--batch 1`'s, sample
    for sample."""
    import soundfile as sf

    from omnistudio.audio import finishing

    script = tmp_path / "dialogue.txt"
    script.write_text(DIALOGUE, encoding="utf-8")
    finished: dict[str, list[tuple[int, np.ndarray]]] = {}
    real_finish = finishing.finish_render

    def keep(chunks, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        finished[batch] = [(sentence_id, np.array(pcm)) for pcm, _pause, sentence_id, *_ in chunks]
        return real_finish(chunks, *args, **kwargs)

    monkeypatch.setattr(finishing, "finish_render", keep)
    files = {}
    for batch in ("2", "1"):
        out = tmp_path / f"dialogue-{batch}.wav"
        assert main(["render", str(script), "-o", str(out), "--model", "tiny", "--device", "cpu", "--batch", batch,
                     "--num-step", str(STEPS), "--seed", str(SEED), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert [s["speaker"] for s in result["sentences"]] == ["ruby", "ruby", "storm", "ruby+storm@0.70", "ruby"]
        files[batch], sr = sf.read(str(out), dtype="float32")
        assert sr == 24_000
    expected = _expected_pcm(voice_engine)
    for batch, chunks in finished.items():
        assert [sentence_id for sentence_id, _ in chunks] == list(range(len(expected)))
        for (i, got), want in zip(chunks, expected):
            assert same_take(got, want), f"--batch {batch}: line {i} ({EXPECTED[i]})"
    assert files["2"].shape == files["1"].shape and np.array_equal(files["2"], files["1"])


@pytest.mark.parametrize("batch", ["0", "17"])
def test_render_bad_batch(batch: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    script = tmp_path / "d.txt"
    script.write_text(DIALOGUE, encoding="utf-8")
    out = tmp_path / "d.wav"
    assert main(["render", str(script), "-o", str(out), "--model", "tiny", "--batch", batch]) == 2
    assert "--batch" in capsys.readouterr().err and not out.exists()
