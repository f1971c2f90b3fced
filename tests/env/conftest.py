from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from data.build._toolkit import Domain, Table, endpoint, retriever, slot_family, write, write_domain
from judge import Task, Trajectory
from pipelines.env import load_environment
from tests.servers.mcp_http import free_port

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"

HANG_SQL = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c WHERE x > :floor"


def tiny_domain(extra_tools: list[dict] | None = None) -> Domain:
    """A test-only domain: a table, a hanging tool, a big-result tool, a write tool, two documents."""
    rows = [(i, f"item{i}", i % 3) for i in range(1, 401)]
    tools = (
        slot_family(["items"])
        + [
            endpoint("get_item", "One item.", {"item_id": (int, "Id.")}, "SELECT * FROM items WHERE item_id = :item_id", "row"),
            endpoint("items_in_group", "Items of a group.", {"grp": (int, "Group.")}, "SELECT * FROM items WHERE grp = :grp ORDER BY item_id"),
            endpoint("hang", "Never finishes (test only).", {"floor": (int, "Lower bound.")}, HANG_SQL, "row"),
            write(
                "rename_item",
                "Rename an item.",
                {"item_id": (int, "Id."), "name": (str, "New name.")},
                ["UPDATE items SET name = :name WHERE item_id = :item_id"],
                precheck=("SELECT 1 FROM items WHERE item_id = :item_id", "item {item_id} not found"),
                result_sql="SELECT * FROM items WHERE item_id = :item_id",
            ),
            retriever("search_notes", "Search notes."),
        ]
        + (extra_tools or [])
    )
    docs = [{"doc_id": "a", "title": "Apples", "text": "Apples grow on trees."}, {"doc_id": "b", "title": "苹果", "text": "苹果长在树上，秋天成熟。"}]
    return Domain("tiny", [Table("items", "CREATE TABLE items (item_id INTEGER PRIMARY KEY, name TEXT NOT NULL, grp INTEGER NOT NULL)", rows)], tools, docs)


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("envs")
    write_domain(tiny_domain(), root)
    return root


@pytest.fixture(scope="session")
def tiny(tiny_root: Path):
    return load_environment("tiny", tiny_root, time_limit_s=0.3)


@pytest.fixture(scope="session")
def olympics():
    return load_environment("olympics")


@pytest.fixture(scope="session")
def sample_tasks() -> dict[str, Task]:
    tasks = {}
    for line in (SAMPLE / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
        task = Task.model_validate(json.loads(line))
        tasks[task.task_id] = task
    return tasks


@pytest.fixture(scope="session")
def sample_trajectories() -> list[Trajectory]:
    return [Trajectory.model_validate(json.loads(line)) for line in (SAMPLE / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def mcp_server():
    """``start(host, **options)``: the flights domain's MCP HTTP app (``http_app``) served by uvicorn in
    a thread on ``host``; gives the app (to look at its session states), its URL and its port."""
    started: list = []

    def start(host: str = "127.0.0.1", **options: Any):
        from pipelines.env._mcp import http_app

        port = free_port()
        app = http_app(load_environment("flights"), host=host, **options)
        srv = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
        thread = threading.Thread(target=srv.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not srv.started:
            if time.monotonic() > deadline or not thread.is_alive():
                pytest.fail("server did not start")
            time.sleep(0.05)
        started.append((srv, thread))
        return app, f"http://{host}:{port}/mcp", port

    yield start
    for srv, thread in started:
        srv.should_exit = True
        thread.join(timeout=10)
