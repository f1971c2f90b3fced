"""BFCL simple + parallel: ``judge grade`` beside BFCL's own AST checker, on the same entries.

The entries are the shared real BFCL v3 run (``../shared/data/external/formats/bfcl/
v3_Salesforce_Llama-xLAM-2-8b-fc-r``: 30 simple and 30 parallel questions, possible answers and
xLAM-2-8b results; see its SOURCE.md), each copied ``--copies`` times under new ids
(``simple_<k*1000+i>``), so 334 copies make issue 27's 20,040 entries. BFCL's checker is the
``bfcl-eval`` package, installed in the bench's own environment (``bench/.envs/bfcl``, created on
first use; never a project dependency): per entry what ``bfcl evaluate`` does for an AST category
(the model handler's ``decode_ast``, then ``ast_checker``). Both sides run in a fresh process
pinned to one core, measured in CPU time (process and children, start-up and imports included),
in interleaved rounds; "checking alone" is BFCL's decode + check loop without its start-up.

Run: .venv/bin/python bench/bench_bfcl.py [--copies 334] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUN = ROOT.parent / "shared" / "data" / "external" / "formats" / "bfcl" / "v3_Salesforce_Llama-xLAM-2-8b-fc-r"
MODEL = "Salesforce/Llama-xLAM-2-8b-fc-r"
CATEGORIES = ("simple", "parallel")
ENV = ROOT / "bench" / ".envs" / "bfcl"

_BFCL = r"""
import json, sys, time
start = time.process_time()
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
from bfcl_eval.constants.enums import Language, ReturnFormat
from bfcl_eval.model_handler.local_inference.salesforce_llama import SalesforceLlamaHandler
handler = SalesforceLlamaHandler("Salesforce/Llama-xLAM-2-8b-fc-r", 0.001, "Salesforce/Llama-xLAM-2-8b-fc-r", True)
def lines(path):
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]
out = {"entries": 0, "valid": 0, "check_s": 0.0}
for folder, category in zip(sys.argv[1::2], sys.argv[2::2]):
    prompts = lines(f"{folder}/BFCL_v3_{category}.json")
    answers = lines(f"{folder}/possible_answer/BFCL_v3_{category}.json")
    results = lines(f"{folder}/BFCL_v3_{category}_result.json")
    t0 = time.process_time()
    for prompt, answer, result in zip(prompts, answers, results):
        try:
            decoded = handler.decode_ast(result["result"], ReturnFormat.PYTHON, False)
        except Exception:
            out["entries"] += 1
            continue
        checked = ast_checker(prompt["function"], decoded, answer["ground_truth"], Language.PYTHON, category, "Salesforce/Llama-xLAM-2-8b-fc-r")
        out["entries"] += 1
        out["valid"] += bool(checked["valid"])
    out["check_s"] += time.process_time() - t0
print(json.dumps(out))
"""


def bfcl_python() -> Path:
    """The bench's BFCL environment, created (and bfcl-eval installed) when missing."""
    python = ENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(ENV)], check=True)
        # soundfile: qwen-agent, which bfcl-eval's model handlers import, needs it and bfcl-eval does not declare it
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "bfcl-eval", "soundfile"], check=True)
    return python


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def entries(copies: int) -> Path:
    """The shared entries copied ``copies`` times under new ids, in BFCL's file layout (made once)."""
    folder = ROOT / "bench" / "out" / f"bfcl-{copies}"
    if (folder / ".complete").exists():
        return folder
    (folder / "possible_answer").mkdir(parents=True, exist_ok=True)
    for category in CATEGORIES:
        sources = {
            f"BFCL_v3_{category}.json": RUN / "data" / f"BFCL_v3_{category}.json",
            f"possible_answer/BFCL_v3_{category}.json": RUN / "data" / "possible_answer" / f"BFCL_v3_{category}.json",
            f"BFCL_v3_{category}_result.json": RUN / "result" / MODEL.replace("/", "_") / f"BFCL_v3_{category}_result.json",
        }
        items = {name: _lines(path) for name, path in sources.items()}
        ids = [item["id"] for item in items[f"BFCL_v3_{category}_result.json"]]
        for name, rows in items.items():
            assert [r["id"] for r in rows] == ids, f"{name}: entries not in the result file's order"
            with open(folder / name, "w") as fh:
                for k in range(copies):
                    for i, row in enumerate(rows):
                        fh.write(json.dumps({**row, "id": f"{category}_{k * 1000 + i}"}) + "\n")
    (folder / ".complete").write_text(str(copies))
    return folder


def _ours_child(folder: str) -> None:
    from pipelines.grade_run import GradeOptions, run_grading

    n = passed = 0
    for category in CATEGORIES:
        base = Path(folder)
        outcome = run_grading(
            GradeOptions(
                tasks=base / f"BFCL_v3_{category}.json",
                reference=base / "possible_answer" / f"BFCL_v3_{category}.json",
                trajectories=base / f"BFCL_v3_{category}_result.json",
                out=base / "runs" / category,
                overwrite=True,
            )
        )
        n += outcome.summary.counts.trajectories
        passed += outcome.summary.counts.passed
    print(json.dumps({"entries": n, "passed": passed}))


def _cpu(cmd: list[str]) -> tuple[float, dict]:
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, json.loads(proc.stdout.strip().splitlines()[-1])


def compare(copies: int = 334, rounds: int = 3) -> dict:
    folder = entries(copies)
    python = bfcl_python()
    theirs_args = [str(python), "-c", _BFCL]
    for category in CATEGORIES:
        theirs_args += [str(folder), category]
    ours, theirs, check = [], [], []
    for _ in range(rounds):
        cpu, info = _cpu([sys.executable, __file__, "--child", str(folder)])
        ours.append(cpu)
        n_ours = info["entries"]
        cpu, info = _cpu(theirs_args)
        theirs.append(cpu)
        check.append(info["check_s"])
        n_theirs = info["entries"]
    return {
        "entries": n_ours,
        "bfcl_entries": n_theirs,
        "ours_s": statistics.median(ours),
        "bfcl_s": statistics.median(theirs),
        "bfcl_check_s": statistics.median(check),
        "rounds": {"ours": ours, "bfcl": theirs},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=334)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        _ours_child(args.child)
        return
    r = compare(args.copies, args.rounds)
    n = r["entries"]
    print(f"{n:,} BFCL v3 simple + parallel entries, CPU, one core (median of {args.rounds} interleaved rounds):")
    print(f"  judge grade:        {r['ours_s']:.2f} s ({n / r['ours_s']:,.0f}/s)")
    print(
        f"  BFCL's own checker: {r['bfcl_s']:.2f} s ({r['bfcl_entries'] / r['bfcl_s']:,.0f}/s); its checking alone {r['bfcl_entries'] / r['bfcl_check_s']:,.0f}/s"
    )
    print(f"  ratio ours / BFCL end to end: {r['ours_s'] / r['bfcl_s']:.2f}x")


if __name__ == "__main__":
    main()
