"""The drill-down's steps: what grading kept of the trajectories report.html shows.

Which results the drill-down shows (``drill_picks``): the first ``DRILL_FIRST`` in file order,
plus up to ``DRILL_EXTRA_FAILURES`` later non-passing ones. The grading run keeps, as it grades,
the trajectory of every result that may still be picked (``may_pick``) in a spool of its run state,
and writes the picked ones to ``drill_steps.jsonl`` in the run folder (``DrillStepsHeader``, then
one ``KeptTrajectory`` a line, in file order); the report reads that record and never opens the
run's inputs, whatever their format.

A run folder written before the record existed has no ``drill_steps.jsonl``: its report re-reads
the picked results' source lines, as it always did (``reread_sources``: native JSONL only, the
other formats show no steps, with a note).
"""

from __future__ import annotations

import codecs
import json
import marshal
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from judge import Trajectory, field_path
from judge.core import UNDECIDED, loads_exact
from reports._shown import ShownTrajectory

if TYPE_CHECKING:
    from reports._run import RunData

__all__ = [
    "DRILL_EXTRA_FAILURES",
    "DRILL_FIRST",
    "DRILL_STEPS",
    "DRILL_STEPS_VERSION",
    "DrillStepsHeader",
    "KeptSteps",
    "KeptTrajectory",
    "attach_trajectories",
    "drill_picks",
    "header_line",
    "kept_index",
    "kept_line",
    "later_failure",
    "may_pick",
    "more_failures_wanted",
    "reread_sources",
]

DRILL_FIRST = 1000  # the first N trajectories of the file are always in the drill-down
DRILL_EXTRA_FAILURES = 1000  # plus up to this many later non-passing ones
DRILL_STEPS = "drill_steps.jsonl"
DRILL_STEPS_VERSION = 1
_INDEX = b'{"index":'


class DrillStepsHeader(BaseModel):
    """The first line of ``drill_steps.jsonl``: the pick rule the run kept steps for."""

    model_config = ConfigDict(extra="forbid")

    record: Literal["drill_steps"] = "drill_steps"
    version: int = DRILL_STEPS_VERSION
    first: int  # DRILL_FIRST of the run
    extra_failures: int  # DRILL_EXTRA_FAILURES of the run
    kept: int  # trajectories that follow, one a line


class KeptTrajectory(BaseModel):
    """One line after the header: the trajectory (as grading read it, before external labels) of
    the result at ``index`` (its position in ``results.jsonl``)."""

    model_config = ConfigDict(extra="forbid")

    index: int
    trajectory: Trajectory


def drill_picks(verdicts: Iterable[str], first: int | None = None, extra_failures: int | None = None) -> tuple[list[int], int]:
    """The indices of the drill-down's results, in file order, and how many later results did
    not pass (picked or not), from every result's verdict in file order (``first`` and
    ``extra_failures`` default to ``DRILL_FIRST`` and ``DRILL_EXTRA_FAILURES``)."""
    first = DRILL_FIRST if first is None else first
    extra_failures = DRILL_EXTRA_FAILURES if extra_failures is None else extra_failures
    picked: list[int] = []
    later_failures = 0
    for i, verdict in enumerate(verdicts):
        if i < first:
            picked.append(i)
        elif verdict != "pass":
            later_failures += 1
            if later_failures <= extra_failures:
                picked.append(i)
    return picked, later_failures


def may_pick(index: int, verdict: str | None, later_failures: int) -> bool:
    """Whether the result at ``index`` may be in the drill-down (``drill_picks``, its default
    rule) once every verdict is known: ``verdict`` None waits for a judge (it may yet fail);
    ``later_failures`` counts the results before it, from ``DRILL_FIRST`` on, that are final and
    did not pass."""
    return index < DRILL_FIRST or (verdict != "pass" and later_failures < DRILL_EXTRA_FAILURES)


def later_failure(index: int, verdict: str | None) -> bool:
    """Whether a final result at ``index`` counts in ``may_pick``'s ``later_failures``."""
    return verdict is not None and verdict != "pass" and index >= DRILL_FIRST


def more_failures_wanted(later_failures: int) -> bool:
    """Whether, ``later_failures`` counted, a later non-passing result may still be picked."""
    return later_failures < DRILL_EXTRA_FAILURES


def kept_line(index: int, trajectory_json: bytes) -> bytes:
    """A ``KeptTrajectory`` line from the trajectory's JSON (``Trajectory.model_dump_json``)."""
    return _INDEX + str(index).encode() + b',"trajectory":' + trajectory_json + b"}\n"


