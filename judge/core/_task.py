"""Benchmark tasks: what the agent was asked, which tools it had, and what a correct run looks like.

Unknown fields are accepted and kept (``judge.core._extras``); ingest reports each as a warning (an
error with ``--strict``), so a misspelt key is never silently ignored and never costs a task either.

Partial and alternative references (a real benchmark rarely pins every argument):
- ``extra_arguments="allow"`` (on a reference call, or as the task default): arguments and nested keys
  the reference does not mention are ignored (arguments the tool schema does not declare still count);
- ``required=False``: the call is advisory, its absence never fails the trajectory;
- ``alternatives``: any one of several argument sets satisfies the call;
- an argument rule ``pattern``: a regular expression (RE2, full match) the value must match;
- ``grading="outcome"``: read calls are advisory; writes, the final state and the answer decide
  (how state-based benchmarks such as tau2 score);
- ``extra_calls="forbid"``: a successful or unknown-outcome call that satisfies no reference call
  fails at tool selection (BFCL counts calls exactly); by default extra reads are evidence;
- ``final_state="unchecked"``: the benchmark does not score the environment's end state (tau2 without
  ``DB`` in its reward basis): a surplus write is not a failure, and no turn expects "no write".

"No write" is a specification too: a turn that states its reference calls (the key is given, even as
``[]``) and requires none expects the state to stay unchanged; it passes when no write succeeded and
fails at the first successful write. A turn that states nothing (no reference key, no answer, no
policy) has nothing to check.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from judge.core._extras import Open
from judge.core._patterns import compile_pattern
from judge.core._tool_names import ToolNames


def _as_str_id(value: Any) -> Any:
    """Ids arrive as ints in some formats (VAKRA turn ids, BFCL ids); we key everything by str."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    return value


