"""The drill-down's view of a kept trajectory (``reports._shown``; report.html's bytes: the golden
test), and ``KeptSteps`` validates each wanted line of ``drill_steps.jsonl`` once."""

from __future__ import annotations

import json
import marshal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge import Trajectory
from judge.core import UNDECIDED, loads_exact
from reports._shown import MAX_VALUE_CHARS, ShownTrajectory, shown_text
from reports._steps import KeptSteps, KeptTrajectory, header_line, kept_index, kept_line

_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
_step = st.fixed_dictionaries(
    {"name": st.text(min_size=1, max_size=6), "arguments": st.none() | st.dictionaries(st.text(max_size=4), _json, max_size=3)},
    optional={"result": _json, "status": st.sampled_from(["ok", "success", "error", "blocked", "pending", True]), "error": st.none() | st.text(max_size=6)},
)
_turn = st.fixed_dictionaries(
    {"turn_id": st.integers(1, 3) | st.text(min_size=1, max_size=3), "steps": st.lists(_step, max_size=3)},
    optional={"query": st.none() | st.text(max_size=8), "final_answer": _json},
)
_trajectory = st.fixed_dictionaries(
    {"task_id": st.just("t1"), "trajectory_id": st.text(min_size=1, max_size=5), "turns": st.lists(_turn, min_size=1, max_size=3)}
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_trajectory)
def test_the_view_of_a_dump_is_the_view_of_the_validated_trajectory(data):
    """Whatever the input spells (status words, integer turn ids, missing fields), the view made
    from the plain JSON of the dump (the grading run's own record) is the view of the validated
    trajectory, and it survives the spool."""
    t = Trajectory.model_validate(data)
    view = ShownTrajectory.from_trajectory(t)
    assert [(s.arguments, s.output) for tt in view.turns for s in tt.steps] == [(shown_text(s.arguments), shown_text(s.error or s.result)) for s in t.steps]
    assert ShownTrajectory.from_plain(marshal.loads(marshal.dumps(view.to_plain()))) == view
    dumped = loads_exact(t.model_dump_json())
    if dumped is not UNDECIDED:  # an integer past 64 bits: the validated path reads it
        assert ShownTrajectory.from_dump(dumped) == view


def test_kept_steps_validates_each_wanted_line_once(tmp_path: Path, monkeypatch):
    """The mapping used to validate a line when checking the file and again on every read."""
    trajectories = [Trajectory.model_validate({"task_id": "t", "trajectory_id": f"r{i}", "steps": [{"name": "f", "result": i}]}) for i in range(5)]
    path = tmp_path / "drill_steps.jsonl"
    path.write_bytes(header_line(5) + b"".join(kept_line(i, t.model_dump_json().encode()) for i, t in enumerate(trajectories)))
    calls = _count_validations(monkeypatch)
    kept = KeptSteps(path, {0: "r0", 2: "r2", 3: "other"})
    assert sorted(kept) == [0, 2]
    for _ in range(3):
        assert [kept[0].turns[0].steps[0].output, kept[2].turns[0].steps[0].output] == ["0", "2"]
        assert kept[2] == ShownTrajectory.from_trajectory(trajectories[2])
    assert len(calls) == 3  # the three wanted lines, once each


def test_the_grading_runs_own_record_reads_as_plain_json(tmp_path: Path, monkeypatch):
    """``own``: no line is validated but the one plain JSON cannot decide (an integer past 64
    bits), and the views are those of the validated path."""
    trajectories = [
        Trajectory.model_validate(
            {"task_id": "t", "trajectory_id": f"r{i}", "steps": [{"name": "f", "arguments": {"n": 2**70 if i == 1 else i}, "result": "x"}]}
        )
        for i in range(3)
    ]
    path = tmp_path / "drill_steps.jsonl"
    path.write_bytes(header_line(3) + b"".join(kept_line(i, t.model_dump_json().encode()) for i, t in enumerate(trajectories)))
    wanted: dict[int, str | None] = {0: "r0", 1: "r1", 2: "r2"}
    validated = KeptSteps(path, wanted)
    calls = _count_validations(monkeypatch)
    own = KeptSteps(path, wanted, own=True)
    assert [kept_index(line) for line in calls] == [1]
    assert list(own) == list(validated) == [0, 1, 2]
    assert all(own[i] == validated[i] for i in own)
    assert own[1].turns[0].steps[0].arguments == '{"n": 1180591620717411303424}'


_any = st.recursive(
    _scalars | st.floats() | st.sets(st.integers(), max_size=2) | st.text(alphabet=st.characters(), max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.tuples(inner) | st.dictionaries(st.text(max_size=3) | st.integers() | st.booleans() | st.none(), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=500)
@given(_any)
def test_shown_text_is_json_dumps_cut(value):
    """The encoder built once writes what ``json.dumps`` wrote per call (NaN, sets via ``str``,
    non-str keys, long texts cut), also after a value it refused."""
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        shown_text(loop)
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str) if not isinstance(value, str) else value
    except TypeError:  # keys of several types cannot be sorted: the same error
        with pytest.raises(TypeError):
            shown_text(value)
        return
    assert shown_text(value) == (text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + f"… ({len(text)} chars)")
    assert shown_text([value] * 200) == shown_text([value] * 200)


def _count_validations(monkeypatch) -> list[bytes]:
    """The lines ``KeptTrajectory.model_validate_json`` is called with from now on, in order."""
    calls: list[bytes] = []
    real = KeptTrajectory.model_validate_json.__func__  # type: ignore[attr-defined]

    def counted(cls, line):
        calls.append(line)
        return real(cls, line)

    monkeypatch.setattr(KeptTrajectory, "model_validate_json", classmethod(counted))
    return calls
