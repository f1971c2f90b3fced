"""The whole run: every task x every trial, collected concurrently into ``trajectories.jsonl``.

Guarantees:
- every planned (task, trial) ends either as one line of ``trajectories.jsonl`` (native format) or
  as one line of ``run_errors.jsonl`` saying why it could not be collected (the model never
  answered, an offline cache miss, the budget, a task no tool source can serve); an
  infrastructure failure is never recorded as the agent's failure;
- a finished trajectory is appended (and flushed) the moment it ends, so an interrupted run
  resumes: the same command on the same ``--out`` runs only what is missing (``run.json`` holds
  the run's identity; a different run in that folder is refused unless ``--overwrite``);
- at the end ``trajectories.jsonl`` is rewritten in the canonical order (task order, then
  trial), so its order never depends on concurrency;
- ``--max-cost``: once live model calls have cost that much, no further trajectory starts (those
  running finish: the overshoot is bounded by ``--concurrency`` trajectories).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import msgspec

from judge import BadInputError, ConfigurationError, InputErrorInfo
from judge.llm import Budget, ConfigFile, JudgeCache, JudgeConfigError, JudgeSettings, RateLimiter, RetryPolicy, load_config_file, price_for
from pipelines.ingest import Limits, TaskSet, load_tasks
from pipelines.runner._caller import ModelCaller
from pipelines.runner._faults import FaultPlan
from pipelines.runner._loop import LoopSettings, TrajectoryJob, run_trajectory
from pipelines.runner._prompt import HARNESS_DIGEST, HARNESS_PROMPT, HARNESS_VERSION, harness_id
from pipelines.runner._shortlist import MenuFactory
from pipelines.runner.agents import AgentCallError, AgentConfigError, AgentModel, Sampling, create_agent
from pipelines.runner.tools import EnvToolSource, MCPToolSource, ToolSource

TRAJECTORIES, RUN_ERRORS, RUN_STATE, UNPLANNED = "trajectories.jsonl", "run_errors.jsonl", "run.json", "trajectories.unplanned.jsonl"
MCP_STDERR = "mcp-server.log"  # stderr of the stdio MCP servers the run started


class RunDirConflict(ConfigurationError):
    """``--out`` holds another run's trajectories (a different agent, tasks file, seed, ...)."""


class TaskInputError(BadInputError):
    """``--on-error fail`` and the tasks file has a bad item."""

    def __init__(self, info: InputErrorInfo):
        super().__init__(info.render())
        self.info = info


class RunOptions(msgspec.Struct):
    agent: str
    tasks: Path
    out: Path
    trials: int = 1
    reference: Path | None = None
    task_format: str | None = None
    seed: int = 0
    max_steps: int = 30
    enforce_policy: bool = True
    faults: FaultPlan | None = None
    concurrency: int = 8
    rpm: float | None = None
    max_cost_usd: float | None = None
    config_path: Path | None = None  # [providers.*], [prices], [retry] (the judges' config file)
    base_url: str | None = None
    sampling: Sampling = msgspec.field(default_factory=Sampling)
    max_tools: int | None = None  # None: the provider's cap (OpenAI 128); shortlist above it
    mcp_command: str | None = None
    mcp_url: str | None = None
    mcp_headers: dict[str, str] = msgspec.field(default_factory=dict)
    env_root: Path | None = None
    cache_path: Path | None = None
    no_cache: bool = False
    offline: bool = False
    agent_name: str | None = None
    overwrite: bool = False
    on_error: Literal["skip", "fail"] = "skip"
    limits: Limits = msgspec.field(default_factory=Limits)
    retry: RetryPolicy | None = None  # tests inject a policy that does not sleep
    progress: Callable[[int, int], None] | None = None  # (finished, to run) after each trajectory
    command: list[str] = msgspec.field(default_factory=list)


class RunError(msgspec.Struct, frozen=True):
    task_id: str
    trajectory_id: str
    trial: int
    kind: str  # agent_error, offline_miss, tool_error, unrunnable, budget, internal
    message: str
    order: int

    def as_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "trajectory_id": self.trajectory_id, "trial": self.trial, "kind": self.kind, "message": self.message}


class CollectOutcome(msgspec.Struct):
    out: Path
    trajectories: Path
    planned: int
    collected: int  # trajectories of this plan now in trajectories.jsonl
    resumed: int  # of those, found there from an earlier, interrupted run
    errors: list[RunError]
    task_errors: list[InputErrorInfo]
    info: dict[str, Any]  # run.json's content

    @property
    def complete(self) -> bool:
        return self.collected == self.planned


def trajectory_id(task_id: str, trial: int) -> str:
    return f"{task_id}#{trial}"


