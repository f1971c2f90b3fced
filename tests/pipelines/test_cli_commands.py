"""The sub-commands are wired to their packages: calibrate, report, env, schema, demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

runner = CliRunner()
THAKUR = Path(__file__).resolve().parents[3] / "shared" / "data" / "external" / "thakur-triviaqa-judges" / "TriviaQA_Judges_w_HumanJudgement_V2.csv"


@pytest.mark.skipif(not THAKUR.exists(), reason="shared/ data folder not present")
def test_calibrate_on_the_thakur_csv_as_is(tmp_path):
    res = runner.invoke(app, ["calibrate", "--gold", str(THAKUR), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "calibration.json").read_text())
    assert round(data["judges"]["GPT-4"]["cohen_kappa"]["value"], 3) == 0.892
    assert round(data["panels"]["majority"]["cohen_kappa"]["value"], 3) == 0.754
    assert data["held_out"]["rules"]["weighted_log_odds"]["cohen_kappa"]["value"] >= 0.88
    assert (tmp_path / "weights.json").exists()


def test_demo_then_report_rerender(tmp_path):
    res = runner.invoke(app, ["demo", "--out", str(tmp_path / "demo")])
    assert res.exit_code == 0, res.output
    assert "by capability" in res.output and "by hop count" in res.output
    for name in ("results.jsonl", "summary.json", "report.md", "report.html", "manifest.json"):
        assert (tmp_path / "demo" / name).exists(), name
    manifest = json.loads((tmp_path / "demo" / "manifest.json").read_text())
    assert set(manifest["replay"]["environments"]) == {"olympics", "movies", "flights", "hospital", "retail"}
    again = runner.invoke(app, ["report", str(tmp_path / "demo"), "--out", str(tmp_path / "again")])
    assert again.exit_code == 0, again.output
    assert (tmp_path / "again" / "report.md").read_text() == (tmp_path / "demo" / "report.md").read_text()


def test_demo_replaces_only_a_demo_run(tmp_path, monkeypatch):
    """``judge demo --out DIR`` once replaced whatever DIR held (overwrite hard-coded): a run of
    ``judge grade``, a user's own results.jsonl. It now refuses them as ``judge grade`` does (exit 2
    unless --overwrite) and replaces, without a flag, an earlier demo run and its own runs/demo."""
    from pipelines.resources import sample_dir

    sample = sample_dir()
    graded = tmp_path / "a1"
    res = runner.invoke(app, ["grade", "--tasks", str(sample / "tasks.jsonl"), "--trajectories", str(sample / "trajectories.jsonl"), "--out", str(graded)])
    assert res.exit_code == 0, res.output
    manifest = (graded / "manifest.json").read_bytes()
    res = runner.invoke(app, ["demo", "--out", str(graded)])
    assert res.exit_code == 2 and "holds another run's files" in " ".join(res.output.split()), res.output
    assert (graded / "manifest.json").read_bytes() == manifest

    mine = tmp_path / "dm"
    mine.mkdir()
    (mine / "results.jsonl").write_text('{"mine":1}\n')
    res = runner.invoke(app, ["demo", "--out", str(mine)])
    assert res.exit_code == 2 and "--overwrite" in res.output, res.output
    assert (mine / "results.jsonl").read_text() == '{"mine":1}\n'
    res = runner.invoke(app, ["demo", "--out", str(mine), "--overwrite"])
    assert res.exit_code == 0, res.output
    assert json.loads((mine / "manifest.json").read_text())["command"][1] == "demo"

    res = runner.invoke(app, ["demo", "--out", str(mine)])  # an earlier demo run: replaced without a flag
    assert res.exit_code == 0, res.output

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "demo").mkdir(parents=True)
    (tmp_path / "runs" / "demo" / "results.jsonl").write_text("left by anything\n")
    res = runner.invoke(app, ["demo"])  # make demo: the demo's own folder
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "runs" / "demo" / "manifest.json").read_text())["complete"] is True


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory) -> Path:
    from pipelines.resources import sample_dir

    out = tmp_path_factory.mktemp("sample") / "run"
    sample = sample_dir()
    res = runner.invoke(app, ["grade", "--tasks", str(sample / "tasks.jsonl"), "--trajectories", str(sample / "trajectories.jsonl"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _cut_lines(run: Path) -> None:
    lines = (run / "results.jsonl").read_bytes().splitlines(keepends=True)
    (run / "results.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]))


DAMAGE = {
    # name: (what is done to the run folder, text in the message)
    "summary.json deleted": (lambda run: (run / "summary.json").unlink(), "summary.json: file not found"),
    "summary.json not JSON": (lambda run: (run / "summary.json").write_text("{"), "summary.json: not valid JSON"),
    "summary.json not UTF-8": (lambda run: (run / "summary.json").write_bytes(b"\xff{}"), "summary.json: not valid JSON"),
    "results.jsonl deleted": (lambda run: (run / "results.jsonl").unlink(), "results.jsonl: file not found"),
    "a results line cut": (lambda run: (run / "results.jsonl").write_bytes((run / "results.jsonl").read_bytes()[:5000]), "results.jsonl:3: field <root>"),
    "results.jsonl not UTF-8": (lambda run: (run / "results.jsonl").write_bytes((run / "results.jsonl").read_bytes() + b"\xff\xfe\n"), "not UTF-8 text"),
    "results.jsonl cut back to whole lines": (_cut_lines, "summary.json counts 666 trajectories"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_report_on_a_damaged_run_folder_is_an_input_error(sample_run, tmp_path, case):
    """``judge report`` on a damaged run once ended in "internal error: ReportInputError" (exit 1),
    or, with results.jsonl cut back to whole lines, wrote a report whose totals (summary.json) were
    not its tables'. Each is an input error (exit 3) naming the file, and nothing is written."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(sample_run, run)
    for name in ("report.md", "report.html"):
        (run / name).unlink()
    damage, text = DAMAGE[case]
    damage(run)
    res = runner.invoke(app, ["report", str(run)])
    message = " ".join(res.output.split())
    assert res.exit_code == 3, res.output
    assert message.startswith("input error:") and text in message and "internal error" not in message
    assert not (run / "report.md").exists() and not (run / "report.html").exists()


