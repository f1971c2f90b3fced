"""Every class of bad input gets an error naming file, line and field; nothing is dropped."""

from __future__ import annotations

import json
import random
import zlib

import pytest

from pipelines.ingest import Limits, check_task, iter_trajectories, load_tasks
from tests.ingest.conftest import FIXTURES

TASK = {"task_id": "t1", "question": "q?", "reference_calls": [{"name": "f", "arguments": {"x": 1}}], "gold_answer": "a"}
TRAJ = {"task_id": "t1", "trajectory_id": "r1", "steps": [{"name": "f", "arguments": {"x": 1}, "result": 1}], "final_answer": "a"}


def test_malformed_json_reports_line_and_column_and_reading_goes_on(write_jsonl):
    broken = '{"task_id": "t1", "trajectory_id": "r2", "steps": [}'
    path = write_jsonl("t.jsonl", [TRAJ, broken, "", dict(TRAJ, trajectory_id="r3")])
    loaded = list(iter_trajectories(path))
    assert [x.source.line for x in loaded] == [1, 2, 4]  # the blank line 3 is skipped
    error = loaded[1].error
    assert (error.kind, error.file, error.line) == ("malformed_json", str(path), 2)
    assert f"column {broken.index('}') + 1}: Expecting value" in error.message
    assert loaded[2].trajectory.trajectory_id == "r3"


def test_truncated_line_is_malformed_not_joined_with_the_next(write_jsonl):
    path = write_jsonl("t.jsonl", ['{"task_id": "t1", "trajectory_id": "r0", "steps": [', TRAJ])
    loaded = list(iter_trajectories(path, fmt="native"))
    assert loaded[0].error.kind == "malformed_json" and loaded[0].source.line == 1
    assert loaded[1].trajectory.trajectory_id == "r1"


def test_missing_field(write_jsonl):
    tasks = load_tasks(write_jsonl("tasks.jsonl", [{"task_id": "t1", "turns": [{"turn_id": "1"}]}]), fmt="native")
    (error,) = tasks.errors
    assert (error.kind, error.line, error.field) == ("invalid_field", 1, "turns[0].query")
    assert "Field required" in error.message


def test_mistyped_field_names_the_full_path(write_jsonl):
    task = {"task_id": "t1", "turns": [{"turn_id": "1", "query": "q", "reference_calls": [{"name": "f"}, {"name": "g", "arguments": "x=1"}]}]}
    tasks = load_tasks(write_jsonl("tasks.jsonl", [task]), fmt="native")
    (error,) = tasks.errors
    assert error.field == "turns[0].reference_calls[1].arguments"
    assert "valid dictionary" in error.message and "'x=1'" in error.message
    assert tasks.invalid["t1"] is error


def test_all_validation_errors_are_summarised(write_jsonl):
    bad = {"task_id": "t1", "turns": [{"query": 1, "reference_calls": "x", "answer_tolerance": -1}]}
    (error,) = load_tasks(write_jsonl("tasks.jsonl", [bad]), fmt="native").errors
    assert error.field == "turns[0].query"
    assert "also turns[0].reference_calls:" in error.message and "turns[0].answer_tolerance:" in error.message


def test_item_that_is_not_an_object(write_jsonl):
    path = write_jsonl("t.jsonl", [TRAJ, '"text"', "42", "[1, 2]"])
    loaded = list(iter_trajectories(path))
    assert loaded[0].trajectory is not None
    assert [(x.error.kind, x.error.field, x.source.line) for x in loaded[1:]] == [
        ("invalid_field", "<root>", 2),
        ("invalid_field", "<root>", 3),
        ("invalid_field", "<root>", 4),
    ]


