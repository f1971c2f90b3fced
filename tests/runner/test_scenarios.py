"""The agent loop end to end: scripted agents on loopback servers, both wire formats, real SDKs,
real environments, then the real grading pipeline on what was recorded."""

from __future__ import annotations

import json

import pytest

from pipelines.runner import HARNESS_PROMPT, HARNESS_VERSION
from tests.runner.conftest import bodies, games_task, host_city, invoke, read_jsonl, run_args, script, task, tools_of, write_tasks
from tests.servers.agent import Act, Call, Say, View
from tests.servers.loopback import Refusal, Reply


def _tool_messages(body: dict, wire: str) -> list[dict]:
    """The tool results of the request's last message(s), as (call id, content, is_error) dicts."""
    if wire == "openai":
        out = []
        for m in reversed(body["messages"]):
            if m["role"] != "tool":
                break
            out.insert(0, {"id": m["tool_call_id"], "content": m["content"], "is_error": None})
        return out
    last = body["messages"][-1]
    return [{"id": b["tool_use_id"], "content": b["content"], "is_error": b["is_error"]} for b in last["content"] if b["type"] == "tool_result"]


def test_parallel_calls_are_executed_and_returned_together(tmp_path, server, wire):
    answer = f"{host_city(2008)} and {host_city(2012)}"
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            task(
                "two-games",
                "Which cities hosted the 2008 and the 2012 Summer Games?",
                [{"name": "get_games_by_year", "arguments": {"year": 2008}}, {"name": "get_games_by_year", "arguments": {"year": 2012}}],
                answer,
            )
        ],
    )
    calls = (Call("get_games_by_year", {"year": 2008}), Call("get_games_by_year", {"year": 2012}))
    script(server, {"2012": [[Act(calls, text="Let me look both up."), Say(answer)]]})
    res = invoke(*run_args(tmp_path, wire, tasks))
    assert res.exit_code == 0, res.output

    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    steps = trajectory["turns"][0]["steps"]
    assert [(s["arguments"]["year"], s["round"], s["status"]) for s in steps] == [(2008, 0, "ok"), (2012, 0, "ok")]
    assert trajectory["turns"][0]["agent_messages"] == ["Let me look both up.", answer] and trajectory["turns"][0]["final_answer"] == answer
    second = bodies(server)[1]
    results = _tool_messages(second, wire)
    assert [r["id"] for r in results] == [s["call_id"] for s in steps]  # both results, one message, in call order
    assert host_city(2008) in results[0]["content"] and host_city(2012) in results[1]["content"]
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["verdict"] == "pass", row


def test_a_policy_violation_is_blocked_recorded_and_graded_at_the_policy_stage(tmp_path, server, wire):
    policy = {"text": "Never use the history search; use the games database.", "forbidden_tools": ["search_olympic_history"]}
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("blocked", 2008, policy=policy)])
    script(
        server,
        {
            "2008": [
                [Act((Call("search_olympic_history", {"query": "2008 host city"}),)), Act((Call("get_games_by_year", {"year": 2008}),)), Say(host_city(2008))]
            ]
        },
    )
    res = invoke(*run_args(tmp_path, wire, tasks))
    assert res.exit_code == 0, res.output

    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    blocked, looked_up = trajectory["turns"][0]["steps"]
    assert blocked["status"] == "blocked" and blocked["error"] == "blocked by policy: tool 'search_olympic_history' is forbidden"
    assert looked_up["status"] == "ok" and trajectory["metadata"]["blocked_calls"] == 1
    first, second = bodies(server)[:2]
    system = first["messages"][0]["content"] if wire == "openai" else first["system"]
    assert system.startswith(HARNESS_PROMPT) and policy["text"] in system
    [told] = _tool_messages(second, wire)
    assert told["content"] == blocked["error"] and told["is_error"] in (None, True)
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert (row["verdict"], row["failure_stage"]) == ("fail", "policy")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["runner"]["harness"]["version"] == HARNESS_VERSION
    assert manifest["runner"]["identity"]["enforce_policy"] is True


