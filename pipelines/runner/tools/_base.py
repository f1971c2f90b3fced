"""Where an agent's tool calls go: one isolated session per trajectory, opened and closed around it.

Both sources (in-process environments, MCP servers) render a result the same way, as sorted
JSON text, so the agent sees byte-identical tool results either way and a cached run replays
whichever source produced it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import AbstractAsyncContextManager
from typing import Any

import msgspec

from judge import Task, ToolSpec


class ToolOutcome(msgspec.Struct, frozen=True):
    """``ok``: the tool ran and returned ``result``; else ``error`` says why. ``text`` is what the agent sees."""

    ok: bool
    result: Any = None
    error: str | None = None
    text: str = ""


def render(value: Any) -> str:
    """A result as the agent sees it (the MCP server renders the same way)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def success(value: Any) -> ToolOutcome:
    return ToolOutcome(ok=True, result=value, text=render(value))


def failure(error: str) -> ToolOutcome:
    return ToolOutcome(ok=False, error=error, text=f"Error: {error}")


class ToolSession(ABC):
    """Fresh state for one trajectory; its writes are visible to its own later calls only."""

    @abstractmethod
    async def tools(self) -> list[ToolSpec]:
        """The tools this session offers (used when the task declares none)."""

    @abstractmethod
    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Execute one call; never raises for anything the agent passed."""


class ToolSource(ABC):
    """Opens one ``ToolSession`` per trajectory."""

    @abstractmethod
    def unavailable(self, task: Task) -> str | None:
        """Why this source cannot serve ``task`` (None: it can)."""

    @abstractmethod
    def session(self, task: Task) -> AbstractAsyncContextManager[ToolSession]:
        """``async with source.session(task) as tools:`` around one trajectory."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the manifest records (never a secret)."""

    def close(self) -> None:
        """Release what the source holds for the run (log files); sessions close themselves."""
        return None

    def label(self, task: Task) -> str:
        """Short provenance recorded on each trajectory."""
        return str(self.describe().get("kind", "tools"))
