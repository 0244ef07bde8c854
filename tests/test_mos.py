"""`omnistudio mos` driven by a real NCS library: Sofie's mos-connection (Node, strict mode) sends running
orders and stories; the gateway answers, renders each story, delivers its file and announces it as a MOS
object. Bad input (malformed XML, an entity bomb, 10 MB, another device's ID, an unknown message, a story
with no text) gets an error status while the gateway keeps serving; the NCS and the gateway restart with
nothing lost."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import soundfile as sf

from support.mos import DEVICE_ID, Gateway, Ncs, free_ports, message, node_ready, raw_exchange

FIVE = [  # (story, slug, metadata, paragraphs): English and Spanish, by metadata and by the slug convention
    ("S-open", "Opening", None, ["Good evening. Here is the news."]),
    ("S-vote", "[valentina:es] Elecciones", None, ["Buenas noches.", "Hoy votaron tres millones de personas."]),
    ("S-rain", "Weather", {"voice": "storm", "language": "en"}, ["Rain tomorrow in the north."]),
    ("S-gol", "Deportes", {"voice": "valentina", "language": "es"}, ["Empate en la final."]),
    ("S-close", "Close", None, ["That is all for tonight."]),
]


@pytest.fixture(scope="module")
def mos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    node_ready()
    delivery = tmp_path_factory.mktemp("mos") / "delivery"
    ncs_ports = free_ports(3)
    gateway = Gateway(delivery, ncs_ports)
    ncs = Ncs(gateway.ports, ncs_ports)
    try:
        ncs.call("start")
        yield {"gateway": gateway, "ncs": ncs, "delivery": delivery, "ncs_ports": ncs_ports}
    finally:
        ncs.close()
        gateway.stop()


def ready(ncs: Ncs, obj_id: str, after: int = 0) -> dict[str, Any]:
    """The first READY object ``obj_id`` with a revision over ``after``."""
    return ncs.wait_for(f"{obj_id} READY", lambda _e: next((o for o in ncs.objects(obj_id)
                                                             if o["status"] == "READY" and o["revision"] > after), None))


@pytest.fixture(scope="module")
def five(mos: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Running order RO-five: five stories sent (structure, then each one's text) and their objects READY."""
    ncs, ro = mos["ncs"], "RO-five"
    stories = [{"id": sid, "slug": slug, "metadata": meta, "items": [{"id": f"I-{sid}", "obj": f"clip-{sid}"}]}
               for sid, slug, meta, _p in FIVE]
    assert ncs.call("createRO", ro={"id": ro, "slug": "Evening news", "stories": stories})["status"] == "OK"
    for sid, slug, meta, paragraphs in FIVE:
        story = {"id": sid, "slug": slug, "metadata": meta, "paragraphs": paragraphs}
        assert ncs.call("storySend", ro=ro, story=story)["status"] == "OK"
    return {sid: ready(ncs, f"{ro}:{sid}") for sid, *_ in FIVE}


def test_machine_info_and_heartbeats_both_ways(mos: dict[str, Any]) -> None:
    ncs = mos["ncs"]
    info = ncs.call("machineInfo")
    assert info["id"] == DEVICE_ID and info["model"] == "omnistudio mos" and info["mosRev"] == "2.8.5"
    profiles = info["profiles"]
    assert profiles["deviceType"] == "MOS" and all(profiles[f"profile{n}"] for n in (0, 1, 2, 4))
    assert not profiles["profile3"]
    assert ncs.call("status")["PrimaryConnected"]  # the NCS's heartbeats are answered on both ports
    ncs.wait_for("the device's heartbeats", lambda events: sum(e.get("event") == "heartbeat" for e in events) >= 2)


