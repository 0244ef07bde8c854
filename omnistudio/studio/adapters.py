"""The studio's seams to the core modules that land separately (script, prompts, blend, finishing).

Each function here is the one place the studio touches such a module, with a small fallback for
when it is not there yet, so wiring changes stay in this file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omnistudio.errors import UserError



@dataclass(frozen=True)
class Sentence:
    """One sentence of the editor's text, with where it sits in that text."""

    index: int
    text: str
    speaker: str | None  # anchor id, a blend "a+b@0.7", or None for the selected anchor
    lang: str
    start: int  # character offsets in the source text
    end: int
    line: int = 1  # 1-based script line (sets the pause after it)


@dataclass(frozen=True)
class AnchorRow:
    id: str
    name: str
    langs: tuple[str, ...]
    state: dict[str, str]  # lang -> missing | ready | stale


def parse_script(text: str, lang: str = "en", speakers: Any = None) -> list[Sentence]:
    """Sentences of ``text`` with speaker, language and character offsets in ``text``."""
    from omnistudio.script import Script

    script = Script.parse(text, lang, speakers)
    line_starts = [0]
    for line in text.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    out: list[Sentence] = []
    pos = 0
    for s in script.sentences:
        begin = max(pos, line_starts[min(s.line - 1, len(line_starts) - 1)])
        found = text.find(s.text, begin)
        start, end = (found, found + len(s.text)) if found >= 0 else (begin, begin)
        out.append(Sentence(s.id, s.text, s.speaker, s.lang, start, end, s.line))
        pos = max(pos, end)
    return out


def load_anchor_rows(engine: Any = None) -> list[AnchorRow]:
    """The roster as picker rows, with each language's prompt state when it can be known."""
    from omnistudio.voices.roster import LANGS, load_roster

    roster = load_roster()
    try:
        states = _prompt_states(engine, roster)
    except Exception:  # noqa: BLE001 - the state column is advisory
        states = {}
    return [AnchorRow(a.id, a.name, tuple(LANGS), {lang: states.get((a.id, lang), "missing") for lang in LANGS})
            for a in roster.anchors.values()]


def _prompt_states(engine: Any, roster: Any) -> dict[tuple[str, str], str]:
    """ready: on the device; saved: a prompt file exists; otherwise missing (built on first use)."""
    from omnistudio.voices import prompts

    loaded = set(prompts.cache_for(engine).keys()) if engine is not None else set()
    folder = prompts.prompt_dir()
    saved = {p.name for p in folder.glob("*.omni_prompt.safetensors")} if folder.is_dir() else set()
    return {(a, lang): "ready" if (a, lang) in loaded else
            ("saved" if prompts.prompt_path(a, lang, folder).name in saved else "missing")
            for a, lang in roster.pairs()}


def start_prompts(engine: Any, progress: Any) -> str | None:
    """Load the saved prompts onto the device and warm up; a notice when there is nothing to warm with."""
    from omnistudio.voices import prompts, startup

    report = startup.start_prompts(engine, progress=progress, warm=False)
    if not len(prompts.cache_for(engine)):
        return "no voice prompts saved yet: each is built on first use (or run `omnistudio prevectorize`)"
    startup.warm_up(engine, progress=progress)
    errors = getattr(report, "errors", [])
    return f"{len(errors)} prompt file(s) could not be loaded (see the log)" if errors else None


def duos() -> list[tuple[str, str, float, tuple[str, ...]]]:
    from omnistudio.voices.roster import load_roster

    return [(d.anchors[0], d.anchors[1], d.ratio, tuple(d.langs)) for d in load_roster().duos]


def anchor_voice(engine: Any, anchor_id: str, lang: str, progress: Any = None) -> Any:
    try:
        from omnistudio.voices.prompts import anchor_prompt
    except ImportError:
        raise UserError("anchor voice prompts are not available yet (omnistudio.voices.prompts)") from None
    return anchor_prompt(engine, anchor_id, lang, progress=progress)


def blend_voice(engine: Any, a: str, b: str, lang: str, alpha: float) -> Any:
    from omnistudio.voices.blend import anchor_blend

    return anchor_blend(engine, a, b, lang, alpha)


def finishing_options(settings: Any) -> Any:
    """The studio settings as render finishing options (target loudness, room tone, breaths)."""
    from omnistudio.audio.finishing import FinishingOptions

    return FinishingOptions(target_lufs=settings.target_lufs, room_tone=settings.room_tone,
                            breaths=settings.breaths, seed=settings.seed)


def write_finished(path: Path, chunks: list[tuple[np.ndarray, float, int]], sample_rate: int, settings: Any,
                   timings: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """Stitch, normalise to the settings' target, write audio + sidecar; return (sidecar path, loudness)."""
    from omnistudio.audio.finishing import finish_render

    result = finish_render(chunks, sample_rate, path, finishing_options(settings), timings=timings)
    return result.sidecar_path, dict(result.sidecar.get("loudness", {}))
