"""`omnistudio render SCRIPT... --out-dir DIR --ray`: many scripts on Ray actors, equal to local renders.

One local Ray instance for the module (2 CPUs; workers hold 0.5 CPU each)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from omnistudio.cli import main  # noqa: E402
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


def test_six_scripts_on_two_workers_equal_local_renders_and_resume(
        tmp_path: Path, ref_wav: Path, local_ray: Any, capsys: pytest.CaptureFixture[str]) -> None:
    scripts = []
    for i, text in enumerate(LINES):
        scripts.append(tmp_path / f"story{i}.txt")
        scripts[-1].write_text(text + "\n", encoding="utf-8")
    local = tmp_path / "local"
    local.mkdir()
    for script in scripts:
        assert main(["render", str(script), "-o", str(local / f"{script.stem}.wav"), *common(ref_wav)]) == 0
    capsys.readouterr()

    out = tmp_path / "out"
    assert main(ray_render(scripts, out, ref_wav)) == 0
    first = json.loads(capsys.readouterr().out)
    assert sorted(first["rendered"]) == sorted(map(str, scripts)) and first["skipped"] == [] and not first["failed"]
    for script in scripts:
        name = f"{script.stem}.wav"
        assert (out / name).read_bytes() == (local / name).read_bytes(), name  # bit for bit
        source = json.loads((out / f"{name}.json").read_text())["source"]
        assert source["model"] == "tiny" and source["seed"] == 0 and source["voice"].startswith("rec:")
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no temp files left
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}

    assert main(ray_render(scripts, out, ref_wav)) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["rendered"] == [] and sorted(second["skipped"]) == sorted(map(str, scripts))
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == stamps  # nothing rewritten

    # A changed seed or script text is not "done": those render again.
    scripts[0].write_text("A different story.\n", encoding="utf-8")
    assert main(ray_render(scripts[:2], out, ref_wav, "--workers", "1")) == 0
    third = json.loads(capsys.readouterr().out)
    assert third["rendered"] == [str(scripts[0])] and third["skipped"] == [str(scripts[1])]


class FlakyRenderer:
    """A worker whose renders of scripts named 'bad*' fail (as a model error would)."""

    def __init__(self, spec: Any, threads: int = 1) -> None:
        from omnistudio.cluster.batch import Renderer

        self.inner = Renderer(spec, threads)

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
    spec = RenderSpec(model="tiny", device="cpu", dtype=None, sampler="fast", options=options,
                      ref_bytes=ref_wav.read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    jobs = [replace(job, parsed=parse_script(job.text)) for job in plan_jobs(scripts, out)]
    report = render_batch(local_ray, spec, jobs, workers=1, cpus=0.5, gpus=0, renderer=FlakyRenderer)
    assert list(report.failed) == [str(scripts[1])] and "kaboom" in report.failed[str(scripts[1])]
    assert sorted(report.rendered) == [str(scripts[0]), str(scripts[2])]
    assert sorted(p.name for p in out.iterdir()) == ["good1.wav", "good1.wav.json", "good2.wav", "good2.wav.json"]
