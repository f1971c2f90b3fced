"""Replay cost per call over the sample benchmark (median and p90), cold and with caches.

Run: .venv/bin/python bench/bench_replay.py [--repeat N]. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from judge import Task, Trajectory  # noqa: E402
from pipelines.env import load_environment  # noqa: E402
from pipelines.grade import Replayer  # noqa: E402


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(cache: bool, tasks: dict[str, Task], trajectories: list[Trajectory]) -> tuple[list[float], float, int]:
    replayer = Replayer(cache=cache)
    per_call: list[float] = []
    calls_total = 0
    start_all = time.perf_counter()
    for traj in trajectories:
        task = tasks[traj.task_id]
        start = time.perf_counter()
        replays = replayer.replay(task, traj)
        elapsed = time.perf_counter() - start
        calls = sum(len(r.reference) + len(r.predicted) for r in replays)
        calls_total += calls
        if calls:
            per_call.append(elapsed / calls)
    return per_call, time.perf_counter() - start_all, calls_total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sample = REPO / "data" / "sample"
    tasks = {t.task_id: t for t in (Task.model_validate(json.loads(line)) for line in (sample / "tasks.jsonl").read_text(encoding="utf-8").splitlines())}
    trajectories = [Trajectory.model_validate(json.loads(line)) for line in (sample / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]
    t0 = time.perf_counter()
    for name in sorted({t.environment for t in tasks.values() if t.environment}):
        load_environment(name)
    print(f"load 5 environments (BM25 indexes, schema checks): {(time.perf_counter() - t0) * 1000:.0f} ms")

    def report(label: str, result: tuple[list[float], float, int]) -> None:
        per_call, total, calls = result
        print(
            f"{label}: {len(trajectories)} trajectories, {calls} calls (reference + predicted) in {total:.2f} s; "
            f"per call median {statistics.median(per_call) * 1e6:.0f} us, p90 {_percentile(per_call, 0.9) * 1e6:.0f} us"
        )

    report(f"cache off (best of {args.repeat})", min((run(False, tasks, trajectories) for _ in range(args.repeat)), key=lambda r: r[1]))
    report("cache on, first pass", run(True, tasks, trajectories))  # fills the per-environment read cache
    report(f"cache on, warm (best of {args.repeat})", min((run(True, tasks, trajectories) for _ in range(args.repeat)), key=lambda r: r[1]))


if __name__ == "__main__":
    main()