def test_without_enforcement_the_violating_call_runs_and_grading_still_flags_it(tmp_path, server):
    policy = {"text": "Never use the history search.", "forbidden_tools": ["search_olympic_history"]}
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("unenforced", 2008, policy=policy)])
    script(
        server,
        {
            "2008": [
                [Act((Call("search_olympic_history", {"query": "2008 host city"}),)), Act((Call("get_games_by_year", {"year": 2008}),)), Say(host_city(2008))]
            ]
        },
    )
    res = invoke(*run_args(tmp_path, "openai", tasks, "out", "--no-enforce-policy"))
    assert res.exit_code == 0, res.output
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert trajectory["turns"][0]["steps"][0]["status"] == "ok"
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert (row["verdict"], row["failure_stage"]) == ("fail", "policy")


def _retry_until_answered(year: int):
    """Call the tool; after an error, call it again; after a result, answer with its host city."""

    def act(view: View):
        result = view.last_result
        try:
            return Say(json.loads(result.content)["host_city"])  # type: ignore[union-attr]
        except (AttributeError, ValueError, KeyError, TypeError):  # no result yet, an error, or broken JSON
            return Act((Call("get_games_by_year", {"year": year}),))

    return act


def test_recovery_after_injected_faults(tmp_path, server, wire):
    from pipelines.runner import parse_faults

    years = [2000, 2004, 2008, 2012, 2016, 2020]
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task(f"g{y}", y) for y in years])
    script(server, {str(y): [[_retry_until_answered(y)]] for y in years})
    spec = "tool=get_games_by_year,rate=0.5,kinds=error,timeout,empty,malformed,seed=7"
    res = invoke(*run_args(tmp_path, wire, tasks, "out", "--faults", spec))
    assert res.exit_code == 0, res.output

    plan = parse_faults([spec])
    assert plan is not None
    trajectories = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    recovered = 0
    for trajectory in trajectories:
        steps = trajectory["turns"][0]["steps"]
        for i, step in enumerate(steps):  # every recorded fault is the plan's, and only those
            assert step.get("fault") == plan.pick(trajectory["trajectory_id"], i, "get_games_by_year")
            if step.get("fault") in ("error", "timeout"):
                assert step["status"] == "error" and step["error"].startswith("injected fault")
            elif step.get("fault") == "malformed":
                assert step["status"] == "ok" and not step["result"].endswith("}")
            elif step.get("fault") == "empty":
                assert step["status"] == "ok" and step["result"] == ""
        assert trajectory["metadata"]["injected_faults"] == sum(1 for s in steps if s.get("fault"))
        if steps[0].get("fault") and steps[-1].get("fault") is None:
            recovered += 1
    assert recovered >= 1  # the seed gives faults (rate 0.5 over six first calls) and the agent got past them
    kinds = {s.get("fault") for t in trajectories for s in t["turns"][0]["steps"]}
    assert kinds == {None, "error", "timeout", "empty", "malformed"}  # seed 7 draws every kind here, and the agent got past each
    results = {r["trajectory_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    for trajectory in trajectories:
        if trajectory["turns"][0]["steps"][0].get("fault") in ("error", "timeout"):  # a failed first call, then a good one
            assert results[trajectory["trajectory_id"]]["verdict"] == "pass"


def test_a_looping_agent_stops_at_the_call_budget(tmp_path, server, wire):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("loop", 2008)])
    script(server, {"2008": [[Act((Call("get_games_by_year", {"year": 2008}),))]]})  # calls forever
    res = invoke(*run_args(tmp_path, wire, tasks, "out", "--max-steps", "3"))
    assert res.exit_code == 0, res.output
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    meta = trajectory["metadata"]
    assert len(trajectory["turns"][0]["steps"]) == 3 and [s["round"] for s in trajectory["turns"][0]["steps"]] == [0, 1, 2]
    assert (meta["stop_reason"], meta["dropped_calls"], meta["model_calls"]) == ("max_steps", 1, 4)
    assert "final_answer" not in trajectory["turns"][0]
    assert trajectory["ended_early"] == {
        "kind": "limit",
        "reason": "the call budget (3 calls) ran out: 1 further proposed call(s) were dropped and the run stopped before the agent answered",
    }
    assert "hit the call budget" in res.output
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert (row["verdict"], row["failure_stage"]) == ("fail", "answer_correctness")
    answer = next(c for c in row["turns"][0]["checks"] if c["check"] == "answer")
    assert answer["reason"].startswith("the run ended before the agent finished (limit): the call budget (3 calls) ran out")


