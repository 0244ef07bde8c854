"""Broadcast finishing for a render: stitch sentences, normalise, add room tone, write file +
sidecar, optionally hand the PCM to /dev/shm.

Use (the take pipeline's FileSink does this; the CLI flags are in ``commands/flags/finishing.py``)::

    chunks = [(pcm, pause_s), ...]      # float32 24 kHz per sentence + the pause after it
    result = finish_render(chunks, Delivery(output, 24000, FinishingOptions(...), SidecarRecord(timings)))
    # result.sidecar (dict, also written as OUTPUT.json next to the file), result.shm_path

Order: sentences are stitched (zero-crossing seams, 8 ms crossfades, breaths in pauses > 280 ms)
without room tone; the result is normalised to the target (integrated, dual-mono) under the
true-peak ceiling; then the -52 dBFS room tone goes under it, so its level does not move with the
normalisation gain; a last check keeps the true peak under the ceiling.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import numpy as np

from omnistudio.audio.bwf import Broadcast, LoudnessFields, Marker
from omnistudio.audio.dsp import ROOM_TONE_DB, PinkNoise, SentenceChunk, SentenceSpan, Stitcher, chunk_fields
from omnistudio.audio.export import check_output_path, finished_sidecar, sidecar_path
from omnistudio.audio.loudness import BLOCK_S as STEP_S
from omnistudio.audio.loudness import LoudnessMeter, LoudnessReport, limit_true_peak
from omnistudio.audio.profiles import DEFAULT_PROFILE, RULES, TARGET_LUFS, TRUE_PEAK_DBTP, DeliveryFormat, LoudnessRule
from omnistudio.audio.shm import SHM_DIR, check_shm_target, shm_writer
from omnistudio.audio.spool import PcmSpool
from omnistudio.audio.writer import AudioWriter
from omnistudio.commit import destination, json_writer, staged
from omnistudio.errors import UserError


@dataclass(frozen=True)
class FinishingOptions:
    target_lufs: float = TARGET_LUFS
    true_peak_db: float = TRUE_PEAK_DBTP
    room_tone: bool = True
    breaths: bool = True
    align_seams: bool = True
    crossfade_ms: float = 8.0
    shm_name: str | None = None
    seed: int = 0
    profile: str | None = None  # the loudness rule it is made to (audio/profiles.py); None: its figures alone
    delivery: DeliveryFormat = DeliveryFormat()  # channels, rate and bits of the file (not of finish_pcm's)

    @classmethod
    def for_rule(cls, rule: LoudnessRule, delivery: DeliveryFormat | None = None, target_lufs: float | None = None,
                 true_peak_db: float | None = None, **rest: Any) -> FinishingOptions:
        """A delivery to ``rule``: its format unless ``delivery`` is given, and the rule's target for a file
        of that many channels unless ``target_lufs`` overrides it (the same for the ceiling)."""
        delivery = delivery or rule.delivery
        applied = rule.for_file(delivery.channels)
        return cls(target_lufs=applied.target_lufs if target_lufs is None else target_lufs,
                   true_peak_db=applied.true_peak_dbtp if true_peak_db is None else true_peak_db,
                   profile=rule.key, delivery=delivery, **rest)

    @property
    def measured_as(self) -> str:
        """How the file's loudness is measured: as a meter reads the file as it is (``stereo``, ``mono``),
        or, without a profile, a mono file as ``dual-mono`` (played on two loudspeakers)."""
        return self.delivery.measured_as if self.profile or self.delivery.channels == 2 else "dual-mono"

    @property
    def mono_as(self) -> str:
        """How the finishing pass meters its one channel so that it reads what ``measured_as`` says (the
        dual-mono figure of one channel is the stereo figure of the same voice on two)."""
        return "mono" if self.measured_as == "mono" else "dual-mono"

    def rule(self) -> LoudnessRule:
        """The rule a delivery is checked against: the profile's tolerance, with this target and ceiling
        (``--target-lufs``/``--true-peak`` override a profile's figures); no profile: EBU R128's tolerance."""
        base = RULES[self.profile or DEFAULT_PROFILE]
        base = base.for_file(self.delivery.channels) if self.profile else base
        if (base.target_lufs, base.true_peak_dbtp) == (self.target_lufs, self.true_peak_db):
            return base
        return replace(base, key=self.profile or "custom", name=f"{base.name if self.profile else 'Custom'} "
                       f"({self.target_lufs:g} LUFS, {self.true_peak_db:g} dBTP)", target_lufs=self.target_lufs,
                       true_peak_dbtp=self.true_peak_db)


@dataclass
class FinishedRender:
    path: Path
    sidecar_path: Path
    sidecar: dict[str, Any]
    pcm: np.ndarray | None  # None: a long take is not held in memory (read the file back)
    sample_rate: int
    shm_path: Path | None = None
    target_missed: dict[str, object] | None = None  # asked, delivered and why, when it missed its target


@dataclass(frozen=True)
class ExtraOutputs:
    """What a file's finishing writes besides the audio and its sidecar, once the sentences' exact
    spans are known (the captions): ``sentences``, fields added to each sidecar ``sentences`` entry
    (by position, e.g. its ``words``); ``files``, ``(path, write(tmp))`` staged with the audio and
    renamed together with it; ``sidecar``, fields added to the sidecar's top level; ``broadcast``, what the
    file says about itself (``bext``, iXML, markers, tags, chapters; None: markers named by number)."""

    sentences: list[dict[str, object]] = field(default_factory=list)
    files: list[tuple[Path, Callable[[Path], object]]] = field(default_factory=list)
    sidecar: dict[str, object] = field(default_factory=dict)
    broadcast: Broadcast | None = None


def numbered_markers(spans: Sequence[SentenceSpan]) -> Broadcast:
    """What a file with nothing known of its text says: a marker per sentence, named by its number."""
    return Broadcast(description="OmniStudio render",
                     markers=tuple(Marker(s.start_s, f"Sentence {s.index + 1}") for s in spans))


class Extras(Protocol):
    """What a take writes with its file once its sentences' spans are known (:class:`ExtraOutputs`)."""

    def __call__(self, spans: Sequence[SentenceSpan]) -> ExtraOutputs: ...


PAUSE_IN_LINE_S = 0.15  # between sentences of one line (OmniVoice already pads 0.1 s each side)
PAUSE_NEW_LINE_S = 0.45  # between lines (paragraphs, speaker changes): long enough for a breath


def pauses(lines: Sequence[int]) -> list[float]:
    """The pause after each sentence, from each sentence's script line: short inside a line,
    longer at a line break, none after the last."""
    return [0.0 if i + 1 == len(lines) else (PAUSE_NEW_LINE_S if lines[i + 1] != line else PAUSE_IN_LINE_S)
            for i, line in enumerate(lines)]


def sentence_pauses(sentences: Sequence[Any]) -> list[tuple[float, bool]]:
    """The pause after each script sentence and whether a breath may go in it: the ``[pause]`` it
    asked for (its ``pause_s``: exactly that, silence), else the line layout's (:func:`pauses`)."""
    gaps = pauses([s.line for s in sentences])
    return [(gap, True) if getattr(s, "pause_s", None) is None else (float(s.pause_s), False)
            for s, gap in zip(sentences, gaps)]


def live_stitcher(sample_rate: int, options: FinishingOptions) -> Stitcher:
    """The stitcher for playback (seams, crossfades, breaths, room tone). A file is finished from
    the same chunks by :func:`finish_render`, which adds the loudness normalisation."""
    return Stitcher(sample_rate, room_tone=options.room_tone, breaths=options.breaths, seed=options.seed)


@dataclass(frozen=True)
class SidecarRecord:
    """What the sidecar keeps of how a take was made, stored as is: ``timings`` (wall_s, rtf, per-sentence
    times), ``engine`` (model, device, backbone dtype, sampler, torch threads, quantisation), ``take`` (base
    seed, steps, guidance, speed, batch, language, default voice) and ``source`` (what the audio was made
    from: script hash, voice, model, seed...; None: not recorded)."""

    timings: Mapping[str, object] = field(default_factory=dict)
    engine: Mapping[str, object] | None = None
    take: Mapping[str, object] | None = None
    source: Mapping[str, object] | None = None


@dataclass(frozen=True)
class Delivery:
    """Everything a finished file is besides its sentences: where it goes (``output``), the chunks' rate, how
    it is finished (``options``: loudness, room tone, format, /dev/shm name), what its sidecar records, and
    ``extras``: what the take writes with it once its sentences' spans are known (captions, words, what the
    file says about itself; None: markers named by number). ``shm_root``: the /dev/shm folder (tests)."""

    output: Path
    sample_rate: int
    options: FinishingOptions = FinishingOptions()
    record: SidecarRecord = SidecarRecord()
    extras: Extras | None = None
    shm_root: Path | None = None


def finish_render(chunks: Iterable[SentenceChunk], delivery: Delivery) -> FinishedRender:
    """Finish rendered sentences and write them as ``delivery`` says.

    ``chunks``: each sentence's mono float32 samples at ``delivery.sample_rate`` and the pause after it
    (:data:`~omnistudio.audio.dsp.SentenceChunk`). It may be a lazy iterable (e.g. a
    :class:`~omnistudio.audio.spool.ChunkSpool`): each chunk is used once.
    Writes the output (.wav/.flac/.mp3/.m4a), ``output.json`` and, with ``options.shm_name``, /dev/shm/NAME:
    all are staged first, then committed together, all or nothing (:func:`omnistudio.commit.staged`). An
    output that is a FIFO, a device or ``-`` (standard output) gets the audio alone: no sidecar, no extras.

    Memory stays flat: the stitched speech goes to an anonymous temp file beside the output while
    its loudness is measured; gain, limiter, room tone and ceiling are then applied block by block
    in passes over that file, and the result is written in blocks. ``FinishedRender.pcm`` is None.
    The extras' files are staged after the audio and renamed with it, before the sidecar. The loudness
    the writing pass measures goes into the file (``bext`` v2, tags).
    """
    output, options, record = Path(delivery.output), delivery.options, delivery.record
    suffix = check_output_path(output)
    stream = destination(output).stream  # a FIFO, a device, standard output: the audio alone
    root = delivery.shm_root or SHM_DIR
    if options.shm_name:
        check_shm_target(options.shm_name, root)
    t0 = time.perf_counter()
    rate = options.delivery.sample_rate
    spool_dir = output.parent if str(output.parent) else None
    with _stitched(chunks, delivery.sample_rate, options, spool_dir) as (speech, stitcher, plan), staged() as files:
        final = _Metered(rate, options.mono_as)
        shm_path = None
        if options.shm_name:
            shm_tmp, shm_path = shm_writer(options.shm_name, speech.frames, rate, root,
                                           lambda fh: _write_pass(speech, plan, rate, options, None, fh))
            files.take(shm_tmp, shm_path)
        more = delivery.extras(list(stitcher.spans)) if delivery.extras is not None and not stream else ExtraOutputs()
        info = _measured(more.broadcast or numbered_markers(stitcher.spans), options)

        def write(tmp: Path) -> None:
            with AudioWriter(tmp, rate, suffix, info, options.delivery, seed=options.seed) as writer:
                _write_pass(speech, plan, rate, options, writer, None, final)
                writer.loudness = LoudnessFields.of(final.report())

        audio_bytes = files.add(output, write, suffix).stat().st_size
        for path, writer in more.files:
            files.add(path, writer, path.suffix)
        settings = {**asdict(options), "gain_db": plan.gain_db, "limited": plan.limited,
                    "room_tone_dbfs": ROOM_TONE_DB if options.room_tone else None, "measured_as": options.measured_as}
        rows = [{**s.as_dict(), **(more.sentences[i] if i < len(more.sentences) else {})}
                for i, s in enumerate(stitcher.spans)]
        missed = missed_target(final.report().integrated_lufs, options, plan)
        measured = {**final.report().as_dict(), "channels": options.delivery.channels,
                    "channel_mode": options.measured_as, "bits": options.delivery.bits}
        sidecar = finished_sidecar(output, rate, speech.frames, measured, sentences=rows,
                                   timings={**record.timings, "finishing_s": time.perf_counter() - t0},
                                   settings=settings, audio_bytes=audio_bytes,
                                   engine=record.engine, source=record.source, take=record.take)
        sidecar.update(more.sidecar)
        if missed is not None:
            sidecar["target_missed"] = missed
        if not stream:
            files.add(sidecar_path(output), json_writer(sidecar), ".json")
    return FinishedRender(output, sidecar_path(output), sidecar, None, rate, shm_path, missed)


MISSED_LU = 0.2  # a delivery further than this from the target it was asked for says so


def missed_target(delivered_lufs: float, options: FinishingOptions, plan: _Plan) -> dict[str, object] | None:
    """What the sidecar says of a file that did not reach its target (None when it did): asked, delivered,
    and why (the true-peak ceiling held it down)."""
    if not math.isfinite(delivered_lufs) or abs(delivered_lufs - options.target_lufs) <= MISSED_LU:
        return None
    why = (f"the {options.true_peak_db:g} dBTP true-peak ceiling held it down (the limiter was on)" if plan.limited
           else "the finishing could not reach it")
    return {"asked_lufs": options.target_lufs, "delivered_lufs": round(delivered_lufs, 2), "reason": why,
            "message": f"asked for {options.target_lufs:g} LUFS, delivered {delivered_lufs:.1f} LUFS: {why}"}


def _measured(info: Broadcast, options: FinishingOptions) -> Broadcast:
    """What the file says of how its loudness was measured (iXML USER lines and tags): the rule it is made
    to and the measurement mode, which ``analyze`` reads back and uses by default."""
    fields = (("profile", options.profile),) if options.profile else ()
    return replace(info, user=(*info.user, *fields, ("loudness_measurement", options.measured_as)))


def finish_pcm(chunks: Iterable[SentenceChunk], sample_rate: int, options: FinishingOptions = FinishingOptions()) -> np.ndarray:
    """The samples :func:`finish_render` writes for the same chunks and options, in memory (the
    server's ``target_lufs``): one finishing path, so a request and ``render -o`` give the same audio."""
    with finished_blocks(chunks, sample_rate, options) as (pieces, _spans):
        blocks = list(pieces)
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)


