"""A take's last mile gives the same bytes as the commit the goldens were recorded at (issue 49): a take of
fixed samples (no model: its tokens depend on the CPU) finished by the file sink to every format, a broadcast
profile at 48 kHz/24-bit on two channels, captions beside it and the /dev/shm hand-off; each file's SHA-256 is
compared with tests/data/same_bytes.json.

The bytes depend on the float kernels of numpy/scipy/soxr and on the encoders' versions, so the goldens
say which machine they hold for (a fingerprint of those kernels); another machine skips, naming why.
Record them again (only after checking that a change is meant to change the bytes) with
``OMNISTUDIO_RECORD_GOLDEN=1 pytest tests/test_same_bytes.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnistudio.audio.finishing import FinishingOptions
from omnistudio.audio.profiles import RULES
from omnistudio.captions.formats import CaptionOptions
from omnistudio.take.delivery import Slate
from omnistudio.take.result import TakeResult
from omnistudio.take.rows import SentenceRow
from omnistudio.take.sinks import FileSink

GOLDEN = Path(__file__).parent / "data" / "same_bytes.json"
SR = 24_000
TEXTS = ["Good evening, this is the late news.", "Markets closed higher on Friday.", "Rain is due by morning."]


def _kernels() -> str:
    """What the goldens' bytes depend on besides the code: the float kernels and the encoders' versions."""
    import scipy
    import scipy.signal
    import soxr

    x = np.random.default_rng(3).standard_normal(4801)
    probe = [np.log10(np.abs(x) + 1e-3), np.exp(x / 4), scipy.signal.resample_poly(x, 4, 1),
             soxr.resample(x.astype(np.float32), 24_000, 48_000, quality="VHQ")]
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(p).tobytes() for p in probe)).hexdigest()[:16]
    return f"{digest} numpy {np.__version__} scipy {scipy.__version__} soxr {soxr.__version__} {sf.__libsndfile_version__}"


def _take() -> TakeResult:
    rng = np.random.default_rng(49)
    chunks = []
    for k in range(len(TEXTS)):
        t = np.arange(int(SR * (1.2 + 0.3 * k))) / SR
        voice = 0.3 * np.sin(2 * np.pi * (140 + 20 * k) * t) * np.sin(np.pi * t / t[-1]) ** 2
        pcm = (voice + 0.01 * rng.standard_normal(t.size)).astype(np.float32)
        chunks.append((pcm, 0.45 if k == 0 else 0.15, k, True))
    rows = [SentenceRow(id=k, line=0 if k == 0 else 1, speaker="ruby", lang="en", text=text,
                        story="Weather" if k == 2 else "Top", spoken=text, steps=10, render_s=0.5,
                        audio_s=len(chunks[k][0]) / SR, rtf=0.3, ready_s=0.1, error=None, voice="ruby_en", seed=7 + k)
            for k, text in enumerate(TEXTS)]
    frames = sum(len(c[0]) for c in chunks)
    return TakeResult(None, frames, SR, chunks, rows, 7, 3, 0, 10, 0.2, 1.0, 0.1,
                      engine={"model": "golden", "device": "cpu", "dtype": "float32", "threads": 2},
                      options={"seed": 7, "num_step": 10, "guidance": 2.0, "voice": "ruby_en", "lang": "en"})


CASES = {
    "plain.wav": FinishingOptions(),
    "plain.flac": FinishingOptions(),
    "plain.mp3": FinishingOptions(),
    "plain.m4a": FinishingOptions(),
    "ebu.wav": FinishingOptions.for_rule(RULES["ebu"]),
    "podcast.flac": FinishingOptions.for_rule(RULES["podcast"]),
}


def _render(folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    monkeypatch.setattr(platform, "node", lambda: "golden")
    shm = folder / "shm"
    shm.mkdir()
    digests: dict[str, str] = {}
    for name, options in CASES.items():
        out = folder / name
        captions = CaptionOptions(formats=("srt", "vtt")) if name == "ebu.wav" else None
        if name == "plain.wav":
            options = FinishingOptions(shm_name="golden")
        sink = FileSink(out, shm_root=shm, captions=captions, slate=Slate(project="Desk", take="3", title="Late news"))
        sink.write(_take(), options)
        written = [out] + ([out.with_suffix(".srt"), out.with_suffix(".vtt")] if captions else [])
        written += [shm / "golden"] if options.shm_name else []
        for path in written:
            digests[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def test_a_take_is_finished_to_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    digests = _render(tmp_path, monkeypatch)
    assert len(set(digests.values())) == len(digests)  # every file is its own
    if os.environ.get("OMNISTUDIO_RECORD_GOLDEN"):
        GOLDEN.write_text(json.dumps({"kernels": _kernels(), "files": digests}, indent=2) + "\n")
    golden = json.loads(GOLDEN.read_text())
    if golden["kernels"] != _kernels():
        pytest.skip(f"the goldens hold for other float kernels or encoders ({golden['kernels']})")
    assert digests == golden["files"]
