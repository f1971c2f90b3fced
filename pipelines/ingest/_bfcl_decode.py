"""Decoding a BFCL ``result`` into the function calls the model proposed, without executing anything.

BFCL's handlers write ``result`` in one of these shapes, which we accept whatever the handler:

- a Python call list, as prompt-mode models answer: ``"[f(a=1, b='x'), g.h(c=[1, 2])]"`` (BFCL's
  ``default_decode_ast_prompting``: strip backticks / newlines / spaces, add missing brackets,
  strip wrapping single quotes, ``ast.parse``; a ``<TOOLCALL>...</TOOLCALL>`` tag is unwrapped);
- JSON text of calls, as OSS function-calling handlers write it (xLAM): ``[{"name", "arguments"}]``,
  one such object, ``{name: {args}}`` objects, or several objects separated by ``;``;
- a list of ``{name: args}`` objects (API function-calling handlers; args an object or JSON text),
  of ``{"name", "arguments"}`` objects, or of call strings.

Python is parsed with ``ast`` and never evaluated. Values follow BFCL's ``resolve_ast_by_type``:
literals as themselves, tuples and sets as lists, a bare name as its text (``unit=celsius`` ->
``"celsius"``), a call with keywords as a nested ``{name: {args}}``; where BFCL would ``eval`` an
arithmetic expression we compute it only for literal numbers (bounded), and any other expression
(a lambda, a subscript, an attribute, a call without keywords) is kept as its source text.
Positional arguments are not bound to parameter names (BFCL drops them too): they are reported.
Non-string dict keys become strings (arguments are JSON).

A result that is not a call structure is the model's failure, reported as ``Decoded.error`` (the
caller grades a trajectory without calls). Nothing is cleaned up beyond what BFCL's decoder does:
text after the call list, even a chat-template token a serving stack left (``<end_of_turn>``), makes
the result unparseable as it does for BFCL; the error then says that the list would parse without
it, so a serving problem is visible without being graded as a success. A call whose name is known
but whose arguments cannot be read becomes a ``DecodedCall`` with ``error`` set (a failed step).
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from typing import Any

import msgspec

__all__ = ["Decoded", "DecodedCall", "decode_result"]

# Chat-template control tokens a serving stack sometimes leaves at the end of the text
# (``<end_of_turn>``, ``<|eot_id|>``, ``<|im_end|>``, ``</s>``): named in the error, never removed.
_TRAILING_SPECIAL = re.compile(r"(?:\s*(?:<\|[A-Za-z0-9_]+\|>|<(?:end_of_turn|eos|/s|\|endoftext\|)>))+\s*\Z")
_TOOLCALL_TAG = re.compile(r"<TOOLCALL>(.*?)</TOOLCALL>", re.DOTALL)
_MAX_TEXT = 1 << 20  # a call list longer than this is not decoded (ast on huge hostile input)
_MAX_COLLECTION = 100_000  # items produced by +/- on literal strings or lists


class DecodedCall(msgspec.Struct):
    name: str
    arguments: dict[str, Any]
    error: str | None = None  # the call could not be read: a failed step
    positional: list[str] = msgspec.field(default_factory=list)  # source text of positional arguments (dropped)


class Decoded(msgspec.Struct):
    """What the model proposed: its calls, or why the result is not a call structure."""

    calls: list[DecodedCall] = msgspec.field(default_factory=list)
    error: str | None = None  # the result is not a call structure: the model's failure
    text: str | None = None  # the model's text when the result is text
    syntax: str | None = None  # "python", "json" or "structured"


class _Unreadable(Exception):
    """The text is not a call structure in this syntax."""


# ---------------------------------------------------------------- entry point


def decode_result(result: Any) -> Decoded:
    """The calls of one BFCL ``result`` value (any of the shapes in the module doc)."""
    if isinstance(result, str):
        return _decode_text(result)
    if isinstance(result, dict):
        result = [result]
    if isinstance(result, list):
        return _decode_list(result)
    return Decoded(error=f"result is {type(result).__name__}, not text or a list of calls")


def _decode_list(items: list[Any]) -> Decoded:
    out = Decoded(syntax="structured")
    for i, item in enumerate(items):
        if isinstance(item, str):
            sub = _decode_text(item)
            if sub.error is not None:
                return Decoded(error=f"result[{i}]: {sub.error}", text=item)
            out.calls.extend(sub.calls)
        elif isinstance(item, dict):
            try:
                out.calls.append(_call_from_object(item))
            except _Unreadable as err:
                return Decoded(error=f"result[{i}]: {err}")
        elif isinstance(item, list):
            return Decoded(error=f"result[{i}] is a list: a multi-turn result (list per turn) in a single-turn file")
        else:
            return Decoded(error=f"result[{i}] is {type(item).__name__}, not a call")
    return out


def _decode_text(raw: str) -> Decoded:
    text = raw
    tagged = _TOOLCALL_TAG.search(text)
    if tagged:
        text = tagged.group(1)
    if len(text) > _MAX_TEXT:
        return Decoded(error=f"result text of {len(text)} characters is too long to decode", text=raw)
    errors: list[str] = []
    for syntax, decoder in (("json", _from_json), ("python", _from_python), ("json", _from_json_sequence)):
        try:
            calls = decoder(text)
        except _Unreadable as err:
            errors.append(f"{syntax}: {err}")
            continue
        return Decoded(calls=calls, syntax=syntax, text=raw)
    error = "not a call list (" + "; ".join(dict.fromkeys(errors)) + ")"
    trailing = _TRAILING_SPECIAL.search(text)
    if trailing and not _decode_text(text[: trailing.start()]).error:
        error += f"; it would parse without the trailing {trailing.group().strip()!r} (a chat-template token the serving stack left?)"
    return Decoded(error=error, text=raw)


# ---------------------------------------------------------------- JSON


def _from_json(text: str) -> list[DecodedCall]:
    try:
        value = json.loads(text)
    except ValueError as err:
        raise _Unreadable(f"not JSON ({err})") from None
    except RecursionError:
        raise _Unreadable("JSON nested too deeply") from None
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise _Unreadable(f"JSON {type(value).__name__}, not calls")
    if not all(isinstance(v, dict) for v in value):
        raise _Unreadable("a JSON list whose items are not all objects")
    return [_call_from_object(v) for v in value]


def _from_json_sequence(text: str) -> list[DecodedCall]:
    """xLAM's fallback: JSON objects separated by ``;``."""
    parts = [p.strip() for p in text.split(";")]
    if len(parts) < 2:
        raise _Unreadable("not ';'-separated JSON objects")
    calls: list[DecodedCall] = []
    for part in parts:
        if part:
            calls.extend(_from_json(part))
    return calls


