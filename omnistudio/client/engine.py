"""RemoteEngine: the EngineLink over the speech server's WebSocket (``omnistudio serve`` on a GPU box).

The take pipeline renders through it exactly as through ``LocalEngine``: ``render(items)`` sends the
planned sentences (text, voice, language, seed) and the options, and asks for exact float32 frames
(``"pcm": "f32"``), so what comes back is bit for bit what the server's engine made, and a take rendered
remotely equals the same take rendered in process. ``prepare`` asks the server to build the prompts a
script needs (progress events come back); ``voices()`` is the server's roster (``GET /v1/audio/voices``);
setting the cancel event sends ``{"type": "cancel"}`` and the server stops within one diffusion step.

The server answers one request per connection (``docs/server.md``): each call opens a WebSocket (with
a short retry with backoff, :func:`connection.connect_ws`), sends its one request and reads the answer
to ``done``. A connection lost mid-answer is reopened and the request sent once more: seeds are fixed,
so a resent group renders the same samples. What cannot be reached within the retry budget is raised
as a typed :class:`~omnistudio.client.connection.RemoteError`, one line long. Every message is
:mod:`omnistudio.protocol`'s; one this client does not know is a ServerRefused, never a guess.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, TypedDict
from urllib.parse import urlsplit

import numpy as np
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

from omnistudio import protocol as wire
from omnistudio.client import connection as net
from omnistudio.client.connection import RemoteError, ServerAddress, ServerDropped, ServerRefused
from omnistudio.config import SAMPLE_RATE
from omnistudio.engine.engine import Timings
from omnistudio.errors import Cancelled, UserError
from omnistudio.take.link import (AnchorInfo, CancelFlag, LinkInfo, PrepareEvent, PrepareProgress, Rendered, RenderItem,
                                  VoiceList, WholeGroupLink)
from omnistudio.take.options import TakeOptions
from omnistudio.voices.resolve import VoiceRef

log = logging.getLogger(__name__)

POLL_S = 0.05  # how often a wait on the server looks at the cancel flag
CANCEL_WAIT_S = 2.0  # after a cancel: how long to wait for the server's acknowledgement


def _cancel_check(cancel: CancelFlag | Callable[[], bool] | None) -> Callable[[], bool]:
    if cancel is None:
        return lambda: False
    if isinstance(cancel, CancelFlag):
        return cancel.is_set
    return cancel


def voice_to_wire(voice: VoiceRef) -> str:
    """A VoiceRef as the server parses it: its canonical key (``ruby``, ``ruby+storm@0.70``; a Blend's
    alpha is already rounded to 0.01, so the key carries it exactly)."""
    if getattr(voice, "anchor", None) is None and getattr(voice, "blend", None) is None:
        raise UserError(f"voice {voice.key() if hasattr(voice, 'key') else voice} lives on this machine (a "
                        "recording or a prompt file): with --server use an anchor, a blend, or a voice added on "
                        "the server with `omnistudio voices add`")
    return voice.key()


def item_to_wire(item: RenderItem) -> wire.WsItem:
    return wire.WsItem(text=item.text, voice=voice_to_wire(item.voice), lang=item.lang, seed=int(item.seed))


def link_info_from_wire(health: wire.Health, address: ServerAddress) -> LinkInfo:
    """``GET /health`` -> LinkInfo; the device names the server too (``cuda:0 @ gpu-box:8005``)."""
    engine = health.engine or wire.EngineInfo()
    return LinkInfo(engine.model, f"{engine.device} @ {urlsplit(address.base).netloc}", engine.dtype, engine.sampler,
                    engine.threads, engine.quantisation, engine.compile, engine.graphs, engine.path)


def voice_list_from_wire(listing: wire.VoiceListing) -> VoiceList:
    """``GET /v1/audio/voices`` -> VoiceList: anchors (id, name, languages, prompt state per language), duos."""
    anchors = tuple(AnchorInfo(v.id, v.name or v.id, tuple(v.languages), dict(v.prompts)) for v in listing.voices)
    duos = tuple((d.anchors[0], d.anchors[1], d.alpha, tuple(d.languages)) for d in listing.duos)
    return VoiceList(anchors, duos)


def _timings(data: dict[str, Any]) -> Timings | None:
    known = {k: float(data[k]) for k in ("wall_s", "audio_s", "rtf", "prompt_s", "decode_s") if k in data}
    if not {"wall_s", "audio_s", "rtf"} <= known.keys():
        return None
    return Timings(**known)


class _WsOptions(TypedDict):
    open_timeout: float
    ping_interval: float | None
    ping_timeout: float | None


class _Dropped(Exception):
    """The connection went away mid-answer (internal: turned into a resend or a ServerDropped)."""


class RemoteEngine(WholeGroupLink):
    """The EngineLink of a studio or CLI whose engine runs in ``omnistudio serve`` at ``url``."""

    def __init__(self, url: str | ServerAddress, api_key: str | None = None, *, connect_budget_s: float = 1.0,
                 open_timeout: float = 3.0, ping_interval: float | None = 2.0,
                 ping_timeout: float | None = 4.0) -> None:
        self.address = url if isinstance(url, ServerAddress) else net.parse_server_url(url)
        self.api_key = api_key
        self.sample_rate = SAMPLE_RATE
        self.connect_budget_s = connect_budget_s
        self._ws_options: _WsOptions = {"open_timeout": open_timeout, "ping_interval": ping_interval,
                            "ping_timeout": ping_timeout}
        self._info: LinkInfo | None = None
        self.reconnects = 0  # requests sent again after a lost connection (how flaky the link was)

    # ------------------------------------------------------------ link API
    @property
    def info(self) -> LinkInfo:
        """The server's model, device, dtype and sampler (``GET /health``, asked once) as a LinkInfo."""
        if self._info is None:
            health = self.check()
            self._info = link_info_from_wire(health, self.address)
            self.sample_rate = health.sample_rate or self.sample_rate
        return self._info

    def check(self) -> wire.Health:
        """Reach the server now (``GET /health``); its answer, or a typed RemoteError."""
        return net.health(self.address, self.api_key)

    def wait_ready(self, progress: Callable[[str], None] | None = None, timeout_s: float = 600.0) -> LinkInfo:
        """Wait while the server loads its model (503), reporting what it says; then its LinkInfo."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return self.info
            except net.ServerNotReady as exc:
                if time.monotonic() > deadline:
                    raise
                if progress is not None:
                    progress(str(exc))
                time.sleep(0.5)

    def voices(self) -> VoiceList:
        """The server's roster (``GET /v1/audio/voices``): anchors with languages and prompt states, and duos."""
        data = net.get_json(self.address, "/v1/audio/voices", self.api_key)
        try:
            return voice_list_from_wire(wire.parse_response(wire.VoiceListing, data, "/v1/audio/voices"))
        except wire.ProtocolError as exc:
            raise ServerRefused(f"server {self.address}: {exc}") from None

    def prepare(self, voices: Sequence[tuple[VoiceRef, str]], progress: PrepareProgress | None = None,
                cancel: CancelFlag | None = None) -> None:
        """Have the server resolve every (voice, lang) (building missing or stale prompts), with progress."""
        todo = list(dict.fromkeys(voices))
        if not todo:
            return
        request = wire.WsPrepare(type="prepare", voices=[wire.WsPrepareVoice(voice=voice_to_wire(v), lang=lang)
                                                         for v, lang in todo])

        def on_message(message: wire.ServerEvent) -> bool:
            if isinstance(message, wire.WsPrepareStep) and progress is not None:
                progress(PrepareEvent(message.done, message.total, message.voice, message.lang, message.action))
            return isinstance(message, wire.WsPrepared)

        self._exchange(request, on_message, None, _cancel_check(cancel))

    def render(self, items: Sequence[RenderItem], options: TakeOptions,
               cancel: CancelFlag | None = None) -> list[Rendered]:
        """One group of sentences rendered by the server; the exact float32 samples its engine made."""
        items = list(items)
        if not items:
            return []
        request = wire.WsRequest(pcm="f32", language=items[0].lang, items=[item_to_wire(i) for i in items],
                                 num_step=int(options.num_step), guidance_scale=float(options.guidance_scale),
                                 speed=options.speed_arg)
        results: dict[int, Any] = {}  # by position in ``items`` (the server numbers them 0..n-1)
        current: list[Any] = [None, []]  # [position, frames]

        def on_binary(data: bytes) -> None:
            if current[0] is not None:  # audio outside a sentence (a stitched tail) is not an item's
                current[1].append(data)

        def on_message(message: wire.ServerEvent) -> bool:
            if isinstance(message, wire.WsSentenceStart):
                current[0], current[1] = message.index, []
            elif isinstance(message, wire.WsSentenceEnd):
                position = message.index
                if not 0 <= position < len(items):
                    raise ServerRefused(f"server {self.address} answered a sentence it was not asked for")
                pcm = np.frombuffer(b"".join(current[1]), dtype="<f4").astype(np.float32)
                results[position] = Rendered(items[position].index, pcm, _timings(message.timings), message.steps,
                                             message.error)
                current[0], current[1] = None, []
            return isinstance(message, wire.WsDone)

        def reset() -> None:  # a resend starts the group over
            results.clear()
            current[0], current[1] = None, []

        self._exchange(request, on_message, on_binary, _cancel_check(cancel), reset)
        missing = [items[k].index + 1 for k in range(len(items)) if k not in results]
        if missing:
            raise ServerRefused(f"server {self.address} ended the render without sentence(s) "
                                f"{', '.join(map(str, missing))}")
        return [results[k] for k in range(len(items))]

    def close(self) -> None:
        """Nothing is held between calls (each request has its own connection)."""

    # ------------------------------------------------------------ plumbing
    def _exchange(self, request: wire.WsRequest | wire.WsPrepare, on_message: Callable[[wire.ServerEvent], bool],
                  on_binary: Callable[[bytes], None] | None, cancelled: Callable[[], bool],
                  reset: Callable[[], None] | None = None) -> None:
        """Send ``request`` on a new connection and feed the answers to the handlers until one says done.

        A connection lost before the answer is complete is reopened (with backoff) and the request sent
        once more; a second loss, or no server within the budget, is a ServerDropped.
        """
        payload = wire.frame(request)
        lost: str | None = None  # why the connection went away mid-answer, if it did
        for attempt in (1, 2):
            if cancelled():
                raise Cancelled()
            try:
                ws = net.connect_ws(self.address, self.api_key, self.connect_budget_s, **self._ws_options)
            except net.ServerUnreachable as exc:
                if lost is None:
                    raise
                raise ServerDropped(f"lost the server {self.address} mid-render ({lost}) and it does not "
                                    f"answer again: {exc.reason}") from None
            try:
                self._converse(ws, payload, on_message, on_binary, cancelled)
                return
            except _Dropped as exc:
                if reset is not None:
                    reset()
                log.debug("connection to %s lost (%s); reconnecting", self.address, exc)
                lost = str(exc)
                if attempt == 2:
                    raise ServerDropped(f"lost the server {self.address} twice during one request ({exc})") \
                        from None
                self.reconnects += 1
            finally:
                _close_quietly(ws)

    def _converse(self, ws: ClientConnection, payload: str, on_message: Callable[[wire.ServerEvent], bool],
                  on_binary: Callable[[bytes], None] | None, cancelled: Callable[[], bool]) -> None:
        try:
            ws.send(payload)
            while True:
                if cancelled():
                    self._cancel(ws)
                    raise Cancelled()
                try:
                    data = ws.recv(timeout=POLL_S)
                except TimeoutError:
                    continue
                if isinstance(data, bytes):
                    if on_binary is None:
                        raise ServerRefused(f"server {self.address} sent audio to a request that wants none")
                    on_binary(data)
                    continue
                try:
                    message = wire.parse_server_event(data)
                except wire.ProtocolError as exc:
                    raise ServerRefused(f"server {self.address}: {exc}") from None
                if isinstance(message, wire.WsError):
                    self._raise_server_error(message)
                if isinstance(message, wire.WsCancelled):
                    raise Cancelled()
                if on_message(message):
                    return
        except ConnectionClosed as exc:
            raise _Dropped(_closed_reason(exc)) from None
        except (OSError, EOFError) as exc:
            raise _Dropped(str(exc) or type(exc).__name__) from None

    def _raise_server_error(self, message: wire.WsError) -> None:
        """An ``error`` frame as the typed error its status means (the same as over HTTP)."""
        retry = None if message.retry_after is None else f"{message.retry_after:g}"
        raise net.status_error(self.address, message.status, message.message, retry)

    def _cancel(self, ws: ClientConnection) -> None:
        """Tell the server to stop (it stops within one diffusion step) and wait briefly for it to say so."""
        try:
            ws.send(wire.frame(wire.WsCancel(type="cancel")))
            deadline = time.monotonic() + CANCEL_WAIT_S
            while time.monotonic() < deadline:
                data = ws.recv(timeout=max(0.0, deadline - time.monotonic()))
                if isinstance(data, str) and isinstance(wire.parse_server_event(data),
                                                        (wire.WsCancelled, wire.WsDone, wire.WsError)):
                    return
        except (ConnectionClosed, OSError, TimeoutError, UserError):
            pass  # gone or silent: the connection is closed after this request either way


def _close_quietly(ws: ClientConnection) -> None:
    try:
        ws.close()
    except Exception:  # noqa: BLE001 - it is gone either way
        pass


def _closed_reason(exc: Any) -> str:
    rcvd = getattr(exc, "rcvd", None)
    if rcvd is None:
        return "connection closed without a close frame"
    return f"closed by the server: code {rcvd.code}" + (f", {rcvd.reason}" if rcvd.reason else "")


__all__ = ["RemoteEngine", "RemoteError", "item_to_wire", "voice_to_wire"]
