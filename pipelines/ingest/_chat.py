"""Helpers shared by the chat-transcript formats (OpenAI Chat Completions, Anthropic Messages, the
OpenAI Responses API, LangChain, pydantic-ai).

Both formats build turns the same way: a user message with text starts a turn, tool calls become
steps whose results arrive later (matched by call id), and the last assistant text without tool
calls is the turn's final answer. ``TurnBuilder`` holds that logic once.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from judge import Step, Trajectory
from pipelines.ingest._base import ItemContext, ItemError, as_id, expect, validation_error


class TurnBuilder:
    """Builds the turns of a chat transcript, pairing tool results with the calls they answer.

    Pairing rules (real logs reuse ids): a result answers the most recent *unanswered* call with its
    id; reusing an id after its result arrived is normal. A result while two or more calls with that
    id are unanswered cannot be paired (an input error naming both); a result answering no pending
    call is kept in ``metadata["orphan_results"]`` with a warning. A call that never gets a result
    keeps status ``unknown`` (the call was made; what came back was not recorded).
    """

    def __init__(self, ctx: ItemContext | None = None) -> None:
        self.ctx = ctx
        self.turns: list[dict[str, Any]] = []
        self._pending: dict[str, list[tuple[dict[str, Any], str]]] = {}  # call id -> unanswered calls (step, path)
        self.orphans: list[dict[str, Any]] = []
        self._rounds = 0  # model messages that issued calls so far (one message = one round)
        self._round: int | None = None  # the round of the assistant message being read
        self.first_query_path: str | None = None

    def begin_message(self) -> None:
        """A new assistant message starts: its calls (if any) form the next round."""
        self._round = None

    @property
    def current(self) -> dict[str, Any]:
        if not self.turns:  # the agent spoke before any user message: an implicit first turn
            self.start(None)
        return self.turns[-1]

    def start(self, query: str | None, path: str | None = None) -> None:
        """A user message starts a turn (``path``: where it is, for an error about matching it)."""
        if query is not None and self.first_query_path is None:
            self.first_query_path = path
        self.turns.append({"turn_id": str(len(self.turns) + 1), "query": query, "steps": [], "final_answer": None, "agent_messages": []})

    def add_call(self, name: str, arguments: dict[str, Any], call_id: str | None, path: str, error: str | None = None) -> None:
        if self._round is None:
            self._round = self._rounds
            self._rounds += 1
        step: dict[str, Any] = {"name": name, "arguments": arguments, "call_id": call_id, "round": self._round}
        if error is not None:
            step["status"] = "error"
            step["error"] = error
        if call_id is not None:
            self._pending.setdefault(call_id, []).append((step, path))
        self.current["steps"].append(step)

    def add_result(self, call_id: str, result: Any, status: Any, path: str, id_field: str, error: str | None = None) -> None:
        """``error``: the tool's own error message, when the format records one apart from the result."""
        waiting = self._pending.get(call_id) or []
        if len(waiting) > 1:
            where = ", ".join(p for _, p in waiting)
            raise ItemError(
                "invalid_field",
                f"a tool result for call id {call_id!r} while {len(waiting)} calls with that id are unanswered ({where}): cannot tell which it answers",
                f"{path}.{id_field}",
            )
        if not waiting:
            self.orphans.append({"call_id": call_id, "result": result, "at": path, **({"error": error} if error is not None else {})})
            if self.ctx is not None:
                self.ctx.warn(
                    "orphan_result", f"a tool result for call id {call_id!r} answers no pending call; kept in metadata.orphan_results", f"{path}.{id_field}"
                )
            return
        step, _ = waiting.pop()
        step["result"] = result
        if step.get("status") == "error":  # unparseable arguments: the call failed whatever came back
            return
        if status is not None:
            step["status"] = status
            step["_status_path"] = f"{path}.status"
        if error is not None:
            step["error"] = error

    def say(self, text: str) -> None:
        """The agent told the user something (counts for required content)."""
        self.current["agent_messages"].append(text)

    def set_answer(self, answer: Any) -> None:
        self.current["final_answer"] = answer

    def build(self, item: dict[str, Any], ctx: ItemContext, usage: dict[str, Any] | None, extra_metadata: dict[str, Any]) -> Trajectory:
        if "task_id" not in item:
            raise ItemError("invalid_field", "Field required: the id of the task this transcript attempts", "task_id")
        paths: list[str | None] = []  # each step's status path, in order
        for turn in self.turns:
            for step in turn["steps"]:
                paths.append(step.pop("_status_path", None))
                if "result" not in step and step.get("status") != "error":
                    step["status"] = "unknown"
        if self.orphans:
            extra_metadata = {**extra_metadata, "orphan_results": self.orphans}
        data: dict[str, Any] = {
            "task_id": item.get("task_id"),
            "trajectory_id": item.get("trajectory_id", ctx.default_trajectory_id),
            "agent": item.get("agent"),
            "turns": [{**turn, "steps": list(turn["steps"])} for turn in self.turns],
            "token_usage": usage,
            "metadata": extra_metadata,
        }
        try:  # steps and trajectory in one validation: the same models as step by step
            return Trajectory.model_validate(data)
        except ValidationError:
            pass
        # something is invalid: step by step, as the error must name it (a step's own error first)
        steps = iter(paths)
        for turn in data["turns"]:
            validated = []
            for step in turn["steps"]:
                status_path = next(steps)
                try:
                    validated.append(Step.model_validate(step))
                except ValidationError as err:
                    raise validation_error(err, prefix=status_path or "", note="tool result status", strip=99 if status_path else 0) from None
            turn["steps"] = validated
        try:
            return Trajectory.model_validate(data)
        except ValidationError as err:
            raise validation_error(err, note="converted trajectory is invalid") from None


