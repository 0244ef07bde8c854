"""ElevenLabs' text-to-speech shapes (issue 51): an agent framework's own ElevenLabs client, pointed at a real
``omnistudio serve`` by its base URL, streams text and gets the server's own take back.

LiveKit Agents' ``livekit-plugins-elevenlabs`` drives ``multi-stream-input`` and ``POST .../stream`` as it ships;
Pipecat's client (not installable beside our pins: docs/decisions.md) sends the sequence logged from it, here
with ``websockets``: sentences without a trailing space, a keep-alive, ``flush`` + ``close_context``, and
``close_socket``."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile as sf

from support.server import Server
from support.wait import HANG_S

TEXT = "Good evening. The price rose to 3.5 dollars, said Dr. Smith. Here is the weather."
WORDS = [w + " " for w in TEXT.split(" ")]
RATE = 24000


def _speech_pcm(server: Server, text: str) -> np.ndarray:
    """The server's own render of ``text`` (OpenAI's route, PCM16 at 24 kHz), the same default seed and steps."""
    answer = httpx.post(f"{server.url}/v1/audio/speech", json={"input": text, "voice": "ruby", "response_format": "pcm"},
                        timeout=HANG_S)
    assert answer.status_code == 200, answer.text
    return np.frombuffer(answer.content, "<i2")


async def _livekit(server: Server, pushes: list[str], encoding: str, auto_mode: bool = False) -> tuple[bytes, int]:
    """Stream ``pushes`` through LiveKit's ElevenLabs TTS as an agent does; its audio frames joined, and their rate."""
    import aiohttp
    from livekit.plugins import elevenlabs

    async with aiohttp.ClientSession() as http:
        tts = elevenlabs.TTS(api_key="k", base_url=f"{server.url}/v1", voice_id="ruby", encoding=encoding,  # type: ignore[arg-type]
                             http_session=http, auto_mode=auto_mode)
        stream = tts.stream()
        for text in pushes:
            stream.push_text(text)
        stream.end_input()
        audio, rate = bytearray(), 0
        async for event in stream:
            audio += bytes(event.frame.data)
            rate = event.frame.sample_rate
        await stream.aclose()
        await tts.aclose()
    return bytes(audio), rate


def test_livekit_streams_word_by_word_and_gets_the_servers_own_take(shared_server: Server) -> None:
    audio, rate = asyncio.run(_livekit(shared_server, WORDS, "pcm_24000"))
    assert rate == RATE
    assert np.array_equal(np.frombuffer(audio, "<i2"), _speech_pcm(shared_server, TEXT))


def test_livekit_sentence_mode_speaks_each_sentence_as_it_arrives(shared_server: Server) -> None:
    """auto_mode: LiveKit sends each sentence with a flush; each is spoken when it arrives (a line each)."""
    sentences = ["The price rose to 3.5 dollars, said Dr. Smith. ", "Here is the weather for the whole of tonight."]
    audio, rate = asyncio.run(_livekit(shared_server, sentences, "pcm_24000", auto_mode=True))
    own = _speech_pcm(shared_server, "\n".join(s.strip() for s in sentences))
    assert rate == RATE and np.array_equal(np.frombuffer(audio, "<i2"), own)


