"""Where the MOS gateway keeps its running orders and objects: an SQLite file (``--state``), a row per running
order and a row per object, so a change writes only what changed, in one transaction (a 5,000-story running
order's edit does not rewrite twenty others: the write does not grow with the store). A store of an earlier
version (one JSON document) is read once and converted, atomically.

Use (by :class:`~omnistudio.mos.rundown.Rundowns`)::

    state = StateFile(path)
    orders, objects = state.read()            # id -> JSON-ready dict, each
    state.write(orders_now, objects_now, as_row)   # what differs from the last read or write, in one commit
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from omnistudio.mos.wire import MosError

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
