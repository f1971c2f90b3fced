"""Loops: identical calls repeated after an identical result.

Within one turn, a step is a **loop repeat** when an earlier step made the same call (same tool,
canonically equal arguments) and got the same outcome (same status and the same response up to
order, or the same error). Nothing new could be learnt from it. A step with no recorded result
(``unknown``) is never a repeat: its outcome is not known to be identical; nor is one whose
arguments were not recorded: the call is not known to be the same.

``loop_repeats`` counts the repeats of a trajectory; ``looping`` flags a trajectory where one
call was repeated at least ``LOOP_MIN_REPEATS`` times (made three times with one outcome): a
single duplicate is an inefficiency, a call made over and over is a loop.
"""

from __future__ import annotations

from collections import Counter

import msgspec

from judge import Step, canonical_json, response_key
from pipelines.orchestration._alignment import TurnView

LOOP_MIN_REPEATS = 2


class LoopFacts(msgspec.Struct, frozen=True):
    loop_repeats: int
    looping: bool


def _outcome(step: Step) -> str:
    if step.status == "ok":
        return "ok:" + response_key(step.result) + (f"|fault:{step.fault}" if step.fault else "")
    return f"{step.status}:{step.error or ''}|{canonical_json(step.result)}|fault:{step.fault or ''}"


def loop_facts(views: list[TurnView]) -> LoopFacts:
    repeats = 0
    worst = 0
    for v in views:
        if len({s.name for s in v.steps}) == len(v.steps):  # no tool called twice: nothing can repeat
            continue
        known = [s for s in v.steps if s.status != "unknown" and s.arguments_recorded]
        names = Counter(s.name for s in known)
        candidates = [s for s in known if names[s.name] >= 2]  # a tool called once cannot repeat
        calls = [(s.name, canonical_json(s.arguments)) for s in candidates]
        made = Counter(calls)
        seen: Counter[tuple[str, str, str]] = Counter()
        for s, call in zip(candidates, calls, strict=True):
            if made[call] < 2:  # a call made once cannot repeat (skips the canonical form of its outcome)
                continue
            key = (*call, _outcome(s))
            if seen[key]:
                repeats += 1
                worst = max(worst, seen[key])
            seen[key] += 1
    return LoopFacts(repeats, worst >= LOOP_MIN_REPEATS)
