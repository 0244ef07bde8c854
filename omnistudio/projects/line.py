"""One sentence of a project and its takes: which take is chosen, which are fresh for its text and voice, the
choices made before (undo, A/B) and the takes it gets back when its text comes back (:meth:`Line.reclaim`)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from omnistudio.errors import UserError
from omnistudio.projects.speech_check import AsrResult

TAKES = "takes"  # the project's folder of take files
ID_CHARS = 24  # hex characters of the SHA-256 that name a take file
TAKE_ID = re.compile(f"[0-9a-f]{{{ID_CHARS}}}")


def check_take_id(value: Any) -> str:
    """A take id from a manifest, in the form it is written (24 lowercase hex characters of a SHA-256):
    anything else (a path, ``../x``) never reaches a file name."""
    text = str(value)
    if not TAKE_ID.fullmatch(text):
        raise ValueError(f"take id {text[:40]!r} is not {ID_CHARS} hex characters")
    return text


def text_hash(text: str) -> str:
    """The hash a take records of the text it speaks (whitespace-insensitive)."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class StoredTake:
    """One rendering of one sentence, stored in the project (``takes/ID.flac`` and its manifest entry);
    not the pipeline's :class:`omnistudio.take.pipeline.Take`, which renders."""

    id: str  # SHA-256 (first ID_CHARS hex) of the FLAC bytes: the file is takes/ID.flac
    voice: str  # the voice key (anchor, "a+b@0.70", "rec:...")
    lang: str
    seed: int
    num_step: int
    guidance: float
    text_hash: str
    duration_s: float
    loudness_lufs: float | None
    asr: AsrResult | None = None
    created: str = ""
    speed: float = 1.0
    engine: dict[str, Any] | None = None  # what rendered it (model, device, dtype, sampler, threads...); None: not recorded
    words: tuple[dict[str, Any], ...] = ()  # its written words, in seconds from the take's start (a sidecar's shape)

    @property
    def file(self) -> str:
        return f"{TAKES}/{self.id}.flac"

    def as_dict(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in ("id", "voice", "lang", "seed", "num_step", "guidance", "speed",
                                               "text_hash", "duration_s", "loudness_lufs", "created", "engine")}
        data["file"] = self.file
        data["asr"] = self.asr.as_dict() if self.asr is not None else None
        data["words"] = [dict(w) for w in self.words]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoredTake:
        asr = data.get("asr")
        lufs = data.get("loudness_lufs")
        return cls(id=check_take_id(data["id"]), voice=str(data["voice"]), lang=str(data["lang"]), seed=int(data["seed"]),
                   num_step=int(data["num_step"]), guidance=float(data["guidance"]),
                   text_hash=str(data["text_hash"]), duration_s=float(data["duration_s"]),
                   loudness_lufs=None if lufs is None else float(lufs),
                   asr=AsrResult.from_dict(asr) if isinstance(asr, dict) else None, created=str(data.get("created", "")),
                   speed=float(data.get("speed", 1.0)),
                   engine=dict(data["engine"]) if isinstance(data.get("engine"), dict) else None,
                   words=tuple(dict(w) for w in data.get("words") or () if isinstance(w, dict)))


@dataclass
class Line:
    """One sentence of the script with its takes."""

    text: str
    voice: str
    lang: str
    line: int  # 1-based script line (pauses between lines are longer)
    takes: list[StoredTake] = field(default_factory=list)
    chosen: str | None = None  # a take id
    history: list[str | None] = field(default_factory=list)  # earlier choices, for undo
    spoken: str = ""  # what the model is asked to say (empty: not known yet, or the same as written)

    @property
    def text_hash(self) -> str:
        """The hash a fresh take of this sentence records: of the text as spoken."""
        return text_hash(self.spoken or self.text)

    def is_fresh(self, take: StoredTake) -> bool:
        return (take.text_hash, take.voice, take.lang) == (self.text_hash, self.voice, self.lang)

    @property
    def fresh_takes(self) -> list[StoredTake]:
        return [t for t in self.takes if self.is_fresh(t)]

    @property
    def stale(self) -> bool:
        """Takes exist, but none speaks the current text in the current voice."""
        return bool(self.takes) and not self.fresh_takes

    @property
    def chosen_take(self) -> StoredTake | None:
        take = next((t for t in self.takes if t.id == self.chosen), None)
        return take if take is not None and self.is_fresh(take) else None

    @property
    def failed(self) -> bool:
        """The chosen take failed the speech-recognition check."""
        take = self.chosen_take
        return take is not None and take.asr is not None and take.asr.passed is False

    def choose(self, take_id: str | None) -> None:
        if take_id is not None and all(t.id != take_id for t in self.takes):
            raise UserError(f"no take {take_id} for this sentence")
        if take_id != self.chosen:
            self.history.append(self.chosen)
            self.chosen = take_id

    def step(self, take_id: str | None, offset: int) -> StoredTake | None:
        """The fresh take ``offset`` places from ``take_id`` (the chosen one when None), clamped to
        the ends: what Alt+Left/Right in the studio moves to."""
        fresh = self.fresh_takes
        if not fresh:
            return None
        current = take_id if take_id is not None else self.chosen
        at = next((i for i, t in enumerate(fresh) if t.id == current), len(fresh) - 1)
        return fresh[max(0, min(len(fresh) - 1, at + offset))]

    def previous_take(self) -> StoredTake | None:
        """The fresh take chosen before the current one (the B of an A/B comparison)."""
        for take_id in reversed(self.history):
            take = next((t for t in self.takes if t.id == take_id), None)
            if take is not None and take.id != self.chosen and self.is_fresh(take):
                return take
        return None

    def reclaim(self) -> None:
        """Choose again the take this sentence has for its current text and voice: when the chosen take
        speaks other words (an edit undone, a script brought back) and an earlier take speaks these, the
        latest of them chosen before (else the newest) is chosen, not rendered again."""
        fresh = self.fresh_takes
        if self.chosen is None or self.chosen_take is not None or not fresh:
            return
        ids = {t.id for t in fresh}
        earlier = next((take_id for take_id in reversed(self.history) if take_id in ids), None)
        self.choose(earlier or fresh[-1].id)

    def undo(self) -> bool:
        """Go back to the previous choice; False when there is none."""
        if not self.history:
            return False
        self.chosen = self.history.pop()
        return True


