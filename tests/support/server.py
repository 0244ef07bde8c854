"""A real `omnistudio serve --model tiny` subprocess, for the server tests.

The server binds a port the system picks (``--port 0``) and names it in the line it prints once it
is ready (``omnistudio: serving tiny on http://127.0.0.1:PORT ...``): this class reads the port from
that line, so no port is chosen here and handed over (another program could take it in between).
A restart on the port a stopped server had passes ``port=`` explicitly.

``restored_environ`` scopes what a Ray test puts in ``os.environ`` (and what ``ray.init`` adds itself)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from support.wait import HANG_S

READY = re.compile(r"^omnistudio: serving \S+ on http://(?P<host>[^\s:]+|\[[^\]]+\]):(?P<port>\d+) ")


class Server:
    def __init__(self, *args: str, timeout_s: float = 300.0, port: int | None = None) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        home = Path(os.environ["OMNISTUDIO_HOME"])
        self.log = home / f"serve-{os.getpid()}-{id(self):x}.log"
        self.lines: list[str] = []
        self._ready = threading.Event()
        self.port = 0
        self.proc = subprocess.Popen([sys.executable, "-m", "omnistudio.cli", "serve", "--model", "tiny",
                                      "--device", "cpu", "--port", str(port or 0), "--no-warm-up", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        self._reader = threading.Thread(target=self._read, name="serve-output", daemon=True)
        self._reader.start()
        if not self._ready.wait(timeout_s) or not self.port:
            self.stop()
            why = "exited" if self.proc.returncode is not None else f"not ready in {timeout_s:g} s"
            raise RuntimeError(f"server {why} (status {self.proc.returncode}): {self.output[-2000:]}")
        self.url = f"http://127.0.0.1:{self.port}"
        health = httpx.get(f"{self.url}/health", timeout=HANG_S)
        assert health.status_code == 200, health.text  # the line is printed once the engine is ready

    def _read(self) -> None:
        """Copy the server's output to ``self.log`` line by line; note the port of its 'serving' line."""
        assert self.proc.stdout is not None
        with open(self.log, "wb") as log:
            for raw in self.proc.stdout:
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.lines.append(line)
                if not self.port and (m := READY.match(line)):
                    self.port = int(m["port"])
                    self._ready.set()
        self._ready.set()  # the process ended: nobody waits for a line that will not come

    @property
    def output(self) -> str:
        """Everything the server printed so far."""
        return "\n".join(self.lines)

    def metric(self, name: str, headers: dict[str, str] | None = None) -> float:
        """The sum of every sample of ``name`` in /metrics (0 when absent)."""
        text = httpx.get(f"{self.url}/metrics", headers=headers or {}).text
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name) and not line.startswith("#"))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(timeout=10)


@contextmanager
def restored_environ() -> Iterator[None]:
    """``os.environ`` as it was before the block, after it: variables the block (or Ray) added are
    removed, changed ones restored, so nothing leaks into the rest of the session."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for name in set(os.environ) - set(saved):
            del os.environ[name]
        for name, value in saved.items():
            if os.environ.get(name) != value:
                os.environ[name] = value


def private_home(omnistudio_home: Path, folder: Path) -> Path:
    """``folder`` made an OMNISTUDIO_HOME of its own for a server that changes its roster (voices added,
    replaced, removed): its roster and prompts apart from the session's, which other tests read, and
    the session's checkpoints shared (no second tiny checkpoint written)."""
    (omnistudio_home / "cache").mkdir(parents=True, exist_ok=True)
    (folder / "cache").symlink_to(omnistudio_home / "cache", target_is_directory=True)
    return folder
