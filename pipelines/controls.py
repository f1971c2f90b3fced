"""Control items: questions whose verdict is known from the tasks themselves, asked among the real
ones, so a judge that says "yes" to everything is caught in the run it would have distorted.

For each rubric a run asks, the round in which it first appears gets a few controls built from that
round's own questions (never from outside data), each checked by a rule before it is used:
- ``answer_correctness``: the gold answer against itself (known correct: the deterministic matcher
  says correct); the gold against another question's gold, or a perturbed number (known incorrect:
  the matcher says incorrect);
- ``groundedness``: a value taken verbatim from one tool output, against that output (known
  supported) and against another question's outputs that do not hold it (known not supported);
- ``trajectory_sufficiency``: the reference calls made, each returning its recorded output (known
  sufficient, only where every reference output is recorded), and no call made at all (known
  insufficient);
- ``policy_adherence``: no call attempted (known compliant), and the policy with a rule added that
  the attempted calls break (known violated);
- ``open_ended``: no answer at all (known to fail every criterion); there is no known pass.
At most max(6, 5%) of the rubric's questions in that round, half known to pass and half known to
fail where both can be built, chosen and shuffled among the real questions with the run's seed (so
a rerun asks the same controls, answered from the cache). A control's verdict counts per judge: a
vote whose label's outcome is the known one is right; an abstention is not counted.

With ``controls = "gate"`` (the default), a judge whose control accuracy on a rubric is below the
threshold (0.8) has its votes on that rubric set aside as abstentions (``control_failed``) before the
panel's decisions are applied: a lenient judge cannot move verdicts silently (a panel left without
enough votes decides nothing: unresolved). ``"report"`` measures and reports only; ``"off"`` asks none.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from judge import JudgeRequest, Outcome, PanelDecision
from pipelines.matching import AnswerLabel, compare_answer, value_in_text

ControlsMode = Literal["off", "report", "gate"]
CONTROL_KEY = "control/"  # the prefix of a control's request key
MIN_CONTROLS = 6  # per rubric, at least this many (when they can be built), at most 5% of its questions beyond


class Control(msgspec.Struct, frozen=True):
    """One control question and the outcome its verdict must have (match: known to pass)."""

    request: JudgeRequest
    expected: Outcome
    built_as: str  # how it was made, for the report ("gold against itself", ...)


class ControlStats(msgspec.Struct):
    """One judge's controls on one rubric."""

    known_pass: int = 0
    known_pass_passed: int = 0
    known_fail: int = 0
    known_fail_failed: int = 0
    abstained: int = 0

    @property
    def n(self) -> int:
        return self.known_pass + self.known_fail

    @property
    def accuracy(self) -> float | None:
        return None if not self.n else (self.known_pass_passed + self.known_fail_failed) / self.n


