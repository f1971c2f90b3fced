"""Keeping tasks as they are (a run below ``TaskStore.PACK_FROM`` tasks) and packing every one
(pickle + zlib, what a large run does) grade generated realistic conversations to the same bytes."""

from __future__ import annotations

import json

from bench.conversations import conversations
from pipelines.ingest._store import TaskStore
from pipelines.run import GradeOptions, run_grading

OUTPUTS = ("results.jsonl", "summary.json", "report.md")


def test_packed_and_unpacked_tasks_grade_to_the_same_bytes(tmp_path, monkeypatch):
    convs = list(conversations(30, seed=11))
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(c.task_episode) + "\n" for c in convs))
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(c.trajectory) + "\n" for c in convs))

    def grade(out: str) -> None:
        run_grading(GradeOptions(tasks=tmp_path / "tasks.jsonl", trajectories=tmp_path / "trajectories.jsonl", out=tmp_path / out, overwrite=True))

    unpacked = []
    original = TaskStore.unpack

    def counting(self, packed):
        unpacked.append(1)
        return original(self, packed)

    monkeypatch.setattr(TaskStore, "unpack", counting)
    grade("kept")
    assert not unpacked  # 30 tasks: none packed
    monkeypatch.setattr(TaskStore, "PACK_FROM", 0)  # every task packed as it is stored, as past PACK_FROM
    monkeypatch.setattr(TaskStore, "LIVE", 1)  # and unpacked again when its trajectories come
    grade("packed")
    assert len(unpacked) >= len(convs) - 1  # all but the live one unpacked for their trajectories
    for name in OUTPUTS:
        assert (tmp_path / "kept" / name).read_bytes() == (tmp_path / "packed" / name).read_bytes(), name