@contextmanager
def finished_blocks(chunks: Iterable[SentenceChunk], sample_rate: int, options: FinishingOptions = FinishingOptions()
                    ) -> Iterator[tuple[Iterator[np.ndarray], list[SentenceSpan]]]:
    """The samples :func:`finish_render` writes for the same chunks and options, block by block (flat
    memory), and where each sentence lands in them: what the studio's waveform of a take is drawn from.
    At the chunks' own rate, one channel (a 48 kHz or two-channel delivery is made from these)."""
    at_rate = replace(options, delivery=replace(options.delivery, sample_rate=sample_rate))
    with _stitched(chunks, sample_rate, at_rate, None) as (speech, stitcher, plan):
        yield _toned_blocks(speech, sample_rate, at_rate, plan), list(stitcher.spans)


def sentence_spans(chunks: Iterable[SentenceChunk], sample_rate: int, options: FinishingOptions = FinishingOptions()
                   ) -> list[SentenceSpan]:
    """Where each sentence of ``chunks`` lands in the file :func:`finish_render` writes from them
    (the same stitcher; loudness, room tone and breaths move no sentence), without writing it."""
    stitcher = file_stitcher(sample_rate, options)
    for chunk in chunks:
        stitcher.push(*chunk_fields(chunk))
    stitcher.finish()
    return list(stitcher.spans)


