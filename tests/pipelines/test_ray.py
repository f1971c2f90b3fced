"""``--ray``: shards graded by Ray actors on a local Ray instance (2 CPUs) merge into the very
bytes of a run in this process. Needs the optional extra (``pip install 'trajectory-judge[ray]'``,
which ``make test`` installs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'trajectory-judge[ray]' (make test installs it)")

from bench.conversations import generate as generate_conversations  # noqa: E402
from pipelines.run import GradeOptions, run_grading  # noqa: E402

OUTPUTS = ("results.jsonl", "summary.json", "report.md")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_run_equals_local_runs(local_ray, tmp_path):
    paths = generate_conversations(tmp_path / "conv", 50, seed=6)
    runs: dict[str, Path] = {}
    for name, options in {"one": {}, "ray": {"ray": True, "workers": 2}}.items():
        out = tmp_path / name
        run_grading(GradeOptions(tasks=paths["episode"], trajectories=paths["trajectories"], out=out, shard_lines=8, **options))
        runs[name] = out
    for name in OUTPUTS:
        assert (runs["one"] / name).read_bytes() == (runs["ray"] / name).read_bytes(), name
    manifest = json.loads((runs["ray"] / "manifest.json").read_text())
    assert manifest["grading"]["executor"] == "ray" and manifest["grading"]["workers"] == 2 and manifest["grading"]["shards"] >= 6
