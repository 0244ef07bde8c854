"""A project's files are safe from its own commands (issue 24): two renders into one project at once
keep every take, and a damaged take file is written again by the next render. Through the CLI
(``main``, or ``omnistudio`` processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omnistudio.cli import main
from omnistudio.projects.project import Project
from support.audio import REF_TEXT

TESTS = Path(__file__).resolve().parent

# `omnistudio` with one seam: after opening its project it says so (a file) and waits until the other
# render has opened the project too, so both render from the same empty project and save in turn.
OPEN_THEN_MEET = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import omnistudio.commands.render_takes as takes
from omnistudio.cli import main
from support.wait import wait_until
mine, theirs = Path(sys.argv[2]), Path(sys.argv[3])
opened = takes.open_project
def open_then_meet(*args, **kwargs):
    project = opened(*args, **kwargs)
    mine.touch()
    wait_until(theirs.exists, timeout=600, what="the other render to open the project")
    return project
takes.open_project = open_then_meet
sys.exit(main(sys.argv[4:]))
"""


def tiny(*args: str) -> list[str]:
    return ["render", *args, "--model", "tiny", "--device", "cpu", "--num-step", "2", "--ref-audio", "{ref}",
            "--ref-text", REF_TEXT]


def with_ref(args: list[str], ref_wav: Path) -> list[str]:
    return [str(ref_wav) if a == "{ref}" else a for a in args]


@pytest.fixture
def shared_engine(monkeypatch: pytest.MonkeyPatch, tiny_engine: Any) -> None:
    """render --project renders on the session's tiny engine (loaded once) instead of loading its own."""
    import omnistudio.commands.render_takes as takes
    from omnistudio.take.link import LocalEngine

    monkeypatch.setattr(takes, "engine_link", lambda *_a: LocalEngine(tiny_engine))


def test_two_renders_into_one_project_at_once_keep_every_take(tmp_path: Path, ref_wav: Path) -> None:
    """`render c1 --project P & render c2 --project P & wait`, with both past opening P before either saves."""
    scripts = {"c1": "Good evening. Here is the news.\nRain tomorrow.\n",
               "c2": "Sun on Monday. Wind on Tuesday.\nSnow later.\n"}
    project = tmp_path / "cc.omniproj"
    procs = []
    for name, other in (("c1", "c2"), ("c2", "c1")):
        script = tmp_path / f"{name}.txt"
        script.write_text(scripts[name], encoding="utf-8")
        args = with_ref(tiny(str(script), "--project", str(project)), ref_wav)
        procs.append(subprocess.Popen([sys.executable, "-c", OPEN_THEN_MEET, str(TESTS), str(tmp_path / f"{name}.open"),
                                       str(tmp_path / f"{other}.open"), *args],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs

    opened = Project.open(project)
    assert opened.problems == []  # no "take file ... is missing" on reopening
    takes = [t for line in opened.lines for t in line.takes]
    assert len(takes) == 6 and len({t.id for t in takes}) == 6
    files = sorted(p.name for p in (project / "takes").iterdir())
    assert files == sorted(f"{t.id}.flac" for t in takes)  # the manifest and the files agree
    # every sentence of both scripts kept its take (the last script's sentences chose theirs)
    spoken = {t.text_hash for t in takes}
    sentences = [ln for text in scripts.values() for ln in Project(project, text).lines]
    assert spoken == {ln.text_hash for ln in sentences}
    assert all(line.chosen_take is not None for line in opened.lines)


def test_a_damaged_take_is_written_again_by_the_next_render(tmp_path: Path, ref_wav: Path, shared_engine: None,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    script, project = tmp_path / "s.txt", tmp_path / "p.omniproj"
    script.write_text("Good evening.\n", encoding="utf-8")
    render = with_ref(tiny(str(script), "--project", str(project), "--json"), ref_wav)
    assert main(render) == 0
    take = Project.open(project).lines[0].chosen_take
    assert take is not None
    file = project / take.file
    stored = file.read_bytes()
    file.write_bytes(b"")  # `: > P/takes/ID.flac`
    capsys.readouterr()

    assert main(render) == 0
    out, err = capsys.readouterr()
    assert "does not match its hash" in err and json.loads(out)["rendered"] == [0]
    assert file.read_bytes() == stored  # the same take rendered again, and its file written again
    assert sorted(p.name for p in file.parent.iterdir()) == [file.name]  # atomically: no temp left

    assert main(render) == 0  # later runs are clean: nothing to warn about, nothing to render
    out, err = capsys.readouterr()
    assert "warning" not in err and json.loads(out)["rendered"] == []
    assert Project.open(project).problems == []
