"""The MOS gateway's own decisions, without a network or an engine: a failed render is NOT READY with its
reason and no file, delivery names never leave the delivery folder, and a restart renders again a story
whose text changed since its READY (the checks that planted bugs passed the MOS suite without)."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnistudio.mos.gateway import Gateway, MosConfig
from omnistudio.mos.renderer import StoryRender, delivery_path
from omnistudio.mos.rundown import MosObject, RunningOrder, Story


class Renders:
    """A stand-in renderer: what was submitted."""

    def __init__(self) -> None:
        self.submitted: list[tuple[str, str]] = []

    def submit(self, key: tuple[str, str]) -> None:
        self.submitted.append(key)

    def cancel(self, key: tuple[str, str]) -> None:
        self.submitted = [k for k in self.submitted if k != key]

    def pending(self) -> list[tuple[str, str]]:
        return list(self.submitted)

    def close(self) -> None:
        pass


def gateway(tmp_path: Path) -> tuple[Gateway, Renders]:
    renders = Renders()
    gate = Gateway(MosConfig("omnistudio.mos.test", "ncs.test", delivery=tmp_path / "out"), lambda _gate: renders)
    story = Story("S1", slug="Weather", paragraphs=("Rain tomorrow.",))
    gate.store.create(RunningOrder("RO1", stories=(story, Story("S2", paragraphs=("Sun on Friday.",)))))
    return gate, renders


def test_a_failed_render_is_not_ready_with_its_reason_and_no_file(tmp_path: Path) -> None:
    from omnistudio.mos.gateway import object_id

    gate, _renders = gateway(tmp_path)
    played = tmp_path / "old.wav"
    played.write_bytes(b"RIFF")
    gate._rendered(StoryRender("RO1", "S1", status="ready", fingerprint="f", path=str(played), frames=10))
    assert gate.store.objects[object_id("RO1", "S1")].status == "READY"
    gate._rendered(StoryRender("RO1", "S1", status="error", fingerprint="g", reason="the voice 'x' is unknown"))
    obj = gate.store.objects[object_id("RO1", "S1")]
    assert obj.status == "NOT READY" and obj.reason == "error: the voice 'x' is unknown"
    assert obj.path == "" and obj.frames == 0


@pytest.mark.parametrize("ro_id, story_id", [("..", "."), ("../x", "../../etc/passwd"), ("/abs", "/tmp/x"),
                                              (".", ".."), ("a/../../b", "c\\..\\d")])
def test_delivery_names_stay_in_the_delivery_folder(tmp_path: Path, ro_id: str, story_id: str) -> None:
    folder = tmp_path / "delivery"
    path = delivery_path(folder, ro_id, story_id)
    assert path.resolve().is_relative_to(folder.resolve()) and path.parent.parent == folder
    assert path.parent.name not in ("", ".", "..") and path.stem not in ("", ".", "..")


def test_a_restart_renders_again_a_story_whose_text_changed_since_its_ready(tmp_path: Path) -> None:
    from omnistudio.mos.gateway import object_id

    gate, renders = gateway(tmp_path)
    ro = gate.store.orders["RO1"]
    delivered = tmp_path / "s.wav"
    delivered.write_bytes(b"RIFF")
    for story, fingerprint in ((ro.stories[0], ro.stories[0].fingerprint(ro)), (ro.stories[1], "from an older text")):
        gate.store.objects[object_id(ro.id, story.id)] = MosObject(object_id(ro.id, story.id), ro.id, story.id,
                                                                  status="READY", path=str(delivered),
                                                                  fingerprint=fingerprint)
    gate.resume()
    assert renders.submitted == [("RO1", "S2")]  # S1 is ready from its text; S2 changed before the crash


def test_story_text_has_every_client_s_limits(tmp_path: Path) -> None:
    from omnistudio.mos.wire import MosError

    gate, _renders = gateway(tmp_path)
    before = gate.store.orders["RO1"]
    with pytest.raises(MosError, match="100,100 characters.*limit is 20,000 characters and 64 KB"):
        gate.store.story_send("RO1", Story("S9"), ("x" * 100_100,))
    with pytest.raises(MosError, match="17,000 characters \\(68,000 bytes\\)"):  # under 20,000, over 64 KB
        gate.store.story_send("RO1", Story("S9"), ("\U0001F4FB" * 17_000,))
    assert gate.store.orders["RO1"] == before  # refused: the running order is as it was
    assert gate.store.story_send("RO1", Story("S9"), ("Good evening.",)).changed == [("RO1", "S9")]


def test_a_store_that_cannot_be_written_refuses_the_change_and_keeps_memory_as_it_was(tmp_path: Path) -> None:
    """A failed write of the state file: the message is refused with a line naming the file, and the running
    orders in memory are those before it (nothing half-taken that a later save would write)."""
    import asyncio
    import xml.etree.ElementTree as ET

    from omnistudio.mos import wire

    import sqlite3

    gate, renders = gateway(tmp_path)
    gate.store.save()
    before = dict(gate.store.orders)
    gate.store.state.close()  # the file can no longer be written (as a full disk or a read-only mount would)
    gate.store.state._db = sqlite3.connect(f"file:{gate.store.path}?mode=ro", uri=True)
    body = ET.fromstring("<roCreate><roID>RO2</roID><roSlug>Late</roSlug><story><storyID>A</storyID>"
                         "<storySlug>A</storySlug></story></roCreate>")
    frame = wire.Message(kind="roCreate", body=body, mos_id="omnistudio.mos.test", ncs_id="ncs.test", message_id="7")
    reply = asyncio.run(gate.handle(frame, "upper"))
    answer = reply.decode(wire.ENCODING) if reply is not None else ""
    assert "cannot be kept in" in answer and "internal error" not in answer
    assert gate.store.orders == before and "RO2" not in gate.store.orders and not renders.submitted


def _message(n: int, inner: str = "") -> str:
    return (f"<mos><mosID>omnistudio.mos.test</mosID><ncsID>ncs.test</ncsID><messageID>{n}</messageID>"
            f"<heartbeat><time>2026-12-06T10:00:00</time>{inner}</heartbeat></mos>")


def test_the_framer_reads_mos_inside_cdata_and_comments_as_text() -> None:
    from omnistudio.mos.wire import ENCODING, Framer, Message

    framer = Framer()
    stream = (_message(1, "<![CDATA[<mos> is how a message starts]]>") + _message(2, "<!-- <mos> -->")
              + _message(3)).encode(ENCODING)
    frames = [f for k in range(0, len(stream), 7) for f in framer.feed(stream[k:k + 7])]  # split anywhere
    assert [type(f) for f in frames] == [Message] * 3 and [f.message_id for f in frames] == ["1", "2", "3"]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le", "utf-16-be"])
def test_a_message_in_another_encoding_is_read_and_answered_in_it(encoding: str) -> None:
    from omnistudio.mos.wire import ENCODING, Framer, Message

    framer = Framer()
    data = _message(4, "ñ").encode(encoding)
    frames = framer.feed(data[:3]) + framer.feed(data[3:])
    assert len(frames) == 1 and isinstance(frames[0], Message) and frames[0].message_id == "4"
    assert framer.encoding == encoding
    answer = "<mos><messageID>4</messageID></mos>"
    assert framer.encode(answer.encode(ENCODING)) == answer.encode(encoding)


def test_a_restart_tells_the_ncs_again_where_every_object_stands(tmp_path: Path) -> None:
    """Statuses a gateway had not delivered when it stopped (the NCS down) are sent when it is back: at
    start every object that is not rendered again is announced again, on both links' queues."""
    from omnistudio.mos.gateway import object_id

    gate, renders = gateway(tmp_path)
    ro = gate.store.orders["RO1"]
    delivered = tmp_path / "s1.wav"
    delivered.write_bytes(b"RIFF")
    ready = MosObject(object_id("RO1", "S1"), "RO1", "S1", status="READY", path=str(delivered),
                      fingerprint=ro.stories[0].fingerprint(ro))
    gate.store.objects[ready.obj_id] = ready
    gate.resume()
    assert renders.submitted == [("RO1", "S2")]  # S2 has no object yet: rendered, and announced by its render
    sent = [(m.tag, m.findtext("objID") or m.findtext(".//objID")) for m in gate.lower.waiting]
    assert sent == [("mosObj", ready.obj_id)] and [m.tag for m in gate.upper.waiting] == ["roElementStat"]


