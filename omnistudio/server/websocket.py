"""``WS /ws/tts/stream-omni``: one JSON request in; binary PCM frames and JSON telemetry out.

The messages are :mod:`omnistudio.protocol`'s. Client -> server: one text frame, the request
(:class:`~omnistudio.protocol.WsRequest`); later, optionally, ``{"type": "cancel"}``. Or
``{"type": "prepare", "voices": [{"voice": "ruby", "lang": "en"}, ...]}`` (a remote studio's prepare
phase): every voice resolved on the engine worker (missing or stale prompts built), one ``prepare``
frame per step (done, total, voice, lang, action), then ``prepared``. An unknown message type, or a
binary first frame, is an ``error`` (status 400) and close 1008. Server -> client, in order: ``start``; per sentence ``sentence_start``,
binary frames of PCM (``pcm: "s16"`` little-endian int16, or ``"f32"`` little-endian float32, exactly
the samples rendered), ``sentence_end`` (frames, timings, loudness; with ``timestamps`` in the request,
``timing``: the sentence's span in the take and, for ``"word"``, its words); then ``done`` (integrated
loudness, true peak, TTFA, RTF) -- or ``error`` / ``cancelled``. The server closes after that.

A ``speak`` with ``input: "stream"`` takes its text afterwards, as it is written: ``text`` messages,
``flush``, ``end`` (:func:`_take_input`, :class:`~omnistudio.take.incoming.IncomingTake`); docs/server.md.
"""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.websockets import WebSocket, WebSocketDisconnect

from omnistudio import protocol as wire
from omnistudio.errors import Cancelled, UserError
from omnistudio.server import encode, jobs
from omnistudio.server.admission import Busy
from omnistudio.server.serving import Audio, Done, Failed, SentenceEnd, SentenceStart, TakeRun
from omnistudio.server.timestamps import sentence_time
from omnistudio.take.incoming import IncomingScript
from omnistudio.take.link import PrepareEvent
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from omnistudio.server.app import ServerState
    from omnistudio.server.scheduler import BatchingLink

REQUEST_TIMEOUT_S = 30.0  # for the first message
INPUT_IDLE_S = 60.0  # a streamed input with no message for this long is ended with what was complete
POLICY_VIOLATION = 1008
TRY_AGAIN_LATER = 1013


async def _request(ws: WebSocket) -> wire.WsRequest | wire.WsPrepare:
    """The session's request: a ``speak`` or a ``prepare`` (anything else is one clear line)."""
    try:
        received = await asyncio.wait_for(ws.receive(), REQUEST_TIMEOUT_S)
    except TimeoutError:
        raise UserError(f"no request within {REQUEST_TIMEOUT_S:g} s") from None
    if received.get("type") == "websocket.disconnect":
        raise WebSocketDisconnect(int(received.get("code") or 1000))
    raw = received.get("text")
    if raw is None:
        raise UserError("the request must be a JSON text frame, not a binary one")
    if len(raw) > wire.MAX_BODY_BYTES:
        raise UserError(f"the request is over {wire.MAX_BODY_BYTES} bytes")
    message = wire.parse_client_message(raw)
    if not isinstance(message, (wire.WsRequest, wire.WsPrepare)):
        raise UserError(f"{message.type} before any request: send a speak or prepare message first")
    return message


async def _listen(ws: WebSocket, run: TakeRun) -> None:
    """Cancel on ``{"type": "cancel"}`` or when the client goes away (other messages are ignored)."""
    try:
        while True:
            received = await ws.receive()
            if received.get("type") == "websocket.disconnect":
                break
            try:
                message = wire.parse_client_message(received.get("text") or b"")
            except UserError:
                continue
            if isinstance(message, wire.WsCancel):
                run.cancel.set()
    except (WebSocketDisconnect, RuntimeError):
        pass
    run.cancel.set()


async def _take_input(ws: WebSocket, run: TakeRun, incoming: IncomingScript) -> None:
    """A streamed input's messages: ``text`` (appended; one over the script limit ends the input, said by
    an ``error`` frame before ``done``), ``flush``, ``end``, ``cancel``. A message that is not one of these,
    or none for ``INPUT_IDLE_S``, ends it too: the first is a policy violation (the take stops, ``error``,
    close 1008), the second ends the input with what was complete. A client that goes away cancels."""
    try:
        while True:
            try:
                received = await asyncio.wait_for(ws.receive(), INPUT_IDLE_S if not incoming.closed else None)
            except TimeoutError:
                run.notices.append((f"no text for {INPUT_IDLE_S:g} s: the input was ended with what was complete", 408))
                incoming.close()
                continue
            if received.get("type") == "websocket.disconnect":
                break
            try:
                if received.get("text") is None:
                    raise UserError("a streamed input's messages are JSON text frames, not binary ones")
                message = wire.parse_client_message(received["text"])
                if isinstance(message, (wire.WsRequest, wire.WsPrepare)):
                    raise UserError(f"{message.type}: the session's request was made already")
            except UserError as exc:
                run.violation = str(exc)
                run.cancel.set()
                break
            try:
                if isinstance(message, wire.WsText):
                    incoming.append(message.text)
                elif isinstance(message, wire.WsFlush):
                    incoming.flush()
                elif isinstance(message, wire.WsEnd):
                    incoming.close()
                elif isinstance(message, wire.WsCancel):
                    run.cancel.set()
            except UserError as exc:  # over the limit (the input is closed), or text after the end
                run.notices.append((str(exc), 413 if incoming.refused else 400))
    except (WebSocketDisconnect, RuntimeError):
        pass
    if not incoming.closed:  # the client went away (or broke the protocol) before ending its input
        incoming.fail(UserError("the client went away"))
        run.cancel.set()


