"""Deterministic grading throughput and peak memory on a generated file of 100k trajectories.

Targets (issue 2): >= 2,000 trajectories/s on one core; peak RSS <= 300 MB at 100k (streaming).
Run: .venv/bin/python bench/bench_grading.py [--n 100000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def child(tasks: str, trajectories: str, out: str) -> None:
    from pipelines.grade_run import GradeOptions, run_grading

    start = time.perf_counter()
    outcome = run_grading(GradeOptions(tasks=Path(tasks), trajectories=Path(trajectories), out=Path(out)))
    elapsed = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"elapsed_s": elapsed, "peak_rss_mb": peak_mb, "graded": outcome.summary["counts"]["graded"], "counts": outcome.summary["counts"]}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--child", nargs=3)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from bench.generate import generate

    work = ROOT / "bench" / "out" / f"grading-{args.n}"
    tasks, trajectories = generate(work, args.n)
    # a fresh process, pinned to one core, so RSS and throughput are the grader's alone
    cmd = ["taskset", "-c", "0", sys.executable, __file__, "--child", str(tasks), str(trajectories), str(work / "run")]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    rate = stats["graded"] / stats["elapsed_s"]
    print(f"graded {stats['graded']} trajectories in {stats['elapsed_s']:.1f} s on one core")
    print(f"throughput: {rate:,.0f} trajectories/s (target >= 2,000; ratio {rate / 2000:.2f}x)")
    print(f"peak RSS: {stats['peak_rss_mb']:.0f} MB (target <= 300 MB; ratio {stats['peak_rss_mb'] / 300:.2f}x)")
    print(f"verdicts: {stats['counts']}")


if __name__ == "__main__":
    main()
