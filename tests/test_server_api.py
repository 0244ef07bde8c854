"""`omnistudio serve` over the network: the official openai client, websockets, the seed's /tts routes,
concurrent clients batched bit-identically, cancel on disconnect, and one-line 4xx errors.

Most tests talk to the session's shared server (``shared_server`` in conftest: default flags); the
batching test runs the same app in this process, where it can hold the engine worker until every
request has queued."""

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

from support.server import Server
from support.wait import wait_until
from support.wait import HANG_S

STEPS = 3
LONG = " ".join(f"Sentence number {i} is here." for i in range(1, 13))
# A take a cancel must catch mid-way even when the client is slow to send it (60 sentences of 8 steps).
VERY_LONG = " ".join(f"Sentence number {i} is here." for i in range(1, 61))


@pytest.fixture
def server(shared_server: Server) -> Server:
    return shared_server


def speech(server: Any, text: str, seed: int = 0, fmt: str = "pcm", **extra: Any) -> httpx.Response:
    body = {"model": "omnivoice", "input": text, "voice": "ruby", "response_format": fmt,
            "num_step": STEPS, "seed": seed, **extra}
    return httpx.post(f"{server.url}/v1/audio/speech", json=body, timeout=HANG_S)


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
        else:  # lossy: the same audio within the codec's tolerance
            same_audio(data, pcm, fmt)
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
    same_audio(data, np.frombuffer(long_pcm, "<i2"), "opus")


# Lossy codecs at libsndfile's default quality on the tiny model's audio: a steady buzz, mostly 4-10 kHz,
# with a DC offset. libsndfile trims each codec's delay, so the decoded samples line up with the PCM.
# MP3 keeps the waveform (measured r 0.999). Opus drops the DC and, at these frequencies, keeps each
# band's energy rather than the waveform (measured waveform r -0.5..0.65), so both are compared by
# their spectrogram: energy in 1 kHz bands from 1 to 12 kHz, 20 ms frames, where the PCM has sound.
# Measured on these (fixed-seed) takes: opus r 0.88-0.97, median 1.5-1.7 dB apart; mp3 0.98, 0.4 dB.
# Against the PCM, noise at the same level scores r 0.0 and 19 dB, another take r 0.62-0.67 and 4.7 dB,
# the take half a second late r 0.66-0.68, at half the level 6 dB, low-passed 12 dB; silence fails.
MIN_SPECTRAL_R = 0.8
MAX_BAND_DB = 3.0
MIN_WAVEFORM_R = {"mp3": 0.95}


