"""The MCP server (issue 27), driven by the SDK's own client: ``omnistudio mcp`` over stdio
(``stdio_client``) and ``/mcp`` of a real keyed ``omnistudio serve`` (``streamablehttp_client``).

tools/list shows every tool with its schema; speak's file decodes to the duration its answer and
sidecar give; a render_script cancel stops within one diffusion step (the take's step counter, as the
server logs it) with nothing written; bad arguments are tool errors with the CLI's one line; a
request without the key is refused. Tiny model, 2 diffusion steps, short sentences."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import soundfile as sf
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

from support.server import Server, private_home, restored_environ
from support.voices import flite_wav
from support.wait import HANG_S, wait_until

T = TypeVar("T")
KEY = "mcp-test-key-0123456789abcdef"
TOOLS = {"list_voices", "speak", "render_script", "check_take", "normalize_text", "add_voice"}


class StdioAgent:
    """One ``omnistudio mcp`` process and its SDK client session, on a thread of its own, for the module."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.logs: list[str] = []
        self.logged = asyncio.Event()
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),), daemon=True)
        self._thread.start()
        assert self._ready.wait(HANG_S) and self._error is None, self._error

    async def _log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(str(params.data))
        self.logged.set()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self.logged = asyncio.Event()
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "omnistudio.cli", "mcp", "--model", "tiny", "--device", "cpu", "--output-dir", str(self.out)],
            env={**os.environ, "OMP_NUM_THREADS": "1"})
        try:
            async with stdio_client(params) as (read, write), \
                    ClientSession(read, write, logging_callback=self._log) as session:
                await session.initialize()
                self.session = session
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the waiting test
            self._error = exc
            self._ready.set()

    def run(self, job: Callable[[ClientSession], Awaitable[T]]) -> T:
        return asyncio.run_coroutine_threadsafe(job(self.session), self._loop).result(HANG_S)

    def close(self) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(HANG_S)


