"""The drill-down reads what grading kept (``drill_steps.jsonl``), never the run's inputs (issue 25).

Inputs: the format fixtures of ``tests/fixtures/formats/`` (an OpenAI chat export and native
JSONL, ours) and the bundled sample (``data/sample/``).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest

from reports import DRILL_STEPS, ReportInputError, build_report

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ROOT / "tests" / "fixtures" / "formats"
STEPS = "<b>final answer:</b>"  # a drill-down item's turn shown with its steps (reports._html._drill_item)


def _with_steps(html: str) -> int:
    """How many drill-down items show steps."""
    return sum(STEPS in item for item in html.split('<details class="traj"')[1:])


def _grade(tasks: Path, trajectories: Path, out: Path, **extra):
    from pipelines.run import GradeOptions, run_grading

    return run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, **extra))


def _kept(run: Path) -> tuple[dict, list[dict]]:
    header, *lines = (orjson.loads(line) for line in (run / DRILL_STEPS).read_bytes().splitlines())
    return header, lines


def _html_without_timestamp(path: Path) -> str:
    lines = [line for line in path.read_bytes().splitlines(keepends=True) if b'class="generated"' not in line]
    return hashlib.sha256(b"".join(lines)).hexdigest()


def test_an_openai_chat_input_shows_its_steps_in_the_drill_down(tmp_path):
    """A format other than native JSONL: the report used to show no steps for it (it re-read the
    source line as a native trajectory); grading now keeps them."""
    out = tmp_path / "run"
    _grade(FORMATS / "native_tasks.jsonl", FORMATS / "openai_trajectories.jsonl", out)
    html = (out / "report.html").read_text(encoding="utf-8")
    results = [orjson.loads(line) for line in (out / "results.jsonl").read_bytes().splitlines()]
    assert _with_steps(html) == len(results) == 2
    assert "get_balance" in html.split('class="drill"', 1)[1]  # a call of the export, in its steps table
    assert "have no steps here" not in html and "have no steps here" not in (out / "report.md").read_text(encoding="utf-8")
    header, kept = _kept(out)
    assert header["record"] == "drill_steps" and header["kept"] == len(kept) == len(results)
    assert [k["index"] for k in kept] == list(range(len(results)))
    assert [k["trajectory"]["trajectory_id"] for k in kept] == [r["trajectory_id"] for r in results]


def test_judge_report_never_opens_the_inputs(tmp_path):
    """The inputs gone after grading (moved away): ``judge report`` still shows every step."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for name in ("native_tasks.jsonl", "native_trajectories.jsonl"):
        shutil.copy(FORMATS / name, inputs / name)
    run = tmp_path / "run"
    _grade(inputs / "native_tasks.jsonl", inputs / "native_trajectories.jsonl", run)
    graded = _with_steps((run / "report.html").read_text(encoding="utf-8"))
    assert graded > 0
    shutil.rmtree(inputs)
    build_report([run], tmp_path / "again")
    html = (tmp_path / "again" / "report.html").read_text(encoding="utf-8")
    assert _with_steps(html) == graded
    assert "have no steps here" not in html


def test_a_run_folder_without_the_record_falls_back_to_the_source_lines(tmp_path):
    """A run folder written before ``drill_steps.jsonl``: its native input is re-read as before;
    a format that is not native JSONL shows no steps, and the note says so."""
    native = tmp_path / "native"
    _grade(FORMATS / "native_tasks.jsonl", FORMATS / "native_trajectories.jsonl", native)
    shown = _with_steps((native / "report.html").read_text(encoding="utf-8"))
    (native / DRILL_STEPS).unlink()
    build_report([native], tmp_path / "native-again")
    # the line whose trajectory id the reader made up (it has none) does not re-read as that trajectory: 1 of the 2
    again = (tmp_path / "native-again" / "report.html").read_text(encoding="utf-8")
    assert shown == 2 and _with_steps(again) == 1 and "1 of 2 shown trajectories have no steps here" in again

    chat = tmp_path / "chat"
    _grade(FORMATS / "native_tasks.jsonl", FORMATS / "openai_trajectories.jsonl", chat)
    (chat / DRILL_STEPS).unlink()
    build_report([chat], tmp_path / "chat-again")
    html = (tmp_path / "chat-again" / "report.html").read_text(encoding="utf-8")
    assert _with_steps(html) == 0 and "have no steps here: their source file is missing or not native JSONL" in html


def test_a_record_that_does_not_read_is_an_error_naming_file_line_and_field(tmp_path):
    run = tmp_path / "run"
    _grade(FORMATS / "native_tasks.jsonl", FORMATS / "openai_trajectories.jsonl", run)
    header, *lines = (run / DRILL_STEPS).read_bytes().splitlines()
    broken = orjson.loads(lines[0])
    del broken["trajectory"]["turns"]
    (run / DRILL_STEPS).write_bytes(b"\n".join([header, orjson.dumps(broken), *lines[1:]]) + b"\n")
    with pytest.raises(ReportInputError, match=rf"{DRILL_STEPS}:2: field trajectory\.turns"):
        build_report([run], tmp_path / "again")
    (run / DRILL_STEPS).write_bytes(header.replace(b'"version":1', b'"version":7') + b"\n")
    with pytest.raises(ReportInputError, match=rf"{DRILL_STEPS}:1: field version"):
        build_report([run], tmp_path / "again")


