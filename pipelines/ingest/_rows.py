"""The rows a bundle yields: exactly one ``Loaded`` per item of a file read whole (tau2 results,
Inspect logs), graded or with its error, under the same rules as the streaming reader.

- a converter's ``ItemError`` (or a model ``ValidationError`` it let through) becomes the row's error,
  naming the file, the line the item starts on (when the file has lines) and the field path;
- a repeated (task_id, trajectory_id) is a ``duplicate_id`` error naming where the first one was read;
- the converter's warnings stay on its row;
- any other exception of the converter (a shape it did not foresee) is a ``reader_error`` row.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from judge import InputErrorInfo, SourceRef, Trajectory
from pipelines.ingest._base import DELIBERATE, ItemContext, ItemError, Loaded, default_trajectory_id, unforeseen, validation_error


class Rows:
    """Makes the rows of one bundle; remembers the ids already read."""

    def __init__(self, file: str):
        self.file = file
        self._seen: dict[tuple[str, str], str] = {}  # ids -> where they were first read
        self._index = 0
        self._defaults: dict[tuple[str, int | None], int] = {}  # (file, line) -> default ids given so far

    def default_id(self, line: int | None, file: str | None = None) -> str:
        """A new deterministic id for an item that has none: ``<stem>:<line>`` for the first item
        of its line, ``<stem>:<line>:2``, ``:3``... for the later ones (the ``data[]`` entries of
        one trace line, the samples of an archive, which have no line), as the streaming reader
        names the items of one line; each call hands out the next one."""
        name = file or self.file
        nth = self._defaults.get((name, line), 0)
        self._defaults[(name, line)] = nth + 1
        return default_trajectory_id(name, line, nth)

    def error(self, info: InputErrorInfo, *, line: int | None, task_id: str | None, trajectory_id: str | None, file: str | None = None) -> Loaded:
        source = SourceRef(file=file or self.file, line=line, item=self._next())
        return Loaded(source=source, trajectory=None, error=info, task_id=task_id, trajectory_id=trajectory_id or self.default_id(line, file))

    def convert(
        self,
        convert: Callable[[ItemContext], Trajectory],
        *,
        line: int | None,
        task_id: str | None,
        trajectory_id: str | None,
        where: str,
        file: str | None = None,
    ) -> Loaded:
        """Run ``convert`` for one item. ``task_id`` / ``trajectory_id`` name the row when the
        conversion fails; ``where`` says where the item is (for a duplicate's message)."""
        name = file or self.file
        source = SourceRef(file=name, line=line, item=self._next())
        ctx = ItemContext(file=name, line=line, default_trajectory_id=trajectory_id or self.default_id(line, file))
        trajectory: Trajectory | None = None
        error: InputErrorInfo | None = None
        try:
            trajectory = convert(ctx)
        except ItemError as err:
            error = err.info(name, line)
        except ValidationError as err:
            error = validation_error(err, note="converted trajectory is invalid").info(name, line)
        except DELIBERATE:
            raise
        except Exception as exc:  # a shape the reader did not foresee: this item's error, not the run's
            error = unforeseen(exc, convert.__module__.rpartition("._")[2]).info(name, line)
        if trajectory is not None:
            task_id, trajectory_id = trajectory.task_id, trajectory.trajectory_id
            key = (task_id, trajectory_id)
            first = self._seen.get(key)
            if first is None:
                self._seen[key] = where
            else:
                trajectory = None
                error = InputErrorInfo(
                    kind="duplicate_id",
                    message=f"trajectory {trajectory_id!r} of task {task_id!r} was already read at {first}; ids must be unique",
                    file=name,
                    line=line,
                    field="trajectory_id",
                )
        if error is not None:
            return Loaded(source=source, trajectory=None, error=error, task_id=task_id, trajectory_id=trajectory_id or ctx.default_trajectory_id)
        assert trajectory is not None
        return Loaded(source=source, trajectory=trajectory, error=None, task_id=task_id, trajectory_id=trajectory_id, warnings=ctx.warnings)

    def _next(self) -> int:
        index = self._index
        self._index += 1
        return index
