"""Streaming JSON reader: JSONL, one top-level JSON array, or a single (possibly pretty-printed) object.

Bytes are read one line at a time and decoded per line, so a non-UTF-8 byte is reported with its
line and byte offset and the rest of the file is still read. Memory stays bounded by the largest
item (``Limits.max_line_bytes``), never by the file.

Invariant: every item of the file becomes one ``RawItem``, its value or its own error; a bad item
never costs its neighbours.

Rules:
- Lines end at ``\\n``, ``\\r\\n`` or a bare ``\\r`` (old Mac files), so every line is one item.
- JSONL: one item per line; blank lines are skipped. A line that ends inside an unfinished
  value is read together with the following lines (a pretty-printed object is one item that
  starts on its first line); when that does not give a complete value the line is malformed.
- A top-level ``[``: items are parsed incrementally with ``JSONDecoder.raw_decode``; each item is
  reported at the 1-based line it starts on. A bad item (malformed, too deep, too large, an
  undecodable or oversize line inside it) is one error row and reading resynchronises after it:
  at the ``,`` or ``]`` that closes it at nesting depth 0 (strings and escapes are followed,
  a mismatched bracket closes down to its opener), or, for an item cut short, at the next line
  that opens an item the same way at the same indentation, whichever comes first. A missing
  ``,`` between items and a trailing ``,`` before ``]`` are tolerated (nothing is ambiguous).
  Text after the closing ``]`` is read as JSONL: a JSONL file whose first line is an array.
- Duplicate keys in one JSON object are an error (``malformed_json``), never a silent overwrite.
- A JSONL line is read by orjson when it certainly reads what ``json.loads`` does
  (``judge.loads_exact_bounded``: no repeated key, no integer past 64 bits, nothing orjson refuses,
  and the nesting bound checked in the same pass); any other line goes through the standard
  library's decoder, which decides and words the error.
- Containers nested deeper than ``Limits.max_depth`` are ``too_deep`` (naming the field), so no
  later recursive walker can overflow the stack.
"""

from __future__ import annotations

import io
import json
import os
import re
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import msgspec

from judge import UNDECIDED, UNIQUE_KEYS, DuplicateKey, InputErrorInfo, SharedMembers, loads_exact_bounded, text_nesting_error
from pipelines.ingest._base import Limits

Source = str | os.PathLike | IO[bytes]


_WS = " \t\r\n"


def _find_eol(buf: bytes, pos: int = 0) -> tuple[int, int] | None:
    """(start, end) of the first line terminator at or after ``pos``: ``\\r\\n``, a bare ``\\r`` or
    ``\\n``. Two memchr-speed ``find`` calls (a regex search cost 30 us on a 20 KB line)."""
    nl = buf.find(b"\n", pos)
    cr = buf.find(b"\r", pos, len(buf) if nl == -1 else nl)
    if cr == -1:
        return None if nl == -1 else (nl, nl + 1)
    return (cr, cr + 2) if buf[cr + 1 : cr + 2] == b"\n" else (cr, cr + 1)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # how an unpaired surrogate can get into JSON text


def _bom(line: _Line) -> int:
    """Bytes of a UTF-8 byte-order mark opening the file (skipped), else 0."""
    return 3 if line.offset == 0 and line.raw is not None and line.raw.startswith(b"\xef\xbb\xbf") else 0


class RawItem(msgspec.Struct):
    """One item of a file: its parsed JSON value, or the error that kept it from being read."""

    line: int
    index: int  # 0-based position among the file's items (blank lines are not items)
    value: Any = None
    error: InputErrorInfo | None = None
    in_array: bool = False  # an item of the file's top-level array (not a JSONL line of its own)
    nth: int = 0  # 0-based position among the items that start on the same line (a one-line array holds several)


