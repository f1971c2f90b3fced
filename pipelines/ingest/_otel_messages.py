"""The messages a model span carries, whatever dialect the instrumentation wrote them in.

One ``Message`` shape (role, texts, tool calls, tool results) from:

- OTel GenAI *parts* (``gen_ai.input.messages`` / ``gen_ai.output.messages``; the JSON schemas in
  semantic-conventions ``docs/gen-ai``): ``{role, parts: [text | tool_call | tool_call_response |
  reasoning | ...]}``; the deprecated ``gen_ai.prompt`` / ``gen_ai.completion`` JSON strings;
- OpenAI Chat Completions messages (``tool_calls``, ``tool_call_id``), LangChain message dumps
  (``type: human | ai | tool``, ``additional_kwargs.tool_calls``, ``tool_calls[{name, args}]``,
  a tool message's ``status``) and Anthropic content blocks (``tool_use`` / ``tool_result``);
- OpenAI Responses API items (``function_call``, ``function_call_output``, ``message``) and a
  whole Responses ``response`` object (its ``output``, ``tools`` and ``instructions``);
- indexed flat attributes: OpenLLMetry's ``gen_ai.prompt.<i>.role|content|tool_call_id|tool_calls.<j>.*``
  and OpenInference's ``llm.input_messages.<i>.message.*`` / ``llm.output_messages.<i>.message.*``.

Quirks of real exports handled as data, never guessed: tool calls serialised as a JSON list of
OpenAI tool calls inside a message's ``content`` (Koog, also under ``role: tool``), and tool
definitions passed as ``role: tool`` messages (Langfuse's LangChain callback) become definitions.
Reasoning parts are not answers; media parts carry no text.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from pipelines.ingest._otel_spans import parse_json_value

__all__ = ["Call", "Message", "Result", "messages_from", "tool_definitions", "unflatten"]

_ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant", "model": "assistant", "tool": "tool", "function": "tool"}
_ROLES.update({"system": "system", "developer": "system"})
_TEXT_PARTS = ("text", "input_text", "output_text")
_MAX_KEY_DEPTH = 16  # segments of an indexed attribute key; deeper ones are not message fields


class Call(msgspec.Struct):
    id: str | None
    name: str
    arguments: Any  # an object, JSON text, or None (not recorded)


class Result(msgspec.Struct):
    id: str | None
    response: Any
    status: str | None = None  # "error" when the message says so (LangChain status, Anthropic is_error)


class Message(msgspec.Struct):
    role: str  # system | user | assistant | tool
    texts: list[str] = msgspec.field(default_factory=list)
    calls: list[Call] = msgspec.field(default_factory=list)
    results: list[Result] = msgspec.field(default_factory=list)
    tools: list[dict[str, Any]] = msgspec.field(default_factory=list)  # tool definitions met as messages


class Extracted(msgspec.Struct):
    messages: list[Message] = msgspec.field(default_factory=list)
    tools: list[dict[str, Any]] = msgspec.field(default_factory=list)
    system: list[str] = msgspec.field(default_factory=list)


def messages_from(value: Any, default_role: str) -> Extracted:
    """The messages of an input or output value (list, ``{messages}``, a Responses ``response``,
    a Chat Completions response, one message, or plain text spoken by ``default_role``)."""
    out = Extracted()
    value = parse_json_value(value)
    if value is None or value == "" or value == []:
        return out
    if isinstance(value, str):
        out.messages.append(Message(role=default_role, texts=[value]))
        return out
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            value = value["messages"]
        elif value.get("object") == "response" or (isinstance(value.get("output"), list) and "id" in value):
            out.tools.extend(d for d in (_tool_def(t) for t in value.get("tools") or []) if d is not None)
            if isinstance(value.get("instructions"), str) and value["instructions"]:
                out.system.append(value["instructions"])
            value = value["output"]
        elif isinstance(value.get("choices"), list):
            value = [c.get("message") for c in value["choices"] if isinstance(c, dict) and isinstance(c.get("message"), dict)]
        else:
            value = [value]
    if not isinstance(value, list):
        return out
    for item in value:
        message = _message(parse_json_value(item), default_role)
        if message is None:
            continue
        if message.role == "system":
            out.system.extend(message.texts)
            continue
        out.tools.extend(message.tools)
        out.messages.append(message)
    return out


def _message(item: Any, default_role: str) -> Message | None:
    if isinstance(item, str):
        return Message(role=default_role, texts=[item]) if item else None
    if not isinstance(item, dict):
        return None
    if set(item) == {"message"} and isinstance(item["message"], dict):  # OpenInference, unflattened
        item = item["message"]
    kind = item.get("type")
    if kind == "function_call":  # Responses API
        return Message("assistant", calls=[Call(_str(item.get("call_id") or item.get("id")), str(item.get("name") or ""), item.get("arguments"))])
    if kind == "function_call_output":
        return Message("tool", results=[Result(_str(item.get("call_id")), parse_json_value(item.get("output")))])
    if kind in ("reasoning", "web_search_call", "file_search_call", "computer_call"):
        return None  # not an answer, not a function call
    role = _ROLES.get(str(item.get("role") or item.get("type") or "").lower())
    if role is None:
        if "text" in item and isinstance(item["text"], str):  # deprecated completion: {text, finish_reason}
            role = "assistant"
        else:
            role = default_role
    message = Message(role)
    if isinstance(item.get("parts"), list):
        _parts(item["parts"], message)
    else:
        _content(item.get("content", item.get("text")), message)
        for call in _openai_calls(item):
            message.calls.append(call)
        if role == "tool" and not message.calls and not message.tools:
            status = item.get("status")
            failed = status == "error" or item.get("is_error") is True
            response = item.get("content")
            if message.texts and not isinstance(parse_json_value(response), (dict, list)):
                response = "\n".join(message.texts)
            message.texts = []
            message.results.append(Result(_str(item.get("tool_call_id") or item.get("id")), parse_json_value(response), "error" if failed else None))
    if message.calls and role == "tool":
        message.role = "assistant"  # calls serialised into a tool message (Koog): the model's calls
    return message


def _str(value: Any) -> str | None:
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
        return str(value)
    return None


def _parts(parts: list[Any], message: Message) -> None:
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            message.texts.append(part["content"])
        elif kind == "tool_call" and isinstance(part.get("name"), str):
            message.calls.append(Call(_str(part.get("id")), part["name"], part.get("arguments")))
        elif kind == "tool_call_response":
            message.results.append(Result(_str(part.get("id")), parse_json_value(part.get("response", part.get("result")))))


def _content(content: Any, message: Message) -> None:
    """Text, content parts (OpenAI / Anthropic / Responses), or serialised tool calls / definitions."""
    if isinstance(content, str):
        parsed = parse_json_value(content) if content.lstrip()[:1] in "[{" else None
        if isinstance(parsed, list) and parsed and all(isinstance(c, dict) and _openai_call(c) for c in parsed):
            message.calls.extend(c for c in (_openai_call(c) for c in parsed) if c)  # tool calls as content (Koog)
        elif message.role == "tool" and _tool_def(parsed):
            message.tools.append(_tool_def(parsed) or {})
        elif content:
            message.texts.append(content)
        return
    if isinstance(content, dict):
        definition = _tool_def(content)
        if definition and message.role == "tool":
            message.tools.append(definition)  # a tool definition passed as a tool message (LangChain)
            return
        content = [content]
    if not isinstance(content, list):
        return
    for part in content:
        if isinstance(part, str):
            message.texts.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
                message.texts.append(part["text"])
            elif kind == "text" and isinstance(part.get("content"), str):
                message.texts.append(part["content"])
            elif kind == "tool_use" and isinstance(part.get("name"), str):  # Anthropic
                message.calls.append(Call(_str(part.get("id")), part["name"], part.get("input")))
            elif kind == "tool_result":
                result = part.get("content")
                if isinstance(result, list):
                    result = "\n".join(p.get("text", "") for p in result if isinstance(p, dict) and isinstance(p.get("text"), str))
                message.results.append(Result(_str(part.get("tool_use_id")), parse_json_value(result), "error" if part.get("is_error") else None))
            elif _openai_call(part):
                message.calls.append(_openai_call(part) or Call(None, "", None))


def _openai_call(obj: dict[str, Any]) -> Call | None:
    """OpenAI ``{id, type: function, function: {name, arguments}}`` or LangChain ``{name, args, id}``."""
    function = obj.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return Call(_str(obj.get("id")), function["name"], function.get("arguments"))
    if obj.get("type") == "tool_call" and isinstance(obj.get("name"), str):
        return Call(_str(obj.get("id")), obj["name"], obj.get("args", obj.get("arguments")))
    return None


def _openai_calls(item: dict[str, Any]) -> list[Call]:
    raw = item.get("tool_calls")
    if not raw and isinstance(item.get("additional_kwargs"), dict):
        raw = item["additional_kwargs"].get("tool_calls")
    calls = []
    for entry in raw or [] if isinstance(raw, list) else []:
        if isinstance(entry, dict):
            call = _openai_call(entry)
            if call is None and isinstance(entry.get("name"), str):  # flattened OpenLLMetry form {id, name, arguments}
                call = Call(_str(entry.get("id")), entry["name"], entry.get("arguments"))
            if call is not None:
                calls.append(call)
    return calls


# ---------------------------------------------------------------- tool definitions


def _tool_def(obj: Any) -> dict[str, Any] | None:
    """``{type: function, name, description?, parameters?}`` (OTel), the wrapped OpenAI form, or
    OpenLLMetry's ``{name, description, parameters}``, as a ToolSpec-shaped dict; else None."""
    obj = parse_json_value(obj)
    if not isinstance(obj, dict):
        return None
    inner: dict[str, Any] = obj["function"] if isinstance(obj.get("function"), dict) else obj
    name = inner.get("name")
    if not isinstance(name, str) or not name or not (obj.get("type") == "function" or "parameters" in inner or "description" in inner):
        return None
    spec: dict[str, Any] = {"name": name, "description": inner.get("description") or ""}
    parameters = parse_json_value(inner.get("parameters"))
    if isinstance(parameters, dict):
        spec["parameters"] = parameters
    return spec


