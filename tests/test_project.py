"""Projects on disk: takes per sentence, the chosen take, stale takes after an edit, damage that
opens the rest, and a save killed halfway."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from omnistudio.errors import UserError
from omnistudio.projects.project import LOCK, MANIFEST, Project, decode_flac, open_or_create
from omnistudio.projects.speech_check import AsrResult
from support.audio import tone

SCRIPT = "Good evening. Here is the news.\nRain is expected tomorrow."


def make_project(path: Path) -> Project:
    project = Project.create(path, SCRIPT, "en", "ruby")
    for index in range(len(project)):
        project.add_take(index, tone(freq=200 + 50 * index), seed=index, num_step=8, guidance=2.0)
    project.add_take(0, tone(freq=333), seed=99, num_step=8, guidance=2.0,
                     asr=AsrResult("good evening", 0.0, True, model="tiny.en"))
    project.save()
    return project


def test_save_and_open_keeps_takes_choice_and_audio(tmp_path: Path) -> None:
    path = tmp_path / "news.omniproj"
    saved = make_project(path)
    assert [ln.text for ln in saved.lines] == ["Good evening.", "Here is the news.", "Rain is expected tomorrow."]
    assert [ln.line for ln in saved.lines] == [1, 1, 2]
    first = saved.lines[0]
    assert len(first.takes) == 2 and first.chosen == first.takes[1].id
    assert first.undo() and first.chosen == first.takes[0].id
    saved.save()
    opened = Project.open(path)
    assert opened.problems == []
    assert opened.lines[0].chosen == saved.lines[0].takes[0].id
    assert opened.lines[0].takes[1].asr == AsrResult("good evening", 0.0, True, model="tiny.en")
    for a, b in zip(saved.lines, opened.lines):
        assert a.takes == b.takes and a.chosen == b.chosen
        for take in b.takes:
            assert np.array_equal(opened.audio(take), saved.audio(take))  # what played is what was stored
            assert take.duration_s == pytest.approx(0.5) and take.loudness_lufs is not None
            assert (path / take.file).is_file()
    # 24-bit FLAC: the stored audio is the input to within one LSB
    assert np.max(np.abs(opened.audio(opened.lines[1].takes[0]) - tone(freq=250))) < 2 ** -22
    data = json.loads((path / MANIFEST).read_text())
    assert data["sentences"][0]["takes"][0]["file"].startswith("takes/")


def test_editing_one_sentence_stales_only_its_takes(tmp_path: Path) -> None:
    path = tmp_path / "news.omniproj"
    before = make_project(path)
    ids = [[t.id for t in ln.takes] for ln in before.lines]
    edited = SCRIPT.replace("Here is the news.", "Here are the headlines.")
    project = open_or_create(path, edited, "en", "ruby")
    assert [[t.id for t in ln.takes] for ln in project.lines] == ids  # nothing dropped
    assert [ln.stale for ln in project.lines] == [False, True, False]
    assert project.lines[1].chosen_take is None and project.lines[0].chosen_take is not None
    assert project.missing() == [1]
    # a new sentence gets none; the others keep theirs as positions shift; undoing the edit
    # makes the edited sentence's takes fresh again
    project.set_script("New opening line.\n" + SCRIPT)
    assert project.lines[0].takes == [] and [t.id for t in project.lines[1].takes] == ids[0]
    assert project.missing() == [0] and project.lines[2].chosen_take is not None
    # another default voice: every untagged sentence's takes are stale
    other = open_or_create(path, SCRIPT, "en", "storm")
    assert all(ln.stale for ln in other.lines)


def test_takes_are_found_by_what_they_say_after_an_undo_a_move_or_another_script(tmp_path: Path) -> None:
    """Undoing an edit, moving a sentence, or bringing back an earlier script reuses the takes that say
    those words (chosen again), instead of rendering them again."""
    project = make_project(tmp_path / "news.omniproj")
    first = [ln.chosen for ln in project.lines]
    edited = SCRIPT.replace("Here is the news.", "Here are the headlines.")
    project.set_script(edited)
    project.add_take(1, tone(freq=777), seed=5, num_step=8, guidance=2.0)  # the edit rendered and chosen
    assert project.missing() == []
    project.set_script(SCRIPT)  # undo: the earlier take speaks these words again
    assert project.missing() == [] and [ln.chosen for ln in project.lines] == first
    project.set_script(edited)  # and back: the headlines' take, not a third render
    assert project.missing() == [] and project.lines[1].chosen_take is not None
    assert project.lines[1].chosen_take.seed == 5
    moved = "Rain is expected tomorrow.\nGood evening. Here is the news."  # the weather first
    project.set_script(moved)
    assert project.lines[0].text == "Rain is expected tomorrow." and project.lines[0].chosen == first[2]
    assert project.missing() == []


def test_invalid_manifest_opens_the_script_without_takes(tmp_path: Path) -> None:
    path = tmp_path / "news.omniproj"
    make_project(path)
    (path / MANIFEST).write_text('{"format": 1, "script": "oops",,}')
    project = Project.open(path)
    assert project.problems == [f"{MANIFEST} is not valid JSON (line 1, column 32: Expecting property name "
                                "enclosed in double quotes): opened the script from script.txt without its takes"]
    assert [ln.text for ln in project.lines][0] == "Good evening." and all(not ln.takes for ln in project.lines)


def test_missing_or_changed_take_file_drops_that_take_only(tmp_path: Path) -> None:
    path = tmp_path / "news.omniproj"
    saved = make_project(path)
    gone, changed = saved.lines[1].takes[0], saved.lines[0].takes[1]
    (path / gone.file).unlink()
    pcm, sr = decode_flac((path / changed.file).read_bytes())
    import soundfile as sf

    sf.write(str(path / changed.file), pcm * 0.5, sr, format="FLAC", subtype="PCM_24")
    project = Project.open(path)
    assert project.problems == [
        f"sentence 1: take file {changed.file} does not match its hash (changed on disk); the take was dropped",
        f"sentence 2: take file {gone.file} is missing; the take was dropped"]
    assert [len(ln.takes) for ln in project.lines] == [1, 0, 1]
    assert project.lines[0].chosen is None  # the chosen take was the changed one
    assert project.lines[2].chosen_take is not None


def test_bad_paths_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="NAME.omniproj"):
        Project.open(tmp_path / "news")
    with pytest.raises(UserError, match="does not exist"):
        Project.open(tmp_path / "none.omniproj")
    make_project(tmp_path / "a.omniproj")
    with pytest.raises(UserError, match="already exists"):
        Project.create(tmp_path / "a.omniproj", SCRIPT)


def test_save_interrupted_before_the_rename_keeps_the_previous_manifest(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    path = tmp_path / "news.omniproj"
    project = make_project(path)
    before = (path / MANIFEST).read_bytes()
    project.set_script(SCRIPT + "\nOne more line.")
    project.add_take(3, tone(freq=500), seed=3, num_step=8, guidance=2.0)
    real_replace = os.replace

    def crash(src, dst):  # noqa: ANN001, ANN202
        if str(dst).endswith(MANIFEST):
            raise KeyboardInterrupt  # the process dies between writing the new manifest and renaming it
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        project.save()
    assert (path / MANIFEST).read_bytes() == before
    assert not [p for p in path.iterdir() if p.name.startswith(".") and p.name != LOCK]  # no temporary left behind
    monkeypatch.setattr(os, "replace", real_replace)
    reopened = Project.open(path)
    assert reopened.problems == [] and len(reopened) == 3


KILL_LOOP = """
import sys
import numpy as np
from pathlib import Path
from omnistudio.projects.project import Project
path, script = Path(sys.argv[1]), sys.argv[2]
project = Project.open(path)
project.lines[0].history = [None] * 100_000  # a large manifest: a save spends most of its time writing it
takes = project.lines[0].takes
print("ready", flush=True)
n = 0
while True:
    n += 1
    project.set_script(script if n % 2 else script + "\\nOne more line.")
    if n % 2 == 0:  # a take that the next save drops again (its file is deleted)
        project.add_take(3, (0.1 * np.sin(np.arange(2400) * n / 50)).astype(np.float32), seed=n, num_step=8,
                         guidance=2.0)
    project.lines[0].choose(takes[n % 2].id)
    project.save()
