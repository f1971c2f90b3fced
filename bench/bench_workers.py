"""Every core: ``--workers 1`` vs ``--workers N`` on the realistic conversations, same bytes out.

Each run is a fresh process using every core of the machine (no pinning); the outputs of the
N-worker run are compared byte for byte with the one-worker run (results.jsonl, summary.json,
report.md), and the speedup is printed.

Target (issue 11): >= 1.7x on 2 cores at 100k trajectories.
Run: .venv/bin/python bench/bench_workers.py [--n 100000] [--workers N] [--variant episode|turns]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_grading import inputs, measure  # noqa: E402
from pipelines.run import default_workers  # noqa: E402

TARGET_SPEEDUP = 1.7
OUTPUTS = ("results.jsonl", "summary.json", "report.md")


def compare(n: int = 100_000, workers: int | None = None, variant: str = "episode") -> dict:
    workers = workers or default_workers()
    tasks, trajectories = inputs(n, variant, synthetic=False)
    outs = {w: ROOT / "bench" / "out" / f"workers-{w}-{variant}-{n}" for w in (1, workers)}
    stats = {w: measure(tasks, trajectories, outs[w], workers=w, cores=None) for w in (1, workers)}
    same = all((outs[1] / name).read_bytes() == (outs[workers] / name).read_bytes() for name in OUTPUTS)
    one, many = stats[1]["elapsed_s"], stats[workers]["elapsed_s"]
    return {"n": n, "workers": workers, "one_s": one, "many_s": many, "speedup": one / many, "identical": same, "stats": stats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--variant", choices=("episode", "turns"), default="episode")
    args = parser.parse_args()
    r = compare(args.n, args.workers, args.variant)
    print(f"{r['n']:,} realistic conversations: 1 worker {r['one_s']:.1f} s, {r['workers']} workers {r['many_s']:.1f} s")
    print(f"speedup {r['speedup']:.2f}x (target >= {TARGET_SPEEDUP}x on 2 cores); outputs byte-identical: {r['identical']}")
    peak = r["stats"][r["workers"]]
    print(f"peak RSS with {r['workers']} workers: main {peak['peak_rss_mb']:.0f} MB, largest worker {peak['peak_child_rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()
