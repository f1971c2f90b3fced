"""Hostile and broken files: one bad item costs one row, never its neighbours or the run.

Covers issue 10 items 1 and 4: nesting beyond the bound, a JSONL file whose first line is an array,
an array with a bad item anywhere (resynchronisation), CR-only line endings.
"""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge import MAX_DEPTH, TooDeep, nesting_error, parse_json_bounded
from pipelines.ingest import Limits, iter_trajectories
from pipelines.ingest._reader import read_items


def traj(i: int, **extra) -> dict:
    return {"task_id": "t1", "trajectory_id": f"r{i}", "steps": [{"name": "f", "arguments": {"x": i}, "result": i}], "final_answer": str(i), **extra}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def read(path_or_bytes, limits: Limits | None = None) -> list:
    limits = limits or Limits()
    if isinstance(path_or_bytes, bytes):
        stream = io.BufferedReader(io.BytesIO(path_or_bytes), buffer_size=64)  # small reads: boundaries everywhere
        return list(read_items(stream, limits))
    return list(read_items(path_or_bytes, limits))


def summary(items) -> list[tuple]:
    return [(x.line, x.error.kind if x.error else x.value.get("trajectory_id") if isinstance(x.value, dict) else x.value) for x in items]


# ---------------------------------------------------------------- depth


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 20_000])
def test_deep_line_is_one_too_deep_row(tmp_path, depth):
    path = tmp_path / "deep.jsonl"
    bad = json.dumps(traj(2))[:-1] + f', "metadata": {{"x": {nested(depth)}}}}}'
    path.write_text("\n".join([json.dumps(traj(1)), bad, json.dumps(traj(3))]) + "\n")
    items = read(path)
    assert summary(items) == [(1, "r1"), (2, "too_deep"), (3, "r3")]
    assert f"deeper than {MAX_DEPTH} levels" in items[1].error.message
    assert items[1].error.field  # names where (or <root> when the parser itself gave up)


def test_depth_at_the_bound_is_accepted(tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps(traj(1, metadata={"x": json.loads(nested(MAX_DEPTH - 2))})) + "\n")
    (item,) = read(path)
    assert item.error is None


def test_deep_item_in_an_array_names_the_field(tmp_path):
    path = tmp_path / "deep.json"
    deep = json.dumps(traj(2, metadata={"x": json.loads(nested(150))}))
    path.write_text("[\n" + ",\n".join([json.dumps(traj(1)), deep, json.dumps(traj(3))]) + "\n]\n")
    items = read(path)
    assert summary(items) == [(2, "r1"), (3, "too_deep"), (4, "r3")]
    assert items[1].error.field.startswith("metadata.x[0][0]")


def test_parser_depth_overflow_in_an_array_resyncs(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" + json.dumps(traj(1)) + "," + nested(50_000) + "," + json.dumps(traj(3)) + "]")
    assert summary(read(path)) == [(1, "r1"), (1, "too_deep"), (1, "r3")]


def test_nesting_error_and_bounded_parse_are_iterative():
    value: list = []
    for _ in range(10_000):
        value = [value]
    assert nesting_error(value, 100) == "[0][0][0][0][0][0]..."
    assert nesting_error([[1]], 2) is None
    with pytest.raises(TooDeep):
        parse_json_bounded(nested(5000))
    with pytest.raises(ValueError, match="deeper than 3"):
        parse_json_bounded('{"a": [[[1]]]}', 3)
    assert parse_json_bounded('{"a": [[1]]}', 3) == {"a": [[1]]}


# ---------------------------------------------------------------- arrays


def test_jsonl_whose_first_line_is_an_array(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps([traj(1), traj(2)]) + "\n" + json.dumps(traj(3)) + "\n\n" + json.dumps(traj(4)) + "\n")
    assert summary(read(path)) == [(1, "r1"), (1, "r2"), (2, "r3"), (4, "r4")]


def test_text_after_the_array_on_the_same_line_is_an_item(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps([traj(1)]) + " " + json.dumps(traj(2)) + "\n" + json.dumps(traj(3)) + "\n")
    assert summary(read(path)) == [(1, "r1"), (1, "r2"), (2, "r3")]


