"""OMNISTUDIO_HOME relocates every user file; without it, platformdirs decides."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnistudio.config import locations


def test_home_relocates_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path))
    loc = locations()
    for path in (loc.config, loc.data, loc.cache, loc.checkpoints, loc.prompts, loc.settings_file,
                 loc.autosave_file):
        assert tmp_path in path.parents


def test_platformdirs_without_home(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("OMNISTUDIO_HOME", raising=False)
    loc = locations()
    assert loc.config == Path(platformdirs.user_config_dir("omnistudio"))
    assert loc.cache == Path(platformdirs.user_cache_dir("omnistudio"))
