"""The trajectories input, read exactly once, cut into shards of whole lines.

Trajectories are read once, in order, by ``LineShards``: it cuts the byte stream into shards of
whole lines for the graders and hashes the bytes as they pass (the manifest's sha256 costs no
second read), from a regular file and from a pipe alike (a pipe is spooled to a file first); for
worker processes on this machine a shard is only a range of the file, which the worker reads
itself (``RawShard.load``): the run then never copies a shard's bytes into a pipe.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from typing import IO, Any, cast

import msgspec
import orjson

from pipelines.run.spool import BLOCK, InputChanged

__all__ = ["READ_BUFFER", "SHARD_BYTES", "ItemCounter", "LineShards", "RawShard", "one_shard"]

# About how many bytes one shard holds. Measured at 100k realistic conversations (22 KB lines):
# 4 MB shards cost one process ~3% more CPU than 8 MB (twice the shards: each is merged, journaled
# and checkpointed). They lowered the run's own peak with 2 workers (315-322 MB to 283 MB) while
# shards carried their bytes to the workers; as byte ranges they carry none (peak 262 MB at 8 MB).
SHARD_BYTES = 8 << 20
# The buffer to open an input with for ``LineShards``, which reads it line by line: with the
# default 8 KB a 22 KB line takes several reads and joins; with 1 MB, cutting 20k realistic
# conversations (449 MB) takes 0.65 s of CPU instead of 1.03 s.
READ_BUFFER = BLOCK


def one_shard(path: str | os.PathLike[str], max_lines: int, max_bytes: int) -> bool:
    """The file holds fewer than ``max_lines`` lines in at most ``max_bytes``: ``LineShards`` cuts it
    into one shard at most (a run of one line, a few hundred), which no pool of workers can share."""
    try:
        if os.stat(path).st_size > max_bytes:
            return False
        with open(path, "rb") as fh:
            return fh.read(max_bytes + 1).count(b"\n") < max_lines
    except OSError:
        return False


class RawShard(msgspec.Struct):
    """A run of whole lines of the trajectories input, where it starts, and what it holds.

    A line longer than the reader's limit is not held: ``data`` has an empty placeholder at its
    place and ``virtual`` records (position in ``data``, its size, whether it ends with a
    newline); ``ShardStream`` plays it back as that many filler bytes, which is all a reader
    learns of a line it rejects as too large.

    A shard with a ``path`` holds no bytes yet: it is the range of that file the run cut, and
    ``load`` reads it (in the worker that grades it).
    """

    index: int
    data: bytes
    first_line: int  # 1-based number of its first line
    first_byte: int  # offset of its first byte in the input
    lines: int  # lines in the shard (a final line without a newline counts)
    nonblank: int  # lines that are not blank (one item each in a JSONL file)
    size: int  # bytes of the input it covers (virtual lines at their full size)
    virtual: tuple[tuple[int, int, bool], ...] = ()
    objects: int = 0  # lines opening an object at their first byte, or too long to keep (see ItemCounter)
    sha256: str = ""  # of the lines it holds, a virtual one as its size (a resumed run checks it reads the same)
    path: str | None = None  # the file to read its bytes from (None: ``data`` holds them)

    def load(self, max_line_bytes: int, digest: bool = True) -> RawShard:
        """This shard holding its bytes: itself, or its range read from ``path`` (with its sha256
        unless ``digest`` is False). Raises ``InputChanged`` when the range no longer holds the
        lines cut there."""
        if self.path is None:
            return self
        try:
            return self._read(max_line_bytes, digest)
        except OSError as exc:  # gone, or no longer readable
            raise InputChanged(
                f"{self.path} changed while it was graded: it could not be read again ({exc.strerror or exc}); grade a copy that does not change"
            ) from exc

    def _read(self, max_line_bytes: int, digest: bool) -> RawShard:
        assert self.path is not None
        with open(self.path, "rb", buffering=READ_BUFFER) as fh:
            fh.seek(self.first_byte)
            if self.size <= max_line_bytes:  # no line can be too long to keep: the bytes as they are
                data = fh.read(self.size)  # buffered: reads on until it has them all (or the file ends)
                sha256 = hashlib.sha256(data).hexdigest() if digest else ""
                raw: RawShard | None = msgspec.structs.replace(self, data=data, lines=_count_lines(data), size=len(data), path=None, sha256=sha256)
            else:  # cut into lines as the run cut it, holding none that is too long
                try:
                    cutter = LineShards(cast(IO[bytes], _Range(fh, self.size)), max_line_bytes=max_line_bytes)
                    raw = cutter.take(self.size, self.index, self.first_line)
                    raw.first_byte = self.first_byte
                except EOFError:
                    raw = None
        if raw is None or (raw.lines, raw.size) != (self.lines, self.size):
            raise InputChanged(
                f"{self.path} changed while it was graded: bytes {self.first_byte}-{self.first_byte + self.size} no longer hold the "
                f"lines {self.first_line}-{self.first_line + self.lines - 1} read there; grade a copy that does not change"
            )
        return raw

    def join(self, following: RawShard) -> RawShard:
        """This shard and the one after it as one (the cut split an item)."""
        assert following.first_byte == self.first_byte + self.size and following.path == self.path, "only a shard and the next one join"
        joined = msgspec.structs.replace(
            self,
            lines=self.lines + following.lines,
            nonblank=self.nonblank + following.nonblank,
            size=self.size + following.size,
            objects=self.objects + following.objects,
        )
        if self.path is not None:
            return joined
        shift = len(self.data)
        data = self.data + following.data
        virtual = self.virtual + tuple((at + shift, size, nl) for at, size, nl in following.virtual)
        return msgspec.structs.replace(joined, data=data, virtual=virtual, sha256=_digest(data, virtual))


class ItemCounter:
    """How many items a shard holds, guessed before it is read: each shard is read from the index
    of its first item, which the run guesses from the shards before it (a wrong guess costs
    reading the shard again, in the run's own process).

    In a JSONL file every line that is not blank is an item (``RawShard.nonblank``); in a
    pretty-printed stream of objects (``jq .``) every line opening an object at its first byte
    is (``RawShard.objects``). The counter uses the one that matched the last shard read; before
    any, the one the file's first line suggests (``for_file``).
    """

    def __init__(self, by_objects: bool = False) -> None:
        self.by_objects = by_objects

    @classmethod
    def for_file(cls, path: str | os.PathLike, budget: int = 1 << 20) -> ItemCounter:
        """Counting objects when the file's first line that is not blank opens an object that it
        does not close (a pretty-printed stream): the shards handed out before the first one is
        read are then guessed right too (on 2 workers, 6 of the first 8 shards of such a stream
        were read twice, in the run's own process)."""
        with open(path, "rb") as fh:
            while line := fh.readline(budget):
                line = line.removeprefix(b"\xef\xbb\xbf") if fh.tell() == len(line) else line
                if line.strip():
                    return cls(by_objects=line[:1] == b"{" and not _complete(line))
                budget -= len(line)
                if budget <= 0:
                    break
        return cls()

    def __call__(self, raw: RawShard) -> int:
        return raw.objects if self.by_objects else raw.nonblank

    def learn(self, raw: RawShard, items: int) -> None:
        """``raw`` held ``items`` items."""
        if items != raw.nonblank and items == raw.objects:
            self.by_objects = True
        elif items == raw.nonblank and items != raw.objects:
            self.by_objects = False


def _complete(line: bytes) -> bool:
    """The line holds a whole JSON value."""
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _count_lines(data: bytes) -> int:
    """Lines as the reader splits them (``\n``, ``\r\n``, a bare ``\r``; a last line without one)."""
    ends = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    return ends + (1 if data and data[-1:] not in (b"\n", b"\r") else 0)


def _digest(data: bytes, virtual: tuple[tuple[int, int, bool], ...]) -> str:
    """A shard's sha256: its bytes, with each virtual line hashed as its size."""
    digest = hashlib.sha256()
    pos = 0
    for at, size, _ in virtual:
        digest.update(data[pos:at])
        digest.update(f"\0virtual {size}\n".encode())
        pos = at
    digest.update(data[pos:])
    return digest.hexdigest()


class _Range:
    """At most ``size`` bytes of a binary stream, from where it stands."""

    def __init__(self, stream: IO[bytes], size: int):
        self.stream = stream
        self.name = getattr(stream, "name", "<stream>")
        self.left = size

    def readline(self, size: int | None = -1) -> bytes:
        return self._take(self.stream.readline, size)

    def read(self, size: int | None = -1) -> bytes:
        return self._take(self.stream.read, size)

    def _take(self, reader: Any, size: int | None) -> bytes:
        limit = self.left if size is None or size < 0 else min(size, self.left)
        data = reader(limit) if limit > 0 else b""
        self.left -= len(data)
        return data


class _Hashing:
    """A binary stream that hashes (and counts) every byte read through it."""

    def __init__(self, stream: IO[bytes]):
        self.stream = stream
        self.name = getattr(stream, "name", "<stream>")
        self.digest = hashlib.sha256()
        self.bytes_read = 0

    def readline(self, size: int = -1) -> bytes:
        data = self.stream.readline(size)
        self.digest.update(data)
        self.bytes_read += len(data)
        return data

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.digest.update(data)
        self.bytes_read += len(data)
        return data


class LineShards:
    """Cuts a byte stream into shards of whole lines (at most ``max_lines`` lines / about
    ``max_bytes`` bytes each), hashing every byte once as it passes.

    Lines are the reader's own (``pipelines.ingest.reader_lines``: ``\\n``, ``\\r\\n`` or a bare
    ``\\r``), so line numbers and byte offsets agree with a reader of the whole file. A cut is
    placed only before a line that is valid UTF-8, not blank, not too long to keep and not
    starting with ``[`` (a reader starting there must take the file for JSONL, as the reader of
    the whole file did), preferably one opening an object (``_cut_before``), so a shard starts
    where a reader of the whole file starts an item, unless an item spans lines (see
    ``pipelines.run.shards``, which checks that and regrades across the cut). Memory holds one shard
    (at most about twice ``max_bytes``): a line longer than ``max_line_bytes`` is counted, not kept.

    With ``source`` set (the path of the file the stream reads), shards hold no bytes: each is
    that file's range, which its grader reads (``RawShard.load``).
    """

    def __init__(self, stream: IO[bytes], max_lines: int = 1000, max_bytes: int = SHARD_BYTES, max_line_bytes: int = 32 << 20):
        from pipelines.ingest import Limits, reader_lines

        self.source: str | None = None
        self._hashing = _Hashing(stream)
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._lines = reader_lines(cast(IO[bytes], self._hashing), Limits(max_line_bytes=max_line_bytes))
        self._held: tuple[bytes | None, int] | None = None  # a line read that starts the next shard
        self._offset = 0  # bytes of the lines handed out in shards (the next shard's first byte)

    @property
    def bytes_read(self) -> int:
        """Bytes read from the input so far (for progress: the reader reads a little ahead)."""
        return self._hashing.bytes_read

    def hexdigest(self) -> str:
        return self._hashing.digest.hexdigest()

    def drain(self) -> None:
        """Read (and hash) the rest of the input."""
        self._held = None
        while self._hashing.read(BLOCK):
            pass

    def shards(self, first_line: int = 1, first_index: int = 0) -> Iterator[RawShard]:
        """The shards of the rest of the input, numbered from ``first_index``."""
        index, line_no = first_index, first_line
        while True:
            raw = self._shard(index, line_no, None)
            if raw is None:
                return
            yield raw
            index, line_no = index + 1, line_no + raw.lines

    def take(self, size: int, index: int, first_line: int) -> RawShard:
        """The next ``size`` bytes as one shard (re-reading a shard of an interrupted run)."""
        raw = self._shard(index, first_line, size)
        if raw is None or raw.size != size:
            raise EOFError("the input ends before the bytes the interrupted run graded")
        return raw

    def _shard(self, index: int, first_line: int, exact: int | None) -> RawShard | None:
        start = self._offset
        keep = self.source is None or exact is not None
        parts: list[bytes] = []
        virtual: list[tuple[int, int, bool]] = []
        kept = size = nonblank = lines = objects = 0
        while exact is None or size < exact:
            if self._held is not None:
                line, line_size = self._held
                self._held = None
            else:
                read = next(self._lines, None)
                if read is None:
                    break
                line, line_size = read
            if exact is None and line is not None and self._cut_before(line, lines, size):
                self._held = (line, line_size)  # it starts the next shard
                break
            lines += 1
            size += line_size
            if line is None:  # too long to keep: played back as filler of its size (see ShardStream)
                nonblank += 1
                objects += 1
                if keep:
                    virtual.append((kept, line_size, True))
                    parts.append(b"")
            else:
                if line and not line.isspace():  # not blank (bytes.strip() would copy the line to say so)
                    nonblank += 1
                    if line[:1] == b"{":
                        objects += 1
                if keep:
                    parts.append(line)
                    kept += len(line)
        if not lines:
            return None
        self._offset += size
        if not keep:
            return RawShard(index, b"", first_line, start, lines, nonblank, size, objects=objects, path=self.source)
        data = b"".join(parts)
        virtual_lines = tuple(virtual)
        return RawShard(index, data, first_line, start, lines, nonblank, size, virtual_lines, objects, _digest(data, virtual_lines))

    def _cut_before(self, line: bytes, lines: int, size: int) -> bool:
        """Whether the shard of ``lines`` lines (``size`` bytes) so far ends before ``line``.

        Full shards end before a line that may start one (``_may_start_shard``), preferably one
        opening an object at its first byte: where every item of a JSONL file starts, and in a
        pretty-printed stream of objects (``jq .``, ``json.dumps(indent=...)``) only the items
        themselves do. A cut inside an item makes the run grade both shards again as one; cut
        anywhere, a stream of 1,000 pretty-printed conversations (210 lines each) was graded 421
        times over in growing joins: 140 s instead of 3 s. A shard finding no such line ends at
        twice its size, before any line that may start one."""
        if lines < self.max_lines and size < self.max_bytes:
            return False
        preferred = line[:1] == b"{" or lines >= 2 * self.max_lines or size >= 2 * self.max_bytes
        return preferred and _may_start_shard(line)


def _may_start_shard(line: bytes) -> bool:
    """A reader starting a shard decides JSONL or JSON array from the first line it can decode
    that is not blank; cut only before such a line that does not start a JSON array, so it
    decides JSONL, as the reader of the whole file did."""
    stripped = line.lstrip(b" \t\r\n")
    if not stripped or stripped.startswith(b"["):
        return False
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
