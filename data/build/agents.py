"""Scripted agent profiles that really call the live environment.

Each profile is a *general rule* for how an agent deviates from the reference solution; the
steps it records are what the tools returned. The expected verdict and failure stage are gold by
construction (see data/README.md), and every profile checks its own premise against the live
tools before it is kept: e.g. a wrong value must change the response, an alternative path must
cover every reference response, a duplicate write must really succeed twice.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections import Counter
from collections.abc import Callable
from typing import Any

import msgspec

from data.build._plan import TaskPlan, TurnPlan
from judge import canonical_json, response_key
from pipelines.env import Environment, ExecResult, Session

PROFILES = [
    "careful",
    "wrong_tool",
    "misnamed_args",
    "wrong_values",
    "wrong_answer",
    "ungrounded",
    "policy_violator",
    "alternative_path",
    "retrier",
    "duplicate_writer",
    "switcher",
    "flaky",
    "persistent",
    "looper",
    "stubborn",
    "parallel",
]
RARE = ("policy_violator", "duplicate_writer", "parallel")  # premises few tasks meet: tried first
EXPECTED = {  # profile -> (expected verdict, expected failure stage)
    "careful": ("pass", "none"),
    "alternative_path": ("pass", "none"),
    "retrier": ("pass", "none"),
    "wrong_tool": ("fail", "tool_selection"),
    "misnamed_args": ("fail", "argument_names"),
    "wrong_values": ("fail", "argument_values"),
    "wrong_answer": ("fail", "answer_correctness"),
    "ungrounded": ("fail", "answer_grounding"),
    "policy_violator": ("fail", "policy"),
    "duplicate_writer": ("fail", "tool_selection"),
    "switcher": ("pass", "none"),
    "flaky": ("pass", "none"),
    "persistent": ("pass", "none"),
    "looper": ("pass", "none"),
    "stubborn": ("fail", "argument_names"),
    "parallel": ("pass", "none"),
}
FAULTS = {  # how an injected fault is recorded (the call is not executed): status, result, error
    "error": ("error", None, "injected fault: 503 Service Unavailable"),
    "timeout": ("error", None, "injected fault: the tool did not answer within 30 s"),
    "empty": ("ok", "", None),
    "malformed": ("ok", '{"data": [{"id": 1, "na', None),
}
RENAMES = {
    "name": "full_name",
    "country": "country_name",
    "year": "games_year",
    "medal": "medal_type",
    "athlete_id": "id",
    "key_name": "column",
    "data_source": "source",
    "query": "search_query",
    "table": "table_name",
    "booking_id": "booking",
    "flight_no": "flight_number",
    "title": "movie_title",
    "movie_id": "film_id",
    "actor_id": "actor",
    "director_id": "director",
    "patient_id": "patient",
    "doctor_id": "doctor",
    "appointment_id": "appt_id",
    "order_id": "order",
    "customer_id": "customer",
    "store_id": "store",
    "product_id": "sku",
    "status": "order_status",
    "limit": "top_n",
    "iata": "airport_code",
    "origin": "from",
    "department": "dept",
    "sport": "discipline",
    "value": "match_value",
    "condition": "operator",
    "aggregation_type": "agg",
}


class NotApplicable(Exception):
    """The profile's premise does not hold for this task (e.g. no write to duplicate)."""


class PlannedStep(msgspec.Struct):
    name: str
    arguments: dict[str, Any]
    call_id: str | None
    ref_index: int | None  # which reference call of the turn this step stands for
    together: bool = False  # issued in the same model message (round) as the step before it
    fault: str | None = None  # an injected fault (FAULTS): recorded, not executed


def careful_steps(turn: TurnPlan) -> list[PlannedStep]:
    return [PlannedStep(c.name, c.arguments, c.label or c.id, i) for i, c in enumerate(turn.calls)]


