"""The typed records a run writes and reads back: one pydantic model per thing, each with a version.

What a run reads back is data, never code: every record is JSON (orjson), validated by its model
when read, and a record of another version, or one that does not validate, is refused with an
error naming the file, the field and the way out, instead of being half-understood. (The run
state once kept its shard records as length-prefixed pickles, ``.judge-run/shards.pkl``: a
crafted one ran code on ``--resume``. That file is never opened now: a state that names it is of
version 1 and refused.)

- ``RunStateRecord`` (``.judge-run/state.json``): what the run is (``RunIdentity``: inputs and the
  options that must be equal to continue it), how to start it again (``Recipe``: the options as
  given, for ``judge resume``), how far it got;
- ``ShardRecord`` (``.judge-run/shards.jsonl``, one a line): a merged shard, enough to rebuild the
  merged state from ``results.partial`` on resume;
- ``DecidedRound`` / ``SubmittedBatches`` (``.judge-run/decisions.jsonl``, one a line): the journal
  of escalation rounds;
- ``Manifest`` (``manifest.json``): the finished run's description, written last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge import ConfigurationError, JudgeRequest, PanelDecision, field_path
from pipelines.config import GradingConfig

__all__ = [
    "JOURNAL_VERSION",
    "MANIFEST_VERSION",
    "RECIPE_VERSION",
    "SHARD_RECORD_VERSION",
    "STATE_VERSION",
    "ControlAnswer",
    "DecidedRound",
    "GradingNote",
    "JournalEntry",
    "Manifest",
    "ManifestInput",
    "Recipe",
    "RecordError",
    "ReplayTally",
    "RunDirError",
    "RunIdentity",
    "RunStateRecord",
    "ShardRecord",
    "SubmittedBatches",
    "WarningTally",
    "dump_line",
    "parse_record",
    "read_manifest",
]

STATE_VERSION = 2  # 1: shard records as pickles (shards.pkl), never read again
SHARD_RECORD_VERSION = 1
JOURNAL_VERSION = 1
RECIPE_VERSION = 1
MANIFEST_VERSION = 1

Phase = Literal["grading", "judging", "waiting", "finishing"]


_RecordT = TypeVar("_RecordT", bound="_Record")


class RunDirError(ConfigurationError):
    """The output directory cannot take this run (``--out``, ``--overwrite``, ``--resume``: a
    usage error, exit code 2)."""


class RecordError(RunDirError):
    """A record of the run cannot be used: unreadable, of another version, or not valid."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- identity and recipe -------------------------------------------------------------------------


class TasksInput(_Record):
    path: str | None
    sha256: str | None
    format: str | None


class ReferenceInput(_Record):
    path: str
    sha256: str | None


class TrajectoriesInput(_Record):
    path: str
    format: str | None
    task_key: str | None = None


class LimitsRecord(_Record):
    max_line_bytes: int
    max_string_bytes: int
    max_depth: int | None = None  # recorded by the recipe (judge resume rebuilds the limits)


class ShardSize(_Record):
    lines: int
    bytes: int


class JudgesIdentity(_Record):
    """The panel as far as a resumed run must match it (its name, judges, rule and mode)."""

    name: str
    judges: list[str] | None = None
    rule: str | None = None
    tie_breaker: str | None = None
    mode: str | None = None  # batch answers are collected only by a run in batch mode


class RunIdentity(_Record):
    """What must be equal for an interrupted run to be continued with these options."""

    version: int = 1
    tasks: TasksInput
    reference: ReferenceInput | None
    extra_inputs: dict[str, str | None]  # labels, tool specs -> sha256
    trajectories: TrajectoriesInput
    config: GradingConfig
    on_error: Literal["skip", "fail"]
    strict: bool
    limits: LimitsRecord
    replay: bool
    judges: JudgesIdentity | None
    shards: ShardSize

    def changed(self, other: RunIdentity) -> list[str]:
        """The fields (by name) in which ``other`` differs."""
        return sorted(name for name in type(self).model_fields if name != "version" and getattr(self, name) != getattr(other, name))


class Recipe(_Record):
    """How to start the run again (``judge resume``): the inputs and options as given, and where."""

    version: int = RECIPE_VERSION
    cwd: str
    inputs: dict[str, str | None]  # tasks, trajectories, reference, labels, tool_specs -> as given
    task_format: str | None
    trajectory_format: str | None
    on_error: Literal["skip", "fail"]
    config: GradingConfig
    strict: bool
    task_key: str | None = None
    limits: LimitsRecord
    replay: bool
    ray: bool
    ray_address: str | None
    shards: ShardSize
    command: list[str]
    judges: dict[str, Any] | None  # judge.llm.JudgeSettings as JSON (validated by judge resume, which loads judge.llm)
    rubrics_dir: str | None
    parquet: bool | None = None  # --parquet / --no-parquet (None: by the run's size; a recipe written before it had none)


# ---- the run state -------------------------------------------------------------------------------


class InputProgress(_Record):
    bytes: int = 0
    sha256_prefix: str | None = None
    lines: int = 0
    items: int = 0
    shards: int = 0


class RunStateRecord(_Record):
    """``.judge-run/state.json``: the run's identity, recipe and checkpoint (byte lengths of the
    append-only files that count)."""

    version: int = STATE_VERSION
    identity: RunIdentity
    recipe: Recipe | None = None
    started_at: str
    resumed_at: list[str] = Field(default_factory=list)
    phase: Phase = "grading"
    trajectories: InputProgress = Field(default_factory=InputProgress)
    partial_bytes: int = 0
    shards_bytes: int = 0
    decisions_bytes: int = 0
    steps_bytes: int = 0  # steps.partial: the trajectories the drill-down may show (a state written before it had none)
    rounds: int = 0
    spent_bytes: int = 0  # spent.jsonl: the part written for rounds already journaled (a state written before it had none)
    whole_input: bool = False  # the trajectories were read as one stream (not cut into shards)
    whole_sha256: str | None = None


