"""BFCL's own multi-turn environments, run for replay: how BFCL's multi-turn categories are graded.

BFCL grades a multi-turn entry by executing, turn by turn, the model's calls and the ground truth's
calls in its Python environment classes (``GorillaFileSystem``, ``MessageAPI``, ``TwitterAPI``,
``TicketAPI``, ``TradingBot``, ``TravelAPI``, ``VehicleControlAPI``, ``MathAPI``), each side in its
own instances that carry their state across the turns (``multi_turn_checker``). A turn whose
ground truth makes calls fails when the model made no call in it, when the state of some instance
differs from the ground truth's (every attribute not starting with ``_``, compared with ``!=``), or
when some ground-truth call's result is not among the results of the model's calls so far (a
multiset). A turn whose ground truth is empty is not checked (the model's calls there still run).
This module runs exactly that and reports it per turn (``TurnOutcome``); ``pipelines.grade.replay``
turns it into the replay the checks read.

Where the classes come from: the ``bfcl-eval`` package (Apache-2.0), imported lazily and only its
environment modules (``bfcl_eval.eval_checker.multi_turn_eval.func_source_code``, which need the
standard library and ``mpmath``) and its class table (``bfcl_eval.constants.executable_backend_config``).
Its declared dependencies are very heavy (torch through sentence-transformers, faiss, provider
SDKs) and none of them is needed here, so it is not a dependency of this project: install it with
``INSTALL`` (the ``bfcl`` extra brings ``mpmath``); without it a multi-turn task is an input error
naming that line.

Execution differs from BFCL's in form only: BFCL rewrites each call into a string and ``eval``s it;
here each call is a method looked up on the instance BFCL would use (the last involved class that
defines a public method of that name) and called with its literal arguments, so nothing the model
wrote is evaluated. Results are turned into text as BFCL does (strings as they are, dicts as JSON,
anything else ``str``; an exception ``Error during execution: <message>``; BFCL's refused names
``kill``, ``exit``, ``quit``, ``remove``, ``unlink``, ``popen``, ``Popen``, ``run`` are refused the
same way), so that response containment compares the same strings.

Bounds: entries are replayed one at a time in a forked worker process (kept for the next entry:
a fork per entry cost ten times the replay) with a wall-clock limit per entry and an address-space
limit (``resource.RLIMIT_AS``, the worker's size at the fork plus ``memory_limit_mb``); its output
goes to ``/dev/null``. An entry that runs past them is an ``EntryFailed`` (the caller's error row),
never a hung or exhausted grader; the worker is then killed and the next entry gets a new one.
Where ``os.fork`` is missing (Windows) the entry runs in this process without bounds.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import copy
import inspect
import json
import os
import pickle
import select
import signal
import time
from functools import cache
from typing import Any

import msgspec

from judge import ConfigurationError, TrajectoryJudgeError

__all__ = [
    "INSTALL",
    "BfclUnavailable",
    "CallSpec",
    "EntryFailed",
    "EntrySpec",
    "TurnOutcome",
    "TurnSpec",
    "bfcl_version",
    "bind_call",
    "environment_classes",
    "method_owners",
    "parse_call",
    "replay_entry",
]

INSTALL = "pip install 'trajectory-judge[bfcl]' && pip install --no-deps bfcl-eval"
TIME_LIMIT_S = 60.0  # one entry, every turn of both sides
MEMORY_LIMIT_MB = 2048  # beyond the child's size at the fork
REFUSED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})  # BFCL refuses these names
_MAX_SHOWN = 300  # characters of one attribute value kept in a state difference


class BfclUnavailable(ConfigurationError):
    """bfcl-eval (BFCL's environment classes) is not installed."""


class EntryFailed(TrajectoryJudgeError):
    """An entry's replay did not finish: it ran past its time or memory bound, or its process died."""


@cache
def _backend() -> tuple[dict[str, str], frozenset[str]]:
    try:
        from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES
    except ImportError as exc:
        raise BfclUnavailable(f"BFCL's multi-turn environments come from the bfcl-eval package, which is not installed: {INSTALL}") from exc
    return dict(CLASS_FILE_PATH_MAPPING), frozenset(STATELESS_CLASSES)


@cache
def environment_class(name: str) -> type:
    """One BFCL environment class by its name in ``involved_classes`` (its module imported on first use)."""
    modules, _ = _backend()
    if name not in modules:
        raise KeyError(f"BFCL has no environment class {name!r} (known: {sorted(modules)})")
    from importlib import import_module

    try:
        module = import_module(modules[name])
    except ImportError as exc:  # a module of bfcl-eval whose own imports are missing (mpmath)
        raise BfclUnavailable(f"BFCL's {name} cannot be imported ({exc}): {INSTALL}") from exc
    return getattr(module, name)


def environment_classes(names: list[str]) -> dict[str, type]:
    return {name: environment_class(name) for name in names}


def bfcl_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"bfcl-eval {version('bfcl-eval')}"
    except PackageNotFoundError:  # pragma: no cover - importable but not installed as a distribution
        return "bfcl-eval (unknown version)"


def method_owners(involved: list[str]) -> dict[str, str]:
    """Public method name -> the involved class whose instance BFCL calls it on (a later class wins)."""
    owners: dict[str, str] = {}
    for name in involved:
        cls = environment_class(name)
        for method, _ in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not method.startswith("_"):
                owners[method] = name
    return owners


# ---------------------------------------------------------------- calls


class CallSpec(msgspec.Struct, frozen=True):
    """One call to run: a method name with literal arguments."""

    name: str
    kwargs: dict[str, Any] = msgspec.field(default_factory=dict)
    args: tuple[Any, ...] = ()


def parse_call(text: str) -> CallSpec:
    """A ground-truth call string of BFCL (``cd(folder='document')``, ``sort('final_report.pdf')``):
    a name and literal arguments; ``ValueError`` for anything else."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not a call: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError("not a call of a plain function name")
    try:
        args = tuple(ast.literal_eval(a) for a in node.args)
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None}
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError) as exc:
        raise ValueError(f"an argument is not a literal ({exc})") from None
    if any(kw.arg is None for kw in node.keywords):
        raise ValueError("keyword unpacking is not a literal argument list")
    return CallSpec(node.func.id, kwargs, args)


def bind_call(call: CallSpec, owners: dict[str, str]) -> dict[str, Any]:
    """The call's arguments by parameter name (positional ones bound as the method would bind them);
    ``ValueError`` when no involved class has the method or the arguments do not fit it."""
    owner = owners.get(call.name)
    if owner is None:
        raise ValueError(f"no involved class has a method {call.name!r}")
    method = getattr(environment_class(owner), call.name)
    try:
        bound = inspect.signature(method).bind_partial(None, *call.args, **call.kwargs)
    except TypeError as exc:
        raise ValueError(f"{owner}.{call.name}: {exc}") from None
    named = dict(bound.arguments)
    named.pop(next(iter(inspect.signature(method).parameters)), None)  # self
    return named


# ---------------------------------------------------------------- one entry


class TurnSpec(msgspec.Struct, frozen=True):
    model: list[CallSpec]  # the model's calls of the turn, in order (every step's calls)
    truth: list[CallSpec]  # the ground truth's calls of the turn
    reached: bool = True  # the model's run got to this turn


class EntrySpec(msgspec.Struct, frozen=True):
    entry_id: str
    involved_classes: list[str]
    initial_config: dict[str, Any]
    long_context: bool
    turns: list[TurnSpec]


class TurnOutcome(msgspec.Struct):
    """What BFCL's checker sees of one turn (every list indexed like the turn's calls)."""

    model_results: list[str]
    model_errors: list[bool]  # the call raised (its result is BFCL's "Error during execution: ...")
    model_classes: list[str | None]  # the class whose instance ran each call (None: no involved class has it)
    model_changed: list[bool]  # the call changed the state of that instance
    truth_results: list[str]
    truth_classes: list[str | None]
    reached: bool  # the model's run got to this turn
    checked: bool  # BFCL checks this turn: its ground truth makes calls and the model reached it
    state_differences: dict[str, dict[str, dict[str, Any]]]  # class -> attribute -> {model, ground_truth} (shown values)
    missing: list[int]  # ground-truth calls whose result is not among the model's results so far


class _Side:
    """One side's instances (the model's or the ground truth's), alive across the entry's turns."""

    def __init__(self, spec: EntrySpec):
        _, stateless = _backend()
        self.instances: dict[str, Any] = {}
        for name in spec.involved_classes:
            instance = environment_class(name)()
            if name not in stateless:
                instance._load_scenario(copy.deepcopy(spec.initial_config.get(name, {})), long_context=spec.long_context)
            self.instances[name] = instance
        self.owners = method_owners(spec.involved_classes)

    def run(self, call: CallSpec, watch: bool = False) -> tuple[str, bool, str | None, bool]:
        """(result text, raised, owner class, changed its state)."""
        owner = self.owners.get(call.name)
        if call.name in REFUSED:
            return f"Error during execution: Function call {call.name} is not allowed.", True, owner, False
        if owner is None:
            return f"Error during execution: name '{call.name}' is not defined", True, None, False
        instance = self.instances[owner]
        before = _public_state(instance, deep=True) if watch else None
        try:
            value = getattr(instance, call.name)(*call.args, **call.kwargs)
        except MemoryError:
            raise  # the entry's bound, not the tool's answer: the entry fails (``replay_entry``)
        except Exception as exc:  # the tool's failure is the call's result, as in BFCL
            text, raised = f"Error during execution: {exc}", True
        else:
            text, raised = _as_text(value), False
        changed = before is not None and before != _public_state(instance)
        return text, raised, owner, changed


def _public_state(instance: Any, deep: bool = False) -> dict[str, Any]:
    state = {k: v for k, v in vars(instance).items() if not k.startswith("_")}
    return copy.deepcopy(state) if deep else state


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def _shown(value: Any) -> Any:
    """A state value as evidence shows it: JSON-ready, long texts cut."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value if not isinstance(value, str) or len(value) <= _MAX_SHOWN else value[:_MAX_SHOWN] + "..."
    if isinstance(value, dict):
        return {str(k): _shown(v) for k, v in list(value.items())[:50]}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
        return [_shown(v) for v in items[:50]]
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "..."


