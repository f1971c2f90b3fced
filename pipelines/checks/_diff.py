"""How one predicted step differs from one reference call, as the tool would see both.

Compare calls as the tool sees them: schema defaults fill omitted arguments on both sides; an
argument the schema does not declare is unexpected; a declared argument the reference does not
mention is unexpected unless the agent passed the schema default (BFCL's rule); an argument the
schema requires is missing when the agent omits it and no default fills it, unless the reference
explicitly lets it be omitted (BFCL's required check). With no schema, the reference's own
arguments and rules are the declaration. A reference call may accept several argument sets
(``alternatives``); with ``extra_arguments`` the reference constrains only what it mentions. A
nested key the tool's argument model drops (``"x-extra-keys": "ignore"``) is no difference; with
``undeclared_keys``, one no schema says the tool reads is reported rather than counted (the calls
check then says "inconclusive: undeclared keys"). A call whose arguments were not recorded
(``Step.arguments`` None) is compared by its name only: a wrong name is a wrong tool; with the
right name, whether its arguments match is unknown (``CallDiff.unrecorded``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from judge import ArgumentRule, FailureStage, ReferenceCall, Step, ToolSpec
from pipelines.matching import MISSING, compare_argument, identical


class CallDiff(msgspec.Struct):
    stage: FailureStage | None  # None: the step matches the reference call (or does, but for ``undeclared``)
    problems: list[str] = msgspec.field(default_factory=list)
    undeclared: tuple[str, ...] = ()  # nested keys no schema says the tool reads (with ``undeclared_keys``)
    unrecorded: bool = False  # the right tool, called with arguments that were not recorded: match unknown

    @property
    def matches(self) -> bool:
        return self.stage is None and not self.undeclared and not self.unrecorded

    @property
    def matches_but_undeclared(self) -> bool:
        """Equal on every key the reference names; only keys no schema declares differ."""
        return self.stage is None and bool(self.undeclared) and not self.unrecorded


def _defaults(spec: ToolSpec | None) -> dict[str, Any]:
    return {} if spec is None else spec.defaults


def diff_call(ref: ReferenceCall, step: Step, spec: ToolSpec | None, *, extra_arguments: bool = False, undeclared_keys: bool = False) -> CallDiff:
    """``_diff_call``, with a fast path for a call identical to its reference (see ``_plainly_same``)."""
    if step.name == ref.name and step.arguments is not None and _plainly_same(ref, step.arguments, spec):
        return CallDiff(None)
    return _diff_call(ref, step, spec, extra_arguments=extra_arguments, undeclared_keys=undeclared_keys)


def _plainly_same(ref: ReferenceCall, given: dict[str, Any], spec: ToolSpec | None) -> bool:
    """The call passes exactly the reference's written arguments (``identical``), the reference
    sets no argument rule, and the schema has nothing to object: it declares every argument (or
    none), each argument it requires is given or defaulted, and none is a BFCL language literal
    (read as source text first). Then every argument set's first one matches, with no undeclared key."""
    if ref.argument_rules or not identical(ref.arguments, given):
        return False
    if spec is None:
        return True
    props = spec.properties
    if props and any(key not in props for key in given):
        return False
    if any(key not in given and key not in spec.defaults for key in spec.required):
        return False
    return not any(isinstance(props.get(key), dict) and "x-bfcl-language" in props[key] for key in given)


def _diff_call(ref: ReferenceCall, step: Step, spec: ToolSpec | None, *, extra_arguments: bool = False, undeclared_keys: bool = False) -> CallDiff:
    """How ``step`` differs from ``ref``: the first argument set (the written one, then each
    alternative) that matches, else one that matches but for undeclared keys, else the one that got
    furthest. ``extra_arguments``: arguments and nested keys the reference does not mention are
    ignored (undeclared ones still count). ``undeclared_keys``: a nested key no schema says the tool
    reads is not a difference but reported (``CallDiff.undeclared``)."""
    if step.name != ref.name:
        return CallDiff(FailureStage.TOOL_SELECTION, [f"called {step.name!r} instead of {ref.name!r}"])
    if step.arguments is None:
        return CallDiff(None, [f"{ref.name} was called, but its arguments were not recorded"], unrecorded=True)
    sets = ref.argument_sets()
    best: CallDiff | None = None
    for arguments, rules in sets:
        d = _diff_arguments(arguments, rules, step.arguments, spec, extra_arguments, undeclared_keys)
        if d.matches:
            return d
        if best is None or (best.stage is not None and (d.stage is None or d.stage.rank > best.stage.rank)):
            best = d
    assert best is not None
    if best.stage is None:
        return best
    if len(sets) > 1:
        best.problems = [*best.problems, f"none of the {len(sets)} accepted argument sets matches (closest shown)"]
    return best


def _diff_arguments(
    arguments: dict[str, Any], rules: dict[str, ArgumentRule], given: dict[str, Any], spec: ToolSpec | None, extra_arguments: bool, undeclared_keys: bool
) -> CallDiff:
    defaults = _defaults(spec)
    props = spec.properties if spec is not None else {}  # the schema read once per call, not once per argument
    referenced = set(arguments) | set(rules)

    name_problems: list[str] = []
    for key in given:
        if props and key not in props:
            name_problems.append(f"unexpected argument {key!r} (not in the tool schema)")
        elif key in referenced or extra_arguments:
            continue
        elif key not in defaults:
            name_problems.append(f"unexpected argument {key!r} (not in the reference call)")
        elif not compare_argument(defaults[key], given[key], None, _param_schema(props, key)).ok:
            name_problems.append(f"unexpected argument {key!r}={given[key]!r} (reference leaves it at its default)")
    for key in sorted(referenced):
        rule = rules.get(key)
        optional = rule is not None and rule.optional
        if key not in given and key not in defaults and not optional:
            name_problems.append(f"missing argument {key!r}")
    if spec is not None:
        for key in sorted(spec.required - referenced - set(given) - set(defaults)):
            name_problems.append(f"missing argument {key!r} (required by the tool schema)")
    if name_problems:
        return CallDiff(FailureStage.ARGUMENT_NAMES, name_problems)

    value_problems: list[str] = []
    undeclared: list[str] = []
    for key in sorted(referenced):
        rule = rules.get(key)
        if key in given:
            actual = given[key]
        elif rule is not None and rule.optional:
            continue  # omission is explicitly allowed
        else:
            actual = defaults[key]  # omitted, the tool applies its default
        result = compare_argument(
            arguments.get(key, MISSING), actual, rule, _param_schema(props, key), extra_keys=extra_arguments, undeclared_keys=undeclared_keys
        )
        if not result.ok:
            value_problems.append(f"{key}: {result.reason}")
        undeclared += [f"{key}{'' if p.startswith('[') else '.'}{p}" for p in result.undeclared]
    if value_problems:
        return CallDiff(FailureStage.ARGUMENT_VALUES, value_problems)
    return CallDiff(None, undeclared=tuple(undeclared))


def _param_schema(props: dict[str, Any], key: str) -> dict[str, Any] | None:
    """``ToolSpec.param_schema`` on properties read once."""
    schema = props.get(key)
    return schema if isinstance(schema, dict) else None
