"""In-process grading for reward loops against the CLI, on the same realistic conversations.

Issue 27's third target: ``pipelines.grade_trajectories`` (the batch form of
``grade_trajectory``: no file read or written, no output directory) sustains >= 3x the CLI's
per-trajectory throughput. Both sides run in a fresh process pinned to one core and are measured
in CPU time: the CLI as ``bench/bench_cpu.py`` measures it (``judge grade`` of the whole file:
start-up, reading, grading, results, summary, report); the reward side grades the conversations,
already parsed into dicts as a training loop holds them, in batches of ``--batch``, once with
every conversation's own task (the same items as the CLI) and once as GRPO groups (each task
shared by ``--group`` rollouts: the first conversations of each task repeated, as a group's
completions would be).

Run: .venv/bin/python bench/bench_reward.py [--n 4000] [--batch 256] [--group 8]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 3.0


def child(tasks_path: str, trajectories_path: str, batch: int, group: int) -> None:
    import time

    import orjson

    from pipelines import grade_trajectories

    with open(tasks_path, "rb") as fh:
        tasks = [orjson.loads(line) for line in fh]
    with open(trajectories_path, "rb") as fh:
        trajectories = [orjson.loads(line) for line in fh]
    n = len(trajectories)
    out = {}
    for name, pairs in (
        ("own_tasks", list(zip(tasks, trajectories, strict=True))),
        ("groups", [(tasks[i // group], trajectories[i // group]) for i in range(n)]),
    ):
        start = time.process_time()
        verdicts = []
        for at in range(0, n, batch):
            verdicts += [r.verdict for r in grade_trajectories(pairs[at : at + batch], fmt="openai")]
        out[name] = {"cpu_s": time.process_time() - start, "n": len(verdicts), "passed": verdicts.count("pass")}
    print(json.dumps(out))


def reward_cpu(tasks: Path, trajectories: Path, batch: int, group: int, cores: str | None = "0") -> dict:
    from bench import compiled

    compiled(ROOT)
    cmd = [sys.executable, __file__, "--child", str(tasks), str(trajectories), str(batch), str(group)]
    if cores is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", cores, *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(n: int = 4000, batch: int = 256, group: int = 8, rounds: int = 1) -> dict:
    from bench.bench_cpu import cpu_of
    from bench.conversations import generate

    paths = generate(ROOT / "bench" / "out" / f"conv-{n}", n)
    cli, reward = [], []
    for _ in range(rounds):  # interleaved
        cli.append(cpu_of(ROOT, paths["episode"], paths["trajectories"], ROOT / "bench" / "out" / f"reward-cli-{n}")["cpu_s"])
        reward.append(reward_cpu(paths["episode"], paths["trajectories"], batch, group))
    cli_s = sorted(cli)[len(cli) // 2]
    own = sorted(r["own_tasks"]["cpu_s"] for r in reward)[len(reward) // 2]
    grouped = sorted(r["groups"]["cpu_s"] for r in reward)[len(reward) // 2]
    return {
        "n": n,
        "cli_ms": cli_s / n * 1e3,
        "reward_ms": own / n * 1e3,
        "reward_group_ms": grouped / n * 1e3,
        "ratio": cli_s / own,
        "ratio_groups": cli_s / grouped,
        "group": group,
        "batch": batch,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--child", nargs=4)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]), int(args.child[3]))
        return
    r = compare(args.n, args.batch, args.group, args.rounds)
    print(f"{r['n']:,} realistic conversations, CPU per trajectory, one core:")
    print(f"  judge grade (the whole run):           {r['cli_ms']:.3f} ms")
    print(f"  grade_trajectories, own tasks:          {r['reward_ms']:.3f} ms = {r['ratio']:.2f}x the CLI's throughput (target >= {TARGET_RATIO}x)")
    print(f"  grade_trajectories, groups of {r['group']}:        {r['reward_group_ms']:.3f} ms = {r['ratio_groups']:.2f}x")


if __name__ == "__main__":
    main()
