"""Tags, chapters and cue sheets of FLAC, MP3 and M4A files, written with mutagen once the audio is.

- FLAC: Vorbis comments (title, artist, description, the loudness figures, project/scene/take and the
  reproducibility fields), chapters as ``CHAPTERnnn``/``CHAPTERnnnNAME`` and a ``CUESHEET`` block with a
  track per sentence (at most 254: the format's limit; more are left to the sidecar);
- MP3: ID3v2 ``TIT2``/``TPE1``/``COMM`` and a ``CTOC`` with one ``CHAP`` per chapter;
- M4A: ``©nam``/``©ART``/``©cmt`` (its chapters are written by the muxer: mutagen cannot write MP4 chapters).

A chapter starts at a story, else at a paragraph (the writer's :class:`~omnistudio.audio.bwf.Broadcast`
says where), and ends where the next one starts.
"""

from __future__ import annotations

import struct
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

from omnistudio.audio.bwf import Broadcast, LoudnessFields

MAX_CUE_TRACKS = 254  # FLAC's cue sheet: 255 tracks, the last of them the lead-out


def chapter_spans(info: Broadcast, duration_s: float) -> list[tuple[float, float, str]]:
    """``(start_s, end_s, title)`` of each chapter: each ends where the next starts, the last at the end."""
    starts = sorted(info.chapters, key=lambda m: m.start_s)
    return [(m.start_s, starts[n + 1].start_s if n + 1 < len(starts) else max(m.start_s, duration_s), m.label)
            for n, m in enumerate(starts)]


def loudness_tags(loudness: LoudnessFields | None) -> dict[str, str]:
    """The loudness figures as tags (what ``bext`` v2 holds in a WAV)."""
    if loudness is None:
        return {}
    return {key: f"{value:.2f}" for key, value in (
        ("LOUDNESS_INTEGRATED_LUFS", loudness.integrated_lufs), ("LOUDNESS_RANGE_LU", loudness.loudness_range_lu),
        ("LOUDNESS_TRUE_PEAK_DBTP", loudness.true_peak_dbtp),
        ("LOUDNESS_MOMENTARY_MAX_LUFS", loudness.momentary_max_lufs),
        ("LOUDNESS_SHORT_TERM_MAX_LUFS", loudness.short_term_max_lufs)) if value == value and abs(value) != float("inf")}


def _clock(seconds: float) -> str:
    ms = int(round(seconds * 1000))
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def tag_flac(path: Path, info: Broadcast, loudness: LoudnessFields | None, frames: int, sample_rate: int) -> None:
    mutagen_flac: ModuleType = import_module("mutagen.flac")  # mutagen is untyped: its names are Any
    flac = mutagen_flac.FLAC(str(path))
    fields = {"TITLE": info.title, "ARTIST": info.artist, "DESCRIPTION": info.description,
              "ORGANIZATION": info.originator, "PROJECT": info.project, "SCENE": info.scene, "TAKE": info.reference,
              **loudness_tags(loudness), **{f"OMNISTUDIO_{key.upper()}": value for key, value in info.user}}
    for key, value in fields.items():
        if value:
            flac[key] = value
    for n, (start, _end, title) in enumerate(chapter_spans(info, frames / sample_rate), start=1):
        flac[f"CHAPTER{n:03d}"] = _clock(start)
        flac[f"CHAPTER{n:03d}NAME"] = title
    points = [m for m in info.markers if m.end_s is None][:MAX_CUE_TRACKS]
    if points:
        sheet = mutagen_flac.CueSheet(None)
        sheet.media_catalog_number, sheet.lead_in_samples, sheet.compact_disc = b"", 0, False
        for n, marker in enumerate(points, start=1):
            track = mutagen_flac.CueSheetTrack(n, min(frames, int(round(marker.start_s * sample_rate))))
            track.indexes = [mutagen_flac.CueSheetTrackIndex(1, 0)]
            sheet.tracks.append(track)
        sheet.tracks.append(mutagen_flac.CueSheetTrack(255, frames))  # the lead-out
        flac.metadata_blocks.append(sheet)
    flac.save()