async def _prepare(ws: WebSocket, shared: BatchingLink, voices: list[tuple[VoiceRef, str]]) -> None:
    """Resolve ``voices`` on the engine worker, a ``prepare`` frame per step; ``prepared`` at the end."""
    loop = asyncio.get_running_loop()
    frames: asyncio.Queue[wire.WsPrepareStep] = asyncio.Queue()
    cancel = threading.Event()

    def progress(event: PrepareEvent) -> None:
        step = wire.WsPrepareStep(done=event.done, total=event.total, voice=event.voice, lang=event.lang,
                                  action=event.action)
        loop.call_soon_threadsafe(frames.put_nowait, step)

    work = loop.run_in_executor(None, shared.prepare, voices, progress, cancel)
    listener = asyncio.create_task(_listen(ws, SimpleNamespace(cancel=cancel)))  # type: ignore[arg-type]
    try:
        while not work.done() or not frames.empty():
            try:
                await ws.send_text(wire.frame(await asyncio.wait_for(frames.get(), 0.05)))
            except TimeoutError:
                continue
        try:
            await work
        except Cancelled:
            await ws.send_text(wire.frame(wire.WsCancelled()))
        except UserError as exc:
            await ws.send_text(wire.frame(wire.WsError(message=str(exc), status=400)))
        else:
            await ws.send_text(wire.frame(wire.WsPrepared()))
        await ws.close()
    except (WebSocketDisconnect, RuntimeError):
        cancel.set()
    finally:
        listener.cancel()


def _error(exc: BaseException) -> wire.WsError:
    """An error frame with the HTTP status it means, so a client types the error as it would over HTTP."""
    if isinstance(exc, Busy):
        return wire.WsError(message=str(exc), status=429, retry_after=exc.retry_after_s)
    message = str(exc).splitlines()[0] if str(exc) else "unavailable"
    return wire.WsError(message=message, status=400 if isinstance(exc, UserError) else getattr(exc, "status", 503))


async def serve_session(ws: WebSocket, state: ServerState, link: Callable[[], BatchingLink],
                        finish: Callable[[TakeRun], None]) -> None:
    await ws.accept()
    try:
        req = await _request(ws)
        if isinstance(req, wire.WsPrepare):  # no take and no queue slot (the engine worker serialises it)
            voices = jobs.prepare_voices(req)
            await _prepare(ws, link(), voices)
            return
        incoming = None
        if req.input == "stream":
            job, incoming = jobs.stream_job(req)
        else:
            job = jobs.ws_job(req)
        shared = link()
        state.admission.enter()
    except WebSocketDisconnect:
        return
    except Exception as exc:  # noqa: BLE001 - a bad request (1008), busy or still loading (1013)
        await ws.send_text(wire.frame(_error(exc)))
        await ws.close(code=POLICY_VIOLATION if isinstance(exc, UserError) else TRY_AGAIN_LATER)
        return
    run = TakeRun(shared, job, state.time_limit_s, cache=state.cache, incoming=incoming).start(
        asyncio.get_running_loop())
    ws.scope.setdefault("state", {})["take"] = run
    listener = asyncio.create_task(_listen(ws, run) if incoming is None else _take_input(ws, run, incoming))
    pack = encode.f32 if req.pcm == "f32" else encode.pcm16
    ended = False
    try:
        await ws.send_text(wire.frame(wire.WsStart(sample_rate=shared.sample_rate, pcm=req.pcm,
                                                   sentences=len(job.sentences))))
        async for event in run.events():
            if isinstance(event, SentenceStart):
                sentence = event.sentence
                await ws.send_text(wire.frame(wire.WsSentenceStart(
                    index=sentence.id, text=sentence.text, spoken=sentence.said, voice=sentence.voice.key(),
                    lang=sentence.lang)))
            elif isinstance(event, Audio) and len(event.pcm):
                await ws.send_bytes(pack(event.pcm))
            elif isinstance(event, SentenceEnd):
                timing = sentence_time(event.timing, job.timestamps) if event.timing and job.timestamps else None
                await ws.send_text(wire.frame(wire.WsSentenceEnd(index=event.sentence.id, frames=event.frames,
                                                                 steps=event.steps, timings=dict(event.timings),
                                                                 loudness=dict(event.loudness), timing=timing)))
            elif isinstance(event, Done):
                ended = True
                for notice, status in run.notices:  # said, and the take finished with what was complete
                    await ws.send_text(wire.frame(wire.WsError(message=notice, status=status)))
                await ws.send_text(wire.frame(wire.WsDone(**event.summary)))
            elif isinstance(event, Failed):
                ended = True
                if run.violation is not None:
                    await ws.send_text(wire.frame(wire.WsError(message=run.violation, status=400)))
                    await ws.close(code=POLICY_VIOLATION)
                    return
                if event.status == 499:
                    state.count_cancel()
                    await ws.send_text(wire.frame(wire.WsCancelled()))
                else:
                    await ws.send_text(wire.frame(wire.WsError(message=event.message, status=event.status)))
        await ws.close()
    except (WebSocketDisconnect, RuntimeError):
        run.cancel.set()
        if not ended:  # the client went away mid-take: the render stops, and it counts as cancelled
            state.count_cancel()
    finally:
        listener.cancel()
        finish(run)
