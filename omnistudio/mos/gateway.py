"""The MOS device: every message the NCS sends answered (profiles 0, 1, 2 and 4), running orders kept, each
story with text rendered, and each story's audio announced as a MOS object.

Messages are answered on the event loop's thread, at once: a running order of 1,000 stories is stored and
acknowledged before any of it renders; renders run on :class:`~omnistudio.mos.renderer.StoryRenderer`'s
thread, whose reports come back here. A message that cannot be taken (malformed XML, an entity bomb, one
over the size limit, another device's MOS ID, an unknown message, a story with no text) gets an error status
(``mosAck`` NACK on the lower port, ``roAck`` with the reason as ``roStatus`` on the upper) and one log
line; the gateway keeps serving.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from omnistudio import __version__
from omnistudio.mos import messages, wire
from omnistudio.mos.network import NcsLink
from omnistudio.mos.renderer import Key, StoryRender
from omnistudio.mos.rundown import Change, MosObject, RunningOrder, Story
from omnistudio.mos.store import Rundowns
from omnistudio.mos.wire import Broken, Frame, Message, MosError, TooBig, element, leaf, leaves, text_of

log = logging.getLogger("omnistudio.mos")
PROFILES = {"0": "YES", "1": "YES", "2": "YES", "3": "NO", "4": "YES", "5": "NO", "6": "NO", "7": "NO"}
MAX_OBJ_ID = 128


@dataclass(frozen=True)
class MosConfig:
    """Who the gateway is, where the NCS is, where it listens and delivers (checked by ``omnistudio mos``)."""

    mos_id: str
    ncs_id: str
    ncs_host: str = "127.0.0.1"
    ncs_lower: int = 10540
    ncs_upper: int = 10541
    host: str = "127.0.0.1"
    lower: int = 10540
    upper: int = 10541
    query: int = 10542
    delivery: Path = Path("mos-delivery")
    state: Path | None = None  # the store (default: DELIVERY/.omnistudio-mos.db)
    heartbeat_s: float = 10.0
    suffix: str = ".wav"

    @property
    def store(self) -> Path:
        return self.state or self.delivery / ".omnistudio-mos.db"

    @property
    def legacy_store(self) -> Path | None:
        """Where an earlier version kept the store by default (JSON): taken in once."""
        return None if self.state is not None else self.delivery / ".omnistudio-mos.json"


def object_id(ro_id: str, story_id: str) -> str:
    """A story's MOS object ID: ``RO:STORY`` (a hash of both where that passes MOS's 128 characters)."""

    joined = f"{ro_id}:{story_id}"
    return joined if len(joined) <= MAX_OBJ_ID else "omni-" + hashlib.sha256(joined.encode()).hexdigest()[:40]


class Renderer(Protocol):
    """What the gateway asks of its render queue (:class:`~omnistudio.mos.renderer.StoryRenderer`)."""

    def submit(self, key: Key) -> None: ...

    def cancel(self, key: Key) -> None: ...

    def pending(self) -> list[Key]: ...

    def close(self) -> None: ...


class Gateway:
    """The device's state and behaviour; ``handle`` answers one message, ``rendered`` takes a render's report."""

    def __init__(self, config: MosConfig, renderer: Callable[[Gateway], Renderer]) -> None:
        """``renderer(gateway)`` makes the gateway's render queue (:class:`StoryRenderer` on the gateway's
        ``lookup`` and ``rendered``: ``omnistudio mos``; a stand-in in tests)."""
        self.config = config
        self.store = Rundowns(config.store, config.legacy_store).load()
        self.lower = NcsLink(config.ncs_host, config.ncs_lower, "lower", config.mos_id, config.ncs_id, config.heartbeat_s)
        self.upper = NcsLink(config.ncs_host, config.ncs_upper, "upper", config.mos_id, config.ncs_id, config.heartbeat_s)
        self.renderer = renderer(self)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.air = "NOT READY"

    def lookup(self, key: Key) -> tuple[RunningOrder, Story] | None:
        """A story as it stands now (called from the renderer's thread: a dict read, no mutation)."""
        ro = self.store.orders.get(key[0])
        story = ro.story(key[1]) if ro is not None else None
        return (ro, story) if ro is not None and story is not None else None

    def resume(self) -> None:
        """After a restart: render every story with text whose object is not ready from that text, and tell the
        NCS again where every other object stands (queued until it answers: a status the NCS did not get before
        the restart, the NCS down meanwhile, is not lost)."""
        for ro in self.store.orders.values():
            for story in ro.stories:
                obj = self.store.objects.get(object_id(ro.id, story.id))
                done = obj is not None and obj.status == "READY" and obj.fingerprint == story.fingerprint(ro) \
                    and Path(obj.path).is_file()
                if story.text and not done:
                    self.renderer.submit((ro.id, story.id))
                elif obj is not None and obj.status != "DELETED":
                    self.lower.send(self.mos_obj(obj))
                    self.upper.send(self.element_stat(ro, story, obj))

    # ------------------------------------------------------------------------------------- answering
    async def handle(self, frame: Frame, port: str) -> bytes | None:
        cfg = self.config
        if isinstance(frame, TooBig):
            return self._refuse(frame.message_id, port, "", f"a message of {frame.size:,} bytes is over the "
                                f"{wire.MAX_MESSAGE_BYTES // (1024 * 1024)} MB limit")
        if isinstance(frame, Broken):
            return self._refuse(frame.message_id, port, "", frame.why)
        if cfg.mos_id not in (frame.mos_id, frame.ncs_id):
            return self._refuse(frame.message_id, port, "", f"wrong MOS ID: the message is for "
                                f"'{frame.mos_id or frame.ncs_id}', this device is '{cfg.mos_id}'")
        try:
            with self.store.transaction():  # a refused message leaves the running orders as they were
                body = self._answer(frame, port)
        except MosError as exc:
            return self._refuse(frame.message_id, port, text_of(frame.body, "roID"), str(exc), frame)
        except Exception as exc:  # noqa: BLE001 - one message's fault, never the gateway's end
            log.exception("%s failed", frame.kind)
            return self._refuse(frame.message_id, port, text_of(frame.body, "roID"),
                                f"internal error: {type(exc).__name__}: {exc}", frame)
        return None if body is None else self._reply(frame, body)

    def _reply(self, frame: Message, body: ET.Element) -> bytes:
        """An answer with the request's envelope echoed (mosID and ncsID as the request had them)."""
        return wire.envelope(frame.mos_id or self.config.mos_id, frame.ncs_id or self.config.ncs_id,
                             frame.message_id, body)

    def _refuse(self, message_id: str, port: str, ro_id: str, why: str, frame: Message | None = None) -> bytes:
        log.warning("refused on the %s port: %s", port, why)
        if port == "upper":
            body = element("roAck", leaf("roID", ro_id), leaf("roStatus", why))
        else:
            body = element("mosAck", leaf("objID", ""), leaf("objRev", 0), leaf("status", "NACK"),
                           leaf("statusDescription", why))
        if frame is not None:
            return self._reply(frame, body)
        return wire.envelope(self.config.mos_id, self.config.ncs_id, message_id or "0", body)

    def _answer(self, frame: Message, port: str) -> ET.Element | None:
        store = self.store
        match messages.read(frame):
            case messages.Heartbeat():
                return element("heartbeat", leaf("time", wire.mos_time()))
            case messages.MachineInfoRequest():
                return self.machine_info()
            case messages.ObjectRequest(obj_id):
                return self.mos_obj(self.find_object(obj_id))
            case messages.AllObjectsRequest():
                self.lower.send(element("mosListAll", *(self.mos_obj(o) for o in store.objects.values())))
                return element("mosAck", leaf("objID", ""), leaf("objRev", 0), leaf("status", "ACK"),
                               leaf("statusDescription", ""))
            case messages.StrayAnswer():
                return None  # an answer that came on the wrong socket: nothing to say to it
            case messages.CreateOrder(order):
                self._apply(store.create(order))
                return self._ok(order.id)
            case messages.DeleteOrder(ro_id):
                self._apply(store.delete(ro_id))
                return self._ok(ro_id)
            case messages.SendStory(ro_id, story, paragraphs):
                self._apply(store.story_send(ro_id, story, paragraphs))
                return self._ok(ro_id)
            case messages.ElementAction() as action:
                self._apply(store.element_action(action))
                return self._ok(action.ro_id)
            case messages.ReplaceMetadata(ro_id, slug, voice, lang):
                self._apply(store.metadata(ro_id, slug, voice, lang))
                return self._ok(ro_id)
            case messages.ReadyToAir(ro_id, air):
                store.ready(ro_id, air)
                store.save()
                return self._ok(ro_id)
            case messages.OrderRequest(ro_id):
                return self.ro_list(store.get(ro_id))
            case messages.AllOrdersRequest():
                return element("roListAll", *(element("ro", leaf("roID", ro.id), leaf("roSlug", ro.slug))
                                              for ro in store.orders.values()))
            case messages.ElementStatus(ro_id):
                return self._ok(ro_id)

    def find_object(self, obj_id: str) -> MosObject:
        """An object by its ID, or by the objID of an item the NCS placed for it (with this device's MOS ID)."""
        obj = self.store.objects.get(obj_id)
        if obj is not None:
            return obj
        for ro in self.store.orders.values():
            for story in ro.stories:
                if any(i.obj_id == obj_id and i.mos_id == self.config.mos_id for i in story.items):
                    found = self.store.objects.get(object_id(ro.id, story.id))
                    if found is not None:
                        return found
        raise MosError(f"unknown object {obj_id}")

    @staticmethod
    def _ok(ro_id: str) -> ET.Element:
        return element("roAck", leaf("roID", ro_id), leaf("roStatus", "OK"))

    def _apply(self, change: Change) -> None:
        """After a change to the running orders: keep the store (a failed write refuses the message, with
        nothing sent or queued), then stop what is gone, tell the NCS, queue what changed."""
        deleted = []
        for key in change.gone:
            obj = self.store.objects.get(object_id(*key))
            if obj is not None and obj.status != "DELETED":
                deleted.append(replace(obj, status="DELETED", reason="the story left the running order",
                                       changed=wire.mos_time(), revision=obj.revision + 1))
                self.store.objects[obj.obj_id] = deleted[-1]
        self.store.save()
        for key in change.gone:
            self.renderer.cancel(key)
        for obj in deleted:
            self._publish(obj)
        for key in change.changed:
            self.renderer.submit(key)

    # ------------------------------------------------------------------------------------- renders
    def rendered(self, report: StoryRender) -> None:
        """A render's report (from the renderer's thread): handed to the event loop."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._rendered, report)
        else:
            self._rendered(report)

    def _rendered(self, report: StoryRender) -> None:
        key = (report.ro_id, report.story_id)
        found = self.lookup(key)
        if found is None or report.status == "cancelled":
            return  # deleted meanwhile (its object says so already), or queued again
        ro, story = found
        obj_id = object_id(*key)
        now = wire.mos_time()
        old = self.store.objects.get(obj_id) or MosObject(obj_id, ro.id, story.id, created=now)
        obj = replace(old, slug=story.slug or story.id, changed=now, revision=old.revision + 1,
                      fingerprint=report.fingerprint)
        if report.status == "ready":
            obj = replace(obj, status="READY", path=report.path, frames=report.frames,
                          sample_rate=report.sample_rate, reason="")
        else:
            obj = replace(obj, status="NOT READY", reason="rendering" if report.status == "rendering"
                          else f"error: {report.reason}")
            if report.status == "error":  # no file to play: not the one an earlier text left
                obj = replace(obj, path="", frames=0)
        self._publish(obj)
        self.store.save()

    def _publish(self, obj: MosObject) -> None:
        """Keep an object and tell the NCS: its ``mosObj`` (lower port) and its status on the running order."""
        self.store.objects[obj.obj_id] = obj
        self.lower.send(self.mos_obj(obj))
        found = self.lookup((obj.ro_id, obj.story_id))
        if found is not None and obj.status != "DELETED":
            self.upper.send(self.element_stat(found[0], found[1], obj))

    # ------------------------------------------------------------------------------------- messages
    def machine_info(self) -> ET.Element:
        profiles = element("supportedProfiles", *(element("mosProfile", text=yes, number=n) for n, yes in PROFILES.items()),
                           deviceType="MOS")
        return element("listMachInfo", *leaves((("manufacturer", "OmniStudio"), ("model", "omnistudio mos"),
                                                ("hwRev", ""), ("swRev", __version__), ("DOM", ""), ("SN", ""),
                                                ("ID", self.config.mos_id), ("time", wire.mos_time()),
                                                ("mosRev", wire.MOS_REV))), profiles)

    def mos_obj(self, obj: MosObject) -> ET.Element:
        paths = element("objPaths", *([element("objPath", text=obj.path, techDescription=_tech(obj.path))]
                                      if obj.status == "READY" and obj.path else []))
        return element("mosObj", *leaves((("objID", obj.obj_id), ("objSlug", obj.slug or obj.obj_id),
                                          ("objType", "AUDIO"), ("objTB", obj.sample_rate), ("objRev", obj.revision),
                                          ("objDur", obj.frames), ("status", obj.status),
                                          ("objAir", "READY" if obj.status == "READY" else "NOT READY"))), paths,
                       *leaves((("createdBy", self.config.mos_id), ("created", obj.created or wire.mos_time()),
                                ("changedBy", self.config.mos_id), ("changed", obj.changed or wire.mos_time()),
                                ("description", obj.reason or f"story {obj.story_id} of {obj.ro_id}"))))

    def element_stat(self, ro: RunningOrder, story: Story, obj: MosObject) -> ET.Element:
        """The object's status on the running order: on each of the story's items that carry it (by this
        device's MOS ID), else on the story."""
        ours = [i for i in story.items if i.mos_id == self.config.mos_id]
        status = obj.status if obj.status in ("READY", "NOT READY") else "NOT READY"
        if ours:
            item = ours[0]
            return element("roElementStat", *leaves((("roID", ro.id), ("storyID", story.id), ("itemID", item.id),
                                                     ("objID", item.obj_id or obj.obj_id), ("status", status),
                                                     ("time", wire.mos_time()))), element="ITEM")
        return element("roElementStat", *leaves((("roID", ro.id), ("storyID", story.id), ("status", status),
                                                 ("time", wire.mos_time()))), element="STORY")

    def ro_list(self, ro: RunningOrder) -> ET.Element:
        def item(i: Any) -> ET.Element:
            return element("item", *leaves((("itemID", i.id), ("objID", i.obj_id), ("mosID", i.mos_id),
                                            ("itemSlug", i.slug or None))))

        stories = [element("story", *leaves((("storyID", s.id), ("storySlug", s.slug), ("storyNum", s.number or None))),
                           *(item(i) for i in s.items)) for s in ro.stories]
        return element("roList", leaf("roID", ro.id), leaf("roSlug", ro.slug), *stories)


def _tech(path: str) -> str:
    suffix = Path(path).suffix.lower()
    return {".wav": "Broadcast WAV, 24 kHz mono, 32-bit float", ".flac": "FLAC, 24 kHz mono",
            ".mp3": "MP3, 24 kHz mono", ".m4a": "AAC, 24 kHz mono"}.get(suffix, "audio")
