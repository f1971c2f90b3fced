"""min_votes: a panel whose other judges failed never lets one judge decide (issue 10 item 9).

Default: a majority of the panel; ``[panels.X] min_votes`` and ``--min-votes`` change it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge import Outcome
from judge.llm import JudgeSettings, build_panel, majority_of
from judge.llm._settings import JudgeConfigError
from pipelines.cli import app
from tests.judge.helpers import answer_request, decide, make_panel, write_config
from tests.servers import Reply, Status

MIXED = ["openai:judge-a", "anthropic:judge-b", "openai:judge-c"]


def test_default_is_a_majority_of_the_panel():
    assert [majority_of(n) for n in range(1, 7)] == [1, 2, 2, 3, 3, 4]


async def test_one_judge_left_standing_does_not_decide_by_default(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Status(400)).set_default("judge-c", Status(500))
    panel = make_panel(tmp_path, MIXED, max_attempts=2)
    [d] = await decide(panel, [answer_request()])
    assert d.outcome == Outcome.INCONCLUSIVE and d.label is None
    assert d.reason.startswith("1 counted vote(s), 2 needed (min_votes)")
    assert "abstained: anthropic:judge-b: error, openai:judge-c: error" in d.reason and d.reason.endswith("unresolved, for human review")
    assert [v.label for v in d.votes] == ["correct", None, None]  # the vote is kept, it just does not decide
    assert panel.stats.min_votes == 2 and panel.stats.inconclusive == 1


async def test_two_of_three_still_decide(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Status(400))
    [d] = await decide(make_panel(tmp_path, MIXED), [answer_request()])
    assert (d.label, d.agreement) == ("correct", 1.0)


async def test_explicit_min_votes_one_restores_a_lone_decision(server, tmp_path):
    server.set_default("judge-a", Reply("incorrect")).set_default("judge-b", Status(400)).set_default("judge-c", Status(400))
    [d] = await decide(make_panel(tmp_path, MIXED, min_votes=1), [answer_request()])
    assert (d.label, d.outcome) == ("incorrect", Outcome.MISMATCH)


async def test_config_min_votes_and_the_setting_wins_over_it(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Status(400))
    config = '[panels.strict]\njudges = ["openai:judge-a", "anthropic:judge-b", "openai:judge-c"]\nmin_votes = 3\n'
    [strict] = await decide(make_panel(tmp_path, [], config=config, panel="strict"), [answer_request()])
    assert strict.outcome == Outcome.INCONCLUSIVE and "2 counted vote(s), 3 needed" in strict.reason
    (tmp_path / "b").mkdir()
    [relaxed] = await decide(make_panel(tmp_path / "b", [], config=config, panel="strict", min_votes=2), [answer_request()])
    assert relaxed.label == "correct"


async def test_tie_breaker_is_asked_only_once_enough_judges_voted(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("incorrect")).set_default("judge-c", Status(400))
    server.set_default("judge-t", Reply("correct"))
    [d] = await decide(make_panel(tmp_path, MIXED, tie_breaker="openai:judge-t"), [answer_request()])
    assert d.label == "correct" and "tie broken by openai:judge-t" in d.reason
    server.reset_log()
    server.set_default("judge-b", Status(400))
    (tmp_path / "b").mkdir()
    [lone] = await decide(make_panel(tmp_path / "b", MIXED, tie_breaker="openai:judge-t"), [answer_request(1)])
    assert lone.outcome == Outcome.INCONCLUSIVE and server.calls("judge-t") == 0


def test_min_votes_beyond_the_panel_is_a_config_error_naming_the_field(tmp_path):
    cfg = write_config(tmp_path, '[panels.main]\njudges = ["mock:always-correct", "mock:pick"]\nmin_votes = 3\n')
    with pytest.raises(JudgeConfigError) as err:
        build_panel(JudgeSettings(config_path=cfg, panel="main", no_cache=True))
    assert str(cfg) in str(err.value) and "panels.main.min_votes" in str(err.value) and "between 1 and the panel's 2" in str(err.value)
    with pytest.raises(JudgeConfigError, match="min_votes 5"):
        build_panel(JudgeSettings(judges=["mock:pick"], min_votes=5, no_cache=True))


def _grade(tmp_path: Path, out: str, *extra: str) -> tuple[dict, dict]:
    task = {"task_id": "t", "question": "Who won the 100 m in 2012?", "gold_answer": "Usain Bolt", "tools": [], "reference_calls": []}
    traj = {"task_id": "t", "trajectory_id": "paraphrase", "steps": [], "final_answer": "Bolt, the Jamaican sprinter, won it."}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    (tmp_path / "traj.jsonl").write_text(json.dumps(traj) + "\n")
    judges = ["--judge", "mock:always-correct", "--judge", "mock:fail", "--judge", "mock:refuse", "--no-cache"]
    args = ["grade", "--tasks", str(tmp_path / "tasks.jsonl"), "--trajectories", str(tmp_path / "traj.jsonl"), "--out", str(tmp_path / out)]
    res = CliRunner().invoke(app, [*args, *judges, *extra])
    assert res.exit_code == 0, res.output
    [row] = map(json.loads, (tmp_path / out / "results.jsonl").read_text().splitlines())
    manifest = json.loads((tmp_path / out / "manifest.json").read_text())
    return row, manifest


def test_cli_min_votes(tmp_path):
    row, manifest = _grade(tmp_path, "default")
    assert row["verdict"] == "unresolved"
    assert "1 counted vote(s), 2 needed (min_votes)" in json.dumps(row)
    assert manifest["judges"]["stats"]["min_votes"] == 2
    row, manifest = _grade(tmp_path, "lenient", "--min-votes", "1")
    assert (row["verdict"], row["decided_by"]) == ("pass", "judge:panel")
    assert manifest["judges"]["stats"]["min_votes"] == 1
    res = CliRunner().invoke(app, ["grade", "--tasks", str(tmp_path / "tasks.jsonl"), "--trajectories", str(tmp_path / "traj.jsonl"), "--min-votes", "0"])
    assert res.exit_code == 2 and "--min-votes" in res.output
