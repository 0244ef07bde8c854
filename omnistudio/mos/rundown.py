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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from omnistudio.mos.wire import MosError, all_text, text_of

if TYPE_CHECKING:
    from omnistudio.mos.messages import ElementAction

MAX_STORIES = 5000  # a running order longer than this is refused
MAX_RUNNING_ORDERS = 100  # running orders kept at once
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
def _id(value: str, what: str) -> str:
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
    from omnistudio.script import TAG_RE, parse_tag

    match = TAG_RE.match(slug)
    if match is None:
        return "", ""
    try:
        tag = parse_tag(match.group(1), 0)
    except Exception:  # noqa: BLE001 - a slug in brackets that is not a tag is only a slug
        return "", ""
    return tag.speaker or "", tag.lang or ""


def item_of(element: ET.Element) -> Item:
    return Item(_id(text_of(element, "itemID"), "itemID"), text_of(element, "objID"), text_of(element, "mosID"),
                text_of(element, "itemSlug"))


def story_of(element: ET.Element) -> Story:
    slug = text_of(element, "storySlug")
    voice, lang = voice_of(element)
    if not voice and not lang:
        voice, lang = slug_voice(slug)
    return Story(_id(text_of(element, "storyID"), "storyID"), slug, text_of(element, "storyNum"),
                 tuple(item_of(i) for i in element.findall("item")), (), voice, lang)


def running_order_of(element: ET.Element) -> RunningOrder:
    stories = element.findall("story")
    if len(stories) > MAX_STORIES:
        raise MosError(f"a running order of {len(stories)} stories; the gateway takes {MAX_STORIES}")
    voice, lang = voice_of(element)
    parsed = tuple(story_of(s) for s in stories)
    ids = [s.id for s in parsed]
    if len(set(ids)) != len(ids):
        raise MosError("a running order with the same storyID twice")
    return RunningOrder(_id(text_of(element, "roID"), "roID"), text_of(element, "roSlug"), parsed, voice, lang)


def body_of(element: ET.Element) -> tuple[str, ...]:
    """A ``roStorySend``'s paragraphs: each ``<p>``'s text (inline markup dropped), in order."""
    body = element.find("storyBody")
    if body is None:
        return ()
    return tuple(text for text in (all_text(p) for p in body.iter("p")) if text)


def _check_story_count(ro_id: str, count: int) -> None:
    if count > MAX_STORIES:
        raise MosError(f"running order {ro_id} would hold {count:,} stories; this device takes {MAX_STORIES:,} "
                       "a running order: split it")


def check_story_size(story_id: str, text: str) -> None:
    """The limits every client has (``render``, MCP, the server): 20,000 characters and 64 KB a script."""
    from omnistudio.checks import MAX_TEXT_CHARS
    from omnistudio.script import MAX_SCRIPT_BYTES

    size = len(text.encode("utf-8", "surrogatepass"))
    if len(text) > MAX_TEXT_CHARS or size > MAX_SCRIPT_BYTES:
        raise MosError(f"story {story_id} is {len(text):,} characters ({size:,} bytes); the limit is "
                       f"{MAX_TEXT_CHARS:,} characters and {MAX_SCRIPT_BYTES // 1024} KB, as for every script: "
                       "split it into stories")


