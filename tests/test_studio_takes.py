"""The studio's project: play keeps takes, F9 adds one with a new seed, Alt+Left/Right plays the
right take, choices survive save and reopen, export is the chosen takes through render's finishing,
and editing one sentence leaves the others' takes alone (headless controller, tiny engine)."""

from __future__ import annotations

import filecmp

from pathlib import Path
from typing import Any

import pytest
from support.studio import make_studio
from support.wait import wait_until as wait

from omnistudio.studio.events import PlaybackFinished, TakesChanged
from omnistudio.studio.settings import StudioSettings
from omnistudio.projects.project import Project

SCRIPT = "Good evening. Here is the news.\nAnd now the weather."


@pytest.fixture()
def studio(tiny_engine, voice_roster_file: Path, tmp_path: Path):  # noqa: ANN001, ANN201
    events: list[object] = []
    s = make_studio(tiny_engine, voice_roster_file, report=events.append, virtual_rate=50.0,
                    settings=StudioSettings(num_step=2, anchor="ruby")).start()
    s.events = events  # type: ignore[attr-defined]
    wait(lambda: s.state == "ready", what="engine ready")
    yield s
    s.close()


def finished(studio: Any, count: int) -> None:
    wait(lambda: sum(isinstance(e, PlaybackFinished) for e in studio.events) >= count, what=f"{count} plays")
    wait(lambda: studio.commands.empty() and studio.state == "ready", what="idle")


def test_takes_in_the_studio(studio: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: C901
    import omnistudio.studio.takes as studio_takes
    from omnistudio.projects import retake

    path = tmp_path / "news.omniproj"
    studio.takes.open(path, SCRIPT)
    studio.play(SCRIPT)
    finished(studio, 1)
    project = studio.takes.project
    assert [len(ln.takes) for ln in project.lines] == [1, 1, 1] and not project.missing()
    first = [ln.takes[0] for ln in project.lines]

    # F9 on sentence 2: a new take with a new seed, chosen; the others untouched. It is the one
    # retake.regenerate (what render's retakes share), not a copy of it in the studio.
    regenerated: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        take = retake.regenerate(*args, **kwargs)
        regenerated.append((args[1], take))
        return take

    monkeypatch.setattr(studio_takes, "regenerate", spy)
    studio.takes.regenerate(SCRIPT, 1)
    finished(studio, 2)
    assert [(index, take.id) for index, take in regenerated] == [(1, project.lines[1].takes[-1].id)]
    from omnistudio.studio.events import Failure
    assert not [e for e in studio.events if isinstance(e, Failure)]
    line = project.lines[1]
    assert len(line.takes) == 2 and line.takes[1].seed != line.takes[0].seed and line.chosen == line.takes[1].id
    assert [ln.takes for ln in (project.lines[0], project.lines[2])] == [[first[0]], [first[2]]]
    changed = [e for e in studio.events if isinstance(e, TakesChanged)][-1]
    assert changed.counts == (1, 2, 1) and changed.played == line.takes[1].id

    # Alt+Left plays the first take, Alt+Right the second; A/B plays chosen then previous
    studio.takes.step(SCRIPT, 1, -1)
    finished(studio, 3)
    studio.takes.step(SCRIPT, 1, +1)
    finished(studio, 4)
    studio.takes.compare(SCRIPT, 1)
    finished(studio, 5)
    assert studio.takes.played[-4:] == [line.takes[0].id, line.takes[1].id, line.takes[1].id, line.takes[0].id]

    # choose the first again (Enter), undo (Ctrl+Z); the choice survives save and reopen
    studio.takes.choose(1, line.takes[0].id)
    studio.takes.undo(1)
    studio.takes.choose(1, line.takes[0].id)
    wait(lambda: studio.commands.empty(), what="choices")
    wait(lambda: Project.open(path).lines[1].chosen == line.takes[0].id, what="saved choice")
    reopened = Project.open(path)
    assert reopened.problems == [] and [ln.chosen for ln in reopened.lines] == [ln.chosen for ln in project.lines]

    # export: the chosen takes through render's finishing path, bit for bit
    from omnistudio.projects.chosen import write_chosen
    from omnistudio.take.pipeline import plan

    out, reference = tmp_path / "export.wav", tmp_path / "render.wav"
    studio.export(SCRIPT, out)
    wait(lambda: out.is_file() and studio.commands.empty() and studio.state == "ready", what="export")
    options = studio.take_options()
    write_chosen(reopened, plan(studio.parse(SCRIPT), options), options, reference)
    assert filecmp.cmp(out, reference, shallow=False)

    # editing sentence 3 renders it alone; sentences 1 and 2 keep their takes and choices
    edited = SCRIPT.replace("And now the weather.", "And now the sport.")
    before = [(list(ln.takes), ln.chosen) for ln in project.lines[:2]]
    studio.play(edited)
    finished(studio, 6)
    assert [(list(ln.takes), ln.chosen) for ln in project.lines[:2]] == before
    assert project.lines[2].text == "And now the sport." and len(project.lines[2].fresh_takes) == 1


def test_the_autosave_of_a_script_mid_edit_is_quiet(studio: Any, tmp_path: Path) -> None:
    """The autosave timer sends the editor's script every second; a script mid-edit (a tag typed up to its
    ']') does not read yet: nothing is said (an error modal would take the keys being typed) and the project
    keeps the last script that reads. Playing it still says what is wrong."""
    from omnistudio.studio.events import Failure

    path = tmp_path / "news.omniproj"
    studio.takes.open(path, SCRIPT)
    half = SCRIPT.replace("And now", "[storAnd now")
    studio.takes.edited(half)
    studio.takes.keep_script()  # what the app's timer does
    studio.takes.edited(SCRIPT.replace("And now", "[storm] And now"))
    studio.takes.keep_script()  # the tag closed: kept
    def saved() -> str:
        return Project.open(path).script if (path / "project.json").is_file() else ""

    wait(lambda: saved().endswith("[storm] And now the weather."), what="the closed tag saved")
    assert not [e for e in studio.events if isinstance(e, Failure)]
    from omnistudio.errors import UserError

    with pytest.raises(UserError, match="unclosed tag"):
        studio.play(half)
