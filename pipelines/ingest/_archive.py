"""JSON members of a zip archive (an Inspect ``.eval`` log), read in memory within bounds.

An archive is never extracted to disk, and a hostile one cannot exhaust memory: it may declare
small sizes and inflate to gigabytes, hold millions of members, or use a compression method the
standard library cannot read. So the member count is capped, each member's declared size is checked
against the limit before reading and its actual size while reading (at most ``limit + 1`` bytes are
ever inflated), and every failure (bad CRC, unsupported compression, encryption, invalid JSON,
duplicate keys, an oversize string) becomes an ``InputErrorInfo`` naming the member.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from typing import IO, Any

import orjson

from judge import UNIQUE_KEYS, BadInputError, DuplicateKey, InputErrorInfo
from pipelines.ingest._base import Limits
from pipelines.ingest._reader import _oversize_string

MAX_MEMBERS = 200_000  # an eval log holds one member per sample and epoch, plus a few headers

_READ_ERRORS = (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, EOFError, OSError)


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
        except (zipfile.BadZipFile, OSError) as err:
            raise ArchiveError(InputErrorInfo(kind="malformed_archive", message=f"not a readable zip archive: {err}", file=path)) from None
        infos = self._zip.infolist()
        if len(infos) > MAX_MEMBERS:
            self._zip.close()
            raise ArchiveError(
                InputErrorInfo(kind="too_large", message=f"the archive holds {len(infos)} members, more than the limit of {MAX_MEMBERS}", file=path)
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
            handle: IO[bytes]
            with self._zip.open(info) as handle:
                data = handle.read(limit + 1)
        except NotImplementedError as err:
            return self._error("unsupported", f"member {name} uses a compression method Python's zipfile cannot read ({err})", name)
        except _READ_ERRORS as err:
            return self._error("malformed_archive", f"member {name} cannot be read: {err}", name)
        if len(data) > limit:
            return self._error("too_large", f"member {name} inflates to more than the limit of {limit} bytes (its header said {info.file_size})", name)
        if not strict:
            try:
                return orjson.loads(data[3:] if data.startswith(b"\xef\xbb\xbf") else data)
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
        except json.JSONDecodeError as err:
            return self._error("malformed_json", f"member {name}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}", name)
        if len(data) > self.limits.max_string_bytes:
            path = _oversize_string(value, self.limits.max_string_bytes, "")
            if path is not None:
                return self._error(
                    "too_large", f"member {name}: string field {path or '<root>'} is larger than the limit of {self.limits.max_string_bytes} bytes", name
                )
        return value

    def _error(self, kind: str, message: str, member: str) -> InputErrorInfo:
        return InputErrorInfo(kind=kind, message=message, file=self.path, field=member)