def _call_from_object(obj: dict[str, Any]) -> DecodedCall:
    """``{"name", "arguments" | "parameters"}`` or ``{name: args}`` (args an object or JSON text)."""
    if "name" in obj and isinstance(obj["name"], str) and ("arguments" in obj or "parameters" in obj or len(obj) == 1):
        raw = obj.get("arguments", obj.get("parameters"))
        return _with_arguments(obj["name"], raw)
    if isinstance(obj.get("function"), dict) and isinstance(obj["function"].get("name"), str):  # OpenAI tool_call
        return _with_arguments(obj["function"]["name"], obj["function"].get("arguments"))
    if len(obj) == 1:
        ((name, raw),) = obj.items()
        if isinstance(raw, (dict, str)) or raw is None:
            return _with_arguments(name, raw)
    raise _Unreadable(f"an object with keys {sorted(obj)[:6]} is not a call")


def _with_arguments(name: str, raw: Any) -> DecodedCall:
    if not name:
        raise _Unreadable("a call with an empty name")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return DecodedCall(name, {})
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as err:
            return DecodedCall(name, {}, error=f"unparseable arguments: {err}: {raw[:200]!r}")
    if not isinstance(raw, dict):
        return DecodedCall(name, {}, error=f"arguments are {type(raw).__name__}, not an object")
    return DecodedCall(name, raw)


