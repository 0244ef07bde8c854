"""A real `omnistudio mos --model tiny` process and the NCS that drives it: Sofie's mos-connection under Node
(tests/mos/ncs.js, installed by `npm ci` from tests/mos/package-lock.json), and raw MOS bytes for the
inputs no NCS library would send (malformed XML, an entity bomb, 10 MB).

The gateway listens on ports the system picks (``--ports 0,0,0``; they are in the line it prints when
ready); the NCS's own listening ports are picked here just before the gateway starts."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.wait import HANG_S

HERE = Path(__file__).resolve().parents[1] / "mos"
READY = re.compile(r"listening on \S+ ports (?P<ports>\d+,\d+,\d+);")
DEVICE_ID, NCS_ID = "omnistudio.mos.test", "ncs.test"


def node_ready() -> str:
    """The node binary with mos-connection installed beside ncs.js: a clear failure where it is not."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: run scripts/system-deps.sh (Node 20 for the MOS tests)")
    if not (HERE / "node_modules" / "@mos-connection" / "connector").is_dir():
        pytest.fail("mos-connection is not installed: run `npm ci --prefix tests/mos` (scripts/test.sh does)")
    return node


def free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


class Gateway:
    """``omnistudio mos`` on the tiny model, delivering to ``delivery``."""

    def __init__(self, delivery: Path, ncs_ports: list[int], *args: str) -> None:
        self.delivery = delivery
        self.lines: list[str] = []
        self._ready = threading.Event()
        self.ports: list[int] = []
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "omnistudio.cli", "mos", "--model", "tiny", "--device", "cpu", "--mos-id", DEVICE_ID,
             "--ncs-id", NCS_ID, "--ports", "0,0,0", "--ncs-ports", f"{ncs_ports[0]},{ncs_ports[1]}", "--delivery",
             str(delivery), "--voice", "ruby", "--num-step", "2", "--heartbeat", "1", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(HANG_S) or not self.ports:
            self.stop()
            raise RuntimeError(f"omnistudio mos did not start: {self.output[-3000:]}")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            if not self.ports and (m := READY.search(line)):
                self.ports = [int(p) for p in m["ports"].split(",")]
                self._ready.set()
        self._ready.set()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return int(self.proc.returncode)


class Ncs:
    """The NCS (mos-connection in a Node process): ``call(op, ...)`` and the events the device sent."""

    def __init__(self, device_ports: list[int], ncs_ports: list[int]) -> None:
        env = {**os.environ, "DEVICE_ID": DEVICE_ID, "NCS_ID": NCS_ID,
               "DEVICE_PORTS": ",".join(map(str, device_ports)), "NCS_PORTS": ",".join(map(str, ncs_ports))}
        self.proc = subprocess.Popen([node_ready(), str(HERE / "ncs.js")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, cwd=HERE, text=True, bufsize=1)
        self.events: list[dict[str, Any]] = []
        self.noise: list[str] = []
        self._replies: dict[int, dict[str, Any]] = {}
        self._ids = iter(range(1, 1 << 30))
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                data = json.loads(line)
            except ValueError:
                self.noise.append(line.rstrip())
                continue
            with self._changed:
                if "reply" in data:
                    self._replies[data["reply"]] = data
                else:
                    self.events.append(data)
                self._changed.notify_all()

    def call(self, op: str, **fields: Any) -> Any:
        """Run one mos-connection call; its result (an exception with its error when it failed)."""
        reply = self.attempt(op, **fields)
        if not reply["ok"]:
            raise AssertionError(f"{op} failed: {reply['error']}; output: {self.noise[-20:]}")
        return reply["result"]

    def attempt(self, op: str, **fields: Any) -> dict[str, Any]:
        ident = next(self._ids)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": ident, "op": op, **fields}) + "\n")
        self.proc.stdin.flush()
        with self._changed:
            if not self._changed.wait_for(lambda: ident in self._replies or self.proc.poll() is not None, HANG_S):
                raise AssertionError(f"{op}: no reply in {HANG_S} s")
        if ident not in self._replies:
            raise AssertionError(f"the NCS process ended: {self.noise[-20:]}")
        return self._replies.pop(ident)

    def wait_for(self, what: str, test: Callable[[list[dict[str, Any]]], Any], timeout: float = HANG_S) -> Any:
        """Wait until ``test(events)`` is truthy; its value."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                value = test(list(self.events))
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"{what}: not seen in {timeout:g} s; events: {self.events[-10:]}")
                self._changed.wait(min(left, 1.0))

    def objects(self, obj_id: str) -> list[dict[str, Any]]:
        return [e["obj"] for e in self.events if e.get("event") == "mosObj" and e["obj"]["id"] == obj_id]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def raw_exchange(port: int, payload: bytes, timeout: float = HANG_S) -> str:
    """Send ``payload`` (bytes as they are) to a gateway port and read one message back (UTF-16BE text)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(payload)
        data = b""
        while "</mos>".encode("utf-16-be") not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode("utf-16-be", "replace")


def message(body: str, message_id: int = 900, mos_id: str = DEVICE_ID, ncs_id: str = NCS_ID) -> bytes:
    return (f"<mos><mosID>{mos_id}</mosID><ncsID>{ncs_id}</ncsID><messageID>{message_id}</messageID>{body}</mos>"
            .encode("utf-16-be"))
