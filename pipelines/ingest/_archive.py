"""JSON members of a zip archive (an Inspect ``.eval`` log), read in memory within bounds.

An archive is never extracted to disk, and a hostile one cannot exhaust memory: it may declare
small sizes and inflate to gigabytes, hold millions of members, or use a compression method the
standard library cannot read. So the member count is capped, so is what the members inflate to
together (``Limits.max_archive_bytes``: 150 valid 24 MiB members in 3.6 MB of archive were 4.8 GB
of memory and a 1.2 GB results.jsonl), each member's declared size is checked
against the limit before reading and its actual size while reading (at most ``limit + 1`` bytes are
ever inflated), and every failure (bad CRC, unsupported compression, encryption, invalid JSON,
duplicate keys, an oversize string, nesting past ``Limits.max_depth``) becomes an ``InputErrorInfo``
naming the member.

Compression methods: those of Python's ``zipfile`` (stored, deflate, bzip2, lzma) and Zstandard
(method 93), which current Inspect writes (``inspect_ai._util.zipfile``: zstd level 3, in frames
of at most 200 MiB of input) and ``zipfile`` reads only from Python 3.14 on. A zstd member is
read through the ``zstandard`` library, under the same bounds: its frames are decoded as a stream
(across frame boundaries), at most ``limit + 1`` bytes, with a bounded decoding window, and the
result is checked against the member's CRC-32 and size as ``zipfile`` checks its own.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from typing import IO, Any, cast

import orjson

from judge import UNIQUE_KEYS, BadInputError, DuplicateKey, InputErrorInfo, text_nesting_error
from pipelines.ingest._base import Limits
from pipelines.ingest._reader import _oversize_string

MAX_MEMBERS = 200_000  # an eval log holds one member per sample and epoch, plus a few headers
ZIP_ZSTANDARD = 93  # APPNOTE.TXT 4.4.5
ZSTD_MAX_WINDOW = 1 << 27  # bytes of decoding window a zstd frame may ask for (libzstd's own default cap)
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's structFileHeader: 30 bytes
_WAY_OUT = "re-save the log in a readable form with Inspect (`inspect log convert --to json`) and read the .json"


def _read_errors() -> tuple[type[BaseException], ...]:
    """What reading a member may raise (zstandard imported only once an archive is read: 7 ms of
    every run's start-up otherwise)."""
    import zstandard

    return (zipfile.BadZipFile, zlib.error, zstandard.ZstdError, NotImplementedError, RuntimeError, EOFError, OSError)


class ArchiveError(BadInputError):
    """The archive as a whole cannot be read."""

    def __init__(self, info: InputErrorInfo):
        super().__init__(info.render())
        self.info = info


class Archive:
    """An open zip archive; ``read_json(member)`` is the member's JSON value or its error."""

    def __init__(self, path: str, limits: Limits):
        self.path = path
        self.limits = limits
        try:
            self._zip = zipfile.ZipFile(path)
        except zipfile.BadZipFile as err:  # its directory of members, written last, is missing or broken
            raise ArchiveError(
                InputErrorInfo(
                    kind="malformed_archive", message=f"the zip archive is truncated or damaged: its directory of members cannot be read ({err})", file=path
                )
            ) from None
        except OSError as err:
            raise ArchiveError(InputErrorInfo(kind="malformed_archive", message=f"not a readable zip archive: {err}", file=path)) from None
        infos = self._zip.infolist()
        if len(infos) > MAX_MEMBERS:
            self._zip.close()
            raise ArchiveError(
                InputErrorInfo(kind="too_large", message=f"the archive holds {len(infos)} members, more than the limit of {MAX_MEMBERS}", file=path)
            )
        expands = sum(info.file_size for info in infos)  # each member is read only up to its declared size (a mismatch is an error)
        if expands > limits.max_archive_bytes:
            self._zip.close()
            raise ArchiveError(
                InputErrorInfo(
                    kind="too_large",
                    message=f"the archive's {len(infos)} members inflate to {expands} bytes, more than the limit of {limits.max_archive_bytes} bytes "
                    f"for one archive; split the eval into several logs, or {_WAY_OUT}",
                    file=path,
                )
            )
        self._infos = {info.filename: info for info in infos}
        self.names: list[str] = [info.filename for info in infos]

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._zip.close()

    def __contains__(self, name: str) -> bool:
        return name in self._infos

    def read_json(self, name: str, strict: bool = True) -> Any:
        """The JSON value of member ``name``, or an ``InputErrorInfo`` saying why it cannot be read.

        ``strict=False`` reads with orjson, several times faster, but a duplicate key then keeps its
        last value silently: for a first look at a member whose strict reading reports the problem."""
        limit = self.limits.max_line_bytes
        info = self._infos.get(name)
        if info is None:
            return self._error("missing_member", f"the archive has no member {name}", name)
        if info.file_size > limit:
            return self._error("too_large", f"member {name} inflates to {info.file_size} bytes, more than the limit of {limit} bytes", name)
        try:
            if info.compress_type == ZIP_ZSTANDARD:
                data = self._read_zstd(info, limit)
            else:
                handle: IO[bytes]
                with self._zip.open(info) as handle:
                    data = handle.read(limit + 1)
        except NotImplementedError as err:
            return self._error("unsupported", f"member {name} uses a compression method this reader cannot read ({err}); {_WAY_OUT}", name)
        except _read_errors() as err:
            return self._error("malformed_archive", f"member {name} cannot be read: {err}", name)
        if len(data) > limit:
            return self._error("too_large", f"member {name} inflates to more than the limit of {limit} bytes (its header said {info.file_size})", name)
        if not strict:
            try:
                return self._bounded(name, orjson.loads(data[3:] if data.startswith(b"\xef\xbb\xbf") else data), data)
            except orjson.JSONDecodeError:
                pass  # the strict reading below says why
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            return self._error("encoding", f"member {name} is not UTF-8 (byte offset {err.start})", name)
        try:
            value = UNIQUE_KEYS.decode(text)
        except DuplicateKey as err:
            return self._error("malformed_json", f"member {name}: duplicate key {err.key!r} in one object", name)
        except RecursionError:
            return self._error("too_deep", f"member {name}: nested deeper than {self.limits.max_depth} levels", name)
        except json.JSONDecodeError as err:
            return self._error("malformed_json", f"member {name}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}", name)
        if len(data) > self.limits.max_string_bytes:
            path = _oversize_string(value, self.limits.max_string_bytes, "")
            if path is not None:
                return self._error(
                    "too_large", f"member {name}: string field {path or '<root>'} is larger than the limit of {self.limits.max_string_bytes} bytes", name
                )
        return self._bounded(name, value, data)

    def _bounded(self, name: str, value: Any, data: bytes) -> Any:
        """``value``, or a ``too_deep`` error: what reads it recurses over it, as over a JSONL line."""
        path = text_nesting_error(value, data, self.limits.max_depth)
        if path is None:
            return value
        return self._error("too_deep", f"member {name}: nested deeper than {self.limits.max_depth} levels at {path}", f"{name}:{path}")

    def _read_zstd(self, info: zipfile.ZipInfo, limit: int) -> bytes:
        """At most ``limit + 1`` inflated bytes of a Zstandard member, CRC- and size-checked when whole."""
        if info.flag_bits & 0x1:
            raise NotImplementedError("the member is encrypted")
        with open(self.path, "rb") as handle:
            handle.seek(info.header_offset)
            header = handle.read(_LOCAL_HEADER.size)
            if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
                raise zipfile.BadZipFile("bad local file header")
            fields = _LOCAL_HEADER.unpack(header)
            handle.seek(fields[10] + fields[11], 1)  # the member's name and extra field as the local header gives them
            window = cast(IO[bytes], _Window(handle, info.compress_size))  # the decoder calls only read()
            import zstandard

            decoder = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
            with decoder.stream_reader(window, read_across_frames=True, closefd=False) as reader:
                chunks: list[bytes] = []
                size = 0
                while size <= limit:
                    chunk = reader.read(limit + 1 - size)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            return data  # the caller reports it too large
        if len(data) != info.file_size:
            raise zipfile.BadZipFile(f"inflates to {len(data)} bytes, not the {info.file_size} its header says")
        if zlib.crc32(data) != info.CRC:
            raise zipfile.BadZipFile("bad CRC-32")
        return data

    def _error(self, kind: str, message: str, member: str) -> InputErrorInfo:
        return InputErrorInfo(kind=kind, message=message, file=self.path, field=member)


class _Window:
    """The ``size`` bytes of an open file from where it stands: one member's compressed data."""

    def __init__(self, handle: IO[bytes], size: int):
        self.handle = handle
        self.left = size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.handle.read(n) if n > 0 else b""
        self.left -= len(data)
        return data
