"""The MOS gateway's running orders and objects: :class:`Rundowns` holds them and makes every edit (one
transaction a message), :class:`StateFile` keeps them in an SQLite file (``--state``), a row per running
order and a row per object, so a change writes only what changed, in one transaction (a 5,000-story running
order's edit does not rewrite twenty others: the write does not grow with the store). A store of an earlier
version (one JSON document) is read once and converted, atomically.

Use (by :class:`Rundowns`)::

    state = StateFile(path)
    orders, objects = state.read()            # id -> JSON-ready dict, each
    state.write(orders_now, objects_now, as_row)   # what differs from the last read or write, in one commit
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, cast

from omnistudio.checks import MAX_TEXT_CHARS
from omnistudio.mos.actions import apply_action
from omnistudio.mos.messages import ElementAction
from omnistudio.mos.rundown import Change, Item, MosObject, RunningOrder, Story, check_id, check_story_count
from omnistudio.mos.wire import MosError
from omnistudio.script import MAX_SCRIPT_BYTES

MAX_RUNNING_ORDERS = 100  # running orders kept at once

SQLITE_MAGIC = b"SQLite format 3\x00"
TABLES = ("orders", "objects")
SCHEMA = ";".join(f"CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, data TEXT NOT NULL)" for table in TABLES)


class StateFile:
    """The store's file; ``legacy``: a JSON store of an earlier version to take in when the file is new."""

    def __init__(self, path: Path, legacy: Path | None = None) -> None:
        self.path, self.legacy = Path(path), legacy
        self._db: sqlite3.Connection | None = None
        self._saved: dict[str, dict[str, object]] = {table: {} for table in TABLES}  # id -> the value written

    def read(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """The running orders and objects kept (empty when there is no file yet), as dicts."""
        if not self.path.is_file():
            if self.legacy is not None and self.legacy.is_file():
                return self._convert(self.legacy)
            return {}, {}
        with open(self.path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
        if head != SQLITE_MAGIC:
            return self._convert(self.path)
        try:
            rows = {table: {key: json.loads(data) for key, data in self._connection().execute(
                f"SELECT id, data FROM {table}")} for table in TABLES}  # noqa: S608 - the table names are ours
        except (sqlite3.Error, ValueError) as exc:
            raise MosError(f"{self.path} cannot be read ({type(exc).__name__}: {exc}); move it aside to start "
                           "with no running orders") from None
        return rows["orders"], rows["objects"]

    def remember(self, orders: Mapping[str, object], objects: Mapping[str, object]) -> None:
        """The values as they stand in the file now (what ``write`` compares with)."""
        self._saved = {"orders": dict(orders), "objects": dict(objects)}

    def write(self, orders: Mapping[str, object], objects: Mapping[str, object],
              as_row: Callable[[object], dict[str, Any]]) -> None:
        """Write the values that are not those last written (by identity: the values are frozen) and delete the
        ones gone, in one transaction; a failure leaves the file as it was (MosError naming it)."""
        now = {"orders": orders, "objects": objects}
        try:
            db = self._connection()
            with db:  # one transaction: commit, or roll back on any error
                for table in TABLES:
                    saved, current = self._saved[table], now[table]
                    changed = [(key, json.dumps(as_row(value), ensure_ascii=False))
                               for key, value in current.items() if saved.get(key) is not value]
                    gone = [(key,) for key in saved if key not in current]
                    db.executemany(f"INSERT OR REPLACE INTO {table} (id, data) VALUES (?, ?)", changed)  # noqa: S608
                    db.executemany(f"DELETE FROM {table} WHERE id = ?", gone)  # noqa: S608
        except (sqlite3.Error, OSError) as exc:
            raise MosError(f"the running orders cannot be kept in {self.path} ({exc}): the change is not taken") \
                from None
        self.remember(orders, objects)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path)
                self._db.execute("PRAGMA synchronous = FULL")
                self._db.executescript(SCHEMA)
            except (sqlite3.Error, OSError) as exc:
                self._db = None
                raise MosError(f"the state file {self.path} cannot be opened ({exc})") from None
        return self._db

    def _convert(self, source: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """A JSON store of an earlier version: read, written as SQLite (into a temporary file renamed to
        ``self.path``), the JSON kept beside itself as ``NAME.before-sqlite``."""
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
            orders = {str(ro["id"]): ro for ro in data["running_orders"]}
            objects = {str(o["obj_id"]): o for o in data.get("objects", [])}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MosError(f"{source} cannot be read ({type(exc).__name__}: {exc}); move it aside to start "
                           "with no running orders") from None
        target = self.path
        self.path = self.path.with_name(f".{self.path.name}.converting")
        self.path.unlink(missing_ok=True)
        try:
            self.write(orders, objects, lambda row: cast(dict[str, Any], row))  # already rows
            self.close()
            os.replace(source, source.with_name(source.name + ".before-sqlite"))
            os.replace(self.path, target)
        finally:
            self.close()
            self.path.unlink(missing_ok=True)
            self.path = target
        self._saved = {table: {} for table in TABLES}  # the caller remembers the values it builds
        return orders, objects


def check_story_size(story_id: str, text: str) -> None:
    """The limits every client has (``render``, MCP, the server): 20,000 characters and 64 KB a script."""

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
        self.path = Path(path)
        self.state = StateFile(self.path, legacy)
        self.orders: dict[str, RunningOrder] = {}
        self.objects: dict[str, MosObject] = {}

    def load(self) -> Rundowns:
        """The kept running orders (none when there is no file yet); a path that cannot hold the store, or a
        store that cannot be read, is one line (MosError) before anything is taken."""

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
        check_story_count(new.id, len(new.stories))
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
        check_story_count(ro_id, len(stories))
        self.orders[ro_id] = replace(ro, stories=stories)
        same = old is not None and old.text and old.fingerprint(ro) == merged.fingerprint(self.orders[ro_id])
        return Change() if same else Change(changed=[(ro_id, story.id)])

    def metadata(self, ro_id: str, slug: str, voice: str, lang: str) -> Change:
        """roMetadataReplace: the slug, and the voice its metadata names (stories that take it render again)."""
        ro = self.get(check_id(ro_id, "roID"))
        new = replace(ro, slug=slug or ro.slug, voice=voice or ro.voice, lang=lang or ro.lang)
        self.orders[ro.id] = new
        return Change(changed=[(ro.id, s.id) for s in new.stories if s.text and s.fingerprint(ro) != s.fingerprint(new)])

    def ready(self, ro_id: str, air: str) -> None:
        self.orders[ro_id] = replace(self.get(ro_id), air="READY" if air.upper() == "READY" else "NOT READY")

    def element_action(self, action: ElementAction) -> Change:
        """roElementAction (:mod:`omnistudio.mos.actions`) on the running order it names."""
        new, change = apply_action(self.get(action.ro_id), action)
        check_story_count(new.id, len(new.stories))
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
