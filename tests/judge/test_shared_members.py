"""``judge.SharedMembers``: the value of ``loads_exact(line, unique_keys=True)`` for every line,
with the named top-level members parsed once per distinct text and shared.

Equivalence is checked on generated lines (hypothesis: any JSON object, with a shared member or
not, repeated keys at the top or inside, lone surrogates in keys, integers past 64 bits, escaped
colons, deep nesting, malformed text), on the benchmark's realistic task lines, and on the shared
real-format samples' lines; ``UNDECIDED`` exactly where the fast path cannot tell, and then the
caller's ``loads_exact`` decides (the reader test: the same items either way).
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge import MAX_DEPTH, UNDECIDED, SharedMembers, loads_exact, nesting_error

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ROOT.parent / "shared" / "data" / "external" / "formats"

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.text(max_size=12),
    st.text(max_size=12),
    st.sampled_from(["a:b", "::", "\u2028", "é"]),
    st.sampled_from(["\\u003a", "\ud800"]),  # an escape that hides a colon, a lone surrogate
)
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=30)
_TOOLS = [{"type": "function", "function": {"name": f"tool_{i}", "description": "Look up: an id " * 12, "parameters": {"type": "object"}}} for i in range(4)]


def _dump(value: object, compact: bool = False) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":") if compact else None)


@st.composite
def _lines(draw: st.DrawFn, compact: bool = False) -> bytes:
    """A JSON object line: random members, often a large ``tools`` member, sometimes a repeated
    key (at the top or inside a member), a bare integer past 64 bits, nesting past the bound, or a
    mangled byte. ``compact``: written as orjson writes (the write-back proof), else with spaces."""
    keys = st.sampled_from(["task_id", "question", "x", "a:b", "tools", "meta", "task_id", "question", "x", "\ud800k"])
    members = list(dict(draw(st.lists(st.tuples(keys, _values), max_size=5))).items())  # distinct keys (a repeat is added below)
    if draw(st.integers(0, 4)):
        members = [m for m in members if m[0] != "tools"]
        members.append(("tools", draw(st.sampled_from([_TOOLS, _TOOLS[:2], [*_TOOLS, {"k": 1, "k ": 2}]]))))
    sep, colon = (",", ":") if compact else (", ", ": ")
    body = sep.join(f"{_dump(k, compact)}{colon}{_dump(v, compact)}" for k, v in members)
    if draw(st.integers(0, 3)) == 0 and members:
        body += f"{sep}{_dump(members[0][0], compact)}{colon}1"  # a repeated top-level key
    if draw(st.integers(0, 9)) == 0:
        body += f'{sep}"inner"{colon}{{"d"{colon}1{sep}"d"{colon}2}}'
    if draw(st.integers(0, 9)) == 0:
        body += f'{sep}"big"{colon}123456789012345678901234'
    if draw(st.integers(0, 9)) == 0:
        depth = draw(st.integers(MAX_DEPTH - 2, MAX_DEPTH + 1))
        body += f'{sep}"deep"{colon}' + "[" * depth + "]" * depth
    body = body.lstrip(sep)
    line = "{" + body + "}"
    if draw(st.integers(0, 14)) == 0:
        line = line[: draw(st.integers(0, len(line)))]  # cut short: malformed
    data = line.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 14)) == 0:
        data += b"\xff"
    return data


def _same(a: object, b: object) -> bool:
    return orjson.dumps(a, option=orjson.OPT_PASSTHROUGH_SUBCLASS) == orjson.dumps(b, option=orjson.OPT_PASSTHROUGH_SUBCLASS) and a == b


@settings(max_examples=400, deadline=None)
@given(st.lists(_lines() | _lines(compact=True), min_size=1, max_size=6))
def test_every_line_reads_as_loads_exact_reads_it_or_is_left_to_it(lines):
    shared = SharedMembers(("tools",))
    for line in lines:
        want = loads_exact(line, unique_keys=True)
        got = shared.loads(line)
        if got is UNDECIDED:
            continue
        assert want is not UNDECIDED, line  # the fast path never decides a line loads_exact leaves to the standard library
        assert _same(got, want), line
        assert nesting_error(got, MAX_DEPTH) is None, line  # what it decides needs no depth check


def test_compact_lines_are_proven_by_writing_back_and_refused_alike():
    shared = SharedMembers(("tools",))
    tools = _dump(_TOOLS, compact=True)
    assert shared.loads(f'{{"task_id":"a","tools":{tools}}}\n'.encode()) == {"task_id": "a", "tools": _TOOLS}
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH  # MAX_DEPTH + 1 levels with the line
    for line in (
        f'{{"tools":{tools},"tools":{tools}}}',
        f'{{"a":1,"a":2,"tools":{tools}}}',
        f'{{"tools":{tools},"\\u0061":1,"a":1}}',
        f'{{"tools":{tools},"n":123456789012345678901}}',
        '{"tools":[{"a":1,"a":2}]}',
        f'{{"tools":{tools},"x":{deep}}}',
    ):
        assert shared.loads(line.encode()) is UNDECIDED, line
    shallow = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert shared.loads(f'{{"tools":{tools},"x":{shallow}}}'.encode()) is not UNDECIDED


def test_repeated_keys_surrogate_keys_and_long_integers_are_left_to_loads_exact():
    shared = SharedMembers(("tools",))
    tools = _dump(_TOOLS)
    for line in (
        f'{{"tools": {tools}, "tools": {tools}}}',
        f'{{"a": 1, "a": 2, "tools": {tools}}}',
        f'{{"tools": {tools}, "\\ud800": 1}}',
        f'{{"tools": {tools}, "n": 123456789012345678901}}',
        f'{{"tools": {tools}, "k\\u003a": 1}}',
        f'{{"tools": [{{"a": 1, "a": 2}}, {tools}]}}',
        f"[{tools}]",
        f'{{"tools": {tools}',
    ):
        assert shared.loads(line.encode()) is UNDECIDED, line


def test_a_repeated_member_text_is_parsed_once_and_shared():
    shared = SharedMembers(("tools",))
    tools = _dump(_TOOLS)
    first = shared.loads(f'{{"task_id": "a", "tools": {tools}}}'.encode())
    second = shared.loads(f'{{"task_id": "b", "tools": {tools}, "question": "q"}}'.encode())
    assert first["tools"] == _TOOLS and second["tools"] is first["tools"]
    assert second == {"task_id": "b", "tools": _TOOLS, "question": "q"}
    small = shared.loads(b'{"task_id": "c", "tools": []}')  # under MIN_BYTES: parsed, not kept
    assert small == {"task_id": "c", "tools": []}
    for i in range(SharedMembers.MAX_KEPT + 5):  # memory bounded: at most MAX_KEPT texts kept
        shared.loads(f'{{"tools": {_dump([*_TOOLS, {"i": i}])}}}'.encode())
    assert len(shared._kept) == SharedMembers.MAX_KEPT == sum(map(len, shared._sizes.values()))
    again = shared.loads(f'{{"tools": {tools}}}'.encode())  # evicted long ago: parsed anew, still right
    assert again == {"tools": _TOOLS} and again["tools"] is not first["tools"]


def _sample_lines() -> list[bytes]:
    lines: list[bytes] = []
    from bench.conversations import conversations

    for conv in conversations(30):
        lines += [orjson.dumps(conv.task_episode), orjson.dumps(conv.task_turns), orjson.dumps(conv.trajectory)]
    if FORMATS.is_dir():
        for path in sorted(FORMATS.rglob("*.json*")):
            if path.suffix in (".json", ".jsonl") and path.stat().st_size < 20 * 2**20:
                lines += [line for line in path.read_bytes().splitlines() if line.strip()][:200]
    return lines


def test_realistic_and_real_format_lines_read_alike():
    shared = SharedMembers(("tools", "messages", "function"))
    decided = 0
    for line in _sample_lines():
        want = loads_exact(line, unique_keys=True)
        got = shared.loads(line)
        if got is not UNDECIDED:
            decided += 1
            assert want is not UNDECIDED and _same(got, want)
    assert decided >= 90  # the generated task and trajectory lines at least


@pytest.mark.parametrize("variant", ["episode", "turns"])
def test_the_reader_yields_the_same_items_with_shared_members(tmp_path, variant):
    from bench.conversations import generate
    from pipelines.ingest._reader import read_items

    paths = generate(tmp_path / "conv", 25)
    text = paths[variant].read_bytes()
    broken = text + b'{"task_id": "x", "tools": [1], "tools": [2]}\n{"task_id": "y", "tools": ' + orjson.dumps(_TOOLS) + b"\n"
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(broken)
    plain = list(read_items(path))
    fast = list(read_items(path, shared=("tools",)))
    assert [(i.line, i.index, i.error) for i in plain] == [(i.line, i.index, i.error) for i in fast]
    assert all(_same(a.value, b.value) for a, b in zip(plain, fast, strict=True))
    assert plain[-2].error is not None and "duplicate key" in plain[-2].error.message and plain[-1].error is not None
