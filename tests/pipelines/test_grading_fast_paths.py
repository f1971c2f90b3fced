"""Fast paths of the checks and orchestration give the results of the slow paths they skip.

Generated calls and references sit at the fast path's edge: identical arguments, and near-misses
(1 vs 1.0 vs True, key order, nested lists, NaN, a key more or less) that must keep their result.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from judge import ArgumentRule, ReferenceCall, Step, ToolSpec
from pipelines.checks._diff import _diff_call, diff_call
from tests.matching.test_fast_paths import _near_miss, values

PROPS = settings(max_examples=400, deadline=None, derandomize=True)

keys = st.sampled_from(["a", "b", "c"])
arguments = st.dictionaries(keys, values, max_size=3)


@st.composite
def calls(draw):
    """A reference call, a step calling the same tool with identical or nearly identical arguments, a schema."""
    ref_args = draw(arguments)
    mode = draw(st.integers(0, 3))
    if mode == 0:
        given_args = copy.deepcopy(ref_args)
    elif mode == 1 and ref_args:
        k = draw(st.sampled_from(sorted(ref_args)))
        given_args = {**ref_args, k: _near_miss(ref_args[k], draw(st.integers(0, 50)))}
    elif mode == 2:
        given_args = draw(arguments)
    else:
        given_args = {k: ref_args[k] for k in reversed(list(ref_args))}
    rules = {}
    if ref_args and draw(st.booleans()):
        rules = {
            draw(st.sampled_from(sorted(ref_args))): draw(st.sampled_from([ArgumentRule(exact=True), ArgumentRule(optional=True), ArgumentRule(any_of=[1])]))
        }
    alternatives = [{"arguments": draw(arguments)}] if draw(st.integers(0, 4)) == 0 else []
    ref = ReferenceCall(name="t", arguments=ref_args, argument_rules=rules, alternatives=alternatives)
    name = draw(st.sampled_from(["t", "t", "t", "u"]))
    step = Step(name=name, arguments=None if draw(st.integers(0, 9)) == 0 else given_args, result="ok")
    spec = None
    if draw(st.booleans()):
        declared = draw(st.lists(keys, unique=True, max_size=3))
        props = {}
        for k in declared:
            schema = draw(
                st.sampled_from([{}, {"type": "string"}, {"type": "integer"}, {"type": "string", "default": "d"}, {"type": "integer", "default": 1},
                                 {"type": "string", "x-bfcl-language": "java", "x-bfcl-type": "String"}, {"type": "array", "uniqueItems": True}])
            )  # fmt: skip
            props[k] = schema
        required = draw(st.lists(st.sampled_from(declared), unique=True)) if declared else []
        spec = ToolSpec(name="t", parameters={"type": "object", "properties": props, "required": required})
    return ref, step, spec


@PROPS
@given(calls(), st.booleans(), st.booleans())
def test_diff_call_fast_path_keeps_the_full_diff(call, extra_arguments, undeclared_keys):
    ref, step, spec = call
    fast = diff_call(ref, step, spec, extra_arguments=extra_arguments, undeclared_keys=undeclared_keys)
    slow = _diff_call(ref, step, spec, extra_arguments=extra_arguments, undeclared_keys=undeclared_keys)
    assert fast == slow


def test_diff_call_identical_near_misses():
    spec = ToolSpec(name="t", parameters={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "string"}}, "required": ["b"]})
    ref = ReferenceCall(name="t", arguments={"a": 1})
    for given_args in [{"a": 1}, {"a": 1.0}, {"a": True}, {"a": 1, "c": 2}, {}]:
        step = Step(name="t", arguments=given_args, result="ok")
        assert diff_call(ref, step, spec) == _diff_call(ref, step, spec)
        assert not diff_call(ref, step, spec).matches  # the schema requires b: never a fast match
    ref = ReferenceCall(name="t", arguments={"a": [1, [2.5]], "b": "x"})
    assert diff_call(ref, Step(name="t", arguments={"b": "x", "a": [1, [2.5]]}, result="ok"), spec).matches
    java = ToolSpec(name="t", parameters={"type": "object", "properties": {"a": {"type": "string", "x-bfcl-language": "java", "x-bfcl-type": "integer"}}})
    for value in [5, "5", "x y", [1]]:  # a BFCL language literal is read as source text first, identical or not
        ref, step = ReferenceCall(name="t", arguments={"a": value}), Step(name="t", arguments={"a": value}, result="ok")
        assert diff_call(ref, step, java) == _diff_call(ref, step, java)


def test_json_bytes_are_model_dump_json_encoded():
    """Rows and kept trajectories are written by ``json_bytes``: the bytes ``model_dump_json`` gives, encoded."""
    from bench.conversations import conversations
    from judge import Task
    from pipelines.config import GradingConfig
    from pipelines.grade import grade_case
    from pipelines.ingest import convert_trajectory
    from pipelines.run.shards import json_bytes

    for conv in conversations(12, seed=5):
        traj = convert_trajectory(conv.trajectory, "openai", file="x").trajectory
        assert traj is not None
        traj.turns[-1].final_answer = 'Ünïcödé ✓ 你好 \u2028 "quoted" \\ end'  # non-ASCII and escapes
        traj.turns[-1].steps[:1] = [Step(name="odd", arguments={"x": float("nan"), "y": float("inf"), "z": None, "ü": [1, 1.0, True]}, result={"k": None})]
        for task in (conv.task_episode, conv.task_turns):
            result = grade_case(Task.model_validate(task), traj, GradingConfig()).result()
            assert json_bytes(result, exclude_none=True) == result.model_dump_json(exclude_none=True).encode("utf-8")
            assert json_bytes(result) == result.model_dump_json().encode("utf-8")
        assert json_bytes(traj) == traj.model_dump_json().encode("utf-8")
