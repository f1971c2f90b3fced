"""``--max-cost`` caps a run across its resumes when a session is stopped in the middle of a round
(SIGINT while judge calls are in flight): the answers the stopped round paid for are in the judge
cache, and a resume must count them as paid by this run (and the calls it had in flight), not as
free cache hits; answers cached before the run started stay free. Real SDKs over the loopback
server, stopped by a simulated Ctrl-C (``_thread.interrupt_main``) after a number of calls."""

from __future__ import annotations

import _thread
import json
import multiprocessing
import os
import re
import signal
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from tests.pipelines.helpers import WINNER_CALL, WINNER_TASK
from tests.servers import Reply

runner = CliRunner()
OUTPUTS = ("results.jsonl", "summary.json", "report.md")
CALLS = 24  # trajectories, each asking its own questions (answer correctness, then groundedness)
PER_CALL = 0.001  # 100 input tokens at $10 per 1M (the server's replies use 100 in, 20 out)
CONCURRENCY = 2
LABELS = {"AnswerCorrectnessVerdict": "correct", "TrajectorySufficiencyVerdict": "sufficient", "GroundednessVerdict": "supported"}


def _write(tmp: Path) -> list[str]:
    (tmp / "tasks.jsonl").write_text(json.dumps(WINNER_TASK) + "\n")
    lines = [
        {"task_id": "t", "trajectory_id": f"para-{i}", "steps": [WINNER_CALL], "final_answer": f"Bolt, the Jamaican sprinter, won it (#{i})."}
        for i in range(CALLS)
    ]
    (tmp / "traj.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))
    config = tmp / "cost.toml"
    config.write_text(f'concurrency = {CONCURRENCY}\n[prices."openai:judge-a"]\ninput_per_1m = 10.0\noutput_per_1m = 0.0\n')
    return ["--tasks", str(tmp / "tasks.jsonl"), "--trajectories", str(tmp / "traj.jsonl"), "--judge", "openai:judge-a", "--config", str(config)]


class _StopAfter:
    """The server's answers; after ``stop_at`` calls of a session, Ctrl-C in the run's process
    (the calls then in flight are never answered to it), and in its judge workers, as a Ctrl-C in
    a terminal reaches them all."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen = 0
        self.stop_at: int | None = None

    def __call__(self, body: dict) -> Reply:
        with self.lock:
            self.seen += 1
            if self.stop_at is not None and self.seen == self.stop_at:
                for child in multiprocessing.active_children():  # judge workers: Ctrl-C reaches the whole process group
                    os.kill(child.pid, signal.SIGINT)
                _thread.interrupt_main()
        tool = (body.get("tools") or [{}])[0]
        return Reply(LABELS[(tool.get("function") or {}).get("name") or tool.get("name")])


def _session(server, stopper: _StopAfter, args: list[str], stop_at: int | None) -> int:
    stopper.seen, stopper.stop_at = 0, stop_at
    res = runner.invoke(app, ["grade", *args, "--workers", "1", "--controls", "off"])
    if stop_at is None:
        assert res.exit_code == 0, res.output
    else:
        assert res.exit_code != 0 and stopper.seen >= stop_at, res.output
    return stopper.seen


def _stopped_twice(server, stopper: _StopAfter, args: list[str], out: Path) -> list[int]:
    """The tester's scenario, scaled down: stopped mid-round, resumed and stopped again, resumed to the end."""
    run = [*args, "--out", str(out)]
    seen = [_session(server, stopper, run, stop_at=4)]
    seen.append(_session(server, stopper, [*run, "--resume"], stop_at=4))
    seen.append(_session(server, stopper, [*run, "--resume"], stop_at=None))
    return seen


@pytest.fixture
def stopper(server):
    server.latency_s = 0.05  # calls stay in flight long enough to be stopped in flight
    answers = _StopAfter()
    server.set_responder("judge-a", answers)
    return answers


def test_max_cost_caps_a_run_stopped_in_the_middle_of_rounds(server, stopper, tmp_path):
    cap_calls = 10
    args = [*_write(tmp_path), "--cache", str(tmp_path / "c.sqlite3"), "--max-cost", f"{cap_calls * PER_CALL}"]
    out = tmp_path / "run"
    _stopped_twice(server, stopper, args, out)

    received = server.calls()
    # without counting the stopped rounds, each session spends nearly the whole cap again
    assert received <= cap_calls + CONCURRENCY, received
    summary = json.loads((out / "summary.json").read_text())["judges"]
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    votes = [v for r in results for c in r["turns"][0]["checks"] if c.get("decision") for v in c["decision"]["votes"]]
    paid = [v for v in votes if not v["abstained"]]
    assert paid and all(not v["cached"] and v["cost_usd"] == pytest.approx(PER_CALL) for v in paid)  # paid by this run, whichever session
    assert {v["abstain_reason"] for v in votes if v["abstained"]} == {"budget"}
    assert summary["cost_usd"] == pytest.approx(len(paid) * PER_CALL)
    manifest = json.loads((out / "manifest.json").read_text())
    budget = manifest["judges"]["stats"]["budget_message"]
    spent = float(re.search(r"spent \$([0-9.]+)", budget).group(1))
    assert cap_calls * PER_CALL <= spent <= (cap_calls + CONCURRENCY) * PER_CALL + 1e-9, budget
    assert spent >= received * PER_CALL - 1e-9  # every call the server got is counted (an answer lost in flight too)
    assert any("across its sessions" in n for n in manifest["judges"]["stats"]["notes"])


def test_a_stopped_and_resumed_run_writes_what_an_uninterrupted_run_writes(server, stopper, tmp_path):
    """The answers a stopped round paid for are the paid votes they were (not free cache hits) on
    resume, so the outputs are those of a run never stopped; an answer cached before the run
    started stays free, in both."""
    args = _write(tmp_path)
    (tmp_path / "warm").mkdir()
    warm = [a.replace(str(tmp_path / "traj.jsonl"), str(tmp_path / "warm" / "traj.jsonl")) for a in args]
    lines = (tmp_path / "traj.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "warm" / "traj.jsonl").write_text("".join(lines[:3]))  # three trajectories' questions cached before either run
    for name in ("whole", "stopped"):
        stopper.seen, stopper.stop_at = 0, None
        res = runner.invoke(
            app, ["grade", *warm, "--out", str(tmp_path / f"warm-{name}"), "--cache", str(tmp_path / f"{name}.sqlite3"), "--workers", "1", "--controls", "off"]
        )
        assert res.exit_code == 0, res.output
    server.reset_log()
    whole = tmp_path / "whole" / "run"  # reports are titled by the folder: the same name for both
    _session(server, stopper, [*args, "--cache", str(tmp_path / "whole.sqlite3"), "--out", str(whole)], stop_at=None)
    stopped = tmp_path / "stopped" / "run"
    seen = _stopped_twice(server, stopper, [*args, "--cache", str(tmp_path / "stopped.sqlite3")], stopped)
    asked = 2 * (CALLS - 3)  # two rounds' questions each, less those cached before
    assert sum(seen) >= asked and seen[-1] < asked  # the last session asked only what the stopped ones had not answered
    for name in OUTPUTS:
        assert (stopped / name).read_bytes() == (whole / name).read_bytes(), name
    summary = json.loads((whole / "summary.json").read_text())["judges"]
    assert summary["cost_usd"] == pytest.approx(asked * PER_CALL)


def test_max_cost_counts_what_judge_workers_paid_in_a_stopped_round(server, stopper, tmp_path):
    """With the rounds sharded over judge worker processes, each worker writes its calls to the
    run's spend log: a resume counts what every process paid before the stop."""
    import rubrics
    from judge.llm import JudgeSettings, RetryConfig, build_panel
    from pipelines.run import GradeOptions, run_grading

    _write(tmp_path)
    cap_calls = 10
    out = tmp_path / "run"

    def session(stop_at: int | None, resume: bool) -> None:
        stopper.seen, stopper.stop_at = 0, stop_at
        settings = JudgeSettings(
            judges=["openai:judge-a"],
            cache_path=tmp_path / "c.sqlite3",
            config_path=tmp_path / "cost.toml",
            max_cost_usd=cap_calls * PER_CALL,
            retry=RetryConfig(base_delay_s=0.01, max_delay_s=0.05),
        )
        opts = GradeOptions(
            tasks=tmp_path / "tasks.jsonl",
            trajectories=tmp_path / "traj.jsonl",
            out=out,
            escalator=build_panel(settings, rubrics.RUBRICS),
            judge_settings=settings,
            workers=2,
            judge_shard_min=1,
            resume=resume,
            command=["judge", "grade"],
        )
        if stop_at is None:
            run_grading(opts)
            return
        with pytest.raises(KeyboardInterrupt):
            run_grading(opts)

    session(4, resume=False)
    session(4, resume=True)
    session(None, resume=True)
    received = server.calls()
    assert received <= cap_calls + CONCURRENCY, received
    stats = json.loads((out / "manifest.json").read_text())["judges"]["stats"]
    spent = float(re.search(r"spent \$([0-9.]+)", stats["budget_message"]).group(1))
    assert received * PER_CALL - 1e-9 <= spent <= (cap_calls + CONCURRENCY) * PER_CALL + 1e-9, stats["budget_message"]
