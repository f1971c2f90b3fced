"""Grounding over long multi-turn conversations: CPU per trajectory as the number of turns grows.

Each of K turns calls one tool that returns ~3 KB of JSON (40 records with numbers and text) and
is answered correctly with a number from that output, so grounding searches this turn's and every
earlier turn's outputs. Grounding that re-prepares earlier outputs on every turn grows with K^2;
prepared parts kept across turns (``HaystackParts``) and bisection of their readings keep it near
linear. The tree graded is the one on PYTHONPATH (no path of its own): run it with each, interleaved.

Run: PYTHONPATH=. .venv/bin/python bench/bench_grounding.py [--turns 5 20] [--passes 3]
"""

from __future__ import annotations

import argparse
import json
import time

from judge import Task, Trajectory
from pipelines.config import GradingConfig
from pipelines.grade.case import grade_case

MEDALS = {"name": "get_medals", "parameters": {"type": "object", "properties": {"athlete_id": {"type": "integer"}}, "required": ["athlete_id"]}}


def _output(k: int) -> dict:
    records = [{"event": f"event {j} heat {k}", "place": j, "time": f"{9.5 + j / 100:.2f}s", "note": "wind +0.3 m/s, lane 4"} for j in range(40)]
    return {"athlete": k, "records": records, "total": 1000 + k}


def pairs(turns: int, n: int = 20) -> tuple[Task, list[Trajectory]]:
    task = Task.model_validate(
        {
            "task_id": "t1",
            "tools": [MEDALS],
            "turns": [
                {
                    "turn_id": k,
                    "query": f"total of athlete {k}?",
                    "reference_calls": [{"name": "get_medals", "arguments": {"athlete_id": k}}],
                    "gold_answer": str(1000 + k),
                }
                for k in range(turns)
            ],
        }
    )
    steps = [{"name": "get_medals", "arguments": {"athlete_id": k}, "result": json.dumps(_output(k))} for k in range(turns)]
    trajectories = [
        Trajectory.model_validate(
            {
                "task_id": "t1",
                "trajectory_id": f"x{i}",
                "turns": [{"turn_id": k, "steps": [steps[k]], "final_answer": f"The total is {1000 + k}."} for k in range(turns)],
            }
        )
        for i in range(n)
    ]
    return task, trajectories


def measure(turns: int, passes: int) -> dict:
    task, trajectories = pairs(turns)
    config, best = GradingConfig(), float("inf")
    for _ in range(passes):
        cpu = time.process_time()
        results = [grade_case(task, t, config).result() for t in trajectories]
        best = min(best, time.process_time() - cpu)
    return {"turns": turns, "ms_per_trajectory": round(best / len(trajectories) * 1000, 2), "verdicts": sorted({str(r.verdict) for r in results})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    for k in args.turns:
        print(json.dumps(measure(k, args.passes)))


if __name__ == "__main__":
    main()
