"""MOS 2.8.5 on the wire: UTF-16 big-endian XML messages, each one ``<mos>...</mos>`` element, framed out of a
TCP stream; parsed safely (no DTD, no entities: a billion-laughs message is refused), and built with the
envelope echoed (``mosID``, ``ncsID``, ``messageID``).

A message over :data:`MAX_MESSAGE_BYTES` is never held whole: the framer answers it as one
:class:`TooBig` (with the ``messageID`` it found at its start, to answer with an error status) and skips
the rest of it.
"""

from __future__ import annotations

import codecs
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from defusedxml import ElementTree as SafeET

ENCODING = "utf-16-be"
MAX_MESSAGE_BYTES = 2 * 1024 * 1024  # a running order of 1,000 stories is ~0.6 MB of UTF-16
MOS_REV = "2.8.5"
OPEN, CLOSE = "<mos>", "</mos>"
MESSAGE_ID_RE = re.compile(r"<messageID>\s*([^<\s]{1,32})\s*</messageID>")


class MosError(Exception):
    """A message that cannot be taken: answered with an error status (its text), never a crash."""


@dataclass(frozen=True)
class Message:
    """One parsed message: its envelope and its body element (``kind``: the body's tag)."""

    mos_id: str
    ncs_id: str
    message_id: str
    kind: str
    body: ET.Element


@dataclass(frozen=True)
class TooBig:
    """A message over the size limit: its ``messageID`` when its start held one."""

    message_id: str
    size: int


@dataclass(frozen=True)
class Broken:
    """Bytes that are not a well-formed MOS message (``why``), with a ``messageID`` where one can be read."""

    message_id: str
    why: str


Frame = Message | TooBig | Broken


