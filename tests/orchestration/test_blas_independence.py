"""Failure-mode clusters have the same bits whatever BLAS kernel the CPU gets ("same inputs, same
report" across machines).

OpenBLAS picks a kernel per CPU (Haswell on AMD EPYC, SkylakeX on AVX-512 Intel, ...), and the
kernels sum dot products in different orders. Before the features were put on a grid
(``pipelines.orchestration._kmeans.on_grid``), the golden case ``conversations-turns`` clustered
into 3 failure modes under SkylakeX and 2 under Haswell. Each kernel the CPU can run is forced
with ``OPENBLAS_CORETYPE`` in a fresh interpreter, which clusters the golden case's results and a
seeded synthetic set of a few hundred varied failures, and prints the clustering; all must match.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "fixtures" / "golden" / "conversations-turns" / "results.jsonl"
KERNELS = {"Prescott": "pni", "Sandybridge": "avx", "Haswell": "avx2", "SkylakeX": "avx512f"}  # kernel -> CPU flag it needs

SCRIPT = r"""
import json, random, sys
from threadpoolctl import threadpool_info
from judge import TrajectoryResult
from pipelines.orchestration.clusters import FailureFeatures, Member, cluster_failures
from pipelines.orchestration.failure_modes import FailureModes

modes = FailureModes()
with open(sys.argv[1], encoding="utf-8") as lines:
    for line in lines:
        modes.add(TrajectoryResult.model_validate_json(line))
out = {"golden": cluster_failures(*modes.rows_and_members()).summary}

rng = random.Random(7)
words = [f"w{i}" for i in range(60)]
stages = ["tool_selection", "argument_names", "argument_values", "answer_correctness", "unresolved:policy"]
tools = [f"tool_{i}" for i in range(12)]
kinds = ["unsatisfied", "extra_write", "answer", "policy_violation"]
rows = [
    FailureFeatures(
        rng.choice(stages),
        tuple(sorted(set(rng.sample(tools, rng.randint(0, 3))))),
        tuple(sorted(set(rng.sample(kinds, rng.randint(1, 2))))),
        " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))),
    )
    for _ in range(300)
]
members = [Member(f"t{i}", f"task{i % 40}", f"agent{i % 3}", rng.randrange(len(rows))) for i in range(900)]
clustering = cluster_failures(rows, members)
out["synthetic"] = {"summary": clustering.summary, "members": clustering.member_clusters}
out["kernel"] = sorted({i.get("architecture") for i in threadpool_info() if i["internal_api"] == "openblas"})
print(json.dumps(out, sort_keys=True))
"""


def _flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return set()
    line = next((x for x in text.splitlines() if x.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def _cluster_under(kernel: str) -> dict:
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(RESULTS)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_failure_clusters_are_the_same_under_every_blas_kernel():
    flags = _flags()
    kernels = [k for k, flag in KERNELS.items() if flag in flags]
    if len(kernels) < 2:
        pytest.skip("this CPU runs fewer than two OpenBLAS kernels (or is not x86 Linux)")
    runs = {k: _cluster_under(k) for k in kernels}
    used = {tuple(r.pop("kernel")) for r in runs.values()}
    if len(used) < 2:
        pytest.skip(f"OPENBLAS_CORETYPE had no effect (kernels used: {used}): numpy is not on OpenBLAS here")
    first, *others = kernels
    for kernel in others:
        assert runs[kernel]["golden"] == runs[first]["golden"], f"{kernel} vs {first}: golden case's failure modes differ"
        assert runs[kernel]["synthetic"] == runs[first]["synthetic"], f"{kernel} vs {first}: synthetic failure modes differ"
    assert runs[first]["golden"]["k"] >= 2 and runs[first]["synthetic"]["summary"]["k"] >= 2  # k-means ran, not the one-cluster shortcut
