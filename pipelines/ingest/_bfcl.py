"""BFCL (Berkeley function-calling leaderboard) single-turn tasks: question file + possible answers.

Question: ``{id, question: [[{role, content}, ...]], function: [{name, description, parameters}]}``.
Possible answer (the reference file): ``{id, ground_truth: [{func_name: {param: [acceptable...]}}]}``.

- BFCL parameter types become JSON Schema (dict->object, float->number, tuple->array, any->{}),
  the original kept as ``"x-bfcl-type"`` in each converted schema (the matcher accepts an int for
  a top-level float parameter, not inside a list, and compares strings as BFCL standardises them).
  Other types (Java / JavaScript categories) are ``unsupported``. A ``default`` is kept as
  ``"x-bfcl-default"``: BFCL's checker never fills defaults (an omitted argument is missing unless
  its possible answer lists ``""``), so the matcher must not either.
- Each ground-truth entry is a ReferenceCall: ``arguments`` = the first acceptable non-"" value,
  ``argument_rules[p] = ArgumentRule(any_of=<all non-"" values>, optional=("" in values))``;
  ``[""]`` alone means the argument may only be omitted (absent, ``optional=True, any_of=[]``).
  As in BFCL's checker: a parameter the schema requires is never optional (its ``""`` does not
  excuse omission); for a string parameter (and a key of a dict answer) the ``""`` marker is also
  an acceptable value (BFCL compares the standardised text, and ``""`` is among the answers).
  An empty acceptable-value list constrains nothing, and a required non-string parameter whose
  answer is ``[""]`` stays omittable; both are reported as warnings (BFCL's checker would fail every
  output on them: a broken possible answer, not a model error).
- Every task has ``extra_calls="forbid"``: BFCL counts calls exactly (a wrong number of calls fails).
- Nested possible answers (dicts of acceptable-value lists, also inside lists) are expanded into
  concrete alternatives by cartesian product, at most 256 per parameter (beyond: ``unsupported``).
- Parallel calls get no ``depends_on`` (order free); ``gold_answers=None`` (call-only task).
- Multi-turn entries (several question turns, ``initial_config`` / ``involved_classes``) are
  ``unsupported``; so are questions without a possible answer (irrelevance/relevance categories).
"""

from __future__ import annotations

import itertools
from typing import Any

from pydantic import ValidationError

from judge import ArgumentRule, ReferenceCall, Task, TaskMetadata, ToolSpec, Turn, canonical_json
from pipelines.ingest._base import ItemError, Limits, TaskCollector, TaskFormat, TaskSet, as_id, expect, guarded, short, validation_error
from pipelines.ingest._join import JoinSpec, join

MAX_ALTERNATIVES = 256
_TYPES = {"string": "string", "integer": "integer", "float": "number", "boolean": "boolean", "array": "array", "tuple": "array", "dict": "object", "any": None}
_OMIT = object()


class _TooMany(Exception):
    pass


def _sniff(item: dict[str, Any]) -> bool:
    return "id" in item and "question" in item and ("function" in item or "initial_config" in item or "involved_classes" in item)


def _id(item: dict[str, Any]) -> str:
    uid = as_id(item.get("id"))
    if uid is None:
        raise ItemError("invalid_field", "id must be a non-empty string", "id")
    return uid


def category(task_id: str) -> str:
    """BFCL's category is the id without its trailing index: simple_3 -> simple, live_simple_0-0-0 -> live_simple."""
    head, _, tail = task_id.rpartition("_")
    return head if head and tail[:1].isdigit() else task_id


