"""`omnistudio render SCRIPT... --out-dir DIR --ray`: many scripts on Ray actors, equal to local renders.

One local Ray instance for the module (2 CPUs; workers hold 0.5 CPU each)."""

from __future__ import annotations

import filecmp

import json
import os
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from omnistudio.cli import main  # noqa: E402
from omnistudio.engine.settings import EngineConfig  # noqa: E402
from support.audio import REF_TEXT  # noqa: E402

LINES = ["Good evening. Here is the news.", "Markets rose today.", "The weather stays dry.\n[:es] Buenas noches.",
         "Traffic is light.", "Sports next. Stay with us.", "That is all for tonight."]


@pytest.fixture(scope="module")
def local_ray() -> Any:
    """A local Ray instance whose workers import this module's test renderer (``tests`` on their
    PYTHONPATH). The variables set here, and those ``ray.init`` adds, are this module's only."""
    from support.server import restored_environ

    with restored_environ():
        tests_dir = str(Path(__file__).parent)
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), tests_dir) if p)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        try:
            yield ray
        finally:
            ray.shutdown()


def common(ref_wav: Path) -> list[str]:
    return ["--model", "tiny", "--device", "cpu", "--num-step", "2", "--ref-audio", str(ref_wav),
            "--ref-text", REF_TEXT]


def ray_render(scripts: list[Path], out_dir: Path, ref_wav: Path, *extra: str) -> list[str]:
    return ["render", *map(str, scripts), "--out-dir", str(out_dir), "--ray", "--workers", "2",
            "--cpus-per-worker", "0.5", "--json", *common(ref_wav), *extra]


