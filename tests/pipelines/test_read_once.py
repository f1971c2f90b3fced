"""A run reads what it read once: the tasks' format detected once (issue 25, "formats detected twice").

Inputs: the VAKRA fixtures of ``tests/fixtures/formats/`` (see ``VAKRA_ORIGIN.md`` there).
"""

from __future__ import annotations

from pathlib import Path

FORMATS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "formats"


def test_the_tasks_format_is_detected_once(tmp_path, monkeypatch):
    """Two workers and tasks that are not native JSONL (VAKRA ground truth, ``tests/fixtures/formats``):
    the run detected their format to choose the loader, then the loader detected it again (no
    reference file: with one, the loader is the serial one and detects it alone)."""
    import pipelines.ingest._api as api
    import pipelines.run.inputs as inputs

    calls: list[str] = []
    detect = api.detect_task_format

    def counted(path):
        calls.append(str(path))
        return detect(path)

    monkeypatch.setattr(api, "detect_task_format", counted)
    monkeypatch.setattr(inputs, "detect_task_format", counted)
    from pipelines.run import GradeOptions, run_grading

    run_grading(GradeOptions(tasks=FORMATS / "vakra_ground_truth.jsonl", trajectories=FORMATS / "vakra_predictions.jsonl", out=tmp_path / "run", workers=2))
    assert calls == [str(FORMATS / "vakra_ground_truth.jsonl")]
