"""The text front-end inside the take pipeline: the model gets the spoken text, the producer keeps the
written one; the spoken text is a sentence's identity (seed, cache, project freshness), so a lexicon
entry re-renders exactly the sentences that hold its word."""

from __future__ import annotations

import filecmp
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from omnistudio.cli import main
from omnistudio.projects.project import Project
from omnistudio.take.options import TakeOptions, sentence_seed
from omnistudio.take.pipeline import build_take, plan
from omnistudio.take.sinks import FileSink
from omnistudio.text.lexicon import Entry, Lexicon
from omnistudio.voices.resolve import VoiceRef
from support.audio import REF_TEXT
from support.links import FakeLink

SCRIPT = ("[ruby:es] El dólar cerró a US$ 1.245,50, un 3,2 % más.\n"
          "[ruby:es] Habló la presidenta Sheinbaum.\n"
          "[storm:en] The S&P 500 rose 1.2% on Oct. 14.\n")


def test_the_model_gets_the_spoken_text_and_the_take_keeps_both(tmp_path: Path) -> None:
    link = FakeLink()
    out = tmp_path / "news.wav"
    build_take(link, SCRIPT, TakeOptions(seed=4)).run([FileSink(out)])
    assert "US$" not in link.said[0] and "dólares" in link.said[0] and "tres coma dos por ciento" in link.said[0]
    assert link.said[1] == "Habló la presidenta Sheinbaum."  # nothing to change: as written
    assert "one point two percent" in link.said[2] and "October" in link.said[2]
    rows = json.loads((tmp_path / "news.wav.json").read_text())["timings"]["sentences"]
    assert [r["text"] for r in rows] == ["El dólar cerró a US$ 1.245,50, un 3,2 % más.",
                                         "Habló la presidenta Sheinbaum.", "The S&P 500 rose 1.2% on Oct. 14."]
    assert [r["spoken"] for r in rows] == link.said  # the sidecar carries both forms

    link = FakeLink()
    build_take(link, SCRIPT, TakeOptions(seed=4, normalize=False)).run([])
    assert link.said[0] == "El dólar cerró a US$ 1.245,50, un 3,2 % más."  # --no-normalize: as written


def test_a_lexicon_entry_changes_only_the_sentences_that_hold_its_word() -> None:
    plain = plan(SCRIPT, TakeOptions(seed=4))
    entry = Entry("Sheinbaum", "Sháinbaum", "es")
    with_entry = plan(SCRIPT, TakeOptions(seed=4, lexicon=Lexicon((entry,))))
    assert [s.said for s in with_entry] == [plain[0].said, "Habló la presidenta Sháinbaum.", plain[2].said]
    assert [s.text for s in with_entry] == [s.text for s in plain]  # the written text is the producer's
    assert [a.seed == b.seed for a, b in zip(plain, with_entry)] == [True, False, True]
    assert with_entry[1].seed == sentence_seed(4, "Habló la presidenta Sháinbaum.", "ruby", "es")
    english = plan(SCRIPT, TakeOptions(seed=4, lexicon=Lexicon((Entry("Sheinbaum", "Shinebom", "en"),))))
    assert [s.said for s in english] == [s.said for s in plain]  # an English entry leaves Spanish alone