# ------------------------------------------------------------------------------------------ the store
class Rundowns:
    """Every running order the NCS has sent, by ID, and each story's object; ``path``: where they are kept
    (:class:`~omnistudio.mos.store.StateFile`: SQLite, a row each, a change writes what changed);
    ``legacy``: a JSON store of an earlier version to take in. At most ``MAX_RUNNING_ORDERS`` running orders
    of ``MAX_STORIES`` stories each: more is refused with a line saying so."""

    def __init__(self, path: Path, legacy: Path | None = None) -> None:
        from omnistudio.mos.store import StateFile

        self.path = Path(path)
        self.state = StateFile(self.path, legacy)
        self.orders: dict[str, RunningOrder] = {}
        self.objects: dict[str, MosObject] = {}

    def load(self) -> Rundowns:
        """The kept running orders (none when there is no file yet); a path that cannot hold the store, or a
        store that cannot be read, is one line (MosError) before anything is taken."""
        import os

        if self.path.exists() and not self.path.is_file():
            raise MosError(f"the state file {self.path} is {'a folder' if self.path.is_dir() else 'not a regular file'}"
                           ": give --state the path of a file")
        folder = next((p for p in self.path.absolute().parents if p.exists()), None)
        if folder is None or not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise MosError(f"the state file {self.path} cannot be written ({folder} is not a writable folder)")
        orders, objects = self.state.read()
        try:
            self.orders = {key: _ro_from(ro) for key, ro in orders.items()}
            self.objects = {key: MosObject(**obj) for key, obj in objects.items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise MosError(f"{self.path} cannot be read ({type(exc).__name__}: {exc}); move it aside "
                           "to start with no running orders") from None
        self.state.remember(self.orders, self.objects)
        return self

    def save(self) -> None:
        """Write what changed since the last save, in one transaction (MosError naming the file when it fails)."""
        self.state.write(self.orders, self.objects, _row)

    def close(self) -> None:
        self.state.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One message's edits: all of them, or (on any error, a failed save included) none."""
        orders, objects = dict(self.orders), dict(self.objects)
        try:
            yield
        except BaseException:
            self.orders, self.objects = orders, objects
            raise

    def get(self, ro_id: str) -> RunningOrder:
        ro = self.orders.get(ro_id)
        if ro is None:
            raise MosError(f"unknown running order {ro_id}")
        return ro

    # -------------------------------------------------------------------------------- operations
    def create(self, new: RunningOrder) -> Change:
        """roCreate and roReplace: the new structure; a story that stays keeps its text (roStorySend)."""
        old = self.orders.get(new.id)
        if old is None and len(self.orders) >= MAX_RUNNING_ORDERS:
            raise MosError(f"this device keeps {MAX_RUNNING_ORDERS} running orders: delete one (roDelete) first")
        _check_story_count(new.id, len(new.stories))
        kept = {s.id: s for s in old.stories} if old else {}
        before = {s.id: s.fingerprint(old) for s in old.stories} if old else {}
        stories = tuple(replace(s, paragraphs=kept[s.id].paragraphs) if s.id in kept and not s.paragraphs else s
                        for s in new.stories)
        ro = replace(new, stories=stories, air=old.air if old else new.air)
        change = Change(gone=[(ro.id, sid) for sid in kept if ro.story(sid) is None])
        change.changed = [(ro.id, s.id) for s in stories if s.text and before.get(s.id) != s.fingerprint(ro)]
        self.orders[ro.id] = ro
        return change

    def delete(self, ro_id: str) -> Change:
        ro = self.get(ro_id)
        del self.orders[ro_id]
        return Change(gone=[(ro_id, s.id) for s in ro.stories])

    def story_send(self, ro_id: str, story: Story, paragraphs: tuple[str, ...]) -> Change:
        """roStorySend: a story's text (and its metadata's voice); a story not in the order is added at its end."""
        ro = self.get(ro_id)
        if not paragraphs:
            raise MosError(f"story {story.id} has no text (no <p> in its storyBody)")
        check_story_size(story.id, "\n".join(paragraphs))
        old = ro.story(story.id)
        merged = replace(old or story, paragraphs=paragraphs, voice=story.voice or (old.voice if old else ""),
                         lang=story.lang or (old.lang if old else ""), slug=story.slug or (old.slug if old else ""))
        stories = tuple(merged if s.id == story.id else s for s in ro.stories) if old else (*ro.stories, merged)
        _check_story_count(ro_id, len(stories))
        self.orders[ro_id] = replace(ro, stories=stories)
        same = old is not None and old.text and old.fingerprint(ro) == merged.fingerprint(self.orders[ro_id])
        return Change() if same else Change(changed=[(ro_id, story.id)])

    def metadata(self, ro_id: str, slug: str, voice: str, lang: str) -> Change:
        """roMetadataReplace: the slug, and the voice its metadata names (stories that take it render again)."""
        ro = self.get(_id(ro_id, "roID"))
        new = replace(ro, slug=slug or ro.slug, voice=voice or ro.voice, lang=lang or ro.lang)
        self.orders[ro.id] = new
        return Change(changed=[(ro.id, s.id) for s in new.stories if s.text and s.fingerprint(ro) != s.fingerprint(new)])

    def ready(self, ro_id: str, air: str) -> None:
        self.orders[ro_id] = replace(self.get(ro_id), air="READY" if air.upper() == "READY" else "NOT READY")

    def element_action(self, action: ElementAction) -> Change:
        """roElementAction (:mod:`omnistudio.mos.actions`) on the running order it names."""
        from omnistudio.mos.actions import apply_action

        new, change = apply_action(self.get(action.ro_id), action)
        _check_story_count(new.id, len(new.stories))
        self.orders[new.id] = new
        return change


def _row(value: object) -> dict[str, Any]:
    """A running order or an object as the store keeps it (a dict of plain values)."""
    assert isinstance(value, (RunningOrder, MosObject))  # what Rundowns keeps
    return asdict(value)


def _ro_from(data: dict[str, Any]) -> RunningOrder:
    stories = tuple(Story(**{**s, "items": tuple(Item(**i) for i in s["items"]), "paragraphs": tuple(s["paragraphs"])})
                    for s in data["stories"])
    return RunningOrder(**{**data, "stories": stories})
