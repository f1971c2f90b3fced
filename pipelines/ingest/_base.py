"""Shared vocabulary of the ingest stage: limits, what one read item becomes, and the task set.

Invariant: every item read from an input file becomes exactly one ``Loaded`` (trajectories) or one
task / one error (tasks). Nothing is silently dropped and nothing is silently overwritten.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import msgspec
import orjson
from pydantic import ValidationError

from judge import (
    MAX_DEPTH,
    BadInputError,
    InputErrorInfo,
    InputWarning,
    SourceRef,
    Task,
    ToolSpec,
    Trajectory,
    TrajectoryJudgeError,
    content_hash,
    field_path,
)
from pipelines.ingest._store import SourceIndex, TaskStore

P = ParamSpec("P")
R = TypeVar("R")


class Limits(msgspec.Struct, frozen=True):
    """Size limits that keep one hostile or broken line from exhausting memory."""

    max_line_bytes: int = 32 * 2**20  # a line (or JSON-array item) larger than this -> too_large
    max_string_bytes: int = 8 * 2**20  # any single string field larger -> too_large naming the field
    max_depth: int = MAX_DEPTH  # containers nested deeper -> too_deep (recursive walkers stay safe)
    max_archive_bytes: int = 2**30  # an archive (.eval) whose members inflate to more, together -> too_large naming the file
    max_inflated_bytes: int = 8 * 2**30  # a compressed input (.gz, .bz2, .xz, .zst) that inflates to more -> refused naming the file


class Loaded(msgspec.Struct):
    """One trajectory item read from a file: exactly one of ``trajectory`` / ``error`` is set."""

    source: SourceRef
    trajectory: Trajectory | None
    error: InputErrorInfo | None
    task_id: str | None  # best effort, also for error rows (so the output can still name them)
    trajectory_id: str | None
    warnings: list[InputWarning] = msgspec.field(default_factory=list)
    # how the reader chose the task id where the format has no one place for it (trace attributes):
    # added to the error when the id matches no task
    task_id_note: str | None = None

    def __post_init__(self) -> None:
        if (self.trajectory is None) == (self.error is None):
            raise ValueError("a Loaded item carries exactly one of trajectory / error")


class TaskSet(msgspec.Struct):
    """Every task read, plus every task item that could not be used and why.

    ``ambiguous`` ids (defined twice with different content, or once unreadably) are *not* in
    ``tasks``: their trajectories are reported as errors instead of being graded against a guess.
    ``invalid`` maps ids of task items that could not be read to their error, so that a
    trajectory for such a task gets a precise message instead of a bare "unknown task"; an item
    whose id could not be read either (malformed JSON) is in ``unnamed``, and named in that message.
    ``tasks`` and ``sources`` are compact mappings (see ``_store``): a task line per trajectory
    at 100k trajectories must not mean 100k live models.
    """

    tasks: TaskStore = msgspec.field(default_factory=TaskStore)
    sources: SourceIndex = msgspec.field(default_factory=SourceIndex)
    errors: list[InputErrorInfo] = msgspec.field(default_factory=list)
    ambiguous: dict[str, InputErrorInfo] = msgspec.field(default_factory=dict)
    invalid: dict[str, InputErrorInfo] = msgspec.field(default_factory=dict)
    unnamed: list[InputErrorInfo] = msgspec.field(default_factory=list)  # errors of items whose id could not be read (a missing id may be one of them)
    warnings: list[InputWarning] = msgspec.field(default_factory=list)
    _by_query: dict[str, list[str]] | None = None  # an index built on first use (ids_for_query)

    def ids_for_query(self, query: str) -> list[str]:
        """The ids of the tasks whose first question is ``query`` (whitespace runs count as one
        space), for transcripts that name no task. Indexed on first use: a run whose
        trajectories all name their task never unpacks a task for it."""
        if self._by_query is None:
            index: dict[str, list[str]] = {}
            for tid in self.tasks:
                turns = self.tasks[tid].turns
                if turns:
                    index.setdefault(same_text(turns[0].query), []).append(tid)
            self._by_query = index
        return self._by_query.get(same_text(query), [])


def same_text(text: str) -> str:
    return " ".join(text.split())


class ItemError(BadInputError):
    """A problem with one input item, raised by a format converter and turned into an error row."""

    def __init__(self, kind: str, message: str, field: str | None = None, line: int | None = None, file: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.field = field
        self.line = line  # overrides the item's line (e.g. an error found in the reference file)
        self.file = file

    def info(self, file: str, line: int | None) -> InputErrorInfo:
        return InputErrorInfo(kind=self.kind, message=self.message, file=self.file or file, line=self.line if self.line is not None else line, field=self.field)


def unforeseen(exc: Exception, reader: str) -> ItemError:
    """An exception a reader did not foresee, as the item's error (kind ``reader_error``).

    Readers check every field they use, but real data keeps finding shapes nobody checked for (a
    list where a role string belongs). One such item must cost one error row naming its file and
    line, never the run; the message names the exception so the reader can be fixed."""
    said = str(exc) if len(str(exc)) <= 200 else str(exc)[:197] + "..."
    return ItemError(
        "reader_error",
        f"the {reader} reader failed on this item ({type(exc).__name__}: {said}): a field holds a shape it does not handle; please report it with the item",
    )


DELIBERATE = (TrajectoryJudgeError, ValidationError, MemoryError)  # raised on purpose, or not ours to mask


def guarded(convert: Callable[P, R]) -> Callable[P, R]:
    """``convert`` raising ``unforeseen`` for any exception other than a deliberate one."""
    reader = convert.__module__.rpartition("._")[2]

    @functools.wraps(convert)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return convert(*args, **kwargs)
        except DELIBERATE:
            raise
        except Exception as exc:
            raise unforeseen(exc, reader) from exc

    return run


def one_of(value: Any, names: Collection[str]) -> bool:
    """``value in names`` for a value read from input, where a list or an object (unhashable)
    would raise ``TypeError`` from a set or dict: such a value is simply no name."""
    return isinstance(value, str) and value in names


def short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validation_error(err: ValidationError, prefix: str = "", note: str = "", strip: int = 0) -> ItemError:
    """The first pydantic error names the field; the others are listed briefly in the message.

    ``prefix`` / ``strip`` map a location in a converted model back to the input: the first
    ``strip`` parts of the location are replaced by ``prefix``.
    """
    errors = err.errors(include_url=False)
    first = errors[0]
    path = field_path(tuple(first["loc"])[strip:])
    if prefix:
        path = prefix if path == "<root>" else (f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}")
    message = first["msg"]
    if first["type"] not in ("missing",) and "input" in first and not isinstance(first["input"], dict):
        message += f" (got {short(first['input'])})"
    others = [f"{field_path(tuple(e['loc']))}: {e['msg']}" for e in errors[1:6]]
    if others:
        more = f" and {len(errors) - 6} more" if len(errors) > 6 else ""
        message += f"; also {'; '.join(others)}{more}"
    if note:
        message = f"{note}: {message}"
    return ItemError("invalid_field", message, path)


def expect(value: Any, kind: type | tuple[type, ...], path: str, what: str) -> Any:
    """Check one raw input value's JSON type; the error names the field path."""
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, float, (int, float)))
    if not ok:
        raise ItemError("invalid_field", f"{what} must be {_json_type_name(kind)}, got {_json_name(value)} {short(value)}", path)
    return value


