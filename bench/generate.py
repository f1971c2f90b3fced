"""Deterministic generator of large native task/trajectory files for the grading benchmark.

Trajectories mix the failure modes the waterfall distinguishes (right calls, wrong tool,
misnamed and wrong arguments, retries after errors, wrong answers, policy violations), so the
benchmark exercises every check rather than the fast path only.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TOOLS = [
    {
        "name": f"get_{entity}_{field}",
        "description": f"Return the {field} of a {entity}.",
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "year": {"type": "integer", "default": 2024}, "unit": {"type": "string"}},
            "required": ["id"],
        },
    }
    for entity in ("athlete", "team", "country", "event", "venue")
    for field in ("medals", "rank", "score", "budget")
]
WRITE = {"name": "record_note", "side_effect": "write", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


def make_task(i: int, rng: random.Random) -> dict:
    n_calls = rng.randint(1, 4)
    calls = []
    for k in range(n_calls):
        tool = rng.choice(TOOLS)
        call = {"id": f"c{k}", "name": tool["name"], "arguments": {"id": rng.randint(1, 999), "unit": rng.choice(["count", "usd", "points"])}}
        if k:
            call["depends_on"] = [f"c{k - 1}"]
        call["expected_output"] = {"value": rng.randint(1, 500)}
        calls.append(call)
    task = {
        "task_id": f"task-{i}",
        "question": f"Question {i}: combine {n_calls} lookups.",
        "tools": TOOLS + [WRITE],
        "reference_calls": calls,
        "gold_answer": str(calls[-1]["expected_output"]["value"]),
        "metadata": {"capability": str(1 + i % 4), "domain": f"domain-{i % 7}", "hop_count": n_calls, "hop_types": ["API"] if i % 3 else ["API", "RAG"]},
    }
    if i % 5 == 0:
        task["policy"] = {"text": "At most 6 calls, read only.", "max_calls": 6, "read_only": True}
    return task


def make_trajectory(task: dict, j: int, rng: random.Random) -> dict:
    mode = rng.choice(["careful", "careful", "careful", "wrong_tool", "misnamed", "wrong_value", "retry", "wrong_answer", "write"])
    steps = []
    for call in task["reference_calls"]:
        args = dict(call["arguments"])
        name = call["name"]
        result = call["expected_output"]
        if mode == "retry":
            steps.append({"name": name, "arguments": args, "result": "Error: upstream timeout", "latency_ms": 120.0})
        if mode == "wrong_tool":
            name = rng.choice([t["name"] for t in TOOLS if t["name"] != name])
            result = {"value": -1}
        elif mode == "misnamed":
            args = {"identifier": args["id"], "unit": args["unit"]}
            result = "Error: unknown argument identifier"
        elif mode == "wrong_value":
            args["id"] += 1
            result = {"value": -2}
        steps.append({"name": name, "arguments": args, "result": result, "latency_ms": 80.0})
    if mode == "write":
        steps.append({"name": "record_note", "arguments": {"text": "done"}, "result": {"ok": True}})
    answer = task["gold_answer"] if mode not in ("wrong_answer", "wrong_tool") else str(int(task["gold_answer"]) + 1)
    return {
        "task_id": task["task_id"],
        "trajectory_id": f"{task['task_id']}/{j}",
        "agent": f"agent-{j % 3}",
        "steps": steps,
        "final_answer": f"The answer is {answer}.",
    }


def generate(out: Path, n_trajectories: int, n_tasks: int = 1000, seed: int = 0) -> tuple[Path, Path]:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    tasks = [make_task(i, rng) for i in range(n_tasks)]
    tasks_path, traj_path = out / "tasks.jsonl", out / "trajectories.jsonl"
    with open(tasks_path, "w") as fh:
        for t in tasks:
            fh.write(json.dumps(t) + "\n")
    with open(traj_path, "w") as fh:
        for j in range(n_trajectories):
            fh.write(json.dumps(make_trajectory(tasks[j % n_tasks], j // n_tasks, rng)) + "\n")
    return tasks_path, traj_path
