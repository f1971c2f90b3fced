"""VAKRA input cases + ground truth -> tasks, predictions -> trajectories."""

from __future__ import annotations

import json

import pytest

from pipelines.ingest import check_task, iter_trajectories, load_tasks


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_joined_tasks(fixtures):
    tasks = load_tasks(fixtures / "vakra_input.jsonl", reference=fixtures / "vakra_ground_truth.jsonl")
    assert tasks.errors == []
    chain = tasks.tasks["c1-olympics-0001"]
    assert chain.environment is None and chain.metadata.domain == "olympics"  # VAKRA's environments are not bundled
    assert chain.metadata.capability == "1" and chain.policy is None  # empty instructions: no policy
    calls = chain.turns[0].reference_calls
    assert [(c.id, c.label) for c in calls] == [("DATA", "DATA"), ("NOR", "NOR"), (None, None)]
    assert [c.depends_on for c in calls] == [[], ["DATA"], ["NOR"]]  # from $LABEL.path$ references
    assert calls[2].expected_output == [[14]] and calls[2].has_expected_output
    assert chain.turns[0].gold_answers == [["14"]]  # the answer list is the one acceptable value

    multi = tasks.tasks["c4-hockey-0007"]
    assert [t.turn_id for t in multi.turns] == ["1", "2"]  # every turn, not just the last
    assert multi.turns[0].query == "Which team won the 1994 final?"
    assert multi.turns[0].reference_calls[0].expected_output == {"team": "New York Rangers"}  # JSON text parsed
    assert multi.turns[1].gold_answers == [[[18200.5]]]
    assert multi.policy.text.startswith("Answer statistics questions from the APIs only")
    assert multi.metadata.hop_types == ["API", "RAG"] and multi.metadata.multi_source
    assert multi.metadata.policy_condition == "source_restriction"
    assert tasks.sources["c4-hockey-0007"].file.endswith("vakra_input.jsonl")


def test_ground_truth_alone_is_a_task_file(fixtures):
    tasks = load_tasks(fixtures / "vakra_ground_truth.jsonl")
    assert tasks.errors == [] and sorted(tasks.tasks) == ["c1-olympics-0001", "c4-hockey-0007"]
    assert tasks.tasks["c4-hockey-0007"].turns[1].query.startswith("And what was")


def test_input_cases_need_the_ground_truth(fixtures):
    with pytest.raises(ValueError, match="pass the ground-truth file as --reference"):
        load_tasks(fixtures / "vakra_input.jsonl")


def test_orphans_on_either_side_name_both_files(fixtures, write_jsonl):
    cases, truth = _lines(fixtures / "vakra_input.jsonl"), _lines(fixtures / "vakra_ground_truth.jsonl")
    extra_truth = dict(truth[0], uuid="gt-only")
    extra_case = dict(cases[0], uuid="case-only")
    case_path = write_jsonl("cases.jsonl", [*cases, extra_case])
    truth_path = write_jsonl("truth.jsonl", [*truth, extra_truth])
    tasks = load_tasks(case_path, fmt="vakra", reference=truth_path)
    assert sorted(tasks.tasks) == ["c1-olympics-0001", "c4-hockey-0007"]
    by_id = {e.message.split("'")[1]: e for e in tasks.errors}
    case_err, truth_err = by_id["case-only"], by_id["gt-only"]
    assert (case_err.kind, case_err.file, case_err.line) == ("unknown_task", str(case_path), 3)
    assert str(truth_path) in case_err.message
    assert (truth_err.kind, truth_err.file, truth_err.line) == ("unknown_task", str(truth_path), 3)
    assert str(case_path) in truth_err.message


def test_ground_truth_errors_point_at_the_ground_truth_file(fixtures, write_jsonl):
    cases, truth = _lines(fixtures / "vakra_input.jsonl"), _lines(fixtures / "vakra_ground_truth.jsonl")
    truth[1]["output"][1]["sequence"]["tool_call"][1]["arguments"] = "season=1994"
    cases[0]["num_turns"] = 3
    case_path = write_jsonl("cases.jsonl", cases)
    truth_path = write_jsonl("truth.jsonl", truth)
    tasks = load_tasks(case_path, reference=truth_path)
    assert tasks.tasks == {}
    first, second = tasks.errors
    assert (first.file, first.line, first.field) == (str(case_path), 1, "num_turns")
    assert (second.file, second.line, second.field) == (str(truth_path), 2, "output[1].sequence.tool_call[1].arguments")
    assert "arguments must be an object" in second.message
    assert set(tasks.invalid) == {"c1-olympics-0001", "c4-hockey-0007"}


def test_misaligned_responses_are_an_error(fixtures, write_jsonl):
    truth = _lines(fixtures / "vakra_ground_truth.jsonl")
    truth[0]["output"][0]["sequence"]["tool_response"].pop()
    tasks = load_tasks(write_jsonl("truth.jsonl", truth))
    (error,) = tasks.errors
    assert error.field == "output[0].sequence.tool_response" and "cannot be aligned" in error.message


