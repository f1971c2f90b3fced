"""Argument values written as source text of another language: BFCL's Java and JavaScript categories.

BFCL asks a model to pass every Java / JavaScript argument as a *string holding the language's
literal* ("true", "42L", "new int[]{1, 2}", ``new HashMap<String, String>() {{ put("k", "v"); }}``,
"[1, 2]", "{'k': 1}") and reads that string by the parameter's declared type before it compares
the value with the possible answers (``java_type_converter`` / ``js_type_converter`` of its AST
checker). ``read_literal`` reads it the same way, so that the same strings pass and fail:

- a value that is not a string is a type error (BFCL's ``type_error:java`` / ``type_error:js``);
- a string that does not read as its declared type stays that string (BFCL's fallback): it then
  fails the comparison unless the possible answer is that very text (a "variable" such as
  ``ResultSet.TYPE_SCROLL_INSENSITIVE`` for an ``integer`` parameter);
- Java: ``byte`` / ``short`` / ``integer`` are digits; ``long`` needs its ``L``; ``float`` its
  ``f``; ``double`` digits with an optional fraction and exponent; ``boolean`` ``true`` / ``false``;
  ``char``, ``String`` and ``any`` stay text as written; ``Array`` is ``new T[]{a, b}``,
  ``ArrayList`` is ``new ArrayList<T>(Arrays.asList(a, b))``, ``new ArrayList<T>() {{ add(a); }}``
  or ``new ArrayList<>()``; ``HashMap`` is ``new HashMap<K, V>() {{ put("k", v); }}`` or empty;
- JavaScript: ``String`` loses its surrounding quotes; ``integer`` digits; ``float`` digits with an
  optional fraction; ``Bigint`` digits and ``n``; ``Boolean`` ``true`` / ``false``; ``array``
  ``[a, b]``, ``[[a], [b]]`` or ``new Array(a, b)``; ``dict`` ``{k: v, ...}``; ``any`` stays text;
- elements of a collection are read by the declared item type, or, without one, as a literal of
  their own shape (boolean, quoted text, number, else the text).

BFCL's readers are regular expressions, not parsers, and their quirks are kept on purpose because
they are the leaderboard's verdicts: a Java ``Array`` of ``String`` keeps each element's quotes
(``new String[]{"a"}`` reads as ``['"a"']``, which does not equal the answer ``['a']``), elements are
split at every comma, a JavaScript dict value in quotes that reads as a number becomes the number.
The sets of types BFCL cannot read (Java ``Set``, ``Hashtable``, ``Queue``, ``Stack``) are not
accepted here either (``LITERAL_TYPES`` lists those that are).

``value_schema`` gives the schema the read value is compared under: BFCL's Python-side type
(``x-bfcl-type``), so strings compare as BFCL standardises them and numbers by type.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import re2

__all__ = ["LANGUAGES", "LITERAL_TYPES", "ReadLiteral", "language_of_category", "read_literal", "value_schema"]

LANGUAGES = ("java", "javascript")

# The literal patterns are BFCL's own (its java / js type converters) and run on the model's text:
# on google-re2, linear in the text, since several nest lazy quantifiers (``[[1],[1],...`` with no
# closing bracket took minutes under ``re`` at 50 elements). ``_JS_PAIR`` needs a lookahead, which
# RE2 lacks: it stays on ``re`` and only ever sees an object body of at most ``MAX_OBJECT`` characters.
MAX_OBJECT = 2048


def _linear(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


# declared type -> the BFCL (Python-side) type the read value has; None: a collection read by its own rule
_JAVA: dict[str, str] = {
    "byte": "integer",
    "short": "integer",
    "integer": "integer",
    "long": "integer",
    "float": "float",
    "double": "float",
    "boolean": "boolean",
    "char": "string",
    "String": "string",
    "any": "string",
    "Array": "array",
    "ArrayList": "array",
    "HashMap": "dict",
}
_JAVASCRIPT: dict[str, str] = {
    "String": "string",
    "integer": "integer",
    "float": "float",
    "Bigint": "integer",
    "Boolean": "boolean",
    "dict": "dict",
    "array": "array",
    "any": "string",
}
LITERAL_TYPES: dict[str, dict[str, str]] = {"java": _JAVA, "javascript": _JAVASCRIPT}
_JSON_TYPE = {"integer": "integer", "float": "number", "boolean": "boolean", "string": "string", "array": "array", "dict": "object"}


def language_of_category(category: str) -> str | None:
    """BFCL's rule (``is_java`` / ``is_js``): a category naming javascript is JavaScript, one naming
    java (and not javascript) is Java, every other is Python (None)."""
    if "javascript" in category:
        return "javascript"
    if "java" in category:
        return "java"
    return None


def value_schema(language: str, declared: str, items: str | None = None) -> dict[str, Any]:
    """The JSON schema of the value a literal of ``declared`` type reads as (``x-bfcl-type`` the
    BFCL type, so the matcher applies BFCL's comparison rules to it)."""
    bfcl = LITERAL_TYPES[language][declared]
    schema: dict[str, Any] = {"type": _JSON_TYPE[bfcl], "x-bfcl-type": bfcl}
    if bfcl == "array" and items is not None and items in LITERAL_TYPES[language]:
        schema["items"] = value_schema(language, items)
    return schema


class ReadLiteral(msgspec.Struct, frozen=True):
    value: Any = None
    error: str | None = None  # the value is not a string: BFCL's type error for the language


def read_literal(value: Any, language: str, declared: str, items: str | None = None) -> ReadLiteral:
    """``value`` (the model's argument) read as BFCL reads a ``declared``-type literal of ``language``."""
    if not isinstance(value, str):
        name = "Java" if language == "java" else "JavaScript"
        return ReadLiteral(error=f"BFCL's {name} arguments are strings holding {name} source, got {_kind(value)} {value!r:.60}")
    if language == "java":
        return ReadLiteral(_java(value, declared, items))
    return ReadLiteral(_javascript(value, declared, items))


def _kind(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", list: "array", dict: "object", type(None): "null"}.get(type(value), type(value).__name__)


# ---------------------------------------------------------------- numbers shared by both languages

_DIGITS = _linear(r"^-?\d+$")


def _number_or_text(text: str) -> Any:
    """A literal of unknown type that is no boolean or quoted text: Python's int, else float, else the text."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# ---------------------------------------------------------------- Java

_JAVA_FLOAT = _linear(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$")
_JAVA_DOUBLE = _linear(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")
_JAVA_LONG = _linear(r"^-?\d+[lL]$")
_ARRAY = _linear(r"new\s+\w+\[\]\s*\{(.*?)\}")
_AS_LIST = _linear(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)")
_ADDS = _linear(r"(?s)new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}")
_ADD = _linear(r"add\((.+?)\)")
_EMPTY_LIST = _linear(r"new\s+ArrayList<\w*>\(\)")
_PUTS = _linear(r"(?s)new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}")
_PUT = _linear(r"put\(\"(.*?)\",\s*(.*?)\)")
_EMPTY_MAP = _linear(r"new\s+HashMap<.*?>\s*\(\)")


def _java(text: str, declared: str, items: str | None) -> Any:
    if declared in ("byte", "short", "integer"):
        return int(text) if _DIGITS.match(text) else text
    if declared == "long":
        return int(text[:-1]) if _JAVA_LONG.match(text) else text
    if declared == "float":
        return float(text[:-1]) if _JAVA_FLOAT.match(text) else text
    if declared == "double":
        return float(text) if _JAVA_DOUBLE.match(text) else text
    if declared == "boolean":
        return text == "true" if text in ("true", "false") else text
    if declared == "Array":
        return _java_array(text, items)
    if declared == "ArrayList":
        return _java_array_list(text, items)
    if declared == "HashMap":
        return _java_map(text)
    return text  # char, String, any: the text as written


def _java_value(text: str) -> Any:
    """A Java literal of unknown type (collection elements without a declared type, map values)."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _JAVA_LONG.match(text):
        return int(text[:-1])
    if _JAVA_FLOAT.match(text):
        return float(text[:-1])
    return _number_or_text(text)


def _java_array(text: str, items: str | None) -> Any:
    found = _ARRAY.search(text)
    if not found:
        return text
    parts = [p.strip() for p in found.group(1).split(",")]
    return [_java(p, items, None) if items else _java_value(p) for p in parts if p]


def _java_list_item(text: str, items: str | None) -> Any:
    if items in ("char", "String"):
        return text[1:-1]  # the quotes of a char / String element are dropped (unlike in an Array)
    return _java(text, items, None) if items else _java_value(text)


def _java_array_list(text: str, items: str | None) -> Any:
    found = _AS_LIST.search(text)
    if found:
        return [_java_list_item(p.strip(), items) for p in found.group(1).split(",")]
    found = _ADDS.search(text)
    if found:
        return [_java_list_item(p.strip(), items) for p in _ADD.findall(found.group(1))]
    if _EMPTY_LIST.search(text):
        return []
    return text


def _java_map(text: str) -> Any:
    found = _PUTS.search(text)
    if found:
        body = found.group(1)
        return {key: _java_value(value.strip()) for key, value in _PUT.findall(body)} if body.strip() else {}
    if _EMPTY_MAP.search(text):
        return {}
    return text


# ---------------------------------------------------------------- JavaScript

_JS_FLOAT = _linear(r"^-?\d+(\.\d+)?$")
_JS_BIGINT = _linear(r"^-?\d+n$")
_JS_NESTED = _linear(r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)")
_JS_ARRAY = _linear(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")
_JS_INNER = _linear(r"\[(.*?)\]")
_JS_OBJECT = _linear(r"\{(.*?)\}")
_JS_PAIR = re.compile(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)")


class _Unread(Exception):
    """An element of a collection cannot be read by its declared type: the collection stays text."""


def _javascript(text: str, declared: str, items: str | None) -> Any:
    if declared == "String":
        quoted = (text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'"))
        return text[1:-1] if quoted else text
    if declared == "integer":
        return int(text) if _DIGITS.match(text) else text
    if declared == "float":
        return float(text) if _JS_FLOAT.match(text) else text
    if declared == "Bigint":
        return int(text[:-1]) if _JS_BIGINT.match(text) else text
    if declared == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if declared == "array":
        return _js_array(text, items)
    if declared == "dict":
        return _js_object(text)
    if declared == "any":
        return text
    raise _Unread(declared)  # a type JavaScript literals do not have (an element's declared type)


def _js_value(text: str) -> Any:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if (text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'")):
        return text[1:-1]
    return _number_or_text(text)


def _js_array(text: str, items: str | None) -> Any:
    code = text.strip()
    try:
        nested = _JS_NESTED.match(code)
        if nested:
            rows = []
            for i, inner in enumerate(_JS_INNER.findall(nested.group(0))):
                inner = inner.strip()
                if i == 0 and inner.startswith("["):
                    inner = inner[1:]
                rows.append([_js_value(e.strip()) for e in inner.split(",")])
            return rows
        flat = _JS_ARRAY.match(code)
        if not flat:
            return code
        body = flat.group(1) if flat.group(1) is not None else flat.group(2)
        body = (body or "").strip()
        elements = body.split(",") if body else []
        if items:
            return [_js_item(e.strip(), items) for e in elements]
        return [_js_value(e.strip()) for e in elements]
    except _Unread:
        return code


def _js_item(text: str, items: str) -> Any:
    """An element read by the declared item type; a quoted one reads its own elements as strings."""
    if items not in _JAVASCRIPT:
        raise _Unread(items)
    return _javascript(text, items, "String" if text.startswith(("'", '"')) else None)


def _js_object(text: str) -> Any:
    code = text.strip()
    if code == "{}":
        return {}
    found = _JS_OBJECT.match(code)
    if not found or len(found.group(1)) > MAX_OBJECT:
        return code
    out: dict[str, Any] = {}
    for key, value in _JS_PAIR.findall(found.group(1)):
        key, value = key.strip().strip("'\""), value.strip()
        if value.startswith("[") and value.endswith("]"):
            out[key] = _js_array(value, None)
        elif value.startswith("{") and value.endswith("}"):
            out[key] = _js_object(value)
        else:
            out[key] = _js_value(value.strip("'\""))
    return out
