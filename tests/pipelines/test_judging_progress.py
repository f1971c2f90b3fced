"""Nothing silent while judges work: each escalation round reports where it stands while the judges
answer (questions answered, calls, free answers, abstentions, cost, ETA), live on a terminal and at
least every 30 s when piped. Over the loopback server with the real SDKs (answers delayed)."""

from __future__ import annotations

import json
from pathlib import Path

from pipelines.cli import grade as grade_cli
from pipelines.cli.grade import JudgingLine, judging_text
from pipelines.run import GradeOptions, JudgingProgress, run_grading
from tests.pipelines.helpers import NEWS_CALL, WINNER_CALL, WINNER_TASK
from tests.servers.loopback import Delay, Reply


def _files(tmp: Path) -> tuple[Path, Path]:
    (tmp / "tasks.jsonl").write_text(json.dumps(WINNER_TASK) + "\n")
    rows = [{"task_id": "t", "trajectory_id": f"p{i}", "steps": [WINNER_CALL], "final_answer": f"Bolt, the sprinter, won ({i})."} for i in range(4)]
    rows.append({"task_id": "t", "trajectory_id": "news", "steps": [NEWS_CALL], "final_answer": "Usain Bolt"})
    (tmp / "traj.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp / "tasks.jsonl", tmp / "traj.jsonl"


def test_a_round_reports_while_the_judges_answer(server, tmp_path, monkeypatch):
    import pipelines.run.escalation as run_module
    from pipelines.cli._common import escalator_from, judge_settings

    monkeypatch.setattr(run_module, "TICK_S", 0.05)
    server.set_default("judge-a", Delay(0.3, Reply("correct")))
    tasks, traj = _files(tmp_path)
    settings = judge_settings(["openai:judge-a"], None, None, True, False, None, None, None, None, None, "online")
    seen: list[JudgingProgress] = []
    opts = GradeOptions(tasks=tasks, trajectories=traj, out=tmp_path / "out", escalator=escalator_from(settings, None), judge_settings=settings)
    run_grading(opts, on_judging=seen.append)
    first = [p for p in seen if p.round == 1]
    assert first[0].answered == 0 and not first[0].done  # said as the round starts
    assert first[-1].done and first[-1].answered == first[-1].questions  # and when it is decided
    during = [p for p in first if not p.done]
    assert len(during) >= 3 and [p.elapsed_s for p in during] == sorted(p.elapsed_s for p in during)
    assert any(0 < (p.answered or 0) < p.questions for p in during) or first[-1].questions <= 2
    assert first[-1].calls >= first[-1].questions - 1 and first[-1].cost_usd >= 0


def test_piped_output_gets_a_line_at_least_every_30_seconds(monkeypatch):
    printed: list[str] = []
    monkeypatch.setattr(grade_cli.console, "print", lambda text, **kw: printed.append(text))
    monkeypatch.setattr(type(grade_cli.console), "is_terminal", property(lambda self: False))
    now = [0.0]
    line = JudgingLine(bar=None, clock=lambda: now[0])
    for t in range(95):  # a tick a second for 95 s
        now[0] = float(t)
        line(JudgingProgress(round=1, questions=100, answered=t, calls=t, cached=0, abstained=0, cost_usd=0.001 * t, elapsed_s=float(t)))
    line(JudgingProgress(round=1, questions=100, answered=100, calls=100, cached=0, abstained=0, cost_usd=0.1, elapsed_s=95.0, done=True))
    assert len(printed) == 5  # at 0, 30, 60, 90 s, and when decided
    assert printed[1].startswith("judges, round 1: 30/100 answered") and "ETA 1m10s" in printed[1]
    assert printed[-1].endswith("decided")


def test_the_line_says_what_is_known():
    p = JudgingProgress(round=2, questions=10, answered=None, calls=3, cached=2, abstained=1, cost_usd=0.0123, elapsed_s=75.0)
    assert judging_text(p) == "judges, round 2: answers pending in the worker processes · 3 calls, 2 free, 1 abstained · $0.0123 so far · 1m15s elapsed"


def test_a_terminal_gets_a_live_bar_per_round(monkeypatch):
    class Bar:
        def __init__(self):
            self.tasks, self.updates = [], []

        def add_task(self, description, **fields):
            self.tasks.append((description, fields))
            return len(self.tasks) - 1

        def update(self, task, **fields):
            self.updates.append((task, fields))

    monkeypatch.setattr(type(grade_cli.console), "is_terminal", property(lambda self: True))
    bar = Bar()
    line = JudgingLine(bar)
    for answered in (0, 4, 8):
        line(JudgingProgress(round=1, questions=8, answered=answered, calls=answered, cached=0, abstained=0, cost_usd=0.0, elapsed_s=float(answered)))
    line(JudgingProgress(round=2, questions=3, answered=1, calls=9, cached=0, abstained=0, cost_usd=0.0, elapsed_s=1.0))
    assert [(fields["total"], fields["judging"]) for _, fields in bar.tasks] == [(8, True), (3, True)]  # one bar a round
    assert [f["completed"] for t, f in bar.updates if t == 0] == [0, 4, 8] and "ETA 4s" in bar.updates[1][1]["description"]