def file_stitcher(sample_rate: int, options: FinishingOptions) -> Stitcher:
    """The stitcher a file is finished with (no room tone: it goes under the normalised speech). A
    sentence's span is final once it is pushed, so a stream can say where each sentence lands in the
    file :func:`finish_render` writes (room tone, breaths and loudness move no sentence: the live take's
    spans are these where its seams and crossfade are the options')."""
    return Stitcher(sample_rate, room_tone=False, breaths=options.breaths, align_seams=options.align_seams,
                    crossfade_ms=options.crossfade_ms, seed=options.seed)


@contextmanager
def _stitched(chunks: Iterable[SentenceChunk], sample_rate: int, options: FinishingOptions,
              spool_dir: Path | None) -> Iterator[tuple[PcmSpool, Stitcher, _Plan]]:
    """Stitch the chunks without room tone, converted to the delivery's rate, into a disk spool, measure it
    (after the conversion, as the file will be read), and plan the finishing."""
    stitcher = file_stitcher(sample_rate, options)
    rate = options.delivery.sample_rate
    convert = rate_converter(sample_rate, rate)
    with PcmSpool(spool_dir) as speech:
        meter = _Metered(rate, options.mono_as)
        for chunk in chunks:
            meter.add(speech, convert(stitcher.push(*chunk_fields(chunk)), False))
        meter.add(speech, convert(stitcher.finish(), True))
        yield speech, stitcher, _plan(speech, meter.report(), rate, options)


