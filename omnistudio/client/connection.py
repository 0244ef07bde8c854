"""The client's network side: the server's address, its key, every HTTP call, and every fault as a typed error.

A fault is an ordinary event for the clients: each is a :class:`RemoteError` (a ``UserError``, so the
CLI prints it as one line and the studio shows it as a notification) naming the server and what to do;
the ones that may pass (unreachable, dropped, busy, not ready) are also ``errors.Unavailable``, which
the studio answers by trying again with backoff:

- :class:`ServerUnreachable`: nothing answers at the address (after the connect retries);
- :class:`ServerDropped`: the connection was lost mid-render and could not be re-established;
- :class:`ServerAuthError`: 401/403, the key is missing or wrong;
- :class:`ServerBusy`: 429, the server's queue is full (``retry_after_s`` from its header);
- :class:`ServerNotReady`: 503, the server is still loading its model;
- :class:`ServerRefused`: the server answered the request with an error (an unknown voice, ...).

:func:`connect_ws` opens the WebSocket with a short retry with backoff (``Backoff``), so a server
restarting or a flaky link costs a pause, not an error; what it cannot reach within its budget is
reported at once, so a dead server becomes a notification within about two seconds. HTTP goes through
httpx (:func:`get_json`, :func:`health`, :func:`post_stream`), never through a proxy (a LAN box).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from omnistudio.checks import key_lines
from omnistudio.errors import Unavailable, UserError, first_line
from omnistudio.protocol import PROTOCOL, WS_ROUTE, Health, ProtocolError, error_message, parse_response

# websockets logs a lost keepalive with its traceback; the client reports the loss itself, in one line
QUIET_WS_LOG = logging.getLogger("omnistudio.client.websocket")
QUIET_WS_LOG.addHandler(logging.NullHandler())
QUIET_WS_LOG.propagate = False
MAX_MESSAGE = 64 * 2**20  # one sentence of f32 PCM is ~100 KB/s of audio; a group stays well under this


class RemoteError(UserError):
    """A network fault talking to the speech server (one line, names the server)."""


class ServerUnreachable(RemoteError, Unavailable):
    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason  # the socket's own words ("Connection refused", ...)


class ServerDropped(RemoteError, Unavailable):
    pass


class ServerAuthError(RemoteError):
    pass


class ServerBusy(RemoteError, Unavailable):
    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ServerRefused(RemoteError):
    pass


class ServerNotReady(RemoteError, Unavailable):
    """503: the server is up but still loading its model or warming up."""


@dataclass(frozen=True)
class ServerAddress:
    """``http(s)://host:port[/prefix]`` as given, with the WebSocket and HTTP URLs derived from it."""

    base: str  # http(s)://host:port[/prefix], no trailing slash

    @property
    def ws_url(self) -> str:
        parts = urlsplit(self.base)
        scheme = "wss" if parts.scheme == "https" else "ws"
        return urlunsplit((scheme, parts.netloc, parts.path + WS_ROUTE, "", ""))

    def http_url(self, route: str) -> str:
        return self.base + route

    def __str__(self) -> str:
        return self.base


def parse_server_url(url: str) -> ServerAddress:
    """``host:port``, ``http://host:port`` or ``ws://host:port`` -> a ServerAddress; a bad one is a UserError."""
    text = (url or "").strip()
    if not text:
        raise UserError("--server is empty: give the speech server's address, e.g. http://gpu-box:8005")
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    scheme = {"http": "http", "ws": "http", "https": "https", "wss": "https"}.get(parts.scheme.lower())
    if scheme is None:
        raise UserError(f"server address '{url}': use http://HOST:PORT (or https://)")
    try:
        port = parts.port
    except ValueError:
        raise UserError(f"server address '{url}' has a bad port") from None
    if not parts.hostname:
        raise UserError(f"server address '{url}' has no host")
    if parts.query or parts.fragment:
        raise UserError(f"server address '{url}': no query or fragment, just http://HOST:PORT")
    path = parts.path.rstrip("/")
    if path.endswith(WS_ROUTE):
        path = path[: -len(WS_ROUTE)]
    netloc = parts.netloc if port is None else f"{parts.hostname}:{port}"
    if ":" in (parts.hostname or "") and port is not None:  # IPv6 literal
        netloc = f"[{parts.hostname}]:{port}"
    return ServerAddress(urlunsplit((scheme, netloc, path, "", "")))


def read_api_key(path: Path | str | None) -> str | None:
    """The key in ``path`` (first non-empty line), or None for no file; an unusable file is a UserError."""
    if path is None or str(path) == "":
        return None

    keys = key_lines(path)
    if not keys:
        raise UserError(f"the API key file {Path(path).expanduser()} is empty")
    return keys[0]


