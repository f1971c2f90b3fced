"""Scripted *agent* models for the loopback server: tool calls and answers in both wire formats.

A ``ScriptedAgent`` is a responder (``LoopbackServer.set_responder``): it reads the conversation
in the request, finds the task (a key found in the first user message), the turn (user text
messages so far) and the step within the turn (assistant messages since that user message), and
plays the scripted action for that position. An action may be a function of the ``View`` (to
retry after an error, or to answer with what a tool returned). Past the end of a turn's script
the last action repeats, which is how a looping agent is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.servers.loopback import NoToolCall, Refusal


@dataclass(frozen=True)
class Call:
    """One tool call; ``arguments`` as a str is sent verbatim (malformed JSON on the OpenAI wire)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)


@dataclass(frozen=True)
class Act:
    """One assistant message issuing ``calls`` (parallel calls when several), with optional text."""

    calls: tuple[Call, ...]
    text: str | None = None
    input_tokens: int = 120
    output_tokens: int = 30

    def payload(self, body: dict[str, Any], openai: bool) -> dict[str, Any]:
        view = View(body)
        tag = f"{view.turn}_{view.step}"
        if openai:
            calls = [
                {
                    "id": f"call_{tag}_{i}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)},
                }
                for i, c in enumerate(self.calls)
            ]
            message = {"role": "assistant", "content": self.text, "tool_calls": calls}
            return _openai_envelope(body, message, "tool_calls", self.input_tokens, self.output_tokens)
        content: list[dict[str, Any]] = [{"type": "text", "text": self.text}] if self.text else []
        content += [
            {"type": "tool_use", "id": f"toolu_{tag}_{i}", "name": c.name, "input": c.arguments if isinstance(c.arguments, dict) else {}}
            for i, c in enumerate(self.calls)
        ]
        return _anthropic_envelope(body, content, "tool_use", self.input_tokens, self.output_tokens)


@dataclass(frozen=True)
class Say:
    """A final answer in plain text (no tool call)."""

    text: str
    input_tokens: int = 150
    output_tokens: int = 12

    def payload(self, body: dict[str, Any], openai: bool) -> dict[str, Any]:
        if openai:
            return _openai_envelope(body, {"role": "assistant", "content": self.text}, "stop", self.input_tokens, self.output_tokens)
        return _anthropic_envelope(body, [{"type": "text", "text": self.text}], "end_turn", self.input_tokens, self.output_tokens)


@dataclass(frozen=True)
class Result:
    content: str
    is_error: bool


class View:
    """What a scripted agent can see of the conversation in one request (either wire format)."""

    def __init__(self, body: dict[str, Any]):
        self.body = body
        messages = body.get("messages") or []
        self.openai = not isinstance(body.get("system"), str)
        self.user_texts: list[str] = []
        self.step = 0
        self.results: list[Result] = []  # the tool results of the latest tool message(s)
        previous = None
        for m in messages:
            role = m.get("role")
            if role == "user":
                text = self._user_text(m)
                results = self._anthropic_results(m)
                if results:
                    self.results = results
                if text is not None:
                    self.user_texts.append(text)
                    self.step = 0
                    self.results = []
            elif role == "assistant":
                self.step += 1
            elif role == "tool":
                if previous != "tool":  # a new batch of results
                    self.results = []
                text = str(m.get("content") or "")
                self.results.append(Result(text, text.startswith(("Error", "blocked"))))
            previous = role
        self.turn = max(0, len(self.user_texts) - 1)
        self.tools = [t.get("function", t).get("name") for t in body.get("tools") or []]

    @staticmethod
    def _user_text(m: dict[str, Any]) -> str | None:
        content = m.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(texts) if texts else None

    @staticmethod
    def _anthropic_results(m: dict[str, Any]) -> list[Result]:
        content = m.get("content")
        if not isinstance(content, list):
            return []
        return [Result(str(b.get("content") or ""), bool(b.get("is_error"))) for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]

    @property
    def first_user(self) -> str:
        return self.user_texts[0] if self.user_texts else ""

    @property
    def last_result(self) -> Result | None:
        return self.results[-1] if self.results else None

    def result_json(self, index: int = -1) -> Any:
        return json.loads(self.results[index].content)


Action = Act | Say | Refusal | NoToolCall | Callable[[View], Any]


class ScriptedAgent:
    """``ScriptedAgent({"key in the question": [[turn 1 actions], [turn 2 actions]]})``."""

    def __init__(self, scripts: dict[str, Sequence[Sequence[Action]]]):
        self.scripts = scripts
        self.seen: list[View] = []

    def __call__(self, body: dict[str, Any]) -> Any:
        view = View(body)
        self.seen.append(view)
        for key, turns in self.scripts.items():
            if key in view.first_user:
                actions = turns[min(view.turn, len(turns) - 1)]
                action = actions[min(view.step, len(actions) - 1)]
                return action(view) if callable(action) and not hasattr(action, "payload") else action
        return Say(f"no script for {view.first_user[:60]!r}")


def _openai_envelope(body: dict[str, Any], message: dict[str, Any], finish: str, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-agent",
        "object": "chat.completion",
        "created": 1767225600,
        "model": f"{body.get('model', 'model')}-2026-01-01",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
    }


def _anthropic_envelope(body: dict[str, Any], content: list[dict[str, Any]], stop: str, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return {
        "id": "msg_agent",
        "type": "message",
        "role": "assistant",
        "model": f"{body.get('model', 'model')}-2026-01-01",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
    }