def _differences(model: Any, truth: Any) -> dict[str, dict[str, Any]]:
    """BFCL's state check of one instance: every public attribute of the ground truth's, by ``!=``."""
    out: dict[str, dict[str, Any]] = {}
    for attr in vars(truth):
        if attr.startswith("_"):
            continue
        mine, theirs = getattr(model, attr, None), getattr(truth, attr)
        if mine != theirs:
            out[attr] = {"model": _shown(mine), "ground_truth": _shown(theirs)}
    return out


def _unordered_missing(truth: list[str], model: list[str]) -> list[int]:
    """Indices of ``truth`` items not found in ``model``, each model item used once (BFCL's
    ``_is_subsequence_unordered``)."""
    pool: dict[str, int] = {}
    for item in model:
        pool[item] = pool.get(item, 0) + 1
    missing = []
    for i, item in enumerate(truth):
        if pool.get(item, 0) > 0:
            pool[item] -= 1
        else:
            missing.append(i)
    return missing


def run_entry(spec: EntrySpec) -> list[TurnOutcome]:
    """The entry replayed here, turn by turn, as BFCL's ``multi_turn_checker`` runs it."""
    model, truth = _Side(spec), _Side(spec)
    so_far: list[str] = []
    outcomes = []
    for turn in spec.turns:
        runs = [model.run(call, watch=True) for call in turn.model]
        truth_runs = [truth.run(call) for call in turn.truth]
        so_far.extend(r[0] for r in runs)
        checked = turn.reached and bool(turn.truth)
        differences: dict[str, dict[str, dict[str, Any]]] = {}
        missing: list[int] = []
        if checked and turn.model:
            for name, instance in truth.instances.items():
                diff = _differences(model.instances[name], instance)
                if diff:
                    differences[name] = diff
            missing = _unordered_missing([r[0] for r in truth_runs], so_far)
        outcomes.append(
            TurnOutcome(
                model_results=[r[0] for r in runs],
                model_errors=[r[1] for r in runs],
                model_classes=[r[2] for r in runs],
                model_changed=[r[3] for r in runs],
                truth_results=[r[0] for r in truth_runs],
                truth_classes=[r[2] for r in truth_runs],
                reached=turn.reached,
                checked=checked,
                state_differences=differences,
                missing=missing,
            )
        )
    return outcomes