def rate_converter(rate: int, to: int) -> Callable[[np.ndarray, bool], np.ndarray]:
    """Blocks at ``rate`` to blocks at ``to`` (libsoxr's very high quality, phase-aligned: a sentence
    starting at t s starts at t s after it), fed in order; ``last`` flushes it."""
    if rate == to:
        return lambda block, _last: block
    # lazy: start-up (soxr)
    import soxr

    stream = soxr.ResampleStream(rate, to, 1, dtype="float32", quality="VHQ")
    return lambda block, last: stream.resample_chunk(np.asarray(block, dtype=np.float32), last=last)


# ------------------------------------------------------------------- block-wise finishing
BLOCK_S = 10.0  # seconds of audio per processing block (a multiple of the meter's 100 ms step)


class _Metered:
    """A loudness meter fed in exact 100 ms steps (EBU-mode maxima), whatever the block sizes."""

    def __init__(self, sample_rate: int, mono_as: str = "dual-mono") -> None:
        self.meter = LoudnessMeter(sample_rate, mono_as=mono_as)
        self.step = int(round(STEP_S * sample_rate))
        self._rest = np.zeros(0)
        self._report: LoudnessReport | None = None  # the figures, until the next add

    def add(self, spool: PcmSpool | None, block: np.ndarray) -> None:
        self._report = None
        if spool is not None:
            spool.append(block)
        data = np.concatenate([self._rest, np.asarray(block)]) if self._rest.size else np.asarray(block)
        whole = data.size - data.size % self.step
        for start in range(0, whole, self.step):
            self.meter.add(data[start:start + self.step])
        self._rest = data[whole:]

    def report(self) -> LoudnessReport:
        """The figures of everything added (worked out once: the file's header, the sidecar and the missed
        target's check all read them)."""
        if self._report is None:
            if self._rest.size:
                self.meter.add(self._rest)
                self._rest = self._rest[:0]
            self._report = self.meter.report()
        return self._report