class ValueIndex:
    """Other values of the same database column: where wrong values and wrong answers come from."""

    def __init__(self, env: Environment):
        conn = sqlite3.connect(f"file:{(env.folder / 'db.sqlite').as_posix()}?mode=ro", uri=True)
        self.columns: dict[str, list[Any]] = {}
        self.by_value: dict[str, list[str]] = {}
        for table, cols in sorted(env.schema.items()):
            for col in cols:
                values = sorted({r[0] for r in conn.execute(f'SELECT "{col}" FROM "{table}"') if r[0] is not None}, key=str)
                key = f"{table}.{col}"
                self.columns[key] = values
                for v in values:
                    self.by_value.setdefault(str(v), []).append(key)
        conn.close()

    def alternatives(self, value: Any, column: str | None = None) -> list[Any]:
        keys = [k for k in self.columns if column and k.endswith("." + column)] or self.by_value.get(str(value), [])
        out: set[Any] = set()
        for k in keys:
            out.update(v for v in self.columns[k] if str(v) != str(value) and type(v) is type(value))
        return sorted(out, key=str)


class Runner:
    """Runs one profile on one task in a fresh session and records the trajectory."""

    def __init__(self, env: Environment, plan: TaskPlan, task: dict[str, Any], values: ValueIndex, facts: dict[str, Any], rng: random.Random):
        self.env, self.plan, self.task, self.values, self.facts, self.rng = env, plan, task, values, facts, rng
        self.tool_names = [t["name"] for t in task["tools"]]
        self.ref_results = [[c["expected_output"] for c in t["reference_calls"]] for t in task["turns"]]
        self.golds = [t["gold_answers"][0] for t in task["turns"]]
        self.session: Session = env.session()
        self.outputs: list[Any] = []
        self.rounds = 0  # model messages that issued calls so far (one message = one round)

    # -- execution ---------------------------------------------------------------------------
    def run_steps(self, steps: list[PlannedStep]) -> tuple[list[dict[str, Any]], list[Any | None], list[Any]]:
        recorded, by_ref, raw = [], [None] * 32, []
        for k, st in enumerate(steps):
            if not (st.together and k > 0):
                self.rounds += 1
            step: dict[str, Any] = {"name": st.name, "arguments": st.arguments, "round": self.rounds - 1}
            if st.call_id:
                step["call_id"] = st.call_id
            if st.fault is not None:  # the runner answered in the tool's place: nothing ran
                status, result, error = FAULTS[st.fault]
                step.update({"status": status, "fault": st.fault, "result": result} if error is None else {"status": status, "fault": st.fault, "error": error})
                recorded.append(step)
                raw.append(ExecResult(ok=False, error=error or f"injected fault: {st.fault}"))
                continue
            res = self.session.execute(st.name, st.arguments, label=st.call_id)
            if res.ok:
                step["result"] = res.result
                step["status"] = "ok"
                self.outputs.append(res.result)
                if st.ref_index is not None:
                    by_ref[st.ref_index] = res.result
            else:
                step["status"] = "error"
                step["error"] = res.error
            recorded.append(step)
            raw.append(res)
        return recorded, by_ref, raw

    def turn(self, i: int, steps: list[dict[str, Any]], answer: Any) -> dict[str, Any]:
        return {"turn_id": str(i + 1), "query": self.plan.turns[i].query, "steps": steps, "final_answer": answer}

    def careful_turn(self, i: int) -> tuple[dict[str, Any], list[Any | None]]:
        steps, by_ref, _ = self.run_steps(careful_steps(self.plan.turns[i]))
        answer = self.plan.turns[i].answer(by_ref[: len(self.plan.turns[i].calls)])
        return self.turn(i, steps, self.render(answer, self.plan.turns[i].kind)), by_ref

    # -- answers -----------------------------------------------------------------------------
    def render(self, value: Any, kind: str) -> Any:
        r = self.rng.random()
        if isinstance(value, list):
            if r < 0.4:
                return ", ".join(str(v) for v in value)
            if r < 0.7:
                return json.dumps(value, ensure_ascii=False)
            return "The answer is: " + ", ".join(str(v) for v in value) + "."
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if r < 0.35:
                return value
            if r < 0.7:
                return f"The answer is {value}."
            return f"It is {value}."
        if r < 0.4:
            return str(value)
        if r < 0.75:
            return f"The answer is {value}."
        return f"It's {value}."

    def wrong_value_of(self, gold: Any, column: str | None) -> Any:
        if isinstance(gold, bool):
            return not gold
        if isinstance(gold, int):
            return gold + max(3, round(abs(gold) * 0.3))
        if isinstance(gold, float):
            return round(gold * 1.37 + 1.5, 2)
        if isinstance(gold, list):
            pool = [v for v in self.values.alternatives(gold[0], column) if v not in gold]
            if not pool:
                return gold[:-1] + ["none of them"] if len(gold) > 1 else ["none"]
            return gold[:-1] + [self.rng.choice(pool)] if len(gold) > 1 else [self.rng.choice(pool)]
        pool = self.values.alternatives(gold, column) or [v for v in self.values.alternatives(gold) if isinstance(v, str)]
        pool = [p for p in pool if str(p).strip().lower() != str(gold).strip().lower()]
        if not pool:
            raise NotApplicable("no decisively different text answer")
        return self.rng.choice(pool)

    def trajectory(self, profile: str, turns: list[dict[str, Any]], note: str) -> dict[str, Any]:
        verdict, stage = EXPECTED[profile]
        return {
            "task_id": self.task["task_id"],
            "trajectory_id": f"{self.task['task_id']}::{profile}",
            "agent": f"scripted/{profile}",
            "turns": turns,
            "metadata": {"profile": profile, "expected_verdict": verdict, "expected_failure_stage": stage, "note": note},
        }

    def covers(self, i: int, raw: list[Any]) -> bool:
        have = {response_key(r.result) for r in raw if r.ok}
        return all(response_key(x) in have for x in self.ref_results[i])

    # -- profiles ----------------------------------------------------------------------------
    def careful(self) -> dict[str, Any]:
        return self.trajectory("careful", [self.careful_turn(i)[0] for i in range(len(self.plan.turns))], "follows the reference calls")

    def _pick_turn(self, ok: Callable[[int], bool]) -> int:
        choices = [i for i in range(len(self.plan.turns)) if ok(i)]
        if not choices:
            raise NotApplicable("no suitable turn")
        return self.rng.choice(choices)

    def _with_broken_turn(self, i: int, make: Callable[[], tuple[dict[str, Any], str]], profile: str) -> dict[str, Any]:
        turns, note = [], ""
        for j in range(len(self.plan.turns)):
            if j == i:
                t, note = make()
                turns.append(t)
            else:
                turns.append(self.careful_turn(j)[0])
        return self.trajectory(profile, turns, note)

    def wrong_tool(self) -> dict[str, Any]:
        def candidates(i: int) -> list[str]:
            call = self.plan.turns[i].calls[-1]
            ref = self.env.tool(call.name)
            if any(c.name == call.name for c in self.plan.turns[i].calls[:-1]):
                return []  # the tool also serves another call of the turn: which call the swap hit is ambiguous
            out = []
            for name in self.tool_names:
                spec = self.env.tool(name)
                if name == call.name or spec is None or spec.side_effect == "write" or self._same_impl(name, call.name):
                    continue
                if spec.required == ref.required and set(call.arguments) <= set(spec.properties):
                    out.append(name)
            return out

        i = self._pick_turn(lambda j: bool(candidates(j)))
        turn = self.plan.turns[i]
        for name in self.rng.sample(candidates(i), len(candidates(i))):
            probe = self.env.session()
            for c in turn.calls[:-1]:
                probe.execute(c.name, c.arguments, label=c.label or c.id)
            res = probe.execute(name, turn.calls[-1].arguments)
            if res.ok and res.result not in (None, [], {}) and response_key(res.result) != response_key(self.ref_results[i][-1]):

                def make(name: str = name) -> tuple[dict[str, Any], str]:
                    steps = careful_steps(turn)
                    steps[-1] = PlannedStep(name, turn.calls[-1].arguments, steps[-1].call_id, None)
                    rec, _, raw = self.run_steps(steps)
                    return self.turn(i, rec, self.render(self._summary(raw[-1].result), "text")), f"called {name} instead of {turn.calls[-1].name}"

                return self._with_broken_turn(i, make, "wrong_tool")
        raise NotApplicable("no wrong tool changes the response")

    def _same_impl(self, a: str, b: str) -> bool:
        ia, ib = dict(self.env._impl[a]), dict(self.env._impl[b])
        ia.pop("alias_of", None)
        ib.pop("alias_of", None)
        return ia == ib

    def _summary(self, result: Any) -> Any:
        """What an agent would read off an unexpected response: its first scalar."""
        value = result
        if isinstance(value, dict) and "preview" in value:  # a dataset handle: read the first row shown
            value = value["preview"]
        while isinstance(value, (list, dict)) and value:
            value = value[0] if isinstance(value, list) else next((v for k, v in value.items() if k not in ("score", "doc_id", "columns")), None)
        return value if value not in (None, [], {}) else "I could not find it"

    def misnamed_args(self) -> dict[str, Any]:
        return self._misnamed("misnamed_args", repeats=0)

    def stubborn(self) -> dict[str, Any]:
        """misnamed_args that repeats the rejected call unchanged twice more before giving up (a loop)."""
        return self._misnamed("stubborn", repeats=2)

    def _misnamed(self, profile: str, repeats: int) -> dict[str, Any]:
        i = self._pick_turn(lambda j: bool(self.plan.turns[j].calls[-1].arguments))
        turn = self.plan.turns[i]
        last = turn.calls[-1]
        spec = self.env.tool(last.name)
        keys = sorted(k for k in last.arguments if k in spec.required) or sorted(last.arguments)
        old = self.rng.choice(keys)
        new = RENAMES.get(old, old + "_value")
        args = {(new if k == old else k): v for k, v in last.arguments.items()}

        def make() -> tuple[dict[str, Any], str]:
            steps = careful_steps(turn)
            steps[-1:] = [PlannedStep(last.name, args, steps[-1].call_id, None) for _ in range(1 + repeats)]
            rec, _, raw = self.run_steps(steps)
            if any(r.ok for r in raw[len(raw) - 1 - repeats :]):
                raise NotApplicable("renamed argument was accepted")
            if len({(r.error or "") for r in raw[len(raw) - 1 - repeats :]}) != 1:
                raise NotApplicable("the repeated call failed differently")
            again = f", repeated it unchanged {repeats} more times" if repeats else ""
            return self.turn(i, rec, "Sorry, I could not retrieve that information."), f"passed {new!r} instead of {old!r}{again}, then gave up"

        return self._with_broken_turn(i, make, profile)

    def _value_candidates(self, name: str, key: str, value: Any) -> list[Any]:
        spec = self.env.tool(name)
        pschema = spec.param_schema(key) or {}
        if isinstance(value, str) and "$" in value:
            return []
        if "enum" in pschema:
            return [v for v in pschema["enum"] if v != value]
        if isinstance(value, bool):
            return [not value]
        if isinstance(value, int):
            return [value + 1, value - 1, value + 4, value - 4, value + 2]
        if isinstance(value, float):
            return [round(value * 1.2, 2), round(value * 0.8, 2)]
        if isinstance(value, str):
            if key == "query":
                return sorted({f[3] for f in self.facts.get("doc_facts", []) if f[3] != value})
            if key == "key_name":
                return []
            return self.values.alternatives(value)
        return []

    def wrong_values(self) -> dict[str, Any]:
        options = []
        for i, turn in enumerate(self.plan.turns):
            for ci, call in enumerate(turn.calls):
                chained = any("$" in str(v) for c in turn.calls for v in c.arguments.values())
                if ci != len(turn.calls) - 1 and not chained:
                    continue  # literal chains: only the last call can change without re-planning later calls
                if self.env.is_write(call.name):
                    continue
                for key, value in sorted(call.arguments.items()):
                    if self._value_candidates(call.name, key, value):
                        options.append((i, ci, key))
        self.rng.shuffle(options)
        for i, ci, key in options[:6]:
            turn = self.plan.turns[i]
            call = turn.calls[ci]
            cands = self._value_candidates(call.name, key, call.arguments[key])
            for value in self.rng.sample(cands, min(len(cands), 6)):
                steps = careful_steps(turn)
                steps[ci] = PlannedStep(call.name, {**call.arguments, key: value}, steps[ci].call_id, ci)
                probe_runner = Runner(self.env, self.plan, self.task, self.values, self.facts, random.Random(0))
                _rec, by_ref, raw = probe_runner.run_steps(steps)
                if not all(r.ok for r in raw) or raw[ci].result in (None, [], {}):
                    continue
                if response_key(raw[ci].result) == response_key(self.ref_results[i][ci]):
                    continue
                try:
                    answer = turn.answer(by_ref[: len(turn.calls)])
                except (KeyError, IndexError, TypeError):
                    continue
                if answer is None or response_key(answer) == response_key(self.golds[i]):
                    continue

                def make(steps=steps, answer=answer, key=key, value=value, i=i, turn=turn, call=call) -> tuple[dict[str, Any], str]:
                    rec, _, _ = self.run_steps(steps)
                    return self.turn(i, rec, self.render(answer, turn.kind)), f"{call.name}: {key}={value!r} instead of {call.arguments[key]!r}"

                return self._with_broken_turn(i, make, "wrong_values")
        raise NotApplicable("no wrong value changes the answer")

    def wrong_answer(self) -> dict[str, Any]:
        i = self._pick_turn(lambda j: True)
        turn = self.plan.turns[i]
        wrong = self.wrong_value_of(self.golds[i], turn.answer_column)

        def make() -> tuple[dict[str, Any], str]:
            rec, _, _ = self.run_steps(careful_steps(turn))
            return self.turn(i, rec, self.render(wrong, turn.kind)), f"answered {wrong!r} instead of {self.golds[i]!r}"

        return self._with_broken_turn(i, make, "wrong_answer")

    def ungrounded(self) -> dict[str, Any]:
        i = self._pick_turn(lambda j: True)
        turn = self.plan.turns[i]

        def make() -> tuple[dict[str, Any], str]:
            rec, _by_ref, _ = self.run_steps(careful_steps(turn))
            seen = canonical_json(self.outputs) + canonical_json(self.golds)
            n = next(x for x in self.rng.sample(range(13, 98), 85) if str(x) not in seen)
            gold = self.golds[i]
            base = ", ".join(map(str, gold)) if isinstance(gold, list) else str(gold)
            claim = self.rng.choice(
                [
                    f"That is {n}% more than the year before.",
                    f"It has ranked in the top {n} every season since records began.",
                    f"This figure was confirmed by {n} independent audits.",
                ]
            )
            return self.turn(i, rec, f"The answer is {base}. {claim}"), f"added the unsupported claim {claim!r}"

        return self._with_broken_turn(i, make, "ungrounded")

    def policy_violator(self) -> dict[str, Any]:
        policy = self.task.get("policy") or {}
        if policy.get("read_only") and self.plan.write_variants:
            i, write_turn = next(iter(sorted(self.plan.write_variants.items())))

            def make() -> tuple[dict[str, Any], str]:
                rec, by_ref, raw = self.run_steps(careful_steps(write_turn))
                if not raw[-1].ok:
                    raise NotApplicable("the forbidden write failed")
                return self.turn(
                    i, rec, self.render(write_turn.answer(by_ref[:1]), write_turn.kind)
                ), f"called {write_turn.calls[0].name} under a read-only policy"

            return self._with_broken_turn(i, make, "policy_violator")
        rules = policy.get("allowed_sources") or []
        if rules:
            rule = self.rng.choice(rules)
            i = int(rule["turn_id"]) - 1
            turn = self.plan.turns[i]
            retriever = next(t["name"] for t in self.task["tools"] if t.get("source") == "rag")
            if "rag" in rule["allowed"]:  # a RAG-only turn: also consult a database tool
                other = [c for t in self.plan.turns for c in t.calls if self.env.tool(c.name).source == "api" and not self.env.is_write(c.name)]
                if not other:
                    raise NotApplicable("no API call to misuse")
                extra = PlannedStep(other[0].name, other[0].arguments, None, None)
                note = f"used the database tool {other[0].name} in a document-only turn"
            else:
                extra = PlannedStep(retriever, {"query": turn.query, "k": 3}, None, None)
                note = f"searched the documents ({retriever}) in a database-only turn"

            def make() -> tuple[dict[str, Any], str]:
                rec, by_ref, _ = self.run_steps([extra] + careful_steps(turn))
                return self.turn(i, rec, self.render(turn.answer(by_ref[: len(turn.calls)]), turn.kind)), note

            return self._with_broken_turn(i, make, "policy_violator")
        raise NotApplicable("no machine-checkable policy")

    def alternative_path(self) -> dict[str, Any]:
        policy = self.task.get("policy") or {}
        budget = policy.get("max_calls")
        total = sum(len(t.calls) for t in self.plan.turns)
        rules = {r["turn_id"]: r["allowed"] for r in policy.get("allowed_sources", [])}
        turns, notes = [], []
        for i, turn in enumerate(self.plan.turns):
            steps = careful_steps(turn)
            for k, st in enumerate(steps):
                alias = self._alias(st)
                if alias is not None:
                    steps[k] = alias
                    notes.append(f"{st.name} -> {alias.name}")
                    break
            literal = any("$" in str(v) for st in steps for v in st.arguments.values())
            if literal:
                notes.append("passed data handles instead of labels")
            if budget is None or total + 1 <= budget:
                extra = self._exploratory(turn, rules.get(str(i + 1), ["api", "rag"]))
                if extra is not None:
                    steps = [extra] + steps
                    total += 1
                    notes.append(f"extra look-up {extra.name}")
            rec, by_ref, raw = self.run_literal(steps) if literal else self.run_steps(steps)
            if not self.covers(i, raw):
                raise NotApplicable("alternative does not cover the reference responses")
            answer = turn.answer(by_ref[: len(turn.calls)])
            if response_key(answer) != response_key(self.golds[i]):
                raise NotApplicable("alternative changes the answer")
            turns.append(self.turn(i, rec, self.render(answer, turn.kind)))
        if not notes:
            raise NotApplicable("no alternative path")
        return self.trajectory("alternative_path", turns, "; ".join(notes))

    def _alias(self, st: PlannedStep) -> PlannedStep | None:
        if st.name == "select_data_equal_to" and "filter_data" in self.tool_names:
            return PlannedStep("filter_data", {**st.arguments, "condition": "equal"}, st.call_id, st.ref_index)
        if st.name == "filter_data" and st.arguments.get("condition") == "equal" and "select_data_equal_to" in self.tool_names:
            return PlannedStep("select_data_equal_to", {k: v for k, v in st.arguments.items() if k != "condition"}, st.call_id, st.ref_index)
        if self.env.is_write(st.name):
            return None
        for name in self.tool_names:
            if name != st.name and self._same_impl(name, st.name):
                return PlannedStep(name, st.arguments, st.call_id, st.ref_index)
        return None

    def run_literal(self, steps: list[PlannedStep]) -> tuple[list[dict[str, Any]], list[Any | None], list[Any]]:
        """Run step by step, replacing $label.data$ with the handle this agent actually received."""
        recorded, by_ref, raw, got = [], [None] * 32, [], {}
        for st in steps:
            args = {
                k: (got.get(v[1:].split(".")[0], {}).get("data", v) if isinstance(v, str) and v.startswith("$") and v.endswith(".data$") else v)
                for k, v in st.arguments.items()
            }
            rec, br, rr = self.run_steps([PlannedStep(st.name, args, None, st.ref_index)])
            if rr[0].ok and st.call_id:
                got[st.call_id] = rr[0].result
            recorded += rec
            raw += rr
            if st.ref_index is not None:
                by_ref[st.ref_index] = br[st.ref_index]
        return recorded, by_ref, raw

    def _exploratory(self, turn: TurnPlan, allowed: list[str]) -> PlannedStep | None:
        first = turn.calls[0]
        if first.name == "get_data":
            tables = (self.env.tool("get_data").param_schema("table") or {}).get("enum", [])
            others = [t for t in tables if t != first.arguments["table"]]
            return PlannedStep("get_data", {"table": self.rng.choice(others)}, None, None) if others else None
        spec = self.env.tool(first.name)
        if "api" in allowed and spec.source == "api":
            for name in sorted(self.tool_names):
                other = self.env.tool(name)
                if (
                    name != first.name
                    and other.side_effect == "read"
                    and other.source == "api"
                    and other.required
                    and other.required <= set(first.arguments)
                    and set(first.arguments) >= other.required
                    and not self._same_impl(name, first.name)
                ):
                    return PlannedStep(name, {k: first.arguments[k] for k in other.required}, None, None)
        if "rag" in allowed:
            retr = [t["name"] for t in self.task["tools"] if t.get("source") == "rag"]
            if retr:
                return PlannedStep(retr[0], {"query": turn.query, "k": 2}, None, None)
        return None

    def retrier(self) -> dict[str, Any]:
        i = self._pick_turn(lambda j: True)
        turn = self.plan.turns[i]
        first = turn.calls[0]
        spec = self.env.tool(first.name)
        if self.task.get("policy") and not spec.required:
            raise NotApplicable("under a policy the retry must stay on the same (allowed) tool")
        if spec.required and (self.task.get("policy") or self.rng.random() < 0.6):
            drop = sorted(spec.required)[0]
            bad = PlannedStep(first.name, {k: v for k, v in first.arguments.items() if k != drop}, None, None)
            note = f"first call to {first.name} omitted {drop!r}, then retried"
        else:
            bad = PlannedStep(first.name + "s", first.arguments, None, None)
            note = f"first called the unknown tool {first.name + 's'!r}, then retried"

        def make() -> tuple[dict[str, Any], str]:
            rec, by_ref, raw = self.run_steps([bad] + careful_steps(turn))
            if raw[0].ok:
                raise NotApplicable("the broken first attempt succeeded")
            return self.turn(i, rec, self.render(turn.answer(by_ref[: len(turn.calls)]), turn.kind)), note

        return self._with_broken_turn(i, make, "retrier")

    def duplicate_writer(self) -> dict[str, Any]:
        i = self._pick_turn(lambda j: any(self.env.is_write(c.name) for c in self.plan.turns[j].calls))
        turn = self.plan.turns[i]
        k = next(ci for ci, c in enumerate(turn.calls) if self.env.is_write(c.name))

        def make() -> tuple[dict[str, Any], str]:
            steps = careful_steps(turn)
            steps.insert(k + 1, PlannedStep(turn.calls[k].name, turn.calls[k].arguments, None, None))
            rec, by_ref, raw = self.run_steps(steps)
            if not raw[k + 1].ok:
                raise NotApplicable("the repeated write was rejected (idempotent tool)")
            by_ref[k] = raw[k + 1].result  # the agent reports what the last write returned
            return self.turn(i, rec, self.render(turn.answer(by_ref[: len(turn.calls)]), turn.kind)), f"repeated {turn.calls[k].name}"

        return self._with_broken_turn(i, make, "duplicate_writer")

    # -- orchestration profiles: recovery, loops, parallel calls --------------------------------
    def switcher(self) -> dict[str, Any]:
        """A call hits an injected error; the agent switches to an exact alias of the tool."""
        options = [(i, k) for i, turn in enumerate(self.plan.turns) for k, st in enumerate(careful_steps(turn)) if self._alias(st) is not None]
        if not options:
            raise NotApplicable("no exact alias to switch to")
        i, k = self.rng.choice(options)
        turn = self.plan.turns[i]

        def make() -> tuple[dict[str, Any], str]:
            steps = careful_steps(turn)
            original = steps[k]
            alias = self._alias(original)
            assert alias is not None
            steps[k : k + 1] = [PlannedStep(original.name, original.arguments, None, None, fault="error"), alias]
            rec, by_ref, raw = self.run_steps(steps)
            if not self.covers(i, raw):
                raise NotApplicable("the alias does not return the reference response")
            answer = self.render(turn.answer(by_ref[: len(turn.calls)]), turn.kind)
            return self.turn(i, rec, answer), f"{original.name} failed (injected error); switched to {alias.name}"

        return self._with_broken_turn(i, make, "switcher")

    def flaky(self) -> dict[str, Any]:
        """A read call hits an injected transient fault; the agent repeats it unchanged and it succeeds."""
        options = [(i, k) for i, turn in enumerate(self.plan.turns) for k, c in enumerate(turn.calls) if not self.env.is_write(c.name)]
        if not options:
            raise NotApplicable("no read call to fault")
        i, k = self.rng.choice(options)
        kind = self.rng.choice(sorted(FAULTS))
        turn = self.plan.turns[i]

        def make() -> tuple[dict[str, Any], str]:
            steps = careful_steps(turn)
            steps.insert(k, PlannedStep(steps[k].name, steps[k].arguments, steps[k].call_id, None, fault=kind))
            rec, by_ref, _ = self.run_steps(steps)
            answer = self.render(turn.answer(by_ref[: len(turn.calls)]), turn.kind)
            return self.turn(i, rec, answer), f"{steps[k].name}: injected {kind}; repeated the call unchanged"

        return self._with_broken_turn(i, make, "flaky")

    def persistent(self) -> dict[str, Any]:
        """Two failed attempts at the first call of a turn (an argument omitted, then misnamed), then the right call."""
        i = self._pick_turn(lambda j: bool(self.env.tool(self.plan.turns[j].calls[0].name).required))
        turn = self.plan.turns[i]
        first = turn.calls[0]
        drop = sorted(self.env.tool(first.name).required)[0]
        renamed = RENAMES.get(drop, drop + "_value")
        missing = PlannedStep(first.name, {k: v for k, v in first.arguments.items() if k != drop}, None, None)
        misnamed = PlannedStep(first.name, {(renamed if k == drop else k): v for k, v in first.arguments.items()}, None, None)

        def make() -> tuple[dict[str, Any], str]:
            rec, by_ref, raw = self.run_steps([missing, misnamed] + careful_steps(turn))
            if raw[0].ok or raw[1].ok:
                raise NotApplicable("a broken attempt succeeded")
            answer = self.render(turn.answer(by_ref[: len(turn.calls)]), turn.kind)
            return self.turn(i, rec, answer), f"{first.name}: omitted {drop!r}, then passed it as {renamed!r}, then called it right"

        return self._with_broken_turn(i, make, "persistent")

    def looper(self) -> dict[str, Any]:
        """Repeats the last (read) call of a turn twice more, getting the same result each time, then answers right."""
        i = self._pick_turn(lambda j: not self.env.is_write(self.plan.turns[j].calls[-1].name))
        turn = self.plan.turns[i]

        def make() -> tuple[dict[str, Any], str]:
            steps = careful_steps(turn)
            last = steps[-1]
            steps += [PlannedStep(last.name, last.arguments, last.call_id, None) for _ in range(2)]
            rec, by_ref, raw = self.run_steps(steps)
            if not all(r.ok for r in raw[-3:]) or len({response_key(r.result) for r in raw[-3:]}) != 1:
                raise NotApplicable("the repeated call returned something else")
            answer = self.render(turn.answer(by_ref[: len(turn.calls)]), turn.kind)
            return self.turn(i, rec, answer), f"called {last.name} three times with the same result before answering"

        return self._with_broken_turn(i, make, "looper")

    def parallel(self) -> dict[str, Any]:
        """Issues independent reference calls together: one round per level of the dependency DAG."""
        levels = [_levels(turn) for turn in self.plan.turns]
        if all(len(set(lv)) == len(lv) for lv in levels):
            raise NotApplicable("no independent calls to issue together")
        turns = []
        for i, turn in enumerate(self.plan.turns):
            ordered = sorted(careful_steps(turn), key=lambda st, lv=levels[i]: (lv[st.ref_index or 0], st.ref_index or 0))
            for k, st in enumerate(ordered):
                st.together = k > 0 and levels[i][st.ref_index or 0] == levels[i][ordered[k - 1].ref_index or 0]
            _rec, by_ref, raw = self.run_steps(ordered)
            if not self.covers(i, raw):
                raise NotApplicable("the parallel order changed a response")
            turns.append(self.turn(i, _rec, self.render(turn.answer(by_ref[: len(turn.calls)]), turn.kind)))
        width = max(max(Counter(lv).values()) for lv in levels)
        return self.trajectory("parallel", turns, f"issued independent calls together (up to {width} per round)")


def _levels(turn: TurnPlan) -> list[int]:
    """Depth of each call in the turn's dependency DAG (0: depends on nothing)."""
    index = {c.id: k for k, c in enumerate(turn.calls)}
    level: list[int] = [0] * len(turn.calls)
    for k, call in enumerate(turn.calls):  # plans list dependencies before their dependants
        level[k] = 1 + max((level[index[d]] for d in call.depends_on if d in index), default=-1)
    return level


def run_profile(profile: str, env: Environment, plan: TaskPlan, task: dict[str, Any], values: ValueIndex, facts: dict[str, Any], seed: str) -> dict[str, Any]:
    runner = Runner(env, plan, task, values, facts, random.Random(seed))
    if profile == "policy_violator" and not task.get("policy"):
        raise NotApplicable("no policy")
    return getattr(runner, profile)()
