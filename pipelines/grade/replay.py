"""Replay a trajectory's predicted calls and the task's reference calls in the same environment.

This is VAKRA's evaluation move: what counts is what the tools *return*, so an alternative but
valid call path still passes. Reference and predicted calls each run in their own session (a
fresh copy of the domain state) carried across the turns of one trajectory.

Caching: a task's whole reference replay is deterministic (fresh state, fixed calls), so it is
cached by (environment version, reference-call content); read calls against unmodified state
are cached per call inside the environment. Writes are never served from a cache across sessions.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from judge import ReferenceCall, Step, Task, Trajectory, Turn, content_hash, dependency_order, response_key
from pipelines.alignment import TurnsMode, align

if TYPE_CHECKING:  # the runtime (SQLite, the environment models) loads when a task has an environment
    from pipelines.env import Environment, ExecResult, Session

REFERENCE_CACHE_SIZE = 1024
BFCL = "bfcl"  # Task.environment of BFCL's multi-turn entries: its own environment classes (pipelines.env._bfcl)


class TurnReplay(msgspec.Struct):
    turn_id: str
    reference: list[ExecResult]  # one per reference call, indexed like turn.reference_calls (executed in dependency order)
    predicted: list[ExecResult]  # one per predicted step of the trajectory turn, in order
    reference_state: str | None  # state digest after this turn (None when no write tool is involved)
    predicted_state: str | None
    environment: Any = None  # the benchmark environment's own checks of the turn (BFCL: pipelines.env TurnOutcome)


class Replayer:
    def __init__(self, root: Path | None = None, cache: bool = True, bfcl_time_limit_s: float = 60.0, bfcl_memory_limit_mb: int = 2048):
        self.root = root
        self.cache = cache
        self.bfcl_time_limit_s = bfcl_time_limit_s  # one BFCL entry's replay, every turn of both sides
        self.bfcl_memory_limit_mb = bfcl_memory_limit_mb  # beyond the grader's own size
        self._reference_cache: OrderedDict[tuple[str, str], list[tuple[list[ExecResult], str]]] = OrderedDict()
        self.reference_cache_hits = 0
        self.versions: dict[str, str] = {}  # environments used in this run -> version, for the manifest

    def environment(self, name: str) -> Environment:
        from pipelines.env import load_environment

        env = load_environment(name, self.root)  # raises UnknownEnvironment with the known names
        self.versions[name] = env.version
        return env

    def describe(self) -> dict[str, object]:
        return {"name": "replay", "environments": dict(sorted(self.versions.items())), "reference_cache_hits": self.reference_cache_hits}

    def replay(self, task: Task, trajectory: Trajectory, turns: TurnsMode = "auto") -> list[TurnReplay] | None:
        """One replay per aligned turn (``pipelines.alignment``, the grader's alignment). A call a
        policy blocked is never executed; a call runs under the name grading reads
        (``Task.tool_names``: ``math_factorial`` runs ``math.factorial``). None (no replay) when the
        task has no environment or some call's arguments were not recorded."""
        if task.environment is None:
            return None
        if not all(s.arguments_recorded for s in trajectory.steps):
            return None  # a call whose arguments were not recorded cannot be run again: graded on what was recorded
        if task.environment == BFCL:
            return self._replay_bfcl(task, trajectory, turns)
        from pipelines.env import ExecResult

        env = self.environment(task.environment)
        track_state = self._involves_writes(task, trajectory, env)
        alignment = align(task, trajectory, turns)
        if alignment.episode and len(task.turns) > 1:
            reference = [self._run_episode_reference(alignment.pairs[0][0], env)]
        else:
            reference = self._reference(task, env)
        predicted_session = env.session(cache=self.cache)
        names = task.tool_names
        replays = []
        for (turn, traj_turn), (ref_results, ref_state) in zip(alignment.pairs, reference, strict=True):
            predicted: list[ExecResult] = []
            for step in traj_turn.steps if traj_turn is not None else []:
                if step.status == "blocked":
                    predicted.append(ExecResult(ok=False, error="blocked by policy: not executed"))
                elif not executed(step):  # re-executing it would grade a call that never ran
                    predicted.append(ExecResult(ok=False, error=step.error or "not executed"))
                else:  # under the name of the tool it means, as grading reads it (Task.tool_names)
                    predicted.append(predicted_session.execute(names.resolve(step.name), step.arguments, label=step.call_id))
            replays.append(
                TurnReplay(
                    turn_id=turn.turn_id,
                    reference=ref_results,
                    predicted=predicted,
                    reference_state=ref_state if track_state else None,
                    predicted_state=predicted_session.state_digest() if track_state else None,
                )
            )
        return replays

    def _replay_bfcl(self, task: Task, trajectory: Trajectory, turns: TurnsMode) -> list[TurnReplay] | None:
        """BFCL's multi-turn grading: the agent's calls and the reference calls of each turn run in
        BFCL's own environment classes, each side in its own instances (``pipelines.env._bfcl``);
        every turn carries BFCL's checks of it. None when the dialogue is graded as one episode over
        several task turns (BFCL checks turn by turn: the turn assertions then stay open)."""
        from pipelines.env import CallSpec, EntrySpec, ExecResult, TurnSpec, bfcl_version, replay_bfcl_entry

        alignment = align(task, trajectory, turns)
        if alignment.episode and len(task.turns) > 1:
            return None
        config = task.environment_config or {}
        names = task.tool_names
        specs = []
        for turn, traj_turn in alignment.pairs:
            steps = traj_turn.steps if traj_turn is not None else []
            model = [CallSpec(names.resolve(s.name), dict(s.arguments or {})) for s in steps]
            truth = [CallSpec(c.name, dict(c.arguments)) for c in turn.reference_calls]
            specs.append(TurnSpec(model=model, truth=truth, reached=traj_turn is not None))
        entry = EntrySpec(
            entry_id=task.task_id,
            involved_classes=list(config.get("involved_classes") or []),
            initial_config=dict(config.get("initial_config") or {}),
            long_context=bool(config.get("long_context")),
            turns=specs,
        )
        outcomes = replay_bfcl_entry(entry, self.bfcl_time_limit_s, self.bfcl_memory_limit_mb)
        self.versions[BFCL] = bfcl_version()
        replays = []
        for (turn, _), outcome in zip(alignment.pairs, outcomes, strict=True):
            predicted = [
                ExecResult(ok=False, error=text) if raised else ExecResult(ok=True, result=text)
                for text, raised in zip(outcome.model_results, outcome.model_errors, strict=True)
            ]
            reference = [ExecResult(ok=True, result=text) for text in outcome.truth_results]
            replays.append(TurnReplay(turn.turn_id, reference, predicted, None, None, environment=outcome))
        return replays

    def _reference(self, task: Task, env: Environment) -> list[tuple[list[ExecResult], str]]:
        key = (env.version, content_hash([[c.model_dump(mode="json") for c in t.reference_calls] for t in task.turns]))
        if self.cache and key in self._reference_cache:
            self._reference_cache.move_to_end(key)
            self.reference_cache_hits += 1
            return self._reference_cache[key]
        session = env.session(cache=self.cache)
        out = []
        for turn in task.turns:
            out.append((self._run_reference_turn(session, turn.reference_calls), session.state_digest()))
        if self.cache:
            self._reference_cache[key] = out
            while len(self._reference_cache) > REFERENCE_CACHE_SIZE:
                self._reference_cache.popitem(last=False)
        return out

    def _run_episode_reference(self, turn: Turn, env: Environment) -> tuple[list[ExecResult], str]:
        session = env.session(cache=self.cache)
        return self._run_reference_turn(session, turn.reference_calls), session.state_digest()

    @staticmethod
    def _run_reference_turn(session: Session, calls: list[ReferenceCall]) -> list[ExecResult]:
        results: list[ExecResult | None] = [None] * len(calls)
        for i in dependency_order(calls):
            call = calls[i]
            results[i] = session.execute(call.name, call.arguments, label=call.label or call.id)
        return [r for r in results if r is not None]

    @staticmethod
    def _involves_writes(task: Task, trajectory: Trajectory, env: Environment) -> bool:
        if any(t.side_effect == "write" for t in task.tools):
            return True
        names = {c.name for t in task.turns for c in t.reference_calls} | {task.tool_names.resolve(s.name) for s in trajectory.steps}
        return any(env.is_write(n) for n in names)


def executed(step: Step) -> bool:
    """Whether the recorded call reached its tool: a call a run-time policy blocked, or one the
    runner failed by injection (an ``error`` / ``timeout`` fault), never ran, so replay must not
    run it either (it would change the predicted state and could satisfy a reference call)."""
    return not (step.status == "blocked" or (step.status == "error" and step.fault in ("error", "timeout")))


def responses_cover(reference: list[ExecResult], predicted: list[ExecResult]) -> bool:
    """VAKRA's containment: every successful reference response is among the successful predicted ones."""
    have = {response_key(r.result) for r in predicted if r.ok}
    return all(response_key(r.result) in have for r in reference if r.ok)
