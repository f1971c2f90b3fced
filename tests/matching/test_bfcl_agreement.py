"""Our BFCL ingestion + call matching agree with BFCL's AST checker wherever both implement the same rules.

Hypothesis generates a BFCL function schema, a BFCL possible answer and a model call. The question
and possible answer go through our real BFCL task reader (``pipelines.ingest._bfcl.build_task``)
and the call through ``diff_call`` (name rules) and ``compare_argument`` (values), exactly as
grading runs them; the verdict must equal the re-implemented reference checker's
(``bfcl_reference_checker``).

Rules aligned with BFCL on purpose (and so generated): an int for a top-level float but not inside a
float list; a float never for an integer; schema defaults never filled; a schema-required parameter
never excused by ``""``; the ``""`` marker itself accepted for an omittable string parameter or dict
key; strings compared as BFCL standardises them (date-like text included).

Deliberate differences, kept out of the generated space (our rule is the documented one):
- tolerances, unordered lists, exact strings: BFCL has none -> never set;
- an int item of a float list for an *omittable* parameter: BFCL's nested type check passes
  vacuously there (it iterates the ``""`` marker), we keep it a type error -> not generated;
- inside dicts BFCL compares with ``in`` (so ``True == 1``), we never equate booleans and numbers
  -> no booleans inside dicts;
- a tuple for an ``array`` parameter is a BFCL type error; we treat tuples as lists -> tuples
  only for ``tuple`` parameters;
- BFCL's "variable" possible answers (a string for an integer parameter) -> possible answers
  always have the declared type;
- a schema-required non-string parameter whose possible answer is only ``[""]``: no output passes
  BFCL's checker; we read it as omittable (with a warning: a broken answer) -> excluded;
- lists of dicts (BFCL accepts an empty list for an omittable one) -> not generated;
- likewise an empty list for any omittable list parameter: BFCL's list checker iterates the
  omission marker ``""`` as an empty list and accepts ``[]``; we require omission -> excluded.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from judge import Step
from pipelines.checks._diff import diff_call
from pipelines.ingest._bfcl import build_task
from tests.matching import bfcl_reference_checker as bfcl

SCALARS = ("string", "integer", "float", "boolean")
ITEM_TYPES = ("string", "integer", "float")

# ---------------------------------------------------------------- ours: the real ingestion and matcher


def as_task(func: dict, possible: dict):
    """The BFCL question + possible answer as our task, through the real BFCL reader."""
    question = {"id": "simple_0", "question": [[{"role": "user", "content": "q"}]], "function": [func]}
    return build_task(question, {"id": "simple_0", "ground_truth": [{func["name"]: possible}]})


def ours_valid(func: dict, call: dict, possible: dict) -> bool:
    task = as_task(func, possible)
    (reference,) = task.turns[0].reference_calls
    return diff_call(reference, Step(name=func["name"], arguments=call, status="unknown"), task.tool(func["name"])).matches


# ---------------------------------------------------------------- generation

_LETTERS = "abcAB"
_NOISE = " ,./-_*^"
_DATES = ["2024-01-05", "2024-1-5", "2024-01-05T00:00:00", "January 5, 2024", "05/01/2024"]
words = st.one_of(
    st.text(alphabet=_LETTERS + "12 ,.-_'\"x", min_size=1, max_size=6).filter(lambda s: any(c.isalnum() for c in s)),
    st.sampled_from(_DATES),  # date-like text: BFCL compares it as text, so do we on BFCL schemas
)
small_floats = st.sampled_from([0.5, 1.0, 2.5, -1.5, 3.0, 0.25])
small_ints = st.integers(-3, 3)


def value_of(kind: str, items: str | None = None) -> st.SearchStrategy:
    if kind == "string":
        return words
    if kind == "integer":
        return small_ints
    if kind == "float":
        return small_floats
    if kind == "boolean":
        return st.booleans()
    if kind in ("array", "tuple"):
        return st.lists(value_of(items), max_size=3)
    raise AssertionError(kind)


@st.composite
def bfcl_param(draw) -> dict:
    kind = draw(st.sampled_from(SCALARS + ("array", "tuple", "dict")))
    if kind in ("array", "tuple"):
        return {"type": kind, "items": {"type": draw(st.sampled_from(ITEM_TYPES))}}
    if kind == "dict":
        keys = draw(st.lists(st.sampled_from("klm"), min_size=1, max_size=3, unique=True))
        return {"type": "dict", "properties": {k: {"type": draw(st.sampled_from(ITEM_TYPES))} for k in keys}}
    param: dict[str, Any] = {"type": kind}
    if draw(st.integers(0, 3)) == 0:
        param["default"] = draw(value_of(kind))  # documentation to BFCL: never filled in
    return param


@st.composite
def possible_values(draw, param: dict) -> list:
    """BFCL's acceptable-value list for one parameter, maybe with the "" omission marker."""
    kind = param["type"]
    if kind == "dict":

        def dict_answer() -> dict:
            answer = {}
            for key, sub in param["properties"].items():
                vals = draw(st.lists(value_of(sub["type"]), min_size=1, max_size=2))
                answer[key] = vals + ([""] if draw(st.booleans()) else [])
            return answer

        values: list = [dict_answer() for _ in range(draw(st.integers(0, 2)))]
    else:
        values = draw(st.lists(value_of(kind, param.get("items", {}).get("type")), max_size=3))
    if not values or draw(st.booleans()):
        values.append("")
    return values