def _json_type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number", bool: "a boolean"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _json_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer", float: "a number"}.get(
        type(value), type(value).__name__
    )


def as_id(value: Any) -> str | None:
    """Best-effort id for naming an item in the output, also when the item is otherwise broken."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value:
        return value
    return None


def default_trajectory_id(file: str, line: int | None, nth: int = 0) -> str:
    """Deterministic id for a trajectory that has none: stable across reruns of the same file.
    ``nth``: the item's position among those starting on its line (``RawItem.nth``), so that the
    items of a one-line JSON array get ids of their own (``stem:1``, ``stem:1:2``, ...), not one."""
    return f"{_stem(file)}:{line}" if nth == 0 else f"{_stem(file)}:{line}:{nth + 1}"


@functools.lru_cache(maxsize=64)
def _stem(file: str) -> str:
    return Path(file).stem  # asked once per item of a file: parse its name once


class ItemContext(msgspec.Struct, frozen=True):
    """Where an item comes from, and a place for the converter to leave warnings (kept on the row).

    ``tasks``: the run's tasks, when the reader was given them, so that a transcript naming no
    task (a bare message list) can be matched to one by its first user message."""

    file: str
    line: int | None
    default_trajectory_id: str
    warnings: list[InputWarning] = msgspec.field(default_factory=list)
    tasks: TaskSet | None = None

    def warn(self, kind: str, message: str, field: str | None = None) -> None:
        self.warnings.append(InputWarning(kind=kind, message=message, file=self.file, line=self.line, field=field))

    def task_for_query(self, query: str | None, path: str, form: str) -> str:
        """The id of the one task whose first question is ``query`` (the transcript's first user
        message, at ``path``); otherwise an ``unknown_task`` error saying how to name the task
        (``form``: the wrapped form of this format, e.g. ``{"task_id", "items": [...]}``)."""
        how = f"name it by writing the transcript as {form}"
        if query is None or not query.strip():
            raise ItemError("unknown_task", f"the transcript names no task and has no user message to match one by; {how}", path)
        shown = short(query, 120)
        if self.tasks is None:
            raise ItemError("unknown_task", f"the transcript names no task, and no tasks were given to match its first user message {shown}; {how}", path)
        ids = self.tasks.ids_for_query(query)
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise ItemError(
                "unknown_task",
                f"the transcript names no task, and its first user message {shown} is the question of none of the {len(self.tasks.tasks)} tasks; {how}",
                path,
            )
        listed = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        raise ItemError(
            "unknown_task", f"the transcript names no task, and its first user message {shown} is the question of {len(ids)} tasks ({listed}); {how}", path
        )


class TrajectoryFormat(msgspec.Struct, frozen=True):
    """A trajectory input format: how to recognise an item, name it, and convert it."""

    name: str
    description: str
    sniff: Callable[[dict[str, Any]], bool]
    ids: Callable[[dict[str, Any], str], tuple[str | None, str | None]]  # (item, default id) -> ids
    convert: Callable[[Any, ItemContext], Trajectory]  # an object; also a list for a format with ``bare``
    # Formats whose transcripts are also written as bare message lists (what a framework returns):
    # recognises such a list; ``convert`` then takes the list itself (see ``pipelines.ingest._bare``).
    bare: Callable[[list[Any]], bool] | None = None


class Bundle(msgspec.Struct):
    """What a container format yields: the trajectories of a file that may also carry its tasks
    (tau2 results, Inspect logs) and the items' own verdicts. ``tasks`` is None when the file holds
    no tasks (they come from ``--tasks``)."""

    tasks: TaskSet | None
    items: Iterator[Loaded]


class BundleFormat(msgspec.Struct, frozen=True):
    """A trajectory format read as a whole file rather than item by item: results files with
    tasks inside (tau2), archives (Inspect ``.eval``), span exports grouped by trace (OTel).

    ``sniff`` sees the file's first bytes and, when the file starts like JSON, its first object
    (None otherwise); ``read`` returns the bundle. Every trajectory the file holds becomes exactly
    one ``Loaded`` (graded or with its error), as for streaming formats."""

    name: str
    description: str
    sniff: Callable[[bytes, dict[str, Any] | None], bool]
    read: Callable[[str, Limits], Bundle]
    # formats whose task ids come from attributes a user may name (traces): ``read`` with ``--task-key``
    keyed_read: Callable[[str, Limits, str], Bundle] | None = None


class TaskFormat(msgspec.Struct, frozen=True):
    """A task input format. ``load`` reads the file (and its reference file, when the format has one)."""

    name: str
    description: str
    sniff: Callable[[dict[str, Any]], bool]
    load: Callable[[str, str | None, Limits], TaskSet]
    reference: str  # "none", "optional" or "required"


class ToolSpecs:
    """One ``ToolSpec`` object per distinct tool spec, validated and hashed once.

    Converted logs repeat their deployment's tool specs on every task line (15 specs x 100k tasks),
    and VAKRA repeats ~116 per case: validating and hashing each copy dominated task loading.
    A raw spec (the dict read from the file) is keyed by its JSON text as read (``orjson``, key
    order kept); a hit is confirmed by dict equality, so texts that coincide for unequal values
    (``NaN`` and ``null`` both dump as ``null``) never share. Distinct texts with equal content
    (key order, flat vs wrapped form) still end as one object, via one content hash per text.
    """

    def __init__(self) -> None:
        self._by_text: dict[bytes, tuple[dict[str, Any], ToolSpec]] = {}
        self._by_content: dict[str, ToolSpec] = {}
        self._shared: set[int] = set()  # ids of the objects handed out (kept alive by _by_content)
        self.keys: dict[int, bytes] = {}  # id(shared spec) -> the first raw text it was read as

    @staticmethod
    def _key(raw: Any) -> bytes | None:
        if not isinstance(raw, dict):
            return None
        try:
            return orjson.dumps(raw)
        except (TypeError, orjson.JSONEncodeError):  # e.g. an integer beyond 64 bits: no fast path
            return None

    def lookup(self, raw: Any) -> ToolSpec | None:
        """The shared spec for a raw spec read before, else None (validate it, then ``remember``)."""
        key = self._key(raw)
        hit = self._by_text.get(key) if key is not None else None
        return hit[1] if hit is not None and hit[0] == raw else None

    def remember(self, raw: Any, spec: ToolSpec) -> ToolSpec:
        """Record ``spec`` (validated from ``raw``) and return the shared object for its content."""
        shared = self.share(spec)
        key = self._key(raw)
        if key is not None and key not in self._by_text:
            self._by_text[key] = (raw, shared)
            self.keys.setdefault(id(shared), key)
        return shared

    def raw_of(self, key: bytes) -> dict[str, Any]:
        return self._by_text[key][0]

    def share(self, spec: ToolSpec) -> ToolSpec:
        """The shared object with ``spec``'s content (for specs built without a raw form)."""
        if id(spec) in self._shared:
            return spec
        shared = self._by_content.setdefault(content_hash(spec.model_dump(mode="json")), spec)
        self._shared.add(id(shared))
        return shared


