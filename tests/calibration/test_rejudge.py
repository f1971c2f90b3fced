"""Which gold items a live judge can be run on, and what calibrate says when none can.

The Thakur CSV records the question, the gold answers and nine judges' verdicts, but its
``response`` column is the exam prompt, not the model's answer (SOURCE.md): its items are marked
``answer_available: false``. A live judge asked about them would judge a null answer; before this
rule ``judge calibrate --judge provider:model`` did exactly that (one call per item, 3,200 of them)
and then noted that the items "cannot be re-judged". Now it is refused before any call, saying
what to do instead. An answer that is null because the agent answered nothing is still judged.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from calibration import run_calibration
from pipelines.cli import app
from tests.servers import Reply

runner = CliRunner()


def _squash(text: str) -> str:
    return "".join(text.split())


def test_a_live_judge_on_items_without_the_judged_answer_is_refused_before_any_call(thakur_csv, loopback_openai, tmp_path):
    res = runner.invoke(app, ["calibrate", "--gold", str(thakur_csv), "--judge", "openai:small", "--limit", "20", "--out", str(tmp_path / "out")])
    assert res.exit_code == 3, res.output
    text = _squash(res.output)  # wrapped at the console width, at a space or inside a word
    assert _squash("its items carry no judged answer") in text and _squash("no live judge (openai:small) can be run on them") in text
    assert _squash("--judge NAME") in text and "GPT-4" in text  # the recorded judges it can measure instead
    assert _squash("judge gold export RUN") in text and _squash("judge gold import") in text  # where gold a live judge can judge comes from
    assert loopback_openai.calls() == 0
    assert not (tmp_path / "out" / "calibration.json").exists()


def test_recorded_judges_are_measured_and_the_note_says_what_live_judging_needs(thakur_csv, tmp_path):
    report = run_calibration(thakur_csv, tmp_path, limit=40, n_boot=0, spread_seeds=0)
    assert report.judges["GPT-4"].n == 40
    [note] = [n for n in report.notes if "no live judge" in n]
    assert note.startswith("its items carry no judged answer (metadata answer_available: false")
    assert "--judge provider:model" in note and "--probes" in note and "judge gold export" in note
    assert "material.answer" not in note and "=" not in note


def _gold(path, items):
    path.write_text("".join(json.dumps(it) + "\n" for it in items))
    return path


def _item(i: int, answer: str | None, **extra) -> dict:
    return {
        "id": f"i{i}",
        "rubric": "answer_correctness",
        "material": {"question": f"What is {i}?", "gold_answers": [str(i)], "answer": answer},
        "human_labels": [{"annotator": "h", "label": "incorrect" if answer is None else "correct"}],
        "cluster": f"q{i}",
        **extra,
    }


def test_an_agent_that_answered_nothing_is_judged_and_incomplete_items_are_left_out(loopback_openai, tmp_path):
    loopback_openai.set_default("small", Reply("incorrect"))
    items = [_item(i, None) for i in range(3)] + [_item(i, str(i)) for i in range(3, 6)]
    items.append(_item(6, None, metadata={"answer_available": False}))
    gold = _gold(tmp_path / "gold.jsonl", items)
    res = runner.invoke(app, ["calibrate", "--gold", str(gold), "--judge", "openai:small", "--no-cache", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert loopback_openai.calls() == 6  # the null answers too; not the item without its answer
    data = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert data["judges"]["openai:small"]["n"] == 6 and data["judges"]["openai:small"]["n_missing"] == 1
    assert any(n.startswith("1 of 7 items carry no complete inline material") for n in data["notes"])
    assert not any("no live judge" in n for n in data["notes"])
