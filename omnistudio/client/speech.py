"""``POST /v1/audio/speech`` as a client makes it: the request streamed back, with when its first byte came."""

from __future__ import annotations

import time
from dataclasses import dataclass

from omnistudio.client.connection import ServerAddress, parse_server_url, post_stream
from omnistudio.protocol import REPLICA_HEADER, SpeechRequest


@dataclass(frozen=True)
class SpeechReply:
    """The response's bytes, the time to its first byte and to its end, and the replica that answered."""

    audio: bytes
    first_byte_s: float
    wall_s: float
    replica: str  # the x-omnistudio-replica header ("" from a single server)


def speech(server: str | ServerAddress, request: SpeechRequest, api_key: str | None = None,
           timeout_s: float = 600.0) -> SpeechReply:
    """One speech request, read as it streams; a refusal or an unreachable server is a typed RemoteError."""
    address = server if isinstance(server, ServerAddress) else parse_server_url(server)
    started = time.perf_counter()
    first: float | None = None
    parts: list[bytes] = []
    with post_stream(address, "/v1/audio/speech", request.model_dump(exclude_none=True), api_key,
                     timeout_s) as response:
        for chunk in response.iter_bytes():
            if first is None and chunk:
                first = time.perf_counter() - started
            parts.append(chunk)
        replica = response.headers.get(REPLICA_HEADER, "")
    wall = time.perf_counter() - started
    return SpeechReply(b"".join(parts), wall if first is None else first, wall, replica)
