"""One JSON document read whole (a tau2 results file, an Inspect ``.json`` log): its top-level
members decoded, and the items of its large arrays located by line and decoded one at a time.

Why: such files hold a whole run in one pretty-printed object. Decoding it at once costs several
times its size in memory, and an error inside it should name the line its item starts on, not just
the file. The scan decodes small members whole and walks the chosen arrays item by item, keeping
only each item's span (``visit`` sees each decoded item once, e.g. to collect facts every task
needs); ``items`` decodes them again, one at a time, when the trajectories are read.

Invariants:
- the document is a JSON object; anything else (or trailing data) is a ``DocumentError``;
- duplicate keys are an error (never a silent overwrite): a top-level one is a ``DocumentError``,
  one inside an item is that item's error;
- an item larger than ``Limits.max_line_bytes``, or holding a string longer than
  ``Limits.max_string_bytes``, is a ``too_large`` item (the others are still read);
- an item nested deeper than ``Limits.max_depth`` is a ``too_deep`` item, as a JSONL line is (one
  nested past the recursive decoder's reach is located by its brackets); a top-level member nested
  that deep is a ``DocumentError``;
- a syntax error inside an array ends the scan with one error naming its line: the array cannot
  be re-synchronised, so members after it are not read (``Document.stopped`` says why).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import orjson

from judge import UNIQUE_KEYS, BadInputError, DuplicateKey, InputErrorInfo, text_nesting_error
from pipelines.ingest._base import Limits
from pipelines.ingest._reader import _oversize_string

_SPACE = re.compile(r"[ \t\r\n]*")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[][{}]')  # a string (skipped whole) or a bracket
_NESTS = {"[": 1, "{": 1, "]": -1, "}": -1}


class DocumentError(BadInputError):
    """The document as a whole cannot be read (not JSON, not an object, a broken top level)."""

    def __init__(self, info: InputErrorInfo):
        super().__init__(info.render())
        self.info = info


class Span(msgspec.Struct, frozen=True):
    """Where one array item lies in the text: ``[start, end)`` and the 1-based line it starts on."""

    index: int
    start: int
    end: int
    line: int
    checked: bool = True  # the scan decoded it strictly (no duplicate key): a fast decoder may read it again


class Document(msgspec.Struct):
    file: str
    text: str
    limits: Limits
    members: dict[str, Any] = msgspec.field(default_factory=dict)  # decoded top-level members
    spans: dict[str, list[Span]] = msgspec.field(default_factory=dict)  # the item arrays, item by item
    stopped: InputErrorInfo | None = None  # a syntax error that ended the scan early

    def decode(self, name: str, span: Span) -> Any:
        """The item at ``span`` of array ``name``; an ``InputErrorInfo`` when it cannot be used."""
        if span.checked:
            try:  # the scan already checked it strictly; orjson reads it again several times faster
                return self._checked(name, span, orjson.loads(self.text[span.start : span.end]))
            except orjson.JSONDecodeError:
                pass  # NaN / Infinity, which Python's json accepts (or nesting past orjson's 1,024 levels)
        where = f"{name}[{span.index}]"
        try:
            value, _ = UNIQUE_KEYS.raw_decode(self.text, span.start)
        except DuplicateKey as err:
            return self._error("malformed_json", f"duplicate key {err.key!r} in one object", span.line, where)
        except RecursionError:
            return self._error("too_deep", f"nested deeper than {self.limits.max_depth} levels", span.line, where)
        except json.JSONDecodeError as err:  # an item located by its brackets only (see _Scanner.array)
            return self._error("malformed_json", f"invalid JSON: {err.msg}", span.line, where)
        return self._checked(name, span, value)

    def items(self, name: str) -> Iterator[tuple[Span, Any]]:
        for span in self.spans.get(name, ()):
            yield span, self.decode(name, span)

    def _checked(self, name: str, span: Span, value: Any) -> Any:
        where = f"{name}[{span.index}]"
        size = len(self.text[span.start : span.end].encode("utf-8", "surrogatepass")) if span.end - span.start > self.limits.max_line_bytes // 4 else 0
        if size > self.limits.max_line_bytes:
            return self._error("too_large", f"item of {size} bytes is larger than the limit of {self.limits.max_line_bytes} bytes", span.line, where)
        if span.end - span.start > self.limits.max_string_bytes // 4:
            path = _oversize_string(value, self.limits.max_string_bytes, where)
            if path is not None:
                return self._error("too_large", f"string field is larger than the limit of {self.limits.max_string_bytes} bytes", span.line, path)
        deep = text_nesting_error(value, self.text[span.start : span.end], self.limits.max_depth)
        if deep is not None:  # the checks after reading recurse over values, as for a JSONL line
            path = _join(where, deep)
            return self._error("too_deep", f"nested deeper than {self.limits.max_depth} levels (at {path})", span.line, path)
        return value

    def _error(self, kind: str, message: str, line: int | None, field_path: str | None) -> InputErrorInfo:
        return InputErrorInfo(kind=kind, message=message, file=self.file, line=line, field=field_path)


def read_document(path: str | Path, limits: Limits, arrays: tuple[str, ...], visit: Callable[[str, Span, Any], None] | None = None) -> Document:
    """Scan the JSON object in ``path``; the members named in ``arrays`` are walked item by item."""
    name = str(path)
    raw = Path(path).read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise DocumentError(
            InputErrorInfo(
                kind="encoding", message=f"invalid UTF-8 byte 0x{raw[err.start]:02x} at file offset {err.start}; the file must be UTF-8", file=name, line=line
            )
        ) from None
    del raw
    document = Document(file=name, text=text, limits=limits)
    _Scanner(document, arrays, visit).run()
    return document


class _Scanner:
    def __init__(self, document: Document, arrays: tuple[str, ...], visit: Callable[[str, Span, Any], None] | None):
        self.doc = document
        self.text = document.text
        self.arrays = arrays
        self.visit = visit
        self._line_pos = 0
        self._line = 1

    def line_at(self, pos: int) -> int:
        """1-based line of ``pos``; positions are asked in increasing order (one pass over the text)."""
        if pos < self._line_pos:
            return self.text.count("\n", 0, pos) + 1
        self._line += self.text.count("\n", self._line_pos, pos)
        self._line_pos = pos
        return self._line

    def fail(self, kind: str, message: str, pos: int, field_path: str | None = None) -> DocumentError:
        return DocumentError(InputErrorInfo(kind=kind, message=message, file=self.doc.file, line=self.line_at(pos), field=field_path))

    def skip(self, pos: int) -> int:
        match = _SPACE.match(self.text, pos)
        assert match is not None
        return match.end()

    def value(self, pos: int, where: str) -> tuple[Any, int]:
        limit = self.doc.limits.max_depth
        try:
            value, end = UNIQUE_KEYS.raw_decode(self.text, pos)
        except DuplicateKey as err:
            raise self.fail("malformed_json", f"duplicate key {err.key!r} in one object", pos, where) from None
        except RecursionError:
            raise self.fail("too_deep", f"nested deeper than {limit} levels", pos, where) from None
        except json.JSONDecodeError as err:
            raise self.fail("malformed_json", f"invalid JSON: {err.msg}", err.pos, where) from None
        deep = text_nesting_error(value, self.text[pos:end], limit)
        if deep is not None:  # a member is read as one item would be: level 1 is the member itself
            raise self.fail("too_deep", f"nested deeper than {limit} levels (at {_join(where, deep)})", pos, _join(where, deep))
        return value, end

    def run(self) -> None:
        text = self.text
        pos = self.skip(0)
        if pos >= len(text):
            raise self.fail("malformed_json", "the file is empty", 0)
        if text[pos] != "{":
            raise self.fail("invalid_field", "the file must hold one JSON object", pos, "<root>")
        pos = self.skip(pos + 1)
        first = True
        while True:
            if pos < len(text) and text[pos] == "}" and first:
                pos += 1
                break
            if pos >= len(text) or text[pos] != '"':
                raise self.fail("malformed_json", "invalid JSON: expected a member name", pos)
            key, pos = self.value(pos, "<root>")
            if key in self.doc.members or key in self.doc.spans:
                raise self.fail("malformed_json", f"duplicate key {key!r} in one object", pos, key)
            pos = self.skip(pos)
            if pos >= len(text) or text[pos] != ":":
                raise self.fail("malformed_json", "invalid JSON: expected ':'", pos, key)
            pos = self.skip(pos + 1)
            if key in self.arrays and pos < len(text) and text[pos] == "[":
                end = self.array(key, pos)
                if end is None:
                    return  # the array broke: nothing after it can be located
                pos = end
            else:
                self.doc.members[key], pos = self.value(pos, key)
            pos = self.skip(pos)
            first = False
            if pos < len(text) and text[pos] == ",":
                pos = self.skip(pos + 1)
                continue
            if pos < len(text) and text[pos] == "}":
                pos += 1
                break
            raise self.fail("malformed_json", "invalid JSON: expected ',' or '}'", pos)
        pos = self.skip(pos)
        if pos != len(text):
            raise self.fail("malformed_json", "invalid JSON: extra data after the top-level object", pos)

    def array(self, name: str, pos: int) -> int | None:
        """Walk array ``name`` starting at ``pos`` ('['); the position after it, or None when a
        syntax error inside it stopped the scan (recorded in ``Document.stopped``)."""
        text = self.text
        spans: list[Span] = []
        self.doc.spans[name] = spans
        pos = self.skip(pos + 1)
        if pos < len(text) and text[pos] == "]":
            return pos + 1
        while True:
            index = len(spans)
            line = self.line_at(pos)
            end: int | None
            try:
                value, end = UNIQUE_KEYS.raw_decode(text, pos)
            except DuplicateKey:
                value, end = None, self._end_of_item(pos)  # reported when the item is decoded
            except RecursionError:  # too deep for the decoder: reported when the item is decoded
                value, end = None, _end_of_brackets(text, pos)
            except json.JSONDecodeError as err:
                self.doc.stopped = InputErrorInfo(
                    kind="malformed_json",
                    message=f"invalid JSON in {name}[{index}]: {err.msg} at line {self.line_at(err.pos)}; the items after it cannot be located",
                    file=self.doc.file,
                    line=line,
                    field=f"{name}[{index}]",
                )
                return None
            if end is None:
                self.doc.stopped = InputErrorInfo(
                    kind="malformed_json",
                    message=f"invalid JSON in {name}[{index}]; the items after it cannot be located",
                    file=self.doc.file,
                    line=line,
                    field=f"{name}[{index}]",
                )
                return None
            span = Span(index=index, start=pos, end=end, line=line, checked=value is not None)
            spans.append(span)
            if self.visit is not None and value is not None:
                checked = self.doc._checked(name, span, value)
                if not isinstance(checked, InputErrorInfo):
                    self.visit(name, span, checked)
            del value
            pos = self.skip(end)
            if pos < len(text) and text[pos] == ",":
                pos = self.skip(pos + 1)
                continue
            if pos < len(text) and text[pos] == "]":
                return pos + 1
            self.doc.stopped = InputErrorInfo(
                kind="malformed_json",
                message=f"invalid JSON after {name}[{index}]: expected ',' or ']' at line {self.line_at(pos)}; the items after it cannot be located",
                file=self.doc.file,
                line=line,
                field=f"{name}[{index}]",
            )
            return None

    def _end_of_item(self, pos: int) -> int | None:
        """End of a syntactically valid item that the strict decoder refused (a duplicate key)."""
        try:
            _, end = json.JSONDecoder().raw_decode(self.text, pos)
        except json.JSONDecodeError:
            return None
        except RecursionError:
            return _end_of_brackets(self.text, pos)
        return end


def _end_of_brackets(text: str, pos: int) -> int | None:
    """End of the container opening at ``pos``, by its brackets alone (strings skipped): where an
    item nested past the recursive decoder's reach ends, without recursion. Its syntax is not
    checked (it is a ``too_deep`` item anyway); None when the text ends first."""
    depth = 0
    for token in _TOKEN.finditer(text, pos):
        depth += _NESTS.get(token[0], 0)
        if depth <= 0:
            return token.end()
    return None


def _join(where: str, path: str) -> str:
    """``samples[0]`` + ``scores.match[0]`` -> ``samples[0].scores.match[0]`` (``[2]...`` is appended)."""
    return where + path if path.startswith("[") else f"{where}.{path}"
