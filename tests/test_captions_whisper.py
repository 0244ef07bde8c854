"""Caption words measured by the real Whisper model through the file sink: a take of flite speech (real
speech standing in for the model's), its English words aligned and its Spanish ones estimated (tiny.en
hears English only), the captions of the project's chosen takes equal the plain take's, and the
`captions` command reuses the words the take recorded. Whisper tier (TIERS)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnistudio.captions.formats import CaptionOptions, read_vtt
from omnistudio.cli import main
from omnistudio.take.link import Rendered, RenderItem
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import Take, build_take, plan
from omnistudio.take.sinks import FileSink
from omnistudio.voices.resolve import VoiceRef
from support.links import FakeLink
from support.speech import GOOD, MINISTER, flite

SCRIPT = f"[ruby] {GOOD}\n[ruby] {MINISTER}\n[ruby:es] Buenas noches.\n"
OPTIONS = TakeOptions(seed=5, voice=VoiceRef(anchor="ruby"))
CAPTIONS = CaptionOptions(("srt", "vtt"), vtt_words=True)


class FliteLink(FakeLink):
    """Renders each item as flite reads its text (the spoken form): real speech with known words."""

    def render(self, items: Sequence[RenderItem], options: TakeOptions, cancel: Any = None) -> list[Rendered]:
        self.calls.append([i.index for i in items])
        return [Rendered(i.index, np.concatenate([np.zeros(2400, np.float32), flite(i.text)]), None, 1) for i in items]


@pytest.fixture(autouse=True)
def needs_flite() -> None:
    if shutil.which("flite") is None:
        pytest.skip("Debian flite not installed: apt-get install flite (the CI test command does)")


def _sidecar_words(path: Path) -> list[list[dict[str, Any]]]:
    import json

    return [s["words"] for s in json.loads(path.with_name(path.name + ".json").read_text())["sentences"]]


def test_words_are_measured_where_whisper_hears_them_and_projects_caption_the_same(
        tmp_path: Path, whisper: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.projects.chosen import keep_rendered, write_chosen
    from omnistudio.projects.project import open_or_create

    link = FliteLink()
    plain = tmp_path / "plain.wav"
    build_take(link, SCRIPT, OPTIONS).run([FileSink(plain, captions=CAPTIONS, hearer=whisper)])
    words = _sidecar_words(plain)
    assert [w["text"] for w in words[0]] == GOOD.split() and [w["text"] for w in words[2]] == ["Buenas", "noches."]
    english = words[0] + words[1]
    assert sum(not w["estimated"] for w in english) >= 0.8 * len(english)  # heard and measured
    assert all(w["confidence"] is not None for w in english if not w["estimated"])
    assert all(w["estimated"] and w["confidence"] is None for w in words[2])  # tiny.en cannot hear Spanish
    cues = read_vtt(plain.with_suffix(".vtt").read_text(encoding="utf-8"))
    assert cues and all(list(c.word_starts) == sorted(set(c.word_starts)) for c in cues)

    # the same sentences as a project's chosen takes (24-bit FLAC), written by render --project's path
    planned = plan(SCRIPT, OPTIONS)
    project = open_or_create(tmp_path / "news.omniproj", SCRIPT, "en", "ruby")
    project.speak([p.said for p in planned])
    first = Take(link, planned, OPTIONS).run()
    keep_rendered(project, planned, first.chunks, OPTIONS, first.engine)
    proj = tmp_path / "proj.wav"
    write_chosen(project, planned, OPTIONS, proj, CAPTIONS, whisper)
    for fmt in ("srt", "vtt"):
        assert proj.with_suffix(f".{fmt}").read_bytes() == plain.with_suffix(f".{fmt}").read_bytes(), fmt

    # the captions command reuses the measured words the take recorded: the same files, no model loaded
    out = tmp_path / "again"
    out.mkdir()
    assert main(["captions", str(plain), "-o", str(out), "--captions-words"]) == 0
    for fmt in ("srt", "vtt"):
        assert (out / f"plain.{fmt}").read_bytes() == plain.with_suffix(f".{fmt}").read_bytes(), fmt
