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
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge import ArgumentRule, ReferenceCall, Task, TaskMetadata, ToolSpec, Turn, canonical_json
from pipelines.ingest._base import ItemError, Limits, TaskCollector, TaskFormat, TaskSet, as_id, expect, guarded, short, validation_error
from pipelines.ingest._join import JoinSpec, join
from pipelines.ingest._reader import read_items
from pipelines.ingest._usage import UsageError
from pipelines.matching import LITERAL_TYPES, language_of_category

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


def convert_schema(schema: Any, path: str, language: str | None = None) -> Any:
    """A BFCL parameter schema as JSON Schema, keeping the BFCL type under ``x-bfcl-type``.
    ``language`` (java, javascript): the properties are that language's typed parameters, whose
    values the model writes as source text (``literal_schema``)."""
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
        convert = convert_schema if language is None else lambda sub, where: literal_schema(sub, where, language)
        out["properties"] = {name: convert(sub, f"{path}.properties.{name}") for name, sub in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = convert_schema(schema["items"], f"{path}.items")
    return out


def literal_schema(schema: Any, path: str, language: str) -> dict[str, Any]:
    """A Java / JavaScript parameter: the model passes a string of source text (BFCL's function docs
    for these categories declare every parameter a string), read by its declared type when compared
    (``pipelines.matching.literals``): ``type: string`` with ``x-bfcl-language``, ``x-bfcl-type``
    and, for a collection, the item type as ``x-bfcl-items``."""
    expect(schema, dict, path, "a parameter schema")
    types = LITERAL_TYPES[language]
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in types:
        raise ItemError("unsupported", f"BFCL {language} type {short(kind)} is not supported (supported: {sorted(types)})", f"{path}.type")
    out = {k: v for k, v in schema.items() if k not in ("items", "properties", "default")}
    if "default" in schema:
        out["x-bfcl-default"] = schema["default"]
    out.update({"type": "string", "x-bfcl-type": kind, "x-bfcl-language": language})
    if types[kind] == "array":
        items = schema.get("items")
        item_type = items.get("type") if isinstance(items, dict) else None
        if not isinstance(item_type, str) or item_type not in types:
            raise ItemError("unsupported", f"a BFCL {language} {kind} needs an item type of {sorted(types)}, got {short(item_type)}", f"{path}.items.type")
        out["x-bfcl-items"] = item_type
    if isinstance(schema.get("properties"), dict):
        out["x-bfcl-properties"] = schema["properties"]  # documentation: the entries the dict holds
    return out


def _tool(spec: Any, path: str, language: str | None = None) -> dict[str, Any]:
    expect(spec, dict, path, "a function")
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ItemError("invalid_field", "a function needs a non-empty string name", f"{path}.name")
    tool: dict[str, Any] = {"name": name, "description": spec.get("description") or ""}
    if not isinstance(tool["description"], str):
        raise ItemError("invalid_field", "description must be a string", f"{path}.description")
    if spec.get("parameters") is not None:
        tool["parameters"] = convert_schema(spec["parameters"], f"{path}.parameters", language)
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
        prop = properties.get(param)
        try:
            for value in values:
                if value != "":
                    alternatives.extend(_expand(_as_dict_answer(value, prop, ppath, warnings)))
            alternatives = _dedupe(alternatives)
            if len(alternatives) > MAX_ALTERNATIVES:
                raise _TooMany
        except _TooMany:
            raise ItemError("unsupported", f"acceptable values expand to more than {MAX_ALTERNATIVES} concrete alternatives", ppath) from None
        omittable = "" in values
        if alternatives:
            arguments[param] = alternatives[0]
        if omittable and _holds_text(prop):
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


_DICT_TYPES = frozenset({"dict", "HashMap"})


def _as_dict_answer(value: Any, prop: Any, path: str, warnings: list[tuple[str, str, str]]) -> Any:
    """A possible answer of a dict parameter whose entries are not all acceptable-value lists (a
    broken answer), read as BFCL's dict checker reads it: it iterates each entry, so a string entry
    accepts each of its characters and any other value stands alone (with a warning)."""
    kind = prop.get("x-bfcl-type") if isinstance(prop, dict) else None
    if kind not in _DICT_TYPES or not isinstance(value, dict) or not value or all(isinstance(v, list) for v in value.values()):
        return value
    broken = sorted(k for k, v in value.items() if not isinstance(v, list))
    warnings.append(
        (
            "broken_possible_answer",
            f"dict entries {broken} are not lists of acceptable values; read as BFCL's dict checker reads them (a string accepts each of its characters)",
            path,
        )
    )
    return {k: v if isinstance(v, list) else list(v) if isinstance(v, str) else [v] for k, v in value.items()}


def _holds_text(prop: Any) -> bool:
    """The parameter's value is compared as text (a BFCL string or ``any``; a Java / JavaScript
    parameter whose literal reads as a string): the omission marker ``""`` is then a value too."""
    if not isinstance(prop, dict):
        return False
    kind, language = prop.get("x-bfcl-type"), prop.get("x-bfcl-language")
    if language is not None:
        return isinstance(kind, str) and LITERAL_TYPES[language].get(kind) == "string"
    return kind in ("string", "any")


@guarded
def build_task(question: dict[str, Any], answer: dict[str, Any] | None, warnings: list[tuple[str, str, str]] | None = None) -> Task:
    """One Task from a question item and its possible answer (errors name fields of either).
    ``warnings`` collects (kind, message, field in the possible answer) of soft problems."""
    try:
        return _build_task(question, answer, [] if warnings is None else warnings)
    except ValidationError as err:
        raise validation_error(err, note="converted task is invalid") from None


def relevance_rule(cat: str) -> str | None:
    """BFCL's relevance categories, graded without a possible answer (``is_relevance_or_irrelevance``):
    ``"irrelevance"`` (no tool serves the question: no call may be made) for a category naming
    irrelevance, ``"relevance"`` (some call must be made) for one naming relevance; else None."""
    if "irrelevance" in cat:
        return "irrelevance"
    if "relevance" in cat:
        return "relevance"
    return None


def _build_task(question: dict[str, Any], answer: dict[str, Any] | None, warnings: list[tuple[str, str, str]]) -> Task:
    uid = _id(question)
    cat = category(uid)
    if any(k in question for k in ("initial_config", "involved_classes")):
        if answer is None:
            raise ItemError("unknown_task", f"BFCL {cat} entries need their possible answer (--reference)", "id")
        return _multi_turn_task(uid, cat, question, answer)
    query = _query(question.get("question"))
    functions = expect(question.get("function"), list, "function", "function")
    tools = [_tool(f, f"function[{i}]", language_of_category(cat)) for i, f in enumerate(functions)]
    rule = relevance_rule(cat)
    if rule is not None:
        return _relevance_task(uid, cat, query, tools, rule)
    if answer is None:
        raise ItemError("unknown_task", f"BFCL {cat} entries need their possible answer (--reference)", "id")
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


def _relevance_task(uid: str, cat: str, query: str, tools: list[dict[str, Any]], rule: str) -> Task:
    """Irrelevance: the turn states no reference call and every call is one too many (it fails at
    tool selection); relevance: the turn requires a call, whichever (none made fails at tool selection)."""
    irrelevant = rule == "irrelevance"
    turn = Turn(turn_id="1", query=query, reference_calls=[], gold_answers=None, requires_a_call=not irrelevant)
    data = {
        "task_id": uid,
        "turns": [turn],
        "tools": [ToolSpec.model_validate(t) for t in tools],
        "metadata": TaskMetadata(capability=cat, tags={"benchmark": "bfcl", "bfcl_rule": rule}),
        "extra_calls": "forbid" if irrelevant else "allow",
    }
    return Task.model_validate(data)


_AGENTIC = ("memory", "web_search")  # BFCL v4's agentic categories: their environments reach the web or a model


def _multi_turn_task(uid: str, cat: str, question: dict[str, Any], answer: dict[str, Any]) -> Task:
    """A multi-turn entry: one task turn per question turn (ids ``"0"``, ``"1"``... as BFCL numbers
    them), each with the ground truth's calls of that turn as reference calls (positional arguments
    bound to their parameter names; advisory: BFCL checks states and results, not calls), replayed in BFCL's own environments (``environment="bfcl"``,
    ``environment_config``: involved classes, initial state, long context). Each turn holds BFCL's
    two checks as environment assertions: without replay, nothing here can decide them."""
    if cat.startswith(_AGENTIC):
        raise ItemError("unsupported", f"BFCL's agentic {cat} entries need a web search backend or a memory store; not graded", "question")
    from pipelines.env import BfclUnavailable, bind_call, method_owners, parse_call

    involved = expect(question.get("involved_classes"), list, "involved_classes", "involved_classes")
    if not involved or not all(isinstance(c, str) for c in involved):
        raise ItemError("invalid_field", "involved_classes must be a non-empty list of BFCL class names", "involved_classes")
    config = question.get("initial_config") or {}
    expect(config, dict, "initial_config", "initial_config")
    turns = expect(question.get("question"), list, "question", "question")
    truth = answer.get("ground_truth")
    if not isinstance(truth, list) or len(truth) != len(turns) or not all(isinstance(t, list) for t in truth):
        raise ItemError(
            "invalid_field",
            f"ground_truth must hold one list of calls per question turn ({len(turns)}), got {short(truth)}",
            "ground_truth",
            file="<reference>",
        )
    try:
        owners = method_owners(involved)
    except BfclUnavailable as exc:
        raise ItemError("unsupported", str(exc), "involved_classes") from None
    except KeyError as exc:
        raise ItemError("invalid_field", str(exc.args[0]), "involved_classes") from None
    missed = question.get("missed_function")
    added: dict[str, Any] = missed if isinstance(missed, dict) else {}
    task_turns = []
    for t, (messages, calls) in enumerate(zip(turns, truth, strict=True)):
        expect(messages, list, f"question[{t}]", "a question turn")
        texts = [m["content"] for m in messages if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str)]
        query = "\n".join(texts) if texts else f"[no user message: BFCL gives the functions {added.get(str(t), [])} back in this turn]"
        refs = []
        for c, text in enumerate(calls):
            where = f"ground_truth[{t}][{c}]"
            try:
                call = parse_call(expect(text, str, where, "a call string"))
                # advisory: one way to the state BFCL checks, not a call the model must make (without replay the turn stays open)
                refs.append(ReferenceCall(name=call.name, arguments=bind_call(call, owners), required=False))
            except ValueError as exc:
                raise ItemError("invalid_field", f"ground-truth call {short(text)}: {exc}", where, file="<reference>") from None
        assertions = ["BFCL: the state of every instance equals the ground truth's", "BFCL: every ground-truth result is among the model's results so far"]
        task_turns.append(Turn(turn_id=str(t), query=query, reference_calls=refs, gold_answers=None, environment_assertions=assertions if refs else None))
    data = {
        "task_id": uid,
        "turns": task_turns,
        "metadata": TaskMetadata(capability=cat, tags={"benchmark": "bfcl"}),
        "environment": "bfcl",
        "environment_config": {
            "involved_classes": involved,
            "initial_config": config,
            "long_context": "long_context" in cat or "composite" in cat,
        },
    }
    return Task.model_validate(data)


