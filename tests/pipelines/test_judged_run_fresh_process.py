"""`judge grade --judge ...` in a fresh interpreter: the built-in rubrics must be loaded by the run
itself. In-process CLI tests cannot see this (some test module has imported ``rubrics`` by then):
when a run without judges stopped importing them, a judged run failed with "unknown rubric" (exit 4)
and only a benchmark run as a script noticed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.servers import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample"


def test_a_judged_run_loads_its_rubrics(tmp_path):
    trajectories = tmp_path / "trajectories.jsonl"
    trajectories.write_bytes(b"".join((SAMPLE / "trajectories.jsonl").read_bytes().splitlines(keepends=True)[:60]))
    with LoopbackServer() as server:
        env = {
            **os.environ,
            "OPENAI_API_KEY": "test-not-a-key",
            "OPENAI_BASE_URL": server.openai_base_url,
            "XDG_CACHE_HOME": str(tmp_path / "xdg"),
            "PYTHONPATH": str(ROOT),
        }
        args = [
            "grade",
            "--tasks",
            str(SAMPLE / "tasks.jsonl"),
            "--trajectories",
            str(trajectories),
            "--out",
            str(tmp_path / "out"),
            "--judge",
            "openai:test-judge",
        ]
        proc = subprocess.run([sys.executable, "-c", "from pipelines.cli import main; main()", *args], capture_output=True, text=True, env=env, cwd=tmp_path)
        asked = len(server.requests)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert asked > 0 and summary["judges"]["calls"] > 0
