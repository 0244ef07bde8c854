"""SSML over a real `omnistudio serve`: a `<break>` is the exact pause a script's `[pause]` is, `<sub>`
changes what the model is asked to say (the WebSocket's `sentence_start` carries both forms), and an
unsupported element is a 400 naming it on every route, never read aloud."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import numpy as np

from support.server import Server
from support.wait import HANG_S

RATE = 24_000
BREAK = '<speak>Good evening. <break time="600ms"/> Here is the news.</speak>'


async def _ws(url: str, request: dict[str, Any]) -> list[dict[str, Any] | bytes]:
    """Every message of one WebSocket take, in order (JSON frames as dicts, PCM frames as bytes); a
    refused request's close (1008) ends the list."""
    import websockets

    messages: list[dict[str, Any] | bytes] = []
    async with websockets.connect(url.replace("http://", "ws://") + "/ws/tts/stream-omni") as ws:
        await ws.send(json.dumps(request))
        try:
            async for message in ws:
                messages.append(message if isinstance(message, bytes) else json.loads(message))
        except websockets.ConnectionClosedError as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1008
    return messages


def _speak(server: Server, text: str, **extra: Any) -> list[dict[str, Any] | bytes]:
    request = {"text": text, "voice": "ruby", "language": "en", "num_step": 2, "seed": 4, "pcm": "f32", **extra}
    messages = asyncio.run(_ws(server.url, request))
    assert not any(isinstance(m, dict) and m["type"] == "error" for m in messages), messages
    return messages


def _pause_after_first(messages: list[dict[str, Any] | bytes]) -> float:
    """Seconds of silence the server put after sentence 0: its stitched piece (the binary frame between
    its sentence_start and sentence_end) less the frames the model rendered for it (sentence_end's
    frames); the seams' zero-crossing alignment trims at most 3 ms of the sentence."""
    start = next(i for i, m in enumerate(messages) if isinstance(m, dict) and m["type"] == "sentence_start")
    piece, end = messages[start + 1], messages[start + 2]
    assert isinstance(piece, bytes) and isinstance(end, dict) and end["type"] == "sentence_end" and end["index"] == 0
    return (len(np.frombuffer(piece, "<f4")) - end["frames"]) / RATE


def test_a_break_is_exactly_the_pause_between_two_sentences(shared_server: Server) -> None:
    messages = _speak(shared_server, BREAK)
    starts = [m for m in messages if isinstance(m, dict) and m["type"] == "sentence_start"]
    assert [s["text"] for s in starts] == ["Good evening.", "Here is the news."]
    assert abs(_pause_after_first(messages) - 0.6) <= 0.010
    # one path: the same take, bit for bit, as the script's own pause tag
    script = _speak(shared_server, "Good evening. [pause 0.6] Here is the news.")
    assert [m for m in messages if isinstance(m, bytes)] == [m for m in script if isinstance(m, bytes)]


def test_sub_changes_what_is_spoken_and_keeps_what_is_written(shared_server: Server) -> None:
    messages = _speak(shared_server, '<speak xml:lang="es-AR">Habló la <sub alias="Organización Mundial de la '
                                     'Salud">OMS</sub>.</speak>', language=None)
    start = next(m for m in messages if isinstance(m, dict) and m["type"] == "sentence_start")
    assert start["text"] == "Habló la OMS." and start["lang"] == "es"
    assert start["spoken"] == "Habló la Organización Mundial de la Salud."
    plain = next(m for m in _speak(shared_server, "Habló la OMS.", language="es")
                 if isinstance(m, dict) and m["type"] == "sentence_start")
    assert plain["spoken"] == "Habló la o eme ese."  # without the <sub>, the front-end spells it


def test_an_unsupported_element_is_a_400_naming_it_on_every_route(shared_server: Server) -> None:
    url = shared_server.url
    doc = '<speak>Good <prosody rate="slow">evening</prosody>.</speak>'
    line = "SSML element <prosody> is not supported: use <break>, <say-as>, <sub>"
    speech = httpx.post(f"{url}/v1/audio/speech", json={"model": "omnivoice", "input": doc, "voice": "ruby",
                                                         "response_format": "wav"}, timeout=HANG_S)
    assert speech.status_code == 400 and speech.json()["error"]["message"] == line
    assert speech.json()["error"]["type"] == "invalid_request_error"
    generate = httpx.post(f"{url}/tts/generate", json={"text": doc, "voice": "ruby"}, timeout=HANG_S)
    assert generate.status_code == 400 and generate.json()["error"]["message"] == line
    frames = asyncio.run(_ws(url, {"script": doc, "voice": "ruby"}))
    assert len(frames) == 1 and isinstance(frames[0], dict)
    assert (frames[0]["type"], frames[0]["message"], frames[0]["status"]) == ("error", line, 400)
    malformed = httpx.post(f"{url}/tts/generate", json={"text": "<speak>Good evening.", "voice": "ruby"}, timeout=HANG_S)
    assert malformed.status_code == 400
    assert malformed.json()["error"]["message"].startswith("SSML is not well-formed XML")
    off = httpx.post(f"{url}/tts/generate", json={"text": '<speak><sub alias="x">Y</sub>.</speak>', "voice": "ruby",
                                                  "normalize": False}, timeout=HANG_S)
    assert off.status_code == 400 and "normalize: false cannot say SSML <sub>" in off.json()["error"]["message"]