"""


def test_killing_the_process_while_saving_leaves_a_valid_manifest(tmp_path: Path) -> None:
    path = tmp_path / "news.omniproj"
    make_project(path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    rng = np.random.default_rng(0)
    for delay in rng.uniform(0.2, 1.0, size=4):
        proc = subprocess.Popen([sys.executable, "-c", KILL_LOOP, str(path), SCRIPT], stdout=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        json.loads((path / MANIFEST).read_text())  # whole, never half-written
        project = Project.open(path)
        assert project.problems == []  # every take the manifest names is there, with its hash
        assert project.script in (SCRIPT, SCRIPT + "\nOne more line.")
        for _index, _line, take in project.chosen():
            assert take is not None and project.audio(take).size > 0


KILL_INSIDE = """
import os, signal, sys
import numpy as np
from pathlib import Path
from omnistudio.projects.project import Project
path, script, target = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
real_text, real_bytes = Path.write_text, Path.write_bytes

def half_then_die(write):
    def wrapper(self, data, *args, **kwargs):
        if target in self.name:  # the file this run dies writing (or its temporary)
            write(self, data[: len(data) // 2], *args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        return write(self, data, *args, **kwargs)
    return wrapper

Path.write_text, Path.write_bytes = half_then_die(real_text), half_then_die(real_bytes)
project = Project.open(path)
project.set_script(script + "\\nOne more line.")
project.add_take(3, (0.1 * np.sin(np.arange(2400) / 50)).astype(np.float32), seed=1, num_step=8, guidance=2.0)
project.lines[0].undo()
project.save()
"""


@pytest.mark.parametrize("target", ["project.json", "script.txt", ".flac"])
def test_killed_halfway_through_writing_a_file_the_previous_project_opens(tmp_path: Path, target: str) -> None:
    path = tmp_path / "news.omniproj"
    make_project(path)
    before = (path / MANIFEST).read_bytes()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-c", KILL_INSIDE, str(path), SCRIPT, target], env=env)
    assert proc.returncode == -signal.SIGKILL
    assert (path / MANIFEST).read_bytes() == before
    project = Project.open(path)
    assert project.problems == [] and project.script == SCRIPT and len(project.lines[0].takes) == 2


def test_stepping_through_takes_and_the_previous_choice(tmp_path: Path) -> None:
    from omnistudio.projects.retake import regenerate

    project = make_project(tmp_path / "news.omniproj")
    line = project.lines[0]
    first, second = line.takes
    assert line.chosen == second.id and line.previous_take() == first
    seeds: list[int] = []

    def synth(_line, seed):  # noqa: ANN001, ANN202
        seeds.append(seed)
        return tone(freq=400 + len(seeds))

    third = regenerate(project, 0, synth, base_seed=0, num_step=8, guidance=2.0)
    assert seeds[0] not in (0, 99) and line.takes[-1] == third and line.chosen == third.id
    assert line.previous_take() == second
    assert line.step(None, -1) == second and line.step(None, -2) == first and line.step(None, -9) == first
    assert line.step(first.id, +1) == second and line.step(None, +1) == third  # clamped at the end
    line.choose(first.id)
    assert line.previous_take() == third
    assert line.undo() and line.chosen == third.id and line.undo() and line.chosen == second.id
    project.set_script(SCRIPT.replace("Good evening.", "Good night."))
    assert project.lines[0].step(None, 0) is None and project.lines[0].previous_take() is None
