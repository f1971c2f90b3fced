"""Tools over MCP (official SDK client) against ``judge env serve``, over stdio and streamable HTTP:
the agent sees the same results as in-process, and a dead server is an infrastructure failure."""

from __future__ import annotations

import shlex
import sys

from tests.runner.conftest import games_task, host_city, invoke, read_jsonl, run_args, script, write_tasks
from tests.servers.agent import Act, Call, Say
from tests.servers.mcp_http import serve_http

SERVE = [sys.executable, "-m", "pipelines.env", "serve", "olympics"]


def _script(server) -> None:
    script(
        server,
        {
            "2008": [
                [
                    Act((Call("get_games_by_year", {"year": 2008}), Call("launch_rockets", {}))),  # a parallel pair, one unknown tool
                    Say(host_city(2008)),
                ]
            ]
        },
    )


def _steps(path) -> list[dict]:
    [trajectory] = read_jsonl(path)
    return [{k: s.get(k) for k in ("name", "status", "result", "round")} for s in trajectory["turns"][0]["steps"]]


def test_stdio_and_http_mcp_give_what_the_in_process_environment_gives(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])
    _script(server)
    local = invoke(*run_args(tmp_path, "openai", tasks, "local", "--no-cache"))
    assert local.exit_code == 0, local.output
    expected = _steps(tmp_path / "local" / "trajectories.jsonl")
    assert [s["status"] for s in expected] == ["ok", "error"]

    stdio = invoke(*run_args(tmp_path, "openai", tasks, "stdio", "--no-cache", "--mcp", shlex.join(SERVE)))
    assert stdio.exit_code == 0, stdio.output
    assert _steps(tmp_path / "stdio" / "trajectories.jsonl") == expected
    [trajectory] = read_jsonl(tmp_path / "stdio" / "trajectories.jsonl")
    assert trajectory["metadata"]["tool_source"].startswith("mcp:stdio:")
    assert "unknown tool" in trajectory["turns"][0]["steps"][1]["error"]
    [row] = read_jsonl(tmp_path / "stdio" / "results.jsonl")
    assert row["verdict"] == "pass"

    with serve_http("olympics") as url:
        http = invoke(*run_args(tmp_path, "openai", tasks, "http", "--no-cache", "--mcp-url", url))
    assert http.exit_code == 0, http.output
    assert _steps(tmp_path / "http" / "trajectories.jsonl") == expected


def test_an_mcp_server_that_dies_is_reported_not_graded(tmp_path, server):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("g2008", 2008)])
    _script(server)
    dead = shlex.join([sys.executable, "-c", "import sys; sys.exit(3)"])
    res = invoke(*run_args(tmp_path, "openai", tasks, "out", "--mcp", dead))
    assert res.exit_code == 5, res.output
    [error] = read_jsonl(tmp_path / "out" / "run_errors.jsonl")
    assert error["kind"] == "tool_error"
    assert read_jsonl(tmp_path / "out" / "trajectories.jsonl") == []
