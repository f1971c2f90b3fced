"""BFCL question + possible-answer files -> tasks (real BFCL v3 lines, see fixtures/formats/BFCL_ORIGIN.md)."""

from __future__ import annotations

import json

import pytest

from judge import ArgumentRule
from pipelines.ingest import load_tasks
from pipelines.ingest._bfcl import MAX_ALTERNATIVES, category


@pytest.fixture
def bfcl(fixtures):
    return load_tasks(fixtures / "bfcl_questions.jsonl", reference=fixtures / "bfcl_possible_answers.jsonl")


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_single_turn_categories(bfcl):
    assert list(bfcl.tasks) == ["simple_0", "simple_13", "parallel_0", "parallel_29", "parallel_multiple_3"]
    assert [t.metadata.capability for t in bfcl.tasks.values()] == ["simple", "simple", "parallel", "parallel", "parallel_multiple"]
    for task in bfcl.tasks.values():
        assert len(task.turns) == 1 and task.turns[0].gold_answers is None  # call-only tasks
        assert all(c.depends_on == [] for c in task.turns[0].reference_calls)  # parallel: order free


def test_types_become_json_schema_keeping_the_bfcl_type(bfcl):
    area = bfcl.tasks["simple_13"].tool("calculate_area_under_curve").parameters
    assert area["type"] == "object" and area["x-bfcl-type"] == "dict"
    interval = area["properties"]["interval"]
    assert interval["type"] == "array" and interval["items"] == {"type": "number", "x-bfcl-type": "float"}
    rect = bfcl.tasks["parallel_multiple_3"].tool("get_rectangle_property")
    assert rect.param_schema("tolerance")["type"] == "number" and rect.param_schema("tolerance")["x-bfcl-type"] == "float"
    assert rect.required == frozenset({"perimeter", "area", "property"})
    population = bfcl.tasks["parallel_29"].tool("waste_calculation.calculate").param_schema("population")
    assert population["type"] == "object" and population["x-bfcl-type"] == "dict"


def test_acceptable_values_become_argument_rules(bfcl):
    (call,) = bfcl.tasks["simple_0"].turns[0].reference_calls
    assert call.arguments == {"base": 10, "height": 5, "unit": "units"}
    # BFCL's checker accepts the omission marker "" itself for a string parameter
    assert call.argument_rules["unit"] == ArgumentRule(any_of=["units", ""], optional=True)
    assert call.argument_rules["base"] == ArgumentRule(any_of=[10], optional=False)
    (curve,) = bfcl.tasks["simple_13"].turns[0].reference_calls
    assert curve.arguments["interval"] == [1.0, 3.0]  # a list value is one alternative, not three
    assert curve.argument_rules["function"].any_of == ["x**2", "lambda x: x**2", "y=x**2"]
    assert curve.arguments["method"] == "trapezoidal" and curve.argument_rules["method"].optional


def test_only_omittable_argument(bfcl):
    width, length = bfcl.tasks["parallel_multiple_3"].turns[0].reference_calls
    assert "tolerance" not in width.arguments
    assert width.argument_rules["tolerance"] == ArgumentRule(optional=True, any_of=[])
    assert length.arguments["tolerance"] == 0.1 and length.argument_rules["tolerance"].optional


def test_parallel_calls_and_nested_dict_answers(bfcl):
    la, ny = bfcl.tasks["parallel_29"].turns[0].reference_calls
    assert la.arguments["population"] == {"adults": 2, "children": 2, "singles": 0}
    assert ny.argument_rules["population"].any_of == [{"adults": 0, "children": 0, "singles": 1}]
    assert ny.argument_rules["location"].any_of[:2] == ["New York", "New York, NY"]
    swift, maroon = bfcl.tasks["parallel_0"].turns[0].reference_calls
    assert (swift.name, maroon.name) == ("spotify.play", "spotify.play")
    assert (swift.arguments["duration"], maroon.arguments["duration"]) == (20, 15)