def test_unknown_and_ambiguous_and_unreadable_tasks(write_jsonl):
    tasks_path = write_jsonl(
        "tasks.jsonl",
        [TASK, dict(TASK, task_id="t2"), dict(TASK, task_id="t2", gold_answer="b"), {"task_id": "t3", "question": 5}],
    )
    tasks = load_tasks(tasks_path)
    assert sorted(tasks.tasks) == ["t1"] and sorted(tasks.ambiguous) == ["t2"] and sorted(tasks.invalid) == ["t3"]
    trajs = write_jsonl("runs.jsonl", [TRAJ, dict(TRAJ, task_id="t2"), dict(TRAJ, task_id="t3"), dict(TRAJ, task_id="t11")])
    checks = [check_task(x, tasks) for x in iter_trajectories(trajs)]
    assert checks[0] is None
    amb, bad, unknown = checks[1:]
    assert (amb.kind, amb.file, amb.line, amb.field) == ("ambiguous_task", str(trajs), 2, "task_id")
    assert f"{tasks_path}:2" in amb.message and f"{tasks_path}:3" in amb.message and "not graded against a guess" in amb.message
    assert bad.kind == "unknown_task" and f"{tasks_path}:4" in bad.message and "could not be read" in bad.message
    assert unknown.kind == "unknown_task" and "'t11'" in unknown.message and "similar ids: t1" in unknown.message


def test_a_task_line_cut_short_is_named_where_its_id_may_be(write_jsonl):
    """A malformed line's id cannot be read: the trajectories of a missing task are told which
    lines could not be read (the id may be on one), not only "no task with id"."""
    cut = json.dumps(dict(TASK, task_id="t2"))[:30]
    tasks_path = write_jsonl("tasks.jsonl", [TASK, cut, "[1]"])
    tasks = load_tasks(tasks_path)
    assert sorted(tasks.tasks) == ["t1"] and tasks.invalid == {} and [e.line for e in tasks.unnamed] == [2, 3]
    (loaded,) = iter_trajectories(write_jsonl("runs.jsonl", [dict(TRAJ, task_id="t2")]))
    unknown = check_task(loaded, tasks)
    assert unknown.kind == "unknown_task" and "no task with id 't2' among 1 tasks" in unknown.message
    assert f"2 task items could not be read ({tasks_path}:2, {tasks_path}:3): the id may be on one of them" in unknown.message
    assert check_task(loaded, load_tasks(write_jsonl("whole.jsonl", [TASK]))).message == "no task with id 't2' among 1 tasks"


def test_duplicate_task_ids(write_jsonl):
    tasks = load_tasks(write_jsonl("tasks.jsonl", [TASK, dict(TASK, task_id="t2"), TASK, dict(TASK, task_id="t2", question="other?")]))
    identical, different = tasks.errors
    assert (identical.kind, identical.line, identical.field) == ("duplicate_id", 3, "task_id")
    assert "tasks.jsonl:1 with identical content; the first definition is kept" in identical.message
    assert (different.kind, different.line) == ("duplicate_id", 4) and "different content" in different.message
    assert "t1" in tasks.tasks and tasks.sources["t1"].line == 1  # identical duplicate: first kept
    assert "t2" not in tasks.tasks and tasks.ambiguous["t2"].kind == "ambiguous_task"


def test_duplicate_trajectory_ids(write_jsonl):
    no_id = {k: v for k, v in TRAJ.items() if k != "trajectory_id"}
    path = write_jsonl("runs.jsonl", [TRAJ, dict(TRAJ, task_id="t2"), TRAJ, no_id, no_id])
    loaded = list(iter_trajectories(path))
    assert [x.error.kind if x.error else None for x in loaded] == [None, None, "duplicate_id", None, None]
    dup = loaded[2]
    assert "already read at line 1" in dup.error.message and (dup.task_id, dup.trajectory_id) == ("t1", "r1")
    assert [x.trajectory_id for x in loaded[3:]] == ["runs:4", "runs:5"]  # deterministic ids differ by line


def test_non_utf8_bytes(write_jsonl):
    path = write_jsonl("runs.jsonl", [TRAJ, b'{"task_id": "t1", "final_answer": "caf\xe9"}', dict(TRAJ, trajectory_id="r3")])
    loaded = list(iter_trajectories(path))
    error = loaded[1].error
    assert (error.kind, error.line) == ("encoding", 2)
    assert "0xe9 at byte 38 of the line" in error.message
    first_line_bytes = len(json.dumps(TRAJ).encode()) + 1
    assert f"file offset {first_line_bytes + 38}" in error.message
    assert loaded[2].trajectory.trajectory_id == "r3"


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(TRAJ).encode() + b"\n")
    (loaded,) = list(iter_trajectories(path))
    assert loaded.trajectory is not None


