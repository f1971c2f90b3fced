"""Escalation rounds with an in-process panel double: only inconclusive checks are asked, in
waterfall order, and a judge's decision is recorded with its votes."""

from __future__ import annotations

import json
from pathlib import Path

from judge import Outcome, PanelDecision, Vote
from pipelines.run import GradeOptions, run_grading


class ScriptedPanel:
    """Decides by rubric name; records every request it was asked."""

    name = "scripted"

    def __init__(self, answers: dict[str, tuple[str | None, Outcome]]):
        self.answers = answers
        self.asked: list = []

    async def decide(self, requests):
        self.asked.extend(requests)
        out = []
        for r in requests:
            label, outcome = self.answers[r.rubric]
            votes = (
                [Vote(judge="mock:a", label=label), Vote(judge="mock:b", label=label)]
                if label
                else [Vote(judge="mock:a", abstained=True, abstain_reason="error")]
            )
            out.append(
                PanelDecision(panel=self.name, rule="majority", label=label, outcome=outcome, votes=votes, rubric=r.rubric, reason=f"panel says {label}")
            )
        return out


def _files(tmp: Path, answer: str, steps: list[dict]) -> tuple[Path, Path]:
    task = {
        "task_id": "t",
        "question": "Who won?",
        "reference_calls": [{"name": "winner", "arguments": {"year": 2012}}],
        "gold_answer": "Usain Bolt",
        "tools": [
            {"name": "winner", "parameters": {"type": "object", "properties": {"year": {"type": "integer"}}}},
            {"name": "news", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
        ],
    }
    traj = {"task_id": "t", "trajectory_id": "x", "steps": steps, "final_answer": answer}
    (tmp / "t.jsonl").write_text(json.dumps(task) + "\n")
    (tmp / "j.jsonl").write_text(json.dumps(traj) + "\n")
    return tmp / "t.jsonl", tmp / "j.jsonl"


def _run(tmp: Path, panel, answer: str, steps: list[dict]) -> dict:
    tasks, trajs = _files(tmp, answer, steps)
    run_grading(GradeOptions(tasks=tasks, trajectories=trajs, out=tmp / "out", escalator=panel))
    return json.loads((tmp / "out" / "results.jsonl").read_text())


RIGHT_CALL = [{"name": "winner", "arguments": {"year": 2012}, "result": {"name": "Usain Bolt"}}]
OTHER_CALL = [{"name": "news", "arguments": {"q": "2012 winner"}, "result": "Bolt wins gold"}]


def test_paraphrased_answer_goes_to_the_answer_rubric_only(tmp_path):
    panel = ScriptedPanel({"answer_correctness": ("correct", Outcome.MATCH)})
    r = _run(tmp_path, panel, "It was Bolt, the Jamaican sprinter.", RIGHT_CALL)
    assert [q.rubric for q in panel.asked] == ["answer_correctness"]
    assert panel.asked[0].material["gold_answers"] == ["Usain Bolt"]
    assert (r["verdict"], r["failure_stage"], r["decided_by"]) == ("pass", "none", "judge:scripted")
    decision = r["turns"][0]["checks"][2]["decision"]
    assert [v["label"] for v in decision["votes"]] == ["correct", "correct"]


def test_decisive_cases_never_reach_the_judge(tmp_path):
    panel = ScriptedPanel({})
    r = _run(tmp_path, panel, "Usain Bolt", RIGHT_CALL)
    assert panel.asked == [] and r["decided_by"] == "deterministic" and r["verdict"] == "pass"


def test_calls_hinging_on_the_answer_ask_the_answer_first(tmp_path):
    # no call to the reference tool, another call made: the calls verdict depends on the answer
    panel = ScriptedPanel({"answer_correctness": ("incorrect", Outcome.MISMATCH)})
    r = _run(tmp_path, panel, "Probably Carl Lewis, or Bolt", OTHER_CALL)  # names the gold among alternatives: open
    assert [q.rubric for q in panel.asked] == ["answer_correctness"]
    assert (r["verdict"], r["failure_stage"]) == ("fail", "tool_selection")


def test_alternative_path_with_right_answer_asks_sufficiency_then_grounding(tmp_path):
    panel = ScriptedPanel(
        {
            "answer_correctness": ("correct", Outcome.MATCH),
            "trajectory_sufficiency": ("sufficient", Outcome.MATCH),
            "groundedness": ("supported", Outcome.MATCH),
        }
    )
    r = _run(tmp_path, panel, "Bolt won it, said the news.", OTHER_CALL)
    assert [q.rubric for q in panel.asked] == ["answer_correctness", "trajectory_sufficiency", "groundedness"]
    assert r["verdict"] == "pass" and r["decided_by"] == "judge:scripted"


def test_tie_or_abstention_leaves_the_case_unresolved(tmp_path):
    panel = ScriptedPanel({"answer_correctness": (None, Outcome.INCONCLUSIVE)})
    r = _run(tmp_path, panel, "It was Bolt, the Jamaican sprinter.", RIGHT_CALL)
    assert len(panel.asked) == 1  # asked once, not again
    assert (r["verdict"], r["decided_by"]) == ("unresolved", "unresolved")
    assert r["turns"][0]["checks"][2]["decision"]["votes"][0]["abstained"] is True


def test_without_a_judge_inconclusive_ends_unresolved(tmp_path):
    r = _run(tmp_path, None, "It was Bolt, the Jamaican sprinter.", RIGHT_CALL)
    assert (r["verdict"], r["decided_by"], r["unresolved_stages"]) == ("unresolved", "unresolved", ["answer_correctness"])
