"""The one checker for the CLI's failure contract: one ``omnistudio:`` line on stderr, no traceback."""

from __future__ import annotations

import pytest


def one_line_error(capsys: pytest.CaptureFixture[str], needle: str = "", *, alone: bool = True) -> str:
    """The single ``omnistudio:`` line a failed command printed to stderr, holding ``needle``.

    ``alone``: nothing else on stderr either (False where a progress display may have drawn before the error)."""
    full = capsys.readouterr().err
    lines = [line for line in full.splitlines() if line.startswith("omnistudio:")]
    assert len(lines) == 1 and "Traceback" not in full and "internal error" not in full, full
    assert needle in lines[0], full
    if alone:
        assert full.strip() == lines[0], full
    return lines[0]
