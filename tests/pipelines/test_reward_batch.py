"""In-memory grading (``grade_trajectory`` / ``grade_trajectories``) gives the CLI's results:
on generated realistic conversations every result equals its ``judge grade`` line, ``source``
aside; the batch form equals the single form pair by pair, shared tasks and bad items included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.conversations import conversations
from pipelines import grade_trajectories, grade_trajectory
from pipelines.run import GradeOptions, run_grading

N = 24


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[list[dict], list[dict], Path]:
    out = tmp_path_factory.mktemp("reward")
    convs = list(conversations(N, seed=3))
    tasks = [c.task_episode for c in convs]
    trajectories = [c.trajectory for c in convs]
    (out / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (out / "trajectories.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trajectories))
    run_grading(GradeOptions(tasks=out / "tasks.jsonl", trajectories=out / "trajectories.jsonl", out=out / "run", overwrite=True))
    return tasks, trajectories, out / "run" / "results.jsonl"


def _line(result) -> dict:
    out = json.loads(result.model_dump_json(exclude_none=True))
    out.pop("source", None)
    return out


def test_in_memory_results_are_the_cli_lines(generated):
    tasks, trajectories, results = generated
    cli = [json.loads(line) for line in results.read_text().splitlines()]
    for line in cli:
        line.pop("source", None)
    batch = grade_trajectories(zip(tasks, trajectories, strict=True), fmt="openai")
    assert [_line(r) for r in batch] == cli
    assert len({r["verdict"] for r in cli}) > 1  # the generated mix passes and fails
    single = [grade_trajectory(t, tr, fmt="openai") for t, tr in zip(tasks, trajectories, strict=True)]
    assert [_line(r) for r in single] == cli


def test_the_batch_reads_a_shared_task_once_and_keeps_bad_items_apart(generated):
    tasks, trajectories, _ = generated
    bad_task = {**tasks[0], "reference_calls": "not a list"}
    bad_trajectory = {"task_id": tasks[1]["task_id"], "messages": "not a list"}
    pairs = [
        (tasks[0], trajectories[0]),
        (dict(tasks[0]), trajectories[0]),
        (bad_task, trajectories[0]),
        (tasks[1], bad_trajectory),
        (tasks[0], trajectories[0]),
    ]
    batch = grade_trajectories(pairs, fmt="openai")
    assert [_line(r) for r in batch] == [_line(grade_trajectory(t, tr, fmt="openai")) for t, tr in pairs]
    assert batch[0] == batch[1] == batch[4] and batch[0] is not batch[4]
    assert batch[2].verdict == "error" and batch[2].error.field.startswith("task.")
    assert batch[3].verdict == "error" and batch[3].error.field == "messages"
    assert batch[0].turns[0].checks is not batch[4].turns[0].checks  # nothing shared between results


def test_a_batch_sets_the_callers_heap_aside_and_hands_it_back(generated):
    """Full collections during a batch would walk the caller's whole heap (its rollouts, its
    model state): it is frozen for the batch, and unfrozen after (``judge.core._heap``)."""
    import gc

    tasks, trajectories, _ = generated
    assert gc.get_freeze_count() == 0
    seen: list[int] = []

    def pairs():
        for pair in zip(tasks, trajectories, strict=True):
            seen.append(gc.get_freeze_count())
            yield pair

    batch = grade_trajectories(pairs(), fmt="openai")
    assert len(batch) == len(tasks) and min(seen) > 0
    assert gc.get_freeze_count() == 0