def test_nested_dict_expansion_by_cartesian_product(fixtures, write_jsonl):
    questions = _lines(fixtures / "bfcl_questions.jsonl")[3:4]
    answer = {
        "id": "parallel_29",
        "ground_truth": [{"waste_calculation.calculate": {"population": [{"adults": [2, 3], "children": [2, ""], "singles": [0]}], "location": ["LA"]}}],
    }
    tasks = load_tasks(write_jsonl("q.jsonl", questions), fmt="bfcl", reference=write_jsonl("a.jsonl", [answer]))
    (call,) = tasks.tasks["parallel_29"].turns[0].reference_calls
    assert call.argument_rules["population"].any_of == [
        {"adults": 2, "children": 2, "singles": 0},
        {"adults": 2, "singles": 0},  # "" inside a nested answer: the key may be left out
        {"adults": 2, "children": "", "singles": 0},  # ... or given as "" (BFCL's dict checker accepts it)
        {"adults": 3, "children": 2, "singles": 0},
        {"adults": 3, "singles": 0},
        {"adults": 3, "children": "", "singles": 0},
    ]
    assert call.arguments["population"] == {"adults": 2, "children": 2, "singles": 0}


def test_too_many_alternatives_is_unsupported(fixtures, write_jsonl):
    questions = _lines(fixtures / "bfcl_questions.jsonl")[3:4]
    many = list(range(20))
    answer = {
        "id": "parallel_29",
        "ground_truth": [{"waste_calculation.calculate": {"population": [{"adults": many, "children": many, "singles": [0]}], "location": ["LA"]}}],
    }
    answers = write_jsonl("a.jsonl", [answer])
    tasks = load_tasks(write_jsonl("q.jsonl", questions), fmt="bfcl", reference=answers)
    (error,) = tasks.errors
    assert error.kind == "unsupported" and str(MAX_ALTERNATIVES) in error.message
    assert (error.file, error.line, error.field) == (str(answers), 1, "ground_truth[0].waste_calculation.calculate.population")
    assert "parallel_29" in tasks.invalid


def test_a_multi_turn_entry_without_its_possible_answer_names_the_reference_file(bfcl, fixtures):
    (error,) = bfcl.errors
    assert (error.kind, error.line, error.field) == ("unknown_task", 6, "id")
    assert "multi_turn_base_3" in error.message and "bfcl_possible_answers.jsonl" in error.message
    assert "multi_turn_base_3" in bfcl.invalid


def test_unmatched_ids_name_both_files(fixtures, write_jsonl):
    questions = _lines(fixtures / "bfcl_questions.jsonl")[:2]
    answers = _lines(fixtures / "bfcl_possible_answers.jsonl")
    qpath, apath = write_jsonl("q.jsonl", questions[1:] + [dict(questions[0], id="simple_999")]), write_jsonl("a.jsonl", answers)
    tasks = load_tasks(qpath, fmt="bfcl", reference=apath)
    assert list(tasks.tasks) == ["simple_13"]
    messages = {(e.file, e.line): e for e in tasks.errors}
    missing = messages[(str(qpath), 2)]
    assert missing.kind == "unknown_task" and str(apath) in missing.message
    orphans = [e for e in tasks.errors if e.file == str(apath)]
    assert {e.line for e in orphans} == {1, 3, 4, 5} and all(str(qpath) in e.message for e in orphans)


def test_unsupported_type_and_undeclared_function(fixtures, write_jsonl):
    questions = _lines(fixtures / "bfcl_questions.jsonl")[:2]
    questions[0]["function"][0]["parameters"]["properties"]["base"]["type"] = "HashMap"
    answers = _lines(fixtures / "bfcl_possible_answers.jsonl")[:2]
    answers[1]["ground_truth"][0] = {"integrate": {"function": ["x"]}}
    tasks = load_tasks(write_jsonl("q.jsonl", questions), fmt="bfcl", reference=write_jsonl("a.jsonl", answers))
    first, second = tasks.errors
    assert (first.kind, first.field) == ("unsupported", "function[0].parameters.properties.base.type")
    assert second.kind == "invalid_field" and "undeclared tool 'integrate'" in second.message


def test_reference_is_required(fixtures):
    with pytest.raises(ValueError, match="possible-answer file"):
        load_tasks(fixtures / "bfcl_questions.jsonl")


def test_category_from_id():
    assert category("simple_3") == "simple"
    assert category("parallel_multiple_12") == "parallel_multiple"
    assert category("live_simple_0-0-0") == "live_simple"


