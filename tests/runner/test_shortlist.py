"""Large tool sets: above the provider's cap each turn declares a BM25 shortlist, recorded on the trajectory."""

from __future__ import annotations

from judge import ToolSpec
from pipelines.runner import MenuFactory
from tests.runner.conftest import bodies, games_task, host_city, invoke, read_jsonl, run_args, script, tools_of, write_tasks
from tests.servers.agent import Act, Call, Say

NOISE = ["refund", "invoice", "warehouse", "courier", "coupon", "loyalty", "payroll", "ticket", "survey", "inventory", "audit", "shipping"]


def _noise_tools(n: int) -> list[dict]:
    return [
        {
            "name": f"{NOISE[i % len(NOISE)]}_tool_{i}",
            "description": f"Manage the {NOISE[i % len(NOISE)]} records of store {i}.",
            "parameters": {"type": "object", "properties": {"store_id": {"type": "integer"}}, "required": ["store_id"]},
        }
        for i in range(n)
    ]


def test_above_the_openai_cap_each_turn_declares_a_recorded_shortlist(tmp_path, server):
    tools = tools_of("olympics") + _noise_tools(140)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("big", 2008, tools=tools)])
    script(server, {"2008": [[Act((Call("get_games_by_year", {"year": 2008}),)), Say(host_city(2008))]]})
    res = invoke(*run_args(tmp_path, "openai", tasks))
    assert res.exit_code == 0, res.output
    declared = [[t["function"]["name"] for t in b["tools"]] for b in bodies(server)]
    assert all(len(names) == 128 for names in declared) and declared[0] == declared[1]
    assert "get_games_by_year" in declared[0][:5]  # ranked by the query: the games tools come first
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert trajectory["metadata"]["tools_offered"] == {"1": declared[0]} and trajectory["metadata"]["tool_count"] == len(tools)
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["verdict"] == "pass"


def test_max_tools_sets_the_cap_and_small_sets_are_declared_whole(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("small", 2008)])
    script(server, {"2008": [[Act((Call("get_games_by_year", {"year": 2008}),)), Say(host_city(2008))]]})
    assert invoke(*run_args(tmp_path, "anthropic", tasks, "whole")).exit_code == 0
    assert len(bodies(server)[0]["tools"]) == len(tools_of("olympics"))  # no known cap for Anthropic, 18 tools: all of them
    server.reset_log()
    res = invoke(*run_args(tmp_path, "anthropic", tasks, "capped", "--max-tools", "5"))
    assert res.exit_code == 0, res.output
    names = [t["name"] for t in bodies(server)[0]["tools"]]
    assert len(names) == 5 and names[0] == "get_games_by_year"
    [trajectory] = read_jsonl(tmp_path / "capped" / "trajectories.jsonl")
    assert trajectory["metadata"]["tools_offered"]["1"] == names


def test_a_query_matching_nothing_still_gets_k_tools_in_listed_order():
    tools = [ToolSpec(name=f"tool_{i}", description=f"Thing number {i}.") for i in range(10)]
    menu = MenuFactory(cap=4).menu(tools)
    assert [t.name for t in menu.offer("zzz qqq")] == ["tool_0", "tool_1", "tool_2", "tool_3"]
    assert menu.offer("thing number 7")[0].name == "tool_7"
    assert MenuFactory(cap=4).menu(tools).offer("thing number 7") == menu.offer("thing number 7")  # deterministic
    assert MenuFactory(cap=None).menu(tools).offer("x") == tools
