"""The WebSocket's prepare request (the remote studio's prepare phase), on a real server subprocess."""

from __future__ import annotations

import json

import pytest
from websockets.exceptions import ConnectionClosedError
from websockets.sync.client import connect

from support.server import Server

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def server(shared_server: Server) -> Server:
    return shared_server


def _ask(server: Server, message: dict) -> list:
    with connect(server.url.replace("http", "ws") + "/ws/tts/stream-omni", proxy=None) as ws:
        ws.send(json.dumps(message))
        frames = []
        try:
            for raw in ws:
                frames.append(json.loads(raw))
        except ConnectionClosedError:  # an error closes with 1008 (policy violation) after its frame
            pass
        return frames


def test_prepare_reports_each_voice_then_prepared(server: Server) -> None:
    frames = _ask(server, {"type": "prepare", "voices": [{"voice": "ruby", "lang": "en"},
                                                          {"voice": "ruby+atlas@0.6", "lang": "en"}]})
    assert frames[-1] == {"type": "prepared"}
    done = [(f["done"], f["total"], f["voice"]) for f in frames if f["type"] == "prepare" and f["action"] == "done"]
    assert done == [(1, 2, "ruby"), (2, 2, "ruby+atlas@0.60")]


@pytest.mark.parametrize("message", [{"type": "prepare", "voices": []},
                                     {"type": "prepare", "voices": [{"voice": "nobody", "lang": "en"}]},
                                     {"type": "prepare", "voices": [{"voice": "ruby", "lang": "fr"}]}])
def test_a_bad_prepare_is_a_400_error_frame(server: Server, message: dict) -> None:
    frames = _ask(server, message)
    assert frames[-1]["type"] == "error" and frames[-1]["status"] == 400
    assert "\n" not in frames[-1]["message"]
