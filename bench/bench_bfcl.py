"""BFCL entries per second, single-turn and multi-turn: ``judge grade`` on a result folder beside BFCL's
own checker (``bfcl evaluate``'s per-category runners) on the same entries, in one run.

BFCL's checker runs in the bench's own environment (``bench/.venv-bfcl``, created on first use):
``bfcl-eval`` installed with ``--no-deps`` plus what its evaluation path imports (tree-sitter and
its Java / JavaScript grammars at the versions bfcl-eval pins, mpmath, numpy, pandas, tqdm, openai,
requests, overrides, python-dotenv, tenacity, filelock), never as a project dependency (its
declared dependencies bring torch, faiss and a dozen provider SDKs). Its model table
(``bfcl_eval.constants.model_config``) imports every provider SDK to build handler classes, so the
bench registers that one module with only the field the checker reads (``underscore_to_dot``:
False for both models here, as their result files keep dotted names); every checker, decoder and
runner function is BFCL's own: ``ast_file_runner``, ``relevance_file_runner``, ``multi_turn_runner``
with the models' own handlers (``SalesforceLlamaHandler`` for xLAM-2, the OpenAI FC handler's
decoding for glyphh-ada's ``{name: "<JSON arguments>"}`` results and, in prompt mode, for gemma4-e4b's
Python call lists), writing BFCL score files.

Entries: the real samples (the shared v3 xLAM-2-8b-fc-r ``simple`` / ``parallel`` / ``multi_turn_base``
, the shared v4 gemma4-e4b ``simple_python`` / ``live_simple`` (which has no score files of its own:
the bench's are BFCL's verdicts on it) and the glyphh-ada v4 ``irrelevance`` / ``simple_java`` /
``simple_javascript`` fixture), each entry
repeated ``--reps`` times under new ids (``simple_12`` -> ``simple_3x12``) so that a rate is more
than start-up. Both sides read the same files, one core each (``taskset -c 0``). Ours is the time of
``run_grading`` per category in one process (what ``judge grade`` runs: reading, replay, checks,
all four outputs); BFCL's the time of its runner per category (reading excluded: the files are
loaded first; its score file written); imports excluded on both sides. Our verdicts are then compared with the score files BFCL just
wrote (``--labels``): the agreement line.

Run: .venv/bin/python bench/bench_bfcl.py [--reps 50] [--mt-reps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VENV = ROOT / "bench" / ".venv-bfcl"
BFCL_EVAL = "bfcl-eval==2026.3.23"  # the release the shared v4 data comes from
PEER_PACKAGES = [
    "tree_sitter==0.21.3",
    "tree-sitter-java==0.21.0",
    "tree-sitter-javascript==0.21.4",
    "mpmath",
    "numpy",
    "pandas",
    "tqdm",
    "openai",
    "requests",
    "overrides",
    "python-dotenv",
    "tenacity",
    "filelock",
]
V3 = ROOT.parent / "shared" / "data" / "external" / "formats" / "bfcl" / "v3_Salesforce_Llama-xLAM-2-8b-fc-r"
V4 = V3.parent / "v4_roshangrewal_gemma4-e4b-toolcall-v02"
GLYPHH = ROOT / "tests" / "fixtures" / "formats" / "bfcl_v4_glyphh"
# (group, model folder, BFCL handler, sample root, sample model, version, category, result sub-folder)
SOURCES = [
    ("single-turn", "xlam", "xlam", V3, "Salesforce_Llama-xLAM-2-8b-fc-r", 3, "simple", ""),
    ("single-turn", "xlam", "xlam", V3, "Salesforce_Llama-xLAM-2-8b-fc-r", 3, "parallel", ""),
    ("single-turn", "gemma", "prompt", V4, "roshangrewal_gemma4-e4b-toolcall-v02", 4, "simple_python", "non_live"),
    ("single-turn", "gemma", "prompt", V4, "roshangrewal_gemma4-e4b-toolcall-v02", 4, "live_simple", "live"),
    ("single-turn", "glyphh", "openai_fc", GLYPHH, "glyphh-ada-1.1", 4, "irrelevance", "non_live"),
    ("single-turn", "glyphh", "openai_fc", GLYPHH, "glyphh-ada-1.1", 4, "simple_java", "non_live"),
    ("single-turn", "glyphh", "openai_fc", GLYPHH, "glyphh-ada-1.1", 4, "simple_javascript", "non_live"),
    ("multi-turn", "xlam", "xlam", V3, "Salesforce_Llama-xLAM-2-8b-fc-r", 3, "multi_turn_base", ""),
]

_BFCL = r"""
import json, os, sys, time, types
from pathlib import Path
stub = types.ModuleType("bfcl_eval.constants.model_config")  # the model table imports every provider SDK; the checker reads one flag
stub.MODEL_CONFIG_MAPPING = {name: types.SimpleNamespace(underscore_to_dot=False) for name in ("xlam", "glyphh", "gemma")}
sys.modules["bfcl_eval.constants.model_config"] = stub
os.environ.setdefault("OPENAI_API_KEY", "unused")  # the OpenAI handler builds a client; nothing is sent
start = time.perf_counter()
from bfcl_eval.eval_checker.eval_runner import ast_file_runner, multi_turn_runner, relevance_file_runner
from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler
from bfcl_eval.model_handler.local_inference.salesforce_llama import SalesforceLlamaHandler
from bfcl_eval.utils import is_multi_turn, is_relevance_or_irrelevance
ready = time.perf_counter()
plan = json.loads(sys.argv[1])
handlers = {
    "xlam": SalesforceLlamaHandler("Salesforce/Llama-xLAM-2-8b-fc-r", 0.001, "xlam", True),
    "openai_fc": OpenAICompletionsHandler("glyphh-ada-1.1", 0.001, "glyphh", True),
    "prompt": OpenAICompletionsHandler("gemma", 0.001, "gemma", False),  # prompt mode: default_decode_ast_prompting
}
def lines(path):
    return [json.loads(l) for l in Path(path).read_text().splitlines() if l.strip()]
