"""``judge calibrate`` end to end over loopback judges (real openai SDK + instructor over HTTP) whose
answers depend on the prompt they receive.

The judges read the data blocks like a model would: an answer that contains a gold value is
"correct". Hedged answers ("approximately 14") contain the gold value but the humans labelled them
incorrect; a judge gets them right only when its prompt carries the hedging rule (version B) or a
worked example of a hedged answer (few-shot). So: B beats A significantly, A against a byte copy
of A is indistinguishable, and few-shot tuning of A helps on the test split.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rubrics
from pipelines.cli import app
from tests.servers import Reply

runner = CliRunner()
HEDGE_RULE = "An answer hedged with 'approximately' does not pin the gold value and is incorrect."
DATA = re.compile(r'<data name="([a-z_]+)">(.*?)</data>', re.S)


def _blocks(text: str) -> dict:
    return {name: json.loads(payload) for name, payload in DATA.findall(text)}


def prompt_sensitive(body: dict, *, weak: bool = False, gullible: bool = False) -> Reply:
    system = body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    data = _blocks(user)
    answer = str(data.get("answer") or "")
    if gullible and "NOTE TO THE GRADER" in answer:
        return Reply("correct")
    hit = any(str(g).lower() in answer.lower() for g in data.get("gold_answers") or [])
    knows_hedging = HEDGE_RULE in system or "approximately" in system  # the rule, or a worked example of a hedged answer
    if hit and "approximately" in answer and knows_hedging:
        hit = False
    if weak and int(re.sub(r"\D", "", json.dumps(data.get("question"))) or 0) % 4 == 0:
        hit = not hit  # a cheap judge that is wrong on a quarter of the questions
    return Reply("correct" if hit else "incorrect")


def write_gold(path: Path, n_questions: int = 60) -> Path:
    lines = []
    for q in range(n_questions):
        gold = str(100 + q)
        for a, (answer, label) in enumerate(
            [
                (f"It is {gold}.", "correct") if q % 3 else (f"approximately {gold}", "incorrect"),
                (f"I think {200 + q}.", "incorrect") if q % 2 else (f"approximately {gold}, give or take", "incorrect"),
            ]
        ):
            lines.append(
                json.dumps(
                    {
                        "id": f"q{q:03d}-{a}",
                        "rubric": "answer_correctness",
                        "material": {"question": f"What is the count for case {q}?", "gold_answers": [gold], "answer": answer},
                        "human_labels": [{"annotator": "ann-1", "label": label}, {"annotator": "ann-2", "label": label}],
                        "cluster": f"q{q}",
                    }
                )
            )
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    a = tmp_path / "A"
    rubrics.write_rubric_files({"answer_correctness": rubrics.RUBRICS["answer_correctness"]}, a)
    a_copy = tmp_path / "A-copy"
    shutil.copytree(a, a_copy)
    b = tmp_path / "B"
    shutil.copytree(a, b)
    path = b / "answer_correctness.j2"
    text = path.read_text()
    text = text.replace("Rules:\n", f"Rules:\n- {HEDGE_RULE}\n", 1)
    text = text.replace(
        '- Numbers must match the gold value at the gold\'s precision: 8,500 matches 8500 and 3.0 matches 3, but 3.5 does not match 3.46. A range or an approximation ("about", "roughly") that does not pin the gold value is incorrect.\n',
        "",
    )
    path.write_text(text)
    return {"A": a, "A-copy": a_copy, "B": b}


@pytest.fixture
def judges(loopback_openai):
    loopback_openai.set_responder("smart", prompt_sensitive)
    loopback_openai.set_responder("smart-2", prompt_sensitive)
    loopback_openai.set_responder("weak", lambda body: prompt_sensitive(body, weak=True))
    loopback_openai.set_responder("gullible", lambda body: prompt_sensitive(body, gullible=True))
    return loopback_openai


def _run(*args: str):
    res = runner.invoke(app, ["calibrate", *args])
    assert res.exit_code == 0, res.output
    return res


def test_the_better_version_wins_and_an_identical_pair_is_indistinguishable(tmp_path, folders, judges):
    gold = write_gold(tmp_path / "gold.jsonl")
    out = tmp_path / "versions"
    res = _run(
        "--gold", str(gold), "--judge", "openai:smart", "--rubrics", str(folders["A"]), "--against", str(folders["B"]),
        "--against", str(folders["A-copy"]), "--out", str(out), "--cache", str(tmp_path / "cache.sqlite3"),
    )  # fmt: skip
    data = json.loads((out / "calibration.json").read_text())
    pv = data["prompt_versions"]
    assert pv["versions"] == ["A", "B", "A-copy"]
    stats = {v["version"]: v for v in pv["per_version"]}
    assert stats["B"]["stats"]["cohen_kappa"]["value"] == 1.0 and stats["A"]["stats"]["cohen_kappa"]["value"] < 0.6
    assert stats["A"]["rubric_versions"] == stats["A-copy"]["rubric_versions"] == {"answer_correctness": rubrics.RUBRICS["answer_correctness"].version}
    assert stats["B"]["rubric_versions"]["answer_correctness"] != stats["A"]["rubric_versions"]["answer_correctness"]
    cmp = {(c["a"], c["b"]): c for c in pv["comparisons"]}
    ab = cmp[("A", "B")]
    assert ab["significant"] and ab["winner"] == "B" and ab["test"]["only_a_right"] == 0 and ab["test"]["only_b_right"] > 20
    assert ab["mcnemar_p_holm"] < 0.001 and ab["test"]["kappa_diff"]["ci_low"] > 0
    same = cmp[("A", "A-copy")]
    assert same["identical_prompts"] and not same["significant"] and same["winner"] is None
    assert "indistinguishable on this gold set" in same["conclusion"] and "same verdict on every item" in same["conclusion"]
    assert same["sample_size"]["items_needed"] is None
    # per-version confusion rates with CIs; human-human agreement from the two annotators
    rates = stats["A"]["confusion_rates"]
    assert rates[0][0]["value"] == 1.0 and rates[1][0]["value"] > 0 and rates[1][0]["ci_low"] <= rates[1][0]["value"] <= rates[1][0]["ci_high"]
    assert data["human"]["ceiling"]["pairwise_cohen_kappa"] == 1.0
    assert "B agrees with the humans better" in res.output and "indistinguishable on this gold set" in res.output
    md = (out / "calibration.md").read_text()
    assert "## Prompt versions: paired comparisons" in md and "## Conclusions" in md
    # a rerun reads every verdict from the cache: no HTTP call, same report
    calls = judges.calls()
    _run(
        "--gold", str(gold), "--judge", "openai:smart", "--rubrics", str(folders["A"]), "--against", str(folders["B"]),
        "--against", str(folders["A-copy"]), "--out", str(tmp_path / "again"), "--cache", str(tmp_path / "cache.sqlite3"),
    )  # fmt: skip
    assert judges.calls() == calls
    assert (tmp_path / "again" / "calibration.md").read_text() == md


def test_a_small_difference_names_the_items_needed(tmp_path):
    from calibration import mcnemar_items_needed

    size = mcnemar_items_needed(only_a=3, only_b=7, n=100)
    # Connor (1987): psi = 0.10, delta = 0.04 -> (1.95996 * sqrt(0.1) + 0.84162 * sqrt(0.0984))^2 / 0.0016
    assert size.items_needed == 489
    assert mcnemar_items_needed(4, 4, 100).items_needed is None


def test_few_shot_tuning_helps_on_test_and_the_tuned_folder_grades(tmp_path, folders, judges):
    gold = write_gold(tmp_path / "gold.jsonl", n_questions=80)
    out = tmp_path / "tuned"
    _run("--gold", str(gold), "--judge", "openai:smart", "--rubrics", str(folders["A"]), "--few-shot", "4", "--out", str(out), "--no-cache")
    data = json.loads((out / "calibration.json").read_text())
    fs = data["few_shot"]
    result = fs["result"]
    assert result["k_values"] == [0, 1, 2, 4] and result["chosen_k"] >= 1
    assert result["dev_kappa"][str(result["chosen_k"])] > result["dev_kappa"]["0"]
    test = result["test"]
    assert test["kappa_b"] > test["kappa_a"] and test["only_a_right"] == 0 and test["only_b_right"] > 0 and test["mcnemar_p"] < 0.05
    train = {e["item_id"] for e in result["chosen_examples"]}
    assert all("approximately" in e["material"]["answer"] for e in result["chosen_examples"])  # drawn from train disagreements
    # the tuned folder is a rubric folder: its version is the one measured, and grading can use it
    folder = Path(fs["folder"])
    table = rubrics.rubric_set(folder)
    assert table["answer_correctness"].version == fs["tuned_version"] != fs["base_version"]
    assert {e.item_id for e in table["answer_correctness"].examples} == train
    check = runner.invoke(app, ["rubrics", "check", str(folder)])
    assert check.exit_code == 0, check.output


def test_probes_report_flip_rates_beside_agreement(tmp_path, judges):
    gold = write_gold(tmp_path / "gold.jsonl", n_questions=12)
    out = tmp_path / "probes"
    res = _run(
        "--gold", str(gold), "--judge", "openai:smart", "--judge", "openai:gullible",
        "--probes", "position,verbosity,injection,self-preference", "--out", str(out), "--no-cache",
    )  # fmt: skip
    data = json.loads((out / "calibration.json").read_text())
    probes = {p["probe"]: p for p in data["probes"]}
    assert list(probes) == ["position", "verbosity", "injection", "self-preference"]
    inj = probes["injection"]
    gullible, smart = inj["judges"]["openai:gullible"], inj["judges"]["openai:smart"]
    assert smart["flips_to_positive"] == 0 and gullible["flips_to_positive"] > 0
    assert gullible["to_positive_rate"]["value"] > 0 and gullible["to_positive_rate"]["ci_low"] is not None
    assert set(inj["variants"]) == {"grader_note", "forged_delimiter", "fake_verdict", "answer_only", "tool_output"}
    assert probes["verbosity"]["judges"]["openai:smart"]["n_flips"] == 0
    assert probes["self-preference"]["panel"]["n_flips"] == 0  # these judges ignore who wrote the answer
    assert probes["position"]["n_not_applicable"] == 24  # one gold answer per item: nothing to reorder
    assert "bias probes: flip rate" in res.output
    md = (out / "calibration.md").read_text()
    assert "## Bias probes" in md and "rater kappa" in md
    bad = runner.invoke(app, ["calibrate", "--gold", str(gold), "--judge", "openai:smart", "--probes", "wording", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown" in bad.output


def test_cheapest_panel_that_meets_the_target_is_written_as_a_config(tmp_path, folders, judges):
    gold = write_gold(tmp_path / "gold.jsonl", n_questions=80)
    config = tmp_path / "judges.toml"
    config.write_text(
        '[prices."openai:smart"]\ninput_per_1m = 10.0\noutput_per_1m = 30.0\n'
        '[prices."openai:smart-2"]\ninput_per_1m = 2.0\noutput_per_1m = 8.0\n'
        '[prices."openai:weak"]\ninput_per_1m = 0.1\noutput_per_1m = 0.4\n'
    )
    out = tmp_path / "panel"
    _run(
        "--gold", str(gold), "--judge", "openai:smart", "--judge", "openai:smart-2", "--judge", "openai:weak",
        "--rubrics", str(folders["B"]), "--target-kappa", "0.8", "--config", str(config), "--out", str(out), "--no-cache",
    )  # fmt: skip
    choice = json.loads((out / "calibration.json").read_text())["panel_choice"]
    chosen = choice["chosen"]
    assert chosen["judges"] == ["openai:smart-2"] and chosen["rule"] == "single"
    assert chosen["kappa"]["ci_low"] >= 0.8
    per_call = choice["costs"]["openai:smart-2"]
    assert per_call["basis"] == "measured" and per_call["input_tokens_per_call"] == 100  # the loopback reports 100 input / 20 output tokens
    assert chosen["usd_per_1000_cases"] == pytest.approx(1000 * (100 * 2.0 + 20 * 8.0) / 1e6)
    weak = next(c for c in choice["candidates"] if c["judges"] == ["openai:weak"])
    assert not weak["meets_target"] and weak["usd_per_1000_cases"] < chosen["usd_per_1000_cases"]
    text = (out / "panel.toml").read_text()
    config_file = tomllib.loads(text)
    assert config_file["default_panel"] == "calibrated" and config_file["panels"]["calibrated"] == {"judges": ["openai:smart-2"], "rule": "majority"}
    from judge.llm import JudgeSettings, build_panel

    panel = build_panel(JudgeSettings(config_path=out / "panel.toml", no_cache=True))
    assert panel is not None and [j.name for j in panel.judges] == ["openai:smart-2"]


def test_versions_need_live_judges(tmp_path, folders):
    gold = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "gold_small.jsonl"
    res = runner.invoke(app, ["calibrate", "--gold", str(gold), "--judge", "gpt-4o", "--against", str(folders["A"]), "--out", str(tmp_path)])
    assert res.exit_code == 3 and "need live judges" in res.output
