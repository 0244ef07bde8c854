"""What a delivered file says about itself, in the chunks broadcast tools read (EBU Tech 3285 and kin).

- ``bext`` version 2: description, originator, its reference (EBU R99's USID, one per distinct file),
  origination date and time,
  the coding history, and the loudness fields our own finishing pass measured (integrated loudness,
  loudness range, maximum true peak, maximum momentary and short-term loudness, each x100 as int16;
  0x7FFF where a figure is not defined, e.g. a silent file);
- ``iXML``: project, scene (the script or the story), take, a note, and the reproducibility fields
  (voice, seed, model, engine...) as USER lines;
- ``cue `` with a ``LIST``/``adtl`` chunk: one cue point per sentence labelled with its first words
  (``labl``), and a region per story (``ltxt`` with its length, purpose ``rgn ``), which Reaper,
  Pro Tools, Audition and Audacity show as markers.

:func:`read_broadcast` reads them back (``analyze``): a damaged ``bext`` or ``iXML`` in a user's file is
one line naming the chunk, never a traceback.
"""

from __future__ import annotations

import hashlib
import math
import os
import platform
import struct
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape as _xml_escape

from defusedxml import ElementTree

from omnistudio import __version__
from omnistudio.errors import UserError, shown

if TYPE_CHECKING:
    from omnistudio.audio.loudness import LoudnessReport

BEXT_FIXED = 602  # bytes before the coding history (EBU Tech 3285 v2)
DATA_OVERRUN = b"data>"  # riff_chunks' note of a data chunk claiming more than the file holds: (claimed, held)
NOT_SET = 0x7FFF  # a loudness field that is not known
LABEL_WORDS = 6  # a sentence marker's label: its first words


@dataclass(frozen=True)
class Marker:
    """A point (a sentence) or, with ``end_s``, a region (a story) in the file, in seconds."""

    start_s: float
    label: str
    end_s: float | None = None


@dataclass(frozen=True)
class Broadcast:
    """What a delivered file says about itself: its description, where it comes from, its markers."""

    description: str = ""
    originator: str = "OmniStudio"
    reference: str = ""  # the take (iXML TAKE)
    title: str = ""  # tags of MP3, M4A and FLAC (the script's or project's name)
    artist: str = ""  # the voice
    project: str = ""
    scene: str = ""
    note: str = ""
    user: tuple[tuple[str, str], ...] = ()  # iXML USER lines: the reproducibility fields
    markers: tuple[Marker, ...] = ()  # a cue per sentence, a region per story
    chapters: tuple[Marker, ...] = ()  # where chapters start (stories, else paragraphs), for MP3/M4A/FLAC
    created: datetime | None = field(default_factory=lambda: created_now()[0])  # bext's origination date
    timed: bool = field(default_factory=lambda: created_now()[1])  # and its time (see created_now)
    usid: str = ""  # bext's OriginatorReference, EBU R99's USID; "": one made from what the file says (usid)


@dataclass(frozen=True)
class LoudnessFields:
    """bext v2's loudness figures (LUFS, LU, dBTP)."""

    integrated_lufs: float
    loudness_range_lu: float
    true_peak_dbtp: float
    momentary_max_lufs: float
    short_term_max_lufs: float

    @classmethod
    def of(cls, report: LoudnessReport) -> LoudnessFields:
        return cls(report.integrated_lufs, report.loudness_range_lu, report.true_peak_dbtp,
                   report.momentary_max_lufs, report.short_term_max_lufs)


USID_ENV = "OMNISTUDIO_USID_ORIGIN"  # "CCOOO": the ISO 3166 country and EBU R99 organisation code
USID_ORIGIN = "XXOMS"  # no country, OmniStudio's three letters, until a site sets its own


def usid(info: Broadcast, samples: bytes = b"") -> str:
    """EBU R99's Unique Source Identifier of a file: country (2) and organisation (3) from
    ``OMNISTUDIO_USID_ORIGIN``, this machine's serial (12: a hash of its name), the time it was made
    (HHMMSS; 000000 where the file carries its date alone, see :func:`created_now`) and 9 digits drawn
    from a hash of the file itself: ``samples`` (a digest of them) and everything it says of itself. Two
    stories, two takes, the same take at two settings: two references; the same take written twice:
    the same bytes, as everywhere else in a delivery."""

    origin = os.environ.get(USID_ENV, "").strip().upper()
    origin = origin if len(origin) == 5 and origin.isalnum() and origin.isascii() else USID_ORIGIN
    serial = hashlib.sha256(platform.node().encode()).hexdigest()[:12].upper()
    when = f"{info.created:%H%M%S}" if info.created is not None and info.timed else "000000"
    said = repr((info.description, info.reference, info.title, info.artist, info.project, info.scene, info.note,
                 info.user, info.markers, info.chapters)).encode()
    digits = int(hashlib.sha256(samples + said).hexdigest(), 16) % 10**9
    return f"{origin}{serial}{when}{digits:09d}"


