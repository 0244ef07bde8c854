"""The WebSocket's streamed input (issue 51): ``speak`` with ``input: "stream"``, then the text in ``text``
messages as a model writes it, ``flush``, ``end``; audio and per-sentence events come back as the sentences
complete. Driven with ``websockets`` against the real ``omnistudio serve``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import numpy as np

from support.server import Server
from support.wait import HANG_S

TEXT = "Good evening. The price rose to 3.5 dollars, said Dr. Smith.\nHere is the weather."
STEPS = 2


async def _session(server: Server, messages: list[dict[str, Any] | str], wait_first: bool = False
                   ) -> tuple[list[dict[str, Any]], bytes, int | None]:
    """Send ``messages`` (a str: a raw text frame) and read everything back; ``wait_first``: hold the rest
    until the first sentence's audio has come back."""
    import websockets

    events: list[dict[str, Any]] = []
    audio = bytearray()
    async with websockets.connect(f"ws://127.0.0.1:{server.port}/ws/tts/stream-omni", max_size=None) as ws:
        first, *rest = messages
        await ws.send(json.dumps(first))
        if wait_first:
            for message in rest[:1]:
                await ws.send(json.dumps(message))
            while not any(e.get("type") == "sentence_end" for e in events):
                frame = await asyncio.wait_for(ws.recv(), HANG_S)
                if isinstance(frame, bytes):
                    audio += frame
                else:
                    events.append(json.loads(frame))
            rest = rest[1:]
        for message in rest:
            await ws.send(message if isinstance(message, str) else json.dumps(message))
        try:
            async for frame in ws:
                if isinstance(frame, bytes):
                    audio += frame
                else:
                    events.append(json.loads(frame))
        except websockets.ConnectionClosed:
            pass
        code = ws.close_code
    return events, bytes(audio), code


def _speak() -> dict[str, Any]:
    return {"type": "speak", "input": "stream", "voice": "ruby", "num_step": STEPS, "seed": 4, "pcm": "f32"}


def test_text_streamed_in_chunks_is_the_take_of_the_whole_text(shared_server: Server) -> None:
    pieces = [{"type": "text", "text": TEXT[i:i + 4]} for i in range(0, len(TEXT), 4)]
    events, audio, code = asyncio.run(_session(shared_server, [_speak(), *pieces, {"type": "end"}]))
    assert code == 1000 and events[0]["type"] == "start" and events[-1]["type"] == "done", events[-2:]
    said = [e["text"] for e in events if e["type"] == "sentence_start"]
    assert said == ["Good evening.", "The price rose to 3.5 dollars, said Dr. Smith.", "Here is the weather."]
    whole, whole_audio, _ = asyncio.run(_session(shared_server, [
        {"type": "speak", "script": TEXT, "voice": "ruby", "num_step": STEPS, "seed": 4, "pcm": "f32"}]))
    assert np.array_equal(np.frombuffer(audio, "<f4"), np.frombuffer(whole_audio, "<f4"))
    assert events[-1]["sentences"] == whole[-1]["sentences"] == 3


def test_a_sentence_comes_back_before_the_text_ends(shared_server: Server) -> None:
    """The first sentence's audio arrives while the client still holds the rest of its text."""
    messages = [_speak(), {"type": "text", "text": "Good evening. Here"}, {"type": "text", "text": " is the news."},
                {"type": "flush"}, {"type": "end"}]
    events, audio, _ = asyncio.run(_session(shared_server, messages, wait_first=True))
    ends = [e for e in events if e["type"] == "sentence_end"]
    assert len(ends) == 2 and events[-1]["type"] == "done" and len(audio) == 4 * events[-1]["frames"]


def test_a_flood_of_one_character_frames_and_the_limits(shared_server: Server) -> None:
    text = "Good evening. " * 40
    flood = [{"type": "text", "text": c} for c in text]
    events, _audio, _ = asyncio.run(_session(shared_server, [_speak(), *flood, {"type": "end"}]))
    assert events[-1]["type"] == "done" and events[-1]["sentences"] == 40
    # a message that is none of the protocol's: an error frame and close 1008, the take stopped
    events, _audio, code = asyncio.run(_session(shared_server, [_speak(), {"type": "text", "text": "Hello. "},
                                                                '{"type": "shout"}']))
    assert code == 1008 and events[-1]["type"] == "error" and "shout" in events[-1]["message"]
    # text with the take's request already made elsewhere: refused before any take
    events, _audio, code = asyncio.run(_session(shared_server, [
        {"type": "speak", "input": "stream", "text": "Hello.", "voice": "ruby"}]))
    assert code == 1008 and "leave text, script and items out" in events[-1]["message"]
    assert httpx.get(f"{shared_server.url}/health", timeout=HANG_S).status_code == 200


def test_the_client_library_streams_a_models_tokens(shared_server: Server) -> None:
    """``omnistudio.client.text_stream.speak_stream``: tokens from a generator (as a model yields them) in,
    each sentence's audio out, the same samples as the whole script over the WebSocket."""
    from omnistudio.client.text_stream import speak_stream

    def tokens() -> Any:
        yield from (w if i == 0 else " " + w for i, w in enumerate(TEXT.replace("\n", " \n").split(" ")))

    sentences = list(speak_stream(shared_server.url, tokens(), voice="ruby", seed=4, num_step=STEPS))
    assert [s.text for s in sentences] == ["Good evening.", "The price rose to 3.5 dollars, said Dr. Smith.",
                                           "Here is the weather.", ""]
    assert all(s.pcm.size > 0 and s.end is not None and s.voice == "ruby" for s in sentences[:-1])
    assert sentences[-1].index == -1 and sentences[-1].end is None  # the take's last fade
    _events, whole_audio, _ = asyncio.run(_session(shared_server, [
        {"type": "speak", "script": TEXT, "voice": "ruby", "num_step": STEPS, "seed": 4, "pcm": "f32"}]))
    assert np.array_equal(np.concatenate([s.pcm for s in sentences]), np.frombuffer(whole_audio, "<f4"))