@pytest.fixture
def small_drill(monkeypatch):
    """The drill-down's pick rule made small (the first 150, plus 40 later non-passing ones), so
    the bundled sample (666 trajectories) has rows the drill-down leaves out; worker processes are
    forked after it is set and inherit it."""
    import reports._steps as steps

    monkeypatch.setattr(steps, "DRILL_FIRST", 150)
    monkeypatch.setattr(steps, "DRILL_EXTRA_FAILURES", 40)
    return steps


def _sample(out: Path, **extra):
    from pipelines.grade import Replayer

    return _grade(ROOT / "data/sample/tasks.jsonl", ROOT / "data/sample/trajectories.jsonl", out, replayer=Replayer(), shard_lines=100, **extra)


def test_the_run_keeps_only_the_trajectories_the_drill_down_may_show(small_drill, tmp_path, monkeypatch):
    """What the merge spools (``.judge-run/steps.partial``) is the drill-down's picks and nothing
    more (no judge: every verdict is final when merged), and the record holds exactly the picks."""
    from pipelines.run.publish import Publisher

    spooled: list[int] = []
    write = Publisher._write_drill_steps

    def spy(self, rows, staging):
        spooled.extend(small_drill.kept_index(line) for line in self.state.steps_path.read_bytes().splitlines(keepends=True))
        write(self, rows, staging)

    monkeypatch.setattr(Publisher, "_write_drill_steps", spy)
    out = tmp_path / "run"
    _sample(out)
    verdicts = [orjson.loads(line)["verdict"] for line in (out / "results.jsonl").read_bytes().splitlines()]
    picked, later = small_drill.drill_picks(verdicts)
    assert later > 40 and len(picked) == 190 < len(verdicts)  # the rule leaves rows out
    header, kept = _kept(out)
    assert header["kept"] == len(kept) and [k["index"] for k in kept] == picked == spooled
    graded = [i for i in picked if verdicts[i] != "error"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert _with_steps(html) == len(graded) and "have no steps here" not in html


def test_workers_and_resume_give_the_drill_down_of_one_worker(small_drill, tmp_path, monkeypatch):
    """One worker, two workers, and two workers killed after their third checkpointed shard then
    resumed: the same record, the same report.html."""
    from pipelines.run import RunState

    runs = {}
    for name, workers in (("one", 1), ("two", 2)):
        runs[name] = tmp_path / name / "run"
        _sample(runs[name], workers=workers)
    resumed = runs["resumed"] = tmp_path / "resumed" / "run"
    calls = {"n": 0}
    append = RunState.append_shard

    class Killed(BaseException):
        pass

    def dying(self, *args, **kwargs):
        append(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] > 2:
            raise Killed

    with monkeypatch.context() as m:
        m.setattr(RunState, "append_shard", dying)
        with pytest.raises(Killed):
            _sample(resumed, workers=2)
    assert not (resumed / DRILL_STEPS).exists()
    assert _sample(resumed, workers=2, resume=True).resumed
    record = {name: (run / DRILL_STEPS).read_bytes() for name, run in runs.items()}
    assert record["two"] == record["one"] == record["resumed"]
    html = {name: _html_without_timestamp(run / "report.html") for name, run in runs.items()}
    assert html["two"] == html["one"] == html["resumed"]


def test_a_compressed_input_shows_its_steps(tmp_path):
    """A gzipped OpenAI chat export: graded as the text it holds, and its steps are in the drill-down
    (re-reading the source line, as the report once did, could not read a compressed file)."""
    import gzip

    packed = tmp_path / "openai_trajectories.jsonl.gz"
    packed.write_bytes(gzip.compress((FORMATS / "openai_trajectories.jsonl").read_bytes(), mtime=0))
    out = tmp_path / "run"
    _grade(FORMATS / "native_tasks.jsonl", packed, out)
    assert _with_steps((out / "report.html").read_text(encoding="utf-8")) == 2


def test_the_record_is_the_picked_lines_of_the_spool_in_order(tmp_path):
    """One pass over ``steps.partial`` (byte ranges, adjacent ones merged) writes what filtering
    it line by line wrote: the header counting the picked lines, then those lines."""
    from types import SimpleNamespace

    from pipelines.run.publish import Publisher
    from reports import drill_picks, header_line, kept_index, kept_line

    verdicts = ["pass", "fail"] * 1500 + ["error"] * 2000
    spool = tmp_path / "steps.partial"
    kept = [i for i in range(len(verdicts)) if i % 7 != 3]  # the spool misses some rows
    spool.write_bytes(b"".join(kept_line(i, orjson.dumps({"trajectory_id": f"r{i}", "pad": "x" * (i % 50)})) for i in kept))
    rows = [SimpleNamespace(verdict=v) for v in verdicts]
    fake = SimpleNamespace(state=SimpleNamespace(steps_path=spool))
    picks = Publisher._write_drill_steps(fake, rows, tmp_path)  # type: ignore[arg-type]
    picked = set(drill_picks(verdicts)[0])
    expected = [line for line in spool.read_bytes().splitlines(keepends=True) if kept_index(line) in picked]
    assert (tmp_path / DRILL_STEPS).read_bytes() == header_line(len(expected)) + b"".join(expected)
    assert picks == drill_picks(verdicts)
