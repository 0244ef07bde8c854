"""RemoteEngine against a stand-in server: exact samples, progress, cancel, and every network fault typed.

The real server (a ``serve --model tiny`` subprocess) is driven in test_remote_studio.py; here the faults
are made on purpose, quickly and exactly: unreachable, 401, 429, a socket dropped mid-render (the
group is resent and comes back whole), the server gone mid-render, a cancel acknowledged.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from support.remote import Connects, FakeServer, fake_pcm, refused_port

pytestmark = pytest.mark.timeout(300)


def Options():  # noqa: N802 - the options every render here uses
    from omnistudio.take.options import TakeOptions

    return TakeOptions()


def _items(n: int = 3):  # noqa: ANN202
    from omnistudio.take.link import RenderItem
    from omnistudio.voices.resolve import Blend, VoiceRef

    voices = [VoiceRef(anchor="ruby"), VoiceRef(blend=Blend("ruby", "storm", 0.7))]
    return [RenderItem(i, f"Sentence {i} of the news.", voices[i % 2], "en", 1000 + i) for i in range(n)]


@pytest.fixture
def server():  # noqa: ANN201
    fake = FakeServer().start()
    yield fake
    fake.stop()


def _link(url: str, **kwargs):  # noqa: ANN202
    from omnistudio.client.engine import RemoteEngine

    return RemoteEngine(url, **kwargs)


def test_render_returns_the_servers_exact_samples_in_order(server: FakeServer) -> None:
    from omnistudio.take.link import EngineLink

    link = _link(server.url)
    assert isinstance(link, EngineLink)
    items = _items(3)
    out = link.render(items, Options())
    assert [r.index for r in out] == [0, 1, 2]
    for item, rendered in zip(items, out):
        assert rendered.pcm.dtype == np.float32
        assert np.array_equal(rendered.pcm, fake_pcm(item.text, item.seed))  # bit for bit
        assert rendered.timings.rtf == 0.5 and rendered.steps == 10
    sent = server.requests[-1]
    assert sent["type"] == "speak" and sent["pcm"] == "f32"
    assert [i["voice"] for i in sent["items"]] == ["ruby", "ruby+storm@0.70", "ruby"]
    assert sent["items"][2]["seed"] == 1002
    # a group whose sentence indices are not 0..n-1 (a later group of a take) maps back by position
    later = link.render(items[1:], Options())
    assert [r.index for r in later] == [1, 2] and np.array_equal(later[1].pcm, out[2].pcm)
    link.close()


def test_prepare_reports_progress(server: FakeServer) -> None:
    from omnistudio.voices.resolve import VoiceRef

    events = []
    link = _link(server.url)
    link.prepare([(VoiceRef(anchor="ruby"), "en"), (VoiceRef(anchor="storm"), "es")], events.append)
    assert [(e.done, e.total, e.lang) for e in events] == [(1, 2, "en"), (2, 2, "es")]
    assert link.info.device == f"cpu @ 127.0.0.1:{server.port}" and link.info.sampler == "fast"
    assert link.info.threads == 3  # the server's thread count: a remote take records what rendered it
    link.close()


def test_the_voice_list_is_read_as_the_server_writes_it(server: FakeServer) -> None:
    from omnistudio.take.link import AnchorInfo

    voices = _link(server.url).voices()
    assert voices.anchors == (AnchorInfo("ruby", "Ruby", ("en", "es"), {"en": "ready", "es": "missing"}),
                              AnchorInfo("storm", "Storm", ("en",), {"en": "stale"}))
    assert voices.duos == (("ruby", "storm", 0.7, ("en",)),)


def test_a_server_of_another_protocol_is_refused_with_one_line(server: FakeServer) -> None:
    from omnistudio.client.connection import ServerRefused

    server.behaviour = "old-protocol"
    with pytest.raises(ServerRefused) as err:
        _link(server.url).info  # noqa: B018
    assert "no protocol version" in str(err.value) and "same OmniStudio version" in str(err.value)
    assert "\n" not in str(err.value)


def test_an_unknown_server_message_is_one_clear_error_not_a_guess(server: FakeServer) -> None:
    from omnistudio.client.connection import ServerRefused

    server.behaviour = "unknown-event"
    with pytest.raises(ServerRefused) as err:
        _link(server.url).render(_items(1), Options())
    assert "unknown server message type 'sentence_words'" in str(err.value) and "\n" not in str(err.value)


def test_a_loading_server_is_waited_for(server: FakeServer) -> None:
    from omnistudio.client.connection import ServerNotReady

    server.behaviour = "loading"
    with pytest.raises(ServerNotReady, match="loading model"):
        _link(server.url).info  # noqa: B018
    server.behaviour = "loading"
    said: list[str] = []
    assert _link(server.url).wait_ready(said.append).model == "fake"
    assert said == [f"server {server.url} is not ready yet (loading model)"]


def test_unreachable_is_one_typed_line_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnistudio.client.connection import ServerUnreachable

    connects = Connects(monkeypatch)
    with refused_port() as held:  # nothing listens there, and nothing else can take the port meanwhile
        link = _link(f"http://127.0.0.1:{held.getsockname()[1]}", connect_budget_s=0.5)
        with pytest.raises(ServerUnreachable) as err:
            link.render(_items(1), Options())
        # it tried again with backoff (a restarting server costs a pause), then gave up once the waits
        # had spent its connect budget: one wait fewer than attempts, the waits summing to at most 0.5 s
        [waits] = connects.waits
        assert connects.attempts == len(waits) + 1 >= 2
        assert 0 < sum(waits) <= 0.5 + 1e-9, waits
        assert "unreachable" in str(err.value) and "\n" not in str(err.value)
        with pytest.raises(ServerUnreachable):
            link.voices()


def test_wrong_key_is_an_auth_error_and_nothing_is_rendered() -> None:
    from omnistudio.client.connection import ServerAuthError

    fake = FakeServer(key="sesame").start()
    try:
        with pytest.raises(ServerAuthError, match="401"):
            _link(fake.url, api_key="wrong").render(_items(1), Options())
        with pytest.raises(ServerAuthError):
            _link(fake.url).voices()
        assert fake.requests == []
        assert len(_link(fake.url, api_key="sesame").render(_items(1), Options())) == 1
    finally:
        fake.stop()


def test_full_queue_is_busy_with_its_retry_after() -> None:
    from omnistudio.client.connection import ServerBusy

    fake = FakeServer(behaviour="429").start()
    try:
        with pytest.raises(ServerBusy) as err:
            _link(fake.url, connect_budget_s=0.3).render(_items(1), Options())
        assert err.value.retry_after_s == 3.0 and "busy" in str(err.value)
    finally:
        fake.stop()


def test_a_dropped_socket_is_reconnected_and_the_group_resent_whole(server: FakeServer) -> None:
    server.behaviour = "drop"
    link = _link(server.url)
    items = _items(3)
    out = link.render(items, Options())
    assert [r.index for r in out] == [0, 1, 2]
    assert all(np.array_equal(r.pcm, fake_pcm(i.text, i.seed)) for i, r in zip(items, out))
    assert link.reconnects == 1 and server.connections == 2


def test_server_gone_mid_render_is_a_dropped_error_within_the_connect_budget(
        server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from omnistudio.client.connection import ServerDropped, ServerUnreachable

    server.behaviour = "die"
    link = _link(server.url, connect_budget_s=0.8)
    connects = Connects(monkeypatch)
    with pytest.raises(ServerDropped) as err:
        link.render(_items(3), Options())
    # the render's connection, then one reconnect (the request would have been resent once) whose
    # backoff spent the connect budget (0.8 s of waits) and no more before the error was raised
    assert server.sent == 1 and link.reconnects == 1
    first, reconnect = connects.waits
    assert first == [] and 0 < sum(reconnect) <= 0.8 + 1e-9, reconnect
    assert connects.attempts == 1 + len(reconnect) + 1
    assert "mid-render" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ServerUnreachable):  # the next call: nothing there, said as such
        link.render(_items(1), Options())
    # the server comes back on the same port (the link keeps its URL): the same link works again
    again = FakeServer(port=server.port).start()
    try:
        assert len(link.render(_items(2), Options())) == 2
    finally:
        again.stop()


def test_cancel_sends_cancel_and_raises_cancelled(server: FakeServer) -> None:
    from omnistudio.errors import Cancelled

    server.behaviour, server.free = "hold", 0  # the server holds the first sentence until told
    link = _link(server.url)
    cancel = threading.Event()
    # cancel while the server is in the middle of the first sentence
    threading.Thread(target=lambda: server.holding.wait(30) and cancel.set(), daemon=True).start()
    with pytest.raises(Cancelled):
        link.render(_items(2), Options(), cancel)
    # the cancel reached the server mid-sentence and was honoured there: not one sentence was sent
    # (the held one would have gone out once the hold ended, had the link not sent the cancel)
    assert server.cancels == 1 and server.sent == 0
    server.behaviour = "ok"
    assert len(link.render(_items(1), Options())) == 1


def test_local_only_voices_are_refused_with_one_line() -> None:
    from omnistudio.errors import UserError
    from omnistudio.client.engine import voice_to_wire

    class Recording:
        def key(self) -> str:
            return "rec:0123456789ab"

    with pytest.raises(UserError, match="rec:0123456789ab"):
        voice_to_wire(Recording())


@pytest.mark.parametrize(("given", "base"), [
    ("gpu-box:8005", "http://gpu-box:8005"), ("http://10.0.0.5:8005/", "http://10.0.0.5:8005"),
    ("ws://h:1/ws/tts/stream-omni", "http://h:1"), ("https://tts.example.org/omni", "https://tts.example.org/omni")])
def test_server_urls(given: str, base: str) -> None:
    from omnistudio.client.connection import parse_server_url

    address = parse_server_url(given)
    assert address.base == base
    assert address.ws_url.endswith("/ws/tts/stream-omni") and address.ws_url.startswith(("ws://", "wss://"))


@pytest.mark.parametrize("bad", ["", "ftp://h:1", "http://:80", "http://h:99999", "http://h:1/?x=1"])
def test_bad_server_urls_are_one_line(bad: str) -> None:
    from omnistudio.errors import UserError
    from omnistudio.client.connection import parse_server_url

    with pytest.raises(UserError):
        parse_server_url(bad)


def test_api_key_file(tmp_path) -> None:  # noqa: ANN001
    from omnistudio.errors import UserError
    from omnistudio.client.connection import read_api_key

    (tmp_path / "k").write_text("# the key\n  sesame  \n")
    assert read_api_key(tmp_path / "k") == "sesame"
    (tmp_path / "empty").write_text("\n")
    for bad in (tmp_path / "empty", tmp_path / "missing"):
        with pytest.raises(UserError):
            read_api_key(bad)


@pytest.mark.parametrize(("frame", "kind", "words"), [
    ({"type": "error", "message": "unknown anchor 'rubyy' (did you mean 'ruby'?)", "status": 400},
     "ServerRefused", "unknown anchor 'rubyy'"),
    ({"type": "error", "message": "the queue is full", "status": 429, "retry_after": 2}, "ServerBusy", "retry in 2 s"),
    ({"type": "error", "message": "the engine is warming; retry shortly", "status": 503}, "ServerNotReady", "warming"),
    ({"type": "error", "message": "no status"}, "ServerRefused", "no status")])
def test_error_frames_are_typed_by_their_status(frame: dict, kind: str, words: str) -> None:
    from omnistudio import protocol as wire
    from omnistudio.client import connection

    link = _link("http://127.0.0.1:1")
    with pytest.raises(getattr(connection, kind)) as err:
        link._raise_server_error(wire.parse_server_event(frame))  # noqa: SLF001
    assert words in str(err.value) and "\n" not in str(err.value)