class Backoff:
    """Delays between connect attempts: ``first``, doubling up to ``cap``, within ``budget_s`` in all."""

    def __init__(self, budget_s: float = 1.0, first: float = 0.1, cap: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.budget_s, self.first, self.cap, self._clock = budget_s, first, cap, clock
        self._start = clock()
        self._next = first

    def next_delay(self) -> float | None:
        """How long to wait before the next attempt, or None once the budget is spent."""
        left = self.budget_s - (self._clock() - self._start)
        if left <= 0:
            return None
        delay = min(self._next, left)
        self._next = min(self._next * 2, self.cap)
        return delay


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def _server_message(body: bytes | str) -> str:
    """The one-line message of an error body (OpenAI's ``{"error": {"message"}}`` shape or plain text)."""
    said = error_message(body)
    return first_line(Exception(said)) if said else ""


def status_error(address: ServerAddress, status: int, body: bytes | str = b"",
                 retry_after: str | None = None) -> RemoteError:
    """The typed error for an HTTP status the server answered with."""
    said = _server_message(body)
    if status in (401, 403):
        return ServerAuthError(f"server {address} refused the API key (HTTP {status}): "
                               "check --api-key-file" + (f" ({said})" if said else ""))
    if status == 429:
        wait = None
        try:
            wait = float(retry_after) if retry_after is not None else None
        except ValueError:
            pass
        hint = f"retry in {wait:g} s" if wait is not None else "retry shortly"
        return ServerBusy(f"server {address} is busy (HTTP 429, queue full): {hint}", wait)
    if status == 503:
        return ServerNotReady(f"server {address} is not ready yet" + (f" ({said})" if said else ""))
    if 400 <= status < 500 and said:  # the request itself: the server's own words say what is wrong
        return ServerRefused(f"server {address}: {said}")
    return ServerRefused(f"server {address} answered HTTP {status}" + (f": {said}" if said else ""))


def _unreachable(address: ServerAddress, exc: BaseException) -> ServerUnreachable:
    reason = first_line(exc)
    return ServerUnreachable(f"server {address} is unreachable ({reason})", reason)


def get_json(address: ServerAddress, route: str, api_key: str | None, timeout: float = 5.0) -> Any:
    """GET ``route`` -> the decoded JSON; every fault as a typed RemoteError."""
    try:
        response = httpx.get(address.http_url(route), headers=auth_headers(api_key), timeout=timeout, trust_env=False)
    except httpx.TransportError as exc:
        raise _unreachable(address, exc) from None
    if response.status_code >= 400:
        raise status_error(address, response.status_code, response.content, response.headers.get("Retry-After"))
    try:
        return response.json()
    except ValueError:
        raise ServerRefused(f"server {address} answered {route} with something that is not JSON") from None


def health(address: ServerAddress, api_key: str | None) -> Health:
    """``GET /health`` as the protocol's Health, once the server says it speaks this client's protocol."""

    try:
        said = parse_response(Health, get_json(address, "/health", api_key), "/health")
    except ProtocolError as exc:
        raise ServerRefused(f"server {address}: {exc}") from None
    if said.protocol != PROTOCOL:
        version = "no protocol version (an older OmniStudio)" if said.protocol is None else f"protocol {said.protocol}"
        raise ServerRefused(f"server {address} speaks {version}; this client speaks protocol {PROTOCOL}: run the "
                            "same OmniStudio version on both")
    return said


@contextmanager
def post_stream(address: ServerAddress, route: str, body: dict[str, object], api_key: str | None,
                timeout: float = 600.0) -> Iterator[httpx.Response]:
    """POST ``body`` as JSON to ``route`` and hold the streamed response (its status already checked)."""
    try:
        with httpx.stream("POST", address.http_url(route), json=body, headers=auth_headers(api_key), timeout=timeout,
                          trust_env=False) as response:
            if response.status_code >= 400:
                raise status_error(address, response.status_code, response.read(),
                                   response.headers.get("Retry-After"))
            yield response
    except httpx.TransportError as exc:
        raise _unreachable(address, exc) from None


def connect_ws(address: ServerAddress, api_key: str | None, budget_s: float = 1.0, open_timeout: float = 3.0,
               ping_interval: float | None = 2.0, ping_timeout: float | None = 4.0) -> ClientConnection:
    """Open the server's WebSocket, retrying with backoff within ``budget_s``; faults are typed errors."""
    backoff = Backoff(budget_s)
    last = ""
    while True:
        try:
            return connect(address.ws_url, additional_headers=auth_headers(api_key), open_timeout=open_timeout,
                           ping_interval=ping_interval, ping_timeout=ping_timeout, close_timeout=1.0,
                           max_size=MAX_MESSAGE, compression=None, proxy=None, logger=QUIET_WS_LOG,
                           legacy=True)
        except InvalidStatus as exc:
            response = exc.response
            error = status_error(address, response.status_code, bytes(response.body or b""),
                                 response.headers.get("Retry-After"))
            if not isinstance(error, (ServerBusy, ServerNotReady)):  # busy or restarting: worth a retry
                raise error from None
            last, final = str(error), error
        except WebSocketException as exc:  # a handshake cut short (a server going down, not a websocket)
            last, final = first_line(exc), None
        except (OSError, TimeoutError) as exc:
            last, final = first_line(exc), None
        delay = backoff.next_delay()
        if delay is None:
            if final is not None:
                raise final from None
            raise ServerUnreachable(f"server {address} is unreachable ({last}); is `omnistudio serve` running "
                                    "there?", last) from None
        time.sleep(delay)
