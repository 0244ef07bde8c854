"""The gateway's TCP side (asyncio): the ports the NCS connects to, and the connections it opens to the NCS.

- :func:`listen`: a port (lower, upper or query) the NCS connects to; every message is answered on its
  own socket, with its ``messageID``, by ``handle`` (which never raises: a bad message gets an error status).
- :class:`NcsLink`: what the gateway starts (``mosObj``, ``mosListAll``, ``roElementStat``, heartbeats)
  goes over a connection it opens to the NCS's port, one message at a time, each waiting for its answer.
  When the NCS goes away the link reconnects with backoff (0.5 s doubling to 10 s) and sends what waited,
  in order: nothing queued is lost; a heartbeat goes out when nothing else has for ``heartbeat_s``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Awaitable, Callable

from omnistudio.mos.wire import ENCODING, Broken, Framer, Frame, Message, envelope, leaf, mos_time, element

log = logging.getLogger("omnistudio.mos")

Handler = Callable[[Frame, str], Awaitable[bytes | None]]
_ids = itertools.count(1)  # messageIDs of the messages this gateway starts


class Listener:
    """A port the NCS connects to, and the connections it holds (closed with it: a quiet shutdown)."""

    def __init__(self, server: asyncio.Server, connections: dict[asyncio.Task[None], asyncio.StreamWriter]) -> None:
        self.server, self.connections = server, connections

    @property
    def port(self) -> int:
        return int(self.server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and end every connection by closing its socket, so each handler returns as when the
        NCS hangs up (a cancelled handler is logged by asyncio as a traceback); wait for them."""
        self.server.close()
        for writer in list(self.connections.values()):
            writer.close()
        if self.connections:
            await asyncio.wait(list(self.connections), timeout=5.0)
        for task in list(self.connections):  # one stuck in a handler past that: cancelled after all
            task.cancel()
        await self.server.wait_closed()


async def listen(host: str, port: int, name: str, handle: Handler) -> Listener:
    """Serve the NCS's connections on ``host:port``; ``name`` (lower, upper, query) tells ``handle`` which."""
    connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        framer, told = Framer(), False
        task = asyncio.current_task()
        if task is not None:
            connections[task] = writer
        try:
            while data := await reader.read(65536):
                frames = framer.feed(data)
                if framer.encoding not in (None, ENCODING) and not told:
                    told = True
                    log.warning("%s port: %s sends %s, not UTF-16BE as MOS 2.8.5 asks: read and answered in %s",
                                name, peer, framer.encoding.upper(), framer.encoding.upper())
                for frame in frames:
                    reply = await handle(frame, name)
                    if reply is not None:
                        writer.write(framer.encode(reply))
                        await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("%s port: %s went away (%s)", name, peer, exc)
        finally:
            if task is not None:
                connections.pop(task, None)
            writer.close()

    return Listener(await asyncio.start_server(client, host, port), connections)


class NcsLink:
    """One connection the gateway opens to the NCS (its lower or upper port) and the messages waiting for it."""

    def __init__(self, host: str, port: int, name: str, mos_id: str, ncs_id: str, heartbeat_s: float = 10.0,
                 timeout_s: float = 10.0) -> None:
        self.host, self.port, self.name = host, port, name
        self.mos_id, self.ncs_id = mos_id, ncs_id
        self.heartbeat_s, self.timeout_s = heartbeat_s, timeout_s
        self.waiting: deque[ET.Element] = deque()
        self.connected = False
        self.sent = 0  # messages the NCS answered
        self._wake = asyncio.Event()

    def send(self, body: ET.Element) -> None:
        """Queue a message (from the event loop's thread)."""
        self.waiting.append(body)
        self._wake.set()

    async def run(self) -> None:
        delay = 0.5
        while True:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), self.timeout_s)
            except (TimeoutError, OSError) as exc:
                if self.connected or delay == 0.5:
                    log.info("NCS %s port %s:%d: cannot connect (%s); retrying", self.name, self.host, self.port, exc)
                self.connected = False
                await asyncio.sleep(delay)
                delay = min(10.0, delay * 2)
                continue
            if not self.connected:
                log.info("NCS %s port %s:%d: connected", self.name, self.host, self.port)
            self.connected, delay = True, 0.5
            try:
                await self._pump(reader, writer)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ConnectionError) as exc:
                log.info("NCS %s port: connection lost (%s); %d messages wait", self.name, str(exc) or type(exc).__name__,
                         len(self.waiting))
            finally:
                writer.close()
            self.connected = False
            await asyncio.sleep(delay)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        framer = Framer()
        while True:
            if not self.waiting:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), self.heartbeat_s)
                except TimeoutError:
                    self.waiting.appendleft(element("heartbeat", leaf("time", mos_time())))
            body = self.waiting[0]
            message_id = next(_ids)
            writer.write(envelope(self.mos_id, self.ncs_id, message_id, body))
            await writer.drain()
            reply = await asyncio.wait_for(self._answer(reader, framer, str(message_id)), self.timeout_s)
            self.waiting.popleft()  # answered: never sent again
            self.sent += 1
            if isinstance(reply, Message) and _refused(reply):
                log.warning("NCS refused %s: %s", body.tag, ET.tostring(reply.body, encoding="unicode")[:300])

    async def _answer(self, reader: asyncio.StreamReader, framer: Framer, message_id: str) -> Frame:
        while True:
            data = await reader.read(65536)
            if not data:
                raise ConnectionError("the NCS closed the connection")
            for frame in framer.feed(data):
                if isinstance(frame, Broken) or getattr(frame, "message_id", "") == message_id:
                    return frame
                log.info("NCS answered messageID %s while %s waited", getattr(frame, "message_id", "?"), message_id)


def _refused(reply: Message) -> bool:
    status = (reply.body.findtext("status") or "").strip().upper()
    return status == "NACK"