def array_text(parts: list[str], pretty: bool) -> str:
    if pretty:
        return "[\n" + ",\n".join(parts) + "\n]\n"
    return "[" + ",".join(parts) + "]"


BAD_ITEMS = {
    "syntax": ('{"task_id": "t1", "trajectory_id": "bad", "steps": [}', "malformed_json"),
    "cut_short": ('{"task_id": "t1", "trajectory_id": "bad", "steps": [{"name": "f"', "malformed_json"),
    "duplicate_key": ('{"task_id": "t1", "task_id": "t2"}', "malformed_json"),
    "too_deep": ('{"a": ' + nested(300) + "}", "too_deep"),
    "unclosed_string": ('{"task_id": "t1", "final_answer": "abc}', "malformed_json"),
    "garbage": ("not json at all", "malformed_json"),
    "stray_closer": ('}{"task_id": 1}', "malformed_json"),
}


@pytest.mark.parametrize("pretty", [True, False], ids=["one_per_line", "one_line"])
@pytest.mark.parametrize("where", [0, 2, 4])
@pytest.mark.parametrize("kind", sorted(BAD_ITEMS))
def test_array_with_one_bad_item_keeps_every_neighbour(tmp_path, kind, where, pretty):
    text, error_kind = BAD_ITEMS[kind]
    if kind in ("cut_short", "unclosed_string") and not pretty:
        pytest.skip("damage that leaves a bracket or quote open swallows the rest of a one-line array: lines are what resync relies on")
    parts = [json.dumps(traj(i)) for i in range(5)]
    parts[where] = text
    path = tmp_path / "runs.json"
    path.write_text(array_text(parts, pretty))
    items = read(path)
    got = [x.error.kind if x.error else x.value["trajectory_id"] for x in items]
    expected = [f"r{i}" if i != where else error_kind for i in range(5)]
    assert got == expected
    if pretty:
        assert [x.line for x in items] == [2, 3, 4, 5, 6]


def test_pretty_printed_item_cut_short_resyncs_at_the_next_item(tmp_path):
    items = [json.dumps(traj(i), indent=2) for i in range(3)]
    items[1] = items[1][: items[1].index('"steps"') + 20]  # cut inside the steps list
    text = "[\n" + ",\n".join("  " + x.replace("\n", "\n  ") for x in items) + "\n]\n"
    path = tmp_path / "runs.json"
    path.write_text(text)
    got = [x.error.kind if x.error else x.value["trajectory_id"] for x in read(path)]
    assert got == ["r0", "malformed_json", "r2"]


