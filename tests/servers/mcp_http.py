"""``judge env serve DOMAIN --transport http`` as a subprocess on a free loopback port, for tests."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_http(domain: str, timeout_s: float = 30.0) -> Iterator[str]:
    """The MCP URL of a fresh server for ``domain``, once it accepts connections (the test fails
    with the server's error output if it ends or is not up within ``timeout_s``); stopped after."""
    port = free_port()
    cmd = [sys.executable, "-m", "pipelines.env", "serve", domain, "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"server did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
