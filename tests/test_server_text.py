"""The text front-end over a real `omnistudio serve`: `POST /v1/text/normalize`, the global lexicon
through `GET`/`PUT /v1/lexicon` (read at each request), the WebSocket's two forms of a sentence, and the
OpenAI route's `normalize: false` and `instructions` (refused, never ignored)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.server import Server

NEWS = "Habló la presidenta Sheinbaum: subió un 3,2 %."


@pytest.fixture
def lexicon(shared_server: Server) -> Iterator[str]:
    """The session server's URL; its global lexicon is put back as it was after the test."""
    before = httpx.get(f"{shared_server.url}/v1/lexicon").json()
    yield shared_server.url
    assert httpx.put(f"{shared_server.url}/v1/lexicon", json=before).status_code == 200


def test_normalize_says_what_the_model_will_hear(shared_server: Server) -> None:
    r = httpx.post(f"{shared_server.url}/v1/text/normalize", json={"text": NEWS, "language": "es"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["written"] == NEWS and "tres coma dos por ciento" in body["spoken"]
    span = next(s for s in body["spans"] if s["rule"] == "percent")
    assert body["written"][span["written_start"]:span["written_end"]] == "3,2 %"
    assert body["spoken"][span["spoken_start"]:span["spoken_end"]] == "tres coma dos por ciento"
    bad = httpx.post(f"{shared_server.url}/v1/text/normalize", json={"text": NEWS, "language": "fr"})
    assert bad.status_code == 400 and "unknown language 'fr'" in bad.json()["error"]["message"]


def test_a_lexicon_put_is_spoken_from_the_next_request(lexicon: str) -> None:
    entry = {"word": "Sheinbaum", "say": "Sháinbaum", "lang": "es", "case_sensitive": False, "phones": False}
    r = httpx.put(f"{lexicon}/v1/lexicon", json={"entries": [entry]})
    assert r.status_code == 200 and r.json()["entries"] == [entry]
    assert httpx.get(f"{lexicon}/v1/lexicon").json()["entries"] == [entry]
    spoken = httpx.post(f"{lexicon}/v1/text/normalize", json={"text": NEWS, "language": "es"}).json()
    assert spoken["spoken"].startswith("Habló la presidenta Sháinbaum:")
    assert [s["detail"] for s in spoken["spans"] if s["rule"] == "lexicon"] == ["Sheinbaum"]

    # the WebSocket says both forms of each sentence; the model got the lexicon's
    frames = asyncio.run(_ws(lexicon, {"text": NEWS, "voice": "ruby", "language": "es", "num_step": 2}))
    start = next(f for f in frames if f["type"] == "sentence_start")
    assert start["text"] == NEWS and start["spoken"].startswith("Habló la presidenta Sháinbaum:")

    # one bad entry: 400, one line, and the lexicon as it was
    bad = httpx.put(f"{lexicon}/v1/lexicon", json={"entries": [entry, {"word": "Xi", "say": "[SH IY1]", "lang": "es",
                                                                       "phones": True}]})
    assert bad.status_code == 400 and "phone notation is English only" in bad.json()["error"]["message"]
    assert httpx.get(f"{lexicon}/v1/lexicon").json()["entries"] == [entry]
    unknown = httpx.put(f"{lexicon}/v1/lexicon", json={"entries": [{**entry, "sound": "x"}]})
    assert unknown.status_code == 400 and "sound" in unknown.json()["error"]["message"]
    # an entry is a respelling, not a text: a 900 KB one is refused, and so is a lexicon past 10,000 entries
    huge = httpx.put(f"{lexicon}/v1/lexicon", json={"entries": [{**entry, "say": "word " * 180_000}]})
    assert huge.status_code == 400 and "the limit is 300" in huge.json()["error"]["message"]
    many = [{**entry, "word": f"Name{i}"} for i in range(10_001)]
    crowd = httpx.put(f"{lexicon}/v1/lexicon", json={"entries": many})
    assert crowd.status_code == 400 and "10000" in crowd.json()["error"]["message"].replace(",", "")
    assert httpx.get(f"{lexicon}/v1/lexicon").json()["entries"] == [entry]


@pytest.mark.parametrize(("body", "needle"), [
    (b'{"text": "A \\ud800 12", "language": "en"}', "lone surrogate U+D800"),
    (b'{"text": ' + b"[" * 5000 + b"]" * 5000 + b', "language": "en"}', "nests deeper than 64 levels"),
    (b"{not json", "not valid JSON"),
])
def test_normalize_refuses_what_is_not_text_in_openais_error_shape(shared_server: Server, body: bytes,
                                                                   needle: str) -> None:
    r = httpx.post(f"{shared_server.url}/v1/text/normalize", content=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert needle in error["message"] and set(error) == {"message", "type", "param", "code"}


async def _ws(url: str, request: dict[str, Any]) -> list[dict[str, Any]]:
    import websockets

    frames = []
    async with websockets.connect(url.replace("http://", "ws://") + "/ws/tts/stream-omni") as ws:
        await ws.send(json.dumps(request))
        async for message in ws:
            if isinstance(message, str):
                frames.append(json.loads(message))
    return frames


def test_openai_route_normalize_false_and_instructions(shared_server: Server) -> None:
    import openai

    client = openai.OpenAI(base_url=f"{shared_server.url}/v1", api_key="unused", max_retries=0)

    def speak(text: str, **extra: Any) -> bytes:
        return client.audio.speech.create(model="omnivoice", voice="ruby", input=text, response_format="wav",
                                          extra_body={"num_step": 2, "seed": 1, **extra}).content

    written = speak("Up 3.2% today.")
    assert written == speak("Up three point two percent today.")  # what is spoken is the identity
    assert speak("Up 3.2% today.", normalize=False) != written  # honoured: the digits go to the model
    with pytest.raises(openai.BadRequestError) as refused:
        client.audio.speech.create(model="omnivoice", voice="ruby", input="Hello.", response_format="wav",
                                   instructions="Speak cheerfully.", extra_body={"num_step": 2})
    assert "instructions apply to voice 'design' only" in str(refused.value)  # ruby's voice is fixed
