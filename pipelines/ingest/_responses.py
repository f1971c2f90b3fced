"""OpenAI Responses API items: what the Agents SDK's ``result.to_input_list()`` returns and what a
Responses API call takes as ``input`` and gives back as ``output``.

Read bare (a JSON array of items per line, or a file holding one array) or wrapped:
``{task_id?, trajectory_id?, agent?, usage?, items | messages | input (+ output): [...]}``. Built
from the ``ResponseInputItemParam`` union of the ``openai`` package (``types/responses``):

- ``{role, content}`` messages (``type: "message"`` or none): a ``user`` message with text
  starts a turn; ``system`` / ``developer`` go to ``metadata["system"]``; an ``assistant``
  message's ``output_text`` (or ``input_text``, or a plain string) and ``refusal`` parts are what
  the agent said. Media parts carry no text.
- ``function_call {name, arguments, call_id}``: a step (arguments that are not a JSON object are
  the agent's error, as in the Chat Completions reader); ``function_call_output {call_id,
  output}`` its result (a string, or parts whose text is joined; JSON text is parsed). The
  Agents SDK's default tool-failure text (``default_tool_error_function``: "An error occurred
  while running the tool.") marks the call failed; otherwise the ``Step`` model infers errors.
- ``mcp_call {id, name, arguments, output, error}``: a step and its result in one item.
- Rounds: consecutive model items (assistant messages, calls, reasoning) are one model response:
  its calls share a round. A response without calls is an answer: the last one's text is the
  turn's final answer; text beside calls is kept in ``agent_messages`` only.
- ``reasoning`` (never said to the user), ``compaction``, ``item_reference``, MCP listings and
  approvals carry nothing graded and are skipped. Hosted-tool items (web / file search, computer,
  code interpreter, shell, image generation, custom tools...) are ``unsupported``: their calls
  have no function name and arguments to grade.
- A transcript that names no task is matched to the task whose question is its first user
  message (``ItemContext.task_for_query``). Unknown top-level keys of a wrapped transcript go to
  ``metadata``.
"""

from __future__ import annotations

from typing import Any

from judge import Trajectory, parse_json_text
from pipelines.ingest._base import ItemContext, ItemError, TrajectoryFormat, expect, guarded, one_of, short
from pipelines.ingest._chat import TurnBuilder, common_ids, extra_metadata, finish, path_of, token_usage, transcript
from pipelines.ingest._openai import parse_arguments

_KEYS = ("items", "messages", "input")
_KNOWN = {"task_id", "trajectory_id", "agent", "usage", "items", "messages", "input", "output", "metadata"}
_FORM = '{"task_id": ..., "items": [...]}'
_ROLES = {"user", "assistant", "system", "developer"}
_TEXT_PARTS = ("input_text", "output_text", "text")
_SKIPPED = {
    "reasoning",
    "compaction",
    "compaction_trigger",
    "item_reference",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "additional_tools",
}
_HOSTED = {
    "file_search_call",
    "web_search_call",
    "computer_call",
    "computer_call_output",
    "code_interpreter_call",
    "image_generation_call",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "tool_search_call",
    "tool_search_output",
    "program",
    "program_output",
}
_ITEM_TYPES = {"message", "function_call", "function_call_output", "mcp_call"} | _SKIPPED | _HOSTED
# the Agents SDK's default_tool_error_function (agents/tool.py): what a failed function tool returns
_SDK_TOOL_ERROR = "An error occurred while running the tool."


def _is_item(value: Any) -> bool:
    """A Responses item beyond doubt: a known item type, or a message with typed text parts."""
    if not isinstance(value, dict):
        return False
    if one_of(value.get("type"), _ITEM_TYPES):
        return value.get("type") != "message" or one_of(value.get("role"), _ROLES)
    content = value.get("content")
    return one_of(value.get("role"), _ROLES) and isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in _TEXT_PARTS[:2] for p in content)


def _easy_message(value: Any) -> bool:
    """``{role, content: "text"}``: read the same by the Responses and Chat Completions readers."""
    return isinstance(value, dict) and one_of(value.get("role"), _ROLES) and isinstance(value.get("content"), str) and set(value) <= {"role", "content", "type"}


def _sniff(item: dict[str, Any]) -> bool:
    for key in _KEYS:
        messages = item.get(key)
        if isinstance(messages, list):
            return any(_is_item(m) for m in messages)
    return False


def _sniff_bare(messages: list[Any]) -> bool:
    return bool(messages) and (any(_is_item(m) for m in messages) or all(_easy_message(m) for m in messages))


def _text(content: Any, path: str) -> str | None:
    """The text of a message's content: a string, or its text and refusal parts joined."""
    if content is None or isinstance(content, str):
        return content
    expect(content, list, path, "message content")
    texts = []
    for i, part in enumerate(content):
        expect(part, dict, f"{path}[{i}]", "a content part")
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            texts.append(expect(part.get("text"), str, f"{path}[{i}].text", "a text part's text"))
        elif kind == "refusal":
            texts.append(expect(part.get("refusal"), str, f"{path}[{i}].refusal", "a refusal part's refusal"))
    return "\n".join(texts) if texts else None


