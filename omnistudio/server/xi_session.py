"""ElevenLabs' stream-input WebSockets on the take pipeline: the shapes voice-agent frameworks speak.

``/v1/text-to-speech/{voice_id}/multi-stream-input`` (Pipecat's and LiveKit's ElevenLabs clients) and
``/stream-input`` (one context). Each context is one take of the path's voice, its text arriving as
written (:class:`~omnistudio.take.incoming.IncomingScript`: the script's sentence rules, one ahead, the
seed policy), rendered on the server's shared link beside every other request. Per context:

- ``{"text": " ", "context_id": ID, "voice_settings": ...}`` opens it (``speed`` is the take's speed);
- ``{"text": T}`` appends T as written (with ``auto_mode=true`` each message is complete: it is spoken at
  once, as ElevenLabs does); ``flush`` speaks what is buffered;
- ``close_context`` ends it: after a flush of no text (how both frameworks end a turn), or carrying a flush
  itself, the text is spoken to its end, then ``isFinal``; after anything else (text, or a sentence sent
  with its flush in ``auto_mode``) it is a barge-in: the take stops at the next diffusion step;
- on ``multi-stream-input`` ``{"text": ""}`` without ``flush`` is a keep-alive; on ``stream-input`` it ends
  the input. ``close_socket`` ends every context and closes the socket after their audio.

The server sends each sentence's audio as it renders (``audio`` in base64, ``alignment`` and
``normalizedAlignment``: its characters over its span, estimated), then ``{"isFinal": true}`` for the
context. Limits: 5 open contexts a socket; the script limit per context (over it: an ``error`` for that
context, the take finished with what was complete); no message for ``inactivity_timeout`` seconds (query,
default 20, at most 180) ends every context with what was complete and closes the socket; a malformed or
unknown message, or a binary frame, is an ``error`` and close 1008, every take stopped.
"""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.websockets import WebSocket, WebSocketDisconnect

from omnistudio.errors import UserError
from omnistudio.protocol import TakeFields
from omnistudio.protocol.elevenlabs import (XiAudio, XiError, XiFinal, XiFormat, XiMessage, parse_xi_format,
                                            parse_xi_message)
from omnistudio.server import jobs
from omnistudio.server.admission import Busy
from omnistudio.server.serving import Audio, Done, Failed, SentenceStart, TakeRun
from omnistudio.server.xi_audio import XiEncoder, char_alignment
from omnistudio.take.incoming import IncomingScript

if TYPE_CHECKING:
    from pydantic import BaseModel

    from omnistudio.server.app import ServerState
    from omnistudio.server.scheduler import BatchingLink

MAX_CONTEXTS = 5  # open contexts a socket (ElevenLabs' own limit)
IDLE_DEFAULT_S, IDLE_MAX_S = 20, 180  # inactivity_timeout: ElevenLabs' default and largest
POLICY_VIOLATION, TRY_AGAIN_LATER = 1008, 1013


@dataclass(frozen=True)
class XiSocket:
    """A socket's query: the voice, the format, the language, ``auto_mode`` and the idle limit."""

    voice: str
    fmt: XiFormat
    language: str | None
    auto_mode: bool
    idle_s: float
    multi: bool
    normalize: bool = True  # apply_text_normalization=off: the text goes to the model as written

    @staticmethod
    def of(voice: str, query: Mapping[str, str], multi: bool) -> XiSocket:
        idle = query.get("inactivity_timeout", str(IDLE_DEFAULT_S))
        if not re.fullmatch(r"[0-9]{1,4}", idle) or not 1 <= int(idle) <= IDLE_MAX_S:
            raise UserError(f"inactivity_timeout {idle!r}: give whole seconds from 1 to {IDLE_MAX_S}")
        auto = query.get("auto_mode", "false").strip().lower()
        if auto not in ("true", "false"):
            raise UserError(f"auto_mode {auto!r}: use true or false")
        # ElevenLabs' default format for its sockets is mp3_44100_128, as for its HTTP routes
        normalize = query.get("apply_text_normalization", "auto").strip().lower()
        if normalize not in ("auto", "on", "off"):
            raise UserError(f"apply_text_normalization {normalize!r}: use auto, on or off")
        return XiSocket(voice, parse_xi_format(query.get("output_format")), query.get("language_code") or None,
                        auto == "true", float(idle), multi, normalize != "off")


