"""A project's files are safe from its own commands (issue 24): two renders into one project at once
keep every take, a damaged take file is written again by the next render, an output inside a project
folder and ``--project FILE`` are refused before anything renders, and ``check`` on a folder that
is not a project says so. Through the CLI (``main``, or ``omnistudio`` processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omnistudio.cli import main
from omnistudio.projects.project import MANIFEST, Project
from support.audio import REF_TEXT, tone
from support.cli import one_line_error

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
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing may render: a refused command fails before any engine loads."""
    import omnistudio.flags.engine as engine
    import omnistudio.commands.render_takes as takes

    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("an engine was opened")

    monkeypatch.setattr(takes, "engine_link", refuse)
    monkeypatch.setattr(engine, "open_link", refuse)


@pytest.fixture
def shared_engine(monkeypatch: pytest.MonkeyPatch, tiny_engine: Any) -> None:
    """render --project renders on the session's tiny engine (loaded once) instead of loading its own."""
    import omnistudio.commands.render_takes as takes
    from omnistudio.take.link import LocalEngine

    monkeypatch.setattr(takes, "engine_link", lambda *_a: LocalEngine(tiny_engine))


def saved_project(path: Path) -> Project:
    project = Project.create(path, "Good evening. Here is the news.", "en", "ruby")
    for index in range(len(project)):
        project.add_take(index, tone(freq=200 + 50 * index), seed=index, num_step=2, guidance=2.0)
    project.save()
    return project


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


@pytest.mark.parametrize("where", ["take", "new file", "out-dir"])
def test_an_output_inside_the_project_folder_is_refused_before_rendering(
        tmp_path: Path, ref_wav: Path, no_engine: None, where: str, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "p.omniproj"
    take = saved_project(project).lines[0].takes[0]
    script = tmp_path / "s.txt"
    script.write_text("Good evening. Here is the news.\n", encoding="utf-8")
    before = {p.relative_to(project): p.read_bytes() for p in project.rglob("*") if p.is_file()}
    output = {"take": ["-o", str(project / take.file)], "new file": ["-o", str(project / "mix.wav")],
              "out-dir": ["--ray", "--out-dir", str(project / "renders")]}[where]
    capsys.readouterr()

    assert main(with_ref(tiny(str(script), *output, "--project", str(project)), ref_wav)) == 2
    one_line_error(capsys, "in the project folder")
    after = {p.relative_to(project): p.read_bytes() for p in project.rglob("*") if p.is_file()}
    assert after == before  # the take untouched, no sidecar, no mix, no folder
    assert not (project / "renders").exists()


def test_project_that_is_a_file_is_refused_at_once(tmp_path: Path, ref_wav: Path, no_engine: None,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    script, target, output = tmp_path / "s.txt", tmp_path / "p.omniproj", tmp_path / "out.wav"
    script.write_text("Good evening.\n", encoding="utf-8")
    target.write_text("not a folder", encoding="utf-8")
    capsys.readouterr()
    assert main(with_ref(tiny(str(script), "--project", str(target), "-o", str(output)), ref_wav)) == 2
    one_line_error(capsys, "is a file, not a project folder")
    assert target.read_text(encoding="utf-8") == "not a folder" and not output.exists()


@pytest.mark.parametrize("name", ["renders", "empty.omniproj"])
def test_check_on_a_folder_that_is_not_a_project_says_so(tmp_path: Path, name: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / name
    folder.mkdir()
    capsys.readouterr()
    assert main(["check", str(folder)]) == 2
    line = one_line_error(capsys, "not an OmniStudio project")
    assert "does not exist" not in line and MANIFEST in line  # what a project holds
    assert list(folder.iterdir()) == []  # nothing was written into it


@pytest.mark.parametrize("planted", ["../../fifo", "../../victim"])
def test_a_take_id_that_is_a_path_never_reaches_a_file(tmp_path: Path, planted: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A manifest whose take id (and chosen take) is a path: before, ``captions`` opened (and hung on) a FIFO
    beside the project, or hashed a file outside it. Now ids are checked in the form they are written in
    before any path is built: the take is dropped as damaged, the rest of the project opens."""
    import os

    folder = tmp_path / "P.omniproj"
    saved_project(folder)
    manifest = json.loads((folder / MANIFEST).read_text())
    first = manifest["sentences"][0]
    first["takes"][0]["id"] = first["chosen"] = planted
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    os.mkfifo(tmp_path / "fifo.flac")
    (tmp_path / "victim.flac").write_bytes(b"outside the project")
    opened = Project.open(folder)
    assert any("damaged" in p for p in opened.problems)
    assert opened.lines[0].takes == [] and opened.lines[0].chosen is None and len(opened.lines[1].takes) == 1
    capsys.readouterr()
    assert main(["captions", str(folder), "-o", str(tmp_path), "--captions-estimate"]) in (0, 2)
    assert "Traceback" not in capsys.readouterr().err
