"""A panel's judge calls sharded over worker processes: one round's requests, N panels deciding them.

Why: with hundreds of calls in flight, the client's CPU per call (instructor, the SDK building the
request and reading the answer, the caller, the panel: ~1 ms) bounds throughput on one event loop.
Answers land in waves, and each wave of C answers costs C x that CPU before the next wave leaves.
N processes each keep C/N calls in flight: their waves are N times shorter and run side by side.

``ShardedPanel`` satisfies ``judge.Escalator`` around a ``Panel`` (which stays untouched and keeps
deciding small rounds here):

- the workers are forked when it is made, so they start in milliseconds with everything imported
  (make it outside a running event loop, before any thread of yours: it forks); each builds its
  own panel from the run's ``JudgeSettings`` and rubric table, as ``judge resume`` does, with its
  share of the run's limits (``build_panel(share=...)``: concurrency, each provider's concurrency
  and request rate), and decides the rounds it is sent until it is closed;
- a round of fewer than ``min_requests`` requests is decided by the panel in this process;
- requests that ask the same question (the same rendered messages) go to the same worker, in
  request order, so single flight shares one paid answer between them exactly as one process
  does, and every vote (``cached``, ``cost_usd``) is the one the panel alone would record;
- decisions come back in request order; each worker sends what its round added to its statistics
  (``CallStats.since``) and they are added to the panel's (``CallStats.merge``), so the manifest
  reads as if this process had judged alone;
- ``--max-cost`` stays the run's budget: the processes share one ledger in shared memory
  (``Budget.ledger``), every call checks the run's total before it launches, so the overshoot is
  bounded, as in one process, by the calls in flight (all processes together hold the run's
  concurrency, no more); each writes its calls to the run's spend log (``Budget.log``, opened
  before the fork), so a resume counts what a stopped round paid in every process;
- 429s and Retry-After: each worker retries its own calls under its share of each provider's rate;
- a worker that dies (killed, out of memory) never hangs the run: its pipe closes, its requests
  abstain (every judge ``error``, the reason says which worker died and how), the answers it got
  before dying are in the judge cache, and later rounds are judged in this process; an exception
  raised in a worker (a bug, a configuration error) is raised here with the worker's traceback,
  and the run stops, resumable (``judge resume``).

Forking needs the ``fork`` start method (Linux, macOS): elsewhere ``shard_panel`` keeps the panel.
Batch mode (``--judge-mode batch``) and ``--offline`` are not sharded: they send nothing live.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import multiprocessing
import pickle
import traceback
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import msgspec

from judge.core import AbstainReason, fresh_std_streams
from judge.core._escalation import Escalator, JudgeRequest
from judge.core._heap import frozen_heap, keep_inherited_frozen
from judge.core._stages import Outcome
from judge.core._verdict import PanelDecision, Vote
from judge.llm._panel import Panel, PanelStats, build_panel
from judge.llm._rubric import Rubric
from judge.llm._settings import JudgeSettings
from judge.llm._usage import CallStats

log = logging.getLogger("judge.sharded")

# Rounds smaller than this stay in this process, and a run whose first round is smaller starts no
# workers. Measured with ``bench/bench_judges.py --threshold`` (2 workers on 2 shared cores; 200 ms
# latency / 32 in flight and 1 s / 256): workers started for a round cost ~60-70 ms (fork, each
# worker's panel, its first call's TLS context) and break even at 128-256 requests; workers
# already running win from 16 requests up, by 3-16% of a round that short (tens of ms), so one
# threshold does for both.
SHARD_MIN_REQUESTS = 128


class _WorkerDied(Exception):
    """A judge worker process ended without answering its share of a round (never leaves
    ``ShardedPanel.decide``: its requests abstain)."""

    def __init__(self, index: int, exitcode: int | None):
        how = "was killed by signal " + str(-exitcode) if exitcode is not None and exitcode < 0 else f"exited with code {exitcode}"
        super().__init__(f"judge worker process {index} {how} before answering")
        self.index = index
        self.exitcode = exitcode


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a judge worker (the ``__cause__`` of its re-raise)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return "\n" + self.text


class _Worker(msgspec.Struct):
    index: int
    process: BaseProcess
    conn: Connection

    def exchange(self, requests: list[JudgeRequest]) -> tuple[list[PanelDecision], CallStats]:
        """Send a share of a round, wait for its decisions (blocking: run in a thread). Requests
        travel as plain tuples (pickling the models costs ~20x more, on the round's critical path)."""
        try:
            self.conn.send([(r.key, r.rubric, r.material) for r in requests])
            reply = self.conn.recv()
        except (EOFError, OSError) as exc:  # its end of the pipe closed: the process is gone
            self.process.join(timeout=5)
            raise _WorkerDied(self.index, self.process.exitcode) from exc
        if reply[0] == "error":
            _, error, text = reply
            raise error from _RemoteTraceback(text)
        _, decisions, stats = reply
        return decisions, stats


class ShardedPanel:
    """``panel``'s rounds decided by ``processes`` worker processes (see the module docstring)."""

    def __init__(
        self,
        panel: Panel,
        settings: JudgeSettings,
        rubrics: Mapping[str, Rubric] | None = None,
        *,
        processes: int,
        min_requests: int = SHARD_MIN_REQUESTS,
    ):
        if processes < 2:
            raise ValueError("a sharded panel needs at least 2 worker processes")
        self.panel = panel
        self.name = panel.name
        self.min_requests = min_requests
        self.rounds_sharded = 0
        self._answered_by_workers = 0  # requests the workers decided (counted as each round's shares come back)
        context = multiprocessing.get_context("fork")
        budget = panel.caller.budget
        self._ledger = context.Value("d", budget.total_usd)
        budget.ledger = self._ledger
        self._workers: list[_Worker] = []
        self._threads = ThreadPoolExecutor(max_workers=processes, thread_name_prefix="judge-worker-pipe")  # one blocked on each worker's answer
        try:
            for index in range(processes):
                ours, theirs = context.Pipe()
                others = [w.conn for w in self._workers]
                process = context.Process(
                    target=_serve,
                    args=(theirs, others, settings, rubrics, index, processes, self._ledger, budget.log),
                    name=f"judge-worker-{index}",
                    daemon=True,
                )
                with frozen_heap():  # the worker's collector never walks (so never copies) what this process holds
                    process.start()
                theirs.close()  # only the worker holds its end: its death reads as EOF here
                self._workers.append(_Worker(index, process, ours))
        except BaseException:
            self._stop()
            raise

    @property
    def stats(self) -> PanelStats:
        return self.panel.stats

    @property
    def answered(self) -> int:
        """Requests decided so far: the panel's own, and the workers' once a round's shares are back."""
        return self.panel.answered + self._answered_by_workers

    @property
    def batch(self) -> None:
        """Never a provider batch flow: batch mode is not sharded."""
        return None

    @property
    def processes(self) -> int:
        """Worker processes judging (0 once closed, or after one died)."""
        return len(self._workers)

    @property
    def pids(self) -> list[int | None]:
        return [w.process.pid for w in self._workers]

    async def decide(self, requests: Sequence[JudgeRequest]) -> list[PanelDecision]:
        if len(requests) < self.min_requests or not self._workers:
            return await self.panel.decide(requests)
        rubrics = [self.panel.rubric(r.rubric) for r in requests]  # fail before any paid call
        shares = split_by_question(requests, rubrics, len(self._workers))
        log.info("judging a round of %d requests over %d worker processes (%s)", len(requests), len(shares), ", ".join(str(len(s)) for s in shares))
        loop = asyncio.get_running_loop()
        replies = await asyncio.gather(
            *(loop.run_in_executor(self._threads, worker.exchange, [requests[i] for i in share]) for worker, share in zip(self._workers, shares, strict=True)),
            return_exceptions=True,
        )
        decisions: list[PanelDecision | None] = [None] * len(requests)
        died: list[_WorkerDied] = []
        for worker, share, reply in zip(self._workers, shares, replies, strict=True):
            if isinstance(reply, _WorkerDied):
                died.append(reply)
                for i in share:
                    decisions[i] = self._abstained(rubrics[i], reply)
                continue
            if isinstance(reply, BaseException):
                raise reply
            answered, part = reply
            if len(answered) != len(share):
                raise RuntimeError(f"judge worker process {worker.index} answered {len(answered)} of {len(share)} requests")
            for i, decision in zip(share, answered, strict=True):
                decisions[i] = decision
            self.stats.merge(part)
        done = [d for d in decisions if d is not None]
        assert len(done) == len(requests), "a request of the round was never decided"
        self._answered_by_workers += len(done)
        self._count(done)
        self.rounds_sharded += 1
        if died:
            self._after_deaths(died, len(requests))
        return done

    async def aclose(self) -> None:
        await asyncio.to_thread(self._stop)
        await self.panel.aclose()

    # --- plumbing -------------------------------------------------------------------------------
    def _count(self, decisions: list[PanelDecision]) -> None:
        """What ``Panel.decide`` counts for a round it decides, and the run's budget as it stands."""
        stats, budget = self.stats, self.panel.caller.budget
        stats.requests += len(decisions)
        for d in decisions:
            if d.outcome == Outcome.INCONCLUSIVE:
                stats.inconclusive += 1
            else:
                stats.decided += 1
        if stats.budget_exhausted:  # a worker found the run's budget spent: so is this process's
            budget.exhausted = True
        stats.budget_exhausted = budget.exhausted
        stats.budget_message = budget.message

    def _abstained(self, rubric: Rubric, died: _WorkerDied) -> PanelDecision:
        message = f"{died}; its answers so far are in the judge cache"
        votes = []
        for judge in self.panel.judges:
            self.stats.count_abstention(judge.name, "error")
            votes.append(Vote(judge=judge.name, abstained=True, abstain_reason=AbstainReason.ERROR, rationale=message))
        return PanelDecision(
            panel=self.panel.name,
            rule=self.panel.rule,
            rubric=rubric.name,
            rubric_version=rubric.version,
            outcome=Outcome.INCONCLUSIVE,
            votes=votes,
            reason=f"{message}; every judge abstained; unresolved, for human review",
        )

    def _after_deaths(self, died: list[_WorkerDied], size: int) -> None:
        for d in died:
            text = f"{d} in a round of {size} requests: its requests abstained (error); later rounds were judged in one process"
            log.warning(text)
            self.stats.note(text)
        self._stop()

    def _stop(self) -> None:
        """Tell every worker to finish (it closes its clients and cache), then reap it."""
        workers, self._workers = self._workers, []
        for worker in workers:
            with contextlib.suppress(OSError):  # already gone
                worker.conn.send(None)
        for worker in workers:
            worker.process.join(timeout=30)
            if worker.process.is_alive():
                log.warning("judge worker process %d did not stop: killed", worker.index)
                worker.process.kill()
                worker.process.join(timeout=5)
            worker.conn.close()
        self._threads.shutdown(wait=False)


def split_by_question(requests: Sequence[JudgeRequest], rubrics: Sequence[Rubric], shares: int) -> list[list[int]]:
    """Request indices per share, each share in request order. Requests that render the same
    messages stay together (single flight shares their answer, as in one process); groups go, in
    order of first appearance, to the share holding the fewest requests so far."""
    groups: dict[str, list[int]] = {}
    rendered: dict[str, str] = {}  # rubric and material -> the messages (a repeated material renders once)
    for i, (request, rubric) in enumerate(zip(requests, rubrics, strict=True)):
        try:
            material = f"{rubric.name}\n{rubric.version}\n{json.dumps(request.material, sort_keys=True, default=repr)}"
            key = rendered.get(material)
            if key is None:
                key = rendered[material] = f"{rubric.name}\n{json.dumps(rubric.render(request.material))}"
        except Exception:  # the worker's panel reports it (an inconclusive decision with the reason)
            key = f"unrendered:{i}"
        groups.setdefault(key, []).append(i)
    out: list[list[int]] = [[] for _ in range(shares)]
    for members in groups.values():
        min(out, key=len).extend(members)
    return [sorted(share) for share in out]


def shard_panel(
    escalator: Escalator,
    settings: JudgeSettings | None,
    rubrics: Mapping[str, Rubric] | None,
    processes: int,
    *,
    first_round: int,
    min_requests: int | None = None,
) -> Escalator:
    """``escalator`` sharded over up to ``processes`` worker processes when that can pay: a
    ``Panel`` built from ``settings`` (so a worker can build its own), live calls (not batch mode,
    not ``--offline``), a first round of at least ``min_requests`` requests, ``fork`` available,
    and limits that split (each worker keeps at least one call in flight per limit). Otherwise
    ``escalator`` itself."""
    threshold = SHARD_MIN_REQUESTS if min_requests is None else min_requests
    if not isinstance(escalator, Panel) or settings is None or settings.mode != "online" or settings.offline:
        return escalator
    if first_round < threshold or "fork" not in multiprocessing.get_all_start_methods():
        return escalator
    processes = min(processes, _splittable(escalator))
    if processes < 2:
        return escalator
    return ShardedPanel(escalator, settings, rubrics, processes=processes, min_requests=threshold)


def _splittable(panel: Panel) -> int:
    """How many processes the panel's concurrency limits can be split over."""
    caller = panel.caller
    limits = [caller.concurrency]
    for client in caller.clients:
        provider = caller.providers.get(client.provider)
        if provider is not None and provider.concurrency:
            limits.append(provider.concurrency)
    return min(limits)


# --- in a worker process --------------------------------------------------------------------------
def _serve(
    conn: Connection, others: list[Connection], settings: JudgeSettings, rubrics: Mapping[str, Rubric] | None, index: int, of: int, ledger: Any, log: Any = None
) -> None:
    """A worker's life: build its panel, decide each share it is sent, until told to stop (None)
    or the run's process is gone (EOF)."""
    keep_inherited_frozen()
    fresh_std_streams()
    for other in others:  # the run's ends of earlier workers' pipes, inherited: not ours to hold
        other.close()
    asyncio.run(_rounds(conn, settings, rubrics, index, of, ledger, log))


async def _rounds(conn: Connection, settings: JudgeSettings, rubrics: Mapping[str, Rubric] | None, index: int, of: int, ledger: Any, log: Any = None) -> None:
    loop = asyncio.get_running_loop()
    panel: Panel | None = None
    failure: BaseException | None = None
    try:
        panel = build_panel(settings, rubrics, share=(index, of))
        if panel is None:
            raise RuntimeError("the judge settings describe no judge")
        panel.caller.budget.ledger = ledger
        panel.caller.budget.log = log  # the run's spend log, open for appending (inherited)
    except Exception as exc:  # reported with the first share
        failure = exc
    try:
        while True:
            try:
                sent = await loop.run_in_executor(None, conn.recv)
            except (EOFError, OSError):
                return
            if sent is None:
                return
            requests = [JudgeRequest(key=key, rubric=rubric, material=material) for key, rubric, material in sent]
            if panel is None:
                assert failure is not None
                conn.send(_failure(failure))
                continue
            before = panel.stats.model_copy(deep=True)
            try:
                decisions = await panel.decide(requests)
            except Exception as exc:
                conn.send(_failure(exc))
                continue
            conn.send(("ok", decisions, panel.stats.since(before)))
    finally:
        if panel is not None:
            await panel.aclose()


def _failure(exc: BaseException) -> tuple[str, BaseException, str]:
    text = "".join(traceback.format_exception(exc))
    try:
        pickle.dumps(exc)
    except Exception:
        exc = RuntimeError(f"{type(exc).__name__}: {exc}")
    return ("error", exc, text)
