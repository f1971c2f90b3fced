"""A first trajectory: ``judge grade`` on a one-line file, wall time, this tree against another commit's.

Issue 27's second target: <= 0.35 s wall for the whole command (start-up, reading, grading,
results, summary, report), with nothing importing scikit-learn, scipy or pandas that the run does
not need. Each run is a fresh process; runs alternate between the trees (A B A B ...) and the
median of each is printed (wall, and CPU: user + sys of the child), beside ``python -c pass`` and
the floor of what every run imports (python + pydantic + typer + rich + the project's core models),
and the heavy libraries each tree's run imported.

Bytecode: the children run without ``PYTHONDONTWRITEBYTECODE`` (this sandbox sets it, so every
process would recompile ~135 project modules, ~0.25 s), after one unmeasured warm-up run per tree
that writes the ``.pyc`` files, as a user's installed wheel has them.

Run: .venv/bin/python bench/bench_first.py [--runs 7] [--baseline REF]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_S = 0.35
HEAVY = ("numpy", "scipy", "pandas", "sklearn", "pyarrow", "openai", "instructor")
# the tree's CLI, run from the tree (its packages come first on sys.path); prints what it imported
_CLI = (
    "import sys\nfrom pipelines.cli import main\nsys.argv[0] = 'judge'\n"
    "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
    "print('HEAVY=' + ','.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


# children write and use .pyc files, as an installed wheel does (see the module docstring)
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# what any `judge grade` imports before it reads a line: the floor this bench cannot go under
_FLOOR = "import pydantic, typer, rich.console\nimport judge.core"


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_line_inputs() -> tuple[Path, Path]:
    from bench.conversations import generate

    paths = generate(ROOT / "bench" / "out" / "conv-1", 1)
    return paths["episode"], paths["trajectories"]


def first_trajectory(tree: Path, tasks: Path, trajectories: Path, out: Path) -> tuple[float, float, list[str]]:
    """(wall seconds, CPU seconds, heavy libraries imported) of one ``judge grade`` with ``tree``'s code."""
    args = ["grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--out", str(out), "--overwrite"]
    cpu = _child_cpu()
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CLI.format(heavy=HEAVY), *args], capture_output=True, text=True, cwd=tree, env=CHILD_ENV)
    wall = time.perf_counter() - start
    cpu = _child_cpu() - cpu
    if proc.returncode not in (0, 1):  # 1: the trajectory failed its checks
        raise RuntimeError(f"judge grade exited with {proc.returncode}: {proc.stderr[-2000:]}")
    line = next((x for x in proc.stderr.splitlines() if x.startswith("HEAVY=")), "HEAVY=")
    return wall, cpu, [m for m in line[len("HEAVY=") :].split(",") if m]


def timed(code: str, cwd: Path = ROOT) -> tuple[float, float]:
    """(wall, CPU) seconds of ``python -c code``."""
    cpu = _child_cpu()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=cwd, env=CHILD_ENV)
    return time.perf_counter() - start, _child_cpu() - cpu


def compare(runs: int = 7, baseline: str | None = None) -> dict:
    from bench.bench_cpu import baseline_tree

    tasks, trajectories = one_line_inputs()
    trees = {"this tree": ROOT}
    if baseline is not None:
        trees = {"baseline": baseline_tree(baseline), **trees}
    walls: dict[str, list[float]] = {name: [] for name in trees}
    cpus: dict[str, list[float]] = {name: [] for name in trees}
    heavy: dict[str, list[str]] = {}
    python: list[float] = []
    floor: list[tuple[float, float]] = []
    outs = {name: ROOT / "bench" / "out" / f"first-{name.replace(' ', '-')}" for name in trees}
    for name, tree in trees.items():  # warm-up: writes each tree's .pyc files, not measured
        first_trajectory(tree, tasks, trajectories, outs[name])
    for _ in range(runs):
        python.append(timed("pass")[0])
        floor.append(timed(_FLOOR))
        for name, tree in trees.items():
            wall, cpu, imported = first_trajectory(tree, tasks, trajectories, outs[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
            heavy[name] = imported
    return {
        "runs": runs,
        "median_s": {k: statistics.median(v) for k, v in walls.items()},
        "cpu_s": {k: statistics.median(v) for k, v in cpus.items()},
        "heavy": heavy,
        "python_s": statistics.median(python),
        "floor_s": statistics.median(w for w, _ in floor),
        "floor_cpu_s": statistics.median(c for _, c in floor),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", default=None, help="a git ref to compare with")
    args = parser.parse_args()
    r = compare(args.runs, args.baseline)
    print(f"load average {os.getloadavg()[0]:.2f}; children run with .pyc files (PYTHONDONTWRITEBYTECODE unset, one warm-up run per tree)")
    print(
        f"python -c pass: {r['python_s']:.3f} s; floor (python + pydantic + typer + rich + judge.core imported): {r['floor_s']:.3f} s wall, {r['floor_cpu_s']:.3f} s CPU"
    )
    for name, wall in r["median_s"].items():
        print(
            f"{name}: judge grade on one trajectory {wall:.3f} s wall, {r['cpu_s'][name]:.3f} s CPU, median of {r['runs']} (target <= {TARGET_S} s wall); "
            f"heavy imports: {', '.join(r['heavy'][name]) or 'none'}"
        )


if __name__ == "__main__":
    main()
