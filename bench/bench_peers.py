"""Our grading beside LangChain agentevals' superset trajectory match, on the same conversations.

agentevals is installed in the bench's own environment (``bench/.venv-peers``, created on first
use with ``pip install agentevals``), never as a project dependency. Both sides start from the
same files: agentevals reads each conversation and its reference trajectory (the task's
reference calls as assistant tool-call messages, ``reference.jsonl`` from the generator) and
checks that the agent's tool calls are a superset of the reference's (arguments compared
exactly); we run ``judge grade`` on the same conversations and their task lines in one process
on one core. What each side checks is printed beside its time: the comparison is of cost, the
work differs (agentevals checks far less: no argument normalisation, no dependency order, no
policy, no answer, no grounding, no report).

Run: .venv/bin/python bench/bench_peers.py [--n 4000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PEERS = ROOT / "bench" / ".venv-peers"

_AGENTEVALS = r"""
import json, sys, time
start = time.perf_counter()
from agentevals.trajectory.match import create_trajectory_match_evaluator
evaluator = create_trajectory_match_evaluator(trajectory_match_mode="superset", tool_args_match_mode="exact")
ready = time.perf_counter()
passed = total = 0
with open(sys.argv[1]) as traj, open(sys.argv[2]) as ref:
    for line, ref_line in zip(traj, ref):
        conversation, reference = json.loads(line), json.loads(ref_line)
        result = evaluator(outputs=conversation["messages"], reference_outputs=reference["messages"])
        passed += bool(result["score"])
        total += 1
end = time.perf_counter()
print(json.dumps({"elapsed_s": end - start, "import_s": ready - start, "n": total, "passed": passed}))
"""


def peers_python() -> Path:
    """The peers' environment, created (and agentevals installed) when missing."""
    python = PEERS / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "agentevals"], check=True)
    return python


def agentevals_superset(trajectories: Path, reference: Path) -> dict:
    cmd = [str(peers_python()), "-c", _AGENTEVALS, str(trajectories), str(reference)]
    if os.path.exists("/usr/bin/taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def headline(n: int = 4000) -> dict:
    from bench.bench_grading import measure
    from bench.conversations import generate

    paths = generate(ROOT / "bench" / "out" / f"conv-{n}", n)
    theirs = agentevals_superset(paths["trajectories"], paths["reference"])
    start = time.perf_counter()
    ours = measure(paths["episode"], paths["trajectories"], ROOT / "bench" / "out" / f"peers-{n}")
    ours["wall_with_start_s"] = time.perf_counter() - start
    return {"n": n, "agentevals": theirs, "ours": ours}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    args = parser.parse_args()
    r = headline(args.n)
    a, o = r["agentevals"], r["ours"]
    print(f"{r['n']:,} realistic conversations, one core each:")
    print(
        f"  agentevals superset match: {a['elapsed_s']:.1f} s ({r['n'] / a['elapsed_s']:,.0f}/s; {a['passed']} pass) - tool names and exact arguments, as a superset"
    )
    print(
        f"  judge grade:               {o['elapsed_s']:.1f} s ({r['n'] / o['elapsed_s']:,.0f}/s; {o['counts']['pass']} pass) - policy, calls (normalised values, dependency order, writes), "
        "what the customer was told, grounding, scores, summary with CIs and the full report"
    )
    print(f"  ratio ours / agentevals: {o['elapsed_s'] / a['elapsed_s']:.2f}x")


if __name__ == "__main__":
    main()