def test_duplicate_ground_truth_makes_the_task_ambiguous(fixtures, write_jsonl):
    cases, truth = _lines(fixtures / "vakra_input.jsonl"), _lines(fixtures / "vakra_ground_truth.jsonl")
    changed = json.loads(json.dumps(truth[0]))
    changed["output"][0]["answer"] = ["15"]
    tasks = load_tasks(write_jsonl("c.jsonl", cases), reference=write_jsonl("t.jsonl", [*truth, changed]))
    assert "c1-olympics-0001" in tasks.ambiguous and "c1-olympics-0001" not in tasks.tasks
    (dup,) = tasks.errors
    assert dup.kind == "duplicate_id" and dup.line == 3 and "t.jsonl:1" in dup.message


def test_predictions(fixtures):
    loaded = list(iter_trajectories(fixtures / "vakra_predictions.jsonl"))
    assert [x.error for x in loaded] == [None, None]
    first, second = (x.trajectory for x in loaded)
    assert (first.task_id, first.trajectory_id) == ("c1-olympics-0001", "c1-olympics-0001")
    steps = first.turns[0].steps
    assert steps[0].latency_ms == 250.0  # duration_s -> latency_ms
    assert (steps[1].status, steps[1].error) == ("error", "unknown column 'nation'")
    assert steps[3].result == [[14]]  # JSON text parsed
    assert first.turns[0].final_answer == ["14"]
    assert first.metadata["turns"] == {"1": {"duration_s": 4.2}} and first.metadata["domain"] == "olympics"
    assert (second.trajectory_id, second.agent) == ("run-2", "react-gpt")
    assert [t.turn_id for t in second.turns] == ["1", "2"]
    missing = second.turns[1].steps[1]  # a call without a response failed
    assert (missing.status, missing.error, missing.result) == ("unknown", None, None)
    assert second.metadata["turns"]["2"] == {"status": "error", "error": "step budget exhausted"}
    tasks = load_tasks(fixtures / "vakra_input.jsonl", reference=fixtures / "vakra_ground_truth.jsonl")
    assert [check_task(x, tasks) for x in loaded] == [None, None]


def test_a_crashed_run_ended_early(fixtures, write_jsonl):
    """VAKRA's runner records a crash or its timeout as ``status: "error"`` on the prediction
    (vakra_runner_predictions.jsonl, VAKRA_ORIGIN.md); a turn may carry it too."""
    (loaded,) = iter_trajectories(fixtures / "vakra_runner_predictions.jsonl", fmt="vakra")
    traj = loaded.trajectory
    assert (traj.ended_early.kind, traj.ended_early.turn_id) == ("error", None)
    assert traj.ended_early.reason == "VAKRA status 'error' on the prediction: Agent timed out after 300 seconds"
    assert (traj.metadata["status"], traj.metadata["duration_s"]) == ("error", 300.0)  # kept where they were
    assert [s.status for s in traj.steps] == ["unknown", "unknown"]  # the runner saves no responses
    per_turn = list(iter_trajectories(fixtures / "vakra_predictions.jsonl"))[1].trajectory
    assert (per_turn.ended_early.kind, per_turn.ended_early.turn_id) == ("error", "2")
    assert per_turn.ended_early.reason == "VAKRA status 'error' on turn 2: step budget exhausted"
    assert per_turn.ended_turn is per_turn.turns[1]
    record = json.loads((fixtures / "vakra_runner_predictions.jsonl").read_text())
    finished = {**record, "status": "success", "error": ""}
    silent = {**record, "uuid": "x", "error": None}
    first, second = iter_trajectories(write_jsonl("p.jsonl", [finished, silent]), fmt="vakra")
    assert first.trajectory.ended_early is None
    assert second.trajectory.ended_early.reason == "VAKRA status 'error' on the prediction: no error text recorded"


def test_prediction_errors_name_input_fields(write_jsonl):
    path = write_jsonl(
        "p.jsonl",
        [
            {"uuid": "a", "output": [{"turn_id": 1, "answer": ["x"], "sequence": {"tool_call": [{"name": "f", "arguments": {}}], "tool_response": [1, 2]}}]},
            {
                "uuid": "b",
                "output": [
                    {"turn_id": 1, "answer": ["x"], "sequence": {"tool_call": [{"name": "f", "arguments": {}, "status": "maybe"}], "tool_response": [1]}}
                ],
            },
            {"uuid": "c", "output": [{"turn_id": 1, "answer": ["x"], "sequence": {"tool_call": [{"name": "f", "duration_s": -1}], "tool_response": [1]}}]},
        ],
    )
    errors = [x.error for x in iter_trajectories(path)]
    assert [e.field for e in errors] == [
        "output[0].sequence.tool_response",
        "output[0].sequence.tool_call[0]",
        "output[0].sequence.tool_call[0].duration_s",
    ]
    assert "unknown status 'maybe'" in errors[1].message
