"""The second hostile sweep (issue 26): each class that broke, written from the issue's
description, with its outcome asserted (exit code, message, rows, nothing lost).

The classes of ``judge grade`` inputs live in the bad-input corpus (tests/fixtures/bad_input/);
the ones here reach other commands (gold export / label / import, the report writers) or need a
fault injected (a full disk).
"""

from __future__ import annotations

import csv
import functools
import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from pipelines.cli import app

runner = CliRunner()
TOOLS = [{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}]
SEPARATORS = "\u2028\u2029\u0085"  # str.splitlines breaks at each; JSON strings hold them raw


def _invoke(*args: str, code: int = 0) -> str:
    res = runner.invoke(app, list(args), catch_exceptions=False)
    assert res.exit_code == code, res.output
    return res.output


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


# ---------------------------------------------------------------- 12: line separators inside strings


def test_line_separators_in_answers_questions_and_notes_go_through_export_label_and_import(tmp_path: Path):
    """U+2028 / U+0085 in an answer broke ``judge gold export`` (results split with
    str.splitlines); in a question or a note, label / import rejected what export wrote."""
    tasks = _write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {
                "task_id": f"t{i}",
                "question": f"What is f{SEPARATORS}of 1? ({i})",
                "tools": TOOLS,
                "reference_calls": [{"name": "f", "arguments": {"x": 1}}],
                "gold_answer": "blue",
            }
            for i in range(3)
        ],
    )
    answers = ["blue", f"It is blue{SEPARATORS}(certainly)", f"red{SEPARATORS}"]
    trajectories = _write_jsonl(
        tmp_path / "trajectories.jsonl",
        [
            {
                "task_id": f"t{i}",
                "trajectory_id": f"r{i}-{j}",
                "steps": [{"name": "f", "arguments": {"x": 1}, "result": f"blue{SEPARATORS}"}],
                "final_answer": a,
            }
            for i in range(3)
            for j, a in enumerate(answers)
        ],
    )
    run = tmp_path / "run"
    _invoke("grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--no-replay", "--out", str(run))
    rows = _jsonl(run / "results.jsonl")
    assert [r["trajectory_id"] for r in rows] == [f"r{i}-{j}" for i in range(3) for j in range(3)]
    label_set = tmp_path / "set.jsonl"
    assert "9 cases drawn from 9 labellable rows of 9" in _invoke("gold", "export", str(run), "--n", "20", "--out", str(label_set))
    items = _jsonl(label_set)
    assert len(items) == 9 and any(SEPARATORS in it["context"]["question"] for it in items)
    page = Path(_invoke("gold", "label", str(label_set)).strip())
    assert page.is_file()
    note = f"looks{SEPARATORS}fine"
    labels = _write_jsonl(tmp_path / "labels.jsonl", [{"item_id": it["item_id"], "label": it["labels"][0], "annotator": "ann", "note": note} for it in items])
    gold = tmp_path / "gold.jsonl"
    assert "9 of 9 items labelled" in _invoke("gold", "import", str(label_set), str(labels), "--out", str(gold))
    assert [label["note"] for item in _jsonl(gold) for label in item["human_labels"]] == [note] * 9


# ---------------------------------------------------------------- 11: markup in report.md tables, CR in CSV cells


