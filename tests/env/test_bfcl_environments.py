"""BFCL multi-turn entries graded by replay in BFCL's own environment classes (bfcl-eval, run for
real: no mock of the classes; ``make test`` installs it with --no-deps, see the Makefile).

Each entry is a small one written here against ``GorillaFileSystem`` / ``MathAPI`` (a two-file
file system), graded end to end: BFCL's question / possible-answer lines -> our reader -> replay ->
the calls check. BFCL's rules (``multi_turn_checker``): per turn the state of every instance must
equal the ground truth's, every ground-truth result must be among the model's results so far, a
turn with ground-truth calls and no model call fails; the entry fails at its first failing turn.
"""

from __future__ import annotations

import json
from functools import partialmethod

import pytest

from judge import Trajectory
from pipelines.config import GradingConfig
from pipelines.env import CallSpec, EntryFailed, EntrySpec, TurnSpec, bind_call, method_owners, parse_call, replay_bfcl_entry
from pipelines.grade import Replayer, grade_case
from pipelines.ingest import convert_trajectory
from pipelines.ingest._bfcl import build_task

FILES = {
    "GorillaFileSystem": {
        "root": {
            "alex": {
                "type": "directory",
                "contents": {
                    "notes.txt": {"type": "file", "content": "budget draft"},
                    "docs": {"type": "directory", "contents": {}},
                },
            }
        }
    }
}
QUESTION = {
    "id": "multi_turn_base_900",
    "question": [
        [{"role": "user", "content": "Go into docs and create a folder named reports."}],
        [{"role": "user", "content": "Go back up and show me what notes.txt says."}],
    ],
    "initial_config": FILES,
    "involved_classes": ["GorillaFileSystem", "MathAPI"],
}
ANSWER = {
    "id": "multi_turn_base_900",
    "ground_truth": [["cd(folder='docs')", "mkdir(dir_name='reports')"], ["cd(folder='..')", "cat(file_name='notes.txt')"]],
}


def _trajectory(*turns: list[str]) -> Trajectory:
    """A BFCL result line (one message of calls per turn, in prompt-mode syntax) through our reader."""
    loaded = convert_trajectory({"id": QUESTION["id"], "result": [[f"[{', '.join(calls)}]"] if calls else ["[]"] for calls in turns]}, "bfcl")
    assert loaded.error is None and loaded.trajectory is not None
    return loaded.trajectory


def _grade(*turns: list[str]):
    task = build_task(QUESTION, ANSWER)
    trajectory = _trajectory(*turns)
    replay = Replayer().replay(task, trajectory)
    assert replay is not None
    return grade_case(task, trajectory, GradingConfig(), replay=replay).result()


def _calls(result, turn: int):
    return next(c for c in result.turns[turn].checks if c.check == "calls")


def test_the_ground_truth_calls_are_bound_to_parameter_names_of_the_real_classes():
    owners = method_owners(["GorillaFileSystem", "MathAPI"])
    assert owners["cd"] == "GorillaFileSystem" and owners["add"] == "MathAPI"
    assert bind_call(parse_call("sort('final_report.pdf')"), owners) == {"file_name": "final_report.pdf"}  # positional, as BFCL writes some
    with pytest.raises(ValueError, match="no involved class"):
        bind_call(parse_call("post_tweet(content='x')"), owners)
    with pytest.raises(ValueError, match="not a literal"):
        parse_call("cd(folder=__import__('os').getcwd())")  # nothing the model wrote is evaluated


def test_the_reader_makes_one_task_turn_per_bfcl_turn_replayed_in_bfcl_environments():
    task = build_task(QUESTION, ANSWER)
    assert task.environment == "bfcl" and [t.turn_id for t in task.turns] == ["0", "1"]
    assert task.environment_config["involved_classes"] == ["GorillaFileSystem", "MathAPI"]
    assert [(c.name, c.arguments) for c in task.turns[1].reference_calls] == [("cd", {"folder": ".."}), ("cat", {"file_name": "notes.txt"})]


def test_the_ground_truths_own_calls_pass_every_turn():
    result = _grade(*ANSWER["ground_truth"])
    assert result.verdict == "pass"
    evidence = [e.kind for e in _calls(result, 1).evidence]
    assert "state_match" in evidence and "matched_response" in evidence


def test_other_calls_that_reach_the_same_state_and_results_pass():
    result = _grade(["cd(folder='docs')", "ls()", "mkdir(dir_name='reports')"], ["cd(folder='..')", "cat(file_name='notes.txt')"])
    assert result.verdict == "pass"  # an extra read changes no state and adds a result: BFCL passes it


