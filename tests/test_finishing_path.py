"""One finishing path: a server request with ``target_lufs`` gives the samples ``render -o`` writes
for the same text, voice, seed and settings, and both are what ``audio.finishing`` computes."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import soundfile as sf

from omnistudio.audio.finishing import FinishingOptions, finish_pcm, Delivery, finish_render
from support.audio import tone

TEXT = "Good evening. Here is the news.\nMarkets rose today."
STEPS, SEED, TARGET = 3, 11, -20.0


def test_finish_pcm_is_the_file_finish_render_writes(tmp_path: Path) -> None:
    chunks = [(tone(0.8, 220.0), 0.3, 0), (tone(0.6, 330.0, amp=0.5), 0.0, 1)]
    options = FinishingOptions(target_lufs=-18.0, true_peak_db=-1.0, seed=5)
    finish_render(chunks, Delivery(tmp_path / "out.wav", 24_000, options))
    written, rate = sf.read(str(tmp_path / "out.wav"), dtype="float32")
    assert rate == 24_000
    assert np.array_equal(finish_pcm(chunks, 24_000, options), written)


def test_server_target_lufs_equals_render_output(shared_server: Any, tmp_path: Path) -> None:
    from omnistudio.cli import main
    from omnistudio.server.encode import pcm16

    resp = httpx.post(f"{shared_server.url}/tts/generate", timeout=300,
                      json={"text": TEXT, "voice": "ruby", "num_step": STEPS, "seed": SEED, "target_lufs": TARGET})
    assert resp.status_code == 200, resp.text
    served, rate = sf.read(io.BytesIO(resp.content), dtype="int16")

    script = tmp_path / "script.txt"
    script.write_text(TEXT + "\n", encoding="utf-8")
    out = tmp_path / "render.wav"
    assert main(["render", str(script), "--voice", "ruby", "--num-step", str(STEPS), "--seed", str(SEED),
                 "--target-lufs", str(TARGET), "--model", "tiny", "--device", "cpu", "-o", str(out)]) == 0
    rendered, render_rate = sf.read(str(out), dtype="float32")
    assert rate == render_rate == 24_000
    assert served.size == rendered.size > 0
    assert pcm16(rendered) == served.astype("<i2").tobytes()
