"""`omnistudio serve --cache-mb N`: a repeated request (same text, voice, seed, options) renders nothing
and answers the same bytes; another seed renders again; a bad size is one line before the model loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from support.server import Server
from support.wait import HANG_S


def _speech(server: Server, seed: int) -> bytes:
    body = {"model": "omnivoice", "input": "Good evening. Here is the news.", "voice": "ruby",
            "response_format": "pcm", "num_step": 2, "seed": seed}
    resp = httpx.post(f"{server.url}/v1/audio/speech", json=body, timeout=HANG_S)
    assert resp.status_code == 200, resp.text
    return resp.content


def test_a_repeated_request_comes_from_the_cache(omnistudio_home: Path) -> None:
    server = Server("--cache-mb", "64")
    try:
        first = _speech(server, 5)
        passes = server.metric("omnistudio_batch_size_count")
        assert passes >= 1 and server.metric("omnistudio_take_cache_hits") == 0
        again = _speech(server, 5)
        assert again == first
        assert server.metric("omnistudio_batch_size_count") == passes  # nothing was rendered
        assert server.metric("omnistudio_take_cache_hits") == 2  # both sentences
        assert server.metric("omnistudio_take_cache_bytes") > 0
        other = _speech(server, 6)
        assert other != first and server.metric("omnistudio_batch_size_count") > passes
    finally:
        server.stop()


def test_a_bad_cache_size_is_one_line(omnistudio_home: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "omnistudio.cli", "serve", "--model", "tiny", "--cache-mb", "-1"],
                          capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "omnistudio: error: --cache-mb -1 is out of range 0..65536"
