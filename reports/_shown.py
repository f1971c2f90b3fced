"""What the drill-down shows of a trajectory, and nothing else: its id, and for each turn the
query, the steps (name, arguments, status, output) and the final answer, each value as the text
report.html shows (``shown_text``: JSON, cut at ``MAX_VALUE_CHARS``).

Why a view and not ``Trajectory``: the report reads up to 2,000 kept trajectories (a long
conversation each), and building their objects cost more than rendering them. A view is made
once per trajectory, from a validated ``Trajectory`` (``from_trajectory``) or, for a record the
grading run wrote itself from validated trajectories, from the plain JSON of its
``model_dump_json`` (``from_dump``: the same texts, no validation), and travels as a few strings
(``to_plain`` / ``from_plain``: what ``marshal`` writes).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from judge import Trajectory

__all__ = ["MAX_VALUE_CHARS", "ShownStep", "ShownTrajectory", "ShownTurn", "shown_text"]

MAX_VALUE_CHARS = 600  # per argument / tool-output cell in the drill-down


def _json_text() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)``, with the C encoder
    that call builds made once (each call built an encoder and its C twin: a quarter of the time
    on tool outputs); ``json.dumps`` itself where the C encoder is missing."""
    make = getattr(json.encoder, "c_make_encoder", None)
    basestring = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or basestring is None:
        return lambda value: json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    markers: dict[int, Any] = {}  # check_circular, as json.dumps does
    encode = make(markers, str, basestring, None, ": ", ", ", True, False, True)  # indent, separators, sort_keys, skipkeys, allow_nan

    def dumps(value: Any) -> str:
        try:
            return "".join(encode(value, 0))
        except BaseException:
            markers.clear()  # an error leaves the containers it was inside marked
            raise

    return dumps


_dumps = _json_text()


def shown_text(value: Any) -> str:
    """A value as the drill-down shows it: a string as it is, anything else as JSON (sorted
    keys), cut at ``MAX_VALUE_CHARS`` with its length said."""
    text = value if isinstance(value, str) else _dumps(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + f"… ({len(text)} chars)"


class ShownStep:
    __slots__ = ("arguments", "name", "output", "status")

    def __init__(self, name: str, arguments: str, status: str, output: str):
        self.name, self.arguments, self.status, self.output = name, arguments, status, output


class ShownTurn:
    """``query``: None or empty as given, else its shown text; ``final_answer``: None, or the
    shown text of the turn's final answer."""

    __slots__ = ("final_answer", "query", "steps")

    def __init__(self, query: str | None, steps: list[ShownStep], final_answer: str | None):
        self.query, self.steps, self.final_answer = query, steps, final_answer


def _step(name: str, arguments: Any, status: str, error: str | None, result: Any) -> ShownStep:
    return ShownStep(name, shown_text(arguments), status, shown_text(error if error else result))


def _turn(query: str | None, steps: list[ShownStep], final_answer: Any) -> ShownTurn:
    return ShownTurn(shown_text(query) if query else query, steps, None if final_answer is None else shown_text(final_answer))


class ShownTrajectory:
    __slots__ = ("trajectory_id", "turns")

    def __init__(self, trajectory_id: str, turns: list[ShownTurn]):
        self.trajectory_id, self.turns = trajectory_id, turns

    @classmethod
    def from_trajectory(cls, t: Trajectory) -> ShownTrajectory:
        return cls(
            t.trajectory_id, [_turn(tt.query, [_step(s.name, s.arguments, s.status, s.error, s.result) for s in tt.steps], tt.final_answer) for tt in t.turns]
        )

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> ShownTrajectory:
        """From ``json.loads(t.model_dump_json())`` of a ``Trajectory`` ``t``: the same view as
        ``from_trajectory(t)`` (the dump holds every field, defaults included)."""
        return cls(
            d["trajectory_id"],
            [
                _turn(tt["query"], [_step(s["name"], s["arguments"], s["status"], s["error"], s["result"]) for s in tt["steps"]], tt["final_answer"])
                for tt in d["turns"]
            ],
        )

    def to_plain(self) -> tuple[Any, ...]:
        """Nested tuples of strings (``marshal`` writes them quickly)."""
        return (self.trajectory_id, tuple((tt.query, tuple((s.name, s.arguments, s.status, s.output) for s in tt.steps), tt.final_answer) for tt in self.turns))

    @classmethod
    def from_plain(cls, plain: tuple[Any, ...]) -> ShownTrajectory:
        tid, turns = plain
        return cls(tid, [ShownTurn(q, [ShownStep(*s) for s in steps], fa) for q, steps, fa in turns])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShownTrajectory) and self.to_plain() == other.to_plain()

    __hash__ = None  # type: ignore[assignment]
