"""BFCL result files -> trajectories, BFCL score files -> labels (fixtures: see fixtures/formats/BFCL_ORIGIN.md;
the real runs are read from ../shared/data/external/formats/bfcl, see its SOURCE.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.ingest import detect_trajectory_format, iter_trajectories
from pipelines.ingest._bfcl_decode import decode_result
from pipelines.ingest._bfcl_scores import looks_like_bfcl_scores, read_bfcl_scores, sniff_bfcl_scores

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "external" / "formats" / "bfcl"
V3 = SHARED / "v3_Salesforce_Llama-xLAM-2-8b-fc-r"
V4 = SHARED / "v4_roshangrewal_gemma4-e4b-toolcall-v02"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="the shared samples (../shared) are not checked out")


def _read(path, fmt=None):
    return list(iter_trajectories(path, fmt))


# ---------------------------------------------------------------- decoding the result


@pytest.mark.parametrize(
    ("result", "calls"),
    [
        ("[f(a=1, b='x')]", [("f", {"a": 1, "b": "x"})]),
        ("f(a=1)", [("f", {"a": 1})]),  # BFCL adds the brackets
        ("```\n[math.hypot(x=4, y=5)]\n```", [("math.hypot", {"x": 4, "y": 5})]),  # backticks stripped
        ("[a.b.c(v=[1, 2.5, -3], t=(1, 2), d={'k': True, 2: None})]", [("a.b.c", {"v": [1, 2.5, -3], "t": [1, 2], "d": {"k": True, "2": None}})]),
        (
            "[f(unit=celsius, when=datetime.now(), g=lambda x: x**2, s=xs[0])]",
            [("f", {"unit": "celsius", "when": "datetime.now()", "g": "lambda x: x ** 2", "s": "xs[0]"})],
        ),
        ("[f(n=2*3, r=1/4, s='a' + 'b', p=2**10)]", [("f", {"n": 6, "r": 0.25, "s": "ab", "p": 1024})]),
        ("[f(p=10**100000, z=1/0)]", [("f", {"p": "10 ** 100000", "z": "1 / 0"})]),  # never computed beyond bounds
        ("[f(loc=g(city='Paris'))]", [("f", {"loc": {"g": {"city": "Paris"}}})]),  # BFCL's nested call form
        ('[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": "{\\"b\\": 2}"}]', [("f", {"a": 1}), ("g", {"b": 2})]),
        ('{"name": "f", "parameters": {"a": 1}}', [("f", {"a": 1})]),
        ('{"name": "f", "arguments": {"a": 1}}; {"name": "g", "arguments": {}}', [("f", {"a": 1}), ("g", {})]),  # xLAM's ';' form
        ('[{"f": {"a": 1}}]', [("f", {"a": 1})]),
        ("<TOOLCALL>[f(a=1)]</TOOLCALL>", [("f", {"a": 1})]),
        ("[]", []),  # valid: the model made no call
    ],
)
def test_decoding_text_results(result, calls):
    decoded = decode_result(result)
    assert decoded.error is None
    assert [(c.name, c.arguments) for c in decoded.calls] == calls
    assert all(c.error is None for c in decoded.calls)


def test_decoding_structured_results():
    """API function-calling handlers write a list of {name: arguments} (an object or JSON text)."""
    decoded = decode_result([{"get_weather": '{"city": "Paris"}'}, {"get_time": {"tz": "CET"}}, "[h(x=1)]"])
    assert [(c.name, c.arguments) for c in decoded.calls] == [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "CET"}), ("h", {"x": 1})]
    assert decode_result({"f": {}}).calls[0].name == "f"


@pytest.mark.parametrize(
    "result",
    [
        "I cannot answer that without knowing the city.",
        "[f(a=1), g(b=",
        "[1, 2]",
        '{"answer": 42}',
        "[x[0](a=1)]",
        42,
        None,
    ],
)
def test_results_that_are_not_calls_are_the_models_failure(result):
    decoded = decode_result(result)
    assert decoded.error and not decoded.calls


def test_a_call_with_unreadable_arguments_is_a_failed_call():
    decoded = decode_result('[{"name": "f", "arguments": "{not json"}, {"name": "g", "arguments": {}}]')
    bad, good = decoded.calls
    assert bad.name == "f" and bad.error and "unparseable arguments" in bad.error
    assert good.error is None


def test_positional_arguments_are_reported_not_bound():
    (call,) = decode_result("[f(5, 'x', b=2)]").calls
    assert call.arguments == {"b": 2} and call.positional == ["5", "'x'"]


def test_trailing_control_tokens_fail_as_in_bfcl_but_are_named():
    """BFCL's decoder fails ``[f()]<end_of_turn>``; so do we, and the error says why (v4 gemma sample)."""
    decoded = decode_result("[math.factorial(number=5)]<end_of_turn>")
    assert not decoded.calls and "it would parse without the trailing '<end_of_turn>'" in decoded.error
    assert "without the trailing '<|eot_id|>'" in decode_result("[f(a=1)]\n<|eot_id|>").error
    assert "without the trailing" not in decode_result("[f(a=1)] thanks").error