def test_separators_are_repaired_not_fatal(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text("[\n" + json.dumps(traj(1)) + "\n" + json.dumps(traj(2)) + ",,\n" + json.dumps(traj(3)) + ",\n]\n")
    assert summary(read(path)) == [(2, "r1"), (3, "r2"), (4, "r3")]


def test_truncated_array_ends_with_one_clear_row(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text("[\n" + json.dumps(traj(1)) + ",\n" + json.dumps(traj(2)) + ",\n")
    items = read(path)
    assert summary(items) == [(2, "r1"), (3, "r2"), (3, "malformed_json")]
    assert "not closed" in items[-1].error.message and "truncated" in items[-1].error.message


def test_array_truncated_inside_an_item_is_one_row(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text("[\n" + json.dumps(traj(1)) + ",\n" + json.dumps(traj(2))[:30])
    items = read(path)
    assert summary(items) == [(2, "r1"), (3, "malformed_json")]
    assert "truncated" in items[1].error.message


def test_undecodable_line_inside_an_array_item(tmp_path):
    path = tmp_path / "runs.json"
    lines = [
        b"[",
        json.dumps(traj(1)).encode() + b",",
        b'{"task_id": "t1", "trajectory_id": "r2",',
        b'"final_answer": "caf\xe9"},',
        json.dumps(traj(3)).encode(),
        b"]",
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    items = read(path)
    assert summary(items) == [(2, "r1"), (4, "encoding"), (5, "r3")]  # the error names the undecodable line
    assert "0xe9" in items[1].error.message


def test_oversize_line_inside_an_array_is_skipped_with_its_item_only(tmp_path):
    path = tmp_path / "runs.json"
    big = json.dumps(traj(2, metadata={"blob": "x" * 5000, "list": [{"a": "}]"}]}))
    path.write_text("[\n" + ",\n".join([json.dumps(traj(1)), big, json.dumps(traj(3))]) + "\n]\n")
    items = read(path, Limits(max_line_bytes=1000, max_string_bytes=500))
    assert summary(items) == [(2, "r1"), (3, "too_large"), (4, "r3")]


def test_oversize_multi_line_item_is_skipped_in_bounded_memory(tmp_path):
    path = tmp_path / "runs.json"
    big = json.dumps(traj(2, metadata={f"k{i}": "y" * 50 for i in range(400)}), indent=1)
    path.write_text("[\n" + ",\n".join([json.dumps(traj(1)), big, json.dumps(traj(3))]) + "\n]\n")
    items = read(path, Limits(max_line_bytes=2000, max_string_bytes=1000))
    assert [x.error.kind if x.error else x.value["trajectory_id"] for x in items] == ["r1", "too_large", "r3"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(2, 8),
    where=st.integers(0, 7),
    cut=st.integers(1, 60),
    pretty=st.booleans(),
    mutation=st.sampled_from(["truncate", "drop_char", "insert_brace", "insert_quote"]),
)
def test_any_single_corrupted_item_never_costs_a_balanced_neighbour(tmp_path, n, where, cut, pretty, mutation):
    where %= n
    parts = [json.dumps(traj(i)) for i in range(n)]
    text = parts[where]
    cut = min(cut, len(text) - 1)
    parts[where] = {
        "truncate": text[:cut],
        "drop_char": text[:cut] + text[cut + 1 :],
        "insert_brace": text[:cut] + "{" + text[cut:],
        "insert_quote": text[:cut] + '"' + text[cut:],
    }[mutation]
    path = tmp_path / "runs.json"
    path.write_text(array_text(parts, pretty=True) if pretty else array_text(parts, pretty=False))
    items = read(path)
    values = [x.value for x in items if x.error is None]
    neighbours = [traj(i) for i in range(n) if i != where]
    survivors = [v for v in values if v in neighbours]
    if pretty:  # one item per line: every other item survives, whatever the damage
        assert survivors == neighbours
    else:  # one line: a bracket or quote the damage leaves open may hide the rest of that line
        assert all(v in neighbours for v in survivors)
    assert len(items) <= n + 1  # never more rows than items (+1 for an unclosed array)


# ---------------------------------------------------------------- line endings


@pytest.mark.parametrize("eol", [b"\r", b"\r\n", b"\n"], ids=["cr", "crlf", "lf"])
def test_line_endings_each_line_one_item(eol):
    data = eol.join(json.dumps(traj(i)).encode() for i in range(5)) + eol
    assert [x.value["trajectory_id"] for x in read(data)] == [f"r{i}" for i in range(5)]
    assert [x.line for x in read(data)] == [1, 2, 3, 4, 5]


def test_cr_only_file_with_a_bad_line_and_a_pretty_object():
    pretty = json.dumps(traj(3), indent=2).replace("\n", "\r")
    data = b"\r".join([json.dumps(traj(1)).encode(), b"{broken", pretty.encode(), json.dumps(traj(4)).encode()]) + b"\r"
    items = read(data)
    assert summary(items) == [(1, "r1"), (2, "malformed_json"), (3, "r3"), (3 + pretty.count("\r") + 1, "r4")]


def test_cr_only_array():
    data = b"[\r" + b",\r".join(json.dumps(traj(i)).encode() for i in range(3)) + b"\r]\r"
    assert summary(read(data)) == [(2, "r0"), (3, "r1"), (4, "r2")]


def test_cr_only_oversize_line_is_skipped_alone():
    data = b"\r".join([json.dumps(traj(1)).encode(), json.dumps(traj(2, metadata={"b": "z" * 3000})).encode(), json.dumps(traj(3)).encode()])
    items = read(data, Limits(max_line_bytes=1000, max_string_bytes=500))
    assert summary(items) == [(1, "r1"), (2, "too_large"), (3, "r3")]


def test_end_to_end_rows_for_a_cr_file(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\r".join(json.dumps(traj(i)).encode() for i in range(4)))
    loaded = list(iter_trajectories(path))
    assert [x.trajectory_id for x in loaded] == ["r0", "r1", "r2", "r3"]


# ---------------------------------------------------------------- values JSON allows but output cannot hold


@pytest.mark.parametrize("layout", ["jsonl", "array"])
def test_unpaired_surrogate_escape_is_an_encoding_error_naming_the_field(tmp_path, layout):
    bad = json.dumps(traj(2))[:-1] + ', "agent": "\\ud800x"}'
    good_pair = json.dumps(traj(3, agent="\U0001f600"), ensure_ascii=True)  # a valid pair: fine
    parts = [json.dumps(traj(1)), bad, good_pair]
    path = tmp_path / "runs.json"
    path.write_text("\n".join(parts) + "\n" if layout == "jsonl" else "[\n" + ",\n".join(parts) + "\n]\n")
    items = read(path)
    assert [x.error.kind if x.error else x.value["trajectory_id"] for x in items] == ["r1", "encoding", "r3"]
    assert items[1].error.field == "agent" and "surrogate" in items[1].error.message


@pytest.mark.parametrize("layout", ["jsonl", "array"])
def test_integer_beyond_pythons_digit_limit_is_one_row(tmp_path, layout):
    bad = json.dumps(traj(2))[:-1] + ', "metadata": {"n": ' + "9" * 5000 + "}}"
    parts = [json.dumps(traj(1)), bad, json.dumps(traj(3))]
    path = tmp_path / "runs.json"
    path.write_text("\n".join(parts) + "\n" if layout == "jsonl" else "[\n" + ",\n".join(parts) + "\n]\n")
    items = read(path)
    assert [x.error.kind if x.error else x.value["trajectory_id"] for x in items] == ["r1", "malformed_json", "r3"]
    assert "4,300 digits" in items[1].error.message and "sys." not in items[1].error.message


@given(st.binary(max_size=40).map(lambda b: bytes(x for x in b if x in b"ab\r\n") or b"a"), st.integers(0, 40))
def test_find_eol_finds_what_the_terminator_regex_finds(buf, pos):
    import re

    from pipelines.ingest._reader import _find_eol

    pos = min(pos, len(buf))
    m = re.compile(rb"\r\n|\r|\n").search(buf, pos)
    assert _find_eol(buf, pos) == (None if m is None else (m.start(), m.end()))


_TRICKY_LEAVES = [1, None, 2**70, "a\n      b", '{["\\', "\n" + " " * 40 + "x"]  # 2**70: orjson cannot write it


def _deep(depth: int, leaf: object, wide: bool) -> object:
    value = leaf
    for i in range(depth):
        value = ([value, {}, []] if wide else [value]) if i % 2 else ({"k\n  ": value, "e": []} if wide else {"k": value})
    return value


def test_text_depth_check_agrees_with_the_walk():
    """The text check (bracket count, then orjson's indented layout) decides exactly as the walk,
    for every depth around every limit: with and without empty containers one level below the
    deepest chain, strings full of brackets, line breaks and spaces, and integers orjson cannot
    write (the walk decides those)."""
    from judge import text_nesting_error

    for depth in range(1, 15):
        for limit in range(1, 13):
            for wide in (False, True):
                for leaf in _TRICKY_LEAVES:
                    value = {"deep": _deep(depth, leaf, wide), "text": leaf}
                    assert text_nesting_error(value, json.dumps(value), limit) == nesting_error(value, limit), (depth, limit, wide, leaf)


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(alphabet=' \n{}[]"\\ab', max_size=6)),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.text(alphabet="ab\n ", max_size=3), children, max_size=3)),
    max_leaves=40,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_JSON, limit=st.integers(1, 8))
def test_text_depth_check_agrees_with_the_walk_on_any_json(value, limit):
    from judge import text_nesting_error

    assert text_nesting_error(value, json.dumps(value), limit) == nesting_error(value, limit)
