"""The one interface every check of the waterfall implements, and the order they run in.

A check declares which other checks' results it reads (``depends_on``) and returns a
``CheckOutcome`` (its ``StageResult`` plus an optional detail kept for scores and drill-down). The
grader runs checks in dependency order and, when a judge decides one, re-runs exactly the checks
that depend on it, never one a judge decided. Waterfall order (attribution: earliest failure wins)
and evaluation order are separate: the calls check reads the answer check, which comes after it in
the waterfall.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import msgspec

from judge import Check, StageResult
from pipelines.checks._context import TurnContext


class CheckOutcome(msgspec.Struct, frozen=True):
    result: StageResult
    detail: Any = None  # e.g. the calls check's full matching (scores, drill-down)


class WaterfallCheck(Protocol):
    check: Check
    depends_on: tuple[Check, ...]

    def run(self, ctx: TurnContext, decided: Mapping[Check, StageResult]) -> CheckOutcome:
        """``decided`` holds the results of every check in ``depends_on`` (and any earlier one)."""
        ...


def evaluation_order(checks: Sequence[WaterfallCheck]) -> list[WaterfallCheck]:
    """Checks ordered so each runs after the checks it depends on (stable: ties keep waterfall order).

    Iterative (Kahn's algorithm); a cycle is a programming error."""
    by_name = {c.check: c for c in checks}
    remaining = list(checks)
    done: set[Check] = set()
    order: list[WaterfallCheck] = []
    while remaining:
        ready = next((c for c in remaining if all(d in done or d not in by_name for d in c.depends_on)), None)
        if ready is None:
            raise ValueError(f"checks depend on each other in a cycle: {[c.check.value for c in remaining]}")
        order.append(ready)
        done.add(ready.check)
        remaining.remove(ready)
    return order


def dependents(checks: Sequence[WaterfallCheck], of: Check) -> set[Check]:
    """Every check whose result depends, directly or through others, on ``of``."""
    found: set[Check] = set()
    frontier = [of]
    while frontier:
        current = frontier.pop()
        for c in checks:
            if current in c.depends_on and c.check not in found:
                found.add(c.check)
                frontier.append(c.check)
    return found