def created_now() -> tuple[datetime, bool]:
    """When a file is made, and whether the time of day counts: ``SOURCE_DATE_EPOCH`` (the reproducible
    builds' convention: date and time) when it is set, else today's date alone, so the same samples
    rendered twice on one day give the same bytes (the sidecar keeps the render's timings)."""

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), tz=UTC).replace(tzinfo=None), True
    return datetime.now().replace(hour=0, minute=0, second=0, microsecond=0), False


def label(text: str, words: int = LABEL_WORDS) -> str:
    """A marker's label: the first words of a sentence (with an ellipsis when there are more)."""
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


# ------------------------------------------------------------------------------------------ writing
def _ascii(text: str, size: int) -> bytes:
    """``text`` as bext's ASCII field of ``size`` bytes: accents dropped (García: Garcia), the rest '?'."""

    plain = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    data = plain.encode("ascii", "replace")[:size]
    return data + b"\0" * (size - len(data))


def _x100(value: float) -> int:
    return NOT_SET if not math.isfinite(value) else max(-32768, min(32767, int(round(value * 100))))


def bext_chunk(info: Broadcast, sample_rate: int, loudness: LoudnessFields | None = None,
               pcm: str = "PCM_FLOAT", bits: int = 32, channels: int = 1) -> bytes:
    """The ``bext`` chunk (header included), loudness fields ``NOT_SET`` until they are known; the coding
    history's mode (EBU R98) is ``mono``, or ``dual-mono`` for the voice on two channels."""

    mode = "dual-mono" if channels == 2 else "mono"
    history = f"A={pcm},F={sample_rate},W={bits},M={mode},T=OmniStudio {__version__}\r\n"
    values = (NOT_SET,) * 5 if loudness is None else tuple(_x100(v) for v in (
        loudness.integrated_lufs, loudness.loudness_range_lu, loudness.true_peak_dbtp,
        loudness.momentary_max_lufs, loudness.short_term_max_lufs))
    body = (_ascii(info.description, 256) + _ascii(info.originator, 32) + _ascii(info.usid or usid(info), 32)
            + _ascii(_date(info), 10) + _ascii(_time(info), 8)
            + struct.pack("<IIH", 0, 0, 2) + b"\0" * 64 + struct.pack("<5h", *values) + b"\0" * 180
            + history.encode("ascii"))
    return chunk(b"bext", body)


def _date(info: Broadcast) -> str:
    return info.created.strftime("%Y-%m-%d") if info.created is not None else ""


def _time(info: Broadcast) -> str:
    return info.created.strftime("%H:%M:%S") if info.created is not None and info.timed else ""


def wav_header(info: Broadcast, sample_rate: int, frames: int, *, float32: bool = True,
               loudness: LoudnessFields | None = None, tail: int = 0, channels: int = 1, bits: int | None = None) -> bytes:
    """Everything of a Broadcast Wave file before its samples: ``RIFF``, ``fmt `` (32-bit float, or
    ``bits``-bit PCM: 16 or 24), ``fact`` (float), ``bext``, ``iXML`` and the ``data`` chunk's header; ``tail``:
    the bytes of the chunks that follow the samples (:func:`cue_chunks`). Its length does not depend on
    ``frames``, ``loudness`` or ``tail``: a writer writes it first and again, filled in, when the file is done."""
    bits = (32 if float32 else 16) if bits is None else bits
    is_float = bits == 32
    align = channels * bits // 8
    data = frames * align
    fmt = struct.pack("<HHIIHH", 3 if is_float else 1, channels, sample_rate, sample_rate * align, align, bits)
    body = (chunk(b"fmt ", fmt + (struct.pack("<H", 0) if is_float else b""))
            + (chunk(b"fact", struct.pack("<I", frames)) if is_float else b"")
            + bext_chunk(info, sample_rate, loudness, "PCM_FLOAT" if is_float else "PCM", bits, channels)
            + ixml_chunk(info, channels))
    riff = 4 + len(body) + 8 + data + data % 2 + tail
    return b"RIFF" + struct.pack("<I", riff) + b"WAVE" + body + b"data" + struct.pack("<I", data)