def test_the_policy_call_limit_caps_the_budget_at_one_attempted_violation(tmp_path, server):
    policy = {"text": "At most two tool calls.", "max_calls": 2}
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("capped", 2008, policy=policy)])
    script(server, {"2008": [[Act((Call("get_games_by_year", {"year": 2008}),))]]})
    res = invoke(*run_args(tmp_path, "openai", tasks))
    assert res.exit_code == 0, res.output
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    statuses = [s["status"] for s in trajectory["turns"][0]["steps"]]
    assert statuses == ["ok", "ok", "blocked"] and trajectory["metadata"]["call_budget"] == 3
    assert trajectory["turns"][0]["steps"][2]["error"] == "blocked by policy: call 3 exceeds max_calls=2"
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert (row["verdict"], row["failure_stage"]) == ("fail", "policy")


def test_a_refusal_is_the_final_answer(tmp_path, server, wire):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("refused", 2008)])
    script(server, {"2008": [[Refusal("I can't help with that.")]]})
    res = invoke(*run_args(tmp_path, wire, tasks))
    assert res.exit_code == 0, res.output
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert trajectory["turns"][0]["final_answer"] == "I can't help with that."
    assert trajectory["turns"][0]["steps"] == [] and trajectory["metadata"]["refused_turns"] == ["1"]
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["verdict"] == "fail"


def test_multi_turn_tasks_send_the_next_query_after_the_answer(tmp_path, server, wire):
    data = {
        "task_id": "two-turns",
        "environment": "olympics",
        "tools": tools_of("olympics"),
        "turns": [
            {
                "turn_id": "a",
                "query": "Which city hosted the 2008 Summer Games?",
                "reference_calls": [{"name": "get_games_by_year", "arguments": {"year": 2008}}],
                "gold_answer": host_city(2008),
            },
            {
                "turn_id": "b",
                "query": "And in 2012?",
                "reference_calls": [{"name": "get_games_by_year", "arguments": {"year": 2012}}],
                "gold_answer": host_city(2012),
            },
        ],
    }
    tasks = write_tasks(tmp_path / "tasks.jsonl", [data])
    script(
        server,
        {
            "2008": [
                [Act((Call("get_games_by_year", {"year": 2008}),)), Say(host_city(2008))],
                [Act((Call("get_games_by_year", {"year": 2012}),)), Say(host_city(2012))],
            ]
        },
    )
    res = invoke(*run_args(tmp_path, wire, tasks))
    assert res.exit_code == 0, res.output
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert [(t["turn_id"], t["query"], t["final_answer"]) for t in trajectory["turns"]] == [
        ("a", "Which city hosted the 2008 Summer Games?", host_city(2008)),
        ("b", "And in 2012?", host_city(2012)),
    ]
    assert [s["round"] for t in trajectory["turns"] for s in t["steps"]] == [0, 1]
    third = bodies(server)[2]  # the first request of turn b: the whole dialogue so far
    tail = third["messages"][-2:]
    assert tail[0]["role"] == "assistant" and host_city(2008) in json.dumps(tail[0]["content"])
    assert tail[1]["role"] == "user" and "And in 2012?" in json.dumps(tail[1]["content"])
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["verdict"] == "pass" and [t["turn_id"] for t in row["turns"]] == ["a", "b"]


