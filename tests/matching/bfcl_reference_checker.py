"""An independent re-implementation of BFCL's AST checker for one Python function call.

Follows ``simple_function_checker`` and its helpers (``type_checker``, ``standardize_string``,
``string_checker``, ``list_checker``, ``dict_checker``, ``list_dict_checker``) in
ShishirPatil/gorilla, file
``berkeley-function-call-leaderboard/bfcl/eval_checker/ast_eval/ast_checker.py`` at commit
32d6e6522b221aeba9cbda260ae3f9153b5a2222 (read for this purpose; written anew here, Python
language only; the model-specific function-name conversion ``convert_func_name`` as a flag). It is a test oracle: our
``compare_argument`` must agree with it on the rule set both implement (test_bfcl_agreement.py).

The quirks are kept on purpose, because they are what the leaderboard does:
- ``int`` is converted to ``float`` only for a top-level ``float`` parameter;
- the nested type check of a list passes vacuously when a possible answer is not a list (the
  ``""`` omission marker), and inside dicts values are compared with ``in`` (so ``True == 1``);
- an explicit ``""`` is accepted for an omittable string parameter (it standardises to ``""``);
- a possible answer whose type differs from the declared type marks a "variable", compared with
  plain equality.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
NESTED_TYPES = ("array", "tuple")
_STANDARDIZE = re.compile(r"[ \,\.\/\-\_\*\^]")


@dataclass
class Result:
    valid: bool
    error_type: str = ""
    errors: list[str] = field(default_factory=list)
    is_variable: bool = False


def standardize(text: str) -> str:
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


def _first_answer_type(possible: list) -> type | None:
    return next((type(answer) for answer in possible if answer != ""), None)


def check_type(value: Any, possible: list, expected: type, nested: type | None) -> Result:
    answer_type = _first_answer_type(possible)
    is_variable = answer_type is not None and answer_type is not expected
    if type(value) is expected:
        if nested is None:
            return Result(True, is_variable=is_variable)
        for answer in possible:
            ok = True
            if type(answer) is list:
                ok = all(check_type(item, answer, nested, None).valid for item in value)
            if ok:
                return Result(True, is_variable=is_variable)
        return Result(False, "type_error:nested")
    if answer_type is not None and type(value) is answer_type:
        return Result(True, is_variable=True)
    return Result(False, "type_error:simple", [f"got {type(value).__name__}"])


def check_string(value: str, possible: list) -> Result:
    accepted = [standardize(answer) for answer in possible if type(answer) is str]
    return Result(True) if standardize(value) in accepted else Result(False, "value_error:string")


def check_list(value: list, possible: list) -> Result:
    def std(items: list) -> list:
        return [standardize(item) if type(item) is str else item for item in items]

    accepted = [std(answer) for answer in possible]
    return Result(True) if std(list(value)) in accepted else Result(False, "value_error:list/tuple")


def check_dict(value: dict, possible: list) -> Result:
    result = Result(False, "dict_checker:unclear")
    for answer in possible:
        if answer == "":
            continue
        result = Result(False, "dict_checker:unclear")
        ok = True
        for key, item in value.items():
            if key not in answer:
                result, ok = Result(False, "value_error:dict_key"), False
                break
            std_item = standardize(item) if type(item) is str else item
            accepted = [standardize(a) if type(a) is str else a for a in answer[key]]
            if std_item not in accepted:
                result, ok = Result(False, "value_error:dict_value"), False
                break
        for key, accepted in answer.items():
            if key not in value and "" not in accepted:
                result, ok = Result(False, "value_error:dict_key"), False
                break
        if ok:
            return Result(True)
    return result


def check_list_of_dicts(value: list, possible: list) -> Result:
    result = Result(False, "list_dict_checker:unclear")
    for answer in possible:
        if len(value) != len(answer):
            result = Result(False, "value_error:list_dict_count")
            continue
        ok = True
        for item, expected in zip(value, answer, strict=True):
            result = check_dict(item, [expected])
            if not result.valid:
                ok = False
                break
        if ok:
            return Result(True)
    return result


def simple_function_checker(func_description: dict, model_output: dict, possible_answer: dict, underscore_to_dot: bool = False) -> Result:
    """``model_output`` is ``{name: {param: value}}``; ``possible_answer`` ``{name: {param: [values]}}``.
    ``underscore_to_dot``: the model is an FC model BFCL flags so (``convert_func_name``: OpenAI-style
    APIs refuse ``.`` in a name, so the expected name is compared with ``.`` -> ``_``)."""
    possible = next(iter(possible_answer.values()))
    name = func_description["name"]
    if underscore_to_dot and "." in name:
        name = re.sub(r"\.", "_", name)
    properties = func_description["parameters"]["properties"]
    required = func_description["parameters"]["required"]
    if name not in model_output:
        return Result(False, "simple_function_checker:wrong_func_name")
    params = model_output[name]
    for param in required:
        if param not in params:
            return Result(False, "simple_function_checker:missing_required", [param])
    for param, value in params.items():
        if param not in properties or param not in possible:
            return Result(False, "simple_function_checker:unexpected_param", [param])
        type_name = properties[param]["type"]
        expected = PYTHON_TYPES[type_name]
        nested = PYTHON_TYPES[properties[param]["items"]["type"]] if type_name in NESTED_TYPES else None
        if type_name == "tuple" and type(value) is tuple:
            value = list(value)
        if type_name == "float" and type(value) is int:
            value = float(value)
        typed = check_type(value, possible[param], expected, nested)
        if not typed.valid:
            return typed
        if not typed.is_variable:
            if expected is dict:
                result = check_dict(value, possible[param])
            elif expected is list and nested is dict:
                result = check_list_of_dicts(value, possible[param])
            elif expected is str:
                result = check_string(value, possible[param])
            elif expected is list:
                result = check_list(value, possible[param])
            else:
                result = None
            if result is not None:
                if not result.valid:
                    return result
                continue
        if value not in possible[param]:
            return Result(False, "value_error:others", [param])
    for param, accepted in possible.items():
        if param not in params and "" not in accepted:
            return Result(False, "simple_function_checker:missing_optional", [param])
    return Result(True)
