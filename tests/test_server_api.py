"""`omnistudio serve` over the network: the official openai client, websockets, the seed's /tts routes,
concurrent clients batched bit-identically, cancel on disconnect, and one-line 4xx errors."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import stat
import struct
import threading
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile as sf

from tests.server_support import Server

STEPS = 3
LONG = " ".join(f"Sentence number {i} is here." for i in range(1, 13))


@pytest.fixture(scope="module")
def server(omnistudio_home: Path) -> Any:
    srv = Server("--max-batch", "8", "--max-queue", "32")
    yield srv
    srv.stop()


def speech(server: Server, text: str, seed: int = 0, fmt: str = "pcm", **extra: Any) -> httpx.Response:
    body = {"model": "omnivoice", "input": text, "voice": "ruby", "response_format": fmt,
            "num_step": STEPS, "seed": seed, **extra}
    return httpx.post(f"{server.url}/v1/audio/speech", json=body, timeout=120)


def test_openai_client_every_format(server: Server) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=f"{server.url}/v1", api_key="unused-on-loopback")
    text = "Good evening. Here is the news."
    extra = {"num_step": STEPS, "seed": 7}
    raw = client.audio.speech.create(model="omnivoice", voice="ruby", input=text, response_format="pcm",
                                     extra_body=extra).content
    pcm = np.frombuffer(raw, "<i2")
    assert pcm.size > 24_000 * 0.5 and np.abs(pcm).max() > 0
    for fmt in ("wav", "flac", "mp3", "opus"):
        body = client.audio.speech.create(model="omnivoice", voice="ruby", input=text, response_format=fmt,
                                          extra_body=extra).content
        data, rate = sf.read(io.BytesIO(body), dtype="int16")
        assert rate == 24_000, fmt
        if fmt in ("wav", "flac"):  # lossless: the very samples of the pcm response
            assert np.array_equal(data, pcm), fmt
        else:
            assert abs(len(data) - pcm.size) < 0.05 * pcm.size, fmt
    with client.audio.speech.with_streaming_response.create(model="omnivoice", voice="ruby", input=text,
                                                            response_format="pcm", extra_body=extra) as resp:
        chunks = list(resp.iter_bytes())
    assert b"".join(chunks) == raw
    # Opus streams too: the Ogg pages of each sentence as it is done, joined one valid file
    with client.audio.speech.with_streaming_response.create(model="omnivoice", voice="ruby", input=LONG,
                                                            response_format="opus", extra_body=extra) as resp:
        pages = list(resp.iter_bytes())
    data, rate = sf.read(io.BytesIO(b"".join(pages)), dtype="int16")
    long_pcm = client.audio.speech.create(model="omnivoice", voice="ruby", input=LONG, response_format="pcm",
                                          extra_body=extra).content
    assert len(pages) > 1 and rate == 24_000 and len(data) == len(long_pcm) // 2


def test_sse_stream_carries_the_same_audio(server: Server) -> None:
    body = {"input": "Good evening. Here is the news.", "voice": "ruby", "response_format": "pcm",
            "stream_format": "sse", "num_step": STEPS, "seed": 7}
    with httpx.stream("POST", f"{server.url}/v1/audio/speech", json=body, timeout=120) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith("data: ")]
    assert [e["type"] for e in events[-1:]] == ["speech.audio.done"]
    assert {e["type"] for e in events[:-1]} == {"speech.audio.delta"}
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert audio == speech(server, "Good evening. Here is the news.", seed=7).content


async def _ws(server: Server, request: dict[str, Any], cancel_after_frames: int | None = None
              ) -> tuple[list[Any], bytes]:
    import websockets

    messages: list[Any] = []
    audio = b""
    async with websockets.connect(f"ws://127.0.0.1:{server.port}/ws/tts/stream-omni") as ws:
        await ws.send(json.dumps(request))
        async for message in ws:
            if isinstance(message, bytes):
                audio += message
                messages.append(len(message))
                if cancel_after_frames is not None and sum(isinstance(m, int) for m in messages) == cancel_after_frames:
                    await ws.send(json.dumps({"type": "cancel"}))
            else:
                messages.append(json.loads(message))
    return messages, audio


def test_websocket_frames_and_telemetry_in_order(server: Server) -> None:
    text = "Good evening. Here is the news."
    messages, audio = asyncio.run(_ws(server, {"text": text, "voice": "ruby", "num_step": STEPS, "seed": 7}))
    kinds = [m["type"] if isinstance(m, dict) else "pcm" for m in messages]
    assert kinds[0] == "start" and messages[0]["sentences"] == 2 and kinds[-1] == "done"
    assert kinds[1:4] == ["sentence_start", "pcm", "sentence_end"]
    assert kinds[4:7] == ["sentence_start", "pcm", "sentence_end"]
    ends = [m for m in messages if isinstance(m, dict) and m["type"] == "sentence_end"]
    assert [e["index"] for e in ends] == [0, 1]
    assert all(e["timings"]["audio_s"] > 0 and e["loudness"]["integrated_lufs"] is not None for e in ends)
    done = messages[-1]
    assert done["frames"] * 2 == len(audio) and 0 < done["ttfa_s"] <= done["wall_s"]
    assert audio == speech(server, text, seed=7).content  # the same take as the HTTP route


def test_websocket_preplanned_items_f32_exact(server: Server) -> None:
    """Pre-planned items come back as the exact float32 samples rendered, alone or with others."""
    item = {"text": "Good evening.", "voice": "ruby", "lang": "en", "seed": 11}
    other = {"text": "Here is the news.", "voice": "ruby", "lang": "en", "seed": 12}
    _, alone = asyncio.run(_ws(server, {"items": [item], "pcm": "f32", "num_step": STEPS}))
    messages, both = asyncio.run(_ws(server, {"items": [other, item], "pcm": "f32", "num_step": STEPS}))
    frames = [m["frames"] for m in messages if isinstance(m, dict) and m["type"] == "sentence_end"]
    assert len(both) == 4 * sum(frames)
    assert both[4 * frames[0]:] == alone
    assert np.isfinite(np.frombuffer(alone, "<f4")).all()


def test_websocket_cancel_stops_within_one_step(server: Server) -> None:
    before = server.metric("omnistudio_cancelled_requests_total")
    messages, _ = asyncio.run(_ws(server, {"text": LONG, "voice": "ruby", "num_step": 8, "seed": 1},
                                  cancel_after_frames=1))
    assert messages[-1] == {"type": "cancelled"}
    assert sum(1 for m in messages if isinstance(m, dict) and m["type"] == "sentence_end") < 12
    assert server.metric("omnistudio_cancelled_requests_total") == before + 1
    assert server.metric("omnistudio_steps_after_cancel") == 0


def test_generate_headers_agree_with_analyze(server: Server, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.cli import main

    resp = httpx.post(f"{server.url}/tts/generate", json={"text": "Good evening. Here is the news.",
                      "voice": "ruby", "num_step": STEPS, "seed": 2, "target_lufs": -20}, timeout=120)
    assert resp.status_code == 200 and resp.headers["content-type"] == "audio/wav"
    out = tmp_path / "body.wav"
    out.write_bytes(resp.content)
    assert main(["analyze", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert float(resp.headers["X-TTS-Loudness-LUFS"]) == pytest.approx(report["integrated_lufs"], abs=0.1)
    assert float(resp.headers["X-TTS-Loudness-LUFS"]) == pytest.approx(-20, abs=0.5)
    assert float(resp.headers["X-TTS-True-Peak-dB"]) == pytest.approx(report["true_peak_dbtp"], abs=0.1)
    assert float(resp.headers["X-TTS-Crest-Factor-dB"]) == pytest.approx(report["crest_factor_db"], abs=0.1)
    assert float(resp.headers["X-TTS-RTF"]) > 0


def test_generate_shm_reads_back_exactly(server: Server) -> None:
    name = f"omnistudio-test-{os.getpid()}"
    request = {"text": "Good evening.", "voice": "ruby", "num_step": STEPS, "seed": 4}
    resp = httpx.post(f"{server.url}/tts/generate-shm", json={**request, "name": name}, timeout=120)
    assert resp.status_code == 200, resp.text
    path = Path("/dev/shm") / name
    try:
        answer = resp.json()
        assert answer["name"] == name and answer["path"] == str(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        # The reader documented in omnistudio/audio/shm.py and docs/server.md, as written there.
        raw = open(path, "rb").read()
        magic, version, channels, rate, dtype, _, frames, offset = struct.unpack_from("<8sHHIHHQI", raw)
        assert magic == b"OMNIPCM\0" and version == 1 and dtype == 1 and rate == 24_000
        pcm = np.frombuffer(raw, "<f4", frames * channels, offset).reshape(frames, channels)
        assert frames == answer["frames"]
        _, f32 = asyncio.run(_ws(server, {**request, "pcm": "f32"}))
        assert pcm[:, 0].tobytes() == f32  # the same take, bit for bit
    finally:
        path.unlink(missing_ok=True)
    bad = httpx.post(f"{server.url}/tts/generate-shm", json={**request, "name": "../etc/passwd"}, timeout=30)
    assert bad.status_code == 400 and "slash" in bad.json()["error"]["message"]


def test_eight_concurrent_clients_match_alone_and_are_batched(server: Server) -> None:
    texts = [f"Client {i} reads line {i}." for i in range(8)]
    alone = [speech(server, t, seed=100 + i).content for i, t in enumerate(texts)]
    batched_before = server.metric("omnistudio_batch_size_count") - server.metric('omnistudio_batch_size_bucket{le="1.0"}')
    results: list[bytes | None] = [None] * 8
    gate = threading.Barrier(8)

    def client(i: int) -> None:
        gate.wait()
        results[i] = speech(server, texts[i], seed=100 + i).content

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(r == a for r, a in zip(results, alone))
    batched = server.metric("omnistudio_batch_size_count") - server.metric('omnistudio_batch_size_bucket{le="1.0"}')
    assert batched > batched_before  # some diffusion pass held more than one request's sentence


def test_disconnect_cancels_and_others_finish(server: Server) -> None:
    before = server.metric("omnistudio_cancelled_requests_total")
    texts = ["Other one speaks. And goes on.", "Other two speaks. And goes on."]
    alone = [speech(server, t, seed=5).content for t in texts]
    results: list[bytes | None] = [None, None]

    def other(i: int) -> None:
        results[i] = speech(server, texts[i], seed=5).content

    threads = [threading.Thread(target=other, args=(i,)) for i in range(2)]
    with httpx.stream("POST", f"{server.url}/v1/audio/speech", timeout=120,
                      json={"input": LONG, "voice": "ruby", "response_format": "pcm", "num_step": 8}) as resp:
        chunks = resp.iter_bytes()  # kept: a dropped iterator would close the connection now
        assert next(chunks)
        for t in threads:
            t.start()
        threading.Event().wait(0.3)  # the others queue (and batch) with the long take
    # leaving the block closes the connection mid-stream
    for t in threads:
        t.join(120)
    assert results == alone
    for _ in range(100):
        if server.metric("omnistudio_cancelled_requests_total") > before:
            break
        threading.Event().wait(0.1)
    assert server.metric("omnistudio_cancelled_requests_total") == before + 1
    assert server.metric("omnistudio_steps_after_cancel") == 0


BAD = [
    ("bad-json", b"{not json", "not valid JSON"),
    ("unknown-voice", {"input": "Hi.", "voice": "nobody_here"}, "unknown anchor 'nobody_here'"),
    ("unknown-format", {"input": "Hi.", "response_format": "aac"}, "use one of wav, flac, mp3, opus, pcm"),
    ("empty-input", {"input": "   "}, "input is empty"),
    ("alpha", {"input": "Hi.", "voice": "ruby+storm@1.5"}, "outside [0, 1]"),
    ("too-long", {"input": "x" * 5000}, "the limit is 4096"),
    ("num-step", {"input": "Hi.", "num_step": 0}, "num_step 0 is out of range"),
    ("language", {"input": "Hi.", "language": "fr"}, "unknown language 'fr'"),
    ("too-big", b'{"input": "' + b"x" * (1 << 20) + b'"}', "over 1048576 bytes"),
    ("not-object", b"[1, 2]", "must be a JSON object"),
]


@pytest.mark.parametrize(("body", "needle"), [pytest.param(b, n, id=i) for i, b, n in BAD])
def test_bad_requests_get_one_line_4xx(server: Server, body: Any, needle: str) -> None:
    kwargs = {"content": body} if isinstance(body, bytes) else {"json": body}
    resp = httpx.post(f"{server.url}/v1/audio/speech", timeout=30, **kwargs)
    assert 400 <= resp.status_code < 500
    error = resp.json()["error"]
    assert needle in error["message"] and "\n" not in error["message"]
    assert set(error) == {"message", "type", "param", "code"}
    assert httpx.get(f"{server.url}/health").json()["status"] == "ready"


def test_listings_and_metrics(server: Server) -> None:
    voices = httpx.get(f"{server.url}/v1/audio/voices").json()
    ruby = next(v for v in voices["voices"] if v["id"] == "ruby")
    assert ruby["prompts"]["en"] == "ready" and "ruby:es" in ruby["examples"]
    assert all("+" in d["voice"] and "@" in d["voice"] for d in voices["duos"])
    models = httpx.get(f"{server.url}/v1/models").json()
    assert models["data"][0]["id"] == "omnivoice" and models["data"][0]["omnistudio"]["model"] == "tiny"
    text = httpx.get(f"{server.url}/metrics").text
    for name in ("omnistudio_requests_total", "omnistudio_queue_depth", "omnistudio_batch_size_bucket",
                 "omnistudio_ttfa_seconds_bucket", "omnistudio_rtf_bucket", "omnistudio_audio_seconds_total"):
        assert name in text
    assert "POST /v1/audio/speech 200 audio=" in server.log.read_text()  # one log line per request