out = []
for item in plan:
    results = lines(item["result"])
    prompts = {q["id"]: q for q in lines(item["questions"])}
    answers = {a["id"]: a for a in lines(item["answers"])} if item["answers"] else {}
    prompt = [prompts[r["id"]] for r in results]
    t0 = time.perf_counter()
    cat, model, handler, score = item["category"], item["model"], handlers[item["handler"]], Path(item["score"])
    if is_relevance_or_irrelevance(cat):
        accuracy, total = relevance_file_runner(handler, results, prompt, model, cat, score)
    elif is_multi_turn(cat):
        accuracy, total = multi_turn_runner(handler, results, prompt, [answers[r["id"]] for r in results], model, cat, score)
    else:
        accuracy, total = ast_file_runner(handler, results, prompt, [answers[r["id"]] for r in results], cat, model, score)
    out.append({"name": item["name"], "n": total, "correct": round(accuracy * total), "elapsed_s": time.perf_counter() - t0})
print(json.dumps({"import_s": ready - start, "categories": out}))
"""


def peer_python() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", BFCL_EVAL], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEER_PACKAGES], check=True)
    return python


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, items: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items))


def _repeat(uid: str, k: int) -> str:
    head, _, tail = uid.rpartition("_")
    return f"{head}_{k}x{tail}"


def build(work: Path, reps: int, mt_reps: int) -> list[dict]:
    """The repeated entries, laid out as BFCL lays them out (all as v4 names: BFCL writes v4 score files)."""
    plan = []
    for group, model, handler, root, sample_model, version, cat, sub in SOURCES:
        n = mt_reps if group == "multi-turn" else reps
        stem = f"BFCL_v{version}_{cat}"
        result_file = next((root / "result" / sample_model).rglob(f"{stem}_result.json"))
        results = _lines(result_file)
        ids = {r["id"] for r in results}
        questions = [q for q in _lines(root / "data" / f"{stem}.json") if q["id"] in ids]
        answer_file = root / "data" / "possible_answer" / f"{stem}.json"
        answers = [a for a in _lines(answer_file) if a["id"] in ids] if answer_file.is_file() else None
        name = f"BFCL_v4_{cat}"
        where = work / group
        out_result = where / "result" / model / sub / f"{name}_result.json"
        _write(out_result, [r | {"id": _repeat(r["id"], k)} for k in range(n) for r in results])
        _write(where / "data" / f"{name}.json", [q | {"id": _repeat(q["id"], k)} for k in range(n) for q in questions])
        if answers is not None:
            _write(where / "data" / "possible_answer" / f"{name}.json", [a | {"id": _repeat(a["id"], k)} for k in range(n) for a in answers])
        plan.append(
            {
                "group": group,
                "name": name,
                "category": cat,
                "model": model,
                "handler": handler,
                "result": str(out_result),
                "questions": str(where / "data" / f"{name}.json"),
                "answers": str(where / "data" / "possible_answer" / f"{name}.json") if answers is not None else None,
                "score": str(where / "score"),
            }
        )
    return plan


def _pinned(cmd: list[str]) -> list[str]:
    return ["taskset", "-c", "0", *cmd] if shutil.which("taskset") else cmd


def bfcl_side(plan: list[dict]) -> dict:
    proc = subprocess.run(_pinned([str(peer_python()), "-c", _BFCL, json.dumps(plan)]), capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"BFCL's checker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def our_side(plan: list[dict], work: Path) -> dict[str, dict]:
    """Our grading of each category in one fresh process, pinned to one core (imports excluded, as on BFCL's side)."""
    spec = work / "ours-plan.json"
    spec.write_text(json.dumps([p | {"out": str(work / "ours" / p["group"] / p["name"])} for p in plan]))
    proc = subprocess.run(_pinned([sys.executable, __file__, "--child", str(spec)]), capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"our grading failed:\n{proc.stderr[-3000:]}")
    return {row["key"]: row for row in json.loads(proc.stdout.strip().splitlines()[-1])}


def child(spec: str) -> None:
    from pipelines.grade import Replayer
    from pipelines.run import GradeOptions, run_grading
    from pipelines.run.bfcl_folder import _score_file

    def options(p: dict, out: Path) -> GradeOptions:
        return GradeOptions(
            tasks=Path(p["questions"]),
            trajectories=Path(p["result"]),
            reference=Path(p["answers"]) if p["answers"] else None,
            labels=_score_file(Path(p["score"]), p["name"]),
            out=out,
            replayer=Replayer(),
            workers=1,
            overwrite=True,
        )

    plan = json.loads(Path(spec).read_text())
    run_grading(options(plan[0], Path(plan[0]["out"] + "-warm-up")))  # untimed: the lazy imports (reports, clustering), as BFCL's are excluded
    rows = []
    for p in plan:
        start = time.perf_counter()
        outcome = run_grading(options(p, Path(p["out"])))
        elapsed = time.perf_counter() - start
        counts = outcome.summary.counts
        ext = (outcome.summary.external_agreement or {}).get("bfcl")
        agreeing = ext.confusion.get("pass", {}).get("pass", 0) + ext.confusion.get("fail", {}).get("fail", 0) if ext else None
        rows.append(
            {
                "key": p["name"] + p["group"],
                "entries": counts.trajectories,
                "passed": counts.passed,
                "errors": counts.errors,
                "elapsed_s": elapsed,
                "both_decided": ext.both_decided if ext else None,
                "agreeing": agreeing,
            }
        )
    print(json.dumps(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50, help="repetitions of each single-turn entry")
    parser.add_argument("--mt-reps", type=int, default=20, help="repetitions of each multi-turn entry")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if not V3.is_dir():
        raise SystemExit(f"the shared BFCL sample is missing: {V3}")
    work = ROOT / "bench" / "out" / f"bfcl-{args.reps}-{args.mt_reps}"
    shutil.rmtree(work, ignore_errors=True)
    plan = build(work, args.reps, args.mt_reps)
    theirs = bfcl_side(plan)  # first: its score files are our labels
    bfcl_by = {c["name"] + g: c for c, g in zip(theirs["categories"], (p["group"] for p in plan), strict=True)}
    print(f"BFCL's checker: imports {theirs['import_s']:.2f} s (bfcl-eval, --no-deps, bench/.venv-bfcl), one core each side\n")
    print("| group | category | entries | ours: entries/s | BFCL: entries/s | ours pass | BFCL pass | agreement |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    ours = our_side(plan, work)
    for group in ("single-turn", "multi-turn"):
        total_n = total_ours = total_theirs = 0.0
        for p in (p for p in plan if p["group"] == group):
            mine, bfcl = ours[p["name"] + group], bfcl_by[p["name"] + group]
            n = mine["entries"]
            total_n, total_ours, total_theirs = total_n + n, total_ours + mine["elapsed_s"], total_theirs + bfcl["elapsed_s"]
            agree = f"{mine['agreeing']}/{mine['both_decided']}"
            print(
                f"| {group} | {p['category']} | {n} | {n / mine['elapsed_s']:,.0f} | {bfcl['n'] / bfcl['elapsed_s']:,.0f} | {mine['passed']} | {bfcl['correct']} | {agree} |"
            )
        print(f"| **{group}** | all | {total_n:.0f} | **{total_n / total_ours:,.0f}** | **{total_n / total_theirs:,.0f}** | | | |")
    print(
        "\nours: run_grading per category (reading, decoding, replay in BFCL's environments, checks, results / summary / reports written); "
        "BFCL: its runner per category (decode, check, score file written; its files were read before). Imports excluded on both sides."
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
