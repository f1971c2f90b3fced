"""Runner tests: scripted agents on loopback servers (both wire formats), real SDKs, real environments.

No real key exists; every base URL points at a loopback server the test starts, and a stray call
goes to 127.0.0.1:9 (discard) and fails at once. Caches live in the test's tmp folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.env import load_environment
from tests.judge.helpers import isolate_env
from tests.servers import LoopbackServer
from tests.servers.agent import ScriptedAgent

MODEL = "agent-1"
FAST_RETRY = "[retry]\nmax_attempts = 3\nbase_delay_s = 0.0\nmax_delay_s = 0.0\n"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    isolate_env(monkeypatch, tmp_path)


@pytest.fixture
def server(monkeypatch):
    with LoopbackServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
        yield srv


@pytest.fixture(params=["openai", "anthropic"])
def wire(request) -> str:
    return request.param


def tools_of(domain: str, *names: str) -> list[dict[str, Any]]:
    env = load_environment(domain)
    chosen = [t for t in env.tools if not names or t.name in names]
    return [t.model_dump(mode="json", exclude_none=True) for t in chosen]


def task(task_id: str, question: str, reference_calls: list[dict], gold: Any, domain: str = "olympics", **extra: Any) -> dict[str, Any]:
    data = {
        "task_id": task_id,
        "question": question,
        "reference_calls": reference_calls,
        "gold_answer": gold,
        "environment": domain,
        "tools": tools_of(domain),
    }
    data.update(extra)
    return data


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    return path


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["run", *args])


def run_args(tmp_path: Path, wire: str, tasks: Path, out: str = "out", *extra: str) -> list[str]:
    config = tmp_path / "agent.toml"
    if not config.exists():
        config.write_text(FAST_RETRY, encoding="utf-8")
    return [
        "--agent",
        f"{wire}:{MODEL}",
        "--tasks",
        str(tasks),
        "--out",
        str(tmp_path / out),
        "--cache",
        str(tmp_path / "cache.sqlite"),
        "--config",
        str(config),
        *extra,
    ]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def script(server: LoopbackServer, scripts: dict) -> ScriptedAgent:
    agent = ScriptedAgent(scripts)
    server.set_responder(MODEL, agent)
    return agent


def host_city(year: int) -> str:
    """The truth, from the environment itself."""
    return load_environment("olympics").session().execute("get_games_by_year", {"year": year}).result["host_city"]


def games_task(task_id: str, year: int, **extra: Any) -> dict[str, Any]:
    return task(task_id, f"Which city hosted the {year} Summer Games?", [{"name": "get_games_by_year", "arguments": {"year": year}}], host_city(year), **extra)


def bodies(server: LoopbackServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.model == MODEL and isinstance(r.body, dict)]