def kept_index(line: bytes) -> int:
    """The index of a ``kept_line``, read without parsing the trajectory."""
    if not line.startswith(_INDEX):
        raise ValueError("not a kept trajectory line")
    end = line.index(b",", len(_INDEX))
    return int(line[len(_INDEX) : end])


def header_line(kept: int) -> bytes:
    """The ``DrillStepsHeader`` line of a record of ``kept`` trajectories picked by the default rule."""
    return DrillStepsHeader(first=DRILL_FIRST, extra_failures=DRILL_EXTRA_FAILURES, kept=kept).model_dump_json().encode() + b"\n"


class KeptSteps(Mapping[int, ShownTrajectory]):
    """The trajectories of ``drill_steps.jsonl`` for the wanted results, as the drill-down shows
    them (``ShownTrajectory``): the file is checked once (every wanted line validated, its
    trajectory id the result's), and each wanted line's view goes, as it is read, into a spool (a
    temporary file, ``marshal``: a few strings per step), so the report holds one trajectory at a
    time, not the 2,000 the drill-down may show (a long conversation each), and never validates a
    line twice.

    ``own``: the record was written by this process from validated trajectories (the grading run,
    ``kept_line``): a line is read as plain JSON (``loads_exact``; the validated path where that
    cannot decide), which gives the same view without validating it again."""

    def __init__(self, path: Path, wanted: dict[int, str | None], own: bool = False):
        from reports._run import ReportInputError

        self.path = path
        self._spooled: dict[int, tuple[int, int]] = {}  # index -> (offset, length) in the spool
        self._spool = tempfile.TemporaryFile()  # noqa: SIM115 (held as long as the mapping: closed when it goes)
        with open(path, "rb") as fh:
            head = fh.readline()
            try:
                self.header = DrillStepsHeader.model_validate_json(head)
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                raise ReportInputError(f"{path}:1: field {field_path(err['loc']) or '<root>'}: {err['msg']} (is this a {DRILL_STEPS}?)") from None
            if self.header.version != DRILL_STEPS_VERSION:
                raise ReportInputError(f"{path}:1: field version: {self.header.version} is not {DRILL_STEPS_VERSION}, the version this trajectory-judge reads")
            for lineno, line in enumerate(fh, 2):
                try:
                    index = kept_index(line)
                except ValueError:
                    raise ReportInputError(f'{path}:{lineno}: field index: a line must start with {{"index": N (is this a {DRILL_STEPS}?)') from None
                if index not in wanted:
                    continue
                shown = _own_view(line) if own else None
                if shown is None:
                    try:
                        kept = KeptTrajectory.model_validate_json(line)
                    except ValidationError as exc:
                        err = exc.errors(include_url=False)[0]
                        raise ReportInputError(f"{path}:{lineno}: field {field_path(err['loc']) or '<root>'}: {err['msg']}") from None
                    shown = ShownTrajectory.from_trajectory(kept.trajectory)
                if shown.trajectory_id == wanted[index]:
                    data = marshal.dumps(shown.to_plain())
                    self._spooled[index] = (self._spool.tell(), len(data))
                    self._spool.write(data)

    def __getitem__(self, index: int) -> ShownTrajectory:
        offset, length = self._spooled[index]
        self._spool.seek(offset)
        shown = ShownTrajectory.from_plain(marshal.loads(self._spool.read(length)))
        self._spool.seek(0, 2)
        return shown

    def __iter__(self) -> Iterator[int]:
        return iter(self._spooled)

    def __len__(self) -> int:
        return len(self._spooled)

    def __contains__(self, index: object) -> bool:
        return index in self._spooled


def _own_view(line: bytes) -> ShownTrajectory | None:
    """The view of a ``kept_line`` this process wrote, from its plain JSON; None where
    ``loads_exact`` leaves the reading to the standard library, or the line is not shaped as
    ``kept_line`` writes it (the validated path reads it and names what is wrong)."""
    value = loads_exact(line)
    if value is UNDECIDED:
        return None
    try:
        return ShownTrajectory.from_dump(value["trajectory"])
    except (KeyError, TypeError, IndexError):
        return None


