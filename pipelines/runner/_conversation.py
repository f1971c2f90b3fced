"""A provider-neutral conversation: what the agent was told and what it answered.

Each agent module translates it into its wire format (OpenAI messages, Anthropic content
blocks), so the loop never knows which provider it drives. Invariant: a ``ToolResults`` entry
answers every call of the ``ModelReply`` just before it, in the same order.
"""

from __future__ import annotations

from typing import Any

import msgspec


class ToolCall(msgspec.Struct, frozen=True):
    """One call the model asked for. ``arguments`` is None when ``raw_arguments`` is not a JSON object."""

    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None
    parse_error: str | None = None


class ModelReply(msgspec.Struct, frozen=True):
    """One model message, as parsed from the provider's response (live or cached)."""

    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    refusal: str | None = None
    stop_reason: str | None = None
    model_version: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


class ToolReply(msgspec.Struct, frozen=True):
    """What the agent is told a call returned (the text it sees, and whether it is an error)."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


class UserMessage(msgspec.Struct, frozen=True):
    text: str


class ToolResults(msgspec.Struct, frozen=True):
    replies: tuple[ToolReply, ...]


Message = UserMessage | ModelReply | ToolResults


class Conversation(msgspec.Struct):
    system: str
    messages: list[Message] = msgspec.field(default_factory=list)

    def add(self, message: Message) -> None:
        self.messages.append(message)
