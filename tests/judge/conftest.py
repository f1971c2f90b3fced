"""Test env for judges: no real keys, every base URL pointed at a loopback server, caches in tmp.

A stray call that escapes the loopback server goes to 127.0.0.1:9 (discard) and fails at once.
"""

from __future__ import annotations

import pytest

import pipelines.checks.answer  # noqa: F401  (registers the comparisons a judge's pass is checked with, as the CLI does)
from tests.judge.helpers import isolate_env
from tests.servers import LoopbackServer


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    isolate_env(monkeypatch, tmp_path)


@pytest.fixture
def server(monkeypatch):
    with LoopbackServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
        yield srv