def test_unknown_field_names_are_text_in_report_md_and_a_carriage_return_stays_inside_its_csv_cell(tmp_path: Path):
    """report.md's "Input warnings" table wrote unknown-field names raw (``<script>`` ran when
    rendered as CommonMark); a CSV cell holding a carriage return was written unquoted, so a
    reader saw a new row starting ``=cmd|...``."""
    script = "<script>alert(1)</script>"
    agent = "ok\r=cmd|' /C calc'!A0"
    tasks = _write_jsonl(
        tmp_path / "tasks.jsonl",
        [{"task_id": "t1", "question": "f of 1?", "tools": TOOLS, "reference_calls": [{"name": "f", "arguments": {"x": 1}}], "gold_answer": "blue"}],
    )
    rows = [
        {
            "task_id": "t1",
            "trajectory_id": f"r{i}",
            "agent": agent,
            script: 1,
            "steps": [{"name": "f", "arguments": {"x": 1}, "result": 1, f"<img src=x onerror=alert({i})>": 2}],
            "final_answer": "blue",
        }
        for i in range(3)
    ]
    trajectories = _write_jsonl(tmp_path / "trajectories.jsonl", rows)
    out = tmp_path / "out"
    _invoke("grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--no-replay", "--out", str(out))
    assert [r["verdict"] for r in _jsonl(out / "results.jsonl")] == ["pass"] * 3
    md = (out / "report.md").read_text(encoding="utf-8")
    warnings = md[md.index("Input warnings") :]
    assert re.search(r"(?<!\\)<(script|img)", md) is None  # every < of the input escaped
    assert r"\<script\>alert(1)\</script\>" in warnings and r"\<img src=x onerror=alert(0)\>" in warnings
    with open(out / "tables" / "trajectories.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    header, body = table[0], table[1:]
    assert len(body) == 3  # one row per trajectory: no row starts inside a cell
    assert [r[header.index("agent")] for r in body] == [agent] * 3
    assert not any(cell.startswith(("=", "+", "@")) for row in body for cell in row)


# ---------------------------------------------------------------- 13: many policy conditions in the charts


def test_twenty_five_policy_conditions_draw_no_bar_of_negative_width(tmp_path: Path):
    """25 policy conditions (26 series with "all") over a dozen hop counts: the bars' share of
    a fixed-width chart fell under their 2 px gap, and report.html held rects of negative width."""
    tasks, trajectories = [], []
    for i in range(25 * 12):
        policy, hops = f"policy-{i % 25}", 1 + i // 25
        tasks.append(
            {
                "task_id": f"t{i}",
                "question": "f of 1?",
                "tools": TOOLS,
                "reference_calls": [{"name": "f", "arguments": {"x": 1}}],
                "gold_answer": "blue",
                "metadata": {"policy_condition": policy, "hop_count": hops},
            }
        )
        trajectories.append(
            {
                "task_id": f"t{i}",
                "trajectory_id": f"r{i}",
                "steps": [{"name": "f", "arguments": {"x": 1}, "result": 1}],
                "final_answer": "blue" if i % 3 else "red",
            }
        )
    out = tmp_path / "out"
    _invoke(
        "grade",
        "--tasks",
        str(_write_jsonl(tmp_path / "tasks.jsonl", tasks)),
        "--trajectories",
        str(_write_jsonl(tmp_path / "t.jsonl", trajectories)),
        "--no-replay",
        "--out",
        str(out),
    )
    assert len(_jsonl(out / "results.jsonl")) == 300
    html = (out / "report.html").read_text(encoding="utf-8")
    charts = re.findall(r"<svg .*?</svg>", html, flags=re.S)
    hops = next(c for c in charts if "Pass rate by hop count" in c)
    assert all(f"policy-{p}" in hops for p in range(25))  # every condition is a series of the chart
    widths = [float(w) for c in charts for w in re.findall(r'<rect [^>]*?width="([^"]+)"', c)]
    assert widths and min(widths) >= 0  # a rate of 0 is a bar of width 0, never less
    bars = [float(w) for w in re.findall(r'<rect [^>]*?width="([^"]+)"[^>]*><title>', hops)]
    assert len(bars) >= 26 * 12 and min(bars) >= 2  # each pass-rate bar stays visible: the chart widens instead


# ---------------------------------------------------------------- 3: the judge cache on a full disk


def _disk_fills_after(monkeypatch, pages: int) -> None:
    """The cache file may grow ``pages`` SQLite pages past its size when opened, then every write
    fails as on a full disk (SQLITE_FULL, "database or disk is full"): the real error path, with
    the real disk untouched."""
    import judge.llm._cache as cache_module

    opened = cache_module._open

    def on_a_small_disk(path, *args, **kwargs):
        db = opened(path, *args, **kwargs)
        db.execute(f"PRAGMA max_page_count = {int(db.execute('PRAGMA page_count').fetchone()[0]) + pages}")
        return db

    monkeypatch.setattr(cache_module, "_open", on_a_small_disk)


def _yes_naming_bolt(body: dict) -> Any:
    """Yes to every rubric, naming "Bolt" (a span of each answer below that the answer comparison
    cannot decide against "Usain Bolt") as the candidate answer: a pass whose evidence checks out."""
    from tests.pipelines.test_controls import _fields, _material, _tool
    from tests.servers.graders import obedient_verdict
    from tests.servers.loopback import Reply

    verdict = obedient_verdict(_tool(body), _material(body), _fields(body), payloads=[""])
    if "candidate_answer" in verdict and _tool(body) != "GroundednessVerdict":
        verdict["candidate_answer"] = "Bolt"
    return Reply.of(verdict)


def test_answers_paid_while_the_judge_cache_disk_is_full_are_in_the_results(server, monkeypatch, tmp_path: Path):
    """The judge cache on a full disk: a raw traceback, exit 1, and 33 paid answers lost. Now
    every vote paid is in results.jsonl, the run completes, and the message names the cache and
    the way out; the next run with a writable cache pays only for what the full one lacked."""
    server.set_responder("judge-a", _yes_naming_bolt).set_responder("judge-b", _yes_naming_bolt)  # yes to every rubric
    tasks = _write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {
                "task_id": "t",
                "question": "Who won the 100 m in 2012?",
                "gold_answer": "Usain Bolt",
                "tools": TOOLS,
                "reference_calls": [{"name": "f", "arguments": {"x": 1}}],
            }
        ],
    )
    n = 24  # each answer a paraphrase: inconclusive for the checks, one question per trajectory for each judge
    trajectories = _write_jsonl(
        tmp_path / "t.jsonl",
        [
            {
                "task_id": "t",
                "trajectory_id": f"r{i}",
                "steps": [{"name": "f", "arguments": {"x": 1}, "result": "Usain Bolt"}],
                "final_answer": f"Bolt won it, variant {'v' * (i + 1)}.",  # no number the tool output lacks: grounded
            }
            for i in range(n)
        ],
    )
    cache = tmp_path / "cache" / "judge.sqlite3"
    judges = ["--judge", "openai:judge-a", "--judge", "anthropic:judge-b", "--cache", str(cache), "--controls", "off"]
    args = ["grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--no-replay", *judges]
    with monkeypatch.context() as m:
        _disk_fills_after(m, 4)
        output = _invoke(*args, "--out", str(tmp_path / "full"))
    paid = server.calls()
    assert paid >= 2 * n
    rows = _jsonl(tmp_path / "full" / "results.jsonl")
    assert [r["trajectory_id"] for r in rows] == [f"r{i}" for i in range(n)]
    votes = [v for r in rows for c in r["turns"][0]["checks"] if c.get("decision") for v in c["decision"]["votes"]]
    assert len(votes) == paid and not any(v.get("abstained") for v in votes)  # every paid answer counted, none lost
    assert all((r["verdict"], r["decided_by"]) == ("pass", "judge:panel") for r in rows)
    message = " ".join(output.split())
    assert f"judge cache {cache} could not be written (database or disk is full)" in message
    assert "--cache" in message and "--no-cache" in message and "free space" in message
    unsaved = int(re.search(r"(\d+) paid judge answers are not in the cache", message).group(1))
    assert 0 < unsaved < paid
    server.reset_log()
    _invoke(*args, "--out", str(tmp_path / "again"))  # room again: what the cache holds is not paid twice
    assert server.calls() == unsaved
    again = _jsonl(tmp_path / "again" / "results.jsonl")
    assert [(r["trajectory_id"], r["verdict"], r["decided_by"]) for r in again] == [(r["trajectory_id"], r["verdict"], r["decided_by"]) for r in rows]


