"""What the deterministic stages decide, and what is left for judges: on the bundled sample and on
the real-format samples (``../shared/data/external/formats/`` and the fixtures derived from them),
before and after a change, in one run.

For each input: trajectories graded, decided without a judge (pass or fail), left open offline
(sent to judges, or unresolved for a stated reason such as "needs the environment"), judge
requests per 100 trajectories with escalation run to its end (every judge answers "yes": the
upper bound of the bill), and, where the source carries its own verdict (tau2 rewards, Inspect
scorers, BFCL score files), how many of our decisions agree with it.

``--baseline REV`` measures the same inputs with the code of git revision REV too (checked out in a
temporary worktree; this script's measuring code runs against it), and prints both side by side.

Run: .venv/bin/python bench/bench_decided.py [--baseline 336fdf9] [--inputs held_out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = Path(os.environ.get("BENCH_DECIDED_CODE", ROOT))  # the code measured (a baseline worktree, or this checkout)
sys.path.insert(0, str(CODE))
SHARED = ROOT.parent / "shared" / "data" / "external" / "formats"
FIXTURES = ROOT / "tests" / "fixtures" / "formats"


def inputs() -> list[dict]:
    """name, the files, and options; real samples only where they are present (CI has ../shared).
    ``BENCH_DECIDED_INPUTS``: a JSON file listing other inputs in the same shape (held-out runs)."""
    listed = os.environ.get("BENCH_DECIDED_INPUTS")
    if listed:
        return [
            {k: (Path(v) if k in ("tasks", "trajectories", "reference", "labels", "tool_specs") else v) for k, v in i.items()}
            for i in json.loads(Path(listed).read_text())
        ]
    tau2, inspect, bfcl3 = SHARED / "tau2", SHARED / "inspect", SHARED / "bfcl" / "v3_Salesforce_Llama-xLAM-2-8b-fc-r"
    v3_data = bfcl3 / "data"
    score = bfcl3 / "score" / "Salesforce_Llama-xLAM-2-8b-fc-r"
    out: list[dict] = [
        {
            "name": "bundled sample (replay)",
            "tasks": ROOT / "data" / "sample" / "tasks.jsonl",
            "trajectories": ROOT / "data" / "sample" / "trajectories.jsonl",
            "replay": True,
        }
    ]
    for domain in ("airline", "retail", "telecom"):
        out.append({"name": f"tau2 {domain}", "trajectories": tau2 / f"{domain}_gpt-4.1-mini_results.json"})
    out.append({"name": "tau2 airline, max_steps (derived)", "trajectories": FIXTURES / "tau2_airline_max_steps.json"})
    for log in (
        "inspect_ai_log_message_deduplication.eval",
        "inspect_ai_log_formats.json",
        "inspect_ai_log_formats.eval",
        "metr_oxdna_simple_claude-opus-4-1_2-of-6-epochs.eval",
    ):
        out.append({"name": f"Inspect {log}", "trajectories": inspect / log})
    for category in ("simple", "parallel"):
        result = bfcl3 / "result" / "Salesforce_Llama-xLAM-2-8b-fc-r" / f"BFCL_v3_{category}_result.json"
        common = {"tasks": v3_data / f"BFCL_v3_{category}.json", "reference": v3_data / "possible_answer" / f"BFCL_v3_{category}.json", "labels": score}
        out.append({"name": f"BFCL v3 {category}", "trajectories": result, **common})
        fc = FIXTURES / "bfcl_fc" / f"BFCL_v3_{category}_result.json"
        out.append({"name": f"BFCL v3 {category}, FC API names (derived)", "trajectories": fc, **common})
    # multi-turn: replayed in BFCL's own environment classes (bfcl-eval; trees before it: input errors)
    multi = {"tasks": v3_data / "BFCL_v3_multi_turn_base.json", "reference": v3_data / "possible_answer" / "BFCL_v3_multi_turn_base.json", "labels": score}
    result = bfcl3 / "result" / "Salesforce_Llama-xLAM-2-8b-fc-r" / "BFCL_v3_multi_turn_base_result.json"
    out.append({"name": "BFCL v3 multi_turn_base", "trajectories": result, "replay": True, **multi})
    return [i for i in out if all(Path(v).exists() for k, v in i.items() if k in ("tasks", "trajectories", "reference", "labels"))]


class CountingPanel:
    """Answers every request as a unanimous yes, so escalation runs to its end; counts requests."""

    name = "count"

    def __init__(self) -> None:
        self.requests = 0

    async def decide(self, requests):
        from judge import Outcome, PanelDecision, Vote

        self.requests += len(requests)
        return [
            PanelDecision(panel="count", rule="majority", label="yes", outcome=Outcome.MATCH, votes=[Vote(judge="mock:yes", label="yes")]) for _ in requests
        ]


def measure() -> list[dict]:
    """Grade every input offline and with the counting panel; the figures per input."""
    try:
        from pipelines.grade import Replayer
        from pipelines.run import GradeOptions, run_grading
    except ImportError:  # a --baseline tree from before pipelines/ was split into grade/ and run/
        from pipelines.grade_run import GradeOptions, run_grading  # type: ignore[no-redef]
        from pipelines.replay import Replayer  # type: ignore[no-redef]

    replayer = Replayer()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, spec in enumerate(inputs()):
            common = {
                "tasks": spec.get("tasks"),
                "trajectories": spec["trajectories"],
                "reference": spec.get("reference"),
                "labels": spec.get("labels"),
                "tool_specs": spec.get("tool_specs"),
                "replayer": replayer if spec.get("replay") else None,
            }
            offline = run_grading(GradeOptions(out=Path(tmp) / f"o{k}", **common)).summary
            panel = CountingPanel()
            run_grading(GradeOptions(out=Path(tmp) / f"j{k}", escalator=panel, **common))
            c = offline.counts
            agree = both = 0
            for ext in (offline.external_agreement or {}).values():
                both += ext.both_decided
                agree += sum(ext.confusion.get(v, {}).get(v, 0) for v in ("pass", "fail"))
            rows.append(
                {
                    "name": spec["name"],
                    "n": c.graded,
                    "errors": c.errors,
                    "decided": c.passed + c.fail,
                    "open": c.unresolved,
                    "requests": panel.requests,
                    "agree": agree,
                    "both": both,
                }
            )
    return rows


def _cell(r: dict | None) -> str:
    if r is None:
        return "-"
    n = max(r["n"], 1)
    agree = f"{r['agree']}/{r['both']}" if r["both"] else "-"
    return f"{r['decided']}/{r['n']} decided ({100 * r['decided'] / n:.0f}%), {r['open']} open, {100 * r['requests'] / n:.1f} judge req/100, agree {agree}"


def _baseline(rev: str) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev], check=True)
        try:
            env = {**os.environ, "BENCH_DECIDED_CODE": str(tree)}
            proc = subprocess.run([sys.executable, __file__, "--json"], env=env, cwd=tree, capture_output=True, text=True, check=True)
            return json.loads(proc.stdout.strip().splitlines()[-1])
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a git revision to measure too (before)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line (used for the baseline)")
    parser.add_argument(
        "--inputs", type=Path, help="a JSON list of inputs {name, trajectories, tasks?, reference?, labels?, tool_specs?, replay?} instead of the samples"
    )
    args = parser.parse_args()
    if args.inputs is not None:
        os.environ["BENCH_DECIDED_INPUTS"] = str(args.inputs.resolve())  # the baseline's process reads the same list
    now = measure()
    if args.json:
        print(json.dumps(now))
        return
    before = {r["name"]: r for r in _baseline(args.baseline)} if args.baseline else {}
    print("| input | " + (f"before ({args.baseline}) | " if args.baseline else "") + "now |")
    print("|---|" + ("---|" if args.baseline else "") + "---|")
    for r in now:
        print(f"| {r['name']} | " + (f"{_cell(before.get(r['name']))} | " if args.baseline else "") + f"{_cell(r)} |")
    real = [r for r in now if not r["name"].startswith("bundled")]
    for label, rows in (("now", real), ("before", [before[r["name"]] for r in real if r["name"] in before])):
        if not rows:
            continue
        n, decided, requests = sum(r["n"] for r in rows), sum(r["decided"] for r in rows), sum(r["requests"] for r in rows)
        agree, both = sum(r["agree"] for r in rows), sum(r["both"] for r in rows)
        print(
            f"real-format samples, {label}: {decided}/{n} decided without a judge ({100 * decided / max(n, 1):.0f}%), "
            f"{100 * requests / max(n, 1):.1f} judge requests per 100 trajectories, {agree}/{both} decisions agree with the source's own verdict"
        )


if __name__ == "__main__":
    main()
