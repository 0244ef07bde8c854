"""The MCP tools' output folder (mcp/folder.py), tested directly: a name is a plain name inside the folder, and
nothing that leads out of it is written or read: a sibling folder sharing the folder's name as a prefix, a link
one or two folders deep, a file name that is a link (the audio, its sidecar or its captions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnistudio.errors import UserError
from omnistudio.mcp.folder import OutputFolder


@pytest.fixture
def folder(tmp_path: Path) -> OutputFolder:
    (tmp_path / "out").mkdir()
    (tmp_path / "out-evil").mkdir()  # shares the prefix "out": a string-prefix check would let it in
    (tmp_path / "out-evil" / "x.wav").write_bytes(b"not ours")
    return OutputFolder(tmp_path / "out")


def test_links_into_a_sibling_that_shares_the_prefix_are_refused(folder: OutputFolder, tmp_path: Path) -> None:
    out, evil = tmp_path / "out", tmp_path / "out-evil"
    (out / "exit").symlink_to(evil, target_is_directory=True)
    (out / "x.wav").symlink_to(evil / "x.wav")
    (out / "sub").mkdir()
    (out / "sub" / "deeper").symlink_to(evil, target_is_directory=True)
    (out / "y.wav.json").symlink_to(evil / "y.json")  # the sidecar of y.wav
    (out / "z.srt").symlink_to(evil / "z.srt")  # the captions of z.wav
    for call in (lambda: folder.output("exit/a", "wav"), lambda: folder.output("x", "wav"),
                 lambda: folder.output("y", "wav"), lambda: folder.output("z", "wav"),
                 lambda: folder.existing("exit/x.wav"), lambda: folder.existing("x.wav")):
        with pytest.raises(UserError, match="leads out of the output folder"):
            call()
    with pytest.raises(UserError):
        folder.output("sub/deeper/a", "wav")  # two folders deep: refused either way
    with pytest.raises(ValueError):
        folder.name_of(evil / "x.wav")
    assert (evil / "x.wav").read_bytes() == b"not ours" and sorted(p.name for p in evil.iterdir()) == ["x.wav"]


def test_plain_names_and_links_that_stay_inside_are_fine(folder: OutputFolder, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "takes").mkdir()
    (out / "latest.wav").symlink_to(out / "takes" / "one.wav")  # a link that stays inside
    assert folder.output("news", "wav") == out / "news.wav"
    assert folder.output("takes/two", "flac") == out / "takes" / "two.flac"
    assert folder.output("latest", "wav") == out / "latest.wav"
    (out / "takes" / "one.wav").write_bytes(b"RIFF")
    assert folder.existing("latest.wav") == out / "latest.wav" and folder.name_of(out / "takes" / "one.wav") == \
        "takes/one.wav"