def source_name(source: Source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    return str(getattr(source, "name", "<stream>"))


@contextmanager
def _open(source: Source) -> Iterator[IO[bytes]]:
    if isinstance(source, (str, os.PathLike)):
        with open(Path(source), "rb", buffering=1 << 20) as handle:  # lines are read one by one: 8 KB made a 22 KB line several reads
            yield handle
    else:
        if isinstance(source, io.TextIOBase):
            raise TypeError("pass a binary file object (open(..., 'rb')): bytes are decoded per line")
        yield source


def read_items(source: Source, limits: Limits = Limits(), start: tuple[int, int, int] = (1, 0, 0), shared: tuple[str, ...] = ()) -> Iterator[RawItem]:
    """Every item of ``source`` in order, lazily: consuming one item reads only the lines it needs.

    ``start`` = (line number, item index, byte offset) of the first byte of ``source``, for a
    shard cut from a larger JSONL file at a line boundary: its items are numbered, and its errors
    located, as in the whole file. ``shared``: top-level members of JSONL objects that repeat byte
    for byte from line to line, parsed once per distinct text and then shared between items
    (``judge.SharedMembers``; only for callers that never mutate what they read).
    """
    name = source_name(source)
    with _open(source) as handle:
        lines = _Lines(handle, name, limits)
        lines.number, lines.offset = start[0] - 1, start[2]
        reader = _Reader(lines, name, limits, SharedMembers(shared, limits.max_depth) if shared else None)
        reader.index = start[1]
        yield from reader.items()


def reader_lines(handle: IO[bytes], limits: Limits = Limits()) -> Iterator[tuple[bytes | None, int]]:
    """The lines of ``handle`` exactly as this reader splits them (``\\n``, ``\\r\\n`` or a bare
    ``\\r``): (the line's bytes with its terminator, or None for a line longer than the limit,
    which is read through and not held; its size). The run cuts an input into shards between
    these lines (``pipelines.run.lines``), so the cuts and this reader always agree."""
    lines = _Lines(handle, source_name(handle), limits)
    while (line := lines.next()) is not None:
        yield line.raw, line.size


class _Line(msgspec.Struct):
    number: int
    offset: int  # byte offset of the line start in the file
    raw: bytes | None  # None: longer than the limit (its bytes were skipped)
    size: int
    skeleton: str | None = None  # for a skipped line read inside an array: its brackets and commas


class _Lines:
    """Byte lines with numbers and offsets; lines can be pushed back after a failed look-ahead.

    A line ends at ``\\n``, ``\\r\\n`` or a bare ``\\r``; its terminator stays in ``raw``. A line
    longer than the limit is skipped without holding it (``raw=None``).
    """

    def __init__(self, handle: IO[bytes], name: str, limits: Limits):
        self.handle = handle
        self.name = name
        self.limit = limits.max_line_bytes
        self.number = 0
        self.offset = 0
        self.pending: deque[_Line] = deque()
        self.skeletons = False  # inside an array an oversize line keeps its structure (see _skeleton)
        self._buf = b""
        self._pos = 0
        self._eof = False

    def next(self) -> _Line | None:
        if self.pending:
            return self.pending.popleft()
        while True:
            found = _find_eol(self._buf, self._pos)
            # a bare CR that ends what was read may be the first half of a CRLF: read on first
            if found is not None and (self._eof or found[1] < len(self._buf) or found[1] - found[0] == 2 or self._buf[found[0]] != 13):
                return self._take(found[1], found[1] - found[0])
            if found is None and len(self._buf) - self._pos > self.limit:
                return self._skip()
            if not self._fill() and found is None:
                return self._take(len(self._buf), 0) if self._pos < len(self._buf) else None

    def _fill(self) -> bool:
        if self._eof:
            return False
        piece = self.handle.readline(self.limit + 2)
        if not piece:
            self._eof = True
            return False
        if self._pos:
            self._buf, self._pos = self._buf[self._pos :], 0
        self._buf = self._buf + piece if self._buf else piece
        return True

    def _take(self, end: int, terminator: int) -> _Line:
        raw = self._buf[self._pos : end]
        self._pos = end
        self.number += 1
        start = self.offset
        self.offset += len(raw)
        if len(raw) - terminator > self.limit:
            return _Line(self.number, start, None, len(raw), _skeleton(raw) if self.skeletons else None)
        return _Line(self.number, start, raw, len(raw))

    def _skip(self) -> _Line:
        """Skip the rest of an oversize line, chunk by chunk, up to its terminator."""
        chunks = _SkeletonBuilder() if self.skeletons else None
        size = len(self._buf) - self._pos
        if chunks is not None:
            chunks.feed(self._buf[self._pos :])
        self._buf, self._pos = b"", 0
        while True:
            piece = self.handle.readline(1 << 20)
            if not piece:
                self._eof = True
                break
            found = _find_eol(piece)
            if found is not None and found[1] == len(piece) and piece[found[0] :] == b"\r":
                more = self.handle.readline(1 << 20)  # the LF of a CRLF may start the next read
                piece += more
                found = _find_eol(piece)
            if found is None:
                size += len(piece)
                if chunks is not None:
                    chunks.feed(piece)
                continue
            size += found[1]
            if chunks is not None:
                chunks.feed(piece[: found[0]])
            self._buf = piece[found[1] :]
            break
        self.number += 1
        start = self.offset
        self.offset += size
        return _Line(self.number, start, None, size, chunks.text() if chunks is not None else None)

    def push_back(self, lines: list[_Line]) -> None:
        self.pending.extendleft(reversed(lines))


# ---------------------------------------------------------------- structure without parsing

_STRUCT = re.compile(r'[\[\]{},"\n]')
_STRUCT_BYTES = re.compile(rb'[\[\]{},"\\]')
_IN_STRING = re.compile(r'["\\\n]')


class _SkeletonBuilder:
    """The brackets and commas of a line outside its strings, fed in byte chunks.

    A line never starts inside a JSON string (strings cannot hold raw line breaks), so the
    skeleton of a skipped line is exact for well-formed text, which is all resynchronisation needs.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.in_string = False
        self.escaped = False

    def feed(self, chunk: bytes) -> None:
        if self.escaped and chunk:
            chunk, self.escaped = chunk[1:], False
        skip_at = -1
        for found in _STRUCT_BYTES.finditer(chunk):
            at = found.start()
            if at == skip_at:
                continue
            char = chunk[at : at + 1]
            if self.in_string:
                if char == b"\\":
                    if at + 1 == len(chunk):
                        self.escaped = True
                    skip_at = at + 1
                elif char == b'"':
                    self.in_string = False
            elif char == b'"':
                self.in_string = True
            elif char != b"\\":
                self.parts.append(char.decode("ascii"))

    def text(self) -> str:
        return "".join(self.parts)


def _skeleton(raw: bytes) -> str:
    builder = _SkeletonBuilder()
    builder.feed(raw)
    return builder.text()


# ---------------------------------------------------------------- the reader


class _Bad(Exception):
    """An item that could not be read; reading goes on after it."""

    def __init__(self, info: InputErrorInfo, at_eof: bool = False):
        self.info = info
        self.at_eof = at_eof


class _Reader:
    def __init__(self, lines: _Lines, name: str, limits: Limits, shared: SharedMembers | None = None):
        self.shared = shared
        self.lines = lines
        self.name = name
        self.limits = limits
        self.index = 0
        self.in_array = False  # reading the items of the top-level array (RawItem.in_array)
        self._last = (0, -1)  # (line, nth) of the item made last

    # -- errors and values ---------------------------------------------------------------------

    def _info(self, kind: str, message: str, line: int, field: str | None = None) -> InputErrorInfo:
        return InputErrorInfo(kind=kind, message=message, file=self.name, line=line, field=field)

    def _error_item(self, info: InputErrorInfo) -> RawItem:
        return self._item_at(info.line or 0, error=info)

    def _item_at(self, line: int, value: Any = None, error: InputErrorInfo | None = None) -> RawItem:
        """The next item, numbered in the file and among the items starting on its line."""
        nth = self._last[1] + 1 if self._last[0] == line else 0
        self._last = (line, nth)
        item = RawItem(line=line, index=self.index, value=value, error=error, in_array=self.in_array, nth=nth)
        self.index += 1
        return item

    def _error(self, kind: str, message: str, line: int, field: str | None = None) -> RawItem:
        return self._error_item(self._info(kind, message, line, field))

    def _too_deep(self, line: int, path: str | None) -> RawItem:
        where = f" (at {path})" if path else ""
        return self._error("too_deep", f"nested deeper than {self.limits.max_depth} levels{where}", line, path or "<root>")

    def _value(self, value: Any, line: int, size: int, text: str | bytes, surrogates: bool = True, bounded: bool = False) -> RawItem:
        """The item of a parsed value, or its error: too deep (``bounded``: the parser already
        showed it is not), a lone surrogate (``surrogates``: the parser may have let one through),
        an oversize string."""
        if not bounded and (path := text_nesting_error(value, text, self.limits.max_depth)) is not None:
            return self._too_deep(line, path)
        if surrogates and isinstance(text, str) and _SURROGATE_ESCAPE.search(text) and (path := _surrogate_path(value)) is not None:
            return self._error(
                "encoding", "a string holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff alone), which no UTF-8 text can hold", line, path or "<root>"
            )
        if size > self.limits.max_string_bytes:
            path = _oversize_string(value, self.limits.max_string_bytes)
            if path is not None:
                return self._error("too_large", f"string field is larger than the limit of {self.limits.max_string_bytes} bytes", line, path or "<root>")
        return self._item_at(line, value)

    def _decode(self, line: _Line) -> str | RawItem:
        assert line.raw is not None
        raw = line.raw
        skip = _bom(line)
        try:
            return raw[skip:].decode("utf-8")
        except UnicodeDecodeError as err:
            return self._error_item(self._encoding_info(line, err, skip))

    def _encoding_info(self, line: _Line, err: UnicodeDecodeError, skip: int = 0) -> InputErrorInfo:
        assert line.raw is not None
        pos = err.start + skip
        return self._info(
            "encoding",
            f"invalid UTF-8 byte 0x{line.raw[pos]:02x} at byte {pos} of the line (file offset {line.offset + pos}); the file must be UTF-8",
            line.number,
        )

    def _too_large_info(self, line: _Line) -> InputErrorInfo:
        return self._info("too_large", f"line of {line.size} bytes is larger than the limit of {self.limits.max_line_bytes} bytes", line.number)

    # -- dispatch -------------------------------------------------------------------------------

    def items(self) -> Iterator[RawItem]:
        while True:
            line = self.lines.next()
            if line is None:
                return
            if line.raw is None:
                yield self._error_item(self._too_large_info(line))
                continue
            text = self._decode(line)
            if isinstance(text, RawItem):
                yield text
                continue
            if not text.strip():
                continue
            self.lines.push_back([line])
            if text.lstrip(_WS).startswith("["):
                yield from _Array(self).items()
            yield from self._jsonl()
            return

    # -- JSONL ----------------------------------------------------------------------------------

    def _jsonl(self) -> Iterator[RawItem]:
        while True:
            line = self.lines.next()
            if line is None:
                return
            if line.raw is None:
                yield self._error_item(self._too_large_info(line))
                continue
            raw = line.raw[_bom(line) :]
            value = self.shared.loads(raw) if self.shared is not None else UNDECIDED
            bounded = True  # what SharedMembers decides nests within the limit
            if value is UNDECIDED:
                value, bounded = loads_exact_bounded(raw, self.limits.max_depth)  # the common case at C speed
            if value is not UNDECIDED:  # orjson read it: valid UTF-8, no lone surrogate, no repeated key
                yield self._value(value, line.number, line.size, raw, surrogates=False, bounded=bounded)
                continue
            # anything unusual is read and worded by the standard library
            text = self._decode(line)
            if isinstance(text, RawItem):
                yield text
                continue
            if not text.strip():
                continue
            try:
                value = UNIQUE_KEYS.decode(text)
            except DuplicateKey as err:
                yield self._error("malformed_json", f"duplicate key {err.key!r} in one JSON object", line.number)
                continue
            except RecursionError:
                yield self._too_deep(line.number, None)
                continue
            except json.JSONDecodeError as err:
                if _incomplete(err, text):
                    multi = self._multi_line(line, text)
                    if multi is not None:
                        yield multi
                        continue
                if err.msg == "Extra data" and text[err.pos :].strip(_WS) == ",":
                    # an array's item lines without the brackets: the separator is tolerated
                    yield self._value(UNIQUE_KEYS.raw_decode(text, len(text) - len(text.lstrip(_WS)))[0], line.number, line.size, text)
                    continue
                yield self._error("malformed_json", f"malformed JSON at column {err.colno}: {err.msg}", line.number)
                continue
            except ValueError as err:  # not a syntax error: e.g. an integer over Python's 4,300-digit limit
                yield self._error("malformed_json", _unreadable(err), line.number)
                continue
            yield self._value(value, line.number, line.size, text)

    def _multi_line(self, first: _Line, text: str) -> RawItem | None:
        """Read a value that spans several lines; None (lines pushed back) when that fails.

        Lines are read ahead in growing batches (a parse per line would be quadratic); a line that
        cannot be part of a value (not UTF-8, too long, past the size limit) ends the lines there
        as the end of the input does. So the value read depends only on the lines up to the one it
        ends on: a reader of a shard of the file that ends after it reads what the reader of the
        whole file reads. A shard that ends inside the value is noted on the stream
        (``cut_inside_item``), and the run reads it again joined with the next one.
        """
        taken: list[_Line] = []
        parts = [text]
        size = first.size
        target = 2 * size + 4096
        ended = eof = False  # no more lines for this value (the input's end, or a line that cannot be in it)
        start = len(text) - len(text.lstrip(_WS))
        while True:
            while size < target and not ended:
                line = self.lines.next()
                if line is None:
                    ended = eof = True
                    break
                decoded = _value_line(line, size, self.limits.max_line_bytes)
                if decoded is None:
                    self.lines.push_back([line])
                    ended = True
                    break
                taken.append(line)
                parts.append(decoded)
                size += line.size
            buf = "".join(parts)
            try:
                value, end = UNIQUE_KEYS.raw_decode(buf, start)
            except DuplicateKey as err:
                self.lines.push_back(taken)
                return self._error("malformed_json", f"duplicate key {err.key!r} in one JSON object", first.number)
            except RecursionError:
                self.lines.push_back(taken)
                return None
            except json.JSONDecodeError as err:
                incomplete = _incomplete(err, buf)
                if ended or not incomplete:
                    if eof and incomplete and hasattr(self.lines.handle, "cut_inside_item"):
                        self.lines.handle.cut_inside_item = True  # a shard's end: the rest of the value is in the next one
                    self.lines.push_back(taken)
                    return None
                target = 2 * size
                continue
            except ValueError:
                self.lines.push_back(taken)
                return None
            # lines wholly after the value go back to the stream; the rest of its last line must be blank
            consumed = len(parts[0])
            used = 0
            while consumed < end:
                consumed += len(parts[used + 1])
                used += 1
            if buf[end:consumed].strip(_WS):
                self.lines.push_back(taken)
                return None
            self.lines.push_back(taken[used:])
            return self._value(value, first.number, size, buf[start:end])


# ---------------------------------------------------------------- top-level array


class _Array:
    """The items of one top-level JSON array, read through a sliding text window.

    The window joins the decoded lines with a single ``\\n`` each (a line's terminator is only
    whitespace to JSON), so positions map back to line numbers. A line that cannot be decoded
    enters the window decoded with replacement characters and an oversize line as ``\\x00`` plus
    its skeleton: their structure still lets the reader find where the item ends, and the item
    that spans them is reported with their error.
    """

    def __init__(self, reader: _Reader):
        self.reader = reader
        self.lines = reader.lines
        self.limits = reader.limits
        self.buf = ""
        self.pos = 0
        self.trimmed = 0  # characters dropped from the front of the window so far
        self._parts: list[str] = []  # lines read but not yet joined into buf (joining once is linear)
        self._parts_len = 0
        self._starts: list[int] = []  # absolute character position of each line in the window
        self._line_refs: list[_Line] = []
        self._first = 0  # entries before it were trimmed away
        self._bad: list[tuple[int, InputErrorInfo]] = []  # (line number, error) of unreadable lines
        self.eof = False

    # -- the window -----------------------------------------------------------------------------

    def _read_line(self) -> bool:
        line = self.lines.next()
        if line is None:
            self.eof = True
            return False
        if line.raw is None:
            self._bad.append((line.number, self.reader._too_large_info(line)))
            text = "\x00" + (line.skeleton or "") + "\n"  # NUL: never valid JSON, so the item fails
        else:
            skip = 3 if line.offset == 0 and line.raw.startswith(b"\xef\xbb\xbf") else 0
            try:
                text = line.raw[skip:].decode("utf-8")
            except UnicodeDecodeError as err:
                self._bad.append((line.number, self.reader._encoding_info(line, err, skip)))
                text = line.raw[skip:].decode("utf-8", "replace")
            text = text.rstrip("\r\n") + "\n"
        self._starts.append(self.trimmed + len(self.buf) + self._parts_len)
        self._line_refs.append(line)
        self._parts.append(text)
        self._parts_len += len(text)
        return True

    def _sync(self) -> None:
        if self._parts:
            self.buf += "".join(self._parts)
            self._parts.clear()
            self._parts_len = 0

    def _size(self) -> int:
        return len(self.buf) + self._parts_len

    def _more(self) -> bool:
        """Make more text available in ``buf``; False at the end of the file."""
        got = self._read_line()
        self._sync()
        return got

    def _trim(self, keep_from: int) -> None:
        """Forget the text before ``keep_from`` (a position in buf) to keep memory bounded."""
        if keep_from <= 0:
            return
        self.buf = self.buf[keep_from:]
        self.pos -= keep_from
        self.trimmed += keep_from
        first = bisect_right(self._starts, self.trimmed, lo=self._first) - 1
        self._first = max(first, self._first)
        if self._first > 4096:
            del self._starts[: self._first], self._line_refs[: self._first]
            self._first = 0

    def line_at(self, pos: int) -> int:
        i = bisect_right(self._starts, self.trimmed + pos, lo=self._first) - 1
        return self._line_refs[max(i, self._first)].number if self._line_refs else 0

    def skip_ws(self) -> bool:
        """Move past whitespace; False when the file ends first."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return True
            if not self._more():
                return False

    def _bad_in(self, first: int, last: int) -> InputErrorInfo | None:
        """The error of an unreadable line among lines ``first``..``last`` (those before are dropped)."""
        while self._bad and self._bad[0][0] < first:
            self._bad.pop(0)
        for number, info in self._bad:
            if number > last:
                break
            return info
        return None

    # -- items ----------------------------------------------------------------------------------

    def items(self) -> Iterator[RawItem]:
        self.lines.skeletons = True
        self.reader.in_array = True
        try:
            yield from self._items()
        finally:
            self.lines.skeletons = False
            self.reader.in_array = False

    def _items(self) -> Iterator[RawItem]:
        self.skip_ws()
        assert self.buf[self.pos] == "["
        self.pos += 1
        while True:
            if not self.skip_ws():
                last = self._line_refs[-1].number if self._line_refs else 0
                yield self.reader._error("malformed_json", f"the JSON array is not closed: the file ends at line {last} (is it truncated?)", last)
                return
            char = self.buf[self.pos]
            if char == "]":
                self.pos += 1
                break
            if char == ",":  # a separator; a trailing or doubled one is tolerated
                self.pos += 1
                continue
            item = self._item()
            yield item
            if item.error is not None and self.eof and self.pos >= len(self.buf):
                return  # the item ran to the end of the file: its error says so
            self._trim(self.pos if self.pos > 65536 else 0)
        self._hand_back()

    def _item(self) -> RawItem:
        start = self.pos
        line = self.line_at(start)
        try:
            value, end = self._decode_value(start, line)
        except _Bad as bad:
            info = bad.info
            end = self._resync(start)  # may trim the window: positions before ``end`` are gone
            info = self._bad_in(line, self.line_at(max(end - 1, 0))) or info
            self.pos = end
            if bad.at_eof:
                info.message += "; the file ends inside this item (is it truncated?)"
            return self.reader._error_item(info)
        self.pos = end
        unreadable = self._bad_in(line, self.line_at(end - 1))
        if unreadable is not None:
            return self.reader._error_item(unreadable)
        return self.reader._value(value, line, end - start, self.buf[start:end])

    def _decode_value(self, start: int, line: int) -> tuple[Any, int]:
        limit = self.limits.max_line_bytes
        while True:
            try:
                value, end = UNIQUE_KEYS.raw_decode(self.buf, start)
            except DuplicateKey as err:
                raise _Bad(self.reader._info("malformed_json", f"duplicate key {err.key!r} in one JSON object", line)) from None
            except RecursionError:
                raise _Bad(self.reader._info("too_deep", f"nested deeper than {self.limits.max_depth} levels", line, "<root>")) from None
            except json.JSONDecodeError as err:
                where = f"{err.msg} at line {self.line_at(err.pos)}, column {err.colno}"
                if not _incomplete(err, self.buf):
                    raise _Bad(self.reader._info("malformed_json", f"malformed JSON in the array item: {where}", line)) from None
                pending = len(self.buf) - start
                if pending > limit:
                    raise _Bad(self.reader._info("too_large", f"array item is larger than the limit of {limit} bytes", line)) from None
                target = len(self.buf) + max(pending, 4096)
                got = True
                while self._size() < target and (got := self._read_line()):
                    pass
                self._sync()
                if not got and len(self.buf) - start == pending:
                    raise _Bad(self.reader._info("malformed_json", f"malformed JSON in the array item: {where}", line), at_eof=True) from None
                continue
            except ValueError as err:  # not a syntax error: e.g. an integer over Python's 4,300-digit limit
                raise _Bad(self.reader._info("malformed_json", _unreadable(err), line)) from None
            size = end - start
            if size * 4 > limit and len(self.buf[start:end].encode("utf-8", "surrogatepass")) > limit:
                raise _Bad(self.reader._info("too_large", f"array item is larger than the limit of {limit} bytes", line))
            return value, end

    def _resync(self, start: int) -> int:
        """Where a bad item ends, so that the next item can be read.

        The ``,``/``]`` that closes it at nesting depth 0 (strings and escapes followed; a closing
        bracket with no matching opener is ignored, one with an opener further down closes down to
        it). An item that starts a line may also end before the next line that opens an item the
        same way, or closes the array, at the same or a smaller indentation: that is how an item
        cut short ends, and how a premature close (brackets balanced with text left on the line)
        is corrected.
        """
        opener = self.buf[start]
        line_start = self.buf.rfind("\n", 0, start) + 1
        indent = start - line_start
        by_lines = opener in "[{" and not self.buf[line_start:start].strip(_WS)
        lines_only = False  # the brackets closed too early: only line starts can end the item now
        stack: list[str] = []
        in_string = False
        i = start
        if opener in "[{":
            stack.append(opener)
            i = start + 1
        elif opener == '"':
            in_string, i = True, start + 1
        while True:
            if i >= len(self.buf):
                if i > 65536:  # the text scanned so far is not needed again: keep memory bounded
                    cut = min(i, len(self.buf))
                    self._trim(cut)
                    i -= cut
                if not self._more():
                    return len(self.buf)
                continue
            at = self.buf.find("\n", i) if lines_only else -1
            if not lines_only:
                found = (_IN_STRING if in_string else _STRUCT).search(self.buf, i)
                at = -1 if found is None else found.start()
            if at < 0:
                i = len(self.buf)
                continue
            char, i = self.buf[at], at + 1
            if char == "\n":
                in_string = False
                if by_lines:
                    while i >= len(self.buf) and self._more():
                        pass
                    j = i
                    while j < len(self.buf) and self.buf[j] in " \t":
                        j += 1
                    if j < len(self.buf) and j - i <= indent and self.buf[j] in (opener, "]"):
                        return j
            elif in_string:
                if char == '"':
                    in_string = False
                else:  # a backslash escapes the next character
                    i += 1
            elif char == '"':
                in_string = True
            elif char in "[{":
                stack.append(char)
            elif char in "]}":
                match = "[" if char == "]" else "{"
                if match in stack:
                    while stack.pop() != match:
                        pass
                elif char == "]" and not stack:
                    return at  # the end of the array itself
                if not stack and opener in "[{":
                    newline = self.buf.find("\n", i)
                    rest = self.buf[i : newline if newline >= 0 else len(self.buf)]
                    if not by_lines or rest.strip(" \t\r,]") == "":
                        return i  # the bad item's own brackets are closed
                    lines_only = True
            elif char == "," and not stack:
                return at

    def _hand_back(self) -> None:
        """Give the text after the closing ``]`` back to the line reader, which reads it as JSONL."""
        self._sync()
        here = self.trimmed + self.pos
        i = bisect_right(self._starts, here, lo=self._first) - 1
        if i < self._first:
            return
        back: list[_Line] = []
        current = self._line_refs[i]
        rest_start = self.pos
        rest_end = (self._starts[i + 1] - self.trimmed) if i + 1 < len(self._starts) else len(self.buf)
        rest = self.buf[rest_start:rest_end]
        if rest.strip(_WS) and current.raw is not None:
            raw = rest.rstrip("\n").encode("utf-8") + b"\n"
            back.append(_Line(current.number, current.offset + current.size - len(raw), raw, len(raw)))
        back.extend(self._line_refs[i + 1 :])
        self.lines.push_back(back)


def _unreadable(err: ValueError) -> str:
    if "digits" in str(err):
        return "unreadable JSON value: an integer literal with more than 4,300 digits"
    return f"unreadable JSON value: {err}"


def _value_line(line: _Line, size: int, limit: int) -> str | None:
    """A line's text to add to a value of ``size`` bytes so far; None when it cannot be in one (too
    long to keep, past the limit together, not UTF-8)."""
    if line.raw is None or size + line.size > limit:
        return None
    try:
        return line.raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _incomplete(err: json.JSONDecodeError, text: str) -> bool:
    """The error is at the end of the text: more lines may complete the value."""
    return err.pos >= len(text.rstrip(_WS))


def _first_string(value: Any, bad: Callable[[str], bool], prefix: str = "") -> tuple[str, bool] | None:
    """(path under ``prefix``, is it a key) of the first string or object key for which ``bad``
    holds, in document order, else None. Iterative: no nesting depth can exhaust the stack."""
    stack: list[tuple[Any, str]] = [(value, prefix)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if bad(node):
                return path, False
        elif isinstance(node, dict):
            for key, item in reversed(list(node.items())):
                sub = f"{path}.{key}" if path else str(key)
                if bad(key):
                    return sub, True
                stack.append((item, sub))
        elif isinstance(node, list):
            stack.extend((item, f"{path}[{i}]") for i, item in reversed(list(enumerate(node))))
    return None


def _surrogate_path(value: Any) -> str | None:
    """Path of the first string (or key) holding an unpaired surrogate, else None; a key's path is
    shown with the surrogate escaped (it cannot be written as UTF-8)."""

    def lone(text: str) -> bool:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False

    found = _first_string(value, lone)
    if found is None:
        return None
    path, is_key = found
    return path.encode("utf-8", "backslashreplace").decode("ascii") if is_key else path


def _oversize_string(value: Any, limit: int, prefix: str = "") -> str | None:
    """Path (under ``prefix``) of the first string or object key longer than ``limit`` bytes, else None."""

    def big(text: str) -> bool:
        return len(text) * 4 > limit and len(text.encode("utf-8", "surrogatepass")) > limit

    found = _first_string(value, big, prefix)
    return None if found is None else found[0]