def test_five_stories_arrive_ready_with_their_durations_and_playable_files(mos: dict[str, Any],
                                                                          five: dict[str, dict[str, Any]]) -> None:
    ncs, delivery = mos["ncs"], mos["delivery"]
    for sid, _slug, _meta, _p in FIVE:
        obj = five[sid]
        path = Path(obj["paths"][0]["target"])
        assert path.parent == (delivery / "RO-five").resolve() and path.name == f"{sid}.wav"
        info = sf.info(str(path))
        assert obj["timeBase"] == info.samplerate == 24_000 and obj["duration"] == info.frames > 0
        data, _rate = sf.read(str(path), dtype="float32")
        assert data.size == info.frames and float(abs(data).max()) > 0
        sidecar = json.loads(path.with_name(path.name + ".json").read_text())
        assert abs(sidecar["loudness"]["integrated_lufs"] + 23) < 0.5  # the gateway's profile (EBU R128)
        assert obj["type"] == "AUDIO" and obj["air"] == "READY"
    langs = {sid: json.loads((delivery / "RO-five" / f"{sid}.wav.json").read_text())["take"]["lang"]
             for sid, *_ in FIVE}
    assert langs == {"S-open": "en", "S-vote": "es", "S-rain": "en", "S-gol": "es", "S-close": "en"}
    voices = {sid: json.loads((delivery / "RO-five" / f"{sid}.wav.json").read_text())["take"]["voice"]
              for sid, *_ in FIVE}
    assert voices["S-rain"] == "storm" and voices["S-gol"] == "valentina" and voices["S-open"] == "ruby"
    items = {f"I-{sid}" for sid, *_ in FIVE}  # each story's item on the running order says READY too
    ncs.wait_for("item statuses", lambda events: {e["item"] for e in events if e.get("event") == "itemStatus"
                                                  and e["ro"] == "RO-five" and e["status"] == "READY"} == items)
    assert ncs.call("requestObject", obj="RO-five:S-rain")["status"] == "READY"
    assert ncs.call("requestObject", obj="clip-S-rain")["id"] == "RO-five:S-rain"  # by the item the NCS placed
    seen = len(ncs.events)
    assert ncs.call("requestAll")["status"] == "ACK"  # then every object comes as a mosListAll
    ncs.wait_for("mosListAll", lambda events: {f"RO-five:{sid}" for sid, *_ in FIVE} <= {
        e["obj"]["id"] for e in events[seen:] if e.get("event") == "mosObj" and e["obj"]["status"] == "READY"})
    listed = ncs.call("requestRO", ro="RO-five")
    assert [s["id"] for s in listed["stories"]] == [sid for sid, *_ in FIVE]


def test_a_replaced_story_renders_again_alone(mos: dict[str, Any], five: dict[str, dict[str, Any]]) -> None:
    ncs, folder = mos["ncs"], mos["delivery"] / "RO-five"
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.wav")}
    times = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.wav")}
    revision = ready(ncs, "RO-five:S-rain")["revision"]
    story = {"id": "S-rain", "slug": "Weather", "metadata": {"voice": "storm", "language": "en"},
             "paragraphs": ["Sun returns on Friday."]}
    assert ncs.call("storySend", ro="RO-five", story=story)["status"] == "OK"
    ready(ncs, "RO-five:S-rain", after=revision)
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.wav")}
    assert after["S-rain.wav"] != before["S-rain.wav"]
    assert {k: v for k, v in after.items() if k != "S-rain.wav"} == {k: v for k, v in before.items() if k != "S-rain.wav"}
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("*.wav") if p.name != "S-rain.wav"} == \
        {k: v for k, v in times.items() if k != "S-rain.wav"}  # not even written again


def test_a_deleted_story_is_cancelled(mos: dict[str, Any]) -> None:
    """One deleted while it renders (stopped within a diffusion step: no file), one while it waits."""
    ncs, delivery = mos["ncs"], mos["delivery"]
    long = ["Good evening. " * 6, "Here is the news from the capital. " * 4]
    stories = [{"id": "S-long", "slug": "Long"}, {"id": "S-wait", "slug": "Waits"}, {"id": "S-keep", "slug": "Kept"}]
    assert ncs.call("createRO", ro={"id": "RO-del", "stories": stories})["status"] == "OK"
    for story in stories:
        assert ncs.call("storySend", ro="RO-del", story={**story, "paragraphs": long})["status"] == "OK"
    ncs.wait_for("S-long rendering", lambda _e: any(o["description"] == "rendering" for o in ncs.objects("RO-del:S-long")))
    assert ncs.call("deleteStories", ro="RO-del", ids=["S-long", "S-wait"])["status"] == "OK"
    ready(ncs, "RO-del:S-keep")
    for gone in ("S-long", "S-wait"):
        assert not [o for o in ncs.objects(f"RO-del:{gone}") if o["status"] == "READY"]
        assert not (delivery / "RO-del" / f"{gone}.wav").exists()
    assert ncs.objects("RO-del:S-long")[-1]["status"] == "DELETED"
    assert [s["id"] for s in ncs.call("requestRO", ro="RO-del")["stories"]] == ["S-keep"]