def attach_trajectories(run: RunData) -> None:
    """The steps of the drill-down's results: from ``drill_steps.jsonl`` where the run kept it,
    else (a run folder from before it) re-read from their source lines (``reread_sources``)."""
    path = run.path / DRILL_STEPS
    if not path.is_file():
        reread_sources(run)
        return
    kept = KeptSteps(path, {i: run.full[i].trajectory_id for i in run.drill}, run.own_steps)
    run.trajectories = kept
    graded = [i for i in run.drill if run.full[i].verdict.value != "error"]
    missing = sum(1 for i in graded if i not in kept)
    run.steps_note = (
        ""
        if not missing
        else f"{missing} of {len(graded)} shown graded trajectories have no steps here: the run kept the steps of those its own drill-down "
        f"showed (the first {kept.header.first}, plus up to {kept.header.extra_failures} later non-passing ones; {DRILL_STEPS}); "
        "evidence, verdicts, votes and scores are shown."
    )


def reread_sources(run: RunData) -> None:
    """Read the steps of the picked results from their source file when it is native JSONL (a run
    folder without ``drill_steps.jsonl``, written before grading kept the steps).

    Each result carries ``source`` (file, line). A line that does not parse as a native
    ``Trajectory`` (another input format) leaves that row without steps; the report says how many.
    An item that starts on its line but spans several (pretty-printed JSON lines, ``jq .``) is
    read from that line on (``_spanning_item``).
    """
    indices = run.drill
    wanted: dict[Path, dict[int, list[int]]] = {}
    for i in indices:
        src = run.full[i].source
        if src is None or src.line is None or src.file is None:
            continue
        path = _resolve(Path(src.file), run.path)
        if path is None:
            continue
        wanted.setdefault(path, {}).setdefault(src.line, []).append(i)
    found = 0
    shown: dict[int, ShownTrajectory] = {}
    run.trajectories = shown
    for path, lines in sorted(wanted.items()):
        try:
            fh = open(path, "rb")  # noqa: SIM115 (bytes: a line that is not UTF-8 just has no steps here; closed below)
        except OSError:
            continue
        with fh:
            offset = 0
            for lineno, raw in enumerate(fh, 1):
                start, offset = offset, offset + len(raw)
                if lineno not in lines:
                    continue
                try:
                    traj = Trajectory.model_validate_json(raw)
                except ValidationError as exc:
                    if exc.errors()[0]["type"] != "json_invalid" or (spanning := _spanning_item(path, start)) is None:
                        continue
                    traj = spanning
                except ValueError:
                    continue
                for i in lines[lineno]:
                    if traj.trajectory_id == run.full[i].trajectory_id:
                        shown[i] = ShownTrajectory.from_trajectory(traj)
                        found += 1
    missing = len(indices) - found
    run.steps_note = (
        ""
        if not missing
        else f"{missing} of {len(indices)} shown trajectories have no steps here: their source file is missing or not native JSONL "
        "(evidence, verdicts, votes and scores are shown)."
    )


_SPAN_FIRST_READ = 64 << 10
_SPAN_LIMIT = 32 << 20  # the reader's own limit on an item's size


def _spanning_item(path: Path, offset: int) -> Trajectory | None:
    """The native trajectory whose JSON text starts at byte ``offset`` of ``path`` and spans
    lines, read in doubling chunks until its value ends (None: not one within the limit). For
    display only: grading read the item with the full reader, and the caller checks its id."""
    decoder = json.JSONDecoder()
    with open(path, "rb") as fh:
        fh.seek(offset)
        text, utf8, size, read = "", codecs.getincrementaldecoder("utf-8")(), _SPAN_FIRST_READ, 0
        while read < _SPAN_LIMIT:
            chunk = fh.read(size - read)
            read += len(chunk)
            try:
                text += utf8.decode(chunk, final=not chunk)
            except UnicodeDecodeError:
                return None
            body = text.lstrip(" \t\r\n")
            if chunk:  # whole lines only: a JSON string never spans lines, so an error before their end is final
                body = body[: body.rfind("\n") + 1]
            try:
                _, end = decoder.raw_decode(body)
            except json.JSONDecodeError as err:
                if not chunk or err.pos < len(body.rstrip(" \t\r\n")):  # the end of the file, or an error more text cannot mend
                    return None
                size *= 2
                continue
            except (ValueError, RecursionError):  # an integer past Python's digit limit, nesting past the stack: not shown
                return None
            try:
                return Trajectory.model_validate_json(body[:end])
            except ValidationError:
                return None
    return None


def _resolve(path: Path, run_dir: Path) -> Path | None:
    for candidate in (path, run_dir / path, run_dir.parent / path):
        if candidate.is_file():
            return candidate
    return None