def test_oversize_line_is_skipped_without_reading_it_whole(write_jsonl):
    big = dict(TRAJ, trajectory_id="big", final_answer="x" * 5000)
    path = write_jsonl("runs.jsonl", [TRAJ, big, dict(TRAJ, trajectory_id="r3")])
    loaded = list(iter_trajectories(path, limits=Limits(max_line_bytes=1000, max_string_bytes=500)))
    error = loaded[1].error
    assert (error.kind, error.line) == ("too_large", 2) and "limit of 1000 bytes" in error.message
    assert loaded[2].trajectory.trajectory_id == "r3" and loaded[2].source.line == 3


def test_oversize_string_names_the_field(write_jsonl):
    big = dict(TRAJ, steps=[{"name": "f", "result": "y" * 600}])
    path = write_jsonl("runs.jsonl", [big])
    (loaded,) = list(iter_trajectories(path, limits=Limits(max_line_bytes=10_000, max_string_bytes=500)))
    assert (loaded.error.kind, loaded.error.field) == ("too_large", "steps[0].result")


def test_json_array_items_report_their_start_line(fixtures):
    loaded = list(iter_trajectories(fixtures / "native_trajectories_array.json"))
    assert [(x.source.line, x.source.item) for x in loaded] == [(2, 0), (10, 1), (12, 2)]
    assert loaded[2].trajectory_id == "native_trajectories_array:12"