def band_energies_db(x: np.ndarray, sample_rate: int = 24_000) -> np.ndarray:
    """Energy (dB) in 1 kHz bands from 1 kHz up, of 20 ms frames (half overlapping) of ``x``."""
    from scipy.signal import stft

    freqs, _t, spec = stft(x - x.mean(), sample_rate, nperseg=480, noverlap=240)
    power = np.abs(spec) ** 2
    edges = np.arange(1000, sample_rate // 2 + 1, 1000)
    return 10 * np.log10(np.stack([power[(freqs >= lo) & (freqs < hi)].sum(0)
                                   for lo, hi in zip(edges[:-1], edges[1:])]) + 1e-10)


def same_audio(decoded: np.ndarray, pcm: np.ndarray, fmt: str) -> None:
    """``decoded`` (a lossy file of ``fmt`` read back) is ``pcm`` within the codec's tolerance."""
    assert abs(len(decoded) - len(pcm)) <= 0.01 * len(pcm), (fmt, len(decoded), len(pcm))
    n = min(len(decoded), len(pcm))
    a, b = decoded[:n].astype(np.float64) / 32767, pcm[:n].astype(np.float64) / 32767
    got, want = band_energies_db(a), band_energies_db(b)
    heard = want > want.max() - 40  # the bands and frames with sound in them
    spectral_r = float(np.corrcoef(got[heard], want[heard])[0, 1])
    band_db = float(np.median(np.abs(got[heard] - want[heard])))
    a, b = a - a.mean(), b - b.mean()
    waveform_r = float(np.dot(a, b) / np.sqrt(np.dot(a, a) * np.dot(b, b)))
    figures = (fmt, round(spectral_r, 3), round(band_db, 2), round(waveform_r, 3))
    assert spectral_r > MIN_SPECTRAL_R and band_db < MAX_BAND_DB, figures
    assert waveform_r > MIN_WAVEFORM_R.get(fmt, -1.0), figures


def test_sse_stream_carries_the_same_audio(server: Server) -> None:
    body = {"input": "Good evening. Here is the news.", "voice": "ruby", "response_format": "pcm",
            "stream_format": "sse", "num_step": STEPS, "seed": 7}
    with httpx.stream("POST", f"{server.url}/v1/audio/speech", json=body, timeout=HANG_S) as resp:
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
    messages, _ = asyncio.run(_ws(server, {"text": VERY_LONG, "voice": "ruby", "num_step": 8, "seed": 1},
                                  cancel_after_frames=1))
    assert messages[-1] == {"type": "cancelled"}
    assert sum(1 for m in messages if isinstance(m, dict) and m["type"] == "sentence_end") < 60
    assert server.metric("omnistudio_cancelled_requests_total") == before + 1
    assert server.metric("omnistudio_steps_after_cancel") == 0


def test_generate_headers_agree_with_analyze(server: Server, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.cli import main

    resp = httpx.post(f"{server.url}/tts/generate", json={"text": "Good evening. Here is the news.",
                      "voice": "ruby", "num_step": STEPS, "seed": 2, "target_lufs": -20}, timeout=HANG_S)
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
    # a Broadcast Wave: bext v2 holds the figures of the samples sent, a cue marker per sentence
    from wavinfo import WavInfoReader

    info = WavInfoReader(str(out))
    assert info.bext.loudness_value == pytest.approx(float(resp.headers["X-TTS-Loudness-LUFS"]), abs=0.01)
    assert info.bext.max_true_peak == pytest.approx(float(resp.headers["X-TTS-True-Peak-dB"]), abs=0.01)
    assert [info.cues.label_and_note(cue[0])[0] for cue in info.cues.each_cue()] == ["Good evening.",
                                                                                   "Here is the news."]
    assert next(info.cues.each_cue())[1] == 0

    # a loudness rule: its target and its true-peak ceiling (ATSC A/85: -24 LKFS, -2 dBTP)
    atsc = httpx.post(f"{server.url}/tts/generate", json={"text": "Good evening. Here is the news.", "voice": "ruby",
                      "num_step": STEPS, "seed": 2, "profile": "atsc"}, timeout=HANG_S)
    assert atsc.status_code == 200, atsc.text
    assert float(atsc.headers["X-TTS-Loudness-LUFS"]) == pytest.approx(-24, abs=1.0)
    assert float(atsc.headers["X-TTS-True-Peak-dB"]) <= -2.0
    bad = httpx.post(f"{server.url}/tts/generate", json={"text": "Hi.", "profile": "loud"}, timeout=HANG_S)
    assert bad.status_code == 400 and "unknown loudness profile 'loud'" in bad.text


def test_generate_shm_reads_back_exactly(server: Server) -> None:
    name = f"omnistudio-test-{os.getpid()}"
    request = {"text": "Good evening.", "voice": "ruby", "num_step": STEPS, "seed": 4}
    resp = httpx.post(f"{server.url}/tts/generate-shm", json={**request, "name": name}, timeout=HANG_S)
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
    bad = httpx.post(f"{server.url}/tts/generate-shm", json={**request, "name": "../etc/passwd"}, timeout=HANG_S)
    assert bad.status_code == 400 and "slash" in bad.json()["error"]["message"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (to chown the file to another user)")
def test_generate_shm_leaves_another_users_file_and_a_symlink(server: Server, tmp_path: Path) -> None:
    """/dev/shm is shared: the server (root here) neither takes over nobody's NAME nor writes through a
    symlink named NAME; each is one 400 in OpenAI's error shape."""
    theirs, link = Path(f"/dev/shm/omnistudio-theirs-{os.getpid()}"), Path(f"/dev/shm/omnistudio-link-{os.getpid()}")
    target = tmp_path / "target"
    target.write_bytes(b"X\n")
    request = {"text": "Good evening.", "voice": "ruby", "num_step": STEPS, "seed": 4}
    try:
        theirs.write_bytes(b"X\n")
        os.chown(theirs, 65534, 65534)
        link.symlink_to(target)
        rendered = server.metric("omnistudio_batch_size_count")
        for path, needle in ((theirs, "another user"), (link, "symbolic link")):
            resp = httpx.post(f"{server.url}/tts/generate-shm", json={**request, "name": path.name}, timeout=HANG_S)
            error = resp.json()["error"]
            assert resp.status_code == 400 and needle in error["message"], resp.text
            assert error["type"] == "invalid_request_error"
        assert server.metric("omnistudio_batch_size_count") == rendered  # refused before anything rendered
        assert os.lstat(theirs).st_uid == 65534 and theirs.read_bytes() == b"X\n"
        assert link.is_symlink() and target.read_bytes() == b"X\n"
    finally:
        theirs.unlink(missing_ok=True)
        link.unlink(missing_ok=True)


class InProcessServer:
    """The server's app (routes, guard, batching link) on the session's tiny engine, served by uvicorn
    on a thread of this process: the test reaches its link, to hold the engine worker."""

    def __init__(self, engine: Any, max_batch: int = 8) -> None:
        import uvicorn

        from omnistudio.commands.serve import bind_port
        from omnistudio.server.factory import ServerConfig, build_server
        from omnistudio.server.pipeline import LocalEngine
        from omnistudio.server.scheduler import BatchingLink

        app = build_server(ServerConfig(max_batch=max_batch, max_queue=32))
        self.state = app.state.server
        self.link = BatchingLink(LocalEngine(engine), max_batch,
                                 on_pass=lambda size, _s: self.state.metrics.batch_size.observe(size))
        self.state.link, self.state.status = self.link, "ready"
        sock = bind_port("127.0.0.1", 0)
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning",
                                                    access_log=False, lifespan="off", ws="websockets-sansio"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        wait_until(lambda: self.server.started, timeout=HANG_S, what="the in-process server")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.link.close()


@pytest.fixture
def in_process(tiny_engine: Any) -> Any:
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler

    server = InProcessServer(Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model)))
    yield server
    server.stop()


def test_eight_concurrent_clients_match_alone_and_are_batched(in_process: InProcessServer) -> None:
    """Eight requests queued together while the engine worker is held: the next pass holds all eight,
    and each request's audio is the same bytes as when it ran alone."""
    server, link = in_process, in_process.link
    texts = [f"Client {i} reads line {i}." for i in range(8)]
    alone = [speech(server, t, seed=100 + i).content for i, t in enumerate(texts)]
    assert link.stats.batch_sizes == [1] * 8  # one sentence each, one request at a time
    results: list[bytes | None] = [None] * 8

    def client(i: int) -> None:
        results[i] = speech(server, texts[i], seed=100 + i).content

    link.hold()
    try:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        wait_until(lambda: link.queued == 8, timeout=HANG_S, what="all eight sentences queued")
    finally:
        link.release()
    for t in threads:
        t.join(120)
    assert results == alone
    assert link.stats.batch_sizes == [1] * 8 + [8]  # the eight in one diffusion pass
    text = httpx.get(f"{server.url}/metrics").text
    buckets = {line.split('"')[1]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("omnistudio_batch_size_bucket")}
    assert buckets["8.0"] - buckets["6.0"] == 1 and buckets["1.0"] == 8  # /metrics says the same


def test_disconnect_cancels_and_others_finish(server: Server) -> None:
    before = server.metric("omnistudio_cancelled_requests_total")
    texts = ["Other one speaks. And goes on.", "Other two speaks. And goes on."]
    alone = [speech(server, t, seed=5).content for t in texts]
    results: list[bytes | None] = [None, None]

    def other(i: int) -> None:
        results[i] = speech(server, texts[i], seed=5).content

    threads = [threading.Thread(target=other, args=(i,)) for i in range(2)]
    with httpx.stream("POST", f"{server.url}/v1/audio/speech", timeout=HANG_S,
                      json={"input": VERY_LONG, "voice": "ruby", "response_format": "pcm", "num_step": 8}) as resp:
        chunks = resp.iter_bytes()  # kept: a dropped iterator would close the connection now
        assert next(chunks)
        for t in threads:
            t.start()
        # the long take goes while the others are admitted, in flight with it (or, on a machine that
        # stalled this thread, once they are done: what is asserted below holds either way)
        wait_until(lambda: server.metric("omnistudio_queue_depth") == 3 or not any(t.is_alive() for t in threads),
                   timeout=HANG_S, what="the others in flight")
    # leaving the block closes the connection mid-stream
    for t in threads:
        t.join(120)
    assert results == alone
    wait_until(lambda: server.metric("omnistudio_cancelled_requests_total") > before, timeout=HANG_S,
               what="the cancel counted")
    assert server.metric("omnistudio_cancelled_requests_total") == before + 1
    assert server.metric("omnistudio_steps_after_cancel") == 0


BAD = [
    ("bad-json", b"{not json", "not valid JSON"),
    ("unknown-voice", {"input": "Hi.", "voice": "nobody_here"}, "unknown anchor 'nobody_here'"),
    ("partner-at-one", {"input": "Hi.", "voice": "ruby+nobody_here@1"}, "unknown anchor 'nobody_here'"),
    ("unknown-format", {"input": "Hi.", "response_format": "aac"}, "use one of wav, flac, mp3, opus, pcm"),
    ("empty-input", {"input": "   "}, "input is empty"),
    ("alpha", {"input": "Hi.", "voice": "ruby+storm@1.5"}, "outside [0, 1]"),
    ("too-long", {"input": "x" * 5000}, "the limit is 4096"),
    ("num-step", {"input": "Hi.", "num_step": 0}, "num_step 0 is out of range"),
    ("language", {"input": "Hi.", "language": "fr"}, "unknown language 'fr'"),
    ("too-big", b'{"input": "' + b"x" * (1 << 20) + b'"}', "over 1048576 bytes"),
    ("not-object", b"[1, 2]", "must be a JSON object"),
    ("deep-json", b'{"input": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", "nests deeper than 64 levels"),
    ("lone-surrogate", b'{"input": "A \\ud800 12"}', "lone surrogate U+D800"),
    ("doctype-ssml", {"input": '<?xml version="1.0"?><!DOCTYPE speak [<!ENTITY a "aaaa">]><speak>&a;</speak>'},
     "SSML"),
]


@pytest.mark.parametrize(("body", "needle"), [pytest.param(b, n, id=i) for i, b, n in BAD])
def test_bad_requests_get_one_line_4xx(server: Server, body: Any, needle: str) -> None:
    kwargs = {"content": body} if isinstance(body, bytes) else {"json": body}
    resp = httpx.post(f"{server.url}/v1/audio/speech", timeout=HANG_S, **kwargs)
    assert 400 <= resp.status_code < 500
    error = resp.json()["error"]
    assert needle in error["message"] and "\n" not in error["message"]
    assert set(error) == {"message", "type", "param", "code"}
    assert httpx.get(f"{server.url}/health").json()["status"] == "ready"


def test_listings_and_metrics(server: Server) -> None:
    assert speech(server, "Good evening.").status_code == 200
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


def test_generate_says_what_render_says_of_the_same_script(server: Server, tmp_path: Path) -> None:
    """/tts/generate's WAV holds a region per story and a marker per sentence, as `render -o` writes them."""
    from omnistudio.audio.bwf import read_broadcast

    script = "# Headlines\nGood evening. Here is the news.\n# Weather\nRain tomorrow in the north.\n"
    resp = httpx.post(f"{server.url}/tts/generate", json={"text": script, "voice": "ruby", "num_step": STEPS,
                      "seed": 2}, timeout=HANG_S)
    assert resp.status_code == 200, resp.text
    out = tmp_path / "generated.wav"
    out.write_bytes(resp.content)
    back = read_broadcast(out, sf.info(str(out)).samplerate)
    regions = [(m.label, m.start_s) for m in back.markers if m.end_s is not None]
    sentences = [m.label for m in back.markers if m.end_s is None]
    assert [label for label, _at in regions] == ["Headlines", "Weather"] and regions[0][1] == 0.0
    assert sentences == ["Good evening.", "Here is the news.", "Rain tomorrow in the north."]
    assert "voice=ruby" in back.ixml["USER"] and "seed=2" in back.ixml["USER"]
