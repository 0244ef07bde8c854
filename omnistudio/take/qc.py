"""A delivered file checked against a loudness rule (``analyze --profile``, ``render --report``): its
figures, what its broadcast chunks say (a damaged ``bext`` or iXML is one line), its stories and
sentences (sidecar, else cue markers), and the HTML report written beside it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from omnistudio.audio.bwf import ReadBack, read_broadcast
from omnistudio.audio.compliance import Compliance, check_blocks
from omnistudio.audio.loudness import MONO_MODES, open_audio
from omnistudio.audio.profiles import DEFAULT_PROFILE, RULES, LoudnessRule
from omnistudio.audio.report import html_writer
from omnistudio.audio.tags import read_user_fields
from omnistudio.commit import atomic_write_bytes


@dataclass(frozen=True)
class Recorded:
    """What a delivered file says it was made to: its loudness rule and how its loudness was measured."""

    profile: str | None = None
    measured_as: str | None = None


@dataclass(frozen=True)
class FileCheck:
    """One file's check: the compliance, its broadcast chunks and where its rows came from."""

    path: Path
    compliance: Compliance
    broadcast: ReadBack
    rows_from: str
    recorded: Recorded

    def as_dict(self) -> dict[str, object]:
        back = self.broadcast
        chunks = {"description": back.description, "originator": back.originator, "reference": back.reference,
                  "loudness": back.loudness, "ixml": back.ixml, "warnings": list(back.warnings),
                  "markers": [{"start_s": round(m.start_s, 4), "label": m.label,
                               **({"end_s": round(m.end_s, 4)} if m.end_s is not None else {})} for m in back.markers]}
        return {"file": str(self.path), **self.compliance.as_dict(), "rows_from": self.rows_from,
                "recorded": {"profile": self.recorded.profile, "measured_as": self.recorded.measured_as},
                "broadcast": chunks if back != ReadBack() else None}


def check_file(path: Path, rule: LoudnessRule | None = None, mono_as: str | None = None) -> FileCheck:
    """Measure the file at ``path`` against ``rule`` (UserError, one line, for a file that is not audio or
    whose broadcast chunks are damaged). Without ``rule`` or ``mono_as``, what the file records it was made to
    (:func:`recorded`), else EBU R128 and dual-mono; a one-channel file measured as mono is held to the rule's
    mono target."""
    # lazy: start-up (scipy)
    from omnistudio.take.file_sentences import file_segments

    with open_audio(path) as source:  # read in blocks: a ten-hour file is measured in flat memory
        rate, channels = source.sample_rate, source.channels
        broadcast = read_broadcast(path, rate)
        made = recorded(path, broadcast)
        if rule is None:
            rule = RULES.get(made.profile or "", RULES[DEFAULT_PROFILE])
        if mono_as is None:
            mono_as = made.measured_as if made.measured_as in MONO_MODES else "dual-mono"
        applied = rule.for_file(channels) if mono_as == "mono" else rule
        segments, rows_from = file_segments(path, source.frames / rate, broadcast.markers)
        compliance = check_blocks(source.blocks, rate, channels, applied, segments, mono_as)
    if source.warnings:
        broadcast = replace(broadcast, warnings=(*broadcast.warnings, *source.warnings))
    return FileCheck(path, compliance, broadcast, rows_from, made)


def recorded(path: Path, broadcast: ReadBack) -> Recorded:
    """The rule and measurement mode a file of ours records (a WAV's iXML USER lines, a FLAC/MP3/M4A's tags);
    nothing for anyone else's file."""
    if broadcast.ixml:
        fields = dict(line.partition("=")[::2] for line in broadcast.ixml.get("USER", "").splitlines())
        return Recorded(fields.get("profile") or None, fields.get("loudness_measurement") or None)
    if path.suffix.lower() in (".flac", ".mp3", ".m4a"):
        fields = read_user_fields(path, "profile", "loudness_measurement")
        return Recorded(fields.get("profile"), fields.get("loudness_measurement"))
    return Recorded()


def report_path(audio: Path) -> Path:
    """Where ``render --report`` puts the report of ``NAME.wav``: ``NAME.report.html`` beside it."""
    return audio.with_name(audio.stem + ".report.html")


def write_report(check: FileCheck, target: Path) -> Path:
    """The HTML report of ``check``, written atomically to ``target``."""

    note = f"Rows from {check.rows_from}. Made by OmniStudio's analyze (pyebur128: libebur128's meter)."
    atomic_write_bytes(target, html_writer(check.compliance, check.path.name, note), suffix=".html")
    return target
