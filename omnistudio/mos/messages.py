"""The MOS messages this device takes, as types: :func:`read` turns a parsed :class:`~omnistudio.mos.wire.Message`
into one frozen value per kind (the running orders, stories and items in it as domain values), so the gateway
``match``es on what a message is and nothing past here holds XML.

Profile 0: ``heartbeat``, ``reqMachInfo``; profile 1: ``mosReqObj``, ``mosReqAll``; profile 2: ``roCreate``,
``roReplace``, ``roDelete``, ``roStorySend`` (profile 4's story text), ``roElementAction``,
``roMetadataReplace``, ``roReadyToAir``, ``roReq``, ``roReqAll``, ``roElementStat``; an ``roAck`` or ``mosAck``
that came on the wrong socket is :class:`StrayAnswer`.
"""

from __future__ import annotations

from dataclasses import dataclass

from omnistudio.mos.rundown import (Item, RunningOrder, Story, body_of, item_of, running_order_of, story_of,
                                    voice_of)
from omnistudio.mos.wire import Message, MosError, text_of

OPERATIONS = ("INSERT", "REPLACE", "MOVE", "DELETE", "SWAP")


@dataclass(frozen=True)
class Heartbeat:
    pass


@dataclass(frozen=True)
class MachineInfoRequest:
    pass


@dataclass(frozen=True)
class ObjectRequest:
    obj_id: str


@dataclass(frozen=True)
class AllObjectsRequest:
    pass


@dataclass(frozen=True)
class StrayAnswer:
    """An ``roAck``/``mosAck`` on the socket the NCS sends its requests to: nothing to answer."""


@dataclass(frozen=True)
class CreateOrder:
    """``roCreate`` and ``roReplace``: a running order's structure (a story that stays keeps its text)."""

    order: RunningOrder


@dataclass(frozen=True)
class DeleteOrder:
    ro_id: str


@dataclass(frozen=True)
class SendStory:
    """``roStorySend``: a story's text (its paragraphs) and what its metadata says."""

    ro_id: str
    story: Story
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class ElementAction:
    """``roElementAction``: an operation on the stories of a running order, or on the items of one story
    (``on_items``), at a target, with the stories or items it brings or the IDs it names."""

    ro_id: str
    operation: str  # one of OPERATIONS
    story_id: str  # the target story ("": none)
    item_id: str  # the target item ("": none)
    on_items: bool
    stories: tuple[Story, ...] = ()
    items: tuple[Item, ...] = ()
    ids: tuple[str, ...] = ()  # the storyIDs or itemIDs to move, delete or swap


@dataclass(frozen=True)
class ReplaceMetadata:
    ro_id: str
    slug: str
    voice: str
    lang: str


@dataclass(frozen=True)
class ReadyToAir:
    ro_id: str
    air: str


@dataclass(frozen=True)
class OrderRequest:
    ro_id: str


@dataclass(frozen=True)
class AllOrdersRequest:
    pass


@dataclass(frozen=True)
class ElementStatus:
    """``roElementStat`` from the NCS: acknowledged, nothing to change."""

    ro_id: str


MosMessage = (Heartbeat | MachineInfoRequest | ObjectRequest | AllObjectsRequest | StrayAnswer | CreateOrder
              | DeleteOrder | SendStory | ElementAction | ReplaceMetadata | ReadyToAir | OrderRequest | AllOrdersRequest
              | ElementStatus)


def read(message: Message) -> MosMessage:
    """The message as its type (MosError, answered as an error status, for a kind this device does not take or
    a body it cannot use)."""
    body, ro_id = message.body, text_of(message.body, "roID")
    match message.kind:
        case "heartbeat":
            return Heartbeat()
        case "reqMachInfo":
            return MachineInfoRequest()
        case "mosReqObj":
            return ObjectRequest(text_of(body, "objID"))
        case "mosReqAll":
            return AllObjectsRequest()
        case "roAck" | "mosAck":
            return StrayAnswer()
        case "roCreate" | "roReplace":
            return CreateOrder(running_order_of(body))
        case "roDelete":
            return DeleteOrder(ro_id)
        case "roStorySend":
            return SendStory(ro_id, story_of(body), body_of(body))
        case "roElementAction":
            return _element_action(message)
        case "roMetadataReplace":
            voice, lang = voice_of(body)
            return ReplaceMetadata(ro_id, text_of(body, "roSlug"), voice, lang)
        case "roReadyToAir":
            return ReadyToAir(ro_id, text_of(body, "roAir"))
        case "roReq":
            return OrderRequest(ro_id)
        case "roReqAll":
            return AllOrdersRequest()
        case "roElementStat":
            return ElementStatus(ro_id)
    raise MosError(f"unsupported message '{message.kind}' (this device speaks MOS profiles 0, 1, 2 and 4)")


def _element_action(message: Message) -> ElementAction:
    body = message.body
    operation = (body.get("operation") or "").upper()
    if operation not in OPERATIONS:
        raise MosError(f"roElementAction operation '{body.get('operation')}': use one of {', '.join(OPERATIONS)}")
    target, source = body.find("element_target"), body.find("element_source")
    if source is None:
        raise MosError("roElementAction without element_source")
    story_id = text_of(target, "storyID") if target is not None else ""
    item_id = text_of(target, "itemID") if target is not None else ""
    on_items = item_id != "" or source.find("item") is not None or source.find("itemID") is not None
    tag = "itemID" if on_items else "storyID"
    return ElementAction(text_of(body, "roID"), operation, story_id, item_id, on_items,
                         () if on_items else tuple(story_of(s) for s in source.findall("story")),
                         tuple(item_of(i) for i in source.findall("item")) if on_items else (),
                         tuple((i.text or "").strip() for i in source.findall(tag)))