def test_a_full_cache_keeps_answers_in_memory_and_writes_them_when_room_comes_back(monkeypatch, tmp_path: Path):
    from judge.llm import JudgeCache

    path = tmp_path / "judge.sqlite3"
    with monkeypatch.context() as m:
        _disk_fills_after(m, 3)
        cache = JudgeCache(path)
        stored = [cache.put(f"k{i}", "judge-a", {"label": "correct", "rationale": "x" * 1500}) for i in range(10)]
    assert stored[0] and not stored[-1] and cache.unsaved == stored.count(False)
    assert cache.write_error is not None and str(path) in cache.write_error
    assert all(cache.get(f"k{i}") == {"label": "correct", "rationale": "x" * 1500} for i in range(10))  # read back from memory
    assert cache.claim("k9", 5.0).payload is not None and cache.claim("new", 5.0).claimed  # a question is still asked, once
    cache._db.execute("PRAGMA max_page_count = 1000000")  # room again (space freed): close writes what was kept
    cache.close()
    assert len(JudgeCache(path)) == 10


# ---------------------------------------------------------------- 9: what one archive may expand to

INSPECT_EVAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "external" / "formats" / "inspect" / "inspect_ai_log_formats.eval"


def _sample(i: int, mib: int) -> tuple[bytes, bytes]:
    """A real sample of the shared Inspect log (see its SOURCE.md) with id ``i``, padded to
    ``mib`` MiB in its store with strings under the 8 MiB limit (a valid item), as the JSON text
    cut in two: the padding first (the same for every sample), then the rest."""
    import zipfile

    with zipfile.ZipFile(INSPECT_EVAL) as src:
        base = json.loads(src.read("samples/1_epoch_1.json"))
    rest = {k: v for k, v in base.items() if k != "store"} | {"id": i}
    return _padding(mib), json.dumps(rest)[1:].encode()


