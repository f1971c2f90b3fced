"""Our argument matching agrees with BFCL's AST checker wherever both implement the same rules.

Hypothesis generates a BFCL function schema, a BFCL possible answer and a model call; the possible
answer is converted into our ``ReferenceCall``/``ArgumentRule`` the way BFCL ingestion does, and
``compare_argument`` plus the name-level rules must give the same pass/fail as the re-implemented
reference checker (``bfcl_reference_checker``).

Deliberate differences, kept out of the generated space (our rule is the documented one):
- dates: we compare ISO-date strings as dates, BFCL as normalised text -> generated strings have
  no digits;
- tolerances, unordered lists, exact strings: BFCL has none -> never set;
- an explicit ``""`` (or any string that normalises to ``""``) for an omittable parameter or dict
  key: BFCL accepts it (``""`` is its omission marker), we require omission -> model strings
  always contain a letter;
- BFCL converts int -> float only at the top level; inside lists it is a type error (unless the
  parameter is omittable, where the nested check passes vacuously); we accept 3 for 3.0 anywhere
  -> list elements are generated with exactly their item type;
- inside dicts BFCL compares with ``in`` (so ``True == 1``), we never equate booleans and numbers
  -> no booleans inside dicts;
- a tuple for an ``array`` parameter is a BFCL type error; we treat tuples as lists -> tuples
  only for ``tuple`` parameters;
- BFCL's "variable" possible answers (a string for an integer parameter) -> possible answers
  always have the declared type;
- lists of dicts (BFCL accepts an empty list for an omittable one) -> not generated;
- likewise an empty list for any omittable list parameter: BFCL's list checker iterates the
  omission marker ``""`` as an empty list and accepts ``[]``; we require omission -> excluded.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from judge import ArgumentRule, ReferenceCall
from pipelines.matching import MISSING, compare_argument
from tests.matching import bfcl_reference_checker as bfcl

SCALARS = ("string", "integer", "float", "boolean")
ITEM_TYPES = ("string", "integer", "float")

# ---------------------------------------------------------------- conversion (BFCL -> ours)


def json_schema(bfcl_param: dict, *, strict_numbers: bool = True) -> dict:
    """A BFCL parameter description as the JSON Schema our tool specs carry (``x-bfcl-type``
    keeps BFCL's own type where JSON Schema has none: float, tuple, dict, BFCL-strict integer)."""
    kind = bfcl_param["type"]
    if kind == "string":
        return {"type": "string"}
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "integer":
        return {"type": "integer", "x-bfcl-type": "integer"} if strict_numbers else {"type": "integer"}
    if kind == "float":
        return {"type": "number", "x-bfcl-type": "float"}
    if kind in ("array", "tuple"):
        schema = {"type": "array", "items": json_schema(bfcl_param["items"])}
        if kind == "tuple":
            schema["x-bfcl-type"] = "tuple"
        return schema
    if kind == "dict":
        # BFCL type-checks nothing inside a dict (values compared with ``in``): plain JSON Schema.
        props = {k: json_schema(v, strict_numbers=False) for k, v in bfcl_param["properties"].items()}
        return {"type": "object", "x-bfcl-type": "dict", "properties": props}
    raise AssertionError(kind)


_OMIT = object()


def _expand_dict_answer(answer: dict) -> list[dict]:
    """A BFCL dict possible answer ``{key: [values, maybe ""]}`` as the concrete dicts it accepts."""
    keys = sorted(answer)
    choices = [[v for v in answer[k] if v != ""] + ([_OMIT] if "" in answer[k] else []) for k in keys]
    return [{k: v for k, v in zip(keys, combo, strict=True) if v is not _OMIT} for combo in itertools.product(*choices)]


def to_reference(func: dict, possible: dict) -> ReferenceCall:
    """BFCL ingestion: first non-"" value -> argument, any_of = all non-"" values, optional = ""
    present, ``[""]`` only -> absent + optional + any_of=[]; dict answers expanded to concrete dicts."""
    arguments: dict[str, Any] = {}
    rules: dict[str, ArgumentRule] = {}
    props = func["parameters"]["properties"]
    for param, values in possible.items():
        accepted = [v for v in values if v != ""]
        if props.get(param, {}).get("type") == "dict":
            accepted = [d for answer in accepted for d in _expand_dict_answer(answer)]
        if accepted:
            arguments[param] = accepted[0]
        rules[param] = ArgumentRule(any_of=accepted, optional="" in values)
    return ReferenceCall(name=func["name"], arguments=arguments, argument_rules=rules)


def ours_valid(func: dict, call: dict, reference: ReferenceCall) -> bool:
    """Name-level rules (as the checks stage applies them) + ``compare_argument`` per parameter."""
    props = func["parameters"]["properties"]
    if any(p not in call for p in func["parameters"]["required"]):
        return False  # missing required
    if any(p not in props or p not in reference.argument_rules for p in call):
        return False  # unexpected parameter
    for param, rule in reference.argument_rules.items():
        expected = reference.arguments.get(param, MISSING)
        if not compare_argument(expected, call.get(param, MISSING), rule, json_schema(props[param])).ok:
            return False
    return True


# ---------------------------------------------------------------- generation

_LETTERS = "abcAB"
_NOISE = " ,./-_*^"
words = st.text(alphabet=_LETTERS + " ,.-_'\"x", min_size=1, max_size=6).filter(lambda s: any(c.isalpha() for c in s))
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
    return {"type": kind}


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
    if kind == "dict":
        if mode == "accepted" and usable:
            answer = draw(st.sampled_from(usable))
            value = {}
            for key, vals in answer.items():
                if "" in vals and draw(st.booleans()):
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
    assume(not any(v in ([], ()) and "" in possible_answer["f"].get(p, []) for p, v in model_output["f"].items()))
    theirs = bfcl.simple_function_checker(func, model_output, possible_answer)
    ours = ours_valid(func, model_output["f"], to_reference(func, possible_answer["f"]))
    assert ours == theirs.valid, (theirs.error_type, theirs.errors)


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


def test_conversion_of_possible_answers():
    func = {"name": "f", "parameters": {"type": "dict", "properties": {
        "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "dict", "properties": {"k": {"type": "integer"}}},
    }, "required": []}}  # fmt: skip
    ref = to_reference(func, {"a": [1, 2, ""], "b": [""], "c": [{"k": [1, ""]}]})
    assert ref.arguments == {"a": 1, "c": {"k": 1}}
    assert ref.argument_rules["a"] == ArgumentRule(any_of=[1, 2], optional=True)
    assert ref.argument_rules["b"] == ArgumentRule(any_of=[], optional=True)
    assert ref.argument_rules["c"].any_of == [{"k": 1}, {}]


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
