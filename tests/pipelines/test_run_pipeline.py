"""Shards, workers and Ray write what one reader of the whole input writes, byte for byte.

The reference is a run whose single shard is the whole file (one reader from the first byte);
every other run cuts the input into shards of a few lines, so that each rule the merge checks
(an item spanning a cut, item indices, ids repeated across shards, a line too long to keep) is
crossed many times.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.conversations import generate as generate_conversations
from bench.generate import generate
from pipelines.ingest import Limits, UsageError
from pipelines.ingest._reader import read_items
from pipelines.run import GradeOptions, InputChanged, LineShards, run_grading
from pipelines.run.stream import ShardStream

OUTPUTS = ("results.jsonl", "summary.json", "report.md")


def _run(tasks: Path, trajectories: Path, out: Path, **options) -> dict[str, bytes]:
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, **options))
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def _assert_same(a: dict[str, bytes], b: dict[str, bytes]) -> None:
    for name in OUTPUTS:
        assert a[name] == b[name], f"{name} differs"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, Path]:
    return generate(tmp_path_factory.mktemp("gen"), 240, n_tasks=40, seed=5)


def test_an_input_of_one_shard_is_graded_in_this_process(generated, tmp_path):
    """A pool of workers cannot share one shard: such an input is graded here (no pool to start),
    the same bytes; one more line than a shard holds and the workers grade it."""
    import json

    from pipelines.run.merge import one_shard

    tasks, trajectories = generated
    lines = trajectories.read_bytes().count(b"\n")
    assert one_shard(trajectories, lines + 1, 1 << 30) and not one_shard(trajectories, lines, 1 << 30)
    assert not one_shard(trajectories, lines + 1, trajectories.stat().st_size - 1)
    here = _run(tasks, trajectories, tmp_path / "here", shard_lines=lines + 1, workers=2)
    pool = _run(tasks, trajectories, tmp_path / "pool", shard_lines=lines, workers=2)
    _assert_same(here, pool)
    grading = {name: json.loads((tmp_path / name / "manifest.json").read_text())["grading"] for name in ("here", "pool")}
    assert (grading["here"]["executor"], grading["here"]["workers"]) == ("in-process", 1)
    assert (grading["pool"]["executor"], grading["pool"]["workers"]) == ("processes", 2)


def test_workers_and_shard_sizes_do_not_change_a_byte(generated, tmp_path):
    tasks, trajectories = generated
    reference = _run(tasks, trajectories, tmp_path / "one", shard_lines=10**6)
    _assert_same(reference, _run(tasks, trajectories, tmp_path / "cut", shard_lines=7))
    _assert_same(reference, _run(tasks, trajectories, tmp_path / "two", shard_lines=13, workers=2))


def test_realistic_conversations_with_workers(tmp_path):
    paths = generate_conversations(tmp_path / "conv", 60, seed=2)
    for variant in ("episode", "turns"):
        reference = _run(paths[variant], paths["trajectories"], tmp_path / f"{variant}-1", shard_lines=10**6)
        _assert_same(reference, _run(paths[variant], paths["trajectories"], tmp_path / f"{variant}-2", shard_lines=9, workers=2))
        rows = [json.loads(line) for line in reference["results.jsonl"].splitlines()]
        assert len(rows) == 60 and {r["verdict"] for r in rows} >= {"pass", "fail"}


def _write(path: Path, chunks: list[bytes]) -> Path:
    path.write_bytes(b"".join(chunks))
    return path


@pytest.fixture()
def tricky(tmp_path) -> tuple[Path, Path]:
    """Every kind of line a cut can meet."""
    task = {"task_id": "t1", "question": "q", "reference_calls": [{"name": "f", "arguments": {"x": 1}}], "gold_answer": "1"}
    tasks = _write(tmp_path / "tasks.jsonl", [json.dumps(task).encode() + b"\n"])

    def traj(i: int, **extra) -> bytes:
        item = {"task_id": "t1", "trajectory_id": f"r{i}", "steps": [{"name": "f", "arguments": {"x": 1}, "result": 1}], "final_answer": "1"} | extra
        return json.dumps(item).encode() + b"\n"

    pretty = json.dumps({"task_id": "t1", "trajectory_id": "pretty", "steps": [], "final_answer": "1"}, indent=2).encode() + b"\n"
    lines = [traj(i) for i in range(5)]
    lines += [b"\n", b"   \n", pretty, traj(5), b"[1, 2]\n", traj(6), b'{"task_id": "t1", "trajectory_id": "half", \n', traj(7)]
    lines += [traj(2), traj(8), b"x" * 300 + b"\n", traj(9), b'{"task_id": "t1", "trajectory_id": "bytes\xff"}\n', traj(10, final_answer="2")]
    lines += [traj(13)[:-1] + b"\r" + traj(14)[:-1] + b"\r\n", b"\r", traj(15)[:-1] + b"\r"]  # old Mac and Windows line ends
    lines += [pretty.replace(b"pretty", b"pretty2"), traj(1), b"\xc2\xa0\n", traj(11), traj(12)[:-1]]  # NBSP-only line; no final newline
    return tasks, _write(tmp_path / "traj.jsonl", lines)


@pytest.mark.parametrize("max_line", [32 << 20, 200])
def test_cuts_through_every_kind_of_line(tricky, tmp_path, max_line):
    tasks, trajectories = tricky
    limits = Limits(max_line_bytes=max_line)  # at 200 the 300-byte line is too large: read through, never held
    reference = _run(tasks, trajectories, tmp_path / "ref", shard_lines=10**6, limits=limits)
    rows = [json.loads(line) for line in reference["results.jsonl"].splitlines()]
    kinds = {r.get("error", {}).get("kind") for r in rows}
    assert {"duplicate_id", "malformed_json", "encoding"} <= kinds
    assert {"r13", "r14", "r15"} <= {r["trajectory_id"] for r in rows}
    if max_line == 200:
        assert "too_large" in kinds
    else:  # a pretty-printed object spans a cut at every shard size below
        # both read, the first one although the reader's look-ahead past its end meets a line
        # that is not UTF-8: lines after an item's end never change how it reads (they once
        # made it malformed, and a shard ending before that line then had to be read again)
        assert {"pretty", "pretty2"} <= {r["trajectory_id"] for r in rows}
    for size in (1, 2, 3, 5):
        _assert_same(reference, _run(tasks, trajectories, tmp_path / f"s{size}", shard_lines=size, limits=limits))
    _assert_same(reference, _run(tasks, trajectories, tmp_path / "w2", shard_lines=2, workers=2, limits=limits))


def test_a_pretty_printed_stream_is_cut_between_its_items(generated, tmp_path, monkeypatch):
    """``jq .`` output, each item over dozens of lines: shards end before a line opening an
    object, and the run guesses item indices by counting those lines, so no shard is read twice.
    (Cut anywhere, every shard ended inside an item and was read again in ever longer joins:
    1,000 pretty-printed conversations took 140 s instead of 3 s.)"""
    from pipelines.run import merge

    tasks, compact = generated
    items = [json.loads(line) for line in compact.read_text().splitlines() if line.strip()]
    pretty = _write(tmp_path / "pretty.jsonl", [json.dumps(item, indent=2).encode() + b"\n" for item in items])
    with open(pretty, "rb") as fh:
        shards = list(LineShards(fh, max_lines=100).shards())  # items of 20-88 lines: each fits in the slack
    assert len(shards) > 20 and all(shard.data.startswith(b"{\n") for shard in shards)
    reference = _run(tasks, pretty, tmp_path / "ref", shard_lines=10**6)
    again: list[int] = []
    grade = merge.grade_shard
    monkeypatch.setattr(merge, "grade_shard", lambda ctx, shard: again.append(shard.raw.index) or grade(ctx, shard))
    _assert_same(reference, _run(tasks, pretty, tmp_path / "one", shard_lines=100))
    assert again == []
    _assert_same(reference, _run(tasks, pretty, tmp_path / "two", shard_lines=100, workers=2))
    assert again == []  # the first line told how to count items, before any shard was read


@pytest.mark.parametrize(
    ("head", "by_objects"),
    [
        (b'{"a": 1}\n{"a": 2}\n', False),
        (b'\n  \n{"a": 1}\n', False),
        (b'\xef\xbb\xbf{"a": 1}\n', False),
        (b'{\n  "a": 1\n}\n', True),
        (b'\xef\xbb\xbf\n{\n  "a": [\n', True),
        (b"not json\n", False),
        (b"", False),
    ],
)
def test_item_counting_starts_as_the_first_line_suggests(tmp_path, head, by_objects):
    from pipelines.run.lines import ItemCounter

    assert ItemCounter.for_file(_write(tmp_path / "in.jsonl", [head])).by_objects is by_objects


def test_a_shard_finding_no_line_that_opens_an_object_ends_at_twice_its_size():
    import io

    shards = list(LineShards(io.BytesIO(b' {"a": 1}\n' * 20), max_lines=3).shards())
    assert [shard.lines for shard in shards] == [6, 6, 6, 2]


def test_a_json_array_and_an_undetected_file_are_read_as_one_stream(tmp_path):
    task = {"task_id": "t1", "question": "q", "gold_answer": "1"}
    tasks = _write(tmp_path / "tasks.jsonl", [json.dumps(task).encode() + b"\n"])
    items = [{"task_id": "t1", "trajectory_id": f"a{i}", "final_answer": "1"} for i in range(6)]
    array = _write(tmp_path / "array.json", [json.dumps(items, indent=1).encode()])
    reference = _run(tasks, array, tmp_path / "a1", shard_lines=10**6)
    _assert_same(reference, _run(tasks, array, tmp_path / "a2", shard_lines=2, workers=2))
    assert len(reference["results.jsonl"].splitlines()) == 6
    odd = _write(tmp_path / "odd.jsonl", [b'{"what": 1}\n'] * 5)
    with pytest.raises(UsageError, match="cannot detect"):  # a usage error before any row, whoever reads it
        _run(tasks, odd, tmp_path / "odd", shard_lines=2, workers=2)
    assert not (tmp_path / "odd").exists()  # and no folder (or run state) is left behind


@pytest.mark.skipif(os.cpu_count() == 1, reason="one core")
def test_escalation_is_the_same_after_workers(server, generated, tmp_path):
    """Cases waiting for a judge come back from the workers and are asked in one place."""
    from tests.servers.loopback import Reply

    server.set_default("judge-a", Reply("correct"))
    paths = generate_conversations(tmp_path / "conv", 40, seed=3)
    runs = {}
    for workers in (1, 2):
        from judge.llm import JudgeSettings, build_panel

        panel = build_panel(JudgeSettings(judges=["openai:judge-a"], cache_path=tmp_path / f"cache{workers}.sqlite3"))
        runs[workers] = _run(paths["turns"], paths["trajectories"], tmp_path / f"j{workers}", escalator=panel, workers=workers, shard_lines=7)
    _assert_same(runs[1], runs[2])
    summary = json.loads(runs[1]["summary.json"])
    assert summary["judges"]["calls"] > 0


# ---- the cutter and the reader agree on lines ---------------------------------------------------

_LINES = st.lists(
    st.sampled_from([b'{"a": 1}\n', b"\n", b"  \n", b"[1]\n", b'{"b":\n', b"2}\n", b"\xff\n", b"\r\n", b'{"c": 3}\r\n', b"x\rz\n", b'"s"\n']),
    max_size=30,
)


@given(_LINES, st.integers(1, 5))
@settings(max_examples=300, deadline=None)
def test_shard_readers_see_the_lines_the_whole_reader_sees(lines, size):
    """Each shard, read from its first line number and byte offset, numbers its lines and
    locates its errors as a reader of the whole file does (the basis of every merge check)."""
    import io

    data = b"".join(lines)
    first = next((x for x in data.split(b"\n") if _decodes(x) and x.strip()), b"")
    if first.lstrip().startswith(b"["):
        return  # read as one JSON array: the run never cuts such a file
    whole = {item.line: item for item in read_items(io.BytesIO(data))}
    cutter = LineShards(io.BytesIO(data), max_lines=size)
    position = 0
    for raw in cutter.shards():
        assert raw.first_byte == position
        position += raw.size
        if raw.data.lstrip(b" \t\r\n")[:1] == b"[" or raw.index == 0:
            continue  # a shard a reader would take for an array is never one the run reads alone
        for item in read_items(ShardStream(raw, "<stream>"), Limits(), (raw.first_line, 0, raw.first_byte)):
            if item.line in whole and item.error is None and whole[item.line].error is None:
                assert item.value == whole[item.line].value
            if item.error is not None and item.error.kind == "encoding":
                assert whole[item.line].error is not None and whole[item.line].error.message == item.error.message
    assert position == len(data)


@given(_LINES, st.integers(1, 5), st.sampled_from([3, 8, 32 << 20]))
@settings(max_examples=200, deadline=None)
def test_a_shard_read_from_its_range_is_the_shard_the_cutter_held(lines, size, max_line):
    """Worker processes read their shard's range of the file themselves (``RawShard.load``): the
    bytes, lines, too-long lines and sha256 are those of the shard a cutter holding the bytes
    made, alone and joined with the next one."""
    import io
    import tempfile

    data = b"".join(lines)
    held = list(LineShards(io.BytesIO(data), max_lines=size, max_line_bytes=max_line).shards())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "in.jsonl"
        path.write_bytes(data)
        with open(path, "rb") as fh:
            cutter = LineShards(fh, max_lines=size, max_line_bytes=max_line)
            cutter.source = str(path)
            ranges = list(cutter.shards())
        assert [(r.data, r.first_line, r.first_byte, r.size, r.lines, r.nonblank) for r in ranges] == [
            (b"", h.first_line, h.first_byte, h.size, h.lines, h.nonblank) for h in held
        ]

        def facts(raw):
            return raw.data, raw.virtual, raw.sha256, raw.first_line, raw.first_byte, raw.lines, raw.size, raw.path

        for i, (h, r) in enumerate(zip(held, ranges, strict=True)):
            assert facts(r.load(max_line)) == facts(h)
            if i + 1 < len(held):
                assert facts(r.join(ranges[i + 1]).load(max_line)) == facts(h.join(held[i + 1]))


def test_a_range_that_changed_after_the_cut_is_refused(tmp_path):
    path = _write(tmp_path / "in.jsonl", [b'{"a": 1}\n'] * 6)
    with open(path, "rb") as fh:
        cutter = LineShards(fh, max_lines=2)
        cutter.source = str(path)
        ranges = list(cutter.shards())
    assert ranges[1].load(100).data == b'{"a": 1}\n' * 2
    path.write_bytes(b'{"a": 10}\n' * 6)  # lines moved: the second range no longer holds two whole lines
    with pytest.raises(InputChanged, match=r"bytes 18-36 no longer hold the lines 3-4"):
        ranges[1].load(100)
    with pytest.raises(InputChanged, match="no longer hold"):
        ranges[1].load(4)  # the same check where lines too long to keep are read through
    path.write_bytes(b"")
    with pytest.raises(InputChanged):
        ranges[2].load(100)


@pytest.mark.skipif(os.cpu_count() == 1, reason="one core")
def test_an_input_written_while_workers_grade_it_stops_the_run(generated, tmp_path, monkeypatch):
    """Workers read their ranges after the run cut (and hashed) the input: a file written under
    the run is an input error, not a report of bytes nobody hashed."""
    from typer.testing import CliRunner

    from pipelines.cli import EXIT_INPUT_ERROR, app
    from pipelines.run.merge import Merger

    tasks, original = generated
    trajectories = _write(tmp_path / "traj.jsonl", [original.read_bytes()])
    merge = Merger._merge

    def appending(self, *args, **kwargs):
        with open(trajectories, "ab") as fh:
            fh.write(b"\n")
        return merge(self, *args, **kwargs)

    monkeypatch.setattr(Merger, "_merge", appending)
    with pytest.raises(InputChanged, match="changed while it was graded"):
        _run(tasks, trajectories, tmp_path / "w2", shard_lines=13, workers=2)
    trajectories.write_bytes(original.read_bytes())

    def removing(self, *args, **kwargs):
        trajectories.unlink(missing_ok=True)
        return merge(self, *args, **kwargs)

    monkeypatch.setattr(Merger, "_merge", removing)
    with pytest.raises(InputChanged, match="changed while it was graded"):
        _run(tasks, trajectories, tmp_path / "gone", shard_lines=13, workers=2)
    monkeypatch.setattr(Merger, "_merge", appending)
    monkeypatch.setattr("pipelines.run.merge.one_shard", lambda *args: False)  # the CLI cuts 1,000-line shards: this input is one, graded in process
    trajectories.write_bytes(original.read_bytes())
    args = ["grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--out", str(tmp_path / "cli"), "--workers", "2"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == EXIT_INPUT_ERROR and "changed while it was graded" in res.output


def _decodes(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# ---- tasks loaded in shards by workers ----------------------------------------------------------


def test_a_tasks_file_of_one_shard_is_read_in_this_process(generated):
    """Forked task readers cannot share one shard either: such a tasks file is read here (the same
    task set, see the test below) and only a larger one starts a pool."""
    from types import SimpleNamespace

    from pipelines.run.inputs import _tasks_in_shards

    tasks, _ = generated
    lines = tasks.read_bytes().count(b"\n")
    opts = SimpleNamespace(workers=2, ray=False, shard_lines=lines + 1, shard_bytes=1 << 30)
    assert not _tasks_in_shards(tasks, "native", opts)  # type: ignore[arg-type]
    assert _tasks_in_shards(tasks, "native", SimpleNamespace(**{**vars(opts), "shard_lines": lines}))  # type: ignore[arg-type]


def test_tasks_loaded_in_shards_are_the_serially_loaded_task_set(tmp_path):
    from pipelines.ingest import load_tasks
    from pipelines.run.task_shards import load_tasks_in_shards

    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}

    def task(i: int, **extra) -> bytes:
        item = {"task_id": f"t{i}", "question": "q", "tools": [tool], "reference_calls": [{"name": "f", "arguments": {"x": i}}], "gold_answer": str(i)}
        return json.dumps(item | extra).encode() + b"\n"

    pretty = json.dumps({"task_id": "pretty", "question": "q", "tools": [tool], "gold_answer": "1"}, indent=2).encode() + b"\n"
    lines = [task(i) for i in range(6)] + [task(2), task(3, gold_answer="other"), b"{bad json\n", b"[1]\n", pretty, task(7, extra_field=1)]
    lines += [b'{"task_id": "t9", "question": 5}\n', task(9), b"\n", task(10), task(11, tools=[tool, tool])]
    path = _write(tmp_path / "tasks.jsonl", lines)
    # the same tasks as a pretty-printed stream (jq .): items of many lines, cut between them
    stream = _write(
        tmp_path / "stream.jsonl",
        [json.dumps(json.loads(line), indent=2).encode() + b"\n" if line[:1] == b"{" and line[1:2] == b'"' else line for line in lines],
    )
    for tasks_file, sizes in ((path, (1, 2, 3)), (stream, (4, 9))):
        serial = load_tasks(tasks_file)
        for size in sizes:
            sharded, sha256 = load_tasks_in_shards(tasks_file, Limits(), workers=2, shard_lines=size)
            assert sha256 == hashlib.sha256(tasks_file.read_bytes()).hexdigest()
            assert list(sharded.tasks) == list(serial.tasks)
            assert all(sharded.tasks[k] == serial.tasks[k] for k in serial.tasks)
            assert (sharded.errors, sharded.warnings, sharded.ambiguous, sharded.invalid) == (serial.errors, serial.warnings, serial.ambiguous, serial.invalid)
            assert {k: sharded.sources[k] for k in sharded.sources} == {k: serial.sources[k] for k in serial.sources}
        assert [e.kind for e in serial.errors] and "t3" in serial.ambiguous and "pretty" in serial.tasks
