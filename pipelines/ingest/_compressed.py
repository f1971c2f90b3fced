"""Compressed inputs: a ``.jsonl.gz`` (or bzip2, xz, Zstandard) file or stream, read as the text it holds.

Agent runs are often kept compressed, and a reader that refuses them makes a user decompress
every file first. The compression is recognised by the stream's first bytes, not by its name
(a ``.gz`` that is plain text is read as text; a gzip stream called ``.jsonl`` is inflated). The
inflated text goes to a regular file (the caller's spool) that the format readers then open by
path as any other input, so every reader, shard cutter and line number works unchanged: lines
are those of the inflated text. Inflating stops at ``Limits.max_inflated_bytes`` (a small file
that inflates without end is refused, naming the file and the cap); a stream that is corrupt or
ends before its end marker is refused too, naming the file and how much inflated before.
Zip archives (Inspect's ``.eval``) are not streams: their reader opens them (``_archive``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import IO, Protocol

from judge import BadInputError

__all__ = ["COMPRESSIONS", "MAGIC_BYTES", "UnreadableInput", "compression_of", "inflate", "inner_name"]

COMPRESSIONS = ("gzip", "bzip2", "xz", "zstd")
MAGIC_BYTES = 6  # the longest signature below
_SIGNATURES = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))
_SUFFIXES = {"gzip": (".gz", ".gzip"), "bzip2": (".bz2",), "xz": (".xz",), "zstd": (".zst", ".zstd")}
_BLOCK = 1 << 20


class UnreadableInput(BadInputError):
    """A whole input file that cannot be read as text: its compressed stream is corrupt, ends early
    or inflates past the cap. Nothing of it is graded (its items cannot be told apart)."""


def compression_of(head: bytes) -> str | None:
    """The compression a stream starting with ``head`` (its first ``MAGIC_BYTES`` bytes) uses, if any."""
    for signature, name in _SIGNATURES:
        if head.startswith(signature) and (name != "bzip2" or head[3:4] in b"123456789"):
            return name
    return None


def inner_name(name: str, compression: str) -> str:
    """``runs.jsonl.gz`` -> ``runs.jsonl``: the name the inflated text would have (readers that
    look at a name, such as a labels file's default source, see the uncompressed one)."""
    for suffix in _SUFFIXES[compression]:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


class _Prefixed:
    """A read-only stream: ``head`` (bytes already taken from ``rest``), then ``rest``."""

    def __init__(self, head: bytes, rest: IO[bytes]):
        self._head, self._rest = head, rest

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size < 0:
                data, self._head = self._head + self._rest.read(), b""
                return data
            data, self._head = self._head[:size], self._head[size:]
            return data
        return self._rest.read(size)


class _Inflating(Protocol):
    def read1(self, size: int = -1, /) -> bytes: ...


def _opener(compression: str) -> Callable[[IO[bytes]], AbstractContextManager[_Inflating]]:
    """The decompressing reader of ``compression`` (imported here: most runs read no compressed input)."""
    if compression == "gzip":
        import gzip

        return lambda src: gzip.GzipFile(fileobj=src, mode="rb")  # every member of a concatenated file
    if compression == "bzip2":
        import bz2

        return lambda src: bz2.BZ2File(src)
    if compression == "xz":
        import lzma

        return lambda src: lzma.LZMAFile(src)
    return _ZstdReader


class _ZstdReader:
    """Zstandard frames one after another, read in bounded steps, and an error when the last frame
    is cut short (the library's stream reader ends quietly there, losing the tail unseen)."""

    STEP = 1024  # compressed bytes a step: a step inflates to at most ~32 MB (RLE blocks)

    def __init__(self, src: IO[bytes]):
        import zstandard

        from pipelines.ingest._archive import ZSTD_MAX_WINDOW

        self._src, self._decoder = src, zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        self._frame, self._fed, self._pending = self._decoder.decompressobj(), False, b""

    def __enter__(self) -> _ZstdReader:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def read(self, size: int = -1) -> bytes:
        """The next inflated bytes (at least one unless the stream ended; ``size`` is a hint)."""
        while True:
            data = self._pending or self._src.read(self.STEP)
            self._pending = b""
            if not data:
                if self._fed:
                    raise EOFError("the last Zstandard frame ends early")
                return b""
            self._fed = True
            out = self._frame.decompress(data)
            if self._frame.eof:  # a frame ended: the rest of this step starts the next one
                self._pending, self._frame, self._fed = self._frame.unused_data, self._decoder.decompressobj(), False
            if out:
                return out

    read1 = read  # each read returns what one step inflated, as read1 of the standard library's readers


def _stream_errors() -> tuple[type[BaseException], ...]:
    import lzma
    import zlib

    import zstandard

    return (EOFError, OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError)


def inflate(src: IO[bytes], head: bytes, compression: str, out: IO[bytes], limit: int, name: str, on_block: Callable[[bytes], None] | None = None) -> int:
    """Inflate the stream (``head`` already read from ``src``) into ``out``; the inflated size.

    Raises ``UnreadableInput`` naming ``name`` when it would inflate past ``limit`` bytes, is corrupt,
    or ends before its end marker. ``on_block`` sees each inflated block (the caller hashes them).
    Blocks are taken with ``read1`` (what one step inflated): ``read`` fills its whole block first,
    so a stream cut short lost up to a block unwritten and uncounted ("after 0 inflated bytes")."""
    size = 0
    errors = _stream_errors()
    try:
        with _opener(compression)(_Prefixed(head, src)) as stream:  # type: ignore[arg-type]  # _Prefixed reads as IO does
            while block := stream.read1(_BLOCK):
                size += len(block)
                if size > limit:
                    raise UnreadableInput(
                        f"{name}: its {compression} stream inflates to more than {limit:,} bytes (Limits.max_inflated_bytes): "
                        "decompress it yourself if it is meant to be that large"
                    )
                if on_block is not None:
                    on_block(block)
                out.write(block)
    except errors as exc:
        why = "ends before its end marker (truncated?)" if isinstance(exc, EOFError) else f"is not readable ({exc})"
        raise UnreadableInput(
            f"{name}: its {compression} stream {why} after {size:,} inflated bytes; nothing of it was graded "
            f"(to grade what inflates, pipe it in: `zcat`/`xzcat`/`zstdcat ... | judge grade --trajectories - ...`)"
        ) from exc
    return size