def test_report_names_what_differs_when_results_and_summary_disagree(sample_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(sample_run, run)
    _cut_lines(run)
    res = runner.invoke(app, ["report", str(run)])
    message = " ".join(res.output.split())
    assert res.exit_code == 3 and "results.jsonl holds 333 results" in message and "the run folder is damaged" in message, message
    again = runner.invoke(app, ["report", str(sample_run), "--out", str(tmp_path / "whole")])  # an intact run: unchanged
    assert again.exit_code == 0, again.output


def test_env_and_schema_commands(tmp_path):
    listed = runner.invoke(app, ["env", "list"])
    assert listed.exit_code == 0 and "retail" in listed.output
    res = runner.invoke(app, ["schema", "--out", str(tmp_path)])
    assert res.exit_code == 0
    assert json.loads((tmp_path / "task.schema.json").read_text())["title"] == "Task"


def test_calibrate_runs_live_judges_on_inline_gold_material(tmp_path):
    gold = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "gold_small.jsonl"
    res = runner.invoke(app, ["calibrate", "--gold", str(gold), "--judge", "mock:always-correct", "--judge", "gpt-4o", "--out", str(tmp_path), "--no-cache"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "calibration.json").read_text())
    live = data["judges"]["mock:always-correct"]
    # it says "correct" to every item; the answer check's comparison of the answer it copies turns
    # into "incorrect" every pass the comparison can refute (judge.core._evidence)
    from pipelines.checks.answer import candidate_label

    items = [json.loads(line) for line in gold.read_text().splitlines() if line.strip()]
    inline = [it["material"] for it in items if it.get("material") and it.get("rubric") == "answer_correctness"]
    standing = sum(candidate_label(m["gold_answers"], m["answer"] if isinstance(m["answer"], str) else json.dumps(m["answer"])) != "incorrect" for m in inline)
    assert live["n"] >= 10 and live["rated_positive_rate"]["value"] == pytest.approx(standing / live["n"], abs=1e-4)
    assert "gpt-4o" in data["judges"]  # a recorded column next to the live judge


def test_calibrate_with_an_unknown_recorded_judge_is_a_clear_error(tmp_path):
    gold = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "gold_small.jsonl"
    res = runner.invoke(app, ["calibrate", "--gold", str(gold), "--judge", "not-a-provider-judge", "--out", str(tmp_path)])
    assert res.exit_code != 0


def test_grade_with_an_unusable_judge_cache_exits_4_naming_the_file(tmp_path):
    sample = Path(__file__).resolve().parents[2] / "data" / "sample"
    cache = tmp_path / "cache.sqlite3"
    cache.write_bytes(b"not SQLite at all " * 64)
    args = ["grade", "--tasks", str(sample / "tasks.jsonl"), "--trajectories", str(sample / "trajectories.jsonl"), "--out", str(tmp_path / "out")]
    res = runner.invoke(app, [*args, "--judge", "openai:m", "--offline", "--cache", str(cache)])
    assert res.exit_code == 4, res.output
    said = " ".join(res.output.split())  # rich wraps long lines
    assert "invalid judge configuration: judge cache" in said and "file is not a database" in said
    assert str(cache) in res.output.replace("\n", "")


def test_user_text_that_looks_like_rich_markup_is_printed_as_written(tmp_path):
    """An id such as ``zz[/x] [bold]`` used to crash the error listing (a rich MarkupError, then
    again inside the internal-error handler), and every error's ``[kind]`` was eaten as a tag."""
    sample = Path(__file__).resolve().parents[2] / "data" / "sample"
    first, second = (sample / "trajectories.jsonl").read_text().splitlines()[:2]
    item = json.loads(first)
    item["task_id"] = "zz[/x] [bold]"
    trajectories = tmp_path / "trajectories.jsonl"
    trajectories.write_text(json.dumps(item) + "\n" + second + "\n")
    res = runner.invoke(app, ["grade", "--tasks", str(sample / "tasks.jsonl"), "--trajectories", str(trajectories), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "no task with id 'zz[/x] [bold]' among" in said and "[unknown_task]" in said
    assert "1 graded, 1 trajectory input errors" in said