def _multi_turn(question: dict[str, Any]) -> tuple[str, str] | None:
    """Entries of several turns that are not BFCL multi-turn entries (no environment to replay in)."""
    turns = question.get("question")
    if isinstance(turns, list) and len(turns) > 1 and "initial_config" not in question and "involved_classes" not in question:
        return "a BFCL entry of several turns without initial_config / involved_classes: no environment to replay it in", "question"
    return None


def _build(question: dict[str, Any], answer: dict[str, Any] | None) -> tuple[Task, list[tuple[str, str, str]]]:
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
    graded_alone=lambda item: isinstance(item.get("id"), str) and relevance_rule(category(item["id"])) is not None,
)

QUESTION_FILE = re.compile(r"^BFCL_v\d+_(?P<category>.+)\.json$")


def question_files(folder: Path) -> list[Path]:
    """The question files of a BFCL data folder (``BFCL_vN_<category>.json``, its top level), sorted."""
    return sorted(p for p in folder.iterdir() if p.is_file() and QUESTION_FILE.match(p.name) and not p.name.endswith(("_result.json", "_score.json")))


def load_folder(folder: str | Path, reference: str | None, limits: Limits, categories: set[str] | None = None) -> TaskSet:
    """Every question file of a BFCL data folder (``bfcl_eval/data``: ``BFCL_vN_<category>.json``)
    joined with its namesake in ``possible_answer/`` (or in ``reference``, a folder); the relevance
    categories have none by design. ``categories``: only those (the ones a result folder holds)."""
    folder = Path(folder)
    answers = Path(reference) if reference is not None else folder / "possible_answer"
    files = [q for q in question_files(folder) if categories is None or _file_category(q) in categories]
    if not files:
        wanted = "" if categories is None else f" for the categories {sorted(categories)}"
        raise UsageError("--tasks", f"{folder} holds no BFCL question files (BFCL_vN_<category>.json){wanted}")
    collector = TaskCollector()
    for file in files:
        answer = answers / file.name
        join(str(file), str(answer) if answer.is_file() else None, limits, collector, _JOIN)
    return collector.result


def _file_category(path: Path) -> str:
    found = QUESTION_FILE.match(path.name)
    assert found is not None
    return found.group("category")


def _load_tasks(path: str, reference: str | None, limits: Limits) -> TaskSet:
    if Path(path).is_dir():
        return load_folder(path, reference, limits)
    if reference is None and not _graded_alone(path, limits):
        raise UsageError("--reference", "bfcl tasks need the possible-answer file as reference (only the relevance categories have none)")
    collector = TaskCollector()
    join(path, reference, limits, collector, _JOIN)
    return collector.result


def _graded_alone(path: str, limits: Limits) -> bool:
    """The file's first question is of a category graded without a possible answer."""
    first = next(iter(read_items(path, limits)), None)
    value = first.value if first is not None else None
    return isinstance(value, dict) and bool(_JOIN.graded_alone(value))


TASKS = TaskFormat(
    name="bfcl",
    description="BFCL question file (or a data folder of them) joined with its possible answers (reference; the relevance categories have none)",
    sniff=_sniff,
    load=_load_tasks,
    reference="optional",
)
