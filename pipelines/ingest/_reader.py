"""Streaming JSON reader: JSONL, one top-level JSON array, or a single (possibly pretty-printed) object.

Bytes are read one line at a time and decoded per line, so a non-UTF-8 byte is reported with its
line and byte offset and the rest of a JSONL file is still read. Memory stays bounded by the
largest item (``Limits.max_line_bytes``), never by the file.

Rules:
- JSONL: one item per line; blank lines are skipped. A line that ends inside an unfinished
  value is read together with the following lines (a pretty-printed object is one item that
  starts on its first line); when that does not give a complete value the line is malformed.
- A top-level ``[``: items are parsed incrementally with ``JSONDecoder.raw_decode``; each item is
  reported at the 1-based line it starts on. A syntax error, an oversize item or an undecodable
  line inside an array stops the file with one error that says so (the array cannot be re-synced).
- Duplicate keys in one JSON object are an error (``malformed_json``), never a silent overwrite.
"""

from __future__ import annotations

import io
import json
import os
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from judge import InputErrorInfo
from pipelines.ingest._base import Limits

Source = str | os.PathLike | IO[bytes]


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)
_WS = " \t\r\n"


@dataclass
class RawItem:
    """One item of a file: its parsed JSON value, or the error that kept it from being read."""

    line: int
    index: int  # 0-based position among the file's items (blank lines are not items)
    value: Any = None
    error: InputErrorInfo | None = None