class WarningTally(_Record):
    """Input warnings of one kind and field pattern in a shard: how many, and the first."""

    kind: str
    field_pattern: str
    count: int
    first: str
    message: str


class ReplayTally(_Record):
    versions: dict[str, str] = Field(default_factory=dict)  # environments used -> version
    reference_cache_hits: int = 0


class ShardRecord(_Record):
    """What the run keeps of a merged shard: where it lay in the input, what it wrote to
    ``results.partial`` (``rows`` lines, a placeholder per case waiting for a judge), the ids it read,
    its pending cases' item indices, its input warnings and tallies. On resume the merged state is
    rebuilt from these and the rows themselves (nothing is regraded but the pending cases)."""

    version: int = SHARD_RECORD_VERSION
    index: int
    first_line: int
    first_byte: int
    first_item: int
    size: int  # bytes of input it covered
    lines: int
    items: int
    rows: int  # lines it wrote to results.partial
    pending_items: list[int]  # item index of each case that waits for a judge, in order
    keys: list[tuple[str, str, int | None]]
    replay: ReplayTally = Field(default_factory=ReplayTally)
    sha256: str = ""  # of the input bytes it covered
    labels_used: list[str] = Field(default_factory=list)
    warnings: list[WarningTally] = Field(default_factory=list)


# ---- the journal ---------------------------------------------------------------------------------


class ControlAnswer(_Record):
    """A control item asked in a round, and the panel's decision on it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when a run journals or reads a round

    request: JudgeRequest
    expected: str
    built_as: str
    decision: PanelDecision


class DecidedRound(_Record):
    """A decided escalation round: each question (shard, position, turn, check) and its decision."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when a run journals or reads a round

    version: int = JOURNAL_VERSION
    kind: Literal["decided"] = "decided"
    panel: str
    asks: list[tuple[int, int, int, str]]
    decisions: list[PanelDecision]
    controls: list[ControlAnswer] | None = None


class SubmittedBatches(_Record):
    """Provider batches sent for the round in progress (journaled the moment each exists: it is paid for)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when a run journals or reads a round

    version: int = JOURNAL_VERSION
    kind: Literal["batches"] = "batches"
    panel: str
    round: int
    questions: int
    batches: list[dict[str, Any]]  # judge.llm.BatchRecord as JSON (BatchRecord.from_json reads it)


JournalEntry = DecidedRound | SubmittedBatches


# ---- the manifest --------------------------------------------------------------------------------


class ManifestInput(_Record):
    role: str
    path: str | None
    format: str | None = None
    sha256: str | None
    task_key: str | None = None


class GradingNote(_Record):
    executor: str
    workers: int
    shards: int
    note: str


class Manifest(_Record):
    """``manifest.json``: versions, inputs with their hashes, options, judges, counts, timestamps.
    Written last; ``complete: true`` says the outputs beside it are one finished run."""

    version: int = MANIFEST_VERSION
    tool: Literal["trajectory-judge"] = "trajectory-judge"
    complete: bool
    versions: dict[str, str]
    python: str
    command: list[str]
    inputs: list[ManifestInput]
    tasks_loaded: int
    config: GradingConfig
    on_error: Literal["skip", "fail"]
    strict: bool
    judges: dict[str, Any] | None
    judge_answers: dict[str, Any]
    replay: dict[str, Any] | None
    grading: GradingNote
    counts: dict[str, int]
    started_at: str
    resumed_at: list[str]
    finished_at: str | None = None
    runner: dict[str, Any] | None = None  # judge run: the agent run that made the trajectories

    def dump(self) -> str:
        data = self.model_dump(mode="json", exclude_unset=True)  # an input's format / task_key only where it has one
        data.update(version=self.version, tool=self.tool, config=self.config.model_dump(mode="json"))
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode("utf-8") + "\n"


# ---- reading and writing -------------------------------------------------------------------------


def dump_line(record: BaseModel) -> bytes:
    """One record as a JSON line (``\\n``-terminated; no line separator inside: JSON escapes them)."""
    return orjson.dumps(record.model_dump(mode="json")) + b"\n"


def parse_record(model: type[_RecordT], data: bytes | str, where: str, version: int, advice: str) -> _RecordT:
    """``data`` (JSON) as ``model``: a record of another ``version``, or one that does not validate,
    is a ``RecordError`` naming ``where`` (file, line), the field and ``advice`` (the way out)."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RecordError(f"{where}: not a JSON record ({exc}); {advice}") from None
    if not isinstance(raw, dict):
        raise RecordError(f"{where}: not a {model.__name__} (a JSON object was expected); {advice}")
    found = raw.get("version")
    if found != version:
        what = "no version" if found is None else f"version {found!r}"
        raise RecordError(f"{where}: {model.__name__} of {what}, this trajectory-judge reads version {version}; {advice}")
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        raise RecordError(f"{where}: field {field_path(tuple(first['loc']))}: {first['msg']}; {advice}") from None


def read_manifest(path: Path) -> Manifest:
    """``manifest.json`` through its model (``RecordError`` naming the field when it is not one)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return parse_record(Manifest, data, str(path), MANIFEST_VERSION, "is this a trajectory-judge manifest.json of a finished run?")