def test_a_state_difference_fails_the_turn_at_the_call_that_made_it():
    result = _grade(["cd(folder='docs')", "mkdir(dir_name='report')"], ["cd(folder='..')", "cat(file_name='notes.txt')"])
    assert (result.verdict, result.failure_stage) == ("fail", "argument_values")
    calls = _calls(result, 0)
    assert calls.outcome == "mismatch" and calls.decisive_step == 1
    assert "GorillaFileSystem" in calls.reason and "step 1 (mkdir)" in calls.reason


def test_a_ground_truth_method_never_called_is_tool_selection_and_a_missing_result_is_named():
    result = _grade(["cd(folder='docs')", "mkdir(dir_name='reports')"], ["cd(folder='..')"])
    assert (result.verdict, result.failure_stage) == ("fail", "tool_selection")
    calls = _calls(result, 1)
    assert any(e.kind == "response_missing" and e.tool == "cat" and "budget draft" in e.message for e in calls.evidence)
    assert _calls(result, 0).outcome == "match"  # the first turn still passes: the failing turn is the second


def test_a_turn_without_a_call_fails_as_bfcls_empty_turn():
    result = _grade([], ["cd(folder='..')", "cat(file_name='notes.txt')"])
    assert (result.verdict, result.failure_stage) == ("fail", "tool_selection")
    assert "no call was made in this turn" in _calls(result, 0).reason


def _entry(call: CallSpec) -> EntrySpec:
    return EntrySpec("multi_turn_base_901", ["MathAPI"], {}, False, [TurnSpec(model=[call], truth=[CallSpec("add", {"a": 1, "b": 2})])])


def test_one_worker_replays_entry_after_entry_and_a_failure_gets_a_new_one():
    import pipelines.env._bfcl as bfcl

    quick = _entry(CallSpec("add", {"a": 1, "b": 2}))
    (turn,) = replay_bfcl_entry(quick)
    assert turn.model_results == turn.truth_results == ['{"result": 3}'] and not turn.missing
    worker = bfcl._WORKER
    replay_bfcl_entry(quick)
    assert bfcl._WORKER is worker  # no fork per entry
    with pytest.raises(EntryFailed):
        replay_bfcl_entry(_entry(CallSpec("logarithm", {"value": 3, "base": 2, "precision": 10**7})), time_limit_s=1.0)  # killed with its worker
    (turn,) = replay_bfcl_entry(quick)
    assert bfcl._WORKER is not worker and turn.model_results == ['{"result": 3}']


def test_an_entry_past_its_time_bound_is_stopped():
    slow = CallSpec("logarithm", {"value": 3, "base": 2, "precision": 10**7})  # mpmath at ten million digits: minutes
    with pytest.raises(EntryFailed, match="took longer than 1 s"):
        replay_bfcl_entry(_entry(slow), time_limit_s=1.0)


def test_an_entry_past_its_memory_bound_is_stopped():
    huge = CallSpec("square_root", {"number": 2, "precision": 10**9})  # a billion decimal digits
    with pytest.raises(EntryFailed, match="more than 64 MB"):
        replay_bfcl_entry(_entry(huge), time_limit_s=60.0, memory_limit_mb=64)


def test_a_runaway_entry_is_one_error_row_of_the_run(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pipelines.cli import app

    ids = ["multi_turn_base_902", "multi_turn_base_903"]
    (tmp_path / "q.json").write_text("".join(json.dumps(QUESTION | {"id": i}) + "\n" for i in ids))
    (tmp_path / "a.json").write_text("".join(json.dumps(ANSWER | {"id": i}) + "\n" for i in ids))
    first_turn = ["[cd(folder='docs')]", "[mkdir(dir_name='reports')]"]
    rows = [
        {"id": ids[0], "result": [first_turn, ["[logarithm(value=3, base=2, precision=10000000)]"]]},  # mpmath at ten million digits
        {"id": ids[1], "result": [first_turn, ["[cd(folder='..')]", "[cat(file_name='notes.txt')]"]]},
    ]
    (tmp_path / "r.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(Replayer, "__init__", partialmethod(Replayer.__init__, bfcl_time_limit_s=2.0))  # the test's own wait, not 60 s
    out = tmp_path / "run"
    args = ["grade", "--trajectories", str(tmp_path / "r.json"), "--tasks", str(tmp_path / "q.json"), "--reference", str(tmp_path / "a.json")]
    result = CliRunner().invoke(app, [*args, "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    first, second = (json.loads(line) for line in (out / "results.jsonl").read_text().splitlines())
    assert first["verdict"] == "error" and "took longer than 2 s" in first["error"]["message"]
    assert second["verdict"] == "pass"


def test_without_replay_a_multi_turn_entry_stays_open_whatever_its_calls():
    # the ground truth's calls are one way to the state BFCL checks: not matching them is no failure
    task = build_task(QUESTION, ANSWER)
    for turns in (ANSWER["ground_truth"], [["ls()"], ["pwd()"]]):
        result = grade_case(task, _trajectory(*turns), GradingConfig(), replay=None).result()
        assert result.verdict == "unresolved"