def tag_mp3(path: Path, info: Broadcast, loudness: LoudnessFields | None, duration_s: float) -> None:
    id3: ModuleType = import_module("mutagen.id3")  # mutagen is untyped: its names are Any
    tags = id3.ID3(str(path)) if _has_id3(path) else id3.ID3()
    tags.delall("CHAP")
    tags.delall("CTOC")
    if info.title:
        tags.add(id3.TIT2(encoding=3, text=[info.title]))
    if info.artist:
        tags.add(id3.TPE1(encoding=3, text=[info.artist]))
    if info.description:
        tags.add(id3.COMM(encoding=3, lang="eng", desc="", text=[info.description]))
    for key, value in {**loudness_tags(loudness), **{f"OMNISTUDIO_{k.upper()}": v for k, v in info.user}}.items():
        tags.add(id3.TXXX(encoding=3, desc=key, text=[value]))
    spans = chapter_spans(info, duration_s)
    if spans:
        ids = [f"ch{n}" for n in range(1, len(spans) + 1)]
        tags.add(id3.CTOC(element_id="toc", flags=id3.CTOCFlags.TOP_LEVEL | id3.CTOCFlags.ORDERED, child_element_ids=ids,
                      sub_frames=[id3.TIT2(encoding=3, text=[info.title or "Chapters"])]))
        for ident, (start, end, title) in zip(ids, spans):
            tags.add(id3.CHAP(element_id=ident, start_time=int(round(start * 1000)), end_time=int(round(end * 1000)),
                          sub_frames=[id3.TIT2(encoding=3, text=[_chapter_title(title)])]))
    tags.save(str(path), v2_version=4)
    _order_chapters(path)


CHAPTER_TITLE_BYTES = 120  # FFmpeg lists no ID3 chapter whose title is 126 bytes or more: cut to what readers show


def _chapter_title(title: str) -> str:
    """``title`` cut (at a character, with an ellipsis) to CHAPTER_TITLE_BYTES of UTF-8."""
    if len(title.encode("utf-8")) <= CHAPTER_TITLE_BYTES:
        return title
    cut = title.encode("utf-8")[:CHAPTER_TITLE_BYTES - 3].decode("utf-8", "ignore").rstrip()
    return cut + "…"


def _order_chapters(path: Path) -> None:
    """Put the tag's ``CHAP`` frames in time order, in place (mutagen sorts frames by size; readers that
    list chapters as stored, ``ffprobe`` among them, then list them out of order). An ID3v2.4 tag."""

    def syncsafe(data: bytes) -> int:
        return (data[0] << 21) | (data[1] << 14) | (data[2] << 7) | data[3]

    with open(path, "r+b") as fh:
        head = fh.read(10)
        if head[:3] != b"ID3" or head[3] != 4:
            return
        body = fh.read(syncsafe(head[6:10]))
        frames, at = [], 0
        while at + 10 <= len(body) and body[at:at + 4].strip(b"\0"):
            size = syncsafe(body[at + 4:at + 8])
            frames.append(body[at:at + 10 + size])
            at += 10 + size
        chapters = [f for f in frames if f[:4] == b"CHAP"]

        def start(frame: bytes) -> int:
            end = frame.index(b"\0", 10)
            return int(struct.unpack(">I", frame[end + 1:end + 5])[0])

        ordered = iter(sorted(chapters, key=start))
        frames = [next(ordered) if f[:4] == b"CHAP" else f for f in frames]
        fh.seek(10)
        fh.write(b"".join(frames))


def _has_id3(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(3) == b"ID3"


def tag_m4a(path: Path, info: Broadcast, loudness: LoudnessFields | None) -> None:
    mp4_module: ModuleType = import_module("mutagen.mp4")  # mutagen is untyped: its names are Any
    mp4 = mp4_module.MP4(str(path))
    tags: Any = mp4.tags
    if tags is None:
        mp4.add_tags()
        tags = mp4.tags
    for key, value in (("\xa9nam", info.title), ("\xa9ART", info.artist), ("\xa9cmt", info.description)):
        if value:
            tags[key] = [value]
    for key, value in {**loudness_tags(loudness), **{f"OMNISTUDIO_{k.upper()}": v for k, v in info.user}}.items():
        tags[f"----:com.omnistudio:{key}"] = [value.encode("utf-8")]
    mp4.save()


def read_user_fields(path: Path, *keys: str) -> dict[str, str]:
    """The ``OMNISTUDIO_KEY`` fields the tagging above wrote into a FLAC, MP3 or M4A file, by key (those it
    holds; none for a file mutagen does not read), from one reading of its tags."""
    mutagen: ModuleType = import_module("mutagen")
    try:
        found: Any = mutagen.File(str(path))
    except Exception:  # noqa: BLE001 - a damaged tag block is not this question's to report
        return {}
    tags: Any = getattr(found, "tags", None)
    out: dict[str, str] = {}
    for key in keys if tags is not None else ():
        name = f"OMNISTUDIO_{key.upper()}"
        for candidate in (name, f"TXXX:{name}", f"----:com.omnistudio:{name}"):
            try:
                value = tags[candidate]
            except (KeyError, ValueError, TypeError):
                continue
            first = value.text[0] if hasattr(value, "text") else value[0]
            out[key] = first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)
            break
    return out
