"""A whole BFCL result folder graded in one ``judge grade``: a leaderboard row and its agreement.

``judge grade --trajectories result/<model>/ --tasks data/ [--reference possible_answer/]
[--labels score/<model>/] --out OUT`` finds every result file under the folder (``bfcl generate``'s
layouts: v3 ``result/<model>/BFCL_v3_<category>_result.json``, v4 under ``non_live/``, ``live/``,
``multi_turn/``, ...), and grades each category as its own run, against the question file of the
same name in the data folder (``BFCL_vN_<category>.json``) and its possible answers
(``possible_answer/`` beside the questions, or ``--reference``; the relevance categories have none
by design), with ``--labels``, a score folder, giving each run its category's score file. Each category's run is a complete run folder, ``OUT/BFCL_vN_<category>/`` (results,
summary, reports, manifest: ``judge report`` / ``--resume`` work on it as on any run), and all of
them share every other option (judges, workers, labels, replay).

``OUT/bfcl.json`` and ``OUT/bfcl.md`` then hold the row: per category the entries, our verdicts,
our accuracy (passes over entries, as BFCL counts them: an entry we could not read counts as not
passed), and, with ``--labels`` (BFCL's score files), BFCL's accuracy on the same entries, its
score file's own summary line (which describes the whole category, also when the result file is a
part of it), and the agreement per entry (both decided, agreeing, Cohen's kappa). A category that
cannot be graded (no question file for it) is a row saying why, and the command exits 3 after
grading the rest.

The top room of ``pipelines.run`` beside ``resume`` and ``gold``: it plans the per-category runs,
hands each to the caller's ``run`` (the CLI's ``judge grade`` of one set of options), and reads
their summaries back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from judge import RunSummary
from pipelines.ingest import UsageError

__all__ = ["RESULT_FILE", "CategoryRow", "CategoryRun", "FolderRow", "grade_folder", "is_result_folder", "plan", "write_row"]

RESULT_FILE = re.compile(r"^BFCL_v(?P<version>\d+)_(?P<category>.+)_result\.json$")


class CategoryRun(msgspec.Struct, frozen=True):
    """One category's run: its result file, the question and possible-answer files it needs."""

    name: str  # BFCL_vN_<category>: the question file's stem, and the run's folder under OUT
    category: str
    result: Path
    questions: Path | None  # None: the data folder has none (the row says so)
    answers: Path | None  # None: no possible answers (the relevance categories have none by design)
    problem: str | None = None


class CategoryRow(msgspec.Struct):
    name: str
    category: str
    result: str
    entries: int = 0
    passed: int = 0
    failed: int = 0
    unresolved: int = 0
    errors: int = 0
    accuracy: float | None = None  # ours: passes / entries
    bfcl_accuracy: float | None = None  # BFCL's on the same entries (its score files)
    bfcl_file_accuracy: float | None = None  # the score file's summary line (the whole category)
    bfcl_file_counts: str | None = None  # "correct/total" of that line
    both_decided: int = 0
    agreeing: int = 0
    agreement: float | None = None
    kappa: float | None = None
    out: str | None = None
    problem: str | None = None


class FolderRow(msgspec.Struct):
    categories: list[CategoryRow]
    entries: int
    passed: int
    accuracy: float | None
    bfcl_passed: int | None
    bfcl_accuracy: float | None
    both_decided: int
    agreeing: int
    agreement: float | None


def is_result_folder(path: Path) -> bool:
    return path.is_dir() and any(RESULT_FILE.match(p.name) for p in path.rglob("*_result.json"))


