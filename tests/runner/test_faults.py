"""Fault plans: parsing with precise errors, seeded draws independent of order, per-tool rules."""

from __future__ import annotations

import json
import random

import pytest

from pipelines.runner import FAULT_KINDS, FaultSpecError, parse_faults
from pipelines.runner._faults import malformed


def test_the_documented_spec_parses():
    plan = parse_faults(["rate=0.1,kinds=error,timeout,empty,malformed,seed=7"])
    assert plan is not None and plan.seed == 7
    [rule] = plan.rules
    assert (rule.rate, rule.kinds, rule.tool) == (0.1, FAULT_KINDS, None)
    assert parse_faults([]) is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("rate=1.5", "between 0 and 1"),
        ("rate=x", "must be a number"),
        ("kinds=error", "rate= is required"),
        ("rate=0.1,kinds=error,melt", "unknown fault kind"),
        ("rate=0.1,colour=red", "unknown key 'colour'"),
        ("rate=0.1,seed=x", "seed must be an integer"),
        ("rate=0.1,rate=0.2", "rate is given twice"),
        ("rate=0.1,error", "not key=value"),
        ("rate=0.1,tool=", "needs a tool name"),
    ],
)
def test_bad_specs_name_the_spec_and_the_part(spec, message):
    with pytest.raises(FaultSpecError) as info:
        parse_faults([spec])
    assert message in str(info.value) and repr(spec) in str(info.value)


def test_one_rule_per_tool_and_one_seed_per_run():
    with pytest.raises(FaultSpecError, match="given twice"):
        parse_faults(["rate=0.1", "rate=0.2"])
    with pytest.raises(FaultSpecError, match="contradicts"):
        parse_faults(["rate=0.1,seed=1", "tool=a,rate=1,seed=2"])


def test_draws_hit_the_rate_spread_the_kinds_and_ignore_order():
    plan = parse_faults(["rate=0.2,kinds=error,timeout,empty,malformed,seed=3"])
    assert plan is not None
    keys = [(f"task-{i // 20}#1", i % 20) for i in range(20_000)]
    draws = {k: plan.pick(k[0], k[1], "lookup") for k in keys}
    share = sum(d is not None for d in draws.values()) / len(draws)
    assert 0.19 < share < 0.21
    kinds = [d for d in draws.values() if d is not None]
    for kind in FAULT_KINDS:
        assert 0.2 < kinds.count(kind) / len(kinds) < 0.3
    shuffled = keys[:]
    random.Random(0).shuffle(shuffled)
    assert all(plan.pick(k[0], k[1], "lookup") == draws[k] for k in shuffled)  # a pure function of the call


def test_seeds_and_trials_draw_differently():
    a = parse_faults(["rate=0.5,seed=1"])
    b = parse_faults(["rate=0.5,seed=2"])
    assert a is not None and b is not None
    calls = range(200)
    assert [a.pick("t#1", i, "x") for i in calls] != [b.pick("t#1", i, "x") for i in calls]
    assert [a.pick("t#1", i, "x") for i in calls] != [a.pick("t#2", i, "x") for i in calls]


def test_a_per_tool_rule_overrides_the_general_one():
    plan = parse_faults(["rate=1,kinds=timeout", "tool=safe,rate=0", "tool=flaky,rate=1,kinds=empty"])
    assert plan is not None
    assert {plan.pick("t#1", i, "other") for i in range(50)} == {"timeout"}
    assert {plan.pick("t#1", i, "safe") for i in range(50)} == {None}
    assert {plan.pick("t#1", i, "flaky") for i in range(50)} == {"empty"}


@pytest.mark.parametrize("text", ['{"host_city": "Beijing", "year": 2008}', "[1, 2, 3]", "42", "7", "", '"x"'])
def test_a_malformed_result_is_never_valid_json(text):
    broken = malformed(text)
    with pytest.raises(ValueError):
        json.loads(broken)
