"""Seeded fault injection: a share of tool calls fails the way real tools fail.

Spec (``--faults``, repeatable): ``rate=0.1,kinds=error,timeout,empty,malformed,seed=7``; a
spec with ``tool=NAME`` applies to that tool only and overrides the general one for it. A bare
word after ``kinds=`` continues the list.

Kinds, and what the agent sees:
- ``error``: the call is not executed; "Error: ..." (step ``status="error"``);
- ``timeout``: the call is not executed; "Error: the tool did not answer within ..." (simulated,
  no waiting; ``status="error"``);
- ``empty``: the call runs (its writes happen) but the agent gets an empty result;
- ``malformed``: the call runs but the agent gets its result's JSON cut in half.
``empty`` and ``malformed`` apply to calls that succeeded; a call that failed on its own keeps
its real error. Every injected fault is recorded on its step (``fault``).

Determinism: whether call *n* of a trajectory faults, and how, is a hash of (seed, trajectory
id, n, tool name): independent of concurrency and scheduling, different for every trial, the
same on a rerun (so a cached rerun replays exactly).
"""

from __future__ import annotations

import hashlib
import json

import msgspec

from judge import ConfigurationError

FAULT_KINDS = ("error", "timeout", "empty", "malformed")
_KEYS = ("rate", "kinds", "seed", "tool")
_SCALE = float(1 << 64)


class FaultSpecError(ConfigurationError):
    """A ``--faults`` value that cannot be read; the message names the spec and the part."""


class FaultRule(msgspec.Struct, frozen=True):
    rate: float
    kinds: tuple[str, ...]
    tool: str | None = None


class FaultPlan(msgspec.Struct, frozen=True):
    rules: tuple[FaultRule, ...]  # at most one general rule (tool=None); per-tool rules override it
    seed: int = 0
    specs: tuple[str, ...] = ()

    def rule_for(self, tool: str) -> FaultRule | None:
        general = None
        for rule in self.rules:
            if rule.tool == tool:
                return rule
            if rule.tool is None:
                general = rule
        return general

    def pick(self, trajectory_id: str, call_index: int, tool: str) -> str | None:
        """The fault kind injected into call ``call_index`` (0-based, whole trajectory), or None."""
        rule = self.rule_for(tool)
        if rule is None or rule.rate <= 0:
            return None
        digest = hashlib.sha256(f"{self.seed}\x1f{trajectory_id}\x1f{call_index}\x1f{tool}".encode()).digest()
        if int.from_bytes(digest[:8], "big") / _SCALE >= rule.rate:
            return None
        return rule.kinds[int.from_bytes(digest[8:16], "big") % len(rule.kinds)]

    def describe(self) -> dict[str, object]:
        return {
            "specs": list(self.specs),
            "seed": self.seed,
            "rules": [{"tool": r.tool, "rate": r.rate, "kinds": list(r.kinds)} for r in self.rules],
        }


def parse_faults(specs: list[str], default_seed: int = 0) -> FaultPlan | None:
    """Read the ``--faults`` values (None when there are none)."""
    if not specs:
        return None
    rules: list[FaultRule] = []
    seed: int | None = None
    for spec in specs:
        rule, spec_seed = _parse_one(spec)
        if spec_seed is not None:
            if seed is not None and seed != spec_seed:
                raise FaultSpecError(f"--faults {spec!r}: seed={spec_seed} contradicts seed={seed} given earlier (one seed per run)")
            seed = spec_seed
        if any(r.tool == rule.tool for r in rules):
            what = f"tool={rule.tool}" if rule.tool else "the general rule (no tool=)"
            raise FaultSpecError(f"--faults {spec!r}: {what} is given twice")
        rules.append(rule)
    return FaultPlan(rules=tuple(rules), seed=default_seed if seed is None else seed, specs=tuple(specs))


def _parse_one(spec: str) -> tuple[FaultRule, int | None]:
    values: dict[str, list[str]] = {}
    current: str | None = None
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if eq:
            if key not in _KEYS:
                raise FaultSpecError(f"--faults {spec!r}: unknown key {key!r}; keys are {', '.join(_KEYS)}")
            if key in values:
                raise FaultSpecError(f"--faults {spec!r}: {key} is given twice")
            values[key] = [value.strip()]
            current = key
        elif current == "kinds":
            values["kinds"].append(part)
        else:
            raise FaultSpecError(f"--faults {spec!r}: {part!r} is not key=value (only kinds= takes a list)")
    try:
        rate = float(values["rate"][0]) if "rate" in values else 0.0
    except ValueError:
        raise FaultSpecError(f"--faults {spec!r}: rate must be a number between 0 and 1") from None
    if not 0.0 <= rate <= 1.0:
        raise FaultSpecError(f"--faults {spec!r}: rate must be between 0 and 1, got {rate}")
    if "rate" not in values:
        raise FaultSpecError(f"--faults {spec!r}: rate= is required, e.g. rate=0.1")
    kinds = tuple(k.lower() for k in values.get("kinds", ["error"]) if k)
    unknown = [k for k in kinds if k not in FAULT_KINDS]
    if unknown or not kinds:
        raise FaultSpecError(f"--faults {spec!r}: unknown fault kind(s) {unknown}; kinds are {', '.join(FAULT_KINDS)}")
    seed = None
    if "seed" in values:
        try:
            seed = int(values["seed"][0])
        except ValueError:
            raise FaultSpecError(f"--faults {spec!r}: seed must be an integer") from None
    tool = values["tool"][0] if "tool" in values else None
    if tool == "":
        raise FaultSpecError(f"--faults {spec!r}: tool= needs a tool name")
    return FaultRule(rate=rate, kinds=tuple(dict.fromkeys(kinds)), tool=tool), seed


def malformed(text: str) -> str:
    """The first half of a result's text: JSON cut mid-way, as a dropped connection leaves it
    (never itself valid JSON: a half that still parses gets an unmatched brace)."""
    cut = text[: len(text) // 2]
    if not cut.strip():
        return "{"
    try:
        json.loads(cut)
    except ValueError:
        return cut
    return "{" + cut