def test_json_array_with_a_bad_item_keeps_its_neighbours(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text("[\n" + json.dumps(TRAJ) + ',\n  {"task_id": "t1",\n   "steps": [}\n]\n' + ",\n".join([json.dumps(TRAJ)] * 2) + "\n")
    loaded = list(iter_trajectories(path))
    assert loaded[0].trajectory is not None
    error = loaded[1].error
    assert (error.kind, error.line) == ("malformed_json", 3)
    assert "line 4" in error.message
    # the ']' on line 5 closes the array; the item lines after it are read as JSONL
    kinds = [(x.source.line, x.error.kind if x.error else None) for x in loaded]
    assert kinds == [(2, None), (3, "malformed_json"), (6, "duplicate_id"), (7, "duplicate_id")]  # all read: same id as line 2


def test_json_array_oversize_item(tmp_path):
    path = tmp_path / "runs.json"
    items = [TRAJ, dict(TRAJ, trajectory_id="big", final_answer="z" * 3000)]
    path.write_text("[\n" + ",\n".join(json.dumps(i, indent=1) for i in items) + "\n]\n")
    loaded = list(iter_trajectories(path, limits=Limits(max_line_bytes=2000, max_string_bytes=1000)))
    assert loaded[0].trajectory is not None
    assert loaded[1].error.kind == "too_large"


def test_single_pretty_printed_object(tmp_path):
    path = tmp_path / "one.json"
    path.write_text("\n" + json.dumps(TRAJ, indent=2) + "\n")
    (loaded,) = list(iter_trajectories(path))
    assert loaded.trajectory.trajectory_id == "r1" and loaded.source.line == 2


def test_pretty_printed_objects_in_sequence_keep_their_lines(tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text(json.dumps(TRAJ, indent=2) + "\n" + json.dumps(dict(TRAJ, trajectory_id="r2")) + "\n")
    loaded = list(iter_trajectories(path))
    assert [(x.source.line, x.trajectory_id) for x in loaded] == [(1, "r1"), (len(json.dumps(TRAJ, indent=2).splitlines()) + 1, "r2")]


@pytest.mark.parametrize("after", [b"\xff\xfe not UTF-8\n", b"x" * 400 + b"\n", b'{"unfinished": \n'])
def test_lines_after_a_pretty_printed_object_never_change_how_it_reads(tmp_path, after):
    """The reader looks ahead in growing batches to find where a multi-line value ends; what it
    meets after the end (a line that is not UTF-8, one too long to keep, an unfinished value) is
    the next item's business. (It once made the object malformed, so a reader of a shard ending
    right after the object read it differently from the reader of the whole file.)"""
    pretty = json.dumps(TRAJ, indent=2).encode() + b"\n"
    path = tmp_path / "runs.jsonl"
    path.write_bytes(pretty + after + json.dumps(dict(TRAJ, trajectory_id="r2")).encode() + b"\n")
    loaded = list(iter_trajectories(path, fmt="native", limits=Limits(max_line_bytes=300)))
    assert loaded[0].trajectory is not None and loaded[0].trajectory.trajectory_id == "r1"
    assert loaded[-1].trajectory is not None and loaded[-1].trajectory.trajectory_id == "r2"
    assert loaded[1].error is not None  # the line after it is an item of its own, with its error
    alone = tmp_path / "alone.jsonl"
    alone.write_bytes(pretty)
    assert next(iter(iter_trajectories(alone, fmt="native"))).trajectory == loaded[0].trajectory


def test_duplicate_keys_are_not_silently_overwritten(write_jsonl):
    path = write_jsonl("runs.jsonl", ['{"task_id": "t1", "task_id": "t2", "steps": []}'])
    (loaded,) = list(iter_trajectories(path, fmt="native"))
    assert loaded.error.kind == "malformed_json" and "duplicate key 'task_id'" in loaded.error.message


def test_task_file_errors_are_collected(write_jsonl):
    path = write_jsonl("tasks.jsonl", [TASK, "{nope", b"\xff\xfe", "[1]"])
    tasks = load_tasks(path, fmt="native")
    assert list(tasks.tasks) == ["t1"]
    assert [(e.kind, e.line) for e in tasks.errors] == [("malformed_json", 2), ("encoding", 3), ("invalid_field", 4)]


def test_a_role_of_the_wrong_type_is_an_invalid_field_not_a_crash(write_jsonl):
    """Found by mutating real transcripts: a list or object where the role string belongs."""
    good = {"task_id": "t1", "trajectory_id": "r1", "messages": [{"role": "user", "content": "q?"}, {"role": "assistant", "content": "a"}]}
    odd = {**good, "trajectory_id": "r2", "messages": [{"role": ["user"], "content": "q?"}]}
    path = write_jsonl("chat.jsonl", [odd, {**odd, "trajectory_id": "r3", "messages": [{"role": {"x": 1}}]}, good])
    loaded = list(iter_trajectories(path, fmt="openai"))
    assert [(x.error.kind, x.error.line, x.error.field) for x in loaded[:2]] == [
        ("invalid_field", 1, "messages[0].role"),
        ("invalid_field", 2, "messages[0].role"),
    ]
    assert "unknown role ['user']" in loaded[0].error.message
    assert loaded[2].error is None and loaded[2].trajectory.trajectory_id == "r1"


def test_an_exception_a_reader_did_not_foresee_is_that_items_reader_error(write_jsonl, monkeypatch):
    """The net under every reader: one item of a shape nobody checked for costs one error row naming
    its file and line (and the exception), never the run; deliberate errors pass through as before."""
    from pipelines.ingest import _openai

    real = _openai._add_call

    def brittle(builder, call, path):
        if call.get("id") == "boom":
            raise TypeError("unhashable type: 'list'")
        return real(builder, call, path)

    monkeypatch.setattr(_openai, "_add_call", brittle)
    call = {"id": "boom", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    item = {"task_id": "t1", "trajectory_id": "r1", "messages": [{"role": "user", "content": "q?"}, {"role": "assistant", "tool_calls": [call]}]}
    fine = {**item, "trajectory_id": "r2", "messages": [{"role": "user", "content": "q?"}, {"role": "assistant", "content": "a"}]}
    path = write_jsonl("chat.jsonl", [item, fine])
    loaded = list(iter_trajectories(path, fmt="openai"))
    error = loaded[0].error
    assert (error.kind, error.file, error.line) == ("reader_error", str(path), 1)
    assert "the openai reader failed on this item (TypeError: unhashable type: 'list')" in error.message
    assert (loaded[0].task_id, loaded[0].trajectory_id) == ("t1", "r1")  # the row keeps its ids
    assert loaded[1].error is None


def test_a_task_converter_failing_unforeseen_costs_that_task_only(write_jsonl, monkeypatch):
    from pipelines.ingest import _native

    real = _native._move_top_level

    def brittle(item, known, into):
        if item.get("task_id") == "t-odd":
            raise KeyError("tags")
        return real(item, known, into)

    monkeypatch.setattr(_native, "_move_top_level", brittle)
    path = write_jsonl("tasks.jsonl", [dict(TASK, task_id="t-odd"), TASK])
    taskset = load_tasks(path)
    assert set(taskset.tasks) == {"t1"}
    (error,) = taskset.errors
    assert (error.kind, error.file, error.line) == ("reader_error", str(path), 1)
    assert "the native reader failed on this item (KeyError: 'tags')" in error.message


def _string_paths(value, path=()):
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _string_paths(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _string_paths(child, (*path, i))


def _get(value, path):
    for key in path:
        value = value[key]
    return value


def _replaced(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


@pytest.mark.parametrize("name", ["frameworks", "formats"])
def test_a_list_or_object_for_any_string_is_no_sniff_crash_and_no_reader_error(name):
    """Every string of every line fixture in turn replaced by a list and by an object: no reader's
    sniff raises (detection runs them all on the first line), and the item's own reader reports a
    field error, never a reader_error (the set-membership TypeError, 'unhashable type')."""
    from pipelines.ingest import convert_trajectory
    from pipelines.ingest._registry import sniff_bare, sniff_bundle, sniff_task, sniff_trajectory
    from tests.ingest.conftest import FIXTURES

    for path in sorted((FIXTURES.parent / name).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines()[:3]:
            item = json.loads(line)
            fmt = sniff_trajectory(item) if isinstance(item, dict) else sniff_bare(item)
            for where in _string_paths(item):
                for odd in ([_get(item, where)], {"x": _get(item, where)}):
                    mutated = _replaced(item, where, odd)
                    if isinstance(mutated, dict):
                        sniff_trajectory(mutated)
                        sniff_task(mutated)
                        sniff_bundle(b"{", mutated)
                    else:
                        sniff_bare(mutated)
                    if fmt is not None:
                        error = convert_trajectory(mutated, fmt).error
                        assert error is None or error.kind != "reader_error", (path.name, where, error.message)


# ---- every reader: each JSON value replaced by one of another type ----------------------------

_FRAMEWORKS = FIXTURES.parent / "frameworks"
# (format, fixture): one or more fixtures of every trajectory reader, streaming and whole-file
_TRAJECTORY_FIXTURES = [
    ("agents-trace", _FRAMEWORKS / "agents_trace.jsonl"),
    ("agents-trace", _FRAMEWORKS / "agents_trace_backend.json"),
    ("agents-trace", _FRAMEWORKS / "agents_trace_responses_model.json"),
    ("tau2", FIXTURES / "tau2_airline_max_steps.json"),
    ("inspect", FIXTURES / "inspect_tool_call_errors.json"),
    ("inspect", _FRAMEWORKS / "inspect" / "scripted_add.eval"),
    ("langchain", _FRAMEWORKS / "langchain_dumpd.jsonl"),
    ("langchain", _FRAMEWORKS / "langchain_messages_to_dict.jsonl"),
    ("langchain", _FRAMEWORKS / "langchain_model_dump.jsonl"),
    ("otel", FIXTURES / "otel_file_exporter.jsonl"),
    ("otel", FIXTURES / "otel_tool_calls.otlp.json"),
    ("otel", _FRAMEWORKS / "openinference_openai" / "session.otlp.jsonl"),
    ("otel", _FRAMEWORKS / "otel_openai_v2" / "content_on.otlp.jsonl"),
    ("bfcl", FIXTURES / "bfcl_results.jsonl"),
    ("bfcl", FIXTURES / "bfcl_fc" / "BFCL_v3_parallel_result.json"),
    ("responses", _FRAMEWORKS / "agents_input_list.jsonl"),
    ("responses", _FRAMEWORKS / "agents_input_list_wrapped.jsonl"),
    ("pydantic-ai", _FRAMEWORKS / "pydantic_ai_messages_wrapped.jsonl"),
    ("pydantic-ai", _FRAMEWORKS / "pydantic_ai_retry.jsonl"),
    ("native", FIXTURES / "native_trajectories.jsonl"),
    ("openai", FIXTURES / "openai_trajectories.jsonl"),
    ("anthropic", FIXTURES / "anthropic_trajectories.jsonl"),
    ("vakra", FIXTURES / "vakra_predictions.jsonl"),
]
# (format, tasks, reference, which of the two is mutated)
_TASK_FIXTURES = [
    ("bfcl", FIXTURES / "bfcl_questions.jsonl", FIXTURES / "bfcl_possible_answers.jsonl", "tasks"),
    ("bfcl", FIXTURES / "bfcl_questions.jsonl", FIXTURES / "bfcl_possible_answers.jsonl", "reference"),
    ("vakra", FIXTURES / "vakra_input.jsonl", FIXTURES / "vakra_ground_truth.jsonl", "tasks"),
    ("vakra", FIXTURES / "vakra_input.jsonl", FIXTURES / "vakra_ground_truth.jsonl", "reference"),
    ("native", FIXTURES / "native_tasks.jsonl", None, "tasks"),
]
_SCORES = FIXTURES / "bfcl_v4_glyphh" / "score" / "glyphh-ada-1.1" / "non_live" / "BFCL_v4_simple_java_score.json"
# what tells items of one list apart (a message's role, a span's type, an attribute's key): a field
# of the same name under another role is another field to mutate
_MARKS = ("object", "type", "role", "kind", "part_kind", "event", "key")
_MUTATIONS_PER_FIXTURE = 40  # sampled deterministically when a fixture has more (the whole sweep: a few seconds)


def _mark(value):
    return "|".join(f"{k}={value[k]}" for k in _MARKS if isinstance(value.get(k), str)) if isinstance(value, dict) else ""


def _nodes(value, path=(), shape=()):
    """(path, shape) of every value below ``value``; the shape is the path with list positions
    replaced by the item's marks, so that the 40 attributes of 9 spans are 40 fields, not 360."""
    if path:
        yield path, shape
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _nodes(child, (*path, key), (*shape, ("*" if isinstance(key, int) else key, _mark(child))))


def _other_types(value):
    """``value`` as each other JSON type (a string, a number, a boolean, null, an array, an object)."""
    kinds = {str: "x", int: 7, bool: True, type(None): None, list: [value], dict: {"x": value}}
    own = float if isinstance(value, float) else type(value)
    return [new for kind, new in kinds.items() if kind is not own and not (own is float and kind is int)]


def _type_mutations(units, seed):
    """One mutation per (field shape, other type), at most _MUTATIONS_PER_FIXTURE of them, the same
    ones on every run."""
    first = {}
    for i, unit in enumerate(units):
        for path, shape in _nodes(unit):
            first.setdefault(shape, (i, path))
    cases = [(i, path, new) for i, path in first.values() for new in _other_types(_get(units[i], path))]
    if len(cases) > _MUTATIONS_PER_FIXTURE:
        cases = random.Random(seed).sample(cases, _MUTATIONS_PER_FIXTURE)
    return cases


def _units(path):
    """A fixture as what a mutation replaces a value in: its lines (JSONL) or its one document."""
    text = path.read_text(encoding="utf-8")
    try:
        return "document", [json.loads(text)]
    except ValueError:
        return "lines", [json.loads(line) for line in text.splitlines() if line.strip()]


def _write_units(path, layout, units):
    text = json.dumps(units[0], indent=1) if layout == "document" else "".join(json.dumps(u) + "\n" for u in units)
    path.write_text(text, encoding="utf-8")


def _eval_members(path):
    from pipelines.ingest._archive import Archive

    with Archive(str(path), Limits()) as archive:
        return {name: archive.read_json(name) for name in archive.names}


def _write_eval(path, members):
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            archive.writestr(name, json.dumps(value))


def _unforeseen(read):
    """What a read must never give: an exception, or a reader_error row (each named)."""
    try:
        errors = read()
    except Exception as exc:  # the sweep reports any exception as the finding
        return f"raised {type(exc).__name__}: {exc}"
    found = [e.message for e in errors if e.kind == "reader_error"]
    return found[0] if found else None


def _row_errors(path, fmt):
    return [x.error for x in iter_trajectories(path, fmt) if x.error is not None]


@pytest.mark.parametrize(("fmt", "fixture"), _TRAJECTORY_FIXTURES, ids=[f"{f}:{p.name}" for f, p in _TRAJECTORY_FIXTURES])
def test_a_value_of_another_type_anywhere_is_a_field_error_of_every_reader(tmp_path, fmt, fixture):
    """Every field of the fixture (one per shape, see _nodes) replaced by a value of each other JSON
    type, a deterministic sample of them: the reader, whole-file bundles included, gives the
    file's rows with field errors, never a reader_error row ("a bug to report") or an exception.
    Found the agents trace's `function` / `tool_calls` / call ids / span names of the wrong type
    and tau2's reward_info lists of checks that are not lists."""
    target = tmp_path / fixture.name
    seed = zlib.crc32(fixture.name.encode())
    found = []
    if fixture.suffix == ".eval":
        members = _eval_members(fixture)
        units = [members["header.json"], members["samples/add-1_epoch_1.json"]]
        for i, path, new in _type_mutations(units, seed):
            changed = dict(members, **{("header.json", "samples/add-1_epoch_1.json")[i]: _replaced(units[i], path, new)})
            _write_eval(target, changed)
            problem = _unforeseen(lambda: _row_errors(target, fmt))
            if problem:
                found.append((i, path, new, problem))
    else:
        layout, units = _units(fixture)
        for i, path, new in _type_mutations(units, seed):
            _write_units(target, layout, [*units[:i], _replaced(units[i], path, new), *units[i + 1 :]])
            problem = _unforeseen(lambda: _row_errors(target, fmt))
            if problem:
                found.append((i, path, new, problem))
    assert not found, found[:5]


@pytest.mark.parametrize(("fmt", "tasks", "reference", "mutated"), _TASK_FIXTURES, ids=[f"{f}:{t.name}:{m}" for f, t, _, m in _TASK_FIXTURES])
def test_a_value_of_another_type_anywhere_is_a_field_error_of_every_task_reader(tmp_path, fmt, tasks, reference, mutated):
    from pipelines.ingest import UsageError

    source = tasks if mutated == "tasks" else reference
    target = tmp_path / source.name
    layout, units = _units(source)

    def read():
        try:
            taskset = load_tasks(target if mutated == "tasks" else tasks, fmt, reference if mutated == "tasks" else target)
        except UsageError:  # e.g. the one task's id is gone: no tasks, a usage error naming the file
            return []
        return taskset.errors

    found = []
    for i, path, new in _type_mutations(units, zlib.crc32(f"{source.name}:{mutated}".encode())):
        _write_units(target, layout, [*units[:i], _replaced(units[i], path, new), *units[i + 1 :]])
        problem = _unforeseen(read)
        if problem:
            found.append((i, path, new, problem))
    assert not found, found[:5]


def test_a_value_of_another_type_in_a_bfcl_score_file_is_a_value_error(tmp_path):
    """read_bfcl_scores says what is wrong with a score file as a ValueError naming file and line."""
    from pipelines.ingest import read_bfcl_scores

    target = tmp_path / _SCORES.name
    layout, units = _units(_SCORES)
    found = []
    for i, path, new in _type_mutations(units, zlib.crc32(_SCORES.name.encode())):
        _write_units(target, layout, [*units[:i], _replaced(units[i], path, new), *units[i + 1 :]])
        try:
            read_bfcl_scores(target)
        except ValueError:
            pass
        except Exception as exc:  # the finding
            found.append((i, path, new, f"{type(exc).__name__}: {exc}"))
    assert not found, found[:5]
