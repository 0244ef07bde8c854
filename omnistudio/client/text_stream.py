"""Text in as it is written, from a client: :func:`speak_stream` sends a language model's tokens (any iterable
of strings, consumed on a thread of its own) over the server's WebSocket (``input: "stream"``) and yields each
sentence's audio as soon as the server has rendered it, while the text is still being written.

Use::

    for sentence in speak_stream("http://127.0.0.1:8005", llm_tokens(), voice="ruby"):
        play(sentence.pcm)                      # float32, 24 kHz, mono
    # a refusal is a typed RemoteError; the server's limits: docs/server.md
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from omnistudio import protocol as wire
from omnistudio.client.connection import ServerAddress, ServerRefused, connect_ws, parse_server_url, status_error

NOTES = (413, 408)  # refusals said before ``done``: the take finished with what was complete


@dataclass(frozen=True)
class StreamedSentence:
    """One sentence as the server rendered it: what was written, what was said, in which voice, its samples
    (float32 at the server's rate) and its end event (frames, steps, timings, loudness). The take's last
    samples (the end of its last sentence's fade, after that sentence's end event) come as index -1, with
    no text and no end event: the pieces in order are the take's audio."""

    index: int
    text: str
    spoken: str
    voice: str
    pcm: NDArray[np.float32]
    end: wire.WsSentenceEnd | None


def speak_stream(server: str | ServerAddress, chunks: Iterable[str], *, voice: str = wire.DEFAULT_VOICE,
                 language: str | None = None, seed: int | None = None, num_step: int | None = None,
                 api_key: str | None = None, notices: list[str] | None = None) -> Iterator[StreamedSentence]:
    """Speak ``chunks`` as they come; yields each sentence when its audio is complete. ``notices``: where the
    server's refusals that still finished the take (over the limit, idle) are put; other errors raise."""
    address = server if isinstance(server, ServerAddress) else parse_server_url(server)
    fields: dict[str, object] = {"type": "speak", "input": "stream", "voice": voice, "language": language,
                                 "pcm": "f32", "seed": seed, "num_step": num_step}
    request = wire.WsRequest.model_validate({k: v for k, v in fields.items() if v is not None})
    ws = connect_ws(address, api_key)
    try:
        ws.send(wire.frame(request))
        failed: list[BaseException] = []

        def pump() -> None:
            try:
                for chunk in chunks:
                    if chunk:
                        ws.send(json.dumps({"type": "text", "text": chunk}))
                ws.send(json.dumps({"type": "end"}))
            except BaseException as exc:  # noqa: BLE001 - the writer's fault ends the take, said by the reader
                failed.append(exc)
                ws.close()

        writer = threading.Thread(target=pump, name="omnistudio-text-stream", daemon=True)
        writer.start()
        start: wire.WsSentenceStart | None = None
        pieces: list[bytes] = []
        for message in ws:
            if isinstance(message, bytes):
                pieces.append(message)
                continue
            event = wire.parse_server_event(message)
            if isinstance(event, wire.WsSentenceStart):
                start, pieces = event, []
            elif isinstance(event, wire.WsSentenceEnd) and start is not None:
                yield StreamedSentence(start.index, start.text, start.spoken, start.voice, _pcm(pieces), event)
                start, pieces = None, []
            elif isinstance(event, wire.WsError):
                if event.status in NOTES and notices is not None:
                    notices.append(event.message)
                elif event.status not in NOTES:
                    raise status_error(address, event.status, json.dumps({"error": {"message": event.message}}))
            elif isinstance(event, wire.WsCancelled):
                raise ServerRefused(f"server {address} cancelled the take")
            elif isinstance(event, wire.WsDone):
                if pieces:
                    yield StreamedSentence(-1, "", "", "", _pcm(pieces), None)
                break
        writer.join(timeout=1.0)
        if failed:
            raise failed[0]
    finally:
        ws.close()


def _pcm(pieces: list[bytes]) -> NDArray[np.float32]:
    return np.frombuffer(b"".join(pieces), dtype="<f4").astype(np.float32)
