"""Broadcast finishing for a render: stitch sentences, normalise, add room tone, write file +
sidecar, optionally hand the PCM to /dev/shm.

Use (the take pipeline's FileSink does this; the CLI flags are in ``commands/finishing_args.py``)::

    chunks = [(pcm, pause_s), ...]      # float32 24 kHz per sentence + the pause after it
    result = finish_render(chunks, 24000, output, FinishingOptions(...), timings={...})
    # result.sidecar (dict, also written as OUTPUT.json next to the file), result.shm_path

Order: sentences are stitched (zero-crossing seams, 8 ms crossfades, breaths in pauses > 280 ms)
without room tone; the result is normalised to the target (integrated, dual-mono) under the
true-peak ceiling; then the -52 dBFS room tone goes under it, so its level does not move with the
normalisation gain; a last check keeps the true peak under the ceiling.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omnistudio.audio.dsp import ROOM_TONE_DB, PinkNoise, Stitcher
from omnistudio.audio.export import (
    TARGET_LUFS,
    TRUE_PEAK_DBTP,
    apply_ceiling,
    check_output_path,
    export_finished,
    normalise,
    sidecar_path,
)


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


@dataclass
class FinishedRender:
    path: Path
    sidecar_path: Path
    sidecar: dict[str, Any]
    pcm: np.ndarray
    sample_rate: int
    shm_path: Path | None = None


PAUSE_IN_LINE_S = 0.15  # between sentences of one line (OmniVoice already pads 0.1 s each side)
PAUSE_NEW_LINE_S = 0.45  # between lines (paragraphs, speaker changes): long enough for a breath


def pauses(lines: Sequence[int]) -> list[float]:
    """The pause after each sentence, from each sentence's script line: short inside a line,
    longer at a line break, none after the last."""
    return [0.0 if i + 1 == len(lines) else (PAUSE_NEW_LINE_S if lines[i + 1] != line else PAUSE_IN_LINE_S)
            for i, line in enumerate(lines)]


def live_stitcher(sample_rate: int, options: FinishingOptions) -> Stitcher:
    """The stitcher for playback (seams, crossfades, breaths, room tone). A file is finished from
    the same chunks by :func:`finish_render`, which adds the loudness normalisation."""
    return Stitcher(sample_rate, room_tone=options.room_tone, breaths=options.breaths, seed=options.seed)


def finish_render(chunks: Iterable[Any], sample_rate: int, output: Path, options: FinishingOptions = FinishingOptions(),
                  timings: dict[str, Any] | None = None, shm_root: Path | None = None,
                  source: dict[str, Any] | None = None) -> FinishedRender:
    """Finish rendered sentences and write them.

    ``chunks``: ``(pcm, pause_s)`` or ``(pcm, pause_s, sentence_id)`` tuples, or objects with
    ``.pcm`` / ``.pause_s`` (/ ``.sentence_id``); pcm is mono float32 at ``sample_rate``.
    ``timings``: render timings to store in the sidecar (e.g. wall_s, rtf, per-sentence times).
    ``source``: what the audio was made from (script hash, voice, model, seed...), stored as is.
    Writes ``output`` (.wav/.flac), ``output.json`` and, with ``options.shm_name``, /dev/shm/NAME.
    """
    from omnistudio.audio.shm import SHM_DIR, write_shm

    output = Path(output)
    check_output_path(output)
    t0 = time.perf_counter()
    stitcher = Stitcher(sample_rate, room_tone=False, breaths=options.breaths, align_seams=options.align_seams,
                        crossfade_ms=options.crossfade_ms, seed=options.seed)
    speech = stitcher.stitch(chunks)
    norm = normalise(speech, sample_rate, options.target_lufs, options.true_peak_db)
    pcm = norm.pcm
    if options.room_tone:
        pcm = apply_ceiling(pcm + PinkNoise(ROOM_TONE_DB, options.seed).generate(pcm.size), sample_rate,
                            options.true_peak_db)
    finishing_s = time.perf_counter() - t0
    settings = {**asdict(options), "gain_db": norm.gain_db, "limited": norm.limited,
                "room_tone_dbfs": ROOM_TONE_DB if options.room_tone else None}
    sidecar = export_finished(output, pcm, sample_rate, sentences=[s.as_dict() for s in stitcher.spans],
                              timings={**(timings or {}), "finishing_s": finishing_s}, settings=settings,
                              source=source)
    shm = write_shm(options.shm_name, pcm, sample_rate, shm_root or SHM_DIR) if options.shm_name else None
    return FinishedRender(output, sidecar_path(output), sidecar, pcm, sample_rate, shm)
