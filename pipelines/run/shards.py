"""Grading one shard of the trajectories input: the unit of work of every executor.

A shard is a run of whole lines cut from the trajectories input (``pipelines.run.lines.LineShards``).
``grade_shard`` reads it as the reader of the whole file would from that line on (same line
numbers, item indices, byte offsets, format), grades every item, and returns the rows in order,
the cases that wait for a judge, a partial aggregate and what the run needs to check that the
cut changed nothing. It is a pure function of its arguments: the same shard gives the same
result in this process, in a worker process or on a Ray node.

What a cut could change, and how the run (``merge``) checks it when it merges shards in
input order; a check that fails regrades the shard with what it lacked, so the output is the
one a single reader of the whole file writes:
- an item spanning lines across the cut: the shard reports ``overran`` (its reader met the end
  of the shard inside an item; lines after an item's end never change how it reads, see
  ``pipelines.ingest._reader``) and the run regrades it joined with the next shard;
- the item index at the cut (an item spanning lines, a line only Unicode whitespace): the shard
  reports how many items it read; a shard started from a wrong index is regraded;
- an id repeated across shards: the shard reports the ids it read; one already read in an
  earlier shard is regraded with those ids ``seen``, which makes it a duplicate_id row.
"""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any, cast

import msgspec
from pydantic import BaseModel

from judge import InputErrorInfo, Trajectory
from pipelines.config import GradingConfig
from pipelines.grade import Aggregator, GradedCase, Replayer, grade_loaded
from pipelines.ingest import Limits, Loaded, TaskSet, read_trajectories
from pipelines.labels import LabelSet
from pipelines.run.lines import RawShard
from pipelines.run.stream import ShardStream

if TYPE_CHECKING:
    from reports import Row

__all__ = ["GradingContext", "Shard", "ShardGrader", "ShardResult", "grade_shard"]


def json_bytes(model: BaseModel, *, exclude_none: bool = False) -> bytes:
    """``model.model_dump_json(exclude_none=...)`` encoded as UTF-8, without the round trip through
    text: pydantic's serializer writes the bytes, which ``model_dump_json`` decodes (a kept
    trajectory is KBs of tool output)."""
    return model.__pydantic_serializer__.to_json(model, exclude_none=exclude_none)


class GradingContext(msgspec.Struct):
    """What every shard is graded with: built once by the run, shipped once to each worker."""

    tasks: TaskSet
    config: GradingConfig
    fmt: str | None  # the trajectory format, detected once for the whole input (None: the stream detects it)
    name: str  # the input's name as rows carry it
    limits: Limits = msgspec.field(default_factory=Limits)
    escalating: bool = False  # a judge panel waits: inconclusive cases come back pending
    replayer: Replayer | None = None  # replay in executable environments (each worker process has its own copy)
    stop_at_error: bool = False  # --on-error fail: stop at the first error row
    strict: bool = False  # unknown fields are errors, not warnings
    labels: LabelSet | None = None  # external labels applied to each trajectory


class Shard(msgspec.Struct):
    raw: RawShard
    first_item: int  # index of its first item in the whole input
    seen: dict[tuple[str, str], int | None] | None = None  # ids of earlier shards repeated in this one
    only: frozenset[int] | None = None  # grade only these items (item indices); read the others
    drill_failures: bool = True  # keep the trajectories of non-passing rows past the first ones: the drill-down may still pick them


class ShardResult(msgspec.Struct):
    index: int
    first_item: int
    rows: list[bytes | int]  # a result line, or a position in ``pending``
    pending: list[GradedCase]
    pending_items: list[int]  # the item index of each pending case
    aggregate: Aggregator
    keys: list[tuple[str, str, int | None]]  # (task_id, trajectory_id, line) of each item with both ids, in order
    items: int
    overran: bool
    first_error: InputErrorInfo | None
    replay: dict[str, Any] = msgspec.field(default_factory=dict)  # environments used -> version, reference cache hits
    labels_used: set[str] = msgspec.field(default_factory=set)  # external labels that labelled a trajectory here
    report_rows: list[Row | None] = msgspec.field(default_factory=list)  # reports.to_row of each row (None for a pending case)
    sha256: str = ""  # of the bytes graded (``RawShard.sha256``; read by the worker when the shard is a range)
    steps: list[tuple[int, bytes]] = msgspec.field(default_factory=list)  # (row position, trajectory JSON) of the rows the drill-down may pick


def grade_shard(ctx: GradingContext, shard: Shard) -> ShardResult:
    """Read and grade every item of ``shard``; see the module docstring for what is returned."""
    raw = shard.raw.load(ctx.limits.max_line_bytes)
    grader = ShardGrader(ctx, raw.index, shard.first_item)
    grader.drill_failures = shard.drill_failures
    stream = ShardStream(raw, ctx.name)
    items = read_trajectories(
        cast("IO[bytes]", stream),
        ctx.fmt,
        ctx.limits,
        strict=ctx.strict,
        start=(raw.first_line, shard.first_item, raw.first_byte),
        seen=shard.seen,
        tasks=ctx.tasks,
    ).items
    for loaded in items:
        if not grader.add(loaded, shard.only):
            break
    result = grader.result(overran=stream.cut_inside_item)
    result.sha256 = raw.sha256
    return result


