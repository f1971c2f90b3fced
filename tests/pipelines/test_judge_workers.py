"""``judge grade --workers N`` with a judge panel: large escalation rounds are judged by N worker
processes (``judge.llm.ShardedPanel``) and the run writes what it writes with the panel alone,
byte for byte: results.jsonl, summary.json, report.md, report.html (its one "Generated" line
aside) and manifest.json (its timestamps aside), judge statistics included. Real SDKs and
instructor over the loopback server, answers chosen by request content (so by question, never by
the order in which calls arrive): disagreements, refusals, repeated questions, three rounds."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import rubrics
from judge.llm import JudgeSettings, RetryConfig, build_panel
from pipelines.run import GradeOptions, run_grading
from tests.pipelines.helpers import NEWS_CALL, WINNER_CALL, WINNER_TASK
from tests.servers import Refusal, Reply

CALL, NEWS, TASK = WINNER_CALL, NEWS_CALL, WINNER_TASK
LABELS = {"AnswerCorrectnessVerdict": ("correct", "incorrect"), "TrajectorySufficiencyVerdict": ("sufficient",), "GroundednessVerdict": ("supported",)}
JUDGES = ["openai:judge-a", "anthropic:judge-b", "openai:judge-c"]


def _trajectories() -> list[dict]:
    out = []
    for i in range(48):
        n = i % 30  # 18 trajectories repeat an earlier answer: the same question, asked once
        if i % 4 == 2:  # an alternative path: answer, sufficiency, grounding (three rounds)
            out.append({"task_id": "t", "trajectory_id": f"news-{i}", "steps": [NEWS], "final_answer": f"Bolt won it, said the news (#{n})."})
        else:
            out.append({"task_id": "t", "trajectory_id": f"para-{i}", "steps": [CALL], "final_answer": f"Bolt, the Jamaican sprinter, won it (#{n})."})
    out.append({"task_id": "t", "trajectory_id": "exact", "steps": [CALL], "final_answer": "Usain Bolt"})  # decided without judges
    return out


def _responder(shift: int, refuses=lambda n: False):
    def answer(body: dict) -> object:
        tool = (body.get("tools") or [{}])[0]
        labels = LABELS[(tool.get("function") or {}).get("name") or tool.get("name")]
        found = re.search(r"\(#(\d+)\)", json.dumps(body))
        n = int(found.group(1)) if found else 0
        if refuses(n):
            return Refusal()
        return Reply(labels[(n + shift) % len(labels)])

    return answer


def _grade(tmp: Path, name: str, shard_min: int) -> Path:
    settings = JudgeSettings(judges=JUDGES, cache_path=tmp / f"{name}.sqlite3", concurrency=8, retry=RetryConfig(base_delay_s=0.01, max_delay_s=0.05))
    panel = build_panel(settings, rubrics.RUBRICS)
    out = tmp / name / "run"  # reports are titled by the folder: the same name for both
    opts = GradeOptions(
        tasks=tmp / "tasks.jsonl",
        trajectories=tmp / "traj.jsonl",
        out=out,
        escalator=panel,
        judge_settings=settings,
        workers=2,
        judge_shard_min=shard_min,
        command=["judge", "grade"],
        shard_lines=16,
    )
    run_grading(opts)
    return out


def _manifest(out: Path) -> dict:
    data = json.loads((out / "manifest.json").read_text())
    for key in ("started_at", "finished_at"):
        data.pop(key)
    return data


def test_judge_workers_write_what_the_panel_alone_writes(server, tmp_path, caplog):
    # judge-b disagrees with the others on answers and refuses every 7th; judge-c refuses some of
    # those too (one counted vote: unresolved); questions without a number (sufficiency) are n = 0
    server.set_responder("judge-a", _responder(0))
    server.set_responder("judge-b", _responder(1, refuses=lambda n: n % 7 == 0))
    server.set_responder("judge-c", _responder(0, refuses=lambda n: n in (7, 21)))
    (tmp_path / "tasks.jsonl").write_text(json.dumps(TASK) + "\n")
    (tmp_path / "traj.jsonl").write_text("".join(json.dumps(t) + "\n" for t in _trajectories()))
    alone = _grade(tmp_path, "alone", shard_min=10**9)
    paid = server.calls()
    with caplog.at_level(logging.INFO, logger="judge.sharded"):
        sharded = _grade(tmp_path, "sharded", shard_min=1)
    rounds = [r.getMessage() for r in caplog.records if "worker processes" in r.getMessage()]
    assert len(rounds) == 3, rounds  # every round went to the two workers

    assert server.calls() == 2 * paid  # each run asked each question once

    for name in ("results.jsonl", "summary.json", "report.md"):
        assert (sharded / name).read_bytes() == (alone / name).read_bytes(), name
    html = [re.sub(r'<p class="generated">.*?</p>', "", (out / "report.html").read_text()) for out in (alone, sharded)]
    assert html[0] == html[1]
    assert _manifest(sharded) == _manifest(alone)

    results = [json.loads(line) for line in (alone / "results.jsonl").read_text().splitlines()]
    stats = _manifest(alone)["judges"]["stats"]
    assert {r["verdict"] for r in results} >= {"pass", "fail", "unresolved"}  # disagreements and refusals were exercised
    assert stats["cache_hits"] > 0 and stats["abstentions"].get("refusal")
