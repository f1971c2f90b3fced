"""The escalation phase of a run: the cases that wait for a judge, asked in rounds, in one place,
whoever graded the shards; each round's questions (with the run's control items shuffled among
them) decided by the panel, or by judge worker processes, or sent as provider batches
(``--judge mode batch``: the run then stops ``waiting``); each round journaled before the next,
so a resumed run replays it and never asks again."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from judge import Check, Escalator, JudgeRequest, Outcome, PanelDecision, TrajectoryResult
from pipelines.controls import Control, ControlLedger, set_aside
from pipelines.grade import GradedCase
from pipelines.run.folder import RunDirError
from pipelines.run.merge import PendingRef
from pipelines.run.options import BatchWait, GradeOptions, JudgingProgress
from pipelines.run.records import ControlAnswer, DecidedRound, SubmittedBatches
from pipelines.run.state import RunState

if TYPE_CHECKING:
    from judge.llm import SpendLog

__all__ = ["TICK_S", "Escalation"]

TICK_S = 1.0  # how often the progress callback hears from a round in progress


class Escalation:
    """The rounds of one run (see the module docstring)."""

    def __init__(self, opts: GradeOptions, state: RunState, on_judging: Callable[[JudgingProgress], None] | None = None):
        self.opts = opts
        self.state = state
        self.on_judging = on_judging

    def run(self, cases: dict[PendingRef, GradedCase]) -> dict[PendingRef, TrajectoryResult] | BatchWait:
        """Rounds in one event loop: each round asks every waiting case its next question, all in
        one concurrent batch (the panel's clients and rate limiters live across rounds). Each
        round's decisions are journaled before the next, so a resumed run replays them.

        With provider batches (the escalator has a ``batch`` flow) a round whose questions the
        cache cannot answer sends them as batches, journals their ids and returns a ``BatchWait``;
        resumed, the round's batches are polled, and once every one has ended their answers are
        collected and the round is decided again with them. A question the round still needs
        then (a tie-breaker) goes out as a new batch of the same round."""
        escalator = self.opts.escalator
        ledger = self.controls
        waiting: list[dict[str, Any]] = []  # batches of the round in progress (journaled, not yet decided)
        decided = 0  # rounds decided so far (= the index of the round in progress)
        spent = 0.0  # by the journaled rounds: --max-cost caps the run, across its resumes
        for entry in self.state.rounds():
            if isinstance(entry, SubmittedBatches):
                waiting.extend(entry.batches)
                continue
            for (shard, local, ti, check), made in zip(entry.asks, entry.decisions, strict=True):
                spent += sum(v.cost_usd for v in made.votes if not v.cached)
                cases[(shard, local)].apply_decision(ti, Check(check), made, entry.panel)
            if ledger is not None and entry.controls:
                asked = [Control(c.request, Outcome(c.expected), c.built_as) for c in entry.controls]
                answers = [c.decision for c in entry.controls]
                spent += sum(v.cost_usd for d in answers for v in d.votes if not v.cached)
                ledger.asked |= {c.request.rubric for c in asked}
                ledger.record(asked, answers, self._label_outcomes())
            waiting, decided = [], decided + 1
        log = self._spend_log(escalator) if cases else None
        if log is not None:  # what stopped sessions paid in rounds never journaled, and calls they had in flight
            spent = max(spent, log.decided_usd) + log.open_usd + log.in_flight_usd
        count_spent = getattr(escalator, "count_spent", None)
        if spent and count_spent is not None:
            count_spent(spent)
        try:
            return self._rounds(cases, escalator, ledger, waiting, decided, log)
        finally:
            if log is not None:
                self._note_spend(escalator, log, spent)
                log.close()

    def _rounds(
        self,
        cases: dict[PendingRef, GradedCase],
        escalator: Any,
        ledger: ControlLedger | None,
        waiting: list[dict[str, Any]],
        decided: int,
        log: SpendLog | None,
    ) -> dict[PendingRef, TrajectoryResult] | BatchWait:
        batch = getattr(escalator, "batch", None)
        if waiting and batch is None:
            raise RunDirError("--resume: this run waits for provider batches: resume it in batch mode (judge resume RUN_DIR)")
        if escalator is not None and cases:
            judging = self._judging(escalator, len(cases))

            async def rounds() -> BatchWait | None:
                nonlocal waiting, decided
                try:
                    while True:
                        asks = [(ref, *nxt) for ref, case in cases.items() if (nxt := case.next_escalation()) is not None]
                        if not asks:
                            return None
                        requests = [cases[ref].request_for(ti, check) for ref, ti, check in asks]
                        if waiting:
                            wait = await self._collect(batch, waiting, decided)
                            if wait is not None:
                                return wait
                        controls = ledger.for_round(requests, decided) if ledger is not None else []
                        if controls:  # shuffled among the real questions: position tells a judge nothing
                            assert ledger is not None
                            placed, where = ledger.shuffled(requests, controls, decided)
                            answered = await self._decide_watched(judging, placed, decided)
                            decisions = [answered[where[i]] for i in range(len(requests))]
                            checked = [answered[where[len(requests) + k]] for k in range(len(controls))]
                        else:
                            decisions, checked = await self._decide_watched(judging, requests, decided), []
                        if batch is not None and batch.deferred:
                            if ledger is not None:
                                ledger.asked -= {c.request.rubric for c in controls}  # asked again when the round is decided
                            return await self._submit(batch, escalator.name, len(asks) + len(controls), decided)
                        if batch is not None:
                            batch.forget_answers()
                        if ledger is not None:
                            ledger.record(controls, checked, self._label_outcomes())
                            redecide = getattr(escalator, "redecide")  # noqa: B009  (a Panel's; the ledger exists only with one)
                            decisions = [set_aside(d, ledger.gated(d.rubric or ""), ledger.threshold, redecide) for d in decisions]
                        for (ref, ti, check), decision in zip(asks, decisions, strict=True):
                            cases[ref].apply_decision(ti, check, decision, escalator.name)
                        control_answers = [
                            ControlAnswer(request=c.request, expected=c.expected.value, built_as=c.built_as, decision=d)
                            for c, d in zip(controls, checked, strict=True)
                        ]
                        asked_now = [(ref[0], ref[1], ti, check.value) for ref, ti, check in asks]
                        if log is not None:  # what the log holds so far was paid for journaled rounds
                            self.state.record.spent_bytes = log.size()
                        self.state.append_round(DecidedRound(panel=escalator.name, asks=asked_now, decisions=decisions, controls=control_answers or None))
                        waiting, decided = [], decided + 1
                finally:
                    close = getattr(judging, "aclose", None)
                    if close is not None:
                        await close()

            import asyncio  # here, not at the top: a run without judges never starts an event loop

            wait = asyncio.run(rounds())
            if wait is not None:
                return wait
        return {ref: case.result() for ref, case in cases.items()}

    def _spend_log(self, escalator: Any) -> SpendLog | None:
        """The run's spend log (``judge.llm._spend``) for a panel that makes live calls: read back
        (what earlier sessions paid) and given to the panel, before any judge worker is forked."""
        log_spend = getattr(escalator, "log_spend", None)
        if log_spend is None:
            return None
        from judge.llm import SpendLog

        log = SpendLog(self.state.spent_path, since=self.state.record.spent_bytes)
        log_spend(log)
        return log

    def _note_spend(self, escalator: Any, log: SpendLog, earlier: float) -> None:
        """Say in the manifest's judge statistics what the run paid in all its sessions, where
        earlier ones paid anything (an uninterrupted run's manifest is unchanged)."""
        stats, budget = getattr(escalator, "stats", None), getattr(getattr(escalator, "caller", None), "budget", None)
        if not earlier or stats is None or budget is None:
            return
        calls = sum(log.in_flight.values())
        flying = f", ${log.in_flight_usd:.4f} of it estimated for {calls} call{'s' if calls != 1 else ''} in flight when a session was stopped" if calls else ""
        stats.note(
            f"judge cost of this run across its sessions: ${budget.total_usd:.4f} (earlier sessions ${earlier:.4f}{flying}); --max-cost counts all of it. "
            "The results record each answer once: a call repeated after a stop (or whose answer never arrived) is counted here, not there"
        )

    async def _decide_watched(self, judging: Escalator, requests: list[JudgeRequest], round_index: int) -> list[PanelDecision]:
        """``judging.decide(requests)``, telling ``on_judging`` where the round stands meanwhile."""
        report = self.on_judging
        if report is None:
            return await judging.decide(requests)
        stats = getattr(judging, "stats", None)
        base = getattr(judging, "answered", None)
        started = time.monotonic()

        def snapshot(done: bool = False) -> JudgingProgress:
            now = getattr(judging, "answered", None)
            answered = None if base is None or now is None else now - base
            if answered is not None and answered == 0 and not done and getattr(judging, "processes", 0):
                answered = None  # sharded: the workers' answers come back with the round
            return JudgingProgress(
                round=round_index + 1,
                questions=len(requests),
                answered=len(requests) if done else answered,
                calls=getattr(stats, "calls", 0),
                cached=getattr(stats, "cache_hits", 0),
                abstained=sum((getattr(stats, "abstentions", None) or {}).values()),
                cost_usd=getattr(stats, "cost_usd", 0.0),
                elapsed_s=time.monotonic() - started,
                done=done,
            )

        import asyncio

        async def tick() -> None:
            while True:
                report(snapshot())
                await asyncio.sleep(TICK_S)

        ticker = asyncio.create_task(tick())
        try:
            decisions = await judging.decide(requests)
        finally:
            ticker.cancel()
        report(snapshot(done=True))
        return decisions

    @cached_property
    def controls(self) -> ControlLedger | None:
        """The run's control items (``pipelines.controls``): with a panel that can tally its votes
        again (``redecide``), unless ``[grading] controls = "off"``."""
        cfg = self.opts.config
        if self.opts.escalator is None or cfg.controls == "off" or getattr(self.opts.escalator, "redecide", None) is None:
            return None
        return ControlLedger(mode=cfg.controls, threshold=cfg.control_threshold, seed=cfg.seed)

    def _label_outcomes(self) -> dict[str, dict[str, Outcome]]:
        """Rubric -> label -> outcome, as the panel reads its verdicts."""
        rubric = getattr(self.opts.escalator, "rubric", None)
        if rubric is None or self.controls is None:
            return {}
        return {name: dict(rubric(name).label_outcomes) for name in self.controls.asked}

    def _judging(self, escalator: Escalator, waiting: int) -> Escalator:
        """What decides the rounds: the panel, or, with ``--workers N`` and a first round of at least
        ``judge_shard_min`` questions (one per waiting case), the panel sharded over N judge worker
        processes (``judge.llm.ShardedPanel``: forked here, before the rounds' event loop; rounds
        too small to pay for it stay with the panel). Not with ``--ray`` (the cluster's workers
        are not this machine's cores) nor for a panel built without recorded settings."""
        if self.opts.workers <= 1 or self.opts.ray or self.opts.judge_settings is None:
            return escalator
        from judge.llm import shard_panel

        return shard_panel(
            escalator, self.opts.judge_settings, self.opts.rubrics, self.opts.workers, first_round=waiting, min_requests=self.opts.judge_shard_min
        )

    async def _collect(self, batch: Any, journaled: list[dict[str, Any]], decided: int) -> BatchWait | None:
        """Poll the round's batches; once every one has ended, load their answers for the round."""
        from judge.llm import BatchRecord

        statuses = await batch.poll([BatchRecord.from_json(r) for r in journaled])
        if not all(s.ended for s in statuses):
            return BatchWait(round=decided + 1, batches=[s.describe() for s in statuses])
        await batch.collect(statuses, self.state.folder / "batches")
        return None

    async def _submit(self, batch: Any, panel: str, questions: int, decided: int) -> BatchWait:
        """Send the round's deferred questions as provider batches, journaling each as it is
        created (also those that went out before a submission failed: they are paid for, and
        collected on resume)."""

        def journal(record: Any) -> None:  # each batch the moment it exists: it is paid for
            self.state.append_round(SubmittedBatches(panel=panel, round=decided, questions=questions, batches=[record.to_json()]))

        # a failed submission raises (BatchSubmitError) with the batches that went out journaled:
        # judge resume collects those and sends the rest
        records = await batch.submit(f"{self.opts.out.name} round {decided + 1}", journal)
        lines = [f"{r.api} batch {r.id}: submitted ({len(r.keys)} requests for {', '.join(r.judges)})" for r in records]
        return BatchWait(round=decided + 1, batches=lines, submitted=len(records))