def test_element_actions_edit_the_running_order_as_the_ncs_sends_them(mos: dict[str, Any]) -> None:
    ncs = mos["ncs"]
    ids = lambda: [s["id"] for s in ncs.call("requestRO", ro="RO-act")["stories"]]  # noqa: E731
    assert ncs.call("createRO", ro={"id": "RO-act", "stories": [{"id": x} for x in ("A", "B", "C")]})["status"] == "OK"
    assert ncs.call("insertStories", ro="RO-act", before="B", stories=[{"id": "N"}])["status"] == "OK"
    assert ids() == ["A", "N", "B", "C"]
    assert ncs.call("moveStories", ro="RO-act", before="A", ids=["C"])["status"] == "OK"
    assert ids() == ["C", "A", "N", "B"]
    assert ncs.call("swapStories", ro="RO-act", a="C", b="B")["status"] == "OK"
    assert ids() == ["B", "A", "N", "C"]
    assert ncs.call("replaceStories", ro="RO-act", target="N", stories=[{"id": "R1"}, {"id": "R2"}])["status"] == "OK"
    assert ids() == ["B", "A", "R1", "R2", "C"]
    assert ncs.call("metadata", ro="RO-act", slug="Late news")["status"] == "OK"
    assert ncs.call("requestRO", ro="RO-act")["slug"] == "Late news"
    assert ncs.call("readyToAir", ro="RO-act", air="READY")["status"] == "OK"
    refused = ncs.call("moveStories", ro="RO-act", before="A", ids=["nope"])
    assert refused["status"] != "OK" and "story nope is not there" in refused["status"]
    assert ncs.call("deleteRO", ro="RO-act")["status"] == "OK"
    assert not ncs.attempt("requestRO", ro="RO-act")["ok"]  # gone: roReq is answered with an error


def test_the_ncs_stopped_mid_rundown_loses_nothing(mos: dict[str, Any], five: dict[str, dict[str, Any]]) -> None:
    ncs, gateway = mos["ncs"], mos["gateway"]
    stories = [{"id": "S-a", "slug": "A"}, {"id": "S-b", "slug": "B"}]
    assert ncs.call("createRO", ro={"id": "RO-cut", "stories": stories})["status"] == "OK"
    for story in stories:
        assert ncs.call("storySend", ro="RO-cut", story={**story, "paragraphs": ["The market closed higher today."]})[
            "status"] == "OK"
    ncs.call("dispose")  # the NCS goes away while both render: their objects wait in the gateway
    again = Ncs(gateway.ports, mos["ncs_ports"])
    try:
        again.call("start")
        for sid in ("S-a", "S-b"):
            ready(again, f"RO-cut:{sid}")  # delivered once the NCS is back
        assert [s["id"] for s in again.call("requestRO", ro="RO-cut")["stories"]] == ["S-a", "S-b"]
        assert again.call("requestRO", ro="RO-five")["id"] == "RO-five"
    finally:
        again.close()
    mos["ncs"] = ncs = Ncs(gateway.ports, mos["ncs_ports"])
    ncs.call("start")


@pytest.mark.parametrize("port, payload, says", [
    (1, message("<roCreate><roID>RO-x</roID><story><storyID>S1</storyID></roCreate>"), "not well-formed"),
    (0, message('<mosReqObj><objID>&lol9;</objID></mosReqObj>').replace(
        "<mos>".encode("utf-16-be"), ('<!DOCTYPE mos [<!ENTITY lol "lol"><!ENTITY lol9 "&lol;&lol;&lol;">]><mos>')
        .encode("utf-16-be")), "not well-formed"),
    (1, message("<roFrobnicate><roID>RO-x</roID></roFrobnicate>"), "unsupported message 'roFrobnicate'"),
    (1, message("<roDelete><roID>RO-x</roID></roDelete>", mos_id="someone.else", ncs_id="ncs.other"), "wrong MOS ID"),
    (1, message("<roStorySend><roID>RO-five</roID><storyID>S-open</storyID><storyBody></storyBody></roStorySend>"),
     "has no text"),
    (1, message("<roCreate><roID>RO-big</roID>" + ("<story><storyID>S</storyID><storySlug>" + "x" * 120
                                                   + "</storySlug></story>") * 28_000 + "</roCreate>"),  # 10 MB
     "over the 2 MB limit"),
])
def test_bad_input_gets_an_error_status_and_the_gateway_keeps_serving(mos: dict[str, Any], five: dict[str, Any],
                                                                      port: int, payload: bytes, says: str) -> None:
    gateway, ncs = mos["gateway"], mos["ncs"]
    answer = raw_exchange(gateway.ports[port], payload)
    assert "<messageID>900</messageID>" in answer and says in answer, answer[:500]
    assert ("<status>NACK</status>" in answer) if port == 0 else ("<roStatus>OK</roStatus>" not in answer)
    assert ncs.call("machineInfo")["id"] == DEVICE_ID  # still serving
    assert gateway.proc.poll() is None