def test_livekit_at_16_khz_lasts_as_long_as_the_render(shared_server: Server) -> None:
    audio, rate = asyncio.run(_livekit(shared_server, WORDS, "pcm_16000"))
    own = _speech_pcm(shared_server, TEXT)
    assert rate == 16000 and abs(len(audio) // 2 - len(own) * 2 // 3) <= 2


def test_livekit_default_mp3_decodes_to_the_takes_length(shared_server: Server) -> None:
    audio, rate = asyncio.run(_livekit(shared_server, WORDS, "mp3_22050_32"))
    own_s = len(_speech_pcm(shared_server, TEXT)) / RATE
    assert rate == 22050 and audio
    got_s = len(audio) / 2 / rate
    assert abs(got_s - own_s) < 0.15, (got_s, own_s)  # LAME's delay and last frame's padding: about 0.08 s


def test_livekit_synthesize_posts_and_gets_the_same_samples(shared_server: Server) -> None:
    import aiohttp
    from livekit.plugins import elevenlabs

    async def run() -> bytes:
        async with aiohttp.ClientSession() as http:
            tts = elevenlabs.TTS(api_key="k", base_url=f"{shared_server.url}/v1", voice_id="ruby",
                                 encoding="pcm_24000", http_session=http)
            audio = bytearray()
            async for event in tts.synthesize(TEXT):
                audio += bytes(event.frame.data)
            await tts.aclose()
        return bytes(audio)

    got, own = np.frombuffer(asyncio.run(run()), "<i2"), _speech_pcm(shared_server, TEXT)
    assert np.array_equal(got[:len(own)], own)  # LiveKit pads its last 10 ms frame with zeros
    assert len(got) - len(own) <= 240 and not got[len(own):].any()


# ------------------------------------------------------------------ the wire, message by message
async def _socket(server: Server, messages: list[dict[str, Any] | bytes], path: str = "multi-stream-input",
                  query: str = "output_format=pcm_24000", voice: str = "ruby",
                  headers: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], int | None]:
    """Send ``messages`` on the socket, then read every reply until the server closes it."""
    import websockets

    replies: list[dict[str, Any]] = []
    url = f"ws://127.0.0.1:{server.port}/v1/text-to-speech/{voice}/{path}?{query}"
    async with websockets.connect(url, max_size=None, additional_headers=headers or {}) as ws:
        try:
            for message in messages:
                await ws.send(message if isinstance(message, bytes) else json.dumps(message))
        except websockets.ConnectionClosed:
            pass  # refused at once: its error is read below
        try:
            while True:
                replies.append(json.loads(await asyncio.wait_for(ws.recv(), HANG_S)))
        except websockets.ConnectionClosed:
            pass
    return replies, ws.close_code


def _pcm(replies: list[dict[str, Any]], context: str | None = None) -> np.ndarray:
    return np.frombuffer(b"".join(base64.b64decode(r["audio"]) for r in replies
                                  if r.get("audio") and r.get("contextId") == context), "<i2")


def test_pipecat_sequence_two_contexts_keepalive_and_close_socket(shared_server: Server) -> None:
    """Pipecat's sentence mode: whole sentences without a trailing space (auto_mode), a keep-alive, flush and
    close_context per turn, a second turn on the same socket, close_socket."""
    a, b = "594b68f3-a", "d31c40fe-b"
    replies, code = asyncio.run(_socket(shared_server, [
        {"text": " ", "context_id": a}, {"text": "Good evening.", "context_id": a},
        {"text": "Here is the weather.", "context_id": a}, {"text": ""},
        {"context_id": a, "flush": True}, {"context_id": a, "close_context": True},
        {"text": " ", "context_id": b, "voice_settings": {"speed": 1.0, "stability": 0.5}},
        {"text": "Turn two.", "context_id": b}, {"context_id": b, "flush": True},
        {"context_id": b, "close_context": True}, {"close_socket": True}],
        query="output_format=pcm_24000&auto_mode=true&model_id=eleven_flash_v2_5"))
    assert code == 1000 and not [r for r in replies if "error" in r], replies[-3:]
    finals = [r["contextId"] for r in replies if r.get("isFinal") is True]
    assert sorted(finals) == sorted([a, b])
    for context in (a, b):  # every audio message of a context comes before its isFinal
        last_audio = max(k for k, r in enumerate(replies) if r.get("audio") and r["contextId"] == context)
        assert last_audio < next(k for k, r in enumerate(replies) if r.get("isFinal") and r["contextId"] == context)
    assert np.array_equal(_pcm(replies, a), _speech_pcm(shared_server, "Good evening.\nHere is the weather."))
    spoken = [r["alignment"] for r in replies if r.get("alignment") and r["contextId"] == a]
    assert "".join("".join(s["chars"]) for s in spoken) == "Good evening. Here is the weather. "
    first = spoken[0]
    assert first["charStartTimesMs"][0] == 0 and len(first["charDurationsMs"]) == len(first["chars"])