@dataclass
class XiContext:
    """One context: its take, its text and whether the client's last message was a flush of no text."""

    id: str | None
    run: TakeRun
    incoming: IncomingScript
    flushed_last: bool = False  # the last message was a flush of no text: a close now is the context's end
    failed: bool = False  # a line of its text was refused (its take ends with that line as its error)
    pump: asyncio.Task[None] | None = field(default=None, repr=False)


class XiSession:
    """One stream-input socket: its contexts, what comes in, what goes out (one writer at a time)."""

    def __init__(self, ws: WebSocket, state: ServerState, link: Callable[[], BatchingLink],
                 finish: Callable[[TakeRun], None], socket: XiSocket) -> None:
        self.ws, self.state, self.link, self.finish, self.socket = ws, state, link, finish, socket
        self.contexts: dict[str | None, XiContext] = {}
        self._ended: set[str | None] = set()  # contexts whose take has ended: their later messages are ignored
        self._send_lock = asyncio.Lock()

    async def send(self, message: BaseModel) -> None:
        async with self._send_lock:
            await self.ws.send_text(message.model_dump_json(exclude_none=isinstance(message, (XiError, XiFinal))))

    # ------------------------------------------------------------------ in
    async def serve(self) -> None:
        """Read messages until the socket ends; then every context's audio, then close."""
        try:
            while True:
                try:
                    received = await asyncio.wait_for(self.ws.receive(), self.socket.idle_s)
                except TimeoutError:
                    break  # idle: every context ends with what was complete
                if received.get("type") == "websocket.disconnect":
                    raise WebSocketDisconnect(int(received.get("code") or 1000))
                if received.get("text") is None:
                    raise UserError("messages are JSON text frames, not binary ones")
                if not await self.handle(parse_xi_message(received["text"])):
                    break
        except UserError as exc:  # the protocol broken: every take stops
            await self._refuse(str(exc), "invalid_request")
            return
        except Busy as exc:  # the server's queue is full: this socket's takes stop, try again later
            await self._refuse(str(exc), "too_many_concurrent_requests", TRY_AGAIN_LATER)
            return
        except (WebSocketDisconnect, RuntimeError, OSError):  # the client went away: every take stops
            self._stop_all()
            await self._drain()
            return
        except BaseException:  # anything unforeseen: the takes stop and end before it is raised
            self._stop_all()
            await self._drain()
            raise
        for context in list(self.contexts.values()):
            self._close(context)
        await self._drain()
        try:
            await self.ws.close()
        except (RuntimeError, OSError):
            pass

    async def handle(self, message: XiMessage) -> bool:
        """One message; False when the socket is to end (``close_socket``, or ``stream-input``'s empty text)."""
        if message.close_socket:
            return False
        key = message.context_id if self.socket.multi else None
        context = self.contexts.get(key)
        if context is None:
            if message.text is None or (message.text == "" and self.socket.multi) or key in self._ended:
                return True  # a keep-alive, or a message for a context that is not open (or ended already)
            if message.text == "":
                return False
            context = await self._open(key, message)
            if context is None:
                return True
        if message.text:
            self._feed(context, lambda: context.incoming.append(message.text or ""))
        elif message.text == "" and not self.socket.multi:
            return False  # stream-input: the end of the input
        if message.flush or (self.socket.auto_mode and message.text and message.text.strip()):
            self._feed(context, context.incoming.flush)
        # a client ends a context with a flush of no text (or a flush in the closing message); text, or a
        # flushed sentence, then close_context alone is a barge-in: the take stops
        if message.close_context:
            self._close(context, interrupted=not (message.flush or context.flushed_last))
        else:
            context.flushed_last = message.flush and not message.text
        return True

    def _feed(self, context: XiContext, write: Callable[[], object]) -> None:
        """``write`` (an append or a flush of the context's script), unless its text has ended (after
        close_context, a failed line or the limit nothing more is read). What the script refuses: over the
        limit, said (413) and the take finished with what was complete; a bad line (an unknown speaker tag),
        the context's take ends with that line as its error."""
        if context.incoming.closed:
            return
        try:
            write()
        except UserError as exc:
            self._refused(context, exc)

    def _refused(self, context: XiContext, exc: UserError) -> None:
        if context.incoming.refused:
            context.run.notices.append((str(exc), 413))
        else:
            context.failed = True
            context.incoming.fail(exc)

    async def _open(self, key: str | None, message: XiMessage) -> XiContext | None:
        if len(self.contexts) >= MAX_CONTEXTS:
            await self.send(XiError(error="max_active_conversations", contextId=key,
                                    message=f"{MAX_CONTEXTS} contexts are open on this socket: close one first"))
            return None
        speed = message.voice_settings.speed if message.voice_settings is not None else None
        job, incoming = jobs.incoming_job(self.socket.voice, self.socket.language,
                                          TakeFields(speed=speed, normalize=self.socket.normalize))
        shared = self.link()
        self.state.admission.enter()
        run = TakeRun(shared, job, self.state.time_limit_s, cache=self.state.cache, incoming=incoming)
        context = XiContext(key, run.start(asyncio.get_running_loop()), incoming)
        self.contexts[key] = context
        context.pump = asyncio.create_task(self._pump(context))
        return context

    def _close(self, context: XiContext, interrupted: bool = False) -> None:
        if interrupted and not context.failed:  # a failed context ends with its error, not as cancelled
            context.run.cancel.set()
        context.incoming.close()

    def _stop_all(self) -> None:
        for context in list(self.contexts.values()):
            context.run.cancel.set()  # first: the take ends as cancelled, not as failed
            if not context.incoming.closed:
                context.incoming.fail(UserError("the client went away"))

    async def _drain(self) -> None:
        pumps = [c.pump for c in self.contexts.values() if c.pump is not None]
        if pumps:
            await asyncio.gather(*pumps, return_exceptions=True)

    async def _refuse(self, message: str, kind: str, code: int = POLICY_VIOLATION) -> None:
        """Every take stops; the error, then the close (under the send lock: no pump is mid-frame)."""
        self._stop_all()
        try:
            async with self._send_lock:
                await self.ws.send_text(XiError(error=kind, message=message, code=code).model_dump_json(exclude_none=True))
                await self.ws.close(code=code)
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass
        await self._drain()

    # ------------------------------------------------------------------ out
    async def _pump(self, context: XiContext) -> None:
        """The context's take as audio messages, then ``isFinal`` (an ``error`` for it first when it failed)."""
        run = context.run
        text = ""
        try:
            encoder = XiEncoder(self.socket.fmt, run.link.sample_rate)
            async for event in run.events():
                if isinstance(event, SentenceStart):
                    text = event.sentence.text
                elif isinstance(event, Audio) and len(event.pcm):
                    piece = encoder.audio(event.pcm)
                    spoken = char_alignment(text, len(event.pcm) / run.link.sample_rate) if event.index >= 0 else None
                    if piece:
                        await self.send(XiAudio(audio=base64.b64encode(piece).decode("ascii"), alignment=spoken,
                                                normalizedAlignment=spoken, contextId=context.id))
                elif isinstance(event, Done):
                    if tail := encoder.end():
                        await self.send(XiAudio(audio=base64.b64encode(tail).decode("ascii"), contextId=context.id))
                    for notice in dict.fromkeys(n for n, _status in run.notices):  # each said once
                        await self.send(XiError(error="invalid_request", message=notice, contextId=context.id))
                elif isinstance(event, Failed):
                    if event.status == 499:
                        self.state.count_cancel()
                    elif context.incoming.last is not None or context.failed or event.status != 400:
                        # (a context that got no text at all ends with isFinal alone)
                        await self.send(XiError(error="invalid_request" if event.status == 400 else "server_error",
                                                message=event.message, contextId=context.id))
            await self.send(XiFinal(contextId=context.id))
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass
        finally:  # the client gone, or anything unforeseen: the take stops (after its end, a no-op)
            run.cancel.set()
            self.finish(run)
            if self.contexts.get(context.id) is context:
                del self.contexts[context.id]
            if len(self._ended) < 10_000:
                self._ended.add(context.id)


async def serve_xi(ws: WebSocket, state: ServerState, voice: str, link: Callable[[], BatchingLink],
                   finish: Callable[[TakeRun], None], multi: bool) -> None:
    """Accept, check the query and the voice (an ``error`` and close 1008 when wrong; 1013 when busy), serve."""
    await ws.accept()
    try:
        socket = XiSocket.of(voice, ws.query_params, multi)
        jobs.incoming_job(voice, socket.language, TakeFields())  # the voice and language known before any text
        link()
    except UserError as exc:
        await ws.send_text(XiError(error="invalid_request", message=str(exc)).model_dump_json(exclude_none=True))
        await ws.close(code=POLICY_VIOLATION)
        return
    except Exception as exc:  # noqa: BLE001 - still loading: try again later
        await ws.send_text(XiError(error="unavailable", message=str(exc).splitlines()[0], code=TRY_AGAIN_LATER)
                           .model_dump_json(exclude_none=True))
        await ws.close(code=TRY_AGAIN_LATER)
        return
    await XiSession(ws, state, link, finish, socket).serve()
