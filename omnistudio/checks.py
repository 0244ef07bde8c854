"""Checks of plain values that every layer takes from users (a leaf: imports nothing of the package
but errors). Each returns the clean value or raises :class:`UserError` with one line."""

from __future__ import annotations

import math
from typing import Any

from omnistudio.errors import UserError

LANGUAGES = {"en": "English", "es": "Spanish"}
NUM_STEP_RANGE = (1, 100)
DEFAULT_NUM_STEP = 10
MAX_TEXT_CHARS = 20_000
MAX_BATCH = 16  # sentences in one diffusion pass


def check_text(text: str | None) -> str:
    if text is None or not text.strip():
        raise UserError("the text is empty")
    if len(text) > MAX_TEXT_CHARS:
        raise UserError(f"the text is {len(text)} characters; the limit is {MAX_TEXT_CHARS}")
    return text.strip()


def check_language(lang: str | None) -> str:
    code = (lang or "").strip().lower()
    if code not in LANGUAGES:
        raise UserError(f"unknown language '{lang}': use one of {', '.join(LANGUAGES)}")
    return code


def check_num_step(num_step: Any) -> int:
    lo, hi = NUM_STEP_RANGE
    try:
        value = int(str(num_step).strip())
    except ValueError:
        raise UserError(f"num_step must be a whole number, got '{num_step}'") from None
    if not lo <= value <= hi:
        raise UserError(f"num_step {value} is out of range {lo}..{hi}")
    return value


def check_seed(seed: Any) -> int:
    try:
        value = int(str(seed).strip())
    except ValueError:
        raise UserError(f"seed must be a whole number, got '{seed}'") from None
    if not 0 <= value < 2**63:
        raise UserError(f"seed {seed} is out of range 0..2^63-1")
    return value


def check_batch(value: Any, name: str = "batch size", lo: int = 1, hi: int = MAX_BATCH) -> int:
    """A batch size in ``lo..hi``, or one line naming it as ``name`` (the flag, e.g. ``--max-batch``)."""
    batch = int(value)
    if not lo <= batch <= hi:
        raise UserError(f"{name} {value} is out of range {lo}..{hi}")
    return batch


GUIDANCE_RANGE = (0.0, 20.0)


def check_number(value: Any, lo: float, hi: float, not_a_number: str, out_of_range: str) -> float:
    """``value`` as a finite float in ``lo..hi``, or a UserError with the matching message."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError(not_a_number) from None
    if not math.isfinite(number) or not lo <= number <= hi:
        raise UserError(out_of_range)
    return number


def check_guidance(value: Any) -> float:
    """Classifier-free guidance scale: a finite number in 0..20, or one clear line."""
    lo, hi = GUIDANCE_RANGE
    return check_number(value, lo, hi, f"guidance must be a number in {lo:g}..{hi:g}, got '{value}'",
                        f"guidance {value} is outside {lo:g}..{hi:g} (2 is the usual value)")


def check_alpha(alpha: Any) -> float:
    """alpha as a float in [0, 1], or one clear line."""
    return check_number(alpha, 0.0, 1.0, f"blend alpha must be a number in [0, 1], got '{alpha}'",
                        f"blend alpha {alpha} is outside [0, 1]")


def check_pair(a: str, b: str) -> None:
    """Two different anchors, or one clear line."""
    if a.strip().lower() == b.strip().lower():
        raise UserError(f"cannot blend anchor '{a}' with itself: pick two different anchors")