def plan(results: Path, data: Path | None, reference: Path | None) -> list[CategoryRun]:
    """The runs a result folder needs, in the order of their names."""
    files = sorted((p for p in results.rglob("*_result.json") if p.is_file() and RESULT_FILE.match(p.name)), key=lambda p: (p.name, str(p)))
    if not files:
        raise UsageError("--trajectories", f"{results} holds no BFCL result files (BFCL_vN_<category>_result.json, as bfcl generate writes them)")
    if data is None or not data.is_dir():
        raise UsageError(
            "--tasks", f"a BFCL result folder is graded against BFCL's data folder (bfcl_eval/data: BFCL_vN_<category>.json); give it as --tasks, not {data}"
        )
    if reference is not None and not reference.is_dir():
        raise UsageError(
            "--reference", f"with a BFCL result folder, --reference is a folder of possible answers (bfcl_eval/data/possible_answer), not {reference}"
        )
    answers_dir = reference if reference is not None else data / "possible_answer"
    runs: list[CategoryRun] = []
    seen: dict[str, Path] = {}
    for file in files:
        found = RESULT_FILE.match(file.name)
        assert found is not None
        name = f"BFCL_v{found.group('version')}_{found.group('category')}"
        if name in seen:
            problem = f"a second result file for {name} (the first: {seen[name]}): not graded"
            runs.append(CategoryRun(name, found.group("category"), file, None, None, problem))
            continue
        seen[name] = file
        questions = data / f"{name}.json"
        answers = answers_dir / f"{name}.json"
        missing: str | None = None if questions.is_file() else f"no question file {questions} for {file.name}: not graded"
        runs.append(
            CategoryRun(name, found.group("category"), file, questions if questions.is_file() else None, answers if answers.is_file() else None, missing)
        )
    return runs


def grade_folder(opts: Any, run: Callable[[Any], RunSummary | int], announce: Callable[[str], None] = lambda line: None) -> FolderRow:
    """Every category of the result folder ``opts.trajectories`` graded as its own run (``run``:
    the CLI's grading of one ``GradeOptions``; an int is the exit code of a run that stopped), then
    the row written to ``opts.out`` (``bfcl.json``, ``bfcl.md``)."""
    runs = plan(Path(opts.trajectories), opts.tasks, opts.reference)
    score_summaries = _score_summaries(opts.labels)
    rows = []
    for cat in runs:
        row = CategoryRow(cat.name, cat.category, str(cat.result), problem=cat.problem)
        file_summary = score_summaries.get(cat.category)
        if file_summary is not None:
            row.bfcl_file_accuracy = file_summary.get("accuracy")
            row.bfcl_file_counts = f"{file_summary.get('correct_count')}/{file_summary.get('total_count')}"
        if cat.problem is None:
            out = Path(opts.out) / cat.name
            announce(f"{cat.name}: {cat.result}")
            labels = _score_file(opts.labels, cat.name)
            sub = msgspec.structs.replace(
                opts, trajectories=cat.result, tasks=cat.questions, reference=cat.answers, labels=labels, out=out, task_format="bfcl", trajectory_format="bfcl"
            )
            outcome = run(sub)
            row.out = str(out)
            if isinstance(outcome, int):
                # a usage error (an empty result file among them) leaves no folder: its message was printed
                row.problem = f"the run stopped (exit code {outcome}): " + (f"see {out}" if out.exists() else "its error is printed above")
            else:
                _fill(row, outcome)
        rows.append(row)
    folder = _total(rows)
    write_row(Path(opts.out), folder)
    return folder


def _score_file(labels: Path | None, name: str) -> Path | None:
    """The category's own score file in a score folder (``score/<model>/[...]/BFCL_vN_<category>_score.json``);
    a labels file is given to every run as it is."""
    if labels is None or not Path(labels).is_dir():
        return labels
    found = sorted(Path(labels).rglob(f"{name}_score.json"))
    return found[0] if found else None


def _score_summaries(labels: Path | None) -> dict[str, dict[str, Any]]:
    if labels is None or not Path(labels).is_dir():
        return {}
    from pipelines.ingest import read_bfcl_scores

    try:
        return dict(read_bfcl_scores(labels).categories)
    except ValueError:
        return {}  # not score files: the runs report the labels' problem themselves