def perturb_string(draw, s: str) -> str:
    """Same BFCL-normalised string, written differently (case, spaces and ,./-_*^ inserted)."""
    out = []
    for ch in s:
        if draw(st.booleans()):
            out.append(draw(st.sampled_from(_NOISE)))
        out.append(ch.swapcase() if draw(st.booleans()) else ch)
    return "".join(out)


WRONG_TYPES = ["3", 3, 3.0, 2.5, True, [1], {"k": 1}, "abc"]


@st.composite
def model_value(draw, param: dict, accepted: list) -> Any:
    kind = param["type"]
    mode = draw(st.sampled_from(["accepted", "accepted", "fresh", "wrong_type"]))
    usable = [v for v in accepted if v != ""]
    if mode == "wrong_type":
        return draw(st.sampled_from(WRONG_TYPES))
    if kind == "string" and draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from(["", " ", "-_", "x"]))  # the "" marker, spelt in ways BFCL standardises to it
    if kind == "dict":
        if mode == "accepted" and usable:
            answer = draw(st.sampled_from(usable))
            value = {}
            for key, vals in answer.items():
                if "" in vals and draw(st.booleans()):
                    if draw(st.booleans()):
                        value[key] = ""  # the marker given explicitly
                    continue
                value[key] = draw(st.sampled_from([v for v in vals if v != ""]))
        else:
            value = {k: draw(value_of(sub["type"])) for k, sub in param["properties"].items() if draw(st.booleans())}
        if draw(st.integers(0, 5)) == 0:
            value["zz"] = 1  # a key the answer does not know
        return {k: perturb_string(draw, v) if isinstance(v, str) else v for k, v in value.items()}
    value = draw(st.sampled_from(usable)) if mode == "accepted" and usable else draw(value_of(kind, param.get("items", {}).get("type")))
    if isinstance(value, str):
        return perturb_string(draw, value)
    if kind == "float" and isinstance(value, float) and value == int(value) and draw(st.booleans()):
        return int(value)  # BFCL's int-for-float
    if kind == "integer" and draw(st.integers(0, 4)) == 0:
        return float(value)  # a float for an integer: BFCL type error
    if kind in ("array", "tuple"):
        value = [perturb_string(draw, v) if isinstance(v, str) else v for v in value]
        if param["items"]["type"] == "float" and draw(st.booleans()):
            value = [int(v) if isinstance(v, float) and v == int(v) else v for v in value]  # ints in a float list
        if kind == "tuple" and draw(st.booleans()):
            return tuple(value)
    return value


@st.composite
def bfcl_case(draw) -> tuple[dict, dict, dict]:
    n = draw(st.integers(1, 4))
    params = {f"p{i}": draw(bfcl_param()) for i in range(n)}
    required = [p for p in params if draw(st.booleans())]
    func = {"name": "f", "parameters": {"type": "dict", "properties": params, "required": required}}
    possible = {p: draw(possible_values(spec)) for p, spec in params.items() if draw(st.integers(0, 5)) > 0}
    call: dict[str, Any] = {}
    for p, spec in params.items():
        if draw(st.integers(0, 4)) == 0:
            continue  # omitted
        call[p] = draw(model_value(spec, possible.get(p, [])))
    if draw(st.integers(0, 6)) == 0:
        call["extra"] = 1
    return func, {"f": call}, {"f": possible}


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(bfcl_case())
def test_agrees_with_bfcl_reference_checker(case):
    func, model_output, possible_answer = case
    possible, call, props = possible_answer["f"], model_output["f"], func["parameters"]["properties"]
    assume(not any(v in ([], ()) and "" in possible.get(p, []) for p, v in call.items()))
    assume(not any(_int_in_float_list(props.get(p), v) and "" in possible.get(p, []) for p, v in call.items()))
    required = func["parameters"]["required"]
    assume(not any(possible.get(p) == [""] and props[p]["type"] != "string" for p in required))
    theirs = bfcl.simple_function_checker(func, model_output, possible_answer)
    ours = ours_valid(func, call, possible)
    assert ours == theirs.valid, (theirs.error_type, theirs.errors)


