"""Every class of broken or hostile input in tests/fixtures/bad_input/ through ``judge grade``.

For each class (cases.json, written by make_corpus.py): the exit code; one row of results.jsonl
per input item, in order; each expected error with its kind, file, line and field; every other
row graded (nothing else lost); a usage error names its option. Classes other developers fix are
marked pending (xfail, not strict) with their owner until their work lands.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "bad_input"
CASES = json.loads((CORPUS / "cases.json").read_text(encoding="utf-8"))
HELD_BY_US = "hostile"


def _param(case: dict):
    marks = []
    if case.get("pending"):
        marks.append(pytest.mark.xfail(reason=f"pending: {case['owner']}", strict=False))
    return pytest.param(case, id=case["name"], marks=marks)


def _trajectories(case: dict, tmp: Path) -> tuple[str, str | None]:
    """The path to pass as --trajectories, and what to feed on standard input."""
    source = CORPUS / case["trajectories"]
    generate = case.get("generate")
    if generate == "oversize_line":  # 32 MiB is the default limit: too big to keep in the repository
        path = tmp / "oversize.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"task_id": "t1", "trajectory_id": "r1", "steps": [], "final_answer": "a"}) + "\n")
            fh.write('{"task_id": "t1", "trajectory_id": "r2", "final_answer": "' + "x" * (33 * 2**20) + '"}\n')
            fh.write(json.dumps({"task_id": "t1", "trajectory_id": "r3", "steps": [], "final_answer": "a"}) + "\n")
        return str(path), None
    if generate == "fifo":
        fifo = tmp / "pipe.jsonl"
        os.mkfifo(fifo)

        def feed() -> None:  # one writer, once: a reader that opens the pipe twice gets nothing the second time
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:  # no reader yet
                    time.sleep(0.05)
                    continue
                os.set_blocking(fd, True)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(source.read_bytes())
                return

        threading.Thread(target=feed, daemon=True).start()
        return str(fifo), None
    if generate == "stdin":
        return "-", source.read_text(encoding="utf-8")
    copy = tmp / source.name  # a copy, so the error's file name is the one this run was given
    shutil.copyfile(source, copy)
    return str(copy), None


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input_class(case, tmp_path):
    trajectories, stdin = _trajectories(case, tmp_path)
    tasks = str(CORPUS / case.get("tasks", "tasks.jsonl"))
    out = tmp_path / "out"
    extra = [a.format(dir=CORPUS) for a in case.get("args", [])]
    args = ["grade", "--tasks", tasks, "--trajectories", trajectories, "--no-replay"]
    if "--out" not in extra:
        args += ["--out", str(out)]
    if case.get("generate") in ("fifo", "stdin"):  # a real process with a time limit: a hang must fail, not stall the suite
        cmd = [sys.executable, "-c", "from pipelines.cli import main; main()", *args, *extra]
        try:
            proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120, cwd=CORPUS.parents[2])
        except subprocess.TimeoutExpired:
            pytest.fail("judge grade did not finish within 120 s")
        exit_code, output = proc.returncode, proc.stdout + proc.stderr
    else:
        res = CliRunner().invoke(app, args + extra, input=stdin, catch_exceptions=False)
        exit_code, output = res.exit_code, res.output
    assert exit_code == case["exit"], output
    if case["exit"] == 2:
        message = " ".join(output.split())
        assert f"error: {case['option']}:" in message, message
        return
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == case["rows"], [r.get("trajectory_id") for r in rows]
    errors = [r["error"] for r in rows if r["verdict"] == "error"]
    got = [
        {"line": x["line"], "kind": x["kind"], **({"field": x["field"]} if "field" in x and any("field" in y for y in case["errors"]) else {})} for x in errors
    ]
    expected = [{k: v for k, v in x.items() if k != "field" or any("field" in y for y in case["errors"])} for x in case["errors"]]
    assert got == expected
    for error in errors:  # every error names its file and line
        assert error["file"] == trajectories and error["line"] >= 1 and error["message"]
    graded = [r for r in rows if r["verdict"] != "error"]
    assert len(graded) == case.get("graded", case["rows"] - len(case["errors"]))  # nothing else lost
    if "verdicts" in case:
        assert [r["verdict"] for r in graded] == case["verdicts"]
    if "task_errors" in case:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        task_errors = [{"line": x["line"], "kind": x["kind"], "field": x.get("field")} for x in summary["errors"] if x["file"] == tasks]
        for want in case["task_errors"]:
            assert any(t["line"] == want["line"] and t["kind"] == want["kind"] and (t["field"] or "").startswith(want.get("field", "")) for t in task_errors), (
                want,
                task_errors,
            )


def test_corpus_covers_every_class_once():
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)) >= 45
    assert sum(c["owner"] == HELD_BY_US for c in CASES) >= 40
    assert all(c["owner"] != HELD_BY_US for c in CASES if c.get("pending"))  # our own classes are all held