def source_name(source: Source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    return str(getattr(source, "name", "<stream>"))


@contextmanager
def _open(source: Source) -> Iterator[IO[bytes]]:
    if isinstance(source, (str, os.PathLike)):
        with open(Path(source), "rb") as handle:
            yield handle
    else:
        if isinstance(source, io.TextIOBase):
            raise TypeError("pass a binary file object (open(..., 'rb')): bytes are decoded per line")
        yield source


def read_items(source: Source, limits: Limits = Limits(), start: tuple[int, int, int] = (1, 0, 0)) -> Iterator[RawItem]:
    """Every item of ``source`` in order, lazily: consuming one item reads only the lines it needs.

    ``start`` = (line number, item index, byte offset) of the first byte of ``source``, for a
    shard cut from a larger JSONL file at a line boundary: its items are numbered, and its errors
    located, as in the whole file.
    """
    name = source_name(source)
    with _open(source) as handle:
        lines = _Lines(handle, name, limits)
        lines.number, lines.offset = start[0] - 1, start[2]
        reader = _Reader(lines, name, limits)
        reader.index = start[1]
        yield from reader.items()


@dataclass
class _Line:
    number: int
    offset: int  # byte offset of the line start in the file
    raw: bytes | None  # None: longer than the limit (its bytes were skipped)
    size: int


class _Lines:
    """Byte lines with numbers and offsets; lines can be pushed back after a failed look-ahead."""

    def __init__(self, handle: IO[bytes], name: str, limits: Limits):
        self.handle = handle
        self.name = name
        self.limit = limits.max_line_bytes
        self.number = 0
        self.offset = 0
        self.pending: deque[_Line] = deque()

    def next(self) -> _Line | None:
        if self.pending:
            return self.pending.popleft()
        raw = self.handle.readline(self.limit + 2)
        if not raw:
            return None
        self.number += 1
        start = self.offset
        size = len(raw)
        if len(raw.rstrip(b"\r\n")) > self.limit:
            while not raw.endswith(b"\n"):
                raw = self.handle.readline(1 << 20)
                if not raw:
                    break
                size += len(raw)
            self.offset += size
            return _Line(self.number, start, None, size)
        self.offset += size
        return _Line(self.number, start, raw, size)

    def push_back(self, lines: list[_Line]) -> None:
        self.pending.extendleft(reversed(lines))


class _Stop(Exception):
    """An array item could not be read; the array cannot be re-synchronised after it."""

    def __init__(self, info: InputErrorInfo):
        self.info = info


class _Reader:
    def __init__(self, lines: _Lines, name: str, limits: Limits):
        self.lines = lines
        self.name = name
        self.limits = limits
        self.index = 0

    # -- errors ---------------------------------------------------------------------------------

    def _error(self, kind: str, message: str, line: int, field: str | None = None) -> RawItem:
        item = RawItem(line=line, index=self.index, error=InputErrorInfo(kind=kind, message=message, file=self.name, line=line, field=field))
        self.index += 1
        return item

    def _value(self, value: Any, line: int, size: int) -> RawItem:
        if size > self.limits.max_string_bytes:
            path = _oversize_string(value, self.limits.max_string_bytes, "")
            if path is not None:
                return self._error("too_large", f"string field is larger than the limit of {self.limits.max_string_bytes} bytes", line, path or "<root>")
        item = RawItem(line=line, index=self.index, value=value)
        self.index += 1
        return item

    def _decode(self, line: _Line) -> str | RawItem:
        assert line.raw is not None
        raw = line.raw
        skip = 3 if line.offset == 0 and raw.startswith(b"\xef\xbb\xbf") else 0
        try:
            return raw[skip:].decode("utf-8")
        except UnicodeDecodeError as err:
            pos = err.start + skip
            return self._error(
                "encoding",
                f"invalid UTF-8 byte 0x{raw[pos]:02x} at byte {pos} of the line (file offset {line.offset + pos}); the file must be UTF-8",
                line.number,
            )

    def _too_large(self, line: _Line) -> RawItem:
        return self._error("too_large", f"line of {line.size} bytes is larger than the limit of {self.limits.max_line_bytes} bytes", line.number)

    # -- dispatch -------------------------------------------------------------------------------

    def items(self) -> Iterator[RawItem]:
        while True:
            line = self.lines.next()
            if line is None:
                return
            if line.raw is None:
                yield self._too_large(line)
                continue
            text = self._decode(line)
            if isinstance(text, RawItem):
                yield text
                continue
            if not text.strip():
                continue
            self.lines.push_back([line])
            if text.lstrip(_WS).startswith("["):
                yield from self._array()
            else:
                yield from self._jsonl()
            return

    # -- JSONL ----------------------------------------------------------------------------------

    def _jsonl(self) -> Iterator[RawItem]:
        while True:
            line = self.lines.next()
            if line is None:
                return
            if line.raw is None:
                yield self._too_large(line)
                continue
            text = self._decode(line)
            if isinstance(text, RawItem):
                yield text
                continue
            if not text.strip():
                continue
            try:
                value = _DECODER.decode(text)
            except _DuplicateKey as err:
                yield self._error("malformed_json", f"duplicate key {err.key!r} in one JSON object", line.number)
                continue
            except json.JSONDecodeError as err:
                if _incomplete(err, text):
                    multi = self._multi_line(line, text)
                    if multi is not None:
                        yield multi
                        continue
                yield self._error("malformed_json", f"malformed JSON at column {err.colno}: {err.msg}", line.number)
                continue
            yield self._value(value, line.number, line.size)

    def _multi_line(self, first: _Line, text: str) -> RawItem | None:
        """Read a value that spans several lines; None (lines pushed back) when that fails."""
        taken: list[_Line] = []
        parts = [text]
        size = first.size
        target = 2 * size + 4096
        eof = False
        start = len(text) - len(text.lstrip(_WS))
        while True:
            while size < target and not eof:
                line = self.lines.next()
                if line is None:
                    eof = True
                    break
                taken.append(line)
                if line.raw is None:
                    self.lines.push_back(taken)
                    return None
                try:
                    parts.append(line.raw.decode("utf-8"))
                except UnicodeDecodeError:
                    self.lines.push_back(taken)
                    return None
                size += line.size
                if size > self.limits.max_line_bytes:
                    self.lines.push_back(taken)
                    return None
            buf = "".join(parts)
            try:
                value, end = _DECODER.raw_decode(buf, start)
            except _DuplicateKey as err:
                self.lines.push_back(taken)
                return self._error("malformed_json", f"duplicate key {err.key!r} in one JSON object", first.number)
            except json.JSONDecodeError as err:
                if eof or not _incomplete(err, buf):
                    self.lines.push_back(taken)
                    return None
                target = 2 * size
                continue
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
            return self._value(value, first.number, size)

    # -- top-level array -----------------------------------------------------------------------

    def _array(self) -> Iterator[RawItem]:
        state = _ArrayState(self)
        try:
            state.fill_until(lambda: state.buf.strip(_WS) != "")
            state.skip_ws()
            assert state.buf[state.pos] == "["
            state.pos += 1
            first = True
            while True:
                state.skip_ws()
                if state.at_end():
                    raise state.end("the JSON array is not closed (end of file inside the array)")
                char = state.buf[state.pos]
                if char == "]":
                    if not first:
                        raise _Stop(state.error("malformed_json", "trailing comma before ']' in the JSON array"))
                    state.pos += 1
                    break
                line = state.line_at(state.pos)
                value, size = state.value()
                yield self._value(value, line, size)
                first = False
                state.skip_ws()
                if state.at_end():
                    raise state.end("the JSON array is not closed (end of file inside the array)")
                char = state.buf[state.pos]
                if char == ",":
                    state.pos += 1
                    state.skip_ws()
                    if not state.at_end() and state.buf[state.pos] == "]":
                        raise _Stop(state.error("malformed_json", "trailing comma before ']' in the JSON array"))
                    continue
                if char == "]":
                    state.pos += 1
                    break
                raise _Stop(state.error("malformed_json", f"expected ',' or ']' after an array item, found {char!r}"))
            state.skip_ws()
            if not state.at_end():
                raise _Stop(state.error("malformed_json", "extra data after the top-level JSON array"))
            if state.stop is not None:
                raise state.stop
        except _Stop as stop:
            stop.info.message += "; the rest of the file was not read"
            self.index += 1
            yield RawItem(line=stop.info.line or 0, index=self.index - 1, error=stop.info)


class _ArrayState:
    """A sliding text window over the file, with the line number of its first character."""

    def __init__(self, reader: _Reader):
        self.reader = reader
        self.lines = reader.lines
        self.buf = ""
        self.pos = 0
        self.base_line = 0  # line number of buf[0]
        self._parts: list[str] = []  # lines read but not yet joined into buf (joining once is linear)
        self._parts_len = 0
        self._count_pos = 0  # line_at cache: newlines in buf[:_count_pos] == _count_lines
        self._count_lines = 0
        self.eof = False
        # a line that cannot be read ends the window; its error is raised only when the parser needs
        # text beyond the window, so complete items before it are still delivered
        self.stop: _Stop | None = None

    def error(self, kind: str, message: str, line: int | None = None) -> InputErrorInfo:
        line = line if line is not None else self.line_at(min(self.pos, max(len(self.buf) - 1, 0)))
        return InputErrorInfo(kind=kind, message=message, file=self.reader.name, line=line)

    def line_at(self, pos: int) -> int:
        self._sync()
        if pos < self._count_pos:
            self._count_pos = self._count_lines = 0
        self._count_lines += self.buf.count("\n", self._count_pos, pos)
        self._count_pos = pos
        return self.base_line + self._count_lines

    def _sync(self) -> None:
        if self._parts:
            self.buf += "".join(self._parts)
            self._parts.clear()
            self._parts_len = 0

    def _size(self) -> int:
        return len(self.buf) + self._parts_len

    def _trim(self) -> None:
        if self.pos > 65536:
            self.base_line = self.line_at(self.pos)
            self.buf = self.buf[self.pos :]
            self.pos = 0
            self._count_pos = self._count_lines = 0

    def _read_line(self) -> bool:
        if self.stop is not None:
            return False
        line = self.lines.next()
        if line is None:
            self.eof = True
            return False
        if not self.buf and not self._parts:
            self.base_line = line.number
            self._count_pos = self._count_lines = 0
        if line.raw is None:
            self.stop = _Stop(
                InputErrorInfo(
                    kind="too_large",
                    message=f"line of {line.size} bytes is larger than the limit of {self.reader.limits.max_line_bytes} bytes",
                    file=self.reader.name,
                    line=line.number,
                )
            )
            return False
        decoded = self.reader._decode(line)
        if isinstance(decoded, RawItem):
            self.reader.index -= 1  # the stop error is the item, not this one
            assert decoded.error is not None
            self.stop = _Stop(decoded.error)
            return False
        self._parts.append(decoded)
        self._parts_len += len(decoded)
        return True

    def end(self, message: str) -> _Stop:
        """The error for running out of text: the unreadable line if there was one, else ``message``."""
        return self.stop or _Stop(self.error("malformed_json", message))

    def fill_until(self, done) -> None:
        while True:
            self._sync()
            if done() or not self._read_line():
                self._sync()
                return

    def at_end(self) -> bool:
        self.fill_until(lambda: self.pos < len(self.buf))
        return self.pos >= len(self.buf)

    def skip_ws(self) -> None:
        while True:
            self._sync()
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf) or not self._read_line():
                self._sync()
                return

    def value(self) -> tuple[Any, int]:
        self._trim()
        start = self.pos
        limit = self.reader.limits.max_line_bytes
        while True:
            self._sync()
            try:
                value, end = _DECODER.raw_decode(self.buf, start)
            except _DuplicateKey as err:
                raise _Stop(self.error("malformed_json", f"duplicate key {err.key!r} in one JSON object", self.line_at(start))) from None
            except json.JSONDecodeError as err:
                pending = len(self.buf) - start
                if not _incomplete(err, self.buf):
                    raise _Stop(
                        self.error(
                            "malformed_json",
                            f"malformed JSON in the array item: {err.msg} at line {self.base_line + err.lineno - 1}, column {err.colno}",
                            self.line_at(start),
                        )
                    ) from None
                if self.eof or self.stop is not None:
                    raise self.end(f"malformed JSON in the array item: {err.msg} at line {self.base_line + err.lineno - 1}, column {err.colno}") from None
                if pending > limit:
                    raise _Stop(self.error("too_large", f"array item is larger than the limit of {limit} bytes", self.line_at(start))) from None
                target = len(self.buf) + max(pending, 4096)
                while self._size() < target and self._read_line():
                    pass
                continue
            size = end - start
            if size * 4 > limit and len(self.buf[start:end].encode("utf-8")) > limit:
                raise _Stop(self.error("too_large", f"array item is larger than the limit of {limit} bytes", self.line_at(start)))
            self.pos = end
            return value, size


def _incomplete(err: json.JSONDecodeError, text: str) -> bool:
    """The error is at the end of the text: more lines may complete the value."""
    return err.pos >= len(text.rstrip(_WS))


def _oversize_string(value: Any, limit: int, path: str) -> str | None:
    """Path of the first string (or object key) longer than ``limit`` bytes, else None."""
    if isinstance(value, str):
        return path if len(value) * 4 > limit and len(value.encode("utf-8", "surrogatepass")) > limit else None
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if len(key) * 4 > limit and len(key.encode("utf-8", "surrogatepass")) > limit:
                return sub
            found = _oversize_string(item, limit, sub)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _oversize_string(item, limit, f"{path}[{i}]")
            if found is not None:
                return found
    return None