def convert_schema(schema: Any, path: str) -> Any:
    """A BFCL parameter schema as JSON Schema, keeping the BFCL type under ``x-bfcl-type``."""
    expect(schema, dict, path, "a parameter schema")
    out = dict(schema)
    if "default" in out:  # documentation only: BFCL's checker never fills defaults
        out["x-bfcl-default"] = out.pop("default")
    if "type" in schema:
        kind = schema["type"]
        if not isinstance(kind, str) or kind not in _TYPES:
            raise ItemError("unsupported", f"BFCL type {short(kind)} is not supported (supported: {sorted(_TYPES)})", f"{path}.type")
        out["x-bfcl-type"] = kind
        if _TYPES[kind] is None:
            del out["type"]
        else:
            out["type"] = _TYPES[kind]
    required = schema.get("required")
    if required is not None and not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
        raise ItemError("invalid_field", f"required must be a list of parameter names, got {short(required)}", f"{path}.required")
    if "properties" in schema and not isinstance(schema["properties"], dict):
        raise ItemError("invalid_field", f"properties must be an object, got {short(schema['properties'])}", f"{path}.properties")
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {name: convert_schema(sub, f"{path}.properties.{name}") for name, sub in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = convert_schema(schema["items"], f"{path}.items")
    return out


def _tool(spec: Any, path: str) -> dict[str, Any]:
    expect(spec, dict, path, "a function")
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ItemError("invalid_field", "a function needs a non-empty string name", f"{path}.name")
    tool: dict[str, Any] = {"name": name, "description": spec.get("description") or ""}
    if not isinstance(tool["description"], str):
        raise ItemError("invalid_field", "description must be a string", f"{path}.description")
    if spec.get("parameters") is not None:
        tool["parameters"] = convert_schema(spec["parameters"], f"{path}.parameters")
    return tool


def _query(question: Any) -> str:
    expect(question, list, "question", "question")
    if not question:
        raise ItemError("invalid_field", "question must hold one turn", "question")
    if len(question) > 1:
        raise ItemError("unsupported", f"multi-turn BFCL entries ({len(question)} question turns) are not supported", "question")
    messages = expect(question[0], list, "question[0]", "a question turn")
    texts = []
    for i, message in enumerate(messages):
        expect(message, dict, f"question[0][{i}]", "a message")
        if message.get("role") == "user":
            texts.append(expect(message.get("content"), str, f"question[0][{i}].content", "content"))
    if not texts:
        raise ItemError("invalid_field", "the question has no user message", "question[0]")
    return "\n".join(texts)


def _expand(value: Any) -> list[Any]:
    """Concrete alternatives of one acceptable value (nested dict answers expanded). A dict key
    whose values include ``""`` may be omitted or given as ``""`` (BFCL's dict checker accepts both)."""
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        keys = list(value)
        options = []
        for key in keys:
            opts: list[Any] = []
            for alt in value[key]:
                opts.extend([_OMIT, ""] if alt == "" else _expand(alt))
            options.append(_dedupe(opts))
        return _product(options, lambda combo: {k: v for k, v in zip(keys, combo) if v is not _OMIT})
    if isinstance(value, list):
        return _product([_expand(v) for v in value], list)
    return [value]


def _product(options: list[list[Any]], build) -> list[Any]:
    total = 1
    for opts in options:
        total *= max(len(opts), 1)
        if total > MAX_ALTERNATIVES:
            raise _TooMany
    return [build(combo) for combo in itertools.product(*options)]


def _dedupe(values: list[Any]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for value in values:
        key = "\0omit" if value is _OMIT else canonical_json(value)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def _reference_call(entry: Any, path: str, tools: dict[str, dict[str, Any]], warnings: list[tuple[str, str, str]]) -> ReferenceCall:
    expect(entry, dict, path, "a ground-truth call")
    if len(entry) != 1:
        raise ItemError("invalid_field", f"a ground-truth call maps exactly one function name to its parameters, got {len(entry)} keys", path)
    ((name, params),) = entry.items()
    expect(params, dict, f"{path}.{name}", "the parameters")
    schema = (tools.get(name) or {}).get("parameters") or {}
    required = set(schema.get("required") or ())
    properties = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    rules: dict[str, ArgumentRule] = {}
    for param, values in params.items():
        ppath = f"{path}.{name}.{param}"
        expect(values, list, ppath, "acceptable values")
        if not values:
            warnings.append(("empty_acceptable_values", "the possible answer lists no acceptable value; the argument is not checked", ppath))
            rules[param] = ArgumentRule(any_value=True, optional=True)
            continue
        alternatives: list[Any] = []
        try:
            for value in values:
                if value != "":
                    alternatives.extend(_expand(value))
            alternatives = _dedupe(alternatives)
            if len(alternatives) > MAX_ALTERNATIVES:
                raise _TooMany
        except _TooMany:
            raise ItemError("unsupported", f"acceptable values expand to more than {MAX_ALTERNATIVES} concrete alternatives", ppath) from None
        omittable = "" in values
        prop = properties.get(param)
        bfcl_type = prop.get("x-bfcl-type") if isinstance(prop, dict) else None
        if alternatives:
            arguments[param] = alternatives[0]
        if omittable and bfcl_type in ("string", "any"):
            alternatives.append("")  # BFCL accepts the marker itself (standardised text "")
        optional = omittable and not (param in required and alternatives)
        if omittable and not alternatives and param in required:
            warnings.append(
                (
                    "unsatisfiable_answer",
                    "the schema requires this argument but its possible answer only allows omitting it "
                    "(BFCL's checker fails every output); treated as omittable",
                    ppath,
                )
            )
        rules[param] = ArgumentRule(any_of=alternatives, optional=optional)
    return ReferenceCall(name=name, arguments=arguments, argument_rules=rules)


@guarded
def build_task(question: dict[str, Any], answer: dict[str, Any], warnings: list[tuple[str, str, str]] | None = None) -> Task:
    """One Task from a question item and its possible answer (errors name fields of either).
    ``warnings`` collects (kind, message, field in the possible answer) of soft problems."""
    try:
        return _build_task(question, answer, [] if warnings is None else warnings)
    except ValidationError as err:
        raise validation_error(err, note="converted task is invalid") from None


def _build_task(question: dict[str, Any], answer: dict[str, Any], warnings: list[tuple[str, str, str]]) -> Task:
    uid = _id(question)
    if any(k in question for k in ("initial_config", "involved_classes")):
        raise ItemError("unsupported", "multi-turn BFCL entries (initial_config / involved_classes) are not supported", "question")
    query = _query(question.get("question"))
    functions = expect(question.get("function"), list, "function", "function")
    tools = [_tool(f, f"function[{i}]") for i, f in enumerate(functions)]
    truth = answer.get("ground_truth")
    if not isinstance(truth, list) or not truth:
        raise ItemError("invalid_field", f"ground_truth must be a non-empty list, got {short(truth)}", "ground_truth", file="<reference>")
    by_name = {t["name"]: t for t in tools}
    try:
        calls = [_reference_call(entry, f"ground_truth[{i}]", by_name, warnings) for i, entry in enumerate(truth)]
    except ItemError as err:
        err.file = "<reference>"
        raise
    data = {
        "task_id": uid,
        "turns": [Turn(turn_id="1", query=query, reference_calls=calls, gold_answers=None)],
        "tools": [ToolSpec.model_validate(t) for t in tools],
        "metadata": TaskMetadata(capability=category(uid), tags={"benchmark": "bfcl"}),
        "extra_calls": "forbid",  # BFCL counts calls: a wrong number of calls fails
    }
    return Task.model_validate(data)


def _multi_turn(question: dict[str, Any]) -> tuple[str, str] | None:
    turns = question.get("question")
    if (isinstance(turns, list) and len(turns) > 1) or "initial_config" in question or "involved_classes" in question:
        return "multi-turn BFCL entries are not supported (only simple, multiple, parallel, parallel_multiple)", "question"
    return None


def _build(question: dict[str, Any], answer: dict[str, Any]) -> tuple[Task, list[tuple[str, str, str]]]:
    warnings: list[tuple[str, str, str]] = []
    return build_task(question, answer, warnings), warnings


_JOIN = JoinSpec(
    main_role="question",
    ref_role="possible answer",
    key=_id,
    key_field="id",
    build=_build,
    from_main_file=lambda err: err.file != "<reference>",
    not_graded=_multi_turn,
    missing_hint=" (irrelevance/relevance categories have none and are not supported)",
)


def _load_tasks(path: str, reference: str | None, limits: Limits) -> TaskSet:
    if reference is None:
        raise ValueError("bfcl tasks need the possible-answer file as reference")
    collector = TaskCollector()
    join(path, reference, limits, collector, _JOIN)
    return collector.result


TASKS = TaskFormat(
    name="bfcl",
    description="BFCL question file joined with its possible-answer file (reference); single-turn categories",
    sniff=_sniff,
    load=_load_tasks,
    reference="required",
)
