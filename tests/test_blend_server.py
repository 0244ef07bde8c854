"""One blend on every path, through the server and the remote client: a blend at alpha 1 is the voice
alone, bit for bit (``/v1/audio/speech`` with ``ruby+storm@1.00``, and `say --server`, which renders
through RemoteEngine), and at alpha 0 the server gives what `render -o` and a local `say` give for that
blend (those are checked against the engine's blend in test_blend_paths.py and test_blend.py).

The shared server reads the shipped roster; the blend's seed and key are what these tests are about."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile as sf

pytestmark = pytest.mark.timeout(600)

TEXT = "Markets rose today after a long week."
STEPS, SEED, TARGET = 4, 3, -20.0


def speech(server: Any, voice: str, **extra: Any) -> bytes:
    body = {"model": "omnivoice", "input": TEXT, "voice": voice, "response_format": "pcm",
            "num_step": STEPS, "seed": SEED, **extra}
    resp = httpx.post(f"{server.url}/v1/audio/speech", json=body, timeout=300)
    assert resp.status_code == 200, resp.text
    assert len(resp.content) > 24_000  # more than half a second of PCM16
    return resp.content


def say(out: Path, *flags: str) -> np.ndarray:
    from omnistudio.cli import main

    assert main(["say", TEXT, "--voice", "ruby", "--num-step", str(STEPS), "--seed", str(SEED),
                 "-o", str(out), *flags]) == 0
    pcm, rate = sf.read(str(out), dtype="float32")
    assert rate == 24_000 and pcm.size > 0
    return pcm


def test_speech_blend_at_one_is_the_voice_alone(shared_server: Any) -> None:
    alone = speech(shared_server, "ruby")
    assert speech(shared_server, "ruby+storm@1.00") == alone
    assert speech(shared_server, "ruby+storm@1") == alone
    assert speech(shared_server, "ruby+storm@0.00") != alone  # another voice key: another seed


def test_speech_blend_at_zero_and_one_equals_render(shared_server: Any, tmp_path: Path) -> None:
    """With a loudness target (the one finishing path), the server's blend is the file `render -o` writes
    for the same [a+b@x] line."""
    from omnistudio.cli import main
    from omnistudio.server.encode import pcm16

    for alpha in ("0.00", "1.00"):
        served = speech(shared_server, f"ruby+storm@{alpha}", target_lufs=TARGET)
        script = tmp_path / f"script-{alpha}.txt"
        script.write_text(f"[ruby+storm@{alpha}] {TEXT}\n", encoding="utf-8")
        out = tmp_path / f"render-{alpha}.wav"
        assert main(["render", str(script), "--num-step", str(STEPS), "--seed", str(SEED),
                     "--target-lufs", str(TARGET), "--model", "tiny", "--device", "cpu", "-o", str(out)]) == 0
        rendered, rate = sf.read(str(out), dtype="float32")
        assert rate == 24_000 and rendered.size > 0
        assert pcm16(rendered) == served, alpha


def test_remote_say_blend_at_one_is_the_voice_alone_and_at_zero_the_local_blend(shared_server: Any,
                                                                                tmp_path: Path) -> None:
    """`say --server` renders through RemoteEngine: at alpha 1 the voice alone (the same samples as
    `say --server --voice ruby`), at alpha 0 exactly what a local `say` makes of that blend."""
    server = ["--server", shared_server.url]
    alone = say(tmp_path / "alone.wav", *server)
    at_one = say(tmp_path / "one.wav", *server, "--blend", "storm", "--alpha", "1")
    assert at_one.shape == alone.shape and np.array_equal(at_one, alone)
    at_zero = say(tmp_path / "zero.wav", *server, "--blend", "storm", "--alpha", "0")
    local = say(tmp_path / "local-zero.wav", "--model", "tiny", "--device", "cpu", "--blend", "storm",
                "--alpha", "0")
    assert at_zero.shape == local.shape and np.array_equal(at_zero, local)
    assert not (at_zero.shape == alone.shape and np.array_equal(at_zero, alone))