class ToolSpec(BaseModel):
    """One tool the agent could call: an OpenAI function spec plus what grading needs to know.

    Accepts both the flat form ``{name, description, parameters}`` and the wrapped form
    ``{"type": "function", "function": {...}}``. ``side_effect="write"`` makes the tool's calls
    subject to multiset matching; ``source`` names its knowledge source ("api", "rag", ...) for
    source-per-turn policies.
    """

    model_config = Open

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    side_effect: Literal["read", "write"] = "read"
    source: str | None = None
    strict: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _unwrap_openai(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("type") == "function" and isinstance(data.get("function"), dict):
            inner = dict(data["function"])
            for key in ("side_effect", "source"):
                if key in data and key not in inner:
                    inner[key] = data[key]
            return inner
        return data

    @cached_property
    def properties(self) -> dict[str, dict[str, Any]]:
        props = self.parameters.get("properties") or {}
        return props if isinstance(props, dict) else {}

    @cached_property
    def required(self) -> frozenset[str]:
        return frozenset(self.parameters.get("required") or ())

    @cached_property
    def defaults(self) -> dict[str, Any]:
        """The schema's default of each parameter that declares one (read only: shared by every
        comparison of a call to this tool)."""
        return {k: v["default"] for k, v in self.properties.items() if isinstance(v, dict) and "default" in v}

    def param_schema(self, name: str) -> dict[str, Any] | None:
        schema = self.properties.get(name)
        return schema if isinstance(schema, dict) else None


class ArgumentRule(BaseModel):
    """How one reference argument may differ from the literal value and still match.

    The literal value in ``ReferenceCall.arguments`` is always acceptable; ``any_of`` adds
    alternatives (BFCL's acceptable-value lists). ``optional`` lets the agent omit the argument.
    ``unordered=None`` means: decide from the tool schema (``uniqueItems`` or ``x-unordered``).
    ``any_value`` accepts whatever the agent passes (the argument is still required unless
    ``optional``). ``exact`` compares strings verbatim instead of BFCL-normalised (ids, paths).
    ``any_of=[]`` with ``optional=True`` means the argument may only be omitted (BFCL ``[""]``).
    ``pattern`` (RE2, full match against the value as text) is one more acceptable form; it is
    compiled when the task is read, so a bad pattern is an input error naming the field.
    """

    model_config = Open

    any_of: list[Any] | None = None
    optional: bool = False
    tolerance: float | None = Field(default=None, ge=0)
    relative_tolerance: float | None = Field(default=None, ge=0)
    unordered: bool | None = None
    any_value: bool = False
    exact: bool = False
    pattern: str | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            compile_pattern(value)  # PatternError is a ValueError: pydantic names the field
        return value


ExtraArguments = Literal["forbid", "allow"]


class ArgumentSet(BaseModel):
    """One alternative way of making a reference call: its own arguments and rules."""

    model_config = Open

    arguments: dict[str, Any] = Field(default_factory=dict)
    argument_rules: dict[str, ArgumentRule] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _rules_have_values(self) -> ArgumentSet:
        _check_rules(self.arguments, self.argument_rules)
        return self


def _check_rules(arguments: dict[str, Any], rules: dict[str, ArgumentRule]) -> None:
    for key, rule in rules.items():
        if key not in arguments and rule.any_of is None and not rule.any_value and rule.pattern is None:
            raise ValueError(
                f"argument_rules.{key}: the argument has no reference value; give it in arguments, "
                "or list any_of (any_of=[] with optional=true: may only be omitted), or set any_value or pattern"
            )


class ReferenceCall(BaseModel):
    """One call of the reference solution. ``depends_on`` lists ids of calls that must come first.

    ``extra_arguments=None`` follows the task's default; ``required=False`` makes the call advisory;
    ``alternatives`` are further argument sets, any one of which satisfies the call.
    """

    model_config = Open

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    argument_rules: dict[str, ArgumentRule] = Field(default_factory=dict)
    alternatives: list[ArgumentSet] = Field(default_factory=list)
    extra_arguments: ExtraArguments | None = None
    required: bool = True
    expected_output: Any = None
    critical: bool = False
    label: str | None = None  # VAKRA capability-1 labels, referenced later as $LABEL.path$

    coerce_id = field_validator("id", mode="before")(_as_str_id)

    @model_validator(mode="after")
    def _rules_have_values(self) -> ReferenceCall:
        _check_rules(self.arguments, self.argument_rules)
        return self

    @property
    def has_expected_output(self) -> bool:
        return "expected_output" in self.model_fields_set

    def argument_sets(self) -> list[tuple[dict[str, Any], dict[str, ArgumentRule]]]:
        """(arguments, argument_rules) of each accepted argument set: the written arguments first,
        then each alternative (plain pairs: the call diff asks for them on every comparison)."""
        return [(self.arguments, self.argument_rules), *((alt.arguments, alt.argument_rules) for alt in self.alternatives)]


class ForbiddenArgument(BaseModel):
    """A machine-checkable ban on argument values: exact values (normalised) or a regex.

    ``pattern`` runs on untrusted agent text, so it is an RE2 pattern (linear time, no
    backreferences or look-around); one RE2 cannot compile is rejected when the task is read.
    """

    model_config = Open

    tool: str = "*"
    argument: str
    values: list[Any] = Field(default_factory=list)
    pattern: str | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            compile_pattern(pattern)  # PatternError is a ValueError: a field error naming the pattern
        return pattern


class SourceRule(BaseModel):
    """Which knowledge sources (tool ``source`` kinds or tool names) a turn may use."""

    model_config = Open

    turn_id: str | None = None  # None: every turn
    allowed: list[str]

    coerce_ids = field_validator("turn_id", mode="before")(_as_str_id)


class Policy(BaseModel):
    """A tool-use policy: plain text for humans and judges, plus the rules a machine can check.

    When structured rules are present they are taken as the formalisation of ``text``; a policy
    with text only can be checked by the policy-adherence rubric, never deterministically.
    ``scope="domain"`` marks a benchmark's domain-wide policy document (tau2's environment policy, a
    system prompt shared by every task): it is context for the judges, and its text gates a verdict
    only when asked (``--policy-text gate``); a per-task policy (``scope="task"``) always gates.
    ``confirm_writes``: every successful write must follow an agent message describing it and a
    user message confirming it (the seed articles' and tau2's "explicit confirmation (yes)" rule;
    checked over the dialogue by ``pipelines.checks.policy``).
    """

    model_config = Open

    text: str | None = None
    scope: Literal["task", "domain"] = "task"
    allowed_tools: list[str] | None = None
    forbidden_tools: list[str] = Field(default_factory=list)
    max_calls: int | None = Field(default=None, ge=0)
    read_only: bool = False
    forbidden_arguments: list[ForbiddenArgument] = Field(default_factory=list)
    allowed_sources: list[SourceRule] = Field(default_factory=list)
    confirm_writes: bool = False

    @property
    def has_rules(self) -> bool:
        return bool(
            self.allowed_tools is not None
            or self.forbidden_tools
            or self.max_calls is not None
            or self.read_only
            or self.forbidden_arguments
            or self.allowed_sources
            or self.confirm_writes
        )


class Turn(BaseModel):
    """One user turn with its own reference calls and gold answers (every turn is scored)."""

    model_config = Open

    turn_id: str = "1"
    query: str
    reference_calls: list[ReferenceCall] = Field(default_factory=list)
    gold_answers: list[Any] | None = None  # alternatives; None = no answer expected (call-only task)
    gold_answer_pattern: str | None = None  # RE2, searched in the answer: a match is correct
    answer_ordered: bool = False
    answer_tolerance: float | None = Field(default=None, ge=0)  # relative, for numeric answers
    criteria: list[str] | None = None  # open-ended tasks: key points a good answer covers
    required_content: list[str] | None = None  # facts the agent must tell the user (tau2 communicate_info)
    # assertions on the environment's end state that only the benchmark's own environment evaluates
    # (tau2 env_assertions): a turn with them cannot pass here (unresolved, never asked of a judge)
    environment_assertions: list[Any] | None = None
    # the turn passes only if the agent makes a call, whichever tool and arguments (BFCL's relevance
    # categories: the question can be served by the tools given, and which call is not checked)
    requires_a_call: bool = False

    coerce_ids = field_validator("turn_id", mode="before")(_as_str_id)

    @field_validator("gold_answer_pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            compile_pattern(value)
        return value

    @property
    def states_calls(self) -> bool:
        """The turn says which calls it needs: its ``reference_calls`` were given, even as ``[]``."""
        return "reference_calls" in self.model_fields_set

    @property
    def has_answer_spec(self) -> bool:
        """Something says what a right answer is: gold answers, a pattern, criteria or required content."""
        return bool(self.gold_answers is not None or self.gold_answer_pattern or self.criteria or self.required_content)

    @model_validator(mode="before")
    @classmethod
    def _single_gold(cls, data: Any) -> Any:
        if isinstance(data, dict) and "gold_answer" in data:
            data = dict(data)
            if "gold_answers" in data:
                raise ValueError("give either gold_answer or gold_answers, not both")
            gold = data.pop("gold_answer")
            data["gold_answers"] = None if gold is None else [gold]
        return data

    @model_validator(mode="after")
    def _check_dag(self) -> Turn:
        ids = [c.id for c in self.reference_calls if c.id is not None]
        if len(ids) != len(set(ids)):
            raise ValueError("reference call ids must be unique within a turn")
        known = set(ids)
        for call in self.reference_calls:
            for dep in call.depends_on:
                if dep not in known:
                    raise ValueError(f"reference call {call.id or call.name!r} depends on unknown id {dep!r}")
        dependency_order(self.reference_calls)  # raises on a cycle
        return self


def dependency_order(calls: list[ReferenceCall]) -> list[int]:
    """Indices of ``calls`` in an order that respects ``depends_on`` (stable: ties keep the written
    order); raises on a cycle. Matching and replay both walk reference calls in this order.

    Iterative depth-first search (an explicit stack): a chain of thousands of dependencies in a
    task file is an ordinary input, never a ``RecursionError``.
    """
    index = {c.id: i for i, c in enumerate(calls) if c.id is not None}
    state = [0] * len(calls)  # 0 new, 1 visiting, 2 done
    order: list[int] = []
    for root in range(len(calls)):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(calls[root].depends_on))]
        while stack:
            i, deps = stack[-1]
            for dep in deps:
                j = index[dep]
                if state[j] == 1:
                    raise ValueError(f"reference calls form a dependency cycle through {calls[j].id!r}")
                if state[j] == 0:
                    state[j] = 1
                    stack.append((j, iter(calls[j].depends_on)))
                    break
            else:
                stack.pop()
                state[i] = 2
                order.append(i)
    return order


