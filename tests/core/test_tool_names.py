"""Sanitised tool names (``judge.core._tool_names``): the rewrite, and what a called name means."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from judge import MAX_TOOL_NAME, Step, Task, ToolNames, sanitise_tool_name

API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what OpenAI / Anthropic accept


def test_sanitising_replaces_every_character_the_apis_reject_and_cuts_to_64():
    assert sanitise_tool_name("math.factorial") == "math_factorial"
    assert sanitise_tool_name("a b/c:d-e_f9") == "a_b_c_d-e_f9"
    assert sanitise_tool_name("天气.查询") == "_____"
    assert sanitise_tool_name("x" * 70) == "x" * MAX_TOOL_NAME
    assert sanitise_tool_name("") == "_"


@given(st.text(max_size=80))
def test_a_sanitised_name_is_always_one_the_apis_accept_and_sanitising_is_idempotent(name):
    clean = sanitise_tool_name(name)
    assert API_NAME.match(clean)
    assert sanitise_tool_name(clean) == clean


@given(st.text(alphabet="abcXY019_-.", min_size=1, max_size=64))
def test_bfcls_dot_to_underscore_rule_is_covered(name):
    """BFCL's checker (``convert_func_name``) compares an FC model's call with ``re.sub(r"\\.", "_", name)``;
    on BFCL's names (letters, digits, ``_ - .``) that is exactly our rewrite."""
    assert sanitise_tool_name(name) == re.sub(r"\.", "_", name)


def test_a_sanitised_name_means_the_one_tool_that_sanitises_to_it():
    names = ToolNames(["math.factorial", "math.hypot", "get_weather"])
    assert names.resolve("math_factorial") == "math.factorial"
    assert names.resolve("math_hypot") == "math.hypot"
    assert names.resolve("get_weather") == "get_weather"
    assert names.resolve("math_sqrt") == "math_sqrt"  # no tool sanitises to it: unknown, as written
    assert names.resolve("math-factorial") == "math-factorial"  # only the sanitised form itself matches


def test_an_ambiguous_sanitised_name_stays_as_written():
    names = ToolNames(["a.b", "a/b", "c.d"])
    assert names.resolve("a_b") == "a_b"  # two tools sanitise to it: no guess
    assert names.resolve("c_d") == "c.d"


def test_an_exact_name_always_wins_over_a_sanitised_one():
    names = ToolNames(["a.b", "a_b"])
    assert names.resolve("a_b") == "a_b"
    assert names.resolve("a.b") == "a.b"


def test_a_name_cut_to_64_characters_means_its_long_tool():
    long = "pkg." + "x" * 70
    assert ToolNames([long]).resolve(sanitise_tool_name(long)) == long


def test_a_step_is_copied_under_the_name_it_means_never_changed():
    names = ToolNames(["math.factorial"])
    recorded = Step(name="math_factorial", arguments={"number": 5}, status="unknown")
    read = names.resolve_step(recorded)
    assert (read.name, read.arguments, read.status) == ("math.factorial", {"number": 5}, "unknown")
    assert recorded.name == "math_factorial"
    exact = Step(name="math.factorial")
    assert names.resolve_step(exact) is exact


def test_a_tasks_known_tools_are_its_specs_else_its_reference_calls():
    with_specs = Task.model_validate(
        {
            "task_id": "t",
            "question": "q",
            "tools": [{"name": "math.factorial"}, {"name": "math.hypot"}],
            "reference_calls": [{"name": "math.factorial", "arguments": {"number": 5}}],
        }
    )
    assert with_specs.tool_names.known == {"math.factorial", "math.hypot"}
    assert with_specs.tool_names.resolve("math_hypot") == "math.hypot"  # a declared tool, though no reference calls it
    no_specs = Task.model_validate(
        {
            "task_id": "t",
            "turns": [
                {"turn_id": "1", "query": "q", "reference_calls": [{"name": "math.factorial"}]},
                {"turn_id": "2", "query": "q2", "reference_calls": [{"name": "geo.distance"}]},
            ],
        }
    )
    assert no_specs.tool_names.known == {"math.factorial", "geo.distance"}
    assert no_specs.tool_names.resolve("geo_distance") == "geo.distance"
