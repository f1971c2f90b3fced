"""Arguments the tool cannot see: nested keys a write carries beyond what the reference names.

Under outcome grading a write counts for its effect. A nested key the tool's argument model drops
(``"x-extra-keys": "ignore"``, tau2's pydantic models) is no difference; where no schema says whether
the tool reads a key, the call matches "but for undeclared keys" and the calls check is inconclusive
(only when every key the reference names matches). tau2 results files with an empty ``tool_defs``
take tau2's published schemas (``pipelines/ingest/tau2_tool_schemas.json``).
"""

from __future__ import annotations

import json

from judge import Check, FailureStage, Outcome, VerdictLabel
from pipelines.matching import compare_argument
from pipelines.run import GradeOptions, run_grading
from tests.ingest.test_tau2 import _call, _sim, _task, write_results
from tests.pipelines.helpers import call, grade, task, traj

PASSENGER = {"first_name": "Ana", "last_name": "Lima", "dob": "1990-01-02"}
WITH_EXTRA = {**PASSENGER, "nationality": "BR"}
MODEL = {
    "type": "object",
    "properties": {"first_name": {"type": "string"}, "last_name": {"type": "string"}, "dob": {"type": "string"}},
    "x-extra-keys": "ignore",
}


# ---- the value rule ------------------------------------------------------------------------------
def test_a_key_the_argument_model_drops_is_no_difference():
    assert compare_argument([PASSENGER], [WITH_EXTRA], schema={"type": "array", "items": MODEL}).ok
    strict = {**MODEL, "x-extra-keys": None, "additionalProperties": False}
    assert not compare_argument([PASSENGER], [WITH_EXTRA], schema={"type": "array", "items": strict}).ok
    declared = {**MODEL, "properties": {**MODEL["properties"], "nationality": {"type": "string"}}}
    assert not compare_argument([PASSENGER], [WITH_EXTRA], schema={"type": "array", "items": declared}).ok  # the tool reads it


def test_an_any_of_reads_an_object_by_its_model_branch():
    items = {"anyOf": [MODEL, {"type": "object", "additionalProperties": True}]}  # tau2's List[Passenger | dict]
    assert compare_argument([PASSENGER], [WITH_EXTRA], schema={"type": "array", "items": items}).ok


def test_undeclared_keys_are_reported_not_counted_only_when_asked():
    assert not compare_argument({"p": PASSENGER}, {"p": WITH_EXTRA}).ok
    found = compare_argument({"p": PASSENGER}, {"p": WITH_EXTRA}, undeclared_keys=True)
    assert found.ok and found.undeclared == ("p.nationality",)
    wrong = compare_argument({"p": PASSENGER}, {"p": {**WITH_EXTRA, "dob": "1991-01-02"}}, undeclared_keys=True)
    assert not wrong.ok  # a key the reference names differs: decided, whatever else
    ordered = compare_argument([PASSENGER, {"first_name": "Bo"}], [WITH_EXTRA, {"first_name": "Bo", "x": 1}], undeclared_keys=True)
    assert ordered.ok and ordered.undeclared == ("[0].nationality", "[1].x")
    # unordered: only the keys of the pairs assigned are reported, at the agent's item
    bag = compare_argument(
        [PASSENGER, {"first_name": "Bo"}], [{"first_name": "Bo", "x": 1}, WITH_EXTRA], schema={"type": "array", "uniqueItems": True}, undeclared_keys=True
    )
    assert bag.ok and bag.undeclared == ("[1].nationality", "[0].x")


