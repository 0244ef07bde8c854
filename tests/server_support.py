"""A real `omnistudio serve --model tiny` subprocess on a free port, for the server tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, *args: str, timeout_s: float = 300.0, port: int | None = None) -> None:
        self.port = port or free_port()  # a port of its own, or the one a killed server had (restart)
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        self.log = Path(os.environ["OMNISTUDIO_HOME"]) / f"serve-{self.port}.log"
        self._log = open(self.log, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "omnistudio.cli", "serve", "--model", "tiny",
                                      "--device", "cpu", "--port", str(self.port), "--no-warm-up", *args],
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"server not ready in {timeout_s} s: {self.log.read_text()[-2000:]}")

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
        self._log.close()
