"""Grading throughput with replay on the bundled sample benchmark (issue 3), plus how many
inconclusive cases would escalate: panel requests per 100 trajectories (issue 4's cost target).

Run: .venv/bin/python bench/bench_sample.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from judge import Outcome, PanelDecision, Vote
    from pipelines.grade import Replayer
    from pipelines.run import GradeOptions, run_grading

    sample = ROOT / "data" / "sample"
    replayer = Replayer()

    class CountingPanel:
        """Answers every request as a unanimous yes, so escalation runs to its end; counts requests."""

        name = "count"
        requests = 0

        async def decide(self, requests):
            CountingPanel.requests += len(requests)
            positive = {"answer_correctness": "correct", "trajectory_sufficiency": "sufficient", "groundedness": "supported", "policy_adherence": "adheres"}
            return [
                PanelDecision(
                    panel="count", rule="majority", label=positive.get(r.rubric, "yes"), outcome=Outcome.MATCH, votes=[Vote(judge="mock:yes", label="yes")]
                )
                for r in requests
            ]

    with tempfile.TemporaryDirectory() as tmp:
        best = float("inf")
        for i in range(3):
            start = time.perf_counter()
            outcome = run_grading(
                GradeOptions(tasks=sample / "tasks.jsonl", trajectories=sample / "trajectories.jsonl", out=Path(tmp) / f"r{i}", replayer=replayer)
            )
            best = min(best, time.perf_counter() - start)
        n = outcome.summary.counts.graded
        unresolved = outcome.summary.counts.unresolved
        print(f"graded {n} sample trajectories with replay in {best:.2f} s (best of 3, environments warm): {n / best:,.0f} trajectories/s")
        print(f"left inconclusive without a judge: {unresolved} ({100 * unresolved / n:.1f}%; target <= 20%)")
        run_grading(
            GradeOptions(
                tasks=sample / "tasks.jsonl", trajectories=sample / "trajectories.jsonl", out=Path(tmp) / "judged", replayer=replayer, escalator=CountingPanel()
            )
        )
        per100 = 100 * CountingPanel.requests / n
        print(
            f"panel requests with escalation run to its end: {CountingPanel.requests} = {per100:.1f} per 100 trajectories "
            f"(one judge: {per100:.1f} calls per 100, target <= 30; a 3-judge panel: {3 * per100:.1f}; VAKRA's evaluator: >= 100)"
        )
        summary = json.loads((Path(tmp) / "judged" / "summary.json").read_text())
        print(f"decided by: {summary['decided_by']}")


if __name__ == "__main__":
    main()
