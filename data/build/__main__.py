"""Build the sample benchmark: environments, tasks and scripted trajectories (deterministic)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

from data.build.agents import PROFILES, RARE, NotApplicable, ValueIndex, run_profile
from data.build.envs import SEED, write_all
from data.build.tasks import generate
from judge import Task, Trajectory
from pipelines.env import load_environment

ROOT = Path(__file__).resolve().parents[1]
EXTRA_PER_TASK = 3


def _dump(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n")


def main(root: Path = ROOT) -> None:
    domains = write_all(root / "envs")
    envs = {name: load_environment(name, root / "envs") for name in domains}
    facts = {name: d.facts for name, d in domains.items()}
    plans = generate(envs, facts, SEED)
    tasks = [task for _, task in plans]
    for task in tasks:
        Task.model_validate(task)
    values = {name: ValueIndex(env) for name, env in envs.items()}
    usage: Counter[str] = Counter()
    trajectories = []
    rng = random.Random(f"{SEED}:profiles")
    for plan, task in plans:
        env = envs[plan.domain]
        made = [run_profile("careful", env, plan, task, values[plan.domain], facts[plan.domain], f"{task['task_id']}:careful")]
        usage["careful"] += 1
        others = [p for p in PROFILES if p != "careful"]
        rng.shuffle(others)
        # rare premises first (policies, writes, independent calls), then the least used profiles
        others.sort(key=lambda p: (p not in RARE, usage[p]))
        want = EXTRA_PER_TASK + (1 if task.get("policy") or plan.tags.get("write") else 0)
        for profile in others:
            if len(made) > want:
                break
            try:
                made.append(run_profile(profile, env, plan, task, values[plan.domain], facts[plan.domain], f"{task['task_id']}:{profile}"))
                usage[profile] += 1
            except NotApplicable:
                continue
        trajectories.extend(made)
    for row in trajectories:
        Trajectory.model_validate(row)
    _dump(tasks, root / "sample" / "tasks.jsonl")
    _dump(trajectories, root / "sample" / "trajectories.jsonl")
    print(f"{len(tasks)} tasks, {len(trajectories)} trajectories")
    print("capabilities:", dict(sorted(Counter(t["metadata"]["capability"] for t in tasks).items())))
    print("profiles:", dict(sorted(usage.items())))


if __name__ == "__main__":
    main()
