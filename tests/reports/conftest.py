"""Real run outputs to report on: a synthetic benchmark (bench.generate, fixed seed) graded by the
real pipeline, plus a variant where some answer checks were decided by a (scripted) judge panel
and a calibration.json built with the real ``calibration.agreement`` statistics.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.generate import generate
from calibration import LabelCoder, agreement
from judge import Check, PanelDecision, TrajectoryResult, Vote
from pipelines.config import GradingConfig
from pipelines.grade import Aggregator
from pipelines.run import GradeOptions, run_grading

CONFIG = GradingConfig(bootstrap_samples=200)
PANEL = "panel-a"
JUDGES = ("openai:gpt-x", "anthropic:claude-y", "local:llama-z")


def read_results(run: Path) -> list[TrajectoryResult]:
    return [TrajectoryResult.model_validate_json(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def write_run(run: Path, results: list[TrajectoryResult]) -> dict:
    """results.jsonl + summary.json exactly as the grading run writes them (same aggregator)."""
    run.mkdir(parents=True, exist_ok=True)
    agg = Aggregator(CONFIG)
    with open(run / "results.jsonl", "w", encoding="utf-8") as fh:
        for r in results:
            fh.write(r.model_dump_json(exclude_none=True) + "\n")
            agg.add(r)
    summary = agg.summary()
    (run / "summary.json").write_text(summary.to_json(), encoding="utf-8")
    return json.loads(summary.to_json())  # tests read the file's content, as other tools would


@pytest.fixture(scope="session")
def bench_inputs(tmp_path_factory) -> tuple[Path, Path]:
    return generate(tmp_path_factory.mktemp("bench"), 360, n_tasks=60, seed=7)


@pytest.fixture(scope="session")
def graded_run(bench_inputs, tmp_path_factory) -> Path:
    tasks, trajs = bench_inputs
    out = tmp_path_factory.mktemp("run") / "baseline"
    run_grading(GradeOptions(tasks=tasks, trajectories=trajs, out=out, config=CONFIG))
    return out


def _judged(r: TrajectoryResult, i: int) -> TrajectoryResult:
    """Every answer check decided by a three-judge panel: two agree, the third abstains (every 4th)
    or dissents; labels follow the check's outcome so verdicts stay as graded."""
    data = r.model_dump(mode="json")
    for turn in data["turns"]:
        for check in turn["checks"]:
            if check["check"] != Check.ANSWER.value or check["outcome"] not in ("match", "mismatch"):
                continue
            label = "correct" if check["outcome"] == "match" else "incorrect"
            other = "incorrect" if label == "correct" else "correct"
            third = (
                Vote(judge=JUDGES[2], abstained=True, abstain_reason="unparseable")
                if i % 4 == 0
                else Vote(judge=JUDGES[2], label=other, rationale=f"dissent {i}", cost_usd=0.0)
            )
            votes = [
                Vote(judge=JUDGES[0], label=label, rationale=f"rationale {i} from gpt-x", cost_usd=0.001, confidence=0.9),
                Vote(judge=JUDGES[1], label=label, rationale=f"rationale {i} from claude-y", cost_usd=0.002, cached=i % 2 == 0),
                third,
            ]
            agreeing = 2 / (2 if third.abstained else 3)
            check["decided_by"] = f"judge:{PANEL}"
            check["decision"] = PanelDecision(
                panel=PANEL,
                rule="majority",
                label=label,
                outcome=check["outcome"],
                votes=votes,
                agreement=agreeing,
                rubric="answer_correctness",
                rubric_version="abc123",
            ).model_dump(mode="json")
    data["decided_by"] = f"judge:{PANEL}"
    data["judge_calls"] = 3
    data["judge_cost_usd"] = 0.003
    return TrajectoryResult.model_validate(data)


@pytest.fixture(scope="session")
def judged_run(graded_run, tmp_path_factory) -> Path:
    results = read_results(graded_run)
    # every third graded trajectory whose earliest decisive check is the answer check
    out = []
    for i, r in enumerate(results):
        decisive = r.failure_stage is not None and r.failure_stage.value in ("none", "answer_correctness")
        out.append(_judged(r, i) if decisive and i % 3 == 0 else r)
    run = tmp_path_factory.mktemp("judged") / "judged"
    write_run(run, out)
    coder = LabelCoder(["correct", "incorrect"])
    human = ["correct"] * 60 + ["incorrect"] * 40
    judges = {
        JUDGES[0]: agreement(human, ["correct"] * 54 + ["incorrect"] * 6 + ["incorrect"] * 36 + ["correct"] * 4, coder),
        JUDGES[1]: agreement(human, ["correct"] * 57 + ["incorrect"] * 3 + ["incorrect"] * 30 + ["correct"] * 10, coder),
    }
    panel = agreement(human, ["correct"] * 56 + ["incorrect"] * 4 + ["incorrect"] * 38 + ["correct"] * 2, coder)
    cal = {"judges": {k: v.model_dump(mode="json") for k, v in judges.items()}, "panels": {PANEL: panel.model_dump(mode="json")}}
    (run / "calibration.json").write_text(json.dumps(cal, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return run
