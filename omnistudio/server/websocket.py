"""``WS /ws/tts/stream-omni``: one JSON request in; binary PCM frames and JSON telemetry out.

Client -> server: one text frame, the request (:class:`protocol.WsRequest`); later, optionally,
``{"type": "cancel"}``. Or ``{"type": "prepare", "voices": [{"voice": "ruby", "lang": "en"}, ...]}`` (:class:`protocol.WsPrepare`)
(a remote studio's prepare phase): every voice resolved on the engine worker (missing or stale
prompts built), one ``prepare`` frame per step (done, total, voice, lang, action), then ``prepared``. Server -> client, in order: ``start``; per sentence ``sentence_start``,
binary frames of PCM (``pcm: "s16"`` little-endian int16, or ``"f32"`` little-endian float32, exactly
the samples rendered), ``sentence_end`` (frames, timings, loudness); then ``done`` (integrated
loudness, true peak, TTFA, RTF) -- or ``error`` / ``cancelled``. The server closes after that.
"""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace
from typing import Any

from pydantic import ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect

from omnistudio.errors import Cancelled, UserError
from omnistudio.server import encode
from omnistudio.server import protocol as p
from omnistudio.server.scheduler import Busy
from omnistudio.server.serving import Audio, Done, Failed, SentenceEnd, SentenceStart, TakeRun

REQUEST_TIMEOUT_S = 30.0  # for the first message
POLICY_VIOLATION = 1008


async def _request(ws: WebSocket) -> p.WsRequest | dict[str, Any]:
    """The session's request: a WsRequest, or a ``prepare`` message as a dict."""
    try:
        raw = await asyncio.wait_for(ws.receive_text(), REQUEST_TIMEOUT_S)
    except TimeoutError:
        raise UserError(f"no request within {REQUEST_TIMEOUT_S:g} s") from None
    if len(raw) > p.MAX_BODY_BYTES:
        raise UserError(f"the request is over {p.MAX_BODY_BYTES} bytes")
    try:
        message = json.loads(raw)
        if isinstance(message, dict) and message.get("type") == "prepare":
            return message
        return p.WsRequest.model_validate(message)
    except ValueError as exc:
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            raise UserError(f"{'.'.join(str(x) for x in first['loc']) or 'request'}: {first['msg']}") from None
        raise UserError("the request is not valid JSON") from None


async def _listen(ws: WebSocket, run: TakeRun) -> None:
    """Cancel on ``{"type": "cancel"}`` or when the client goes away."""
    try:
        while True:
            message = await ws.receive_text()
            try:
                kind = json.loads(message).get("type")
            except (ValueError, AttributeError):
                kind = None
            if kind == "cancel":
                run.cancel.set()
    except (WebSocketDisconnect, RuntimeError):
        run.cancel.set()


def _prepare_voices(message: p.WsPrepare) -> list[tuple[Any, str]]:
    from omnistudio.checks import check_language
    from omnistudio.server.pipeline import parse_voice

    voices = []
    for entry in message.voices:
        ref, voice_lang = parse_voice(entry.voice)
        voices.append((ref, check_language(entry.lang or voice_lang or "en")))
    return voices


async def _prepare(ws: WebSocket, shared: Any, voices: list[tuple[Any, str]]) -> None:
    """Resolve ``voices`` on the engine worker, a ``prepare`` frame per step; ``prepared`` at the end."""
    loop = asyncio.get_running_loop()
    frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    cancel = threading.Event()

    def progress(event: Any) -> None:
        frame = {"type": "prepare", "done": event.done, "total": event.total, "voice": event.voice,
                 "lang": event.lang, "action": event.action}
        loop.call_soon_threadsafe(frames.put_nowait, frame)

    work = loop.run_in_executor(None, shared.prepare, voices, progress, cancel)
    listener = asyncio.create_task(_listen(ws, SimpleNamespace(cancel=cancel)))  # type: ignore[arg-type]
    try:
        while not work.done() or not frames.empty():
            try:
                await ws.send_json(await asyncio.wait_for(frames.get(), 0.05))
            except TimeoutError:
                continue
        try:
            await work
        except Cancelled:
            await ws.send_json({"type": "cancelled"})
        except UserError as exc:
            await ws.send_json({**p.ws_error(str(exc)), "status": 400})
        else:
            await ws.send_json({"type": "prepared"})
        await ws.close()
    except (WebSocketDisconnect, RuntimeError):
        cancel.set()
    finally:
        listener.cancel()


def _status(exc: BaseException) -> dict[str, Any]:
    """The HTTP status an error frame carries, so a client types the error as it would over HTTP."""
    if isinstance(exc, Busy):
        return {"status": 429, "retry_after": exc.retry_after_s}
    if isinstance(exc, UserError):
        return {"status": 400}
    return {"status": getattr(exc, "status", 503)}


async def serve_session(ws: WebSocket, state: Any, link: Any, finish: Any) -> None:
    await ws.accept()
    try:
        req = await _request(ws)
        if isinstance(req, dict):  # prepare: no take and no queue slot (the engine worker serialises it)
            voices = _prepare_voices(p.WsPrepare.from_message(req))
            await _prepare(ws, link(), voices)
            return
        job = p.ws_job(req)
        shared = link()
        state.admission.enter()
    except WebSocketDisconnect:
        return
    except (UserError, Busy) as exc:
        await ws.send_json({**p.ws_error(str(exc)), **_status(exc)})
        await ws.close(code=POLICY_VIOLATION if isinstance(exc, UserError) else 1013)
        return
    except Exception as exc:  # noqa: BLE001 - 503 while loading, etc.
        await ws.send_json({**p.ws_error(str(exc).splitlines()[0] if str(exc) else "unavailable"), **_status(exc)})
        await ws.close(code=1013)
        return
    run = TakeRun(shared, job, state.time_limit_s, cache=state.cache).start(asyncio.get_running_loop())
    ws.scope.setdefault("state", {})["take"] = run
    listener = asyncio.create_task(_listen(ws, run))
    pack = encode.f32 if req.pcm == "f32" else encode.pcm16
    try:
        await ws.send_json(p.ws_start(shared.sample_rate, req.pcm, len(job.sentences)))
        async for event in run.events():
            if isinstance(event, SentenceStart):
                sentence = event.sentence
                await ws.send_json(p.ws_sentence_start(sentence.id, sentence.text, sentence.voice.key(), sentence.lang))
            elif isinstance(event, Audio) and len(event.pcm):
                await ws.send_bytes(pack(event.pcm))
            elif isinstance(event, SentenceEnd):
                await ws.send_json(p.ws_sentence_end(event.sentence.id, event.frames, event.timings, event.loudness,
                                                     event.steps))
            elif isinstance(event, Done):
                await ws.send_json(p.ws_done(event.summary))
            elif isinstance(event, Failed):
                if event.status == 499:
                    state.metrics.cancelled.inc()
                    await ws.send_json({"type": "cancelled"})
                else:
                    await ws.send_json({**p.ws_error(event.message), "status": event.status})
        await ws.close()
    except (WebSocketDisconnect, RuntimeError):
        run.cancel.set()
    finally:
        listener.cancel()
        finish(run)
