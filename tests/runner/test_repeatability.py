"""Cost and repeatability: the cache replays a run offline, an interrupted run resumes, retries
honour Retry-After, trials get their own seeds, the budget stops new trajectories."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest

from judge.llm import RetryConfig, RetryPolicy
from pipelines.runner import RunOptions, collect_trajectories
from tests.runner.conftest import MODEL, bodies, games_task, host_city, invoke, read_jsonl, run_args, script, task, write_tasks
from tests.servers.agent import Act, Call, Say
from tests.servers.loopback import Status

YEARS = (2004, 2008, 2012)
_VOLATILE = ("latency_ms", "cached_model_calls", "model_attempts")


def _games_script(server, years=YEARS) -> None:
    script(server, {str(y): [[Act((Call("get_games_by_year", {"year": y}),)), Say(host_city(y))]] for y in years})


def _stable(trajectory: dict) -> dict:
    """A trajectory without what legitimately differs between a live and a cached run."""
    out = json.loads(json.dumps(trajectory))
    for key in _VOLATILE:
        out["metadata"].pop(key, None)
    for turn in out["turns"]:
        for step in turn["steps"]:
            step.pop("latency_ms", None)
    return out


def _results(path: Path) -> list[dict]:
    rows = read_jsonl(path)
    for row in rows:
        row.pop("source", None)  # names the run's own folder
    return rows


def test_a_rerun_with_the_same_seed_replays_offline_from_the_cache(tmp_path, server, wire):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task(f"g{y}", y) for y in YEARS])
    _games_script(server)
    first = invoke(*run_args(tmp_path, wire, tasks, "live", "--trials", "2"))
    assert first.exit_code == 0, first.output
    assert len(bodies(server)) == len(YEARS) * 2 * 2  # trials never share an answer: each made its own calls
    server.reset_log()

    again = invoke(*run_args(tmp_path, wire, tasks, "replayed", "--trials", "2", "--offline"))
    assert again.exit_code == 0, again.output
    assert server.requests == []  # not one HTTP request
    live = read_jsonl(tmp_path / "live" / "trajectories.jsonl")
    replayed = read_jsonl(tmp_path / "replayed" / "trajectories.jsonl")
    assert [t["metadata"]["cached_model_calls"] for t in replayed] == [2] * len(replayed)
    assert [_stable(t) for t in replayed] == [_stable(t) for t in live]
    assert _results(tmp_path / "replayed" / "results.jsonl") == _results(tmp_path / "live" / "results.jsonl")
    info = json.loads((tmp_path / "replayed" / "run.json").read_text())
    assert info["model_calls"]["live_calls"] == 0 and info["model_calls"]["cache_hits"] == len(YEARS) * 2 * 2


def test_trials_have_their_own_seed_and_feed_pass_at_k(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])

    def answer(view):  # a flaky agent: the seed decides (the OpenAI wire carries it)
        if view.step == 0:
            return Act((Call("get_games_by_year", {"year": 2008}),))
        return Say(host_city(2008) if view.body["seed"] % 3 else "Paris")

    script(server, {"2008": [[answer]]})
    res = invoke(*run_args(tmp_path, "openai", tasks, "out", "--trials", "6"))
    assert res.exit_code == 0, res.output
    trajectories = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert [t["metadata"]["trial"] for t in trajectories] == [1, 2, 3, 4, 5, 6]
    seeds = [t["metadata"]["seed"] for t in trajectories]
    assert len(set(seeds)) == 6
    assert {b["seed"] for b in bodies(server)} == set(seeds)
    verdicts = [r["verdict"] for r in read_jsonl(tmp_path / "out" / "results.jsonl")]
    assert verdicts == ["pass" if s % 3 else "fail" for s in seeds]
    with open(tmp_path / "out" / "tables" / "pass_at_k.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["k"]) for r in rows] == [1, 2, 3, 4, 5, 6]
    assert float(rows[0]["pass_at_k"]) == pytest.approx(verdicts.count("pass") / 6, abs=1e-6)


def test_an_interrupted_run_resumes_without_rerunning_finished_trajectories(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task(f"g{y}", y) for y in YEARS])

    def broken_for_2008(body):
        if "2008" in json.dumps(body["messages"][1]):
            return Status(400, message="context length exceeded")  # final: no retry can fix it
        return scripted(body)

    from tests.servers.agent import ScriptedAgent

    scripted = ScriptedAgent({str(y): [[Act((Call("get_games_by_year", {"year": y}),)), Say(host_city(y))]] for y in YEARS})
    server.set_responder(MODEL, broken_for_2008)
    args = run_args(tmp_path, "openai", tasks)
    first = invoke(*args)
    assert first.exit_code == 5, first.output  # incomplete
    errors = read_jsonl(tmp_path / "out" / "run_errors.jsonl")
    assert [(e["trajectory_id"], e["kind"]) for e in errors] == [("g2008#1", "agent_error")] and "HTTP 400" in errors[0]["message"]
    assert [r["task_id"] for r in read_jsonl(tmp_path / "out" / "results.jsonl")] == ["g2004", "g2012"]  # collected ones graded
    assert json.loads((tmp_path / "out" / "run.json").read_text())["status"] == "incomplete"

    server.set_responder(MODEL, scripted)
    server.reset_log()
    second = invoke(*args)
    assert second.exit_code == 0, second.output
    assert len(bodies(server)) == 2 and all("2008" in json.dumps(b["messages"][1]) for b in bodies(server))
    assert [t["trajectory_id"] for t in read_jsonl(tmp_path / "out" / "trajectories.jsonl")] == ["g2004#1", "g2008#1", "g2012#1"]  # canonical order
    assert read_jsonl(tmp_path / "out" / "run_errors.jsonl") == []
    info = json.loads((tmp_path / "out" / "run.json").read_text())
    assert (info["counts"]["resumed"], info["counts"]["collected"], info["status"]) == (2, 3, "complete")

    # A write cut short by a crash leaves a torn last line: it is dropped and that trajectory collected again (from the cache).
    path = tmp_path / "out" / "trajectories.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    server.reset_log()
    third = invoke(*args)
    assert third.exit_code == 0, third.output
    assert server.requests == []
    assert [t["trajectory_id"] for t in read_jsonl(path)] == ["g2004#1", "g2008#1", "g2012#1"]


def test_retries_honour_retry_after_and_are_counted(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])
    _games_script(server, (2008,))
    server.script(MODEL, Status(429, retry_after="7"), Status(503))
    delays: list[float] = []

    async def no_wait(seconds: float) -> None:
        delays.append(seconds)
        await asyncio.sleep(0)

    policy = RetryPolicy(config=RetryConfig(max_attempts=4, base_delay_s=0.25, jitter=0.0), sleep=no_wait)
    outcome = collect_trajectories(RunOptions(agent=f"openai:{MODEL}", tasks=tasks, out=tmp_path / "out", cache_path=tmp_path / "cache.sqlite", retry=policy))
    assert outcome.complete
    assert delays == [7.0, 0.5]  # Retry-After exactly, then exponential backoff (attempt 2: 0.25 * 2)
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert trajectory["metadata"]["model_attempts"] == 4  # 3 for the first message, 1 for the answer
    calls = outcome.info["model_calls"]
    assert (calls["retries"], calls["retry_reasons"]) == (2, {"rate_limit": 1, "server": 1})


def test_the_cost_budget_stops_new_trajectories(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task(f"g{y}", y) for y in YEARS])
    _games_script(server)
    config = tmp_path / "agent.toml"
    config.write_text(f'[prices."openai:{MODEL}"]\ninput_per_1m = 1000.0\noutput_per_1m = 1000.0\n', encoding="utf-8")
    res = invoke(*run_args(tmp_path, "openai", tasks, "out", "--concurrency", "1", "--max-cost", "0.1"))
    assert res.exit_code == 5, res.output
    [collected] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert collected["token_usage"]["cost_usd"] == pytest.approx((270 + 42) * 1000 / 1e6)
    errors = read_jsonl(tmp_path / "out" / "run_errors.jsonl")
    assert [e["kind"] for e in errors] == ["budget", "budget"] and "--max-cost" in errors[0]["message"]
    info = json.loads((tmp_path / "out" / "run.json").read_text())
    assert info["budget"]["exhausted"] and info["budget"]["spent_usd"] == pytest.approx(0.312)


def test_offline_cache_misses_are_reported_never_graded(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])
    res = invoke(*run_args(tmp_path, "openai", tasks, "out", "--offline"))
    assert res.exit_code == 5, res.output
    assert server.requests == []
    [error] = read_jsonl(tmp_path / "out" / "run_errors.jsonl")
    assert error["kind"] == "offline_miss"
    assert read_jsonl(tmp_path / "out" / "results.jsonl") == []


def test_the_out_folder_of_another_run_is_refused_unless_overwritten(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])
    _games_script(server, (2008,))
    assert invoke(*run_args(tmp_path, "openai", tasks, "out", "--no-grade")).exit_code == 0
    assert not (tmp_path / "out" / "results.jsonl").exists() and (tmp_path / "out" / "trajectories.jsonl").exists()
    other = invoke(*run_args(tmp_path, "openai", tasks, "out", "--seed", "5"))
    assert other.exit_code == 2 and "seed" in other.output and "--overwrite" in other.output
    fresh = invoke(*run_args(tmp_path, "openai", tasks, "out", "--seed", "5", "--overwrite"))
    assert fresh.exit_code == 0, fresh.output
    assert json.loads((tmp_path / "out" / "run.json").read_text())["identity"]["seed"] == 5


def test_unrunnable_tasks_and_bad_task_lines_are_listed(tmp_path, server):
    no_env = task("elsewhere", "Which city hosted the 2008 Summer Games?", [], host_city(2008))
    del no_env["environment"]
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(games_task("g2008", 2008)) + "\n" + json.dumps(no_env) + "\n{not json\n", encoding="utf-8")
    _games_script(server, (2008,))
    res = invoke(*run_args(tmp_path, "openai", path))
    assert res.exit_code == 5, res.output
    [error] = read_jsonl(tmp_path / "out" / "run_errors.jsonl")
    assert error["kind"] == "unrunnable" and "--mcp" in error["message"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counts"]["graded"] == 1 and len(summary["errors"]) == 1 and summary["errors"][0]["line"] == 3
    failing = invoke(*run_args(tmp_path, "openai", path, "strict", "--on-error", "fail"))
    assert failing.exit_code == 3 and "tasks.jsonl:3" in failing.output


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--faults", "rate=2"], 2, "rate must be between 0 and 1"),
        (["--faults", "rate=0.1,kinds=error,explode"], 2, "unknown fault kind"),
        (["--mcp", "x", "--mcp-url", "http://127.0.0.1:9/mcp"], 2, "not both"),
    ],
)
def test_bad_options_are_usage_errors(tmp_path, server, args, code, message):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])
    res = invoke(*run_args(tmp_path, "openai", tasks, "out", *args))
    assert res.exit_code == code and message in res.output, res.output


def test_agent_configuration_errors_exit_4(tmp_path, server, monkeypatch):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])
    unknown = invoke("--agent", "gemini:x", "--tasks", str(tasks), "--out", str(tmp_path / "a"))
    assert unknown.exit_code == 4 and "unknown provider" in unknown.output
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    keyless = invoke("--agent", "openai:gpt-4.1-mini", "--tasks", str(tasks), "--out", str(tmp_path / "b"))
    assert keyless.exit_code == 4 and "OPENAI_API_KEY" in keyless.output


def test_concurrency_bounds_the_trajectories_in_flight(tmp_path, server):
    years = (2000, 2004, 2008, 2012, 2016, 2020)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task(f"g{y}", y) for y in years])
    _games_script(server, years)
    server.latency_s = 0.05
    res = invoke(*run_args(tmp_path, "openai", tasks, "out", "--concurrency", "2", "--no-grade"))
    assert res.exit_code == 0, res.output
    assert server.max_in_flight <= 2
    assert [t["task_id"] for t in read_jsonl(tmp_path / "out" / "trajectories.jsonl")] == [f"g{y}" for y in years]  # plan order, whatever finished first


def test_sampling_options_reach_the_wire(tmp_path, server, wire):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])
    _games_script(server, (2008,))
    res = invoke(*run_args(tmp_path, wire, tasks, "out", "--temperature", "0.3", "--max-tokens", "50", "--no-grade"))
    assert res.exit_code == 0, res.output
    body = bodies(server)[0]
    if wire == "openai":
        assert (body["temperature"], body["max_completion_tokens"]) == (0.3, 50) and isinstance(body["seed"], int)
    else:  # the anthropic SDK takes neither temperature nor seed
        assert body["max_tokens"] == 50 and "temperature" not in body and "seed" not in body
    assert json.loads((tmp_path / "out" / "run.json").read_text())["agent"]["sampling"]["temperature"] == 0.3


def test_unenforceable_limits_are_refused(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])
    no_price = invoke(*run_args(tmp_path, "openai", tasks, "a", "--max-cost", "1"))
    assert no_price.exit_code == 4 and "[prices." in no_price.output
    both = invoke(*run_args(tmp_path, "openai", tasks, "b", "--offline", "--no-cache"))
    assert both.exit_code == 2 and "--no-cache" in both.output
    assert server.requests == []