def wav_file(samples: bytes, info: Broadcast, sample_rate: int, *, float32: bool = False,
             loudness: LoudnessFields | None = None) -> bytes:
    """A whole Broadcast Wave file of mono ``samples`` (little-endian int16, or float32), in memory."""

    frames = len(samples) // (4 if float32 else 2)
    info = replace(info, usid=info.usid or usid(info, hashlib.sha256(samples).digest()))
    tail = cue_chunks(info.markers, sample_rate)
    pad = b"\0" if len(samples) % 2 else b""
    return (wav_header(info, sample_rate, frames, float32=float32, loudness=loudness, tail=len(tail))
            + samples + pad + tail)


def ixml_chunk(info: Broadcast, channels: int = 1) -> bytes:
    def escape(text: str) -> str:  # XML's escapes, and the characters XML 1.0 cannot hold as visible escapes
        return _xml_escape("".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 and c not in "\t\n\r" else c for c in text))

    user = "\n".join(f"{key}={value}" for key, value in info.user)
    fields = (("IXML_VERSION", "2.10"), ("PROJECT", info.project), ("SCENE", info.scene), ("TAKE", info.reference),
              ("NOTE", info.note), ("USER", user))
    name = escape(info.artist or "voice")
    sides = ("",) if channels == 1 else (" L", " R")
    tracks = (f"<TRACK_LIST><TRACK_COUNT>{channels}</TRACK_COUNT>" + "".join(
        f"<TRACK><CHANNEL_INDEX>{n}</CHANNEL_INDEX><INTERLEAVE_INDEX>{n}</INTERLEAVE_INDEX><NAME>{name}{side}</NAME>"
        "</TRACK>" for n, side in enumerate(sides, start=1)) + "</TRACK_LIST>")
    xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<BWFXML>'
           + "".join(f"<{tag}>{escape(value)}</{tag}>" for tag, value in fields) + tracks + "</BWFXML>\n")
    return chunk(b"iXML", xml.encode("utf-8"))


def cue_chunks(markers: Sequence[Marker], sample_rate: int) -> bytes:
    """``cue `` (every marker's position) and ``LIST``/``adtl`` (each one's label; a region's length)."""
    if not markers:
        return b""
    points = b"".join(struct.pack("<II4sIII", n, _frame(m.start_s, sample_rate), b"data", 0, 0,
                                  _frame(m.start_s, sample_rate)) for n, m in enumerate(markers, start=1))
    adtl = b"adtl"
    for n, marker in enumerate(markers, start=1):
        text = marker.label.encode("utf-8") + b"\0"
        if marker.end_s is None:
            adtl += chunk(b"labl", struct.pack("<I", n) + text)
        else:
            length = max(0, _frame(marker.end_s, sample_rate) - _frame(marker.start_s, sample_rate))
            adtl += chunk(b"ltxt", struct.pack("<II4sHHHH", n, length, b"rgn ", 0, 0, 0, 0))
            adtl += chunk(b"labl", struct.pack("<I", n) + text)
    return chunk(b"cue ", struct.pack("<I", len(markers)) + points) + chunk(b"LIST", adtl)


def chunk(kind: bytes, body: bytes) -> bytes:
    """A RIFF chunk: its id, size, body and the pad byte an odd size takes."""
    return kind + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")


def _frame(seconds: float, sample_rate: int) -> int:
    return max(0, int(round(seconds * sample_rate)))


# ------------------------------------------------------------------------------------------ reading
@dataclass(frozen=True)
class ReadBack:
    """What a WAV's broadcast chunks hold (any of them may be missing)."""

    description: str | None = None
    originator: str | None = None
    reference: str | None = None
    loudness: dict[str, float | None] = field(default_factory=dict)  # bext v2's figures (None: not set)
    ixml: dict[str, str] = field(default_factory=dict)
    markers: tuple[Marker, ...] = ()
    warnings: tuple[str, ...] = ()  # damage that still lets the samples be read (said once, with the figures)


def read_broadcast(path: Path, sample_rate: int) -> ReadBack:
    """The broadcast chunks of the WAV at ``path``; a damaged one is a UserError naming it."""
    chunks = riff_chunks(path)
    if chunks is None:
        return ReadBack()
    out = ReadBack()
    if b"bext" in chunks:
        out = _read_bext(chunks[b"bext"], path)
    if b"iXML" in chunks:
        out = replace(out, ixml=_read_ixml(chunks[b"iXML"], path))
    if b"cue " in chunks:
        out = replace(out, markers=_read_cues(chunks[b"cue "], chunks.get(b"LIST", b""), sample_rate, path))
    if DATA_OVERRUN in chunks:
        claimed, held = struct.unpack("<QQ", chunks[DATA_OVERRUN])
        if claimed != 0xFFFFFFFF:  # not a stream's placeholder: a size that is wrong
            out = replace(out, warnings=(f"its data chunk claims {claimed:,} bytes but the file holds {held:,} after "
                                         "its header: measured to the end of the file, which may not be audio",))
    return out