def test_render_project_renders_again_only_what_a_lexicon_entry_changes(
        tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    import omnistudio.commands.render_takes as takes

    script = tmp_path / "news.txt"
    script.write_text(SCRIPT.replace("[storm:en]", "[ruby:en]"), encoding="utf-8")
    project = tmp_path / "news.omniproj"
    link = FakeLink()
    monkeypatch.setattr(takes, "engine_link", lambda *_a: link)
    argv = ["render", str(script), "--project", str(project), "--model", "tiny", "--device", "cpu",
            "--num-step", "2", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "--json"]
    assert main([*argv, "-o", str(tmp_path / "a.wav")]) == 0
    assert json.loads(capsys.readouterr().out)["rendered"] == [0, 1, 2] and len(link.said) == 3
    before = [[t.id for t in line.takes] for line in Project.open(project).lines]

    assert main(["lexicon", "add", "Sheinbaum", "Sháinbaum", "--lang", "es", "--project", str(project)]) == 0
    capsys.readouterr()
    assert main([*argv, "-o", str(tmp_path / "b.wav")]) == 0
    assert json.loads(capsys.readouterr().out)["rendered"] == [1]
    assert link.said[3:] == ["Habló la presidenta Sháinbaum."]  # only the sentence with the word
    opened = Project.open(project)
    assert [[t.id for t in line.takes] for line in opened.lines][::2] == before[::2]  # the others: same takes
    assert [opened.lines[1].is_fresh(t) for t in opened.lines[1].takes] == [False, True]
    manifest = json.loads((project / "project.json").read_text())
    assert manifest["sentences"][1]["spoken"] == "Habló la presidenta Sháinbaum."
    assert manifest["sentences"][1]["text"] == "Habló la presidenta Sheinbaum."

    assert main([*argv, "-o", str(tmp_path / "c.wav")]) == 0  # nothing changed since: nothing renders
    assert json.loads(capsys.readouterr().out)["rendered"] == [] and len(link.said) == 4
    assert filecmp.cmp((tmp_path / "b.wav"), (tmp_path / "c.wav"), shallow=False)


def test_say_speaks_what_render_speaks(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``say`` and a one-line ``render`` send the model the same spoken text with the same seed."""
    from omnistudio.flags import engine

    seen: list[tuple[str, int]] = []

    class Recorder(FakeLink):
        def render(self, items: Any, options: Any, cancel: Any = None) -> Any:
            seen.extend((i.text, i.seed) for i in items)
            return super().render(items, options, cancel)

    monkeypatch.setattr(engine, "open_link", lambda *_a, **_k: Recorder())
    text = "Subió un 3,2 % el 14/10."
    voice = ["--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "--lang", "es", "--seed", "9"]
    assert main(["say", text, "-o", str(tmp_path / "say.wav"), *voice]) == 0
    expected = plan(f"[:es] {text}", TakeOptions(seed=9, lang="es", voice=VoiceRef.recording_of(ref_wav, REF_TEXT)))
    assert seen == [(expected[0].said, expected[0].seed)] and "tres coma dos por ciento" in seen[0][0]


def test_a_batch_renders_a_script_again_after_a_lexicon_change_for_one_of_its_words(tmp_path: Path) -> None:
    """`render --ray --out-dir` resumes: a script is done when its sidecar's source equals this run's; a
    lexicon entry for one of the script's words changes what is said, so the script is not done."""
    from omnistudio.audio.export import sidecar_path
    from omnistudio.commit import json_writer
    from omnistudio.cluster.batch import RenderSpec, ScriptJob, is_done
    from omnistudio.commands.render_ray import spoken_digest
    from omnistudio.engine.settings import EngineConfig
    from omnistudio.script import parse_script

    script = parse_script(SCRIPT)
    before = TakeOptions(seed=4, lexicon=Lexicon((Entry("Quilmes", "Kilmes", "es"),)))  # not in the script
    after = TakeOptions(seed=4, lexicon=Lexicon((Entry("Quilmes", "Kilmes", "es"), Entry("Sheinbaum", "Sháinbaum", "es"))))
    unrelated = TakeOptions(seed=4, lexicon=Lexicon((Entry("Quilmes", "Quílmes", "es"),)))
    assert "Sheinbaum" in SCRIPT and "Quilmes" not in SCRIPT
    assert spoken_digest(script, before) != spoken_digest(script, after)
    assert spoken_digest(script, before) == spoken_digest(script, unrelated)
    spec = RenderSpec(EngineConfig(model="tiny", device="cpu"), TakeOptions(seed=4))
    out = tmp_path / "news.wav"
    out.write_bytes(b"RIFF")
    done = ScriptJob(tmp_path / "news.txt", SCRIPT, out, script, spoken_digest(script, before))
    json_writer({"source": spec.source(done.sha256, done.spoken_sha256)})(sidecar_path(out))
    assert is_done(done, spec)
    assert not is_done(replace(done, spoken_sha256=spoken_digest(script, after)), spec)
    assert is_done(replace(done, spoken_sha256=spoken_digest(script, unrelated)), spec)