# ---- the calls check -------------------------------------------------------------------------------
BOOK = {"name": "book", "side_effect": "write", "parameters": {"type": "object", "properties": {"passengers": {"type": "array"}}}}
LOOKUP = {"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}


def _booking(grading: str = "outcome", tool: dict = BOOK):
    return task([{"name": "book", "arguments": {"passengers": [PASSENGER]}}], gold=None, tools=[tool, LOOKUP], grading=grading)


def test_outcome_grading_leaves_a_write_with_undeclared_keys_open():
    case = grade(_booking(), traj([call("book", passengers=[WITH_EXTRA])], answer=None))
    calls = case.turns[0].checks[Check.CALLS]
    assert calls.outcome == Outcome.INCONCLUSIVE
    assert calls.reason.startswith("inconclusive: undeclared keys: step 0 equals book") and "passengers[0].nationality" in calls.reason
    assert [e.kind for e in calls.evidence] == ["undeclared_keys"]
    assert case.next_escalation() == (0, Check.CALLS)


def test_a_reference_key_that_differs_is_still_decided():
    wrong = {**WITH_EXTRA, "dob": "1999-09-09"}
    assert grade(_booking(), traj([call("book", passengers=[wrong])], answer=None)).result().failure_stage == FailureStage.ARGUMENT_VALUES


def test_a_known_model_decides_and_trajectory_grading_stays_strict():
    modelled = {**BOOK, "parameters": {"type": "object", "properties": {"passengers": {"type": "array", "items": MODEL}}}}
    assert grade(_booking(tool=modelled), traj([call("book", passengers=[WITH_EXTRA])], answer=None)).result().verdict == VerdictLabel.PASS
    strict = grade(_booking("trajectory"), traj([call("book", passengers=[WITH_EXTRA])], answer=None)).result()
    assert (strict.verdict, strict.failure_stage) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)
    exact = grade(_booking(), traj([call("book", passengers=[PASSENGER])], answer=None)).result()
    assert exact.verdict == VerdictLabel.PASS


def test_an_exact_call_wins_over_one_with_undeclared_keys():
    case = grade(_booking(), traj([call("book", passengers=[WITH_EXTRA]), call("book", passengers=[PASSENGER])], answer=None))
    result = case.result()
    # the exact call satisfies the reference; the first one is then a surplus write
    assert (result.verdict, result.failure_stage) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    assert result.decisive_step is not None and result.decisive_step.step == 0


# ---- tau2: the published schemas -------------------------------------------------------------------
def _airline(tmp_path, tool_defs=None):
    passengers = [{"first_name": "Ana", "last_name": "Lima", "dob": "1990-01-02"}]
    action = {
        "action_id": "b",
        "name": "update_reservation_passengers",
        "arguments": {"reservation_id": "ABC123", "passengers": passengers},
    }
    sent = [{**passengers[0], "nationality": "BR"}]  # a key tau2's Passenger model drops
    messages = [
        {"role": "user", "content": "Fix the passenger name on ABC123.", "tool_calls": None},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "update_reservation_passengers", reservation_id="ABC123", passengers=sent)]},
        {"role": "tool", "id": "c1", "content": '{"reservation_id": "ABC123"}', "requestor": "assistant", "error": False},
        {"role": "assistant", "content": "Done.", "tool_calls": None},
    ]
    path = write_results(tmp_path, [_task("t", actions=[action])], [_sim("s", "t", messages)])
    doc = json.loads(path.read_text())
    doc["info"]["environment_info"] = {"domain_name": "airline", "policy": "Be careful.", "tool_defs": tool_defs}
    path.write_text(json.dumps(doc))
    return path


def _row(tmp_path, path):
    run_grading(GradeOptions(tasks=None, trajectories=path, out=tmp_path / "out"))
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    return row


def test_tau2_files_without_tool_defs_take_the_published_schemas(tmp_path):
    row = _row(tmp_path, _airline(tmp_path))
    assert (row["verdict"], row["external_labels"][0]["passed"]) == ("pass", True)  # tau2's DB check: the key changed nothing


def test_tau2_tool_defs_of_the_file_are_used_with_their_refs_inlined(tmp_path):
    passenger = {"properties": {"first_name": {"type": "string"}, "last_name": {"type": "string"}, "dob": {"type": "string"}}, "type": "object"}
    params = {
        "$defs": {"Passenger": passenger},
        "properties": {"reservation_id": {"type": "string"}, "passengers": {"type": "array", "items": {"$ref": "#/$defs/Passenger"}}},
        "required": ["reservation_id", "passengers"],
        "type": "object",
    }
    defs = {"update_reservation_passengers": {"name": "update_reservation_passengers", "doc": "Update passengers.", "params": params, "returns": {}}}
    row = _row(tmp_path, _airline(tmp_path, defs))
    assert row["verdict"] == "pass"
    from pipelines.ingest._tau2 import tool_schemas

    schema = tool_schemas(defs, "airline")["update_reservation_passengers"]["parameters"]
    assert "$defs" not in json.dumps(schema) and schema["properties"]["passengers"]["items"]["x-extra-keys"] == "ignore"