@dataclass(frozen=True)
class _Plan:
    gain_db: float  # static gain before the limiter
    limit_db: float | None  # the limiter's ceiling, or None when it does not act
    scale: float  # the ceiling's linear scale after gain and limiter (<= 1)
    tone_scale: float  # the ceiling's scale after the room tone goes under (<= 1)

    @property
    def limited(self) -> bool:
        return self.limit_db is not None


def _block(sample_rate: int) -> int:
    return int(round(STEP_S * sample_rate)) * int(round(BLOCK_S / STEP_S))


def _normalised_blocks(speech: PcmSpool, sample_rate: int, gain_db: float,
                       limit_db: float | None) -> Iterator[np.ndarray]:
    """Gain (and the look-ahead limiter, computed with enough context on each side of a block to
    match the whole-signal limiter), block by block, float64."""
    size, gain = _block(sample_rate), 10 ** (gain_db / 20)
    context = 4 * max(1, int(5.0 * sample_rate / 1000)) + 256
    for start in range(0, speech.frames, size):
        if limit_db is None:
            yield speech.read(start, size).astype(np.float64) * gain
            continue
        lo = max(0, start - context)
        x = speech.read(lo, start - lo + size + context).astype(np.float64) * gain
        y = limit_true_peak(x, sample_rate, limit_db)
        yield y[start - lo:start - lo + min(size, speech.frames - start)]


