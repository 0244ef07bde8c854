"""Duo presets of a project: kept in presets.json, read as speaker tags of their own, damaged files said."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnistudio.errors import UserError
from omnistudio.projects.presets import FILE, check_preset_name, read_presets, save_preset
from omnistudio.script import Blend, parse_script


def test_a_preset_is_a_speaker_tag_that_reads_with_its_blend() -> None:
    presets = {"morning": Blend("ruby", "storm", 0.65)}
    script = parse_script("[morning] Good morning.\n[morning:es] Buenos días.\n[ruby] Hello.", "en", presets=presets)
    first, second, third = script.sentences
    assert first.blend == Blend("ruby", "storm", 0.65) and first.speaker == "ruby+storm@0.65" and first.lang == "en"
    assert second.blend == first.blend and second.lang == "es"
    assert third.blend is None and third.speaker == "ruby"
    assert parse_script("[morning] Good morning.", "en").sentences[0].speaker == "morning"  # no presets: a name


def test_presets_are_kept_replaced_and_read_back(tmp_path: Path) -> None:
    assert read_presets(tmp_path) == ({}, None)
    save_preset(tmp_path, "Morning", Blend("ruby", "storm", 0.65))
    kept = save_preset(tmp_path, "late-night", Blend("valentina", "camila", 0.3))
    assert kept == {"morning": Blend("ruby", "storm", 0.65), "late-night": Blend("valentina", "camila", 0.3)}
    assert save_preset(tmp_path, "morning", Blend("ruby", "storm", 0.7))["morning"].alpha == 0.7  # replaced
    assert read_presets(tmp_path)[0]["morning"] == Blend("ruby", "storm", 0.7)


@pytest.mark.parametrize("text", ["{not json", '{"presets": {"x": {"a": "ruby"}}}', '{"presets": 3}',
                                  '{"presets": {"x": {"a": "ruby", "b": "ruby", "alpha": 0.5}}}'])
def test_a_damaged_presets_file_is_one_problem_and_no_presets(tmp_path: Path, text: str) -> None:
    (tmp_path / FILE).write_text(text, encoding="utf-8")
    presets, problem = read_presets(tmp_path)
    assert presets == {} and problem is not None and FILE in problem


def test_a_preset_name_is_checked() -> None:
    assert check_preset_name(" Morning ") == "morning"
    for bad in ("", "9am", "two words", "x" * 33, "a+b"):
        with pytest.raises(UserError, match="preset name"):
            check_preset_name(bad)
    with pytest.raises(UserError, match="anchor's id"):
        check_preset_name("ruby", anchors=["ruby", "storm"])


def test_render_with_a_project_reads_its_presets_as_speakers(tmp_path: Path) -> None:
    from omnistudio.cli import build_parser
    from omnistudio.commands.flags.take import plan_script, take_options

    project = tmp_path / "news.omniproj"
    project.mkdir()
    save_preset(project, "morning", Blend("ruby", "storm", 0.65))
    text = "[morning] Good morning.\n[ruby] And now the weather."
    args = build_parser("render").parse_args(["render", "s.txt", "--project", str(project)])
    script, _options = plan_script(args, text, take_options(args))
    assert [s.blend for s in script.sentences] == [Blend("ruby", "storm", 0.65), None]
    plain = build_parser("render").parse_args(["render", "s.txt", "-o", str(tmp_path / "o.wav")])
    with pytest.raises(UserError, match="unknown speaker 'morning'"):  # without the project: no such anchor
        plan_script(plain, text, take_options(plain))