def test_a_story_with_no_text_from_the_ncs_is_refused(mos: dict[str, Any], five: dict[str, dict[str, Any]]) -> None:
    ncs = mos["ncs"]
    reply = ncs.call("storySend", ro="RO-five", story={"id": "S-open", "slug": "Opening", "paragraphs": []})
    assert reply["status"] != "OK" and "no text" in reply["status"]


def test_a_thousand_story_running_order_is_taken_and_renders_in_order(mos: dict[str, Any]) -> None:
    ncs = mos["ncs"]
    stories = [{"id": f"K{n}", "slug": f"Story {n}"} for n in range(1000)]
    assert ncs.call("createRO", ro={"id": "RO-1000", "stories": stories})["status"] == "OK"
    for n in (0, 999):
        assert ncs.call("storySend", ro="RO-1000", story={**stories[n], "paragraphs": [f"Item {n}."]})["status"] == "OK"
    first, last = ready(ncs, "RO-1000:K0"), ready(ncs, "RO-1000:K999")
    order = [e["obj"]["id"] for e in ncs.events if e.get("event") == "mosObj" and e["obj"]["status"] == "READY"]
    assert order.index(first["id"]) < order.index(last["id"])
    assert len(ncs.call("requestRO", ro="RO-1000")["stories"]) == 1000


def test_running_orders_survive_a_restart_of_the_gateway(mos: dict[str, Any], five: dict[str, dict[str, Any]]) -> None:
    gateway, ncs = mos["gateway"], mos["ncs"]
    assert gateway.stop() == 0  # SIGTERM with the NCS connected: a quiet stop
    assert "Traceback" not in gateway.output and "CancelledError" not in gateway.output, gateway.output[-3000:]
    ncs.close()
    mos["gateway"] = gateway = Gateway(mos["delivery"], mos["ncs_ports"])
    mos["ncs"] = ncs = Ncs(gateway.ports, mos["ncs_ports"])
    ncs.call("start")
    assert [s["id"] for s in ncs.call("requestRO", ro="RO-five")["stories"]] == [sid for sid, *_ in FIVE]
    assert ncs.call("requestObject", obj="RO-five:S-open")["status"] == "READY"
    assert "story RO-five/" not in gateway.output  # nothing rendered again: every READY file is still its story's


@pytest.mark.parametrize("args, says", [
    ([], "--mos-id is required"),
    (["--mos-id", "a", "--ncs-id", "b", "--delivery", "{tmp}/d", "--ports", "10540,10541"],
     "--ports 10540,10541: give 3 port numbers"),
    (["--mos-id", "a", "--ncs-id", "b", "--delivery", "{tmp}/d", "--ncs-ports", "x,y"], "--ncs-ports x,y: give 2"),
    (["--config", "{tmp}/bad.toml"], "unknown setting 'colour'"),
    (["--mos-id", "a", "--ncs-id", "b", "--delivery", "{tmp}/d", "--shm", "x"], "--shm hands one take"),
    (["--config", "{tmp}/good.toml", "--heartbeat", "0"], "--heartbeat 0.0 is out of range"),
    (["--config", "{tmp}/good.toml", "--state", "{tmp}"], "is a folder: give --state the path of a file"),
    (["--config", "{tmp}/good.toml", "--state", "{tmp}/bad.toml"], "bad.toml cannot be read"),
])
def test_bad_options_are_one_line(args: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.cli import main

    (tmp_path / "bad.toml").write_text('mos_id = "a"\ncolour = "red"\n')
    (tmp_path / "good.toml").write_text(f'mos_id = "a"\nncs_id = "b"\ndelivery = "{tmp_path}/d"\n')
    assert main(["mos", *[a.replace("{tmp}", str(tmp_path)) for a in args]]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("omnistudio: error:") and "\n" not in err and says in err, err
    assert not (tmp_path / "d").exists()
