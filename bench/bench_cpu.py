"""CPU per realistic conversation, this tree against another commit's, in interleaved rounds.

The figure of issue 27's first target: ``judge grade`` on the realistic conversations
(``bench/conversations.py``, episode tasks: a task line per conversation), one process pinned to one
core, and its CPU time (user + system, of the process and of any child it starts, such as the
failure-mode clustering, start-up and imports included) divided by the conversations. Rounds
alternate between the trees (A B A B ...), so a machine that gets busier or quieter meanwhile
weighs on both alike; the median of each side is reported, with every round.

``--baseline REF``: the other tree is ``git archive REF`` unpacked under ``bench/out/base-<sha>``
(made once; outputs of both are compared byte for byte, the report's one timestamp aside).

``--tasks turns``: the same conversations against per-turn tasks (a gold answer per user turn:
the answer and grounding checks run on every turn), the shape of a VAKRA-style benchmark; the
target's figure is the episode one.

Target (issue 27): <= 50% of the baseline's CPU per conversation, every stage still done.
Run: .venv/bin/python bench/bench_cpu.py [--n 4000] [--rounds 3] [--baseline main] [--tasks episode|turns]
"""

from __future__ import annotations

import argparse
import filecmp
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 0.5
COMPARED = ("results.jsonl", "summary.json", "report.md")


def baseline_tree(ref: str) -> Path:
    """``ref``'s files, unpacked once under ``bench/out/base-<sha>``."""
    sha = subprocess.run(["git", "rev-parse", ref], capture_output=True, text=True, check=True, cwd=ROOT).stdout.strip()
    tree = ROOT / "bench" / "out" / f"base-{sha[:12]}"
    if not (tree / ".complete").exists():
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", sha], capture_output=True, check=True, cwd=ROOT).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        (tree / ".complete").write_text(sha)
    return tree


def cpu_of(tree: Path, tasks: Path, trajectories: Path, out: Path, workers: int = 1, cores: str | None = "0") -> dict[str, float]:
    """One ``judge grade`` with ``tree``'s code, in a fresh process: its CPU (and its children's) and wall."""
    import time

    from bench import compiled

    cmd = [sys.executable, str(compiled(tree) / "bench" / "bench_grading.py"), "--child", str(tasks), str(trajectories), str(out), str(workers)]
    if cores is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", cores, *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=tree)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": cpu, "wall_s": wall}


def same_outputs(a: Path, b: Path) -> bool:
    return not differing(a, b)


def differing(a: Path, b: Path) -> list[str]:
    """The compared files whose bytes differ between the two output folders (so a bench that says
    "not identical" says where: a baseline older than a deliberate output change differs there)."""
    return [name for name in COMPARED if not filecmp.cmp(a / name, b / name, shallow=False)]


def compare(n: int = 4000, rounds: int = 3, baseline: str = "main", tasks: str = "episode") -> dict:
    from bench.conversations import generate

    paths = generate(ROOT / "bench" / "out" / f"conv-{n}", n)
    trees = {"baseline": baseline_tree(baseline), "this tree": ROOT}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    outs = {name: ROOT / "bench" / "out" / f"cpu-{name.replace(' ', '-')}-{tasks}-{n}" for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            runs[name].append(cpu_of(tree, paths[tasks], paths["trajectories"], outs[name]))
    med = {name: statistics.median(r["cpu_s"] for r in rs) for name, rs in runs.items()}
    return {
        "n": n,
        "tasks": tasks,
        "baseline": baseline,
        "rounds": runs,
        "cpu_per_conversation_ms": {name: m / n * 1e3 for name, m in med.items()},
        "ratio": med["this tree"] / med["baseline"],
        "identical": same_outputs(outs["baseline"], outs["this tree"]),
        "differing": differing(outs["baseline"], outs["this tree"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default="main", help="the commit to compare with (a git ref)")
    parser.add_argument("--tasks", choices=("episode", "turns"), default="episode", help="a task per conversation (the target's figure) or per user turn")
    args = parser.parse_args()
    r = compare(args.n, args.rounds, args.baseline, args.tasks)
    for name, per in r["cpu_per_conversation_ms"].items():
        rounds = ", ".join(f"{x['cpu_s']:.2f}" for x in r["rounds"][name])
        print(f"{name}: {per:.3f} ms CPU per conversation (median of {args.rounds}; rounds, CPU s: {rounds})")
    print(
        f"ratio this tree / {args.baseline}: {r['ratio']:.2f} (target <= {TARGET_RATIO}); outputs byte-identical: {r['identical']}"
        + (f" (differ: {', '.join(r['differing'])})" if r["differing"] else "")
    )


if __name__ == "__main__":
    main()
