"""``roElementAction`` (MOS 2.8.5, profile 2): INSERT, REPLACE, MOVE, DELETE and SWAP of stories in a running
order, or of items in a story, applied to a copy of the running order.

The action arrives typed (:class:`~omnistudio.mos.messages.ElementAction`: its target story and item, the
stories or items to insert or put in place, or the IDs to move, delete or swap). A story's text stays
with it whatever moves; a story that is replaced keeps its text unless the new one brings its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from omnistudio.mos.rundown import Change, Item, RunningOrder, Story
from omnistudio.mos.wire import MosError

if TYPE_CHECKING:
    from omnistudio.mos.messages import ElementAction

Entry = TypeVar("Entry", Story, Item)


def apply_action(ro: RunningOrder, action: ElementAction) -> tuple[RunningOrder, Change]:
    """``action`` on a copy of ``ro``: the running order after it, and the stories to render again and those gone."""
    operation, story_id, item_id = action.operation, action.story_id, action.item_id
    if action.on_items:
        if not story_id:
            raise MosError("an item action needs element_target/storyID")
        story = ro.story(story_id)
        if story is None:
            raise MosError(f"story {story_id} is not in running order {ro.id}")
        items = _apply(list(story.items), operation, item_id, list(action.items), list(action.ids), "item",
                       lambda i: i.id)
        new_story = replace(story, items=tuple(items))
        return replace(ro, stories=tuple(new_story if s.id == story_id else s for s in ro.stories)), Change()
    kept = {s.id: s for s in ro.stories}
    incoming = [replace(s, paragraphs=kept[s.id].paragraphs) if s.id in kept and not s.paragraphs else s
                for s in action.stories]
    stories = _apply(list(ro.stories), operation, story_id, incoming, list(action.ids), "story", lambda s: s.id)
    new = replace(ro, stories=tuple(stories))
    ids = {s.id for s in stories}
    if len(ids) != len(stories):
        raise MosError("the action would put the same storyID twice in the running order")
    change = Change(gone=[(ro.id, sid) for sid in kept if sid not in ids])
    before = {s.id: s.fingerprint(ro) for s in ro.stories}
    change.changed = [(ro.id, s.id) for s in stories if s.text and before.get(s.id) != s.fingerprint(new)]
    return new, change


def _apply(entries: list[Entry], operation: str, target: str, incoming: list[Entry], ids: list[str], what: str,
           key: Callable[[Entry], str]) -> list[Entry]:
    """One operation on a list of stories or items (``key``: an entry's ID)."""
    position = {key(e): k for k, e in enumerate(entries)}

    def at(entry_id: str) -> int:
        if entry_id not in position:
            raise MosError(f"{what} {entry_id} is not there")
        return position[entry_id]

    if operation == "INSERT":  # before the target (at the end without one)
        if not incoming:
            raise MosError(f"INSERT without a {what}")
        where = at(target) if target else len(entries)
        return entries[:where] + incoming + entries[where:]
    if operation == "REPLACE":
        if not target or not incoming:
            raise MosError(f"REPLACE needs a target {what} and the {what}s that replace it")
        where = at(target)
        return entries[:where] + incoming + entries[where + 1:]
    if operation == "DELETE":
        gone = {at(i) for i in ids} if ids else set()
        if not gone:
            raise MosError(f"DELETE without a {what}ID")
        return [e for k, e in enumerate(entries) if k not in gone]
    if operation == "MOVE":  # the sources, in order, before the target (at the end without one)
        moving = [entries[at(i)] for i in ids]
        if not moving:
            raise MosError(f"MOVE without a {what}ID")
        rest = [e for e in entries if key(e) not in set(ids)]
        if target and target in set(ids):
            raise MosError(f"MOVE of {what} {target} before itself")
        where = next((k for k, e in enumerate(rest) if key(e) == target), len(rest)) if target else len(rest)
        if target and where == len(rest):
            at(target)
        return rest[:where] + moving + rest[where:]
    if len(ids) != 2:  # SWAP
        raise MosError(f"SWAP needs two {what}IDs, got {len(ids)}")
    a, b = at(ids[0]), at(ids[1])
    swapped = list(entries)
    swapped[a], swapped[b] = entries[b], entries[a]
    return swapped


__all__ = ["Item", "Story", "apply_action"]