def test_stream_input_single_context_ends_on_empty_text(shared_server: Server) -> None:
    replies, code = asyncio.run(_socket(shared_server, [
        {"text": " ", "voice_settings": {}}, *({"text": w} for w in WORDS), {"text": ""}], path="stream-input"))
    assert code == 1000 and replies[-1] == {"isFinal": True}
    assert np.array_equal(_pcm(replies), _speech_pcm(shared_server, TEXT))


def test_a_context_closed_without_a_closing_flush_is_an_interruption(shared_server: Server) -> None:
    """A barge-in as the clients send it: close_context alone after text (Pipecat), or after a flushed sentence
    (LiveKit's auto mode): the take stops (isFinal all the same). A flush of no text, then close_context, is a
    context's end: its audio comes. The socket goes on."""
    before = _cancelled(shared_server)
    replies, code = asyncio.run(_socket(shared_server, [
        {"text": " ", "context_id": "x"}, {"text": "This will be interrupted. And", "context_id": "x"},
        {"context_id": "x", "close_context": True},
        {"text": " ", "context_id": "z"}, {"text": "A sentence said in full. ", "context_id": "z", "flush": True},
        {"context_id": "z", "close_context": True},
        {"text": " ", "context_id": "y"}, {"text": "Next.", "context_id": "y", "flush": True},
        {"text": "", "context_id": "y", "flush": True}, {"context_id": "y", "close_context": True},
        {"close_socket": True}]))
    assert code == 1000 and {r["contextId"] for r in replies if r.get("isFinal")} == {"x", "y", "z"}
    assert len(_pcm(replies, "y")) and _cancelled(shared_server) == before + 2
    assert not [r for r in replies if "error" in r]


def test_a_context_without_text_ends_with_isfinal_alone_and_a_bad_line_is_its_error(shared_server: Server) -> None:
    """A turn with nothing to say (a tool call) gets isFinal and no error; an unknown speaker tag in a context's
    text is that context's error (once), the socket and the other context go on."""
    replies, code = asyncio.run(_socket(shared_server, [
        {"text": " ", "context_id": "quiet"}, {"text": "", "context_id": "quiet", "flush": True},
        {"context_id": "quiet", "close_context": True},
        {"text": " ", "context_id": "bad"}, {"text": "[nobody] Hello there.", "context_id": "bad", "flush": True},
        {"text": "More words. ", "context_id": "bad"}, {"text": "And more. ", "context_id": "bad"},
        {"text": " ", "context_id": "ok"}, {"text": "Good evening.", "context_id": "ok", "flush": True,
                                            "close_context": True},
        {"context_id": "bad", "close_context": True}, {"close_socket": True}],
        query="output_format=pcm_24000&auto_mode=true"))
    assert code == 1000 and {r["contextId"] for r in replies if r.get("isFinal")} == {"quiet", "bad", "ok"}
    errors = [r for r in replies if "error" in r]
    assert len(errors) == 1 and errors[0]["contextId"] == "bad" and "nobody" in errors[0]["message"], errors
    assert len(_pcm(replies, "ok"))


def _cancelled(server: Server) -> float:
    metrics = httpx.get(f"{server.url}/metrics", timeout=HANG_S).text
    return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith("omnistudio_cancelled"))


