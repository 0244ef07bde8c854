"""The server and its client under faults, as a reliability probe makes them: a request body cut off
mid-way, a binary or unknown WebSocket message, a client gone mid-stream, a server that stops answering
mid-render. Each ends cleanly: one clear line (or a counted status), never a traceback."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.server import Server
from support.wait import wait_until
from support.wait import HANG_S

LONG = " ".join(f"Sentence number {i} is here." for i in range(1, 41))
REQUESTS = "omnistudio_requests_total"


def _requests(server: Server, route: str, status: str) -> float:
    return server.metric(f'{REQUESTS}{{route="{route}",status="{status}"}}')


async def _ws_exchange(server: Server, first: str | bytes) -> tuple[list[dict[str, Any]], int | None]:
    import websockets
    from websockets.exceptions import ConnectionClosed

    frames = []
    async with websockets.connect(f"ws://127.0.0.1:{server.port}/ws/tts/stream-omni") as ws:
        await ws.send(first)
        try:
            while True:
                frames.append(json.loads(await ws.recv()))
        except ConnectionClosed:
            pass
    return frames, ws.close_code


@pytest.mark.parametrize(("first", "words"), [
    (b"\x00\x01binary", "JSON text frame, not a binary one"),
    (json.dumps({"type": "speak_louder", "text": "Hi."}), "unknown client message type 'speak_louder'"),
    (json.dumps({"type": "cancel"}), "cancel before any request"),
    (json.dumps({"type": "prepare", "voices": []}), "prepare message: voices"),
])
def test_a_bad_first_websocket_message_is_a_client_error(shared_server: Server, first: str | bytes,
                                                         words: str) -> None:
    frames, code = asyncio.run(_ws_exchange(shared_server, first))
    assert len(frames) == 1 and frames[0]["type"] == "error" and frames[0]["status"] == 400, frames
    assert words in frames[0]["message"] and "\n" not in frames[0]["message"]
    assert code == 1008  # policy violation: the client's fault, not "try again later"
    assert "Traceback" not in shared_server.output


def test_a_websocket_closed_mid_stream_counts_as_cancelled(shared_server: Server) -> None:
    import websockets

    before = shared_server.metric("omnistudio_cancelled_requests_total")

    async def go() -> None:
        async with websockets.connect(f"ws://127.0.0.1:{shared_server.port}/ws/tts/stream-omni") as ws:
            await ws.send(json.dumps({"text": LONG, "voice": "ruby", "num_step": 4, "seed": 1}))
            while not isinstance(await ws.recv(), bytes):  # the first audio: the take is under way
                pass
        # leaving the block closes the connection mid-take

    asyncio.run(go())
    wait_until(lambda: shared_server.metric("omnistudio_cancelled_requests_total") > before, timeout=HANG_S,
               what="the closed connection counted as a cancel")
    assert shared_server.metric("omnistudio_cancelled_requests_total") == before + 1


def test_a_body_cut_off_mid_way_is_counted_not_a_traceback(shared_server: Server) -> None:
    route = "/v1/audio/speech"
    before_499, before_500 = _requests(shared_server, route, "499"), _requests(shared_server, route, "500")
    with socket.create_connection(("127.0.0.1", shared_server.port)) as sock:
        sock.sendall(f"POST {route} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: 100\r\n\r\n".encode() + b'{"input":')  # 9 of the 100 bytes, then gone
    wait_until(lambda: _requests(shared_server, route, "499") > before_499, timeout=HANG_S,
               what="the cut-off request counted")
    assert _requests(shared_server, route, "500") == before_500
    assert "Traceback" not in shared_server.output and "Exception in ASGI" not in shared_server.output


def test_render_against_a_server_that_stops_answering_is_one_line(omnistudio_home: Path, tmp_path: Path) -> None:
    """SIGSTOP mid-render: the link's keepalive notices, the resend finds no answer; one line, no traceback."""
    server = Server()
    script = tmp_path / "long.txt"
    script.write_text(LONG + "\n")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "omnistudio.cli", "render", str(script), "-o",
                                 str(tmp_path / "out.wav"), "--server", server.url, "--voice", "ruby",
                                 "--num-step", "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: server.metric("omnistudio_queue_depth") >= 1 or proc.poll() is not None, timeout=300,
                   what="the render's request in flight")
        assert proc.poll() is None, proc.communicate()
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            _out, err = proc.communicate(timeout=300)
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
    finally:
        server.stop()
    lines = err.strip().splitlines()
    assert proc.returncode not in (0, None)
    assert len(lines) == 1 and lines[0].startswith("omnistudio:") and "server" in lines[0], err
    assert not (tmp_path / "out.wav").exists()  # nothing half-written
