"""Deterministic grading throughput and peak memory: the headline benchmark.

Realistic customer-service conversations (``bench/conversations.py``: OpenAI chat format, several
user messages, KB tool outputs, 14-18 tools per task, a task line per conversation), graded as
one episode against a one-goal task (``--variant episode``, the default) or turn by turn
(``--variant turns``). ``--synthetic`` runs the earlier generated benchmark (native format, 1,000
tasks shared by all trajectories) instead.

The run is a fresh process pinned to one core (``taskset -c 0`` where available), so throughput
and RSS are the grader's alone; everything a user waits for is timed: loading tasks, reading,
grading, results, summary and the full report.

Targets (issue 11): >= 2,000 trajectories/s on one core; peak RSS <= 300 MB at 100k.
Run: .venv/bin/python bench/bench_grading.py [--n 100000] [--variant episode|turns] [--synthetic]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_RATE, TARGET_RSS_MB = 2000, 300


def _own_peak_mb() -> float:
    """This process's peak RSS since it started its program: ``VmHWM`` (the peak of its own memory
    map, new at exec). ``ru_maxrss`` also keeps the peak of the process it was forked from (Linux
    carries it across exec), so a bench started by a large parent (``run_all.py`` after its
    in-process benches: 773 MB) read the parent's size, not the grader's (251 MB)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(tasks: str, trajectories: str, out: str, workers: int) -> None:
    from pipelines.run import GradeOptions, run_grading

    start, cpu = time.perf_counter(), time.process_time()
    outcome = run_grading(GradeOptions(tasks=Path(tasks), trajectories=Path(trajectories), out=Path(out), workers=workers, overwrite=True))
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = _own_peak_mb()
    peak_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "elapsed_s": elapsed,
                "cpu_s": cpu,
                "peak_rss_mb": peak,
                "peak_child_rss_mb": peak_children,
                "counts": outcome.summary.counts.model_dump(by_alias=True),
            }
        )
    )


def inputs(n: int, variant: str, synthetic: bool) -> tuple[Path, Path]:
    if synthetic:
        from bench.generate import generate

        return generate(ROOT / "bench" / "out" / f"grading-{n}", n)
    from bench.conversations import generate as conversations

    paths = conversations(ROOT / "bench" / "out" / f"conv-{n}", n)
    return paths[variant], paths["trajectories"]


def measure(tasks: Path, trajectories: Path, out: Path, workers: int = 1, cores: str | None = "0") -> dict:
    """Grade in a fresh process (pinned to ``cores`` when taskset exists); its stats."""
    from bench import compiled

    compiled(ROOT)
    cmd = [sys.executable, __file__, "--child", str(tasks), str(trajectories), str(out), str(workers)]
    if cores is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", cores, *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def headline(n: int = 100_000, variant: str = "episode", synthetic: bool = False) -> dict:
    tasks, trajectories = inputs(n, variant, synthetic)
    stats = measure(tasks, trajectories, ROOT / "bench" / "out" / f"run-{variant}-{n}")
    counts = stats["counts"]
    stats["rate"] = counts["trajectories"] / stats["elapsed_s"]
    stats["rate_cpu"] = counts["trajectories"] / stats["cpu_s"]
    stats["n"] = counts["trajectories"]
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--variant", choices=("episode", "turns"), default="episode")
    parser.add_argument("--synthetic", action="store_true", help="the earlier generated benchmark (native format, shared tasks)")
    parser.add_argument("--child", nargs=4)
    args = parser.parse_args()
    if args.child:
        child(*args.child[:3], int(args.child[3]))
        return
    stats = headline(args.n, args.variant, args.synthetic)
    what = "generated native" if args.synthetic else f"realistic conversations ({args.variant})"
    print(f"graded {stats['n']:,} {what} in {stats['elapsed_s']:.1f} s on one core ({stats['cpu_s']:.1f} s of CPU)")
    print(
        f"throughput: {stats['rate']:,.0f} trajectories/s (target >= {TARGET_RATE:,}; ratio {stats['rate'] / TARGET_RATE:.2f}x); per CPU second: {stats['rate_cpu']:,.0f}"
    )
    print(f"peak RSS: {stats['peak_rss_mb']:.0f} MB (target <= {TARGET_RSS_MB} MB; ratio {stats['peak_rss_mb'] / TARGET_RSS_MB:.2f}x)")
    print(f"verdicts: {stats['counts']}")


if __name__ == "__main__":
    main()
