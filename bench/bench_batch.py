"""Provider batch APIs vs live calls on the same escalations (issue 11 item 4): HTTP requests and
judge cost of ``--judge-mode batch`` against ``--judge-mode online``.

The bundled sample benchmark (replay on) is graded twice by the same panel of three priced judges
(``openai:gpt-4.1-mini``, ``anthropic:claude-haiku-4-5``, ``openai:gpt-4.1-nano``, list prices
of ``judge.llm._limits``), each time with an empty judge cache, against the loopback server of
``tests/servers`` (both wire formats, the batch endpoints included; every judge answers the
rubric's positive label with 100 input and 20 output tokens, so escalation runs to its end):
- online: ``judge grade`` asks each question live;
- batch: ``judge grade --judge-mode batch`` sends each round's questions as provider batches and
  exits 5; ``judge resume`` is run until the run finishes (each batch ends at its first poll).
Both write the same results apart from the cost fields (checked); then a rerun of each with the
cache is counted (it should send nothing). Nothing leaves the machine.

Run: .venv/bin/python bench/bench_batch.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

JUDGES = ["openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5", "openai:gpt-4.1-nano"]
POSITIVE = {
    "AnswerCorrectnessVerdict": "correct",
    "TrajectorySufficiencyVerdict": "sufficient",
    "GroundednessVerdict": "supported",
    "PolicyAdherenceVerdict": "compliant",
    "StepEquivalenceVerdict": "equivalent",
    "OpenEndedVerdict": "meets",
}


def _without_costs(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_costs(v) for k, v in value.items() if k not in ("cost_usd", "judge_cost_usd")}
    if isinstance(value, list):
        return [_without_costs(v) for v in value]
    return value


def _kinds(requests: list[Any]) -> Counter[str]:
    """HTTP requests by what they did."""
    out: Counter[str] = Counter()
    for r in requests:
        path = r.path
        if path in ("/v1/chat/completions", "/v1/messages"):
            out["live calls"] += 1
        elif path == "/v1/files" and r.method == "POST":
            out["uploads"] += 1
        elif path in ("/v1/batches", "/v1/messages/batches") and r.method == "POST":
            out["batch creations"] += 1
        elif path.endswith(("/content", "/results")):
            out["downloads"] += 1
        elif r.method == "GET":
            out["polls"] += 1
        else:
            out["other"] += 1
    return out


def main() -> None:
    from typer.testing import CliRunner

    from pipelines.cli import EXIT_WAITING, app
    from tests.servers import BatchPlan, LoopbackServer, Reply

    runner = CliRunner()
    sample = ROOT / "data" / "sample"
    with tempfile.TemporaryDirectory() as tmp_name, LoopbackServer() as server:
        tmp = Path(tmp_name)
        os.environ.update(
            OPENAI_API_KEY="bench-not-a-key",
            ANTHROPIC_API_KEY="bench-not-a-key",
            OPENAI_BASE_URL=server.openai_base_url,
            ANTHROPIC_BASE_URL=server.anthropic_base_url,
            XDG_CACHE_HOME=str(tmp / "xdg"),
        )

        def positive(body: dict[str, Any]) -> Reply:
            tool = (body.get("tools") or [{}])[0]
            return Reply(POSITIVE[(tool.get("function") or {}).get("name") or tool.get("name")], input_tokens=100, output_tokens=20)

        for judge in JUDGES:
            server.set_responder(judge.partition(":")[2], positive)
        server.batches.default_plan = BatchPlan(polls=0)
        judges = [arg for j in JUDGES for arg in ("--judge", j)]

        def grade(out: str, cache: str, *extra: str) -> int:
            args = ["grade", "--tasks", str(sample / "tasks.jsonl"), "--trajectories", str(sample / "trajectories.jsonl"), "--out", str(tmp / out)]
            res = runner.invoke(app, [*args, "--cache", str(tmp / cache), "--workers", "1", *judges, *extra])
            if res.exit_code not in (0, EXIT_WAITING):
                print(res.output[-3000:], repr(res.exception))
            return res.exit_code

        started = time.perf_counter()
        assert grade("online", "online.sqlite3") == 0
        online_s = time.perf_counter() - started
        online = _kinds(server.requests)
        server.reset_log()

        started = time.perf_counter()
        code, resumes = grade("batch", "batch.sqlite3", "--judge-mode", "batch"), 0
        while code == EXIT_WAITING:
            resumes += 1
            code = runner.invoke(app, ["resume", str(tmp / "batch"), "--workers", "1"]).exit_code
        assert code == 0, code
        batch_s = time.perf_counter() - started
        batch = _kinds(server.requests)
        server.reset_log()

        assert grade("online-again", "online.sqlite3") == 0 and grade("batch-again", "batch.sqlite3", "--judge-mode", "batch") == 0
        rerun = len(server.requests)

        summaries = {name: json.loads((tmp / name / "summary.json").read_text()) for name in ("online", "batch")}
        results = {name: [_without_costs(json.loads(line)) for line in (tmp / name / "results.jsonl").read_text().splitlines()] for name in ("online", "batch")}
        manifest = json.loads((tmp / "batch" / "manifest.json").read_text())
        rounds = Counter(b["round"] for b in manifest["judges"]["batches"])
        calls = summaries["online"]["judges"]["calls"]
        cost_online, cost_batch = summaries["online"]["judges"]["cost_usd"], summaries["batch"]["judges"]["cost_usd"]
        n = summaries["online"]["counts"]["graded"]

    http_online, http_batch = sum(online.values()), sum(batch.values())
    print(f"bundled sample: {n} trajectories; panel {', '.join(JUDGES)}; {calls} judge questions in each flow")
    print("| flow | HTTP requests | of which | judge cost | wall time |")
    print("|---|---|---|---|---|")
    print(f"| online | {http_online} | {', '.join(f'{k} {v}' for k, v in sorted(online.items()))} | ${cost_online:.6f} | {online_s:.1f} s |")
    print(
        f"| batch | {http_batch} | {', '.join(f'{k} {v}' for k, v in sorted(batch.items()))} | ${cost_batch:.6f} | {batch_s:.1f} s "
        f"(grade + {resumes} resumes, batches ending at once) |"
    )
    print(f"batch / online: {http_batch / http_online:.3f}x the HTTP requests, {cost_batch / cost_online:.2f}x the cost")
    print(f"batches per escalation round: {dict(sorted(rounds.items()))} (one per OpenAI model, one per Anthropic provider)")
    print(f"results identical apart from cost fields: {results['online'] == results['batch']}")
    print(f"reruns of both with their caches: {rerun} HTTP requests")


if __name__ == "__main__":
    main()
