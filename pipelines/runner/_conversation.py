"""A provider-neutral conversation: what the agent was told and what it answered.

Each agent module translates it into its wire format (OpenAI messages, Anthropic content
blocks), so the loop never knows which provider it drives. Invariant: a ``ToolResults`` entry
answers every call of the ``ModelReply`` just before it, in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is None when ``raw_arguments`` is not a JSON object."""

    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None
    parse_error: str | None = None


@dataclass(frozen=True)
class ModelReply:
    """One model message, as parsed from the provider's response (live or cached)."""

    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    refusal: str | None = None
    stop_reason: str | None = None
    model_version: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class ToolReply:
    """What the agent is told a call returned (the text it sees, and whether it is an error)."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class UserMessage:
    text: str


@dataclass(frozen=True)
class ToolResults:
    replies: tuple[ToolReply, ...]


Message = UserMessage | ModelReply | ToolResults


@dataclass
class Conversation:
    system: str
    messages: list[Message] = field(default_factory=list)

    def add(self, message: Message) -> None:
        self.messages.append(message)
