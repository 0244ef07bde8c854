"""Studio settings, persisted as JSON in the user config folder (written atomically)."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from omnistudio.audio.profiles import RULES, LoudnessRule, check_profile
from omnistudio.checks import check_num_step, check_seed
from omnistudio.commit import write_json
from omnistudio.config import QUANTIZE, locations
from omnistudio.errors import UserError, first_line

log = logging.getLogger(__name__)

TARGETS = tuple(dict.fromkeys(rule.target_lufs for rule in RULES.values()))  # the loudness rules' targets
SPEED_RANGE = (0.5, 2.0)
GUIDANCE_RANGE = (0.0, 10.0)


def _float(name: str, value: Any, lo: float, hi: float) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise UserError(f"{name} must be a number, got '{value}'") from None
    if not math.isfinite(number) or not lo <= number <= hi:
        raise UserError(f"{name} {value} is out of range {lo:g}..{hi:g}")
    return number


def _dtype(value: Any) -> str:
    # lazy: start-up (the model stack: settings are read before the studio's first screen)
    from omnistudio.engine.model import DTYPES

    name = str(value or "auto").strip().lower()
    if name not in DTYPES:
        raise UserError(f"dtype '{value}': use {', '.join(DTYPES)}")
    return name


def _quantize(value: Any) -> str:
    name = str(value or "none").strip().lower()
    if name not in QUANTIZE:
        raise UserError(f"quantize '{value}': use {' or '.join(QUANTIZE)}")
    return name


@dataclass(frozen=True)
class StudioSettings:
    """Everything the settings screen edits."""

    num_step: int = 10
    guidance_scale: float = 2.0
    seed: int = 0
    seed_lock: bool = True  # False: a new seed for every render
    speed: float = 1.0
    room_tone: bool = True
    breaths: bool = True
    target_lufs: float = -23.0
    profile: str = ""  # the loudness rule (audio/profiles.py; it sets target_lufs); empty: the rule of target_lufs
    output_device: str = ""  # empty: the system default
    language: str = "en"
    anchor: str = ""
    dtype: str = "auto"  # backbone dtype at the next start: auto | fp32 | bf16 | fp16 (--dtype wins)
    quantize: str = "none"  # the backbone's linear layers at the next start: none | int8 (--quantize wins)
    server: str = ""  # a speech server's URL (`omnistudio serve`); empty: the model runs in this process
    api_key_file: str = ""  # the server's API key, in this file

    def validated(self) -> StudioSettings:
        """A copy with every field checked and normalised, or a UserError naming the bad one."""
        profile = str(self.profile or "").strip().lower()
        target = check_profile(profile).target_lufs if profile else _float("target loudness", self.target_lufs, -70.0, 0.0)
        server = str(self.server or "").strip()
        if server:
            # lazy: start-up (httpx, pydantic, urllib, websockets)
            from omnistudio.client.connection import parse_server_url

            server = parse_server_url(server).base
        if target not in TARGETS:
            raise UserError(f"target loudness {target:g} LUFS: use one of {', '.join(f'{t:g}' for t in TARGETS)}")
        return replace(
            self,
            num_step=check_num_step(self.num_step),
            guidance_scale=_float("guidance scale", self.guidance_scale, *GUIDANCE_RANGE),
            seed=check_seed(self.seed),
            speed=_float("speed", self.speed, *SPEED_RANGE),
            target_lufs=target, profile=profile,
            seed_lock=bool(self.seed_lock), room_tone=bool(self.room_tone), breaths=bool(self.breaths),
            output_device=str(self.output_device or "").strip(),
            server=server, api_key_file=str(self.api_key_file or "").strip(),
            language=self.language if self.language in ("en", "es") else "en",
            dtype=_dtype(self.dtype), quantize=_quantize(self.quantize),
        )

    def rule(self) -> LoudnessRule:
        """The loudness rule exports are made to: the profile, else the first rule with this target."""
        if self.profile:
            return check_profile(self.profile)
        return next((r for r in RULES.values() if r.target_lufs == self.target_lufs), RULES["ebu"])

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def settings_path() -> Path:
    return locations().settings_file


def load_settings(path: Path | None = None) -> tuple[StudioSettings, str | None]:
    """The saved settings, or the defaults plus a one-line warning when the file is unusable."""
    path = path or settings_path()
    if not path.exists():
        return StudioSettings(), None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        known = {f.name for f in fields(StudioSettings)}
        return StudioSettings(**{k: v for k, v in raw.items() if k in known}).validated(), None
    except (OSError, ValueError, TypeError, UserError) as exc:
        text = first_line(exc)
        log.warning("ignoring settings file %s: %s", path, text)
        return StudioSettings(), f"settings file {path} ignored ({text}); using defaults"


def save_settings(settings: StudioSettings, path: Path | None = None) -> Path:
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, settings.validated().as_dict())
    return path
