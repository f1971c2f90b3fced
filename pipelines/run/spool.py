"""The run's input files, each read exactly once: the ones read by path.

A grading run used to read its inputs several times: the CLI counted lines for the progress bar,
format detection read a head and reopened the file, the manifest hashed it again. A FIFO, a
process substitution (``<(cmd)``) or standard input cannot be read twice: the second read saw
nothing and the run graded 0 rows. Tasks (and a reference file, labels, tool specs) are loaded by
format readers that open a path and may read its head twice (detection, then the load): a path
that is not a regular file is first spooled to a temporary file, hashed on the way
(``TaskInput``), and removed after loading. The trajectories are cut into shards as they are read
(``pipelines.run.lines``).

``-`` names standard input (for one of the inputs).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from judge import BadInputError

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


@dataclass
class TaskInput:
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
    def open(cls, given: str | os.PathLike, spool_dir: Path | None = None) -> TaskInput:
        """Spool ``given`` when it is not a regular file (a pipe, standard input); a folder (BFCL's
        data and result folders) is read where it is."""
        if not is_stdin(given) and (_is_regular(given) or Path(given).is_dir()):
            return cls(given=str(given), path=Path(given), spooled=False)
        handle, name = tempfile.mkstemp(prefix="judge-input-", suffix=".spool", dir=spool_dir)
        digest = hashlib.sha256()
        with os.fdopen(handle, "wb") as out, open_stream(given) as src:
            for block in iter(lambda: src.read(BLOCK), b""):
                digest.update(block)
                out.write(block)
        return cls(given=str(given), path=Path(name), spooled=True, sha256=digest.hexdigest())

    def hash(self) -> str:
        if self.sha256 is None:
            self.sha256 = sha256_of(self.path)
        return self.sha256

    def close(self) -> None:
        if self.spooled:
            self.path.unlink(missing_ok=True)