@pytest.fixture(scope="module")
def agent(omnistudio_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    client = StdioAgent(tmp_path_factory.mktemp("mcp-out"))
    yield client
    client.close()


@pytest.fixture(scope="module")
def keyed(omnistudio_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    keys = tmp_path_factory.mktemp("mcp-keys") / "keys.txt"
    keys.write_text(f"{KEY}\n")
    out = tmp_path_factory.mktemp("mcp-http-out")
    with restored_environ():  # its own roster: add_voice changes it
        os.environ["OMNISTUDIO_HOME"] = str(private_home(omnistudio_home, tmp_path_factory.mktemp("mcp-home")))
        srv = Server("--api-key-file", str(keys), "--mcp-output-dir", str(out))
    srv.out = out  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def over_http(server: Server, job: Callable[[ClientSession], Awaitable[T]], key: str | None = KEY) -> T:
    async def main() -> T:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with streamablehttp_client(f"{server.url}/mcp", headers=headers) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await job(session)

    return asyncio.run(main())


def error_text(result: types.CallToolResult) -> str:
    assert result.isError, result
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


def cli_error(*argv: str) -> str:
    """The one line ``omnistudio ARGV`` prints for a user error, without its ``omnistudio: error:``."""
    done = subprocess.run([sys.executable, "-m", "omnistudio.cli", *argv], capture_output=True, text=True,
                          timeout=HANG_S)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line.removeprefix("omnistudio: error: ")


# ----------------------------------------------------------------------------- stdio
def test_tools_list_shows_every_tool_with_its_schema(agent: StdioAgent) -> None:
    tools = {tool.name: tool for tool in agent.run(lambda s: s.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40
        assert tool.inputSchema["type"] == "object"
        assert tool.outputSchema is not None and tool.outputSchema["type"] == "object"
    speak = tools["speak"].inputSchema
    assert speak["required"] == ["text"]
    assert set(speak["properties"]) == {"text", "voice", "language", "seed", "num_step", "format", "name"}
    assert speak["properties"]["seed"]["type"] == "integer"
    assert speak["properties"]["format"]["enum"] == ["wav", "flac"]
    assert {"duration_s", "loudness", "path", "sidecar"} <= set(tools["speak"].outputSchema["properties"])
    script = tools["render_script"].inputSchema
    assert script["required"] == ["script"] and script["properties"]["captions"]["items"]["enum"] == ["srt", "vtt"]
    assert tools["check_take"].inputSchema["required"] == ["name", "text"]
    assert set(tools["add_voice"].inputSchema["required"]) == {"name", "language"}


def test_speak_writes_a_finished_file_of_the_duration_it_answers(agent: StdioAgent) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def job(session: ClientSession) -> types.CallToolResult:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            seen.append((done, total, message))

        return await session.call_tool("speak", {"text": "Good evening.", "voice": "ruby", "num_step": 2,
                                                 "seed": 7, "format": "flac", "name": "evening"},
                                        progress_callback=progress)

    result = agent.run(job)
    assert not result.isError, result.content
    answer = result.structuredContent
    assert answer is not None and answer["name"] == "evening.flac"
    path = Path(answer["path"])
    assert path == agent.out / "evening.flac"
    info = sf.info(path)
    sidecar = json.loads(Path(answer["sidecar"]).read_text())
    assert info.samplerate == answer["sample_rate"] == sidecar["sample_rate"]
    assert answer["duration_s"] == sidecar["duration_s"]
    assert info.frames / info.samplerate == pytest.approx(answer["duration_s"], abs=1e-4)  # 4 decimals stored
    assert answer["duration_s"] > 0.3
    assert answer["loudness"]["integrated_lufs"] == sidecar["loudness"]["integrated_lufs"]
    assert sidecar["take"]["seed"] == 7 and sidecar["take"]["num_step"] == 2
    assert (1.0, 1.0, "sentence 1/1 rendered") in seen  # progress came while it rendered


def test_render_script_cancel_stops_within_one_diffusion_step(agent: StdioAgent) -> None:
    """Cancelled after its first sentence: the take's step counter moved at most one step past the
    cancel, far short of the whole script's, and no file was written."""
    sentences, num_step = 12, 16
    script = "\n".join(f"[ruby] Sentence number {i} is read now." for i in range(sentences))

    async def job(session: ClientSession) -> str:
        first = asyncio.Event()

        async def progress(done: float, _total: float | None, _message: str | None) -> None:
            if done >= 1:
                first.set()

        agent.logs.clear()
        agent.logged.clear()
        request_id = session._request_id  # the id the next request gets (and its progress token)
        call = asyncio.ensure_future(session.call_tool(
            "render_script", {"script": script, "num_step": num_step, "name": "cancelled"},
            progress_callback=progress))
        await asyncio.wait_for(first.wait(), HANG_S)
        await session.send_notification(types.ClientNotification(types.CancelledNotification(
            params=types.CancelledNotificationParams(requestId=request_id, reason="the agent changed its mind"))))
        with pytest.raises(McpError, match="cancelled"):
            await call
        await asyncio.wait_for(agent.logged.wait(), HANG_S)
        return agent.logs[-1]

    line = agent.run(job)
    found = re.fullmatch(r"render_script cancelled at diffusion step (\d+); it stopped at diffusion step (\d+), "
                         r"nothing written", line)
    assert found, line
    asked, stopped = int(found[1]), int(found[2])
    assert num_step <= asked <= stopped <= asked + 1  # at least a sentence in; at most one step after
    assert stopped < sentences * num_step
    assert not list(agent.out.glob("cancelled*"))


LONG_TEXT = "Hi. " * 6000  # 24,000 characters: over say's 20,000
BIG_SCRIPT = "Good evening.\n" * 5200  # 72,800 bytes: over the 64 KB a script may hold


def test_bad_arguments_are_tool_errors_with_the_cli_line(agent: StdioAgent, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (agent.out / "exit").symlink_to(outside, target_is_directory=True)
    calls = {
        "unknown voice": ("speak", {"text": "Hello.", "voice": "nobody"}),
        "steps": ("speak", {"text": "Hello.", "num_step": 0}),
        "language": ("speak", {"text": "Hello.", "language": "fr"}),
        "no voice": ("render_script", {"script": "Hello there."}),
        "dotdot": ("speak", {"text": "Hello.", "name": "../escape"}),
        "absolute": ("speak", {"text": "Hello.", "name": str(outside / "x")}),
        "symlink": ("speak", {"text": "Hello.", "name": "exit/x"}),
        "not a take": ("check_take", {"name": "missing.wav", "text": "Hello."}),
        "type": ("speak", {"text": "Hello.", "seed": "soon"}),
        "empty": ("normalize_text", {"text": "  "}),
        "no recording": ("add_voice", {"name": "Ana Paz", "language": "es", "transcript": "Hola."}),
        "no consent": ("add_voice", {"name": "Ana Paz", "language": "es", "transcript": "Hola.", "gender": "female",
                                     "recording_base64": base64.b64encode(b"RIFF").decode()}),
        "long text": ("speak", {"text": LONG_TEXT}),
        "big script": ("render_script", {"script": BIG_SCRIPT, "voice": "ruby"}),
        "file link": ("speak", {"text": "Hello.", "name": "linked"}),
    }
    (agent.out / "linked.wav").symlink_to(outside / "t.wav")

    async def job(session: ClientSession) -> dict[str, str]:
        return {what: error_text(await session.call_tool(tool, args)) for what, (tool, args) in calls.items()}

    errors = agent.run(job)
    out = tmp_path / "x.wav"
    assert errors["unknown voice"] == cli_error("say", "Hello.", "--voice", "nobody", "-o", str(out))
    assert errors["steps"] == cli_error("say", "Hello.", "--voice", "ruby", "--num-step", "0", "-o", str(out))
    assert errors["language"] == cli_error("say", "Hello.", "--voice", "ruby", "--lang", "fr", "-o", str(out))
    assert errors["no voice"] == "line 1 has no speaker tag: give a voice (an anchor id, anchor:lang or a+b@0.7)"
    assert errors["dotdot"] == "'../escape' leaves the output folder: '..' and '.' are not allowed"
    assert errors["absolute"] == f"'{outside / 'x'}' is an absolute path: give a name inside the output folder"
    assert errors["symlink"] == "'exit/x' leads out of the output folder (through a link)"
    assert errors["not a take"] == f"'missing.wav' is not a file in the output folder {agent.out}"
    assert errors["type"] == "seed: Input should be a valid integer, unable to parse string as an integer"
    assert errors["empty"] == cli_error("normalize", "  ", "--lang", "en")
    assert errors["no recording"] == ("give the recording: either its name in the output folder (recording) or its "
                                      "bytes (recording_base64), not both")
    assert errors["no consent"] == "the voice needs a consent statement from its speaker (consent)"
    assert errors["long text"] == cli_error("say", LONG_TEXT, "--voice", "ruby", "-o", str(out))
    assert errors["big script"] == f"the script is {len(BIG_SCRIPT):,} bytes; the limit is 65,536 (64 KB, about an " \
        "hour of speech): split it into parts"
    assert errors["file link"] == "'linked.wav' leads out of the output folder (through a link)"
    assert all("\n" not in line and "Traceback" not in line for line in errors.values())
    assert not list(outside.iterdir())


def test_normalize_text_and_list_voices_answer_as_the_server_does(agent: StdioAgent) -> None:
    async def job(session: ClientSession) -> tuple[Any, Any]:
        spoken = await session.call_tool("normalize_text", {"text": "It costs $3.50.", "language": "en"})
        voices = await session.call_tool("list_voices", {})
        return spoken.structuredContent, voices.structuredContent

    spoken, voices = agent.run(job)
    done = subprocess.run([sys.executable, "-m", "omnistudio.cli", "normalize", "It costs $3.50.", "--lang", "en"],
                          capture_output=True, text=True, timeout=HANG_S)
    assert spoken["spoken"] == done.stdout.strip() and spoken["spans"]
    assert "ruby" in {voice["id"] for voice in voices["voices"]}


def test_check_take_gives_omnistudio_checks_transcript_and_verdict(agent: StdioAgent, checker: Any,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A flite take in the output folder, checked by the tool against its own text and against another:
    what Whisper heard, the WER and the verdict are ``omnistudio check FILE --text``'s for the same file
    (``checker``: flite and Whisper are here, else the session's skip)."""
    from omnistudio.cli import main

    said = "The weather will be sunny and warm tomorrow."
    other = "Markets fell sharply at the close of trading."
    take = flite_wav(said, agent.out / "flite-take.wav")

    async def job(session: ClientSession) -> list[types.CallToolResult]:
        return [await session.call_tool("check_take", {"name": take.name, "text": text}) for text in (said, other)]

    answers = agent.run(job)
    verdicts = []
    for text, answer in zip((said, other), answers, strict=True):
        assert not answer.isError, answer
        tool = answer.structuredContent
        assert tool is not None and tool["name"] == take.name
        status = main(["check", str(take), "--text", text, "--json"])
        (row,) = json.loads(capsys.readouterr().out)["checked"]
        keys = ("heard", "wer", "passed", "threshold", "model", "note")
        assert {k: tool[k] for k in keys} == {k: row[k] for k in keys}, text
        assert status == (0 if row["passed"] else 1)
        verdicts.append(tool["passed"])
    heard = re.sub(r"[^a-z ]", "", answers[0].structuredContent["heard"].lower()).split()
    assert {"weather", "sunny", "tomorrow"} <= set(heard)
    assert verdicts == [True, False]  # its own text passes, another text fails


# ----------------------------------------------------------------------------- HTTP
def test_http_mcp_without_the_key_is_refused(keyed: Server) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}}}
    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789abcdef"}):
        resp = httpx.post(f"{keyed.url}/mcp", json=body, headers={
            "Accept": "application/json, text/event-stream", **headers}, timeout=HANG_S)
        assert resp.status_code == 401 and "API key" in resp.json()["error"]["message"]
    with pytest.raises(BaseException) as refused:  # the SDK's client cannot even initialize
        over_http(keyed, lambda s: s.list_tools(), key=None)
    assert "401" in repr(refused.value) or "Unauthorized" in repr(refused.value)


def test_http_mcp_tools_and_speak_behind_the_key(keyed: Server) -> None:
    async def job(session: ClientSession) -> tuple[set[str], types.CallToolResult, types.CallToolResult]:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        spoken = await session.call_tool("speak", {"text": "Good evening.", "num_step": 2, "name": "web"})
        bad = await session.call_tool("speak", {"text": "Good evening.", "voice": "nobody"})
        return tools, spoken, bad

    tools, spoken, bad = over_http(keyed, job)
    assert tools == TOOLS
    assert not spoken.isError, spoken.content
    answer = spoken.structuredContent
    assert answer is not None and Path(answer["path"]) == keyed.out / "web.wav"  # type: ignore[attr-defined]
    info = sf.info(answer["path"])
    assert info.frames / info.samplerate == pytest.approx(answer["duration_s"], abs=1e-4)
    assert error_text(bad) == "unknown anchor 'nobody' (see `omnistudio voices list`)"


def test_http_add_voice_speaks_at_once_and_a_replaced_recording_is_heard(keyed: Server, tmp_path: Path) -> None:
    """add_voice over /mcp: the new voice speaks at once; replaced by another speaker's recording, the
    same request (text, seed) speaks with the new one (the server forgot the old prompt and its takes)."""
    import base64
    import shutil

    if shutil.which("flite") is None:
        pytest.skip("Debian flite not installed: apt-get install flite (the CI test command does)")
    said = "Good evening, here is the news from the harbour."
    clips = [flite_wav(said, tmp_path / f"{voice}.wav", voice) for voice in ("slt", "kal")]

    async def job(session: ClientSession) -> list[tuple[types.CallToolResult, types.CallToolResult]]:
        out = []
        for i, clip in enumerate(clips):
            added = await session.call_tool("add_voice", {
                "name": "Pat Quillon", "language": "en", "gender": "female", "transcript": said, "replace": i > 0,
                "recording_base64": base64.b64encode(clip.read_bytes()).decode(), "consent": "Pat agreed on tape."})
            voice = (added.structuredContent or {}).get("id", "?")
            spoken = await session.call_tool("speak", {"text": "Good evening.", "voice": voice, "seed": 3,
                                                       "num_step": 2, "name": f"quillon{i}"})
            out.append((added, spoken))
        return out

    (first, first_audio), (second, second_audio) = over_http(keyed, job)
    for added, spoken in ((first, first_audio), (second, second_audio)):
        assert not added.isError and not spoken.isError, (added.content, spoken.content)
    assert first.structuredContent["created"] and not second.structuredContent["created"]
    assert first.structuredContent["recording_sha256"] != second.structuredContent["recording_sha256"]
    a, b = (sf.read(r.structuredContent["path"])[0] for r in (first_audio, second_audio))
    assert len(a) > 0 and len(b) > 0 and (len(a) != len(b) or (a != b).any())  # the new speaker, not the old prompt


# A client that starts a long speak over /mcp, says so at its first progress report, and is then killed.
KILLED_CLIENT = """
import asyncio, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

async def main():
    async with streamablehttp_client(sys.argv[1] + "/mcp") as (read, write, _), ClientSession(read, write) as s:
        await s.initialize()
        async def progress(done, total, message):
            print("rendering", flush=True)
        await s.call_tool("speak", {"text": "Good evening. " * 300, "num_step": 10}, progress_callback=progress)

asyncio.run(main())
"""


def test_mcp_over_http_keeps_the_servers_time_limit_and_a_killed_clients_take_stops(
        omnistudio_home: Path, tmp_path: Path) -> None:
    """Before: a /mcp speak ran 599 s past --time-limit 300, and a killed client's take ran on at 100% CPU."""
    from omnistudio.errors import ran_past

    server = Server("--time-limit", "4", "--max-queue", "1", "--mcp-output-dir", str(tmp_path / "out"))
    try:
        cancelled = server.metric("omnistudio_cancelled_requests_total")
        client = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, server.url], stdout=subprocess.PIPE, text=True)
        try:
            assert client.stdout is not None and client.stdout.readline().strip() == "rendering"
        finally:
            client.kill()
            client.wait(HANG_S)
        wait_until(lambda: "speak: the client went away; cancelled at diffusion step" in server.log.read_text(),
                   timeout=HANG_S, what="the server to notice the killed client")
        wait_until(lambda: httpx.get(f"{server.url}/health").json()["active"] == 0, timeout=HANG_S,
                   what="the killed client's slot to free")
        timed = over_http(server, lambda s: s.call_tool("speak", {"text": "Good evening. " * 400, "num_step": 10}),
                          key=None)
        assert error_text(timed) == ran_past(4)
        assert httpx.get(f"{server.url}/health").json()["active"] == 0  # admitted, then left
        # both counted as the routes count theirs: the killed client's cancel and the time limit's
        assert server.metric("omnistudio_cancelled_requests_total") == cancelled + 2
        bulletin = " ".join(f"Item {n} of the night." for n in range(600))  # a whole take of far over 4 s
        speech = httpx.post(f"{server.url}/tts/generate", json={"text": bulletin, "voice": "ruby"}, timeout=HANG_S)
        assert speech.status_code == 504 and server.metric("omnistudio_cancelled_requests_total") == cancelled + 3
        log = server.log.read_text()  # sessions that ended, one of them killed: no traceback for a client leaving
        assert "Traceback" not in log and "ClosedResourceError" not in log, log[-3000:]
        assert not list((tmp_path / "out").glob("*.wav"))  # nothing half-written
    finally:
        server.stop()