def riff_chunks(path: Path) -> dict[bytes, bytes] | None:
    """The chunks of a RIFF/WAVE file other than its audio (None: not a RIFF file); a chunk that runs past
    the file's end is one line."""
    with open(path, "rb") as fh:
        head = fh.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None
        found: dict[bytes, bytes] = {}
        size = path.stat().st_size
        while True:
            header = fh.read(8)
            if len(header) < 8:
                return found
            kind, length = header[:4], struct.unpack("<I", header[4:])[0]
            if fh.tell() + length > size:
                if kind == b"data":  # a stream written without its final size (or a damaged size): the rest
                    found[DATA_OVERRUN] = struct.pack("<QQ", length, size - fh.tell())
                    return found
                raise UserError(f"{path}: its {kind.decode('latin-1')!r} chunk runs past the end of the file")
            if kind == b"data":
                fh.seek(length + length % 2, 1)
                continue
            if kind == b"LIST" and kind in found:
                found[kind] += fh.read(length)[4:]  # several LIST chunks: their lists one after another
            else:
                found[kind] = fh.read(length)
            if length % 2:
                fh.read(1)


def _read_bext(body: bytes, path: Path) -> ReadBack:
    if len(body) < BEXT_FIXED:
        raise UserError(f"{path}: its bext chunk is damaged ({len(body)} bytes; a bext chunk holds at least "
                        f"{BEXT_FIXED})")

    def text(start: int, size: int) -> str:
        return body[start:start + size].split(b"\0", 1)[0].decode("ascii", "replace").strip()

    version = struct.unpack("<H", body[346:348])[0]
    loudness: dict[str, float | None] = {}
    if version >= 2:
        keys = ("integrated_lufs", "loudness_range_lu", "true_peak_dbtp", "momentary_max_lufs", "short_term_max_lufs")
        values = struct.unpack("<5h", body[412:422])
        loudness = {k: (None if v == NOT_SET else v / 100) for k, v in zip(keys, values)}
    return ReadBack(description=shown(text(0, 256)), originator=shown(text(256, 32)),
                    reference=shown(text(288, 32)), loudness=loudness)


def _read_ixml(body: bytes, path: Path) -> dict[str, str]:
    try:
        root = ElementTree.fromstring(body.rstrip(b"\0"))
    except Exception as exc:  # noqa: BLE001 - any parse failure (not XML, a DTD) is a damaged chunk
        raise UserError(f"{path}: its iXML chunk is damaged ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else 'not XML'})") from None
    return {shown(child.tag): "\n".join(shown(line) for line in (child.text or "").split("\n")) for child in root}


def _read_cues(cues: bytes, listing: bytes, sample_rate: int, path: Path) -> tuple[Marker, ...]:
    if len(cues) < 4 or len(cues) < 4 + 24 * struct.unpack("<I", cues[:4])[0]:
        raise UserError(f"{path}: its cue chunk is damaged (shorter than its count of points)")
    count = struct.unpack("<I", cues[:4])[0]
    positions = {}
    for n in range(count):
        ident, _pos, _chunk, _cs, _bs, offset = struct.unpack("<II4sIII", cues[4 + 24 * n: 28 + 24 * n])
        positions[ident] = offset
    labels: dict[int, str] = {}
    lengths: dict[int, int] = {}
    at = 4 if listing[:4] == b"adtl" else len(listing)
    while at + 8 <= len(listing):
        kind, length = listing[at:at + 4], struct.unpack("<I", listing[at + 4:at + 8])[0]
        if at + 8 + length > len(listing):
            raise UserError(f"{path}: its LIST/adtl chunk is damaged (a {kind.decode('latin-1')!r} entry of "
                            f"{length} bytes runs past the list's {len(listing)})")
        body = listing[at + 8:at + 8 + length]
        if kind == b"labl" and len(body) >= 4:
            labels[struct.unpack("<I", body[:4])[0]] = shown(body[4:].split(b"\0", 1)[0].decode("utf-8", "replace"))
        elif kind == b"ltxt" and len(body) >= 8:
            ident, frames = struct.unpack("<II", body[:8])
            lengths[ident] = frames
        at += 8 + length + length % 2
    return tuple(Marker(positions[i] / sample_rate, labels.get(i, ""),
                        (positions[i] + lengths[i]) / sample_rate if i in lengths else None)
                 for i in sorted(positions, key=lambda k: (positions[k], k)))