def test_a_change_writes_only_what_it_changed_and_the_store_is_capped(tmp_path: Path) -> None:
    import json

    from omnistudio.mos.rundown import MAX_STORIES
    from omnistudio.mos.store import MAX_RUNNING_ORDERS, Rundowns
    from omnistudio.mos.wire import MosError

    store = Rundowns(tmp_path / "state.db").load()
    for n in range(20):
        store.create(RunningOrder(f"RO{n}", stories=tuple(Story(f"S{k}") for k in range(200))))
    store.save()
    db = store.state._connection()
    before = db.total_changes
    store.story_send("RO7", Story("S3"), ("Rain tomorrow.",))
    store.save()
    assert db.total_changes - before == 1  # one row: RO7's, not the twenty running orders
    store.close()
    again = Rundowns(tmp_path / "state.db").load()
    assert again.orders["RO7"].story("S3").text == "Rain tomorrow." and len(again.orders) == 20  # type: ignore[union-attr]
    with pytest.raises(MosError, match=f"takes {MAX_STORIES:,} a running order"):
        again.create(RunningOrder("BIG", stories=tuple(Story(f"S{k}") for k in range(MAX_STORIES + 1))))
    for n in range(20, MAX_RUNNING_ORDERS):
        again.create(RunningOrder(f"RO{n}"))
    with pytest.raises(MosError, match=f"keeps {MAX_RUNNING_ORDERS} running orders"):
        again.create(RunningOrder("ONE-TOO-MANY"))
    again.create(RunningOrder("RO3", slug="replaced"))  # a running order it has may still be replaced
    again.close()
    # the JSON store of an earlier version is taken in once, and kept aside
    legacy = tmp_path / "old" / ".omnistudio-mos.json"
    legacy.parent.mkdir()
    legacy.write_text(json.dumps({"version": 1, "running_orders": [{"id": "R", "slug": "", "stories": [
        {"id": "A", "slug": "", "number": "", "items": [], "paragraphs": ["Good evening."], "voice": "", "lang": ""}],
        "voice": "", "lang": "", "air": "NOT READY"}], "objects": []}))
    taken = Rundowns(tmp_path / "old" / ".omnistudio-mos.db", legacy).load()
    assert taken.orders["R"].story("A").text == "Good evening."  # type: ignore[union-attr]
    assert (tmp_path / "old" / ".omnistudio-mos.json.before-sqlite").is_file() and not legacy.exists()
    assert (tmp_path / "old" / ".omnistudio-mos.db").read_bytes().startswith(b"SQLite format 3")