class ControlLedger(msgspec.Struct):
    """Every control asked in the run and how each judge answered it; gating follows from it."""

    mode: ControlsMode = "gate"
    threshold: float = 0.8
    seed: int = 0
    asked: set[str] = msgspec.field(default_factory=set)  # rubrics whose controls were asked
    stats: dict[tuple[str, str], ControlStats] = msgspec.field(default_factory=dict)  # (judge, rubric) -> stats
    calls: int = 0
    cost_usd: float = 0.0

    # ---- building -------------------------------------------------------------------------------
    def for_round(self, requests: Sequence[JudgeRequest], round_index: int) -> list[Control]:
        """Controls for the rubrics of ``requests`` not controlled yet (built from those requests)."""
        if self.mode == "off":
            return []
        out: list[Control] = []
        for rubric in sorted({r.rubric for r in requests} - self.asked):
            own = [r for r in requests if r.rubric == rubric]
            rng = random.Random(f"{self.seed}/{round_index}/{rubric}")
            built = build_controls(rubric, own, rng)
            if built:
                self.asked.add(rubric)
                out += built
        return out

    def shuffled(self, requests: list[JudgeRequest], controls: list[Control], round_index: int) -> tuple[list[JudgeRequest], list[int]]:
        """The real requests and the controls in one seeded order, and where each ended up (the
        real ones first in the index list, then the controls), so decisions can be put back."""
        order = list(range(len(requests) + len(controls)))
        random.Random(f"{self.seed}/{round_index}/order").shuffle(order)
        everything = [*requests, *(c.request for c in controls)]
        placed = [everything[i] for i in order]
        where = [0] * len(order)
        for position, i in enumerate(order):
            where[i] = position
        return placed, where

    # ---- scoring --------------------------------------------------------------------------------
    def record(self, controls: Sequence[Control], decisions: Sequence[PanelDecision], outcomes: dict[str, dict[str, Outcome]]) -> None:
        """Count each judge's votes on the controls; ``outcomes``: rubric -> label -> outcome."""
        for control, decision in zip(controls, decisions, strict=True):
            rubric = control.request.rubric
            labels = outcomes.get(rubric, {})
            self.calls += sum(1 for v in decision.votes if not v.cached and v.abstain_reason not in ("offline_miss", "budget"))
            self.cost_usd += sum(v.cost_usd for v in decision.votes)
            for vote in decision.votes:
                st = self.stats.setdefault((vote.judge, rubric), ControlStats())
                # the judge's own word: a pass the evidence check refused or the code corrected counts as said
                own = vote.said or vote.label
                said = labels.get(own) if own is not None and (not vote.abstained or vote.abstain_reason == "unverified") else None
                if said is None:
                    st.abstained += 1
                    continue
                if control.expected == Outcome.MATCH:
                    st.known_pass += 1
                    st.known_pass_passed += said == Outcome.MATCH
                else:
                    st.known_fail += 1
                    st.known_fail_failed += said != Outcome.MATCH

    def gated(self, rubric: str) -> dict[str, float]:
        """Judges whose votes on ``rubric`` are set aside: their control accuracy there."""
        if self.mode != "gate":
            return {}
        out: dict[str, float] = {}
        for (judge, name), st in self.stats.items():
            accuracy = st.accuracy
            if name == rubric and accuracy is not None and accuracy < self.threshold:
                out[judge] = accuracy
        return out

    def summary(self) -> dict[str, Any]:
        """For summary.json (``judges.controls``): judge -> rubric -> figures, with the settings."""
        judges: dict[str, dict[str, Any]] = {}
        for (judge, rubric), st in sorted(self.stats.items()):
            accuracy = st.accuracy
            judges.setdefault(judge, {})[rubric] = {
                "n": st.n,
                "known_pass": st.known_pass,
                "known_pass_passed": st.known_pass_passed,
                "known_fail": st.known_fail,
                "known_fail_failed": st.known_fail_failed,
                "abstained": st.abstained,
                "accuracy": None if accuracy is None else round(accuracy, 4),
                "gated": self.mode == "gate" and accuracy is not None and accuracy < self.threshold,
            }
        return {"mode": self.mode, "threshold": self.threshold, "calls": self.calls, "cost_usd": round(self.cost_usd, 6), "judges": judges}


def set_aside(decision: PanelDecision, gated: dict[str, float], threshold: float, redecide: Any) -> PanelDecision:
    """``decision`` with the votes of gated judges counted as abstentions, re-tallied by the panel
    (``redecide``); unchanged when no gated judge voted in it."""
    if not gated or not any(v.judge in gated and not v.abstained for v in decision.votes):
        return decision
    why = {judge: f"set aside: control accuracy {accuracy:.2f} on this rubric is below {threshold}" for judge, accuracy in gated.items()}
    result: PanelDecision = redecide(decision, why)
    return result


# ---- the builders -----------------------------------------------------------------------------------


def build_controls(rubric: str, requests: Sequence[JudgeRequest], rng: random.Random) -> list[Control]:
    """Up to max(6, 5%) controls for ``rubric`` from its round's ``requests``, half known to pass."""
    builder = _BUILDERS.get(rubric)
    if builder is None or not requests:
        return []
    want = max(MIN_CONTROLS, math.ceil(0.05 * len(requests)))
    sources = list(requests)
    rng.shuffle(sources)
    passes: list[tuple[dict[str, Any], str]] = []
    fails: list[tuple[dict[str, Any], str]] = []
    for i, source in enumerate(sources):
        others = sources[i + 1 :] + sources[:i]
        p, f = builder(source.material, [o.material for o in others], rng)
        passes += p
        fails += f
        if len(passes) >= want and len(fails) >= want:
            break
    half = want // 2
    take_pass = min(len(passes), max(half, want - len(fails)))
    take_fail = min(len(fails), want - take_pass)
    chosen = [(m, how, Outcome.MATCH) for m, how in _distinct(passes)[:take_pass]] + [(m, how, Outcome.MISMATCH) for m, how in _distinct(fails)[:take_fail]]
    return [Control(JudgeRequest(key=f"{CONTROL_KEY}{rubric}/{k}", rubric=rubric, material=m), expected, how) for k, (m, how, expected) in enumerate(chosen)]