def replay_entry(spec: EntrySpec, time_limit_s: float = TIME_LIMIT_S, memory_limit_mb: int = MEMORY_LIMIT_MB) -> list[TurnOutcome]:
    """``run_entry`` in a forked worker process bounded in time and memory (see the module doc).
    Raises ``EntryFailed`` when it does not finish, ``BfclUnavailable`` without bfcl-eval."""
    environment_classes(spec.involved_classes)  # import here: the worker inherits the modules, and a missing package is said plainly
    if not hasattr(os, "fork"):  # pragma: no cover - Windows
        return run_entry(spec)
    global _WORKER
    worker = _WORKER
    if worker is None or not worker.usable(memory_limit_mb):
        if worker is not None:
            worker.stop()
        for name in spec.involved_classes:  # the worker inherits every class this entry needs
            environment_class(name)
        worker = _WORKER = _Worker(memory_limit_mb)
    try:
        kind, payload = worker.run(spec, time_limit_s)
    except EntryFailed:
        worker.stop()
        _WORKER = None
        raise
    if kind == "error":
        worker.stop()  # its state after a failure is not trusted: the next entry gets a fresh worker
        _WORKER = None
        raise EntryFailed(f"replaying {spec.entry_id} in BFCL's environments failed: {payload}")
    return payload