# ---------------------------------------------------------------- BFCL checker alignment


def test_bfcl_tasks_count_calls_exactly(bfcl):
    assert {t.extra_calls for t in bfcl.tasks.values()} == {"forbid"}


def test_schema_defaults_are_documentation_only(fixtures, write_jsonl):
    """BFCL's checker never fills a default: an omitted argument is missing unless "" allows it."""
    questions = _lines(fixtures / "bfcl_questions.jsonl")[:1]
    questions[0]["function"][0]["parameters"]["properties"]["unit"]["default"] = "units"
    tasks = load_tasks(write_jsonl("q.jsonl", questions), fmt="bfcl", reference=fixtures / "bfcl_possible_answers.jsonl")
    unit = tasks.tasks["simple_0"].tool("calculate_triangle_area").param_schema("unit")
    assert "default" not in unit and unit["x-bfcl-default"] == "units"


def test_required_parameter_is_never_optional(fixtures, write_jsonl):
    """BFCL checks the schema's required list before the possible answer's "" marker."""
    answers = [{"id": "simple_0", "ground_truth": [{"calculate_triangle_area": {"base": [10, ""], "height": [5], "unit": ["units", ""]}}]}]
    questions = _lines(fixtures / "bfcl_questions.jsonl")[:1]
    tasks = load_tasks(write_jsonl("q.jsonl", questions), fmt="bfcl", reference=write_jsonl("a.jsonl", answers))
    rules = tasks.tasks["simple_0"].turns[0].reference_calls[0].argument_rules
    assert rules["base"] == ArgumentRule(any_of=[10], optional=False)  # required by the schema
    assert rules["unit"].optional  # not required: "" lets it be omitted
    assert not tasks.warnings


def test_empty_acceptable_values_is_a_warning_not_an_error(fixtures, write_jsonl):
    answers = [{"id": "simple_0", "ground_truth": [{"calculate_triangle_area": {"base": [10], "height": [], "unit": ["units", ""]}}]}]
    questions = _lines(fixtures / "bfcl_questions.jsonl")[:1]
    apath = write_jsonl("a.jsonl", answers)
    tasks = load_tasks(write_jsonl("q.jsonl", questions), fmt="bfcl", reference=apath)
    assert not tasks.errors
    rule = tasks.tasks["simple_0"].turns[0].reference_calls[0].argument_rules["height"]
    assert rule.any_value and rule.optional
    (warning,) = tasks.warnings
    assert (warning.kind, warning.file, warning.line) == ("empty_acceptable_values", str(apath), 1)
    assert warning.field == "ground_truth[0].calculate_triangle_area.height" and "simple_0" in warning.message


@pytest.mark.parametrize(
    ("change", "kind", "field", "said"),
    [
        (lambda p: p.update(required=[["base"]]), "invalid_field", "function[0].parameters.required", "required must be a list of parameter names"),
        (lambda p: p.update(required="base"), "invalid_field", "function[0].parameters.required", "required must be a list of parameter names"),
        (lambda p: p.update(properties=["base"]), "invalid_field", "function[0].parameters.properties", "properties must be an object"),
        (lambda p: p.update(type={"dict": 1}), "unsupported", "function[0].parameters.type", "BFCL type {'dict': 1} is not supported"),
    ],
)
def test_a_schema_of_the_wrong_shape_names_its_field(fixtures, tmp_path, change, kind, field, said):
    """Found by mutating the real BFCL files: these crashed the run (unhashable values in set lookups)."""
    questions = _lines(fixtures / "bfcl_questions.jsonl")
    change(questions[0]["function"][0]["parameters"])
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in questions))
    before = load_tasks(fixtures / "bfcl_questions.jsonl", reference=fixtures / "bfcl_possible_answers.jsonl")
    tasks = load_tasks(path, reference=fixtures / "bfcl_possible_answers.jsonl")
    error, *rest = tasks.errors
    assert (error.kind, error.file, error.line, error.field) == (kind, str(path), 1, field)
    assert said in error.message
    assert len(rest) == len(before.errors) and len(tasks.tasks) == len(before.tasks) - 1  # the rest read as before
