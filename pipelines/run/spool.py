"""The run's input files, each read exactly once: the ones read by path.

A grading run used to read its inputs several times: the CLI counted lines for the progress bar,
format detection read a head and reopened the file, the manifest hashed it again. A FIFO, a
process substitution (``<(cmd)``) or standard input cannot be read twice: the second read saw
nothing and the run graded 0 rows. Tasks (and a reference file, labels, tool specs) are loaded by
format readers that open a path and may read its head twice (detection, then the load): a path
that is not a regular file is first spooled to a temporary file, hashed on the way
(``TaskInput``), and removed after loading. A compressed input (gzip, bzip2, xz, Zstandard: see
``pipelines.ingest._compressed``) is inflated into the spool the same way, so the readers see its
text. The trajectories are cut into shards as they are read
(``pipelines.run.lines``).

``-`` names standard input (for one of the inputs).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import msgspec

from judge import BadInputError
from pipelines.ingest import MAGIC_BYTES, Limits, compression_of, inflate, inner_name

__all__ = ["BLOCK", "STDIN", "InputChanged", "TaskInput", "display_name", "is_stdin", "open_stream", "sha256_of"]

STDIN = "-"
BLOCK = 1 << 20


class InputChanged(BadInputError):
    """The trajectories input changed while the run graded it: a worker reading its shard's range
    found other lines than the run cut there or could not read it, or the file's size,
    modification time or inode changed under the run."""


def is_stdin(path: str | os.PathLike | None) -> bool:
    return path is not None and str(path) == STDIN


def display_name(path: str | os.PathLike) -> str:
    """The file name results and errors carry for an input: as given on the command line."""
    return str(path)


def _is_regular(path: str | os.PathLike) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def sha256_of(path: str | os.PathLike) -> str:
    """Content hash of a file, or of a folder (BFCL score files): its files' relative paths and
    contents, in sorted order."""
    root = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    for file in files:
        if file != root:
            digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(BLOCK), b""):
                digest.update(block)
    return digest.hexdigest()


@contextmanager
def open_stream(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary stream of the input: standard input for ``-``, else the file (regular or not)."""
    if is_stdin(path):
        yield sys.stdin.buffer
        return
    with open(path, "rb") as fh:
        yield fh


class TaskInput(msgspec.Struct):
    """A tasks or reference input as a regular file the format readers can open by path.

    ``path`` is the file to read; ``display`` the name errors must carry (the spool's own path
    never reaches an output); ``sha256`` is known once the file was spooled or hashed.
    """

    given: str
    path: Path
    spooled: bool
    sha256: str | None = None

    @property
    def display(self) -> str:
        return display_name(self.given)

    @classmethod
    def open(cls, given: str | os.PathLike, spool_dir: Path | None = None, max_inflated: int = Limits().max_inflated_bytes) -> TaskInput:
        """Spool ``given`` when it is not a regular file (a pipe, standard input) or when it is
        compressed (inflated on the way, at most ``max_inflated`` bytes, see
        ``pipelines.ingest._compressed``); a folder (BFCL's data and result folders) is read where it is."""
        regular = not is_stdin(given) and _is_regular(given)
        if not is_stdin(given) and Path(given).is_dir():
            return cls(given=str(given), path=Path(given), spooled=False)
        with open_stream(given) as src:
            head = _read_head(src) if not regular else b""
            compression = compression_of(head) if not regular else _compression_of_file(given)
            if regular and compression is None:
                return cls(given=str(given), path=Path(given), spooled=False)
            name = Path(str(given)).name if not is_stdin(given) else "stdin"
            folder = Path(tempfile.mkdtemp(prefix="judge-input-", dir=spool_dir))
            path = folder / (inner_name(name, compression) if compression else name + ".spool")
            digest = hashlib.sha256()
            with open(path, "wb") as out:
                if compression is not None:
                    inflate(src, head if not regular else b"", compression, out, max_inflated, display_name(given), digest.update)
                else:
                    digest.update(head)
                    out.write(head)
                    for block in iter(lambda: src.read(BLOCK), b""):
                        digest.update(block)
                        out.write(block)
        return cls(given=str(given), path=path, spooled=True, sha256=digest.hexdigest())

    def hash(self) -> str:
        if self.sha256 is None:
            self.sha256 = sha256_of(self.path)
        return self.sha256

    def close(self) -> None:
        if self.spooled:
            self.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()


def _read_head(src: BinaryIO) -> bytes:
    """The first ``MAGIC_BYTES`` bytes of a stream (fewer only at its end)."""
    head = b""
    while len(head) < MAGIC_BYTES and (more := src.read(MAGIC_BYTES - len(head))):
        head += more
    return head


def _compression_of_file(path: str | os.PathLike) -> str | None:
    with open(path, "rb") as fh:
        return compression_of(fh.read(MAGIC_BYTES))