def _fill(row: CategoryRow, summary: RunSummary) -> None:
    counts = summary.counts
    row.entries = counts.trajectories
    row.passed, row.failed, row.unresolved, row.errors = counts.passed, counts.fail, counts.unresolved, counts.errors
    row.accuracy = counts.passed / counts.trajectories if counts.trajectories else None
    ext = (summary.external_agreement or {}).get("bfcl")
    if ext is None:
        return
    theirs_pass = sum(by.get("pass", 0) for by in ext.confusion.values())
    theirs = sum(by.get("pass", 0) + by.get("fail", 0) for by in ext.confusion.values())
    row.bfcl_accuracy = theirs_pass / theirs if theirs else None
    row.both_decided = ext.both_decided
    row.agreeing = ext.confusion.get("pass", {}).get("pass", 0) + ext.confusion.get("fail", {}).get("fail", 0)
    row.agreement = ext.agreement
    row.kappa = ext.cohen_kappa.value


def _total(rows: list[CategoryRow]) -> FolderRow:
    graded = [r for r in rows if r.problem is None]
    entries = sum(r.entries for r in graded)
    passed = sum(r.passed for r in graded)
    labelled = [r for r in graded if r.bfcl_accuracy is not None]
    bfcl_passed = sum(round(r.bfcl_accuracy * r.entries) for r in labelled if r.bfcl_accuracy is not None) if labelled else None
    labelled_entries = sum(r.entries for r in labelled)
    both = sum(r.both_decided for r in graded)
    agreeing = sum(r.agreeing for r in graded)
    return FolderRow(
        categories=rows,
        entries=entries,
        passed=passed,
        accuracy=passed / entries if entries else None,
        bfcl_passed=bfcl_passed,
        bfcl_accuracy=bfcl_passed / labelled_entries if bfcl_passed is not None and labelled_entries else None,
        both_decided=both,
        agreeing=agreeing,
        agreement=agreeing / both if both else None,
    )


def write_row(out: Path, folder: FolderRow) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = {
        "categories": [msgspec.structs.asdict(r) for r in folder.categories],
        "total": {k: v for k, v in msgspec.structs.asdict(folder).items() if k != "categories"},
    }
    (out / "bfcl.json").write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "bfcl.md").write_text(render(folder), encoding="utf-8")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def render(folder: FolderRow) -> str:
    lines = [
        "# BFCL result folder",
        "",
        "Accuracy: passes over entries (an unreadable entry counts as not passed). BFCL's: its score files on the same entries;",
        "its score file's summary line describes the whole category (also when the result file holds part of it).",
        "",
        "| category | entries | pass | fail | unresolved | errors | accuracy | BFCL's accuracy | BFCL's score file | agreement | kappa |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in folder.categories:
        if r.problem is not None and r.out is None:
            lines.append(f"| {r.name} | – | – | – | – | – | – | – | {_file(r)} | – | – |")
            continue
        agree = "–" if r.agreement is None else f"{r.agreeing}/{r.both_decided} ({_pct(r.agreement)})"
        kappa = "–" if r.kappa is None else f"{r.kappa:.3f}"
        lines.append(
            f"| {r.name} | {r.entries} | {r.passed} | {r.failed} | {r.unresolved} | {r.errors} | {_pct(r.accuracy)} | {_pct(r.bfcl_accuracy)} | {_file(r)} | {agree} | {kappa} |"
        )
    agree = "–" if folder.agreement is None else f"{folder.agreeing}/{folder.both_decided} ({_pct(folder.agreement)})"
    lines.append(f"| **all** | {folder.entries} | {folder.passed} | | | | {_pct(folder.accuracy)} | {_pct(folder.bfcl_accuracy)} | | {agree} | |")
    problems = [r for r in folder.categories if r.problem is not None]
    if problems:
        lines += ["", "Not graded:", ""] + [f"- {r.name}: {r.problem}" for r in problems]
    return "\n".join(lines) + "\n"


def _file(r: CategoryRow) -> str:
    return "–" if r.bfcl_file_accuracy is None else f"{_pct(r.bfcl_file_accuracy)} ({r.bfcl_file_counts})"
