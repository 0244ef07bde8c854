"""Checks of plain values that every layer takes from users (a leaf: imports nothing of the package
but errors). Each returns the clean value or raises :class:`UserError` with one line."""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import SupportsFloat, SupportsIndex, SupportsInt

from omnistudio.errors import UserError

LANGUAGES = {"en": "English", "es": "Spanish"}
NUM_STEP_RANGE = (1, 100)
DEFAULT_NUM_STEP = 10
MAX_TEXT_CHARS = 20_000
MAX_BATCH = 16  # sentences in one diffusion pass
MAX_KEY_FILE_BYTES = 64 << 10  # an API key file: a few keys, one per line
# A pronunciation lexicon: what one entry may say (well under a sentence), how many entries, how big a file.
MAX_LEXICON_WORD_CHARS = 100
MAX_LEXICON_SAY_CHARS = 300
MAX_LEXICON_ENTRIES = 10_000
MAX_LEXICON_FILE_BYTES = 8 << 20
_SURROGATE = re.compile("[\ud800-\udfff]")
# What int() and float() take (a flag's text, a JSON number): the checks below turn anything else into one line.
IntLike = str | SupportsInt | SupportsIndex
FloatLike = str | SupportsFloat | SupportsIndex


def check_audio_file(path: Path) -> Path:
    """``path`` if it is a regular file, else one line saying what it is (a folder, a FIFO, a device: a
    command that reads an audio file reads it whole, seeking; not "no such file" for a path that exists)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UserError(f"no such file: {path}") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    for test, kind in kinds:
        if test(mode):
            raise UserError(f"{path} is {kind}, not an audio file: give the path of a WAV, FLAC, MP3 or M4A file")
    return path


def check_unicode(text: str, what: str = "the text") -> str:
    """Refuse text that cannot be UTF-8: bytes that were not UTF-8 (a command-line argument in another
    encoding arrives as lone surrogates U+DC80..U+DCFF) or a lone surrogate (a JSON ``\\ud800``)."""
    found = _SURROGATE.search(text)
    if found is None:
        return text
    char = ord(found.group())
    if 0xDC80 <= char <= 0xDCFF:
        raise UserError(f"{what} is not valid UTF-8: byte 0x{char - 0xDC00:02X} at character {found.start() + 1} "
                        "(save or type it as UTF-8)")
    raise UserError(f"{what} holds a lone surrogate U+{char:04X} at character {found.start() + 1} (not text)")


def read_small_text(path: Path | str, what: str, max_bytes: int) -> str:
    """A small regular file's UTF-8 text (a key file): see :func:`read_small_file`."""
    data = read_small_file(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{what} {Path(path).expanduser()} is not UTF-8 text") from None


def read_small_file(path: Path | str, what: str, max_bytes: int) -> bytes:
    """A small regular file's bytes (a key file, a lexicon): a FIFO, a device or a folder is refused
    without blocking, and so is a file over ``max_bytes``, before it is read whole."""
    path = Path(path).expanduser()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise UserError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{what} {path} is not a regular file")
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise UserError(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > max_bytes:
        raise UserError(f"{what} {path} is over {max_bytes} bytes: is it the right file?")
    return data


def key_lines(path: Path | str) -> list[str]:
    """The keys in an API key file: its non-blank lines not starting with ``#``, stripped."""
    text = read_small_text(path, "the API key file", MAX_KEY_FILE_BYTES)
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def check_text(text: str | None, what: str = "the text") -> str:
    if text is None or not text.strip():
        raise UserError(f"{what} is empty")
    if len(text) > MAX_TEXT_CHARS:
        raise UserError(f"{what} is {len(text)} characters; the limit is {MAX_TEXT_CHARS}")
    return check_unicode(text.strip(), what)


def check_language(lang: str | None) -> str:
    code = (lang or "").strip().lower()
    if code not in LANGUAGES:
        raise UserError(f"unknown language '{lang}': use one of {', '.join(LANGUAGES)}")
    return code


def check_num_step(num_step: object) -> int:
    lo, hi = NUM_STEP_RANGE
    try:
        value = int(str(num_step).strip())
    except ValueError:
        raise UserError(f"num_step must be a whole number, got '{num_step}'") from None
    if not lo <= value <= hi:
        raise UserError(f"num_step {value} is out of range {lo}..{hi}")
    return value


def check_seed(seed: object) -> int:
    try:
        value = int(str(seed).strip())
    except ValueError:
        raise UserError(f"seed must be a whole number, got '{seed}'") from None
    if not 0 <= value < 2**63:
        raise UserError(f"seed {seed} is out of range 0..2^63-1")
    return value


def check_batch(value: IntLike, name: str = "batch size", lo: int = 1, hi: int = MAX_BATCH) -> int:
    """A batch size in ``lo..hi``, or one line naming it as ``name`` (the flag, e.g. ``--max-batch``)."""
    batch = int(value)
    if not lo <= batch <= hi:
        raise UserError(f"{name} {value} is out of range {lo}..{hi}")
    return batch


GUIDANCE_RANGE = (0.0, 20.0)


def check_number(value: FloatLike, lo: float, hi: float, not_a_number: str, out_of_range: str) -> float:
    """``value`` as a finite float in ``lo..hi``, or a UserError with the matching message."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError(not_a_number) from None
    if not math.isfinite(number) or not lo <= number <= hi:
        raise UserError(out_of_range)
    return number


def check_guidance(value: FloatLike) -> float:
    """Classifier-free guidance scale: a finite number in 0..20, or one clear line."""
    lo, hi = GUIDANCE_RANGE
    return check_number(value, lo, hi, f"guidance must be a number in {lo:g}..{hi:g}, got '{value}'",
                        f"guidance {value} is outside {lo:g}..{hi:g} (2 is the usual value)")


def check_alpha(alpha: FloatLike) -> float:
    """alpha as a float in [0, 1], or one clear line."""
    return check_number(alpha, 0.0, 1.0, f"blend alpha must be a number in [0, 1], got '{alpha}'",
                        f"blend alpha {alpha} is outside [0, 1]")


def check_pair(a: str, b: str) -> None:
    """Two different anchors, or one clear line."""
    if a.strip().lower() == b.strip().lower():
        raise UserError(f"cannot blend anchor '{a}' with itself: pick two different anchors")