def _ceiling_scale(true_peak_db: float, ceiling_db: float) -> float:
    """What ``apply_ceiling`` multiplies by: down to 0.02 dB under the ceiling, never up."""
    if math.isfinite(true_peak_db) and true_peak_db > ceiling_db - 0.01:
        return 10 ** ((ceiling_db - 0.02 - true_peak_db) / 20)
    return 1.0


def _plan(speech: PcmSpool, report: LoudnessReport, sample_rate: int, options: FinishingOptions) -> _Plan:
    """The normalisation of ``normalise`` (gain to target, limiter, re-gain up to 4 times), measured
    in passes over the spooled speech; then the ceilings before and after the room tone."""
    if not math.isfinite(report.integrated_lufs):
        raise UserError("the audio is silent (below the -70 LUFS gate): nothing to normalise")
    target, ceiling = options.target_lufs, options.true_peak_db
    gain_db, limit_db = target - report.integrated_lufs, None
    loud, peak = target, report.true_peak_dbtp + gain_db
    for _ in range(4):
        loud, peak = report.integrated_lufs + gain_db, report.true_peak_dbtp + gain_db  # exact for a gain
        if limit_db is not None or peak > ceiling:
            limit_db = ceiling - 0.05
            measured = _Metered(sample_rate, options.mono_as)
            for block in _normalised_blocks(speech, sample_rate, gain_db, limit_db):
                measured.add(None, block)
            result = measured.report()
            loud, peak = result.integrated_lufs, result.true_peak_dbtp
        if abs(loud - target) < 0.05 or limit_db is None:
            break
        if _ < 3:  # re-gain only for a pass that will measure it: the peak must be of the gain used
            gain_db += target - loud
    scale = _ceiling_scale(peak, ceiling)
    tone_scale = 1.0
    if options.room_tone:
        measured = _Metered(sample_rate, options.mono_as)
        for block in _toned_blocks(speech, sample_rate, options, _Plan(gain_db, limit_db, scale, 1.0)):
            measured.add(None, block)
        tone_scale = _ceiling_scale(measured.report().true_peak_dbtp, ceiling)
    return _Plan(gain_db, limit_db, scale, tone_scale)


def _toned_blocks(speech: PcmSpool, sample_rate: int, options: FinishingOptions, plan: _Plan) -> Iterator[np.ndarray]:
    """Normalised speech under the ceiling (float32, as ``apply_ceiling`` gives it), with the room
    tone under it when asked for; the room tone's own ceiling scale is applied last."""
    noise = PinkNoise(ROOM_TONE_DB, options.seed) if options.room_tone else None
    for block in _normalised_blocks(speech, sample_rate, plan.gain_db, plan.limit_db):
        pcm = (block * plan.scale).astype(np.float32)
        if noise is not None:
            pcm = ((pcm + noise.generate(pcm.size)).astype(np.float64) * plan.tone_scale).astype(np.float32)
        yield pcm


def _write_pass(speech: PcmSpool, plan: _Plan, sample_rate: int, options: FinishingOptions,
                writer: AudioWriter | None, fh: BinaryIO | None, meter: _Metered | None = None) -> None:
    for block in _toned_blocks(speech, sample_rate, options, plan):
        if writer is not None:
            writer.write(block)
        if fh is not None:
            fh.write(np.ascontiguousarray(block, dtype="<f4").tobytes())
        if meter is not None:
            meter.add(None, block)