def _output(value: Any, path: str) -> Any:
    if value is None or isinstance(value, str):
        return parse_json_text(value)
    if isinstance(value, list):
        text = _text(value, path)
        return parse_json_text(text) if text is not None else value  # only media parts: kept as they are
    return value


class _Responses:
    """The model response being read: consecutive model items."""

    def __init__(self, builder: TurnBuilder):
        self.builder = builder
        self.open = False
        self.texts: list[str] = []
        self.calls = 0

    def model_item(self) -> None:
        if not self.open:
            self.builder.begin_message()
            self.open, self.texts, self.calls = True, [], 0

    def close(self) -> None:
        if self.open and self.texts and not self.calls:
            self.builder.set_answer("\n".join(self.texts))
        self.open = False


@guarded
def _convert(item: Any, ctx: ItemContext) -> Trajectory:
    items, prefix, wrapper = transcript(item, _KEYS)
    if prefix == "input" and isinstance(wrapper.get("output"), list):
        items = [*items, *wrapper["output"]]
    if not items:
        raise ItemError("invalid_field", "the transcript holds no items", prefix or "<root>")
    builder = TurnBuilder(ctx)
    response = _Responses(builder)
    system: list[str] = []
    n_input = len(expect(wrapper.get("input"), list, "input", "input")) if prefix == "input" else len(items)
    for i, entry in enumerate(items):
        path = path_of(prefix, i) if i < n_input else path_of("output", i - n_input)
        expect(entry, dict, path, "an item")
        kind = entry.get("type", "message")
        if not isinstance(kind, str):
            raise ItemError("invalid_field", f"an item's type must be a string, got {short(kind)}", f"{path}.type")
        if kind == "message":
            role = entry.get("role")
            if not one_of(role, _ROLES):
                raise ItemError("invalid_field", f"unknown role {role!r}; expected one of {sorted(_ROLES)}", f"{path}.role")
            text = _text(entry.get("content"), f"{path}.content")
            if role == "assistant":
                response.model_item()
                if text:
                    builder.say(text)
                    response.texts.append(text)
                continue
            response.close()
            if role == "user":
                if text is not None or entry.get("content"):
                    builder.start(text, f"{path}.content")
            elif text:
                system.append(text)
        elif kind in ("function_call", "mcp_call"):
            response.model_item()
            response.calls += 1
            name = entry.get("name")
            article = "a" if kind == "function_call" else "an"
            if not isinstance(name, str) or not name:
                raise ItemError("invalid_field", f"{article} {kind} needs a name, got {short(name)}", f"{path}.name")
            # a function_call's result comes in a later function_call_output; an mcp_call carries its own
            id_key, what = ("call_id", "call_id") if kind == "function_call" else ("id", "an mcp_call's id")
            call_id = expect(entry.get(id_key), str, f"{path}.{id_key}", what)
            arguments, error = parse_arguments(entry.get("arguments"))
            builder.add_call(name, arguments, call_id, path, error)
            failure = entry.get("error")
            if kind == "mcp_call" and (failure is not None or "output" in entry):
                message = failure if isinstance(failure, str) or failure is None else short(failure, 500)
                builder.add_result(call_id, _output(entry.get("output"), f"{path}.output"), "error" if failure else None, path, "id", error=message)
        elif kind == "function_call_output":
            response.close()
            call_id = expect(entry.get("call_id"), str, f"{path}.call_id", "call_id")
            result = _output(entry.get("output"), f"{path}.output")
            failed = isinstance(result, str) and result.startswith(_SDK_TOOL_ERROR)
            builder.add_result(call_id, result, "error" if failed else None, path, "call_id", error=result if failed else None)
        elif kind in _SKIPPED:
            if kind == "reasoning":
                response.model_item()
        elif kind in _HOSTED:
            raise ItemError("unsupported", f"a {kind!r} item (a hosted tool) is not supported: it has no function name and arguments to grade", f"{path}.type")
        else:
            raise ItemError("unsupported", f"unknown item type {kind!r}", f"{path}.type")
    response.close()
    meta = extra_metadata(wrapper, _KNOWN)
    if system:
        meta.setdefault("system", "\n".join(system))
    usage = token_usage(wrapper, (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"))) if wrapper else None
    return finish(builder, wrapper, ctx, usage, meta, _FORM)


TRAJECTORIES = TrajectoryFormat(
    name="responses",
    description="OpenAI Responses API items (Agents SDK result.to_input_list()): a bare list, or {task_id, items: [...]}",
    sniff=_sniff,
    ids=common_ids,
    convert=_convert,
    bare=_sniff_bare,
)