# ---------------------------------------------------------------- Python call syntax


def _from_python(text: str) -> list[DecodedCall]:
    """BFCL's ``default_decode_ast_prompting`` + ``ast_parse`` for Python, without evaluation."""
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    text = text.strip().strip("'")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise _Unreadable(f"invalid Python call syntax ({_brief(err)})") from None
    body = tree.body
    if isinstance(body, ast.Call):
        elements: list[ast.expr] = [body]
    elif isinstance(body, (ast.List, ast.Tuple, ast.Set)):
        elements = list(body.elts)
    else:
        raise _Unreadable(f"a Python {type(body).__name__.lower()}, not a list of calls")
    calls = []
    for i, elem in enumerate(elements):
        if not isinstance(elem, ast.Call):
            raise _Unreadable(f"element {i} is a {type(elem).__name__.lower()}, not a function call")
        calls.append(_python_call(elem))
    return calls


def _brief(err: BaseException) -> str:
    if isinstance(err, SyntaxError):
        return f"{err.msg} at column {err.offset}"
    if isinstance(err, RecursionError):
        return "nested too deeply"
    return str(err)[:200] or type(err).__name__


def _dotted_name(func: ast.expr) -> str | None:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(func.id)
    return ".".join(reversed(parts))


def _python_call(node: ast.Call) -> DecodedCall:
    name = _dotted_name(node.func)
    if name is None:
        raise _Unreadable(f"cannot name the function called in {_source(node)!r}")
    positional = [_source(a) for a in node.args]
    arguments: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return DecodedCall(name, {}, error=f"keyword unpacking **{_source(kw.value)} is not a literal argument list", positional=positional)
        try:
            arguments[kw.arg] = _value(kw.value)
        except RecursionError:
            return DecodedCall(name, {}, error=f"argument {kw.arg!r} is nested too deeply", positional=positional)
    return DecodedCall(name, arguments, positional=positional)


def _source(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError):  # pragma: no cover - unparse of a parsed tree
        return f"<{type(node).__name__}>"


_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _value(node: ast.expr) -> Any:
    """One argument value, as BFCL's ``resolve_ast_by_type`` reads it (see the module doc)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if value is Ellipsis:
            return "..."
        if isinstance(value, (bytes, complex)):
            return _source(node)
        return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _value(node.operand)
        if _is_number(operand):
            return -operand if isinstance(node.op, ast.USub) else operand
        return _source(node)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):  # {**other}
            return _source(node)
        return {_key(_value(k)): _value(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call) and node.keywords and _dotted_name(node.func) is not None:
        nested = _python_call(node)
        if nested.error is None and not nested.positional:
            return {nested.name: nested.arguments}
        return _source(node)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return _arithmetic(node)
    return _source(node)


def _key(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value) if value is None or isinstance(value, (bool, int, float)) else str(value)


def _arithmetic(node: ast.BinOp) -> Any:
    """Literal arithmetic BFCL would ``eval`` (``2*3``, ``1/3``, ``'a' + 'b'``), computed only
    within bounds; anything else keeps its source text."""
    left, right = _value(node.left), _value(node.right)
    op = _ARITHMETIC[type(node.op)]
    if _is_number(left) and _is_number(right):
        if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
            return _source(node)
        try:
            result = op(left, right)
        except (ArithmeticError, ValueError):
            return _source(node)
        if isinstance(result, complex) or (isinstance(result, float) and not math.isfinite(result)):
            return _source(node)
        return result
    same_kind = type(left) is type(right) and isinstance(left, (str, list))
    if isinstance(node.op, ast.Add) and same_kind and len(left) + len(right) <= _MAX_COLLECTION:
        return left + right
    return _source(node)