class ShardGrader:
    """Grades read items one by one and collects what ``ShardResult`` reports (also used to grade
    a whole input as one stream, flushed in batches)."""

    def __init__(self, ctx: GradingContext, index: int, first_item: int):
        from reports import (  # the drill-down's rule, for the trajectories it may show
            may_pick,
            to_row,  # the report's compact row, made here where the result is at hand
        )

        self._to_row = to_row
        self._may_pick = may_pick
        self.drill_failures = True  # False once the run knows no later non-passing row can be picked
        self.ctx = ctx
        self.index = index
        self.first_item = first_item
        replayer = ctx.replayer
        self._versions_before = dict(getattr(replayer, "versions", {}) or {})
        self._hits_before = getattr(replayer, "reference_cache_hits", 0)
        self._reset()

    def _reset(self) -> None:
        self.agg = Aggregator(self.ctx.config)
        self.rows: list[bytes | int] = []
        self.pending: list[GradedCase] = []
        self.pending_items: list[int] = []
        self.keys: list[tuple[str, str, int | None]] = []
        self.items = 0
        self.first_error: InputErrorInfo | None = None
        self.labels_used: set[str] = set()
        self.report_rows: list[Row | None] = []
        self.steps: list[tuple[int, bytes]] = []
        self._pool: dict[Any, Any] = {}

    def add(self, loaded: Loaded, only: frozenset[int] | None = None) -> bool:
        """Grade one item; False when the run must stop here (``--on-error fail``)."""
        self.items += 1
        if loaded.task_id is not None and loaded.trajectory_id is not None:
            self.keys.append((loaded.task_id, loaded.trajectory_id, loaded.source.line))
        item = loaded.source.item
        if only is not None and item not in only:
            return True
        self.agg.add_warnings(loaded.warnings)
        read = loaded.trajectory if only is None else None  # as read, for the drill-down (a regrade for a judge keeps none: the run has it)
        labels = self.ctx.labels
        if labels is not None and loaded.trajectory is not None:
            before = len(labels.used)
            loaded.trajectory = labels.apply(loaded.trajectory)
            if len(labels.used) != before:
                self.labels_used |= labels.used
        outcome = grade_loaded(loaded, self.ctx.tasks, self.ctx.config, self.ctx.replayer)
        if isinstance(outcome, GradedCase):
            if self.ctx.escalating and outcome.next_escalation() is not None:
                self._keep_steps(read, None)
                self.rows.append(len(self.pending))
                self.report_rows.append(None)
                self.pending.append(outcome)
                self.pending_items.append(item if item is not None else -1)
                return True
            outcome = outcome.result()
        if outcome.error is not None and self.ctx.stop_at_error:
            self.first_error = outcome.error
            return False
        self._keep_steps(read, outcome.verdict.value)
        self.rows.append(json_bytes(outcome, exclude_none=True) + b"\n")
        self.report_rows.append(self._to_row(outcome, self._pool))
        self.agg.add(outcome)
        return True

    def _keep_steps(self, trajectory: Trajectory | None, verdict: str | None) -> None:
        """The trajectory of the row about to be added, when the drill-down may pick it (its
        index: ``first_item`` plus the rows before it; ``verdict`` None: waits for a judge). Later
        failures are kept while the run has not yet seen enough of them (``drill_failures``):
        the run, merging in input order, keeps only those its count still allows."""
        if trajectory is None:
            return
        position = len(self.rows)
        if self._may_pick(self.first_item + position, verdict, 0 if self.drill_failures else sys.maxsize):
            self.steps.append((position, json_bytes(trajectory)))

    def result(self, overran: bool = False) -> ShardResult:
        """What was graded since the last result (the next one continues the numbering)."""
        replay: dict[str, Any] = {}
        replayer = self.ctx.replayer
        if replayer is not None:
            versions = getattr(replayer, "versions", {}) or {}
            hits = getattr(replayer, "reference_cache_hits", 0)
            replay = {"versions": {k: v for k, v in versions.items() if self._versions_before.get(k) != v}, "reference_cache_hits": hits - self._hits_before}
            self._versions_before, self._hits_before = dict(versions), hits
        result = ShardResult(
            index=self.index,
            first_item=self.first_item,
            rows=self.rows,
            pending=self.pending,
            pending_items=self.pending_items,
            aggregate=self.agg,
            keys=self.keys,
            items=self.items,
            overran=overran,
            first_error=self.first_error,
            replay=replay,
            labels_used=self.labels_used,
            report_rows=self.report_rows,
            steps=self.steps,
        )
        self.index += 1
        self.first_item += self.items
        self._reset()
        return result
