"""Trajectories stream: consuming one item reads only the lines it needs, never the whole file."""

from __future__ import annotations

import io
import json

from pipelines.ingest import iter_trajectories

N = 20_000


class CountingLines(io.RawIOBase):
    """A binary stream that produces N JSONL lines on demand and counts how many were handed out."""

    name = "generated.jsonl"

    def __init__(self, n: int):
        self.n = n
        self.produced = 0
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def _line(self, i: int) -> bytes:
        item = {"task_id": f"t{i % 50}", "trajectory_id": f"r{i}", "steps": [{"name": "f", "arguments": {"i": i}, "result": i}], "final_answer": str(i)}
        return json.dumps(item).encode() + b"\n"

    def readinto(self, target) -> int:
        while len(self._buffer) < len(target) and self.produced < self.n:
            self._buffer += self._line(self.produced)
            self.produced += 1
        size = min(len(target), len(self._buffer))
        target[:size] = self._buffer[:size]
        self._buffer = self._buffer[size:]
        return size


def test_iterator_is_lazy():
    stream = CountingLines(N)
    items = iter_trajectories(io.BufferedReader(stream, buffer_size=8192))
    assert stream.produced == 0  # nothing is read before the first item is asked for
    first = next(items)
    assert first.trajectory.trajectory_id == "r0" and first.source.file == "generated.jsonl"
    assert stream.produced < 200  # one buffer's worth of lines, not 20k
    second = next(items)
    assert second.trajectory.trajectory_id == "r1" and stream.produced < 200


def test_whole_generated_file_streams_in_order(tmp_path):
    path = tmp_path / "big.jsonl"
    stream = CountingLines(N)
    path.write_bytes(stream.read())
    count = 0
    for count, loaded in enumerate(iter_trajectories(path), start=1):
        assert loaded.error is None and loaded.source.line == count
    assert count == N


def test_large_pretty_printed_array_keeps_every_start_line(tmp_path):
    """Items of varied size and layout; each start line is known from how the text was built."""
    parts, expected, line = ["["], [], 2
    for i in range(3000):
        item = {"task_id": "t", "trajectory_id": f"r{i}", "steps": [], "final_answer": "x" * (i % 7) * 50}
        text = json.dumps(item, indent=2 if i % 3 else None)
        if i % 5 == 0:
            parts.append("")  # a blank line before the item
            line += 1
        expected.append(line)
        parts.append(text + ("," if i < 2999 else ""))
        line += text.count("\n") + 1
    parts.append("]")
    path = tmp_path / "big.json"
    path.write_text("\n".join(parts) + "\n")
    loaded = list(iter_trajectories(path))
    assert [x.error for x in loaded if x.error] == []
    assert [x.source.line for x in loaded] == expected
    assert [x.trajectory_id for x in loaded] == [f"r{i}" for i in range(3000)]
