"""Shared helpers for judge tests: env isolation, panels wired to a loopback server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import rubrics
from judge import JudgeRequest
from judge.llm import JudgeSettings, RetryConfig, RetryPolicy, build_panel

FAKE_OPENAI_KEY = "test-openai-key-not-real"
FAKE_ANTHROPIC_KEY = "test-anthropic-key-not-real"

_SCRUB = (
    "OPENAI_API_KEY",
    "OPENAI_ADMIN_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_CUSTOM_HEADERS",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
)


def isolate_env(monkeypatch, tmp_path: Path) -> None:
    for var in _SCRUB:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


class SleepRecorder:
    """Stands in for asyncio.sleep in the retry policy: records the delay, waits for nothing."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "judges.toml"
    path.write_text(body, encoding="utf-8")
    return path


def make_panel(tmp_path: Path, judges: list[str], *, config: str = "", max_attempts: int = 3, sleeper: SleepRecorder | None = None, **settings):
    """A panel with a cache in tmp_path, a recording sleeper, and a short per-request timeout."""
    settings.setdefault("cache_path", tmp_path / "cache.sqlite3")
    settings.setdefault("timeout_s", 10.0)  # generous: CI machines are shared; timeout tests set their own
    if config:
        settings["config_path"] = write_config(tmp_path, config)
    retry_cfg = RetryConfig(max_attempts=max_attempts, base_delay_s=0.01, max_delay_s=0.05, retry_after_cap_s=5.0)
    policy = RetryPolicy(retry_cfg, sleep=sleeper or SleepRecorder())
    return build_panel(JudgeSettings(judges=judges, **settings), rubrics.RUBRICS, retry=policy)


def answer_request(i: int = 0, answer: str = "14 stores") -> JudgeRequest:
    return JudgeRequest(
        key=f"traj-{i}/t1/answer",
        rubric="answer_correctness",
        material={"question": f"How many stores in region {i} sold more than 1M?", "gold_answers": ["14"], "answer": answer},
    )


async def decide(panel, requests):
    try:
        return await panel.decide(requests)
    finally:
        await panel.aclose()