def _int_in_float_list(param: dict | None, value: Any) -> bool:
    if not param or param.get("type") not in ("array", "tuple") or param["items"]["type"] != "float":
        return False
    return isinstance(value, (list, tuple)) and any(type(v) is int for v in value)


# ---------------------------------------------------------------- the oracle itself


def test_reference_checker_on_known_bfcl_cases():
    func = {
        "name": "calc",
        "parameters": {
            "type": "dict",
            "properties": {
                "city": {"type": "string"},
                "radius": {"type": "float"},
                "units": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["city", "radius"],
        },
    }
    possible = {"calc": {"city": ["New York", "NYC"], "radius": [5.0], "units": ["km", ""], "tags": [["a b"], ""]}}
    check = bfcl.simple_function_checker
    assert check(func, {"calc": {"city": "new-york", "radius": 5}}, possible).valid
    assert check(func, {"calc": {"city": "N.Y.C.", "radius": 5.0, "tags": ["A_B"]}}, possible).valid
    assert check(func, {"calc": {"city": "Boston", "radius": 5.0}}, possible).error_type == "value_error:string"
    assert check(func, {"calc": {"radius": 5.0}}, possible).error_type == "simple_function_checker:missing_required"
    wrong = check(func, {"calc": {"city": "NYC", "radius": "5"}}, possible)
    assert wrong.error_type == "type_error:simple"
    extra = check(func, {"calc": {"city": "NYC", "radius": 5.0, "zoom": 1}}, possible)
    assert extra.error_type == "simple_function_checker:unexpected_param"
    assert bfcl.standardize("April 1, 2024") == bfcl.standardize("april 1 2024") == "april12024"
    assert bfcl.standardize("it's") == 'it"s'


def test_known_bfcl_verdicts_through_our_pipeline():
    """Cases BFCL decides against a lenient reading, on the real sample's schemas (simple_5, simple_13)."""
    quad = {"name": "solve_quadratic", "parameters": {"type": "dict", "properties": {
        "a": {"type": "integer"}, "root_type": {"type": "string", "default": "all"},
    }, "required": ["a"]}}  # fmt: skip
    assert not ours_valid(quad, {"a": 3}, {"a": [3], "root_type": ["all"]})  # missing_optional: no default filling
    assert ours_valid(quad, {"a": 3}, {"a": [3], "root_type": ["all", ""]})
    assert ours_valid(quad, {"a": 3, "root_type": ""}, {"a": [3], "root_type": ["all", ""]})  # the marker itself
    curve = {"name": "area", "parameters": {"type": "dict", "properties": {
        "interval": {"type": "array", "items": {"type": "float"}}, "scale": {"type": "float"},
    }, "required": ["interval"]}}  # fmt: skip
    assert not ours_valid(curve, {"interval": [1, 3]}, {"interval": [[1.0, 3.0]]})  # type_error:nested
    assert ours_valid(curve, {"interval": [1.0, 3.0], "scale": 2}, {"interval": [[1.0, 3.0]], "scale": [2.0]})  # top-level int ok
    assert not ours_valid(curve, {"interval": [1.0, 3.0]}, {"interval": [[1.0, 3.0], ""], "scale": [2.0]})  # required, no default
    when = {"name": "book", "parameters": {"type": "dict", "properties": {"date": {"type": "string"}}, "required": ["date"]}}
    assert not ours_valid(when, {"date": "2024-01-05T00:00:00"}, {"date": ["2024-01-05"]})  # text, not dates
    assert ours_valid(when, {"date": "2024/01/05"}, {"date": ["2024-01-05"]})  # standardised text


def test_generated_space_reaches_both_outcomes():
    """The agreement property is only meaningful if both valid and invalid calls are generated."""
    seen: set[bool] = set()
    errors: set[str] = set()

    @settings(max_examples=300, deadline=None, derandomize=True, database=None)
    @given(bfcl_case())
    def collect(case):
        result = bfcl.simple_function_checker(*case)
        seen.add(result.valid)
        errors.add(result.error_type.split(":")[0])

    collect()
    assert seen == {True, False}
    assert {"type_error", "value_error", "simple_function_checker"} <= errors