def tool_definitions(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    """Tool definitions a span declares: ``gen_ai.tool.definitions``, OpenInference
    ``llm.tools.<i>.tool.json_schema``, OpenLLMetry ``llm.request.functions.<i>.*``."""
    found: list[dict[str, Any]] = []
    declared = parse_json_value(attributes.get("gen_ai.tool.definitions"))
    for entry in declared if isinstance(declared, list) else []:
        spec = _tool_def(entry)
        if spec:
            found.append(spec)
    for entry in unflatten(attributes, "llm.tools"):
        schema = entry.get("tool", {}).get("json_schema") if isinstance(entry.get("tool"), dict) else None
        spec = _tool_def(schema)
        if spec:
            found.append(spec)
    for entry in unflatten(attributes, "llm.request.functions"):
        spec = _tool_def({"type": "function", **entry})
        if spec:
            found.append(spec)
    return found


# ---------------------------------------------------------------- indexed flat attributes


def unflatten(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.<i>.a.b = v`` attributes as a list of nested objects (index order; numeric path
    segments below become lists)."""
    head = prefix + "."
    tree: dict[Any, Any] = {}
    for key, value in attributes.items():
        if not key.startswith(head):
            continue
        parts = key[len(head) :].split(".")
        if not parts[0].isdigit() or len(parts) > _MAX_KEY_DEPTH:
            continue
        node = tree
        for part in parts[:-1]:
            step: Any = int(part) if part.isdigit() else part
            child = node.get(step)
            if not isinstance(child, dict):
                child = node[step] = {}
            node = child
        node[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value
    items = _listify(tree)
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(isinstance(k, int) for k in node):
        return [_listify(node[k]) for k in sorted(node)]
    return {k: _listify(v) for k, v in node.items()}


def indexed_messages(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenLLMetry (``gen_ai.prompt``) or OpenInference (``llm.input_messages``) indexed messages
    as message objects ``_message`` reads."""
    out = []
    for entry in unflatten(attributes, prefix):
        message = dict(entry["message"] if isinstance(entry.get("message"), dict) else entry)
        contents = message.pop("contents", None)
        if isinstance(contents, list) and "content" not in message:
            message["content"] = [c.get("message_content", c) for c in contents if isinstance(c, dict)]
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            message["tool_calls"] = [c.get("tool_call", c) if isinstance(c, dict) else c for c in calls]
        out.append(message)
    return out


def json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