# A hang guard, not a timing: under a CPU burner this test took 1,039 s when it started Ray's actors
# six times (the suite's 900 s guard then landed inside ray.wait); it starts them twice now.
@pytest.mark.timeout(3600)
def test_workers_equal_local_renders_resume_and_any_change_renders_again(
        tmp_path: Path, ref_wav: Path, local_ray: Any, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray starts an actor with OMP_NUM_THREADS=1; `render` here runs torch's own count (two threads on
    a two-core machine), and float sums depend on it. Workers take this process's count: the files
    equal local renders bit for bit. A second run renders and rewrites nothing (and starts no actor);
    a run that changes only the script's text, the seed, a take option or the voice sends that script,
    and only it, to Ray again (checked where the command hands its scripts to Ray: the two real runs
    show what Ray does with them); a run with other worker threads renders on Ray, and the file says so."""
    import torch

    from omnistudio.commands import render_ray

    torch.set_num_threads(2)  # what `render` runs with on two cores (the suite runs one thread)
    names = ("seed", "steps", "voice", "threads", "text")
    scripts = {name: tmp_path / f"{name}.txt" for name in names}
    for i, script in enumerate(scripts.values()):
        script.write_text(LINES[i] + "\n", encoding="utf-8")
    local = tmp_path / "local"
    local.mkdir()
    captions = ("--captions", "srt", "--captions-estimate")  # estimated words: no Whisper on the tiny model's noise
    for name in ("seed", "threads"):
        assert main(["render", str(scripts[name]), "-o", str(local / f"{name}.wav"), "--json", *common(ref_wav),
                     *captions]) == 0
        said = json.loads(capsys.readouterr().out)
        assert (said["threads"], said["seed"], said["quantisation"]) == (2, 0, "none")

    out = tmp_path / "out"
    assert main(ray_render(list(scripts.values()), out, ref_wav, *captions)) == 0
    said = json.loads(capsys.readouterr().out)
    assert sorted(said["rendered"]) == sorted(map(str, scripts.values())) and not said["failed"]
    assert (said["threads"], said["same_as_local_render"]) == (2, True)
    for name in ("seed", "threads"):
        assert filecmp.cmp((out / f"{name}.wav"), (local / f"{name}.wav"), shallow=False), name  # bit for bit
        assert (out / f"{name}.srt").read_text() == (local / f"{name}.srt").read_text() != "", name  # the same captions
    side = json.loads((out / "seed.wav.json").read_text())
    assert side["engine"]["threads"] == 2 and "note" not in side["engine"]
    assert side["take"]["seed"] == 0 and side["timings"]["sentences"][0]["voice"].startswith("rec:")
    assert side["source"]["model"] == "tiny" and side["source"]["voice"].startswith("rec:")
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no temp files left
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}

    # What each later run sends to Ray, without rendering it again (the runs above and below render).
    sent: list[list[str]] = []
    real = render_ray._render_on_ray

    def to_ray(args: Any, spec: Any, todo: list[Any], report: Any, *_captions: Any) -> Any:
        sent.append([job.name for job in todo])
        report.rendered.extend(job.name for job in todo)
        return report

    monkeypatch.setattr(render_ray, "_render_on_ray", to_ray)
    assert main(ray_render(list(scripts.values()), out, ref_wav)) == 0  # nothing changed: nothing renders
    said = json.loads(capsys.readouterr().out)
    assert sent == [] and said["rendered"] == [] and sorted(said["skipped"]) == sorted(map(str, scripts.values()))
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == stamps  # nothing rewritten
    scripts["text"].write_text("A different story.\n", encoding="utf-8")  # one script's text changes
    assert main(ray_render(list(scripts.values()), out, ref_wav)) == 0
    said = json.loads(capsys.readouterr().out)
    assert sent.pop() == said["rendered"] == [str(scripts["text"])] and len(said["skipped"]) == 4, said
    changes = {"seed": ["--seed", "5"], "steps": ["--num-step", "3"], "voice": ["--ref-text", "Another transcript."]}
    for name, change in changes.items():  # a script that differs from its first run in one setting only
        assert main(ray_render([scripts[name]], out, ref_wav, *change)) == 0, name
        said = json.loads(capsys.readouterr().out)
        assert sent.pop() == said["rendered"] == [str(scripts[name])] and said["skipped"] == [], (name, said)
    assert main(ray_render([scripts["seed"]], out, ref_wav)) == 0  # and unchanged again: done
    assert sent == [] and json.loads(capsys.readouterr().out)["skipped"] == [str(scripts["seed"])]
    assert main(ray_render([scripts["seed"]], out, ref_wav, *captions)) == 0  # its captions are there: done
    assert sent == [] and json.loads(capsys.readouterr().out)["skipped"] == [str(scripts["seed"])]
    assert main(ray_render([scripts["seed"]], out, ref_wav, "--captions", "vtt", "--captions-estimate")) == 0
    said = json.loads(capsys.readouterr().out)
    assert sent.pop() == said["rendered"] == [str(scripts["seed"])]  # captions it does not have: rendered again

    monkeypatch.setattr(render_ray, "_render_on_ray", real)
    assert main(ray_render([scripts["threads"]], out, ref_wav, "--workers", "1", "--threads-per-worker", "1")) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["rendered"] == [str(scripts["threads"])] and said["skipped"] == []
    assert (said["threads"], said["local_threads"], said["same_as_local_render"]) == (1, 2, False)
    engine = json.loads((out / "threads.wav.json").read_text())["engine"]
    assert engine["threads"] == 1 and "may" in engine["note"]
    assert (out / "threads.wav").read_bytes() != (local / "threads.wav").read_bytes()  # what one thread changes


class FlakyRenderer:
    """A worker whose renders of scripts named 'bad*' fail (as a model error would)."""

    def __init__(self, spec: Any) -> None:
        from omnistudio.cluster.batch import Renderer

        self.inner = Renderer(spec)

    def render(self, script: Any, name: str) -> Any:
        if Path(name).name.startswith("bad"):
            raise RuntimeError("kaboom")
        return self.inner.render(script, name)


def test_a_failed_script_is_named_and_the_others_finish(tmp_path: Path, ref_wav: Path, local_ray: Any) -> None:
    from dataclasses import replace

    from omnistudio.cluster.batch import RenderSpec, plan_jobs, render_batch
    from omnistudio.script import parse_script
    from omnistudio.take.options import TakeOptions
    from omnistudio.voices.resolve import VoiceRef

    scripts = []
    for name in ("good1", "bad", "good2"):
        scripts.append(tmp_path / f"{name}.txt")
        scripts[-1].write_text(f"This is {name}.\n", encoding="utf-8")
    options = TakeOptions(num_step=2, voice=VoiceRef.recording_of(ref_wav, REF_TEXT)).validated()
    spec = RenderSpec(engine=EngineConfig("tiny", "cpu", threads=1), options=options,
                      ref_bytes=ref_wav.read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    jobs = [replace(job, parsed=parse_script(job.text)) for job in plan_jobs(scripts, out)]
    report = render_batch(local_ray, spec, jobs, workers=1, cpus=0.5, gpus=0, renderer=FlakyRenderer)
    assert list(report.failed) == [str(scripts[1])] and "kaboom" in report.failed[str(scripts[1])]
    assert sorted(report.rendered) == [str(scripts[0]), str(scripts[2])]
    assert sorted(p.name for p in out.iterdir()) == ["good1.wav", "good1.wav.json", "good2.wav", "good2.wav.json"]
