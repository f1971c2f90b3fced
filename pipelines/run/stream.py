"""A shard's bytes as the binary stream a format reader reads (``grade_shard``, the task shards)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from pipelines.run.lines import RawShard

__all__ = ["ShardStream"]


class ShardStream(io.RawIOBase):
    """The shard's bytes as a binary stream named like the input; virtual lines (too long to
    keep) play back as filler of their size. The reader notes on it when the shard ends inside
    an item that spans lines (``cut_inside_item``)."""

    def __init__(self, raw: RawShard | Iterator[RawShard], name: str):
        super().__init__()
        self.name = name
        self._segments = _segments(raw) if isinstance(raw, RawShard) else (seg for r in raw for seg in _segments(r))
        self._current = b""
        self._pos = 0
        self.cut_inside_item = False

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> bytes:
        limit = size if size is not None and size >= 0 else None
        out = b""
        while limit is None or len(out) < limit:
            if self._pos >= len(self._current):
                self._current, self._pos = next(self._segments, b""), 0
                if not self._current:
                    break
            end = len(self._current) if limit is None else min(len(self._current), self._pos + limit - len(out))
            newline = self._current.find(b"\n", self._pos, end)
            take = newline + 1 if newline >= 0 else end
            out += self._current[self._pos : take]
            self._pos = take
            if newline >= 0:
                break
        return out

    def readinto(self, buffer: Any) -> int:
        data = self.readline(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _segments(raw: RawShard) -> Iterator[bytes]:
    pos = 0
    for at, size, newline in raw.virtual:
        if at > pos:
            yield raw.data[pos:at]
        pos = at
        body = size - 1 if newline else size
        while body > 0:
            piece = min(body, 1 << 20)
            yield b"x" * piece
            body -= piece
        if newline:
            yield b"\n"
    if pos < len(raw.data):
        yield raw.data[pos:]