@functools.lru_cache(maxsize=2)
def _padding(mib: int) -> bytes:  # one object: the archive writer deflates it once
    pad = "x" * (4 * 2**20)
    return ('{"store": ' + json.dumps({f"pad{k}": pad for k in range(mib // 4)}) + ", ").encode()


def _inspect_log(path: Path, members: dict[str, tuple[bytes, bytes]]) -> Path:
    """An .eval (zip, deflate) of the shared log's headers and ``members`` (name -> the two parts
    of its bytes). A first part shared by several members is deflated once (a full flush, then a
    copy of the compressor per member): a GiB of members in a few MB, in seconds."""
    import struct
    import zipfile
    import zlib

    with zipfile.ZipFile(INSPECT_EVAL) as src:
        members = {name: (b"", src.read(name)) for name in ("_journal/start.json", "header.json", "summaries.json", "reductions.json")} | members
    shared: dict[int, tuple[bytes, Any, int]] = {}  # by id(): the padding is one object
    local, central = bytearray(), bytearray()
    for name, (first, second) in members.items():
        if id(first) not in shared:
            deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
            shared[id(first)] = (deflate.compress(first) + deflate.flush(zlib.Z_FULL_FLUSH), deflate, zlib.crc32(first))
        head_bytes, deflate, first_crc = shared[id(first)]
        rest = deflate.copy()
        body = head_bytes + rest.compress(second) + rest.flush()
        crc, size = zlib.crc32(second, first_crc), len(first) + len(second)
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(body), size, len(name), 0)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(body), size, len(name), 0, 0, 0, 0, 0, len(local))
        central += name.encode()
        local += head + name.encode() + body
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(local), 0)
    path.write_bytes(bytes(local + central + end))
    return path


def test_an_archive_that_inflates_past_the_limit_is_one_input_error_naming_it(tmp_path: Path):
    """An .eval of 3.6 MB holding 150 valid 24 MB members: 4.8 GB RSS and a 1.2 GB results.jsonl.
    What one archive may inflate to is capped (1 GiB): past it, the archive is one too_large
    error naming the file and the way out, read no further."""
    log = _inspect_log(tmp_path / "inflating.eval", {f"samples/{i}_epoch_1.json": _sample(i, 24) for i in range(1, 46)})  # 1.06 GiB of members
    assert log.stat().st_size < 8 * 2**20
    out = tmp_path / "out"
    output = " ".join(_invoke("grade", "--trajectories", str(log), "--no-replay", "--out", str(out), code=3).split())
    rows = _jsonl(out / "results.jsonl")
    assert len(rows) == 1 and rows[0]["verdict"] == "error"
    error = rows[0]["error"]
    assert (error["kind"], error["file"]) == ("too_large", str(log))
    assert "members inflate to" in error["message"] and f"more than the limit of {2**30} bytes for one archive" in error["message"]
    assert "inspect log convert --to json" in error["message"] and str(log) in output


def test_an_archive_under_the_limit_is_read_sample_by_sample(tmp_path: Path):
    log = _inspect_log(tmp_path / "fits.eval", {f"samples/{i}_epoch_1.json": _sample(i, 8) for i in (1, 2, 3)})
    out = tmp_path / "out"
    _invoke("grade", "--trajectories", str(log), "--no-replay", "--out", str(out))
    rows = _jsonl(out / "results.jsonl")
    assert len(rows) == 3 and not any(r["verdict"] == "error" for r in rows)
