"""One run of ``omnistudio`` builds the options of the command it runs, not of every command: render's
finishing and caption flags import the DSP (scipy, torch), seconds that ``omnistudio normalize`` or
``voices list`` need not pay. ``--help`` still names every command."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from omnistudio.cli import COMMANDS, build_parser, main

# A fresh interpreter runs one light command and reports what it imported.
PROBE = """
import json, sys
from omnistudio.cli import main
code = main(["normalize", "21 %", "--lang", "es"])
print(json.dumps({"code": code, "modules": sorted(m for m in sys.modules if m.split(".")[0] in
                  ("scipy", "torch", "omnistudio"))}))
"""


def test_a_light_command_imports_only_its_own_options() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["code"] == 0
    assert "veintiún por ciento" in proc.stdout  # the command really ran
    modules = set(report["modules"])
    assert "omnistudio.commands.normalize" in modules
    others = {f"omnistudio.commands.{name}" for name in COMMANDS if name != "normalize"}
    assert not modules & others, f"other commands' options were built: {sorted(modules & others)}"
    assert not {m for m in modules if m.split(".")[0] in ("scipy", "torch")}, "normalize loaded scipy or torch"


def test_help_still_names_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    listed = capsys.readouterr().out
    for name in COMMANDS:
        assert f"    {name}" in listed, f"--help does not name {name}"
    assert set(build_parser()._subparsers._group_actions[0].choices) == set(COMMANDS)  # type: ignore[union-attr]
    assert set(build_parser("render")._subparsers._group_actions[0].choices) == {"render"}  # type: ignore[union-attr]


def test_each_command_still_parses_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    """A command's own options, and an unknown one refused as before, through the one-command parser."""
    assert main(["normalize", "3", "--lang", "en", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["spoken"] == "three"
    with pytest.raises(SystemExit) as refused:
        main(["normalize", "3", "--lang", "en", "--no-such-option"])
    assert refused.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


VOICES_PROBE = """
import json, sys
from omnistudio.cli import main
code = main(["voices", "list", "--json"])
print(json.dumps({"code": code, "torch": "torch" in sys.modules}))
"""


def test_voices_list_judges_prompt_files_without_torch(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """`voices list` reads every prompt file it judges (its metadata and tokens checked), in numpy: a
    valid file and a damaged one are told apart, and torch (seconds of start-up) is never loaded."""
    import torch

    from omnistudio.voices.prompts import prompt_path, save_prompt
    from omnistudio.voices.state import AnchorPrompt

    home = tmp_path / "home"
    monkeypatch.setenv("OMNISTUDIO_HOME", str(home))
    good = prompt_path("ruby", "en")
    save_prompt(good, AnchorPrompt(torch.randint(0, 1024, (8, 30)), "Good evening.", 0.1, "ruby", "en",
                                   {"model_fingerprint": "another model", "source_sha256": "?"}))
    prompt_path("storm", "es").write_bytes(b"not a prompt")
    proc = subprocess.run([sys.executable, "-c", VOICES_PROBE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    report = json.loads(lines[-1])
    assert report == {"code": 0, "torch": False}
    listed = {a["id"]: a["prompts"] for a in json.loads(lines[-2])["anchors"]}
    assert listed["ruby"]["en"]["state"] == "stale"  # read and checked: made from another source
    assert listed["storm"]["es"]["state"] == "invalid" and "damaged" in listed["storm"]["es"]["why"]
    assert listed["ruby"]["es"]["state"] == "missing"


SERVE_PROBE = """
import json, sys
from omnistudio.cli import main
code = main(["serve", "--model", "tiny", "--port", "65536"])
print(json.dumps({"code": code, "loaded": sorted(m for m in ("torch", "scipy", "uvicorn", "omnistudio.server.pipeline")
                                                  if m in sys.modules)}))
"""


def test_a_refused_serve_says_why_before_the_servers_imports() -> None:
    """A port out of range (or in use, or a bad --max-queue) is one line before the server, the take
    pipeline and torch are imported: a refusal costs a fraction of a second, not a model stack's start."""
    proc = subprocess.run([sys.executable, "-c", SERVE_PROBE], capture_output=True, text=True, timeout=300)
    assert proc.stderr.strip().splitlines()[-1] == \
        "omnistudio: error: port 65536 is out of range 0..65535 (0: a free port the system picks)"
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"code": 2, "loaded": []}


@pytest.mark.parametrize(("argv", "line"), [
    (["sya", "hello"], "unknown command 'sya': did you mean 'say'?"),
    (["-v", "rendr", "x.txt"], "unknown command 'rendr': did you mean 'render'?"),
    (["zzz", "--help"], "unknown command 'zzz': the commands are say, render"),
])
def test_a_mistyped_command_says_so_and_suggests_the_nearest(argv: list[str], line: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Not the studio's "unrecognized arguments", nor the studio's help with exit 0."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"omnistudio: error: {line}")
    assert len(captured.err.splitlines()) == 1