def text_of(content: Any, path: str, text_types: tuple[str, ...] = ("text",)) -> str | None:
    """Plain text of a message content: a string, or the text parts of a list joined by newlines."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    expect(content, list, path, "message content")
    texts = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        expect(part, dict, f"{path}[{i}]", "a content part")
        if part.get("type") in text_types:
            texts.append(expect(part.get("text"), str, f"{path}[{i}].text", "a text part's text"))
    return "\n".join(texts) if texts else None


def common_ids(item: dict[str, Any], default: str) -> tuple[str | None, str | None]:
    tid = as_id(item.get("trajectory_id")) if "trajectory_id" in item else default
    return as_id(item.get("task_id")), tid


def extra_metadata(item: dict[str, Any], known: set[str]) -> dict[str, Any]:
    """Unknown top-level keys are kept in the trajectory's metadata, never dropped."""
    meta = dict(item.get("metadata") or {}) if isinstance(item.get("metadata"), dict) else {}
    if "metadata" in item and not isinstance(item["metadata"], dict):
        raise ItemError("invalid_field", "metadata must be an object", "metadata")
    for key, value in item.items():
        if key not in known and key != "metadata":
            meta.setdefault(key, value)
    return meta


def token_usage(item: dict[str, Any], names: tuple[tuple[str, str], ...]) -> dict[str, Any] | None:
    """The item's ``usage`` object as TokenUsage fields; ``names`` maps the format's keys to ours
    (OpenAI: prompt_tokens -> input_tokens; Anthropic: input_tokens -> input_tokens)."""
    usage = item.get("usage")
    if usage is None:
        return None
    expect(usage, dict, "usage", "usage")
    return {dst: expect(usage[src], int, f"usage.{src}", src) for src, dst in names if usage.get(src) is not None}


def transcript(item: Any, keys: tuple[str, ...]) -> tuple[list[Any], str, dict[str, Any]]:
    """(messages, path of the list, the wrapping object): a bare list is its own messages (their
    paths are ``[i]``); a wrapped transcript holds them under the first of ``keys`` it has."""
    if isinstance(item, list):
        return item, "", {}
    for key in keys:
        if key in item:
            return expect(item[key], list, key, key), key, item
    raise ItemError("invalid_field", f"Field required: the transcript's messages ({' or '.join(keys)})", keys[0])


def finish(builder: TurnBuilder, wrapper: dict[str, Any], ctx: ItemContext, usage: dict[str, Any] | None, meta: dict[str, Any], form: str) -> Trajectory:
    """The trajectory; a transcript that names no task (bare, or wrapped without ``task_id``) is
    the task whose first question is its first user message (``ItemContext.task_for_query``)."""
    if "task_id" not in wrapper:
        query = next((t["query"] for t in builder.turns if t["query"] is not None), None)
        wrapper = {**wrapper, "task_id": ctx.task_for_query(query, builder.first_query_path or "<root>", form)}
    return builder.build(wrapper, ctx, usage, meta)


def path_of(prefix: str, index: int) -> str:
    return f"{prefix}[{index}]"