@pytest.mark.parametrize(("messages", "query", "voice", "said"), [
    ([{"text": " ", "context_id": "a", "colour": "red"}], "", "ruby", "colour: Extra inputs"),
    ([b"\x00\x01"], "", "ruby", "not binary"),
    ([{"text": " "}], "output_format=ogg_48000", "ruby", "output_format 'ogg_48000' is not supported"),
    ([{"text": " "}], "", "nobody", "nobody"),
    ([{"text": " "}], "inactivity_timeout=900", "ruby", "inactivity_timeout"),
])
def test_a_bad_message_or_query_is_an_error_and_1008(shared_server: Server, messages: list[Any], query: str,
                                                    voice: str, said: str) -> None:
    replies, code = asyncio.run(_socket(shared_server, messages, query=query or "output_format=pcm_24000", voice=voice))
    assert code == 1008 and replies[-1]["error"] and said in replies[-1]["message"], replies


def test_a_sixth_context_is_refused_and_the_five_finish(shared_server: Server) -> None:
    opened: list[dict[str, Any] | bytes] = [{"text": " ", "context_id": f"c{k}"} for k in range(6)]
    closed: list[dict[str, Any] | bytes] = [{"text": "Hi.", "context_id": f"c{k}", "flush": True, "close_context": True}
                                            for k in range(5)]
    replies, code = asyncio.run(_socket(shared_server, [*opened, *closed, {"close_socket": True}]))
    refused = [r for r in replies if r.get("error") == "max_active_conversations"]
    assert code == 1000 and len(refused) == 1 and refused[0]["contextId"] == "c5"
    assert {r["contextId"] for r in replies if r.get("isFinal")} == {f"c{k}" for k in range(5)}


def test_an_idle_socket_ends_its_context_with_what_was_complete(shared_server: Server) -> None:
    """inactivity_timeout=1: nothing for a second ends the context (its complete sentence spoken) and the socket."""
    replies, code = asyncio.run(_socket(shared_server, [
        {"text": " ", "context_id": "a"}, {"text": "Good evening. Here", "context_id": "a"}],
        query="output_format=pcm_24000&inactivity_timeout=1"))
    assert code == 1000 and replies[-1] == {"isFinal": True, "contextId": "a"}
    assert len(_pcm(replies, "a"))


def test_http_route_answers_mp3_and_a_bad_format_in_one_line(shared_server: Server) -> None:
    answer = httpx.post(f"{shared_server.url}/v1/text-to-speech/ruby?output_format=mp3_44100_128",
                        json={"text": "Good evening.", "model_id": "eleven_multilingual_v2"}, timeout=HANG_S)
    assert answer.status_code == 200 and answer.headers["content-type"] == "audio/mpeg"
    data, rate = sf.read(io.BytesIO(answer.content))
    assert rate == 44100 and len(data) > 0.2 * rate
    bad = httpx.post(f"{shared_server.url}/v1/text-to-speech/ruby/stream?output_format=pcm_11025",
                     json={"text": "Hi."}, timeout=HANG_S)
    assert bad.status_code == 400 and "pcm_11025" in bad.json()["error"]["message"]


def test_http_with_timestamps_streams_lines_of_audio_and_character_times(shared_server: Server) -> None:
    """Pipecat's HTTP service's route: a JSON line a sentence, audio = the server's own render, every
    character timed from the take's start, in order."""
    with httpx.stream("POST", f"{shared_server.url}/v1/text-to-speech/ruby/stream/with-timestamps",
                      params={"output_format": "pcm_24000"}, json={"text": TEXT, "model_id": "eleven_flash_v2_5"},
                      timeout=HANG_S) as answer:
        assert answer.status_code == 200
        lines = [json.loads(line) for line in answer.iter_lines() if line.strip()]
    own = _speech_pcm(shared_server, TEXT)
    audio = np.frombuffer(b"".join(base64.b64decode(line["audio_base64"]) for line in lines), "<i2")
    assert np.array_equal(audio, own)
    timed = [line["alignment"] for line in lines if "alignment" in line]
    assert "".join("".join(a["characters"]) for a in timed) == TEXT + " "
    starts = [t for a in timed for t in a["character_start_times_seconds"]]
    ends = [t for a in timed for t in a["character_end_times_seconds"]]
    assert starts == sorted(starts) and all(e >= s for s, e in zip(starts, ends)) and ends[-1] <= len(own) / RATE
