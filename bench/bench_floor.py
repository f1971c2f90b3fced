"""The floor under grading on the headline benchmark: what no grader built on this project's models
can skip, timed per trajectory, beside the budget the one-core target leaves (1 / 2,000 s).

A minimal grader streams the headline's task lines (``bench/conversations.py``, one per
conversation) beside the same conversations already in the native trajectory form (tool outputs
parsed, so no format conversion is left to do), in a fresh process on one core, and per item:
- **read**: ``orjson.loads`` of the task line and of the trajectory line;
- **models**: ``Task.model_validate`` (its tool specs validated once and shared, as the loader
  does; the task stored as the loader stores it) and ``Trajectory.model_validate``;
- **result**: a ``TrajectoryResult`` built (validated, from the fields of a real run's result)
  and its JSON line written.
Nothing else: no check, no duplicate-key, depth or long-integer guard, no conversion from the
OpenAI format, no aggregate, no summary, no report. What the floor leaves of the target's budget is
what all of those may cost together; the real figure is ``bench_grading.py``'s.

The loop runs under the collection policy the run uses (``judge.core._heap``): what exists when it
starts (imports) is set aside, and the tasks stored so far are set aside every ``FREEZE_EVERY``
tasks, as the task loader does. Without it (``--plain-gc``) CPython's full collections walk the
growing set of live tasks again and again, and the read (whose own parse takes ~130 us) measured
~300 us instead of ~160 us (2026-12-03): that part is not a floor, a run does not pay it.

Run: .venv/bin/python bench/bench_floor.py [--n 5000] [--plain-gc]
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_RATE = 2000  # issue 11: trajectories per second on one core


def _prepared(n: int) -> tuple[Path, Path, Path]:
    """The headline task lines, the same conversations in the native trajectory form (tool outputs
    parsed: no format conversion left to do) and a graded run's results."""
    import orjson

    from bench.conversations import generate
    from pipelines.ingest import read_trajectories
    from pipelines.run import GradeOptions, run_grading

    paths = generate(ROOT / "bench" / "out" / f"conv-{n}", n)
    out = ROOT / "bench" / "out" / f"floor-{n}"
    native, results = out / "native.jsonl", out / "run" / "results.jsonl"
    if not native.exists():
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "native.part", "wb") as f:
            for loaded in read_trajectories(paths["trajectories"], "openai").items:
                assert loaded.trajectory is not None, loaded.error
                f.write(orjson.dumps(loaded.trajectory.model_dump(mode="json", exclude_none=True)) + b"\n")
        (out / "native.part").rename(native)
    if not results.exists():
        run_grading(GradeOptions(tasks=paths["episode"], trajectories=paths["trajectories"], out=out / "run", workers=1, overwrite=True))
    return paths["episode"], native, results


def child(n: int, plain_gc: bool = False) -> dict[str, float]:
    import contextlib

    import orjson

    from judge import SourceRef, Task, Trajectory, TrajectoryResult
    from judge.core._heap import freeze_more, frozen_heap
    from pipelines.ingest import TaskCollector
    from pipelines.ingest._native import FREEZE_EVERY

    tasks, native, results = _prepared(n)
    with open(results, "rb") as f:  # results of every kind to build, reused in turn (no parse on the clock)
        shapes = [orjson.loads(line) for line in itertools.islice(f, 256)]
    collector = TaskCollector()
    spent = {"read": 0.0, "models": 0.0, "result": 0.0}
    items = 0
    clock = time.process_time
    started = clock()
    policy = contextlib.nullcontext() if plain_gc else frozen_heap()
    with policy, open(tasks, "rb") as tf, open(native, "rb") as nf:
        for task_line, trajectory_line in zip(tf, nf):
            t0 = clock()
            task_item, trajectory_item = orjson.loads(task_line), orjson.loads(trajectory_line)
            t1 = clock()
            task = Task.model_validate(collector.prepare(task_item))
            collector.add(task, SourceRef(file="tasks", line=items + 1, item=items))  # stored, its tools shared with the next lines
            Trajectory.model_validate(trajectory_item)
            t2 = clock()
            TrajectoryResult.model_validate(shapes[items % len(shapes)]).model_dump_json(exclude_none=True)
            t3 = clock()
            spent["read"] += t1 - t0
            spent["models"] += t2 - t1
            spent["result"] += t3 - t2
            items += 1
            if not plain_gc and items % FREEZE_EVERY == 0:
                freeze_more()  # the stored tasks, set aside as the loader sets them aside
    return {k: v / items for k, v in spent.items()} | {"n": items, "rate": items / (clock() - started)}


def measure(n: int, plain_gc: bool = False) -> dict[str, float]:
    _prepared(n)  # outside the timed child: generation and the graded run
    cmd = [sys.executable, __file__, "--child", str(n), *(["--plain-gc"] if plain_gc else [])]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--child", type=int)
    parser.add_argument("--plain-gc", action="store_true", help="without the run's collection policy (what it saves)")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.plain_gc)))
        return
    f = measure(args.n, args.plain_gc)
    floor = f["read"] + f["models"] + f["result"]
    budget = 1 / TARGET_RATE
    policy = "CPython's default collection, no heap set aside" if args.plain_gc else "the run's collection policy"
    print(f"floor per trajectory, {int(f['n']):,} realistic conversations, one core (CPU time; {policy}):")
    print(f"  read (orjson: the task line, the native trajectory line): {f['read'] * 1e6:6.0f} us")
    print(f"  models (Task, Trajectory validated; the task stored):    {f['models'] * 1e6:6.0f} us")
    print(f"  result (TrajectoryResult built, its line written):       {f['result'] * 1e6:6.0f} us")
    print(f"  floor: {floor * 1e6:.0f} us; the minimal grader ran {f['rate']:,.0f} trajectories/s with no check at all")
    print(
        f"  target {TARGET_RATE:,}/s allows {budget * 1e6:.0f} us: {max(budget - floor, 0) * 1e6:.0f} us left for conversion, guards, checks, summary and report"
        f" (the floor is {floor / budget:.0%} of the budget)"
    )


if __name__ == "__main__":
    main()