def test_unparseable_arguments_and_tool_errors_are_the_agents_to_handle(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("broken", 2008)])
    script(
        server,
        {
            "2008": [
                [
                    Act((Call("get_games_by_year", '{"year": 20'),)),
                    Act((Call("get_games_by_year", {"year": "two thousand eight"}),)),
                    Act((Call("get_games_by_year", {"year": 2008}),)),
                    Say(host_city(2008)),
                ]
            ]
        },
    )
    res = invoke(*run_args(tmp_path, "openai", tasks))
    assert res.exit_code == 0, res.output
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    unparseable, invalid, good = trajectory["turns"][0]["steps"]
    assert unparseable["status"] == "error" and unparseable["error"].startswith("unparseable arguments") and unparseable["arguments"] == {}
    assert invalid["status"] == "error" and "invalid arguments" in invalid["error"]
    assert good["status"] == "ok"
    told = [_tool_messages(b, "openai")[0]["content"] for b in bodies(server)[1:3]]
    assert told[0].startswith("Error: the arguments must be a JSON object") and told[1].startswith("Error: invalid arguments")
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["verdict"] == "pass"


def test_tool_names_providers_reject_are_sanitised_on_the_wire_only(tmp_path, server, wire):
    dotted = {"name": "olympics.lookup", "description": "Look something up.", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("dots", 2008, tools=[*tools_of("olympics"), dotted])])
    script(server, {"2008": [[Act((Call("olympics_lookup", {"q": "2008"}),)), Act((Call("get_games_by_year", {"year": 2008}),)), Say(host_city(2008))]]})
    res = invoke(*run_args(tmp_path, wire, tasks, "out", "--no-grade"))
    assert res.exit_code == 0, res.output
    declared = [t["function"]["name"] if wire == "openai" else t["name"] for t in bodies(server)[0]["tools"]]
    assert "olympics_lookup" in declared and "olympics.lookup" not in declared
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    first = trajectory["turns"][0]["steps"][0]
    assert first["name"] == "olympics.lookup" and "unknown tool 'olympics.lookup'" in first["error"]  # executed under its real name


def test_a_wire_name_two_tools_share_is_recorded_as_the_model_sent_it(tmp_path, server):
    """``olympics.lookup`` and ``olympics/lookup`` both go out as ``olympics_lookup``: a call by that
    name could mean either, so it is not guessed (``judge.ToolNames``, the rule grading applies too)."""
    dotted = {"name": "olympics.lookup", "description": "Look something up.", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
    slashed = {**dotted, "name": "olympics/lookup"}
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("clash", 2008, tools=[*tools_of("olympics"), dotted, slashed])])
    script(server, {"2008": [[Act((Call("olympics_lookup", {"q": "2008"}),)), Act((Call("get_games_by_year", {"year": 2008}),)), Say(host_city(2008))]]})
    res = invoke(*run_args(tmp_path, "openai", tasks, "out", "--no-grade"))
    assert res.exit_code == 0, res.output
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    first = trajectory["turns"][0]["steps"][0]
    assert first["name"] == "olympics_lookup" and "unknown tool 'olympics_lookup'" in first["error"]


def test_the_run_grades_with_its_judge_settings_recorded_and_every_core(tmp_path, server, monkeypatch):
    """``judge run`` grades like ``judge grade``: the panel's settings travel with the grading (an
    interrupted grading resumes with them; ``--workers`` shards judge calls with them) and the
    grading uses the machine's cores."""
    from pipelines.cli import grade as grade_cli
    from pipelines.run import default_workers

    seen = []
    original = grade_cli.run_and_print

    def recording(opts):
        seen.append(opts)
        return original(opts)

    monkeypatch.setattr(grade_cli, "run_and_print", recording)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("judged", 2008)])
    script(server, {"2008": [[Act((Call("get_games_by_year", {"year": 2008}),)), Say(host_city(2008))]]})
    res = invoke(*run_args(tmp_path, "openai", tasks, "out", "--judge", "openai:judge-x", "--judge-max-cost", "1.5"))
    assert res.exit_code == 0, res.output
    [opts] = seen
    assert opts.judge_settings is not None and opts.judge_settings.judges == ["openai:judge-x"] and opts.judge_settings.max_cost_usd == 1.5
    assert opts.workers == default_workers()
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["verdict"] == "pass"