def test_hostile_python_is_not_evaluated_and_does_not_crash():
    assert decode_result("[f(a=__import__('os').system('echo hi'))]").calls[0].arguments == {"a": "__import__('os').system('echo hi')"}
    assert decode_result("[" * 5000 + "]" * 5000).error  # nesting beyond the parser's limit
    assert decode_result("[f(a=" + "[" * 150 + "]" * 150 + ")]").error is None


# ---------------------------------------------------------------- the reader


def test_result_lines_become_call_only_trajectories(fixtures):
    loaded = _read(fixtures / "bfcl_results.jsonl")
    assert [item.trajectory_id for item in loaded] == ["simple_0", "simple_13", "parallel_0", "parallel_29", "parallel_multiple_3"]
    assert all(item.task_id == item.trajectory_id for item in loaded)
    first = loaded[0].trajectory
    (step,) = first.steps
    assert (step.name, step.arguments, step.status, step.round) == ("calculate_triangle_area", {"base": 10, "height": 5}, "unknown", 0)
    assert first.final_answer is None
    assert (first.token_usage.input_tokens, first.token_usage.output_tokens) == (374, 26)
    assert first.metadata["latency"] == pytest.approx(3.925311326980591) and first.metadata["result_syntax"] == "json"
    assert json.loads(first.metadata["result"]) == [{"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}]
    parallel = loaded[2].trajectory
    assert [s.arguments["artist"] for s in parallel.steps] == ["Taylor Swift", "Maroon 5"] and {s.round for s in parallel.steps} == {0}
    python = loaded[4].trajectory
    assert python.metadata["result_syntax"] == "python" and [s.arguments["property"] for s in python.steps] == ["width", "length"]


def test_detection(fixtures):
    assert detect_trajectory_format(fixtures / "bfcl_results.jsonl") == "bfcl"


def test_unparseable_result_is_graded_as_no_call(write_jsonl):
    path = write_jsonl("r.jsonl", [{"id": "simple_1", "result": "The factorial of 5 is 120."}])
    (item,) = _read(path)
    traj = item.trajectory
    assert item.error is None and traj.steps == [] and traj.final_answer == "The factorial of 5 is 120."
    assert traj.turns[0].agent_messages == ["The factorial of 5 is 120."]
    assert "not a call list" in traj.metadata["decode_error"]
    (warning,) = item.warnings
    assert (warning.kind, warning.field, warning.line) == ("bfcl_unparseable_result", "result", 1)


def test_unreadable_arguments_make_a_failed_step(write_jsonl):
    path = write_jsonl("r.jsonl", [{"id": "simple_1", "result": [{"math.factorial": "{number: 5}"}]}])
    (step,) = _read(path)[0].trajectory.steps
    assert step.status == "error" and "unparseable arguments" in step.error


def test_warning_for_positional_arguments(write_jsonl):
    path = write_jsonl("r.jsonl", [{"id": "simple_1", "result": "[math.factorial(5)]"}])
    (item,) = _read(path)
    assert [w.kind for w in item.warnings] == ["bfcl_positional_arguments"]
    assert item.trajectory.metadata["positional_arguments"] == {"0": ["5"]}
    assert item.trajectory.steps[0].arguments == {}


def test_multi_turn_results_become_one_trajectory_turn_per_bfcl_turn(write_jsonl):
    path = write_jsonl(
        "r.jsonl",
        [
            {
                "id": "multi_turn_base_0",
                "result": [["[cd(folder='x')]", "[ls(a=True), pwd()]", "moved"], ["[]"], ['[{"name": "cd", "arguments": "{bad"}]', "done"]],
            },
            {"id": "simple_3", "result": [["[f(a=1)]"]]},  # a list per turn, whatever the id
            {"id": "memory_kv_0", "result": [["[f(a=1)]"]]},
            {"id": "", "result": "[f()]"},
            {"id": "simple_4", "result": "[f()]", "input_token_count": [1, 2]},
        ],
    )
    multi, listed, agentic, no_id, odd_tokens = _read(path)
    traj = multi.trajectory
    assert [t.turn_id for t in traj.turns] == ["0", "1", "2"]
    first, empty, broken = traj.turns
    assert [(s.name, s.arguments, s.round, s.status) for s in first.steps] == [
        ("cd", {"folder": "x"}, 0, "unknown"),
        ("ls", {"a": True}, 1, "unknown"),
        ("pwd", {}, 1, "unknown"),
    ]
    assert first.final_answer == "moved" and empty.steps == [] and empty.agent_messages == []  # "[]": BFCL's empty response
    assert broken.steps == [] and broken.final_answer == "done"  # BFCL cannot decode the message: none of its calls ran
    assert traj.metadata["decode_errors"][0]["turn"] == 2 and [w.kind for w in multi.warnings] == ["bfcl_unparseable_result"]
    assert [t.turn_id for t in listed.trajectory.turns] == ["0"]
    assert agentic.error.kind == "unsupported" and "memory" in agentic.error.message
    assert (no_id.error.kind, no_id.error.field, no_id.error.line) == ("invalid_field", "id", 4)
    assert odd_tokens.trajectory.token_usage is None and odd_tokens.trajectory.metadata["input_token_count"] == [1, 2]
    assert [w.kind for w in odd_tokens.warnings] == ["bfcl_token_count"]


def test_agent_is_the_model_folder_of_bfcls_layout(tmp_path):
    folder = tmp_path / "result" / "my-org_my-model" / "non_live"
    folder.mkdir(parents=True)
    path = folder / "BFCL_v4_simple_python_result.json"
    path.write_text(json.dumps({"id": "simple_python_0", "result": "[f(a=1)]"}) + "\n")
    assert _read(path)[0].trajectory.agent == "my-org_my-model"


@needs_shared
@pytest.mark.parametrize(
    "path",
    [
        *sorted(V3.glob("result/*/BFCL_v3_[sp]*_result.json")),
        *sorted(V4.glob("result/*/*/*_result.json")),
    ],
    ids=lambda p: p.name,
)
def test_every_real_single_turn_line_is_read(path):
    loaded = _read(path)
    assert len(loaded) == 30 and all(item.trajectory is not None for item in loaded)
    for item in loaded:  # calls, or the reason there are none (an empty call list is a valid answer)
        traj = item.trajectory
        assert traj.steps or traj.metadata.get("decode_error") or traj.metadata["result"] in ("[]", [])


@needs_shared
def test_real_multi_turn_results_read_their_inference_log():
    loaded = _read(next(V3.glob("result/*/BFCL_v3_multi_turn_base_result.json")))
    assert len(loaded) == 5 and all(item.error is None and not item.warnings for item in loaded)
    first = loaded[0].trajectory
    assert first.turns[0].query.startswith("Move 'final_report.pdf' within document directory")  # begin_of_turn_query
    cd = first.turns[0].steps[0]
    assert (cd.name, cd.arguments, cd.status, cd.result) == ("cd", {"folder": "document"}, "ok", '{"current_working_directory": "document"}')
    six = loaded[3].trajectory  # multi_turn_base_6: "[]" in turn 0 (BFCL's empty turn), a tool error recorded in turn 4
    assert six.turns[0].steps == [] and six.turns[4].steps[0].status == "error"
    assert [len(t.steps) for t in six.turns] == [0, 3, 1, 1, 5]


# ---------------------------------------------------------------- score files -> labels


@needs_shared
def test_score_file_labels_failures_and_passes():
    labels = read_bfcl_scores(next(V3.glob("score/*/BFCL_v3_simple_score.json")))
    assert sorted(labels) == ["simple_13", "simple_5"]  # the file names only the failures
    failed = labels["simple_13"]
    assert (failed.source, failed.value, failed.passed) == ("bfcl", False, False)
    assert failed.reason.startswith("type_error:nested: Nested type checking failed for parameter 'interval'")
    assert labels["simple_5"].reason.startswith("simple_function_checker:missing_optional")
    passed = labels["simple_0"]  # a scored category, not listed: passed
    assert passed.passed is True and passed.value is True
    assert labels.get("parallel_0") is None and "parallel_0" not in labels  # a category this file does not score
    assert labels.categories["simple"] == {"accuracy": 0.9275, "correct_count": 371, "total_count": 400}


@needs_shared
def test_score_folder_merges_categories():
    labels = read_bfcl_scores(next(V3.glob("score/*/")))
    assert set(labels.categories) == {"simple", "parallel", "multi_turn_base"}
    assert labels["parallel_9"].reason.startswith("parallel_function_checker_no_order:wrong_count")
    assert labels["multi_turn_base_6"].reason.startswith("multi_turn:empty_turn_model_response: Model response list is empty")
    assert labels["parallel_1"].passed and labels["multi_turn_base_0"].passed
    assert sniff_bfcl_scores(next(V3.glob("score/*/"))) and sniff_bfcl_scores(next(V3.glob("score/*/*_simple_score.json")))
    assert not sniff_bfcl_scores(next(V3.glob("result/*/*_simple_result.json")))


def test_score_file_errors_name_file_and_line(tmp_path):
    good = tmp_path / "BFCL_v3_simple_score.json"
    good.write_text('{"accuracy": 1.0, "correct_count": 2, "total_count": 2}\n')
    labels = read_bfcl_scores(good)
    assert len(labels) == 0 and labels["simple_7"].passed
    bad = tmp_path / "BFCL_v3_parallel_score.json"
    bad.write_text('{"accuracy": 0.5, "correct_count": 1, "total_count": 2}\n{"valid": false}\n')
    with pytest.raises(ValueError, match=rf"{bad.name}:2: field id"):
        read_bfcl_scores(bad)
    other = tmp_path / "results.json"
    other.write_text('{"id": "simple_0", "result": "[]"}\n')
    with pytest.raises(ValueError, match=rf"{other.name}:1: not a BFCL score file"):
        read_bfcl_scores(other)
    empty = tmp_path / "score"
    empty.mkdir()
    with pytest.raises(ValueError, match="no BFCL score files"):
        read_bfcl_scores(empty)
    assert looks_like_bfcl_scores({"accuracy": 1, "correct_count": 1, "total_count": 1})
    assert not looks_like_bfcl_scores({"id": "x", "accuracy": 1, "correct_count": 1, "total_count": 1})


# ---------------------------------------------------------------- graded end to end


def _run(tmp_path, trajectories, tasks, reference, labels=None):
    from pipelines.run import GradeOptions, run_grading

    out = tmp_path / "run"
    outcome = run_grading(GradeOptions(tasks=tasks, reference=reference, trajectories=trajectories, out=out, labels=labels))
    rows = {row["trajectory_id"]: row for row in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert outcome.summary.counts.graded == len(rows) - outcome.summary.counts.errors
    return rows, json.loads((out / "summary.json").read_text())


def _grade(tmp_path, trajectories, tasks, reference):
    return _run(tmp_path, trajectories, tasks, reference)[0]


def test_graded_against_bfcl_questions_and_possible_answers(fixtures, tmp_path):
    rows = _grade(tmp_path, fixtures / "bfcl_results.jsonl", fixtures / "bfcl_questions.jsonl", fixtures / "bfcl_possible_answers.jsonl")
    verdicts = {tid: (row["verdict"], row["failure_stage"]) for tid, row in rows.items()}
    assert verdicts == {
        "simple_0": ("pass", "none"),
        "simple_13": ("fail", "argument_values"),  # [1, 3] for a list of floats: BFCL's type_error:nested
        "parallel_0": ("pass", "none"),
        "parallel_29": ("fail", "argument_values"),  # adults=1 where the answer says 0
        "parallel_multiple_3": ("pass", "none"),
    }


def test_calls_beyond_the_expected_ones_fail_and_a_missing_call_fails(fixtures, tmp_path, write_jsonl):
    extra = "[get_rectangle_property(perimeter=14, area=15, property='width'), get_rectangle_property(perimeter=14, area=15, property='length'), integral(function='x', a=0.0, b=1.0)]"
    results = write_jsonl(
        "r.jsonl",
        [
            {"id": "parallel_multiple_3", "result": extra},
            {"id": "parallel_0", "result": "[spotify.play(artist='Taylor Swift', duration=20)]"},
            {"id": "simple_0", "result": "Sorry, I need the units first."},
        ],
    )
    rows = _grade(tmp_path, results, fixtures / "bfcl_questions.jsonl", fixtures / "bfcl_possible_answers.jsonl")
    assert (rows["parallel_multiple_3"]["verdict"], rows["parallel_multiple_3"]["failure_stage"]) == ("fail", "tool_selection")
    assert rows["parallel_0"]["verdict"] == "fail"  # one call short (BFCL: wrong_count); the stage is the matcher's diagnosis
    assert (rows["simple_0"]["verdict"], rows["simple_0"]["failure_stage"]) == ("fail", "tool_selection")


@needs_shared
@pytest.mark.parametrize("category", ["simple", "parallel"])
def test_agreement_with_bfcls_own_score_files_on_the_real_v3_run(category, tmp_path):
    """The measured figure of docs/formats/bfcl.md: ``--labels score/<model>/`` against our verdicts."""
    rows, summary = _run(
        tmp_path,
        next(V3.glob(f"result/*/BFCL_v3_{category}_result.json")),
        V3 / "data" / f"BFCL_v3_{category}.json",
        V3 / "data" / "possible_answer" / f"BFCL_v3_{category}.json",
        labels=next(V3.glob("score/*/")),
    )
    agreement = summary["external_agreement"]["bfcl"]
    assert (agreement["n"], agreement["both_decided"], agreement["agreement"], agreement["disagreements"]) == (30, 30, 1.0, [])
    labels = read_bfcl_scores(next(V3.glob(f"score/*/BFCL_v3_{category}_score.json")))
    assert sorted(tid for tid, row in rows.items() if row["verdict"] == "fail") == sorted(labels)  # the same entries fail


def test_labels_option_reads_a_score_file_and_rejects_other_folders(tmp_path):
    from pipelines.labels import load_labels

    score = tmp_path / "BFCL_v3_simple_score.json"
    score.write_text('{"accuracy": 0.5, "correct_count": 1, "total_count": 2}\n{"id": "simple_1", "valid": false, "error_type": "x", "error": ["y"]}\n')
    labels = load_labels(score)
    assert labels.by_trajectory["simple_1"].passed is False and labels.by_trajectory["simple_0"].passed is True
    assert [w.field for w in labels.unused(str(score))] == ["trajectory_id"]  # simple_1 was not graded
    folder = tmp_path / "labels"
    folder.mkdir()
    (error,) = load_labels(folder).errors
    assert "BFCL score files" in error.message


@needs_shared
@pytest.mark.parametrize("category", ["simple_python", "live_simple"])
def test_agreement_with_the_reference_checker_on_the_real_v4_run(category, tmp_path):
    """The v4 run has no score files: its BFCL verdicts are recomputed with the re-implemented
    checker (tests/matching/bfcl_reference_checker.py) on BFCL's prompt-mode decoding."""
    from pipelines.ingest._bfcl_decode import _from_python, _Unreadable
    from tests.matching import bfcl_reference_checker as bfcl

    data = V4 / "data"
    questions = {q["id"]: q for q in map(json.loads, (data / f"BFCL_v4_{category}.json").read_text().splitlines())}
    answers = {a["id"]: a for a in map(json.loads, (data / "possible_answer" / f"BFCL_v4_{category}.json").read_text().splitlines())}
    results = next(V4.glob(f"result/*/*/BFCL_v4_{category}_result.json"))
    rows = _grade(tmp_path, results, data / f"BFCL_v4_{category}.json", data / "possible_answer" / f"BFCL_v4_{category}.json")
    for line in results.read_text().splitlines():
        entry = json.loads(line)
        try:
            output = [{c.name: c.arguments} for c in _from_python(entry["result"])]
            theirs = (
                len(output) == 1
                and bfcl.simple_function_checker(questions[entry["id"]]["function"][0], output[0], answers[entry["id"]]["ground_truth"][0]).valid
            )
        except _Unreadable:
            theirs = False  # ast_decoder:decoder_failed
        assert (rows[entry["id"]]["verdict"] == "pass") == theirs, entry["id"]