def trial_seed(seed: int, task_id: str, trial: int) -> int:
    """A per-(task, trial) seed: sent to providers that take one, part of every cache key."""
    digest = hashlib.sha256(f"{seed}\x1f{task_id}\x1f{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _sha256(path: Path | None) -> str | None:
    if path is None:
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_agent_config(path: Path | None) -> ConfigFile:
    """The config file's provider, price and retry sections (the judges read the same file, through
    the same loader: one set of messages for a missing file, bad TOML or a bad field)."""
    if path is None:
        return ConfigFile()
    try:
        return load_config_file(path)
    except JudgeConfigError as exc:
        raise AgentConfigError(str(exc)) from None


def build_tool_source(opts: RunOptions) -> ToolSource:
    if opts.mcp_command is not None or opts.mcp_url is not None:
        return MCPToolSource(
            command=opts.mcp_command,
            url=opts.mcp_url,
            headers=opts.mcp_headers,
            timeout_s=opts.sampling.timeout_s,
            stderr_log=opts.out / MCP_STDERR,
        )
    return EnvToolSource(opts.env_root)


class Collector:
    """Plans the jobs, resumes, runs them concurrently and writes what they produce."""

    def __init__(self, opts: RunOptions):
        if opts.trials < 1:
            raise ValueError("--trials must be at least 1")
        if opts.max_steps < 1:
            raise ValueError("--max-steps must be at least 1")
        if opts.concurrency < 1:
            raise ValueError("--concurrency must be at least 1")
        self.opts = opts
        config = load_agent_config(opts.config_path)
        self.agent: AgentModel = create_agent(opts.agent, config.providers, opts.sampling, opts.base_url)
        if not opts.offline:
            self.agent.check_ready()
        self.agent.preload()
        provider_config = config.providers.get(self.agent.provider)
        rpm = opts.rpm if opts.rpm is not None else (provider_config.rpm if provider_config is not None else None)
        self.price = price_for(self.agent.name, self.agent.kind, config.prices)
        if opts.max_cost_usd is not None and self.price is None:
            raise AgentConfigError(
                f"--max-cost needs the price of {self.agent.name!r}, which is unknown: add "
                f'[prices."{self.agent.name}"] input_per_1m = ... output_per_1m = ... to the --config file'
            )
        if opts.offline and opts.no_cache:
            raise ValueError("--offline answers from the cache: it cannot go with --no-cache")
        self.budget = Budget(max_cost_usd=opts.max_cost_usd)
        self.cache_path = None if opts.no_cache else (opts.cache_path or JudgeSettings().resolved_cache_path())
        self.cache = JudgeCache(self.cache_path) if self.cache_path is not None else None
        self.caller = ModelCaller(
            self.agent,
            cache=self.cache,
            offline=opts.offline,
            retry=opts.retry or RetryPolicy(config.retry),
            limiter=RateLimiter(rpm) if rpm else None,
            price=self.price,
            budget=self.budget,
        )
        self.source = build_tool_source(opts)
        cap = opts.max_tools if opts.max_tools is not None else self.agent.max_tools
        self.menus = MenuFactory(cap if cap and cap > 0 else None)
        self.settings = LoopSettings(agent=opts.agent_name or opts.agent, max_steps=opts.max_steps, enforce_policy=opts.enforce_policy, faults=opts.faults)
        self.errors: list[RunError] = []
        self.stop_reasons: Counter[str] = Counter()

    # -- identity and resume ----------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """What makes two runs the same run (``--trials``, concurrency, limits and cache are not)."""
        o = self.opts
        source = self.source.describe()
        source.pop("versions", None)
        return {
            "agent": o.agent,
            "agent_name": self.settings.agent,
            "base_url": self.agent.base_url,
            "tasks_sha256": _sha256(o.tasks),
            "reference_sha256": _sha256(o.reference),
            "task_format": o.task_format,
            "seed": o.seed,
            "max_steps": o.max_steps,
            "enforce_policy": o.enforce_policy,
            "faults": o.faults.describe() if o.faults is not None else None,
            "tools": source,
            "max_tools": self.menus.cap,
            "harness": harness_id(),
            "sampling": {"temperature": o.sampling.temperature, "max_tokens": o.sampling.max_tokens},
        }

    def _prepare_out(self, identity: dict[str, Any]) -> None:
        """Resume the same run, refuse another one, or (``--overwrite``) start afresh."""
        out = self.opts.out
        if out.exists() and not out.is_dir():
            raise RunDirConflict(f"--out {out}: exists and is not a directory")
        out.mkdir(parents=True, exist_ok=True)
        state, trajectories = out / RUN_STATE, out / TRAJECTORIES
        if self.opts.overwrite:
            for name in (TRAJECTORIES, RUN_ERRORS, UNPLANNED, RUN_STATE):
                with contextlib.suppress(FileNotFoundError):
                    (out / name).unlink()
        elif state.exists():
            try:
                earlier = json.loads(state.read_text(encoding="utf-8")).get("identity") or {}
            except (ValueError, AttributeError):
                earlier = {}
            if earlier != identity:
                changed = sorted(k for k in set(identity) | set(earlier) if earlier.get(k) != identity.get(k))
                raise RunDirConflict(
                    f"--out {out}: holds a different run (differs in: {', '.join(changed)}); choose another --out, or pass --overwrite to replace it"
                )
        elif trajectories.exists():
            raise RunDirConflict(f"--out {out}: holds {TRAJECTORIES} of no known run (no {RUN_STATE}); choose another --out, or pass --overwrite")
        _write_json(state, {"identity": identity, "status": "running"})

    @staticmethod
    def _finished_ids(path: Path) -> set[str]:
        """Ids already collected; a torn last line (an interrupted write) is cut off."""
        if not path.exists():
            return set()
        done: set[str] = set()
        good = 0
        with open(path, "rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                try:
                    done.add(str(json.loads(raw)["trajectory_id"]))
                except (ValueError, KeyError, TypeError):
                    break
                good += len(raw)
        if good != path.stat().st_size:
            with open(path, "r+b") as fh:
                fh.truncate(good)
        return done

    # -- the run -----------------------------------------------------------------------------
    def plan(self, taskset: TaskSet) -> list[TrajectoryJob]:
        jobs = []
        for t_index, task in enumerate(taskset.tasks.values()):
            for trial in range(1, self.opts.trials + 1):
                jobs.append(
                    TrajectoryJob(
                        task=task,
                        trial=trial,
                        seed=trial_seed(self.opts.seed, task.task_id, trial),
                        trajectory_id=trajectory_id(task.task_id, trial),
                        order=t_index * self.opts.trials + trial - 1,
                    )
                )
        return jobs

    async def _one(self, job: TrajectoryJob, sink: Any) -> None:
        task = job.task
        problem = self.source.unavailable(task)
        if problem is not None:
            self._fail(job, "unrunnable", problem)
            return
        if not self.budget.can_launch():
            self._fail(job, "budget", f"--max-cost of ${self.budget.max_cost_usd:.4f} reached (spent ${self.budget.spent_usd:.4f}); not started")
            return
        try:
            async with self.source.session(task) as tools:
                offered = list(task.tools) if task.tools else await tools.tools()
                trajectory = await run_trajectory(job, self.caller, tools, self.menus.menu(offered), self.settings, self.source.label(task))
        except AgentCallError as exc:
            self._fail(job, "offline_miss" if exc.reason == "offline" else "agent_error", str(exc))
            return
        except Exception as exc:  # a broken tool transport (MCP server died) or a bug: report, never grade
            leaf = _leaf(exc)
            if isinstance(self.source, MCPToolSource):
                where = f" (the server's stderr is in {self.opts.out / MCP_STDERR})" if self.source.argv is not None else ""
                self._fail(job, "tool_error", f"MCP server: {type(leaf).__name__}: {leaf}{where}")
            else:
                self._fail(job, "internal", f"{type(leaf).__name__}: {leaf}")
            return
        self.stop_reasons[trajectory.metadata.get("stop_reason", "completed")] += 1
        sink.write(trajectory.model_dump_json(exclude_none=True).encode("utf-8") + b"\n")
        sink.flush()

    def _fail(self, job: TrajectoryJob, kind: str, message: str) -> None:
        self.errors.append(RunError(job.task.task_id, job.trajectory_id, job.trial, kind, message, job.order))

    async def _run_jobs(self, jobs: list[TrajectoryJob], sink: Any) -> None:
        queue: Iterator[TrajectoryJob] = iter(jobs)
        finished = 0

        async def worker() -> None:
            nonlocal finished
            for job in queue:  # one shared iterator: each job is taken exactly once
                await self._one(job, sink)
                finished += 1
                if self.opts.progress is not None:
                    self.opts.progress(finished, len(jobs))

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.opts.concurrency, len(jobs)) or 1)))
        finally:
            await self.agent.aclose()

    def collect(self) -> CollectOutcome:
        opts = self.opts
        started = datetime.now(UTC)
        taskset = load_tasks(opts.tasks, opts.task_format, opts.reference, opts.limits)
        if opts.on_error == "fail" and taskset.errors:
            raise TaskInputError(taskset.errors[0])
        identity = self.identity()
        self._prepare_out(identity)
        path = opts.out / TRAJECTORIES
        jobs = self.plan(taskset)
        done = self._finished_ids(path)
        pending = [j for j in jobs if j.trajectory_id not in done]
        resumed = len(jobs) - len(pending)
        try:
            with open(path, "ab") as sink:
                asyncio.run(self._run_jobs(pending, sink))
        finally:
            self.source.close()
            if self.cache is not None:
                self.cache.close()
        collected = self._canonical_order(path, jobs)
        self.errors.sort(key=lambda e: e.order)
        _write_lines(opts.out / RUN_ERRORS, [e.as_dict() for e in self.errors])
        info = self._info(identity, jobs, collected, resumed, taskset, started)
        _write_json(opts.out / RUN_STATE, info)
        return CollectOutcome(
            out=opts.out,
            trajectories=path,
            planned=len(jobs),
            collected=collected,
            resumed=resumed,
            errors=list(self.errors),
            task_errors=list(taskset.errors),
            info=info,
        )

    def _canonical_order(self, path: Path, jobs: list[TrajectoryJob]) -> int:
        """Rewrite ``path`` in plan order (reading each line once more by offset: memory stays flat).
        Lines of ids outside this plan (an earlier run with more trials) move to ``UNPLANNED``."""
        order = {j.trajectory_id: j.order for j in jobs}
        placed: dict[str, tuple[int, int]] = {}
        unplanned: list[tuple[int, int]] = []
        offset = 0
        with open(path, "rb") as fh:
            for raw in fh:
                tid = str(json.loads(raw)["trajectory_id"])
                if tid in order and tid not in placed:
                    placed[tid] = (offset, len(raw))
                elif tid not in order:
                    unplanned.append((offset, len(raw)))
                offset += len(raw)
        tmp = path.with_name(path.name + ".tmp")
        with open(path, "rb") as src, open(tmp, "wb") as dst:
            for tid in sorted(placed, key=order.__getitem__):
                start, size = placed[tid]
                src.seek(start)
                dst.write(src.read(size))
            if unplanned:
                with open(path.with_name(UNPLANNED), "ab") as extra:
                    for start, size in unplanned:
                        src.seek(start)
                        extra.write(src.read(size))
        os.replace(tmp, path)
        return len(placed)

    def _info(self, identity: dict[str, Any], jobs: list[TrajectoryJob], collected: int, resumed: int, taskset: TaskSet, started: datetime) -> dict[str, Any]:
        kinds = Counter(e.kind for e in self.errors)
        return {
            "identity": identity,
            "status": "complete" if collected == len(jobs) else "incomplete",
            "command": self.opts.command,
            "agent": {
                "name": self.agent.name,
                "kind": self.agent.kind,
                "model": self.agent.model,
                "base_url": self.agent.base_url,
                "recorded_as": self.settings.agent,
                "sampling": {"temperature": self.opts.sampling.temperature, "max_tokens": self.opts.sampling.max_tokens, "timeout_s": self.agent.timeout_s},
                "price_per_1m": None if self.price is None else self.price.model_dump(),
            },
            "harness": {"version": HARNESS_VERSION, "digest": HARNESS_DIGEST, "prompt": HARNESS_PROMPT},
            "tools": self.source.describe(),
            "trials": self.opts.trials,
            "counts": {
                "tasks": len(taskset.tasks),
                "task_errors": len(taskset.errors),
                "planned": len(jobs),
                "collected": collected,
                "resumed": resumed,
                "not_collected": len(jobs) - collected,
                "errors_by_kind": dict(sorted(kinds.items())),
                "stop_reasons": dict(sorted(self.stop_reasons.items())),
            },
            "task_errors": [info.model_dump(mode="json", exclude_none=True) for info in taskset.errors],
            "model_calls": self.caller.stats.as_dict(),
            "cache": {"path": None if self.cache_path is None else str(self.cache_path), "offline": self.opts.offline},
            "limits": {"concurrency": self.opts.concurrency, "rpm": self.caller.limiter.rate * 60 if self.caller.limiter else None},
            "budget": {
                "max_cost_usd": self.budget.max_cost_usd,
                "spent_usd": round(self.budget.spent_usd, 6),
                "exhausted": self.budget.exhausted,
                "price_known": self.price is not None,
            },
            "started_at": started.isoformat(timespec="seconds"),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }


def _leaf(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio wraps transport failures in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def collect_trajectories(opts: RunOptions) -> CollectOutcome:
    """Run the agent on every task x trial; see the module's guarantees."""
    return Collector(opts).collect()


def add_runner_to_manifest(out: Path, info: dict[str, Any]) -> None:
    """Record the run (agent, harness version, tools, faults, model calls) in ``manifest.json``."""
    from pipelines.run.folder import MANIFEST, atomic_write
    from pipelines.run.records import read_manifest

    path = out / MANIFEST
    manifest = read_manifest(path)  # the grading of the run wrote it (typed, versioned)
    manifest.runner = info
    atomic_write(path, manifest.dump())