class _CutOff(BaseException):
    """What a kill looks like to the run: it stops where it is, nothing cleaned up."""


def test_a_judge_run_whose_grading_was_cut_off_is_finished_by_judge_resume_with_its_rubrics(tmp_path, server, monkeypatch):
    """judge resume rebuilds a judge run's grading from the run state alone: with the rubrics of
    --rubrics DIR (recorded with the run), and the runner section in the manifest it finishes."""
    from typer.testing import CliRunner

    from pipelines.cli import app
    from pipelines.cli.rubrics import load_rubric_table
    from pipelines.run.escalation import Escalation
    from rubrics import RUBRICS

    folder = tmp_path / "rubrics"
    assert CliRunner().invoke(app, ["rubrics", "export", str(folder)]).exit_code == 0
    template = folder / "answer_correctness.j2"
    template.write_text(template.read_text(encoding="utf-8") + "\nA paraphrase that names the same thing is correct.\n", encoding="utf-8")
    city = host_city(2008)
    question, reference = "Which city hosted the 2008 Summer Games?", [{"name": "get_games_by_year", "arguments": {"year": 2008}}]
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task("judged", question, reference, f"{city}, the capital of China")])
    script(server, {"2008": [[Act((Call("get_games_by_year", {"year": 2008}),)), Say(f"It was {city}.")]]})  # part of the gold: judged
    labels = {"AnswerCorrectnessVerdict": "correct", "TrajectorySufficiencyVerdict": "sufficient", "GroundednessVerdict": "supported"}
    server.set_responder("judge-x", lambda body: Reply(labels[body["tools"][0]["function"]["name"]]))
    args = run_args(tmp_path, "openai", tasks, "out", "--judge", "openai:judge-x", "--rubrics", str(folder))
    original = Escalation.run

    def cut_off(self, *a, **kw):
        raise _CutOff  # graded, nothing asked of a judge yet

    monkeypatch.setattr(Escalation, "run", cut_off)
    with pytest.raises(_CutOff):
        invoke(*args)
    monkeypatch.setattr(Escalation, "run", original)
    assert server.calls("judge-x") == 0
    out = tmp_path / "out"
    assert not (out / "manifest.json").exists() and (out / ".judge-run").is_dir()

    res = CliRunner().invoke(app, ["resume", str(out), "--workers", "1"])
    assert res.exit_code == 0, res.output
    [row] = read_jsonl(out / "results.jsonl")
    answer = next(c for c in row["turns"][0]["checks"] if c["check"] == "answer")
    assert row["verdict"] == "pass" and answer["decision"]["label"] == "correct"
    custom = load_rubric_table(folder)
    assert custom is not None and answer["decision"]["rubric_version"] == custom["answer_correctness"].version != RUBRICS["answer_correctness"].version
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["runner"] == json.loads((out / "run.json").read_text())


def test_judge_run_takes_the_control_items_option(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("c", 2008)])
    script(server, {"2008": [[Act((Call("get_games_by_year", {"year": 2008}),)), Say(host_city(2008))]]})
    res = invoke(*run_args(tmp_path, "openai", tasks), "--controls", "report")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["config"]["controls"] == "report"
    bad = invoke(*run_args(tmp_path, "openai", tasks, "other"), "--controls", "sometimes")
    assert bad.exit_code == 2 and "--controls must be off, report or gate" in bad.output
