"""Tools from the bundled executable environments, executed in-process.

Each trajectory gets ``load_environment(task.environment).session()``: a fresh copy of the
domain state on its first write, carried across the trajectory's turns (as replay does).
Calls run in a worker thread so a slow query never stalls the other trajectories' model calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from judge import Task, ToolSpec
from pipelines.env import Environment, Session, UnknownEnvironment, load_environment
from pipelines.runner.tools._base import ToolOutcome, ToolSession, ToolSource, failure, success


class EnvToolSession(ToolSession):
    def __init__(self, env: Environment):
        self.env = env
        self._session: Session = env.session()

    async def tools(self) -> list[ToolSpec]:
        return list(self.env.tools)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        result = await asyncio.to_thread(self._session.execute, name, arguments)
        return success(result.result) if result.ok else failure(result.error or "tool failed")


class EnvToolSource(ToolSource):
    def __init__(self, root: Path | None = None):
        self.root = root
        self.versions: dict[str, str] = {}  # environments used -> version, for the manifest

    def _load(self, task: Task) -> Environment:
        assert task.environment is not None
        env = load_environment(task.environment, self.root)
        self.versions[env.name] = env.version
        return env

    def unavailable(self, task: Task) -> str | None:
        if task.environment is None:
            return "the task names no bundled environment: serve its tools over MCP (--mcp / --mcp-url)"
        try:
            self._load(task)
        except UnknownEnvironment as exc:
            return str(exc)
        return None

    @asynccontextmanager
    async def session(self, task: Task) -> AsyncIterator[ToolSession]:
        yield EnvToolSession(self._load(task))

    def describe(self) -> dict[str, Any]:
        return {"kind": "environment", "root": str(self.root) if self.root else "bundled", "versions": dict(sorted(self.versions.items()))}

    def label(self, task: Task) -> str:
        env = self._load(task)
        return f"env:{env.name}@{env.version}"