class Framer:
    """Cuts complete ``<mos>`` messages out of a byte stream (UTF-16BE, split anywhere, several at once).

    MOS 2.8.5 speaks UCS-2/UTF-16BE; a peer that sends UTF-8 or UTF-16LE instead is read in what it sends
    (``encoding`` says which, from its first ``<``; ``encode`` answers it in the same) rather than left
    unanswered. ``<mos>`` inside a CDATA section or a comment is text, not a message."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.limit = limit // 2  # in characters
        self.encoding: str | None = None  # known from the first "<" the peer sends
        self._raw = b""  # bytes before the encoding is known
        self._decoder: codecs.IncrementalDecoder | None = None
        self._text = ""
        self._skipping: int | None = None  # depth while a message over the limit is skipped
        self._skipped = 0

    def encode(self, message: bytes) -> bytes:
        """One of our messages (UTF-16BE) in the encoding the peer speaks."""
        if self.encoding in (None, ENCODING):
            return message
        return message.decode(ENCODING).encode(self.encoding)

    def _decode(self, data: bytes) -> str:
        if self._decoder is None:
            self._raw += data
            found = self._raw.find(b"<")
            if found < 0 or found + 1 >= len(self._raw):
                return ""
            after = self._raw[found + 1]
            big_endian = found > 0 and self._raw[found - 1] == 0
            self.encoding = ENCODING if big_endian else "utf-16-le" if after == 0 else "utf-8"
            self._decoder = codecs.getincrementaldecoder(self.encoding)(errors="replace")
            data, self._raw = self._raw[found - 1 if big_endian else found:], b""
        return self._decoder.decode(data)

    def feed(self, data: bytes) -> list[Frame]:
        self._text += self._decode(data)
        frames: list[Frame] = []
        while True:
            if self._skipping is not None:
                if not self._skip():
                    return frames
                continue
            start = self._text.find(OPEN)
            if start < 0:
                self._text = self._text[-(len(OPEN) - 1):]  # junk before a message (a BOM, a prologue)
                return frames
            self._text = self._text[start:]
            end = _matching_close(self._text)
            if end is None:
                if len(self._text) > self.limit:
                    found = MESSAGE_ID_RE.search(self._text[:4096])
                    frames.append(TooBig(found.group(1) if found else "", len(self._text) * 2))
                    self._skipping, self._skipped = 0, 0
                    continue
                return frames
            frames.append(parse(self._text[:end]))
            self._text = self._text[end:]

    def _skip(self) -> bool:
        """Drop the text of the message over the limit up to its end; True once it has ended."""
        depth = self._skipping or 0
        pos = 0
        for match in re.finditer(r"<mos>|</mos>", self._text):
            depth += 1 if match.group() == OPEN else -1
            pos = match.end()
            if depth == 0:
                self._text, self._skipping = self._text[pos:], None
                return True
        keep = len(CLOSE) - 1
        self._skipped += max(0, len(self._text) - keep)
        self._text = self._text[-keep:] if len(self._text) > keep else self._text
        self._skipping = depth
        return False


_TOKEN_RE = re.compile(r"<!\[CDATA\[|<!--|<mos>|</mos>")
_SECTION_END = {"<![CDATA[": "]]>", "<!--": "-->"}


def _matching_close(text: str) -> int | None:
    """Where the ``</mos>`` that closes the ``<mos>`` at the start of ``text`` ends (None: not yet read); a
    CDATA section or a comment is skipped whole (its ``<mos>`` is text)."""
    depth, pos = 0, 0
    while (match := _TOKEN_RE.search(text, pos)) is not None:
        token = match.group()
        if token in _SECTION_END:
            end = text.find(_SECTION_END[token], match.end())
            if end < 0:
                return None  # the section goes on in bytes not read yet
            pos = end + len(_SECTION_END[token])
            continue
        depth += 1 if token == OPEN else -1
        pos = match.end()
        if depth == 0:
            return pos
    return None


def parse(text: str) -> Message | Broken:
    """A message from its text: refused (:class:`Broken`) when it is not well-formed XML, holds a DTD or an
    entity (defusedxml), or has no envelope or body."""

    found = MESSAGE_ID_RE.search(text[:4096])
    message_id = found.group(1) if found else ""
    try:
        root = SafeET.fromstring(text)
    except Exception as exc:  # noqa: BLE001 - any parse failure (not XML, a DTD, an entity) is a bad message
        first = str(exc).splitlines()[0] if str(exc) else ""
        return Broken(message_id, f"not well-formed MOS XML ({type(exc).__name__}{': ' + first if first else ''})")
    body = [child for child in root if child.tag not in ("mosID", "ncsID", "messageID")]
    if not body:
        return Broken(message_id, "a MOS message with no body")
    return Message(text_of(root, "mosID"), text_of(root, "ncsID"), text_of(root, "messageID"), body[0].tag, body[0])


def text_of(element: ET.Element | None, tag: str, default: str = "") -> str:
    """The stripped text of ``element``'s first child ``tag`` (``default`` when there is none)."""
    if element is None:
        return default
    child = element.find(tag)
    return (child.text or "").strip() if child is not None else default


def all_text(element: ET.Element) -> str:
    """Every piece of text inside ``element`` (a paragraph with inline markup), spaces collapsed."""
    return " ".join("".join(element.itertext()).split())


# --------------------------------------------------------------------------------------- building
def element(tag: str, *children: ET.Element | None, text: str | None = None, **attributes: str) -> ET.Element:
    """An element with ``text`` or ``children`` (None children left out)."""
    node = ET.Element(tag, attributes)
    if text is not None:
        node.text = text
    node.extend(child for child in children if child is not None)
    return node


def leaf(tag: str, value: object) -> ET.Element:
    return element(tag, text=str(value))


def leaves(pairs: Iterable[tuple[str, object]]) -> list[ET.Element]:
    return [leaf(tag, value) for tag, value in pairs if value is not None]


def envelope(mos_id: str, ncs_id: str, message_id: str | int, body: ET.Element) -> bytes:
    """A whole message, encoded for the wire."""
    root = element("mos", leaf("mosID", mos_id), leaf("ncsID", ncs_id), leaf("messageID", message_id), body)
    return ET.tostring(root, encoding="unicode").encode(ENCODING)


def mos_time(moment: datetime | None = None) -> str:
    """A MOS time (UTC, milliseconds): ``2026-12-04T22:21:21,947Z``."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S,") + f"{moment.microsecond // 1000:03d}Z"
