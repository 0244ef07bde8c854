"""Running orders as the NCS sends them (MOS profiles 2 and 4), kept in a small store that survives a restart.

A running order holds stories; a story holds items (what the NCS placed in it) and, once ``roStorySend``
gives it, its text: the ``<p>`` paragraphs of its ``storyBody``. Its voice and language come from its
``mosExternalMetadata`` (a payload with ``voice`` and ``language``/``lang``, see docs/mos.md), else from a
speaker tag at the start of its slug (``[valentina:es] Elecciones``), else from the running order's
metadata, else the gateway's defaults.

Every change is applied to a copy and returned as the stories it touched: ``changed`` (render again) and
``gone`` (cancel, withdraw); the store is written atomically after each one.
"""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Literal

from omnistudio.mos.wire import MosError, all_text, text_of
from omnistudio.script import TAG_RE, parse_tag

MAX_STORIES = 5000  # a running order longer than this is refused
MAX_ID_CHARS = 128  # MOS's mosString128


@dataclass(frozen=True)
class Item:
    id: str
    obj_id: str = ""
    mos_id: str = ""
    slug: str = ""


@dataclass(frozen=True)
class Story:
    id: str
    slug: str = ""
    number: str = ""
    items: tuple[Item, ...] = ()
    paragraphs: tuple[str, ...] = ()  # its text, once roStorySend gave it
    voice: str = ""  # from its metadata or slug ("" : the running order's, else the gateway's)
    lang: str = ""

    @property
    def text(self) -> str:
        """The story as a script: one paragraph per line."""
        return "\n".join(p for p in self.paragraphs if p.strip())

    def fingerprint(self, ro: RunningOrder) -> str:
        """What its audio depends on here (text, voice, language): equal fingerprints, the same take."""
        key = json.dumps([self.text, self.voice or ro.voice, self.lang or ro.lang], ensure_ascii=False)
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class RunningOrder:
    id: str
    slug: str = ""
    stories: tuple[Story, ...] = ()
    voice: str = ""
    lang: str = ""
    air: str = "NOT READY"  # roReadyToAir

    def story(self, story_id: str) -> Story | None:
        return next((s for s in self.stories if s.id == story_id), None)

    def index(self, story_id: str) -> int:
        for k, story in enumerate(self.stories):
            if story.id == story_id:
                return k
        raise MosError(f"story {story_id} is not in running order {self.id}")


ObjectStatus = Literal["READY", "NOT READY", "DELETED"]  # MOS's object statuses


@dataclass(frozen=True)
class MosObject:
    """A story's audio as a MOS object (profile 1): what the NCS is told and asks for."""

    obj_id: str
    ro_id: str
    story_id: str
    slug: str = ""
    status: ObjectStatus = "NOT READY"
    path: str = ""  # the delivered file, once READY
    frames: int = 0
    sample_rate: int = 24_000
    fingerprint: str = ""  # the story's text, voice and language it was rendered from
    revision: int = 0
    reason: str = ""  # why it is not ready (rendering, an error)
    created: str = ""
    changed: str = ""


@dataclass
class Change:
    """What a message did: the stories to render again and those gone (to cancel)."""

    changed: list[tuple[str, str]] = field(default_factory=list)  # (roID, storyID)
    gone: list[tuple[str, str]] = field(default_factory=list)


# ------------------------------------------------------------------------------------------ parsing
def check_id(value: str, what: str) -> str:
    """An ID from a message: present, and as long as MOS allows at most."""
    if not value:
        raise MosError(f"{what} is missing")
    if len(value) > MAX_ID_CHARS:
        raise MosError(f"{what} is {len(value)} characters; MOS allows {MAX_ID_CHARS}")
    return value


def voice_of(element: ET.Element) -> tuple[str, str]:
    """The voice and language a story's or running order's ``mosExternalMetadata`` names (``""``: none)."""
    for meta in element.findall("mosExternalMetadata"):
        payload = meta.find("mosPayload")
        if payload is None:
            continue
        scope = payload.find("omnistudio")
        where = scope if scope is not None else payload
        voice = text_of(where, "voice") or text_of(where, "anchor")
        lang = text_of(where, "language") or text_of(where, "lang")
        if voice or lang:
            return voice.lower(), lang.lower()[:2]
    return "", ""


def slug_voice(slug: str) -> tuple[str, str]:
    """A speaker tag at the start of a slug: ``[ruby:es] Weather`` gives ("ruby", "es")."""

    match = TAG_RE.match(slug)
    if match is None:
        return "", ""
    try:
        tag = parse_tag(match.group(1), 0)
    except Exception:  # noqa: BLE001 - a slug in brackets that is not a tag is only a slug
        return "", ""
    return tag.speaker or "", tag.lang or ""


def item_of(element: ET.Element) -> Item:
    return Item(check_id(text_of(element, "itemID"), "itemID"), text_of(element, "objID"), text_of(element, "mosID"),
                text_of(element, "itemSlug"))


def story_of(element: ET.Element) -> Story:
    slug = text_of(element, "storySlug")
    voice, lang = voice_of(element)
    if not voice and not lang:
        voice, lang = slug_voice(slug)
    return Story(check_id(text_of(element, "storyID"), "storyID"), slug, text_of(element, "storyNum"),
                 tuple(item_of(i) for i in element.findall("item")), (), voice, lang)


def running_order_of(element: ET.Element) -> RunningOrder:
    ro_id = check_id(text_of(element, "roID"), "roID")
    stories = element.findall("story")
    check_story_count(ro_id, len(stories))  # before each story is parsed
    voice, lang = voice_of(element)
    parsed = tuple(story_of(s) for s in stories)
    ids = [s.id for s in parsed]
    if len(set(ids)) != len(ids):
        raise MosError("a running order with the same storyID twice")
    return RunningOrder(ro_id, text_of(element, "roSlug"), parsed, voice, lang)


def check_story_count(ro_id: str, count: int) -> None:
    """A running order holds at most MAX_STORIES stories (one line saying so)."""
    if count > MAX_STORIES:
        raise MosError(f"running order {ro_id} would hold {count:,} stories; this device takes {MAX_STORIES:,} "
                       "a running order: split it")


def body_of(element: ET.Element) -> tuple[str, ...]:
    """A ``roStorySend``'s paragraphs: each ``<p>``'s text (inline markup dropped), in order."""
    body = element.find("storyBody")
    if body is None:
        return ()
    return tuple(text for text in (all_text(p) for p in body.iter("p")) if text)