class _Worker:
    """One forked process that replays entries one at a time (a fork per entry cost ~20 ms, ten
    times the replay): length-prefixed pickles over two pipes. Its address space is bounded from
    the fork; an entry past its time is killed with the worker, and one that fails (memory, an
    unexpected error) ends it: the next entry then starts a new one. It ends when this process
    closes its pipe (exit), and belongs to the process that forked it (a grading worker forked
    later starts its own)."""

    def __init__(self, memory_limit_mb: int):
        self.owner = os.getpid()
        self.memory_limit_mb = memory_limit_mb
        to_child, self._to_child = os.pipe()
        self._from_child, from_parent = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the worker: never returns
            os.close(self._to_child)
            os.close(self._from_child)
            _serve(to_child, from_parent, memory_limit_mb)
        os.close(to_child)
        os.close(from_parent)

    def usable(self, memory_limit_mb: int) -> bool:
        return self.owner == os.getpid() and self.memory_limit_mb == memory_limit_mb and self.pid > 0

    def run(self, spec: EntrySpec, time_limit_s: float) -> tuple[str, Any]:
        try:
            _send(self._to_child, pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            raise EntryFailed(f"the process replaying {spec.entry_id} in BFCL's environments was gone before it started") from None
        data = _receive(self._from_child, time.monotonic() + time_limit_s)
        if data is None:
            raise EntryFailed(f"replaying {spec.entry_id} in BFCL's environments took longer than {time_limit_s:g} s: stopped")
        if data == b"":
            status = self._reap()
            raise EntryFailed(f"the process replaying {spec.entry_id} in BFCL's environments died ({status}) before it finished")
        kind, payload = pickle.loads(data)
        return kind, payload

    def _reap(self) -> str:
        _kill(self.pid)
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return "already reaped"
        finally:
            self.pid = -1
        return f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit status {os.WEXITSTATUS(status)}"

    def stop(self) -> None:
        if self.owner != os.getpid():
            return  # a forked copy of another process's worker: not ours to stop
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.pid > 0:
            self._reap()


_WORKER: _Worker | None = None


@atexit.register
def _stop_worker() -> None:  # pragma: no cover - at interpreter exit
    if _WORKER is not None:
        _WORKER.stop()


def _serve(read_end: int, write_end: int, memory_limit_mb: int) -> None:  # pragma: no cover - runs in the forked worker
    code = 0
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        _limit_memory(memory_limit_mb)
        while True:
            data = _receive(read_end, None)
            if not data:
                break  # the grader closed the pipe: done
            spec = pickle.loads(data)
            failed = False
            try:
                payload: tuple[str, Any] = ("ok", run_entry(spec))
            except MemoryError:
                payload, failed = ("error", f"it needed more than {memory_limit_mb} MB beyond the grader's own memory"), True
            except Exception as exc:
                payload, failed = ("error", f"{type(exc).__name__}: {exc}"), True
            _send(write_end, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
            if failed:
                break
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(fd, view) :]


def _receive(fd: int, deadline: float | None) -> bytes | None:
    """One message: its bytes; ``b""`` when the other side closed the pipe; None past the deadline."""
    head = _read_exactly(fd, 8, deadline)
    if head is None or len(head) < 8:
        return head if head is None else b""
    body = _read_exactly(fd, int.from_bytes(head, "big"), deadline)
    if body is None:
        return None
    return body


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes | None:
    chunks: list[bytes] = []
    got = 0
    while got < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
        chunk = os.read(fd, min(size - got, 1 << 20))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _limit_memory(extra_mb: int) -> None:  # pragma: no cover - runs in the forked child
    try:
        import resource
    except ImportError:
        return
    size = _virtual_size()
    if size is None:
        return
    limit = size + extra_mb * (1 << 20)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _virtual_size() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