class TaskMetadata(BaseModel):
    """What reports break results down by. ``hop_types`` like ["API", "RAG"] give the hop pattern."""

    model_config = Open

    capability: str | None = None
    domain: str | None = None
    hop_count: int | None = Field(default=None, ge=0)
    hop_types: list[str] = Field(default_factory=list)
    policy_condition: str | None = None
    tags: dict[str, Any] = Field(default_factory=dict)

    coerce_capability = field_validator("capability", mode="before")(_as_str_id)

    @property
    def hop_pattern(self) -> str | None:
        return "-".join(self.hop_types) if self.hop_types else None

    @property
    def multi_source(self) -> bool:
        return len({h.upper() for h in self.hop_types}) > 1


# A turn's fields a one-turn task may write at its top level (with ``question``): the shorthand.
SINGLE_TURN_KEYS = (
    "reference_calls",
    "gold_answer",
    "gold_answers",
    "gold_answer_pattern",
    "answer_ordered",
    "answer_tolerance",
    "criteria",
    "required_content",
    "environment_assertions",
    "requires_a_call",
)


class Task(BaseModel):
    """A benchmark task. Single-turn shorthand: ``question`` + ``reference_calls`` + ``gold_answer``."""

    model_config = Open

    task_id: str = Field(min_length=1)
    turns: list[Turn] = Field(min_length=1)
    tools: list[ToolSpec] = Field(default_factory=list)
    policy: Policy | None = None
    metadata: TaskMetadata = Field(default_factory=TaskMetadata)
    environment: str | None = None  # executable domain for replay, e.g. "olympics"; "bfcl": BFCL's own environment classes
    # where the environment starts for this task (BFCL: involved_classes, initial_config, long_context)
    environment_config: dict[str, Any] | None = None
    extra_arguments: ExtraArguments = "forbid"  # default for reference calls that do not say
    extra_calls: Literal["allow", "forbid"] = "allow"  # forbid: every call must be a reference call (BFCL)
    grading: Literal["trajectory", "outcome"] = "trajectory"
    final_state: Literal["checked", "unchecked"] = "checked"  # unchecked: surplus writes never fail

    coerce_ids = field_validator("task_id", mode="before")(_as_str_id)

    @model_validator(mode="before")
    @classmethod
    def _single_turn_shorthand(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        turn_keys = SINGLE_TURN_KEYS
        if "question" in data:
            if "turns" in data:
                raise ValueError("give either question or turns, not both")
            data = dict(data)
            turn = {"turn_id": "1", "query": data.pop("question")}
            for key in turn_keys:
                if key in data:
                    turn[key] = data.pop(key)
            data["turns"] = [turn]
        elif "turns" in data and any(k in data for k in turn_keys):
            raise ValueError("with turns, put reference_calls and gold answers inside each turn")
        return data

    @model_validator(mode="after")
    def _check_tools(self) -> Task:
        names = [t.name for t in self.tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"tool names must be unique, repeated: {dupes}")
        turn_ids = [t.turn_id for t in self.turns]
        if len(turn_ids) != len(set(turn_ids)):
            raise ValueError("turn ids must be unique")
        if self.tools:
            for turn in self.turns:
                for call in turn.reference_calls:
                    if call.name not in self.tool_index:
                        raise ValueError(f"turn {turn.turn_id}: reference call to undeclared tool {call.name!r}")
        return self

    @cached_property
    def tool_index(self) -> dict[str, ToolSpec]:
        return {t.name: t for t in self.tools}

    def tool(self, name: str) -> ToolSpec | None:
        return self.tool_index.get(name)

    @cached_property
    def tool_names(self) -> ToolNames:
        """What a called name means (``judge.core._tool_names``) among the task's tools: the declared
        ones, or with none declared the tools its reference calls name."""
        if self.tools:
            return ToolNames(self.tool_index)
        return ToolNames(c.name for turn in self.turns for c in turn.reference_calls)

    def is_write(self, name: str) -> bool:
        spec = self.tool_index.get(name)
        return spec is not None and spec.side_effect == "write"
