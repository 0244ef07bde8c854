"""What the controller reports to its client (the app turns each into a Textual message)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from omnistudio.captions.timing import SentenceTiming

StudioState = Literal["loading", "warming", "ready", "rendering", "offline", "error"]  # offline: server gone
ENGINE_STATES: tuple[StudioState, ...] = get_args(StudioState)


@dataclass(frozen=True)
class EngineState:
    state: StudioState
    detail: str = ""


@dataclass(frozen=True)
class PromptsLoaded:
    """The saved prompts are on the device: the anchor picker can refresh its state column."""


@dataclass(frozen=True)
class Preparing:
    """The prepare phase of a take: voice ``done`` of ``total`` (a prompt being built, loaded, blended)."""

    done: int
    total: int
    voice: str
    lang: str
    action: str  # ready | load | build | blend, then done
    text: str  # "preparing voices 1/2: valentina (es)"


@dataclass(frozen=True)
class EngineReady:
    """Where the engine runs (the link's info): ``device`` names the server for a remote engine."""

    model: str
    device: str


@dataclass(frozen=True)
class VoicesListed:
    """The engine's roster as the link reports it (this machine's, or the server's): picker rows, duos."""

    rows: tuple[Any, ...]  # adapters.AnchorRow
    duos: tuple[tuple[str, str, float, tuple[str, ...]], ...]


@dataclass(frozen=True)
class SentenceRendered:
    index: int
    render_s: float
    audio_s: float
    rtf: float


@dataclass(frozen=True)
class PlaybackStarted:
    ttfa_s: float  # from the play command to the first audio queued
    silent: bool  # no audio device: the meter and highlight run on a virtual clock


@dataclass(frozen=True)
class PlaybackFinished:
    """A take's rendering ended (its audio may still be playing out of the ring)."""

    cancelled: bool


@dataclass(frozen=True)
class ExportReport:
    """What an export made: its loudness, how many sentences were rendered or reused from what was heard,
    its caption files and how their words were timed."""

    integrated_lufs: float | None = None
    rendered: int = 0
    reused: int = 0
    captions: tuple[str, ...] = ()  # the caption files' names
    words: int = 0
    words_estimated: int = 0  # of ``words``, timed by syllables (a language the speech model cannot hear)
    measured: bool = False  # the words were measured by the speech model

    @classmethod
    def of(cls, sidecar: Mapping[str, Any], rendered: int, reused: int, timed: Sequence[SentenceTiming],
           measured: bool) -> ExportReport:
        """From the written file's sidecar, the take's counts and its sentences' timings."""
        loudness = sidecar.get("loudness", {}).get("integrated_lufs")
        words = [w for sentence in timed for w in sentence.words]
        return cls(None if loudness is None else float(loudness), rendered, reused,
                   tuple(sidecar.get("captions", {}).get("files", {}).values()), len(words),
                   sum(1 for w in words if w.estimated), measured)


@dataclass(frozen=True)
class Exported:
    path: Path
    sidecar: Path | None
    report: ExportReport = field(default_factory=ExportReport)


@dataclass(frozen=True)
class Notice:
    message: str
    severity: Literal["information", "warning", "error"] = "information"


@dataclass(frozen=True)
class Failure:
    """An error the user must see (the app shows a modal); the studio keeps working."""

    title: str
    message: str


@dataclass(frozen=True)
class MeterReading:
    """One pull of the live meter (LUFS / dBTP; -inf for silence)."""

    momentary: float
    short_term: float
    integrated: float
    true_peak: float


@dataclass(frozen=True)
class WordHeard:
    """The written word being heard: its character span in the written sentence that is playing."""

    sentence: str  # the sentence as written (whitespace collapsed, as the script parser gives it)
    start: int
    end: int
    estimated: bool  # spread by syllables, not measured


@dataclass(frozen=True)
class Snapshot:
    """Pulled state for the UI timer."""

    meter: MeterReading
    sentence: int | None  # index of the sentence being heard, if any
    underruns: int
    playing: bool
    paused: bool
    word: WordHeard | None = None  # the word being heard, inside that sentence (None: a pause, or none known)
    device_underruns: int = 0  # the audio device's own underflows (PortAudio's flag), of ``underruns`` or besides


@dataclass(frozen=True)
class TakeRow:
    """One take as the take list shows it."""

    id: str
    seed: int
    duration_s: float
    wer: float | None  # None: not checked
    passed: bool | None
    chosen: bool


@dataclass(frozen=True)
class TakesChanged:
    """The project's takes or choices changed (the script gutter shows counts and failed checks)."""

    takes: tuple[tuple[TakeRow, ...], ...]  # per sentence, its fresh takes
    failed: tuple[bool, ...]  # per sentence: the chosen take failed its speech-recognition check
    played: str | None = None  # the take id just played (step, A/B, regenerate)

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(len(rows) for rows in self.takes)


@dataclass(frozen=True)
class LexiconChanged:
    """The pronunciation lexicon was read again (the spoken form shown follows it)."""

    entries: int
    added: str = ""  # what the studio's lexicon key just added, in words ("" for a plain read)


# Everything the controller reports (``report(event)``): the app maps each to its message with one exhaustive
# match (screens/messages.py), so a new event that is not handled there fails mypy, not silently.
StudioEvent = (EngineState | PromptsLoaded | Preparing | EngineReady | VoicesListed | SentenceRendered
               | PlaybackStarted | PlaybackFinished | Exported | Notice | Failure | WordHeard | TakesChanged
               | LexiconChanged)