_KNOWN_LISTS = 64  # as many as judge.SharedMembers keeps texts


class TaskCollector:
    """Builds a TaskSet while enforcing the duplicate rules.

    A repeated id is a ``duplicate_id`` error for the later item (naming the first line). Identical
    content keeps the first; different content (compared as canonical JSON of the dumped model) makes
    the id ambiguous so that its trajectories are reported instead of graded against a guess. The
    canonical form of a task is computed only when its id repeats (most ids never do).

    Formats that read task items as dicts call ``prepare`` on each item before validating it, so
    tool specs seen on earlier lines are not validated or hashed again (see ``ToolSpecs``).
    """

    def __init__(self) -> None:
        self.result = TaskSet()
        self._digests: dict[str, str] = {}  # task id -> canonical hash of its first definition, computed on first need
        self._tools = ToolSpecs()
        self._fresh: list[tuple[int, Any]] = []  # (index, raw spec) of the prepared item's specs not seen before
        # id(raw tools list) -> (the list, its specs), for lists whose specs were all known (at most _KNOWN_LISTS)
        self._lists: dict[int, tuple[list[Any], list[Any]]] = {}

    def prepare(self, item: dict[str, Any], *, unchanged: bool = False) -> dict[str, Any]:
        """``item`` with each tool spec read before replaced by its validated, shared ``ToolSpec``.

        ``unchanged``: the caller's values are never mutated once read (a reader's items, whose
        repeated member texts ``judge.SharedMembers`` gives as one object). Then a tools list that
        is the very object of an earlier item's gives the same specs without writing each out and
        looking it up again (specs once known stay known). Not for values a caller may change
        between calls (``read_task_item``): there the list is read again."""
        self._fresh = []
        tools = item.get("tools")
        if not isinstance(tools, list) or not tools:
            return item
        known = self._lists.get(id(tools)) if unchanged else None
        if known is not None and known[0] is tools:
            return {**item, "tools": known[1]}
        replaced: list[Any] = []
        for i, raw in enumerate(tools):
            spec = self._tools.lookup(raw)
            if spec is None:
                self._fresh.append((i, raw))
            replaced.append(raw if spec is None else spec)
        if unchanged and not self._fresh:
            if len(self._lists) >= _KNOWN_LISTS:
                del self._lists[next(iter(self._lists))]
            self._lists[id(tools)] = (tools, replaced)  # the entry keeps the list alive: its id is not reused
        return {**item, "tools": replaced}

    def share_tools(self, task: Task) -> Task:
        """``task`` (validated from the item just ``prepare``d) with its tools the shared specs, for
        callers that keep tasks themselves (``pipelines.grade.reward``: no duplicate rules)."""
        return self._share_tools(task)

    def _share_tools(self, task: Task) -> Task:
        """Keep one object per distinct spec, so memory grows with the distinct tools, not with the
        number of tasks."""
        fresh, self._fresh = dict(self._fresh), []
        shared = [self._tools.remember(fresh[i], t) if i in fresh else self._tools.share(t) for i, t in enumerate(task.tools)]
        if all(a is b for a, b in zip(shared, task.tools, strict=True)):
            return task
        task = task.model_copy(update={"tools": shared})
        task.__dict__.pop("tool_index", None)  # rebuilt from the shared specs on first use
        return task

    def _digest(self, tid: str) -> str | None:
        """Canonical hash of the first definition of ``tid`` (computed on first need)."""
        digest = self._digests.get(tid)
        if digest is None and tid in self.result.tasks:
            digest = self._digests[tid] = _task_digest(self.result.tasks[tid])
        return digest

    def add(self, task: Task, source: SourceRef, warnings: list[InputWarning] | None = None) -> None:
        tid = task.task_id
        self.result.warnings.extend(warnings or [])
        if tid in self.result.invalid:
            self._fresh = []
            self._duplicate(tid, source, same=None)
            return
        if tid in self.result.sources:  # defined before (ids of unreadable items are in ``invalid``)
            self._fresh = []
            self._duplicate(tid, source, same=self._digest(tid) == _task_digest(task))
            return
        self.result.sources[tid] = source
        if tid not in self.result.ambiguous:  # e.g. its reference item was defined twice
            self.result.tasks[tid] = self._share_tools(task)
        else:
            self._digests[tid] = _task_digest(task)
            self._fresh = []

    def add_packed(self, tid: str, source: SourceRef, packed: bytes, warnings: list[InputWarning], tools: dict[bytes, dict[str, Any]]) -> None:
        """``add`` for a task validated and packed elsewhere (``pipelines.ingest._parallel``): the
        same rules, in the same order, without validating it again. ``tools``: raw specs by key,
        for the keys this collector has not met yet."""
        store = self.result.tasks
        for key, raw in tools.items():
            if not store.known_key(key):
                spec = self._tools.lookup(raw) or self._tools.remember(raw, ToolSpec.model_validate(raw))
                store.register_key(key, spec)
        self.result.warnings.extend(warnings)
        if tid in self.result.invalid:
            self._duplicate(tid, source, same=None)
            return
        if tid in self.result.sources:
            self._duplicate(tid, source, same=self._digest(tid) == _task_digest(store.unpack(packed)))
            return
        self.result.sources[tid] = source
        if tid not in self.result.ambiguous:
            store.put_packed(tid, packed)
        else:
            self._digests[tid] = _task_digest(store.unpack(packed))

    def add_error(self, info: InputErrorInfo, task_id: str | None) -> None:
        self._fresh = []
        self.result.errors.append(info)
        if task_id is None:
            self.result.unnamed.append(info)
            return
        if task_id in self.result.sources or task_id in self.result.invalid:
            first = self.result.sources.get(task_id)
            where = _where(first) if first else _where_info(self.result.invalid[task_id])
            self.mark_ambiguous(task_id, info.file, info.line, f"defined at {where} and again at {_where_info(info)}, which could not be read")
            return
        self.result.invalid[task_id] = info

    def _duplicate(self, tid: str, source: SourceRef, same: bool | None) -> None:
        first = self.result.sources.get(tid)
        where = _where(first) if first is not None else _where_info(self.result.invalid[tid])
        if same is True:
            message = f"task id {tid!r} already defined at {where} with identical content; the first definition is kept"
        elif same is False:
            message = f"task id {tid!r} already defined at {where} with different content; its trajectories are reported as ambiguous_task errors"
        else:
            message = f"task id {tid!r} already defined at {where}, which could not be read; its trajectories are reported as ambiguous_task errors"
        self.result.errors.append(InputErrorInfo(kind="duplicate_id", message=message, file=source.file, line=source.line, field="task_id"))
        if same is not True:
            self.mark_ambiguous(tid, source.file, source.line, f"defined at {where} and again at {_where(source)} with different content")

    def mark_ambiguous(self, tid: str, file: str, line: int | None, detail: str) -> None:
        """The id cannot be graded: its definitions disagree (or one could not be read)."""
        self._digest(tid)  # a later definition is still compared with the first
        self.result.tasks.pop(tid, None)
        if tid not in self.result.ambiguous:
            self.result.ambiguous[tid] = InputErrorInfo(kind="ambiguous_task", message=f"task {tid!r} is {detail}", file=file, line=line, field="task_id")


def _task_digest(task: Task) -> str:
    return content_hash(task.model_dump(mode="json"))


def _where(source: SourceRef) -> str:
    return source.file + (f":{source.line}" if source.line is not None else "")


def _where_info(info: InputErrorInfo) -> str:
    return info.file + (f":{info.line}" if info.line is not None else "")