def _distinct(items: list[tuple[dict[str, Any], str]]) -> list[tuple[dict[str, Any], str]]:
    seen: set[str] = set()
    out = []
    for material, how in items:
        key = json.dumps(material, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append((material, how))
    return out


Built = tuple[list[tuple[dict[str, Any], str]], list[tuple[dict[str, Any], str]]]


def _answer(material: dict[str, Any], others: list[dict[str, Any]], rng: random.Random) -> Built:
    golds = material.get("gold_answers") or []
    if not golds:
        return [], []
    base = {"question": material["question"], "gold_answers": golds}
    passes = []
    if compare_answer(golds, golds[0]).label == AnswerLabel.CORRECT:
        passes.append(({**base, "answer": golds[0]}, "the gold answer against itself"))
    fails = []
    for other in others:
        for candidate in other.get("gold_answers") or []:
            if compare_answer(golds, candidate).label == AnswerLabel.INCORRECT:
                fails.append(({**base, "answer": candidate}, "another question's gold answer"))
                break
        if fails:
            break
    if not fails:
        perturbed = _perturbed(golds[0])
        if perturbed is not None and compare_answer(golds, perturbed).label == AnswerLabel.INCORRECT:
            fails.append(({**base, "answer": perturbed}, "the gold answer with its number changed"))
    return passes, fails


def _perturbed(value: Any) -> Any:
    try:
        number = float(str(value).replace(",", "").strip())
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    changed = number * 2 + 7
    return str(int(changed)) if changed == int(changed) else str(changed)


def _leaves(value: Any, depth: int = 0) -> list[Any]:
    """Scalar leaves of a tool output (JSON text parsed), bounded."""
    if depth > 20:
        return []
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        if isinstance(parsed, (dict, list)):
            return _leaves(parsed, depth + 1)
        return [value]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v, depth + 1)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v, depth + 1)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def _claim(output: Any) -> str | None:
    """A value stated verbatim in a tool output: a short text of at least 4 characters, else a number."""
    leaves = _leaves(output)
    texts = [v.strip() for v in leaves if isinstance(v, str) and 4 <= len(v.strip()) <= 80 and any(c.isalpha() for c in v)]
    if texts:
        return texts[0]
    numbers = [v for v in leaves if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return str(numbers[0]) if numbers else None


def _grounded(material: dict[str, Any], others: list[dict[str, Any]], rng: random.Random) -> Built:
    outputs = [o for o in material.get("tool_outputs") or [] if o.get("result") is not None]
    passes, fails = [], []
    for output in outputs:
        claim = _claim(output.get("result"))
        if claim is None:
            continue
        base = {"question": material["question"], "answer": claim}
        passes.append(({**base, "tool_outputs": [output]}, "a value of a tool output, against that output"))
        for other in others:
            unrelated = [o for o in other.get("tool_outputs") or [] if o.get("result") is not None]
            if unrelated and not value_in_text(claim, [o.get("result") for o in unrelated]):
                fails.append(({**base, "tool_outputs": unrelated}, "a value of a tool output, against another question's outputs"))
                break
        break
    return passes, fails


def _sufficiency(material: dict[str, Any], others: list[dict[str, Any]], rng: random.Random) -> Built:
    refs = material.get("reference_calls") or []
    base: dict[str, Any] = {k: material[k] for k in ("question", "reference_calls") if k in material}
    if material.get("gold_answers") is not None:
        base["gold_answers"] = material["gold_answers"]
    passes = []
    if refs and all(r.get("output") is not None for r in refs):
        made = [{"step": i, "name": r["name"], "arguments": r["arguments"], "status": "ok", "result": r["output"]} for i, r in enumerate(refs)]
        passes.append(({**base, "predicted_calls": made}, "the reference calls made, returning their outputs"))
    fails = [({**base, "predicted_calls": []}, "no call made")] if refs else []
    return passes, fails


def _policy(material: dict[str, Any], others: list[dict[str, Any]], rng: random.Random) -> Built:
    base = {"policy": material["policy"], "question": material["question"]}
    passes = [({**base, "calls": []}, "no call attempted")]
    fails = []
    calls = material.get("calls") or []
    if calls:
        name = calls[0]["name"]
        rule = f"{material['policy']}\n\nAdditional rule: never call the tool {name!r}, not even once."
        fails.append(({"policy": rule, "question": material["question"], "calls": calls}, "a rule added that an attempted call breaks"))
    return passes, fails


def _open_ended(material: dict[str, Any], others: list[dict[str, Any]], rng: random.Random) -> Built:
    base = {k: v for k, v in material.items() if k != "answer"}
    return [], [({**base, "answer": None}, "no answer at all")]


_BUILDERS = {
    "answer_correctness": _answer,
    "groundedness": _grounded,
    "trajectory_sufficiency": _sufficiency,
    "policy_adherence": _policy,
    "open_ended": _open_ended,
}


__all__ = ["CONTROL_KEY", "Control", "ControlLedger", "ControlStats", "ControlsMode", "build_controls", "set_aside"]
