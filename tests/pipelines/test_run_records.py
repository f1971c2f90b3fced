"""What a run reads back is typed, versioned JSON, never code (issue 26 item 4; issue 25's typed run
records): a crafted pickle where the run state once kept its shard records is never loaded, and
every record of another version, or one that does not validate, is refused naming the file, the
line, the field and the way out (exit code 2), with the interrupted run left as it was."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.generate import generate
from pipelines.cli import EXIT_USAGE, app
from pipelines.run import GradeOptions, RunDirError, run_grading
from pipelines.run.records import Manifest, RecordError, RunStateRecord, ShardRecord, read_manifest

runner = CliRunner()
OUTPUTS = ("results.jsonl", "summary.json", "report.md")


def _said(output: str, *parts: str) -> bool:
    """Every part is in the output, however the console wrapped it (even inside a path)."""
    flat = "".join(output.split())
    return all("".join(part.split()) in flat for part in parts)


class _Killed(BaseException):
    """A kill, as the run sees it: it stops between two statements, nothing cleaned up."""


class _Payload:
    """What an attacker puts in a pickle: loading it opens (creates) ``marker``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, Path]:
    return generate(tmp_path_factory.mktemp("gen"), 90, n_tasks=20, seed=4)


def _interrupted(generated, out: Path, monkeypatch) -> list[str]:
    """A run killed after checkpointing its second shard; the command that resumes it (``judge
    resume`` rebuilds the run's options, its shard size among them, from its recipe)."""
    from pipelines.run.state import RunState

    tasks, trajectories = generated
    original = RunState.append_shard
    count = {"n": 0}

    def dying(self, *args, **kwargs):
        original(self, *args, **kwargs)
        count["n"] += 1
        if count["n"] >= 2:
            raise _Killed

    with monkeypatch.context() as m:
        m.setattr(RunState, "append_shard", dying)
        with pytest.raises(_Killed):
            run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=20))
    return ["resume", str(out), "--workers", "1"]


def _options(generated, out: Path, **extra) -> GradeOptions:
    tasks, trajectories = generated
    return GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=20, **extra)


def _crafted_pickle(path: Path, marker: Path) -> None:
    blob = pickle.dumps(_Payload(marker))
    path.write_bytes(struct.pack("<Q", len(blob)) + blob)  # the layout the old run state used


def test_a_crafted_shards_pkl_of_an_old_run_state_is_never_loaded(generated, tmp_path, monkeypatch):
    """The old layout exactly (state.json of version 1 beside a length-prefixed shards.pkl):
    --resume and judge resume refuse it with the way out, and the pickle's code never runs."""
    out = tmp_path / "run"
    args = _interrupted(generated, out, monkeypatch)
    state_dir = out / ".judge-run"
    state = json.loads((state_dir / "state.json").read_text())
    state["version"] = 1
    (state_dir / "state.json").write_text(json.dumps(state))
    marker = tmp_path / "pwned"
    _crafted_pickle(state_dir / "shards.pkl", marker)
    before = sorted(p.name for p in state_dir.iterdir())

    res = runner.invoke(app, args)
    assert res.exit_code == EXIT_USAGE, res.output
    assert _said(res.output, "state.json", "version 1", "never read", "--overwrite"), res.output
    with pytest.raises(RunDirError, match="version 1"):
        run_grading(_options(generated, out, resume=True))
    assert not marker.exists()
    assert sorted(p.name for p in state_dir.iterdir()) == before and not (out / "results.jsonl").exists()  # left as it was

    run_grading(_options(generated, out, overwrite=True))  # the way out it names works
    assert not marker.exists() and not state_dir.exists() and (out / "manifest.json").exists()


def test_a_crafted_shards_pkl_beside_a_current_run_state_is_ignored(generated, tmp_path, monkeypatch):
    """The run state of today never opens shards.pkl: the run resumes from its JSON records to the
    bytes of an uninterrupted run."""
    tasks, trajectories = generated
    reference = tmp_path / "ref"
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=reference, shard_lines=20))
    out = tmp_path / "run"
    args = _interrupted(generated, out, monkeypatch)
    marker = tmp_path / "pwned"
    _crafted_pickle(out / ".judge-run" / "shards.pkl", marker)
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert not marker.exists()
    assert all((out / name).read_bytes() == (reference / name).read_bytes() for name in OUTPUTS)


@pytest.mark.parametrize(
    ("file", "edit", "said"),
    [
        ("state.json", lambda text: text.replace('"version": 2', '"version": 99', 1), ["state.json", "version 99", "reads version 2", "--overwrite"]),
        ("state.json", lambda text: text.replace('"phase": "grading"', '"phase": "done"', 1), ["state.json", "field phase", "--overwrite"]),
        ("state.json", lambda text: "\x80\x04crafted", ["state.json", "not a JSON record"]),
        ("shards.jsonl", lambda text: text.replace('"version":1', '"version":7', 1), ["shards.jsonl:1", "version 7", "--overwrite"]),
        ("shards.jsonl", lambda text: text.replace('"rows":', '"rows_":', 1), ["shards.jsonl:1", "field rows", "--overwrite"]),
        ("shards.jsonl", lambda text: pickle.dumps({"a": 1}).decode("latin-1") + "\n" + text, ["shards.jsonl:1", "not a JSON record"]),
    ],
    ids=["state-version", "state-field", "state-binary", "shard-version", "shard-field", "shard-pickle-line"],
)
def test_a_record_of_another_version_or_shape_is_refused_naming_file_line_and_field(generated, tmp_path, monkeypatch, file, edit, said):
    out = tmp_path / "run"
    args = _interrupted(generated, out, monkeypatch)
    path = out / ".judge-run" / file
    path.write_bytes(edit(path.read_bytes().decode("latin-1")).encode("latin-1"))
    res = runner.invoke(app, args)
    assert res.exit_code == EXIT_USAGE, res.output
    assert _said(res.output, *said), res.output
    assert "Traceback" not in res.output and not (out / "results.jsonl").exists()


def test_the_records_round_trip_and_name_their_version(generated, tmp_path, monkeypatch):
    out = tmp_path / "run"
    _interrupted(generated, out, monkeypatch)
    state = RunStateRecord.model_validate_json((out / ".judge-run" / "state.json").read_bytes())
    assert state.version == 2 and state.phase == "grading" and state.recipe is not None and state.recipe.version == 1
    records = [ShardRecord.model_validate_json(line) for line in (out / ".judge-run" / "shards.jsonl").read_bytes().split(b"\n") if line]
    assert len(records) == 2 and all(r.version == 1 and r.rows == r.items for r in records)
    assert not (out / ".judge-run" / "shards.pkl").exists()


def test_a_manifest_of_another_version_is_refused_by_its_readers(generated, tmp_path):
    tasks, trajectories = generated
    out = tmp_path / "run"
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out))
    manifest = read_manifest(out / "manifest.json")
    assert isinstance(manifest, Manifest) and manifest.version == 1 and manifest.complete
    data = json.loads((out / "manifest.json").read_text())
    data["version"] = 3
    (out / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(RecordError, match="version 3"):
        read_manifest(out / "manifest.json")
    res = runner.invoke(app, ["gold", "export", str(out), "--n", "5", "--out", str(tmp_path / "gold.jsonl")])
    assert res.exit_code != 0 and _said(res.output, "manifest.json", "version 3"), res.output
    with pytest.raises(RunDirError, match="another run's files"):  # not a complete run of ours: refused, as any other run's files
        run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out))
