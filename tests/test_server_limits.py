"""Serving limits: a non-loopback bind needs keys, wrong keys get 401 with nothing rendered, a full
queue gets 429 with Retry-After."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.server import Server
from support.wait import HANG_S

KEY = "test-key-0123456789abcdef"


@pytest.fixture(scope="module")
def keyed(omnistudio_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    keys = tmp_path_factory.mktemp("keys") / "keys.txt"
    keys.write_text(f"# server keys\n{KEY}\n")
    srv = Server("--api-key-file", str(keys), "--max-queue", "1")
    yield srv
    srv.stop()


def test_non_loopback_bind_without_key_refuses(omnistudio_home: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "omnistudio.cli", "serve", "--model", "tiny", "--host", "0.0.0.0",
                           "--port", "0"], capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "omnistudio: error: refusing to listen on 0.0.0.0 without --api-key-file: only 127.0.0.1/::1 may be served "
        "without keys"]


def test_a_key_file_that_is_not_a_small_file_is_refused_before_reading_it(omnistudio_home: Path) -> None:
    """``--api-key-file /dev/zero`` once read until the kernel killed the server: now one line, at once."""
    done = subprocess.run([sys.executable, "-m", "omnistudio.cli", "serve", "--model", "tiny", "--host", "0.0.0.0",
                           "--port", "0", "--api-key-file", "/dev/zero"], capture_output=True, text=True,
                          timeout=HANG_S)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "omnistudio: error: the API key file /dev/zero is not a regular file"]


def test_wrong_or_missing_key_gets_401_and_renders_nothing(keyed: Server) -> None:
    good = {"Authorization": f"Bearer {KEY}"}
    before = keyed.metric("omnistudio_batch_size_count", good)
    body = {"input": "Hello there.", "voice": "ruby", "response_format": "pcm", "num_step": 2}
    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789abcdef"}, {"Authorization": KEY}):
        resp = httpx.post(f"{keyed.url}/v1/audio/speech", json=body, headers=headers, timeout=HANG_S)
        assert resp.status_code == 401 and "API key" in resp.json()["error"]["message"]
    assert httpx.get(f"{keyed.url}/metrics").status_code == 401
    assert httpx.get(f"{keyed.url}/v1/lexicon").status_code == 401  # the lexicon and the front-end too
    assert httpx.put(f"{keyed.url}/v1/lexicon", json={"entries": []}).status_code == 401
    assert httpx.post(f"{keyed.url}/v1/text/normalize", json={"text": "3 %"}).status_code == 401
    assert httpx.get(f"{keyed.url}/v1/lexicon", headers=good).status_code == 200
    assert keyed.metric("omnistudio_batch_size_count", good) == before  # nothing was rendered
    assert httpx.get(f"{keyed.url}/health").status_code == 200  # probes need no key
    resp = httpx.post(f"{keyed.url}/v1/audio/speech", json=body, headers=good, timeout=HANG_S)
    assert resp.status_code == 200 and len(resp.content) > 0
    assert keyed.metric("omnistudio_batch_size_count", good) > before


def test_websocket_without_a_key_is_refused_with_403(keyed: Server) -> None:
    """The WebSocket handshake is closed before it is accepted: the client sees HTTP 403 (docs/server.md)."""
    import asyncio

    import websockets

    async def connect(headers: dict[str, str]) -> int:
        try:
            async with websockets.connect(f"ws://127.0.0.1:{keyed.port}/ws/tts/stream-omni",
                                          additional_headers=headers):
                return 101
        except websockets.InvalidStatus as exc:
            return exc.response.status_code

    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789abcdef"}):
        assert asyncio.run(connect(headers)) == 403


def test_an_agent_frameworks_xi_api_key_is_a_key_too(keyed: Server) -> None:
    """ElevenLabs' clients send ``xi-api-key``: the server's key there is let in (HTTP and its WebSocket),
    a wrong one is refused like a wrong Bearer."""
    import asyncio

    import websockets

    url = f"{keyed.url}/v1/text-to-speech/ruby?output_format=pcm_24000"
    body = {"text": "Hi.", "model_id": "eleven_flash_v2_5"}
    assert httpx.post(url, json=body, headers={"xi-api-key": "wrong-key-0123456789abcdef"}).status_code == 401
    answer = httpx.post(url, json=body, headers={"xi-api-key": KEY}, timeout=HANG_S)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("audio/pcm") and answer.content

    async def connect(key: str) -> int:
        try:
            async with websockets.connect(f"ws://127.0.0.1:{keyed.port}/v1/text-to-speech/ruby/multi-stream-input",
                                          additional_headers={"xi-api-key": key}):
                return 101
        except websockets.InvalidStatus as exc:
            return exc.response.status_code

    assert asyncio.run(connect("wrong-key-0123456789abcdef")) == 403 and asyncio.run(connect(KEY)) == 101


def test_full_queue_gets_429_with_retry_after(keyed: Server) -> None:
    good = {"Authorization": f"Bearer {KEY}"}
    long = " ".join(f"Sentence {i} keeps the engine busy." for i in range(40))
    started = threading.Event()

    def hold() -> None:
        with httpx.stream("POST", f"{keyed.url}/v1/audio/speech", headers=good, timeout=HANG_S,
                          json={"input": long, "voice": "ruby", "response_format": "pcm", "num_step": 4}) as resp:
            assert resp.status_code == 200
            chunks = resp.iter_bytes()  # kept: a dropped iterator closes the connection
            next(chunks)
            started.set()
            stop.wait(60)

    stop = threading.Event()
    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert started.wait(120)
        resp = httpx.post(f"{keyed.url}/v1/audio/speech", headers=good, timeout=HANG_S,
                          json={"input": "Hi.", "voice": "ruby", "response_format": "pcm"})
        assert resp.status_code == 429 and int(resp.headers["Retry-After"]) >= 1
        assert "busy" in resp.json()["error"]["message"]
    finally:
        stop.set()
        holder.join(60)


SERVING = re.compile(r"omnistudio: serving tiny on http://127\.0\.0\.1:(\d+) \(max batch 8, max queue 1\)")


def test_port_zero_serves_on_a_port_it_names(keyed: Server) -> None:
    """`--port 0`: the system picks the port; the ready line names it (support.server reads it there)."""
    lines = [line for line in keyed.lines if line.startswith("omnistudio: serving")]
    assert len(lines) == 1 and (m := SERVING.fullmatch(lines[0])), keyed.output[-2000:]
    port = int(m[1])
    assert port > 0 and keyed.port == port
    assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=HANG_S).json()["status"] == "ready"


def test_a_port_in_use_or_out_of_range_is_one_line(omnistudio_home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for value, message in ((str(port), f"127.0.0.1:{port} is in use"),
                               ("65536", "port 65536 is out of range 0..65535 (0: a free port the system picks)")):
            done = subprocess.run([sys.executable, "-m", "omnistudio.cli", "serve", "--model", "tiny", "--port", value],
                                  capture_output=True, text=True, timeout=HANG_S)
            assert done.returncode == 2, done.stderr
            assert done.stderr.strip().splitlines() == [f"omnistudio: error: {message}"]
