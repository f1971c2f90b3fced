"""Prompt calibration: paired comparison of two raters, few-shot selection without test leakage."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from calibration import GoldItem, GoldSet, HumanLabel, LabelCoder, compare_raters, compare_versions, few_shot_experiment, select_few_shot


def test_compare_raters_hand_case():
    coder = LabelCoder(["pass", "fail"])
    ref = ["pass"] * 10 + ["fail"] * 10
    a = ["pass"] * 10 + ["fail"] * 2 + ["pass"] * 8  # right on 12
    b = ["pass"] * 9 + ["fail"] + ["fail"] * 9 + ["pass"]  # right on 18
    c = compare_raters(ref, a, b, [str(i) for i in range(20)], coder, names=("v1", "v2"), n_boot=300, seed=0)
    # discordant: a right & b wrong on items 9 (pass) -> 1; b right & a wrong on items 12..18 -> 7
    assert (c.only_a_right, c.only_b_right) == (1, 7)
    assert c.mcnemar_p == pytest.approx(binomtest(1, 8, 0.5).pvalue)
    assert c.kappa_b > c.kappa_a and c.kappa_diff.value == pytest.approx(c.kappa_b - c.kappa_a, abs=1e-6)
    assert c.kappa_diff.ci_low <= c.kappa_diff.value <= c.kappa_diff.ci_high
    same = compare_raters(ref, a, a, [str(i) for i in range(20)], coder, n_boot=100)
    assert same.mcnemar_p is None and same.kappa_diff.ci_low == same.kappa_diff.ci_high == 0.0


def test_compare_versions_on_recorded_verdicts(thakur_gold):
    c = compare_versions(thakur_gold, "Llama3-70B", "GPT-4", n_boot=300)
    assert c.n == 3200 and c.kappa_b == pytest.approx(0.892418, abs=1e-6)
    assert c.kappa_diff.ci_low < c.kappa_diff.value < c.kappa_diff.ci_high
    with pytest.raises(ValueError, match="no recorded verdicts"):
        compare_versions(thakur_gold, "GPT-4", "GPT-5")


def _trap_gold() -> GoldSet:
    """60 questions x 4 answers; a quarter of the answers are 'traps' a naive judge gets wrong."""
    items = []
    for q in range(60):
        for a in range(4):
            i = q * 4 + a
            label = "correct" if (i * 7) % 3 else "incorrect"
            items.append(
                GoldItem(
                    id=f"i{i:03d}",
                    rubric="answer_correctness",
                    material={"question": f"q{q}", "gold_answers": ["x"], "answer": f"a{i}", "trap": a == 3},
                    human_labels=[HumanLabel(annotator="h", label=label)],
                    cluster=f"q{q}",
                )
            )
    return GoldSet(source="synthetic", format="jsonl", items=items, positive_label="correct")


class TrapJudge:
    """Right on ordinary items; wrong on traps unless a trap example is among the few-shot examples."""

    def __init__(self, gold: GoldSet):
        self.truth = {it.id: it.human_label for it in gold.items}
        self.calls: list[tuple[list[str], list[str]]] = []

    async def __call__(self, items, examples):
        self.calls.append(([it.id for it in items], [e.item_id for e in examples]))
        knows_traps = any(e.material.get("trap") for e in examples)
        out = {}
        for it in items:
            right = self.truth[it.id]
            wrong = "incorrect" if right == "correct" else "correct"
            out[it.id] = wrong if it.material["trap"] and not knows_traps else right
        return out


async def test_few_shot_experiment_uses_train_only_and_reports_test_once():
    gold = _trap_gold()
    judge = TrapJudge(gold)
    result = await few_shot_experiment(gold, judge, k_values=(2, 4), seed=0, n_boot=200)
    assert result.n_train + result.n_dev + result.n_test == 240
    assert result.chosen_k == 2  # the smallest k that fixes the traps on dev
    assert result.dev_kappa[2] == 1.0 and result.dev_kappa[0] < 1.0
    train_ids = set(judge.calls[0][0])
    for _, examples in judge.calls:
        assert set(examples) <= train_ids
    test_calls = [c for c in judge.calls if len(c[0]) == result.n_test and not set(c[0]) & train_ids]
    dev_ids = set(judge.calls[1][0])
    test_calls = [c for c in test_calls if not set(c[0]) & dev_ids]
    assert len(test_calls) == 2  # zero-shot and chosen, each once
    assert result.test.kappa_b == 1.0 and result.test.kappa_a < result.test.kappa_b
    assert result.test.only_b_right > 0 and result.test.only_a_right == 0


def test_select_few_shot_is_balanced_and_cluster_distinct():
    gold = _trap_gold()
    wrong = {it.id: ("incorrect" if it.human_label == "correct" else "correct") for it in gold.items}
    ex = select_few_shot(gold.items, wrong, 6, labels=["correct", "incorrect"], seed=1)
    assert len(ex) == 6
    assert sorted(e.label for e in ex) == ["correct"] * 3 + ["incorrect"] * 3
    clusters = {next(it.cluster_key for it in gold.items if it.id == e.item_id) for e in ex}
    assert len(clusters) == 6
    assert select_few_shot(gold.items, wrong, 6, labels=["correct", "incorrect"], seed=1) == ex
    none = select_few_shot(gold.items, {it.id: it.human_label for it in gold.items}, 4, labels=["correct", "incorrect"])
    assert none == []  # no disagreements, no examples


def _marker_gold() -> GoldSet:
    """40 answers over 10 questions: 'RIGHT-...' answers are correct, except traps ('RIGHT-TRAP-...').
    The gold is one the answer check's comparison cannot decide against ("right answer" vs "RIGHT-7"), so
    the judge's label stands (judge.core._evidence)."""
    items = []
    for i in range(40):
        trap = i % 4 == 3
        right = i % 3 != 0
        answer = "RIGHT-TRAP" if trap else ("RIGHT" if right else "WRONG")
        label = "incorrect" if trap or not right else "correct"
        items.append(
            GoldItem(
                id=f"m{i:02d}",
                rubric="answer_correctness",
                material={"question": f"question {i // 4}", "gold_answers": ["right answer"], "answer": f"{answer}-{i}"},
                human_labels=[HumanLabel(annotator="h", label=label)],
                cluster=f"q{i // 4}",
            )
        )
    return GoldSet(source="synthetic", format="jsonl", items=items, positive_label="correct")


async def test_few_shot_through_the_real_panel(loopback_openai):
    """A scripted model over the OpenAI wire: says 'correct' for RIGHT answers, and learns the trap
    only when a trap example appears in the system message the FewShotRubric renders."""
    import rubrics
    from calibration import FewShotRubric, panel_judge_run
    from judge.llm import JudgeSettings, build_panel
    from tests.servers import Reply

    def responder(body):
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        naive = "RIGHT" in user
        if "RIGHT-TRAP" in user and "RIGHT-TRAP" in system:
            naive = False
        return Reply("correct" if naive else "incorrect")

    loopback_openai.set_responder("scripted", responder)
    versions: set[str] = set()

    def make(table):
        versions.add(table["answer_correctness"].version)
        return build_panel(JudgeSettings(judges=["openai:scripted"], no_cache=True), table)

    run = panel_judge_run(make, rubrics.RUBRICS)
    result = await few_shot_experiment(_marker_gold(), run, k_values=(2,), seed=0, n_boot=100)
    assert result.chosen_k == 2 and result.dev_kappa[2] == 1.0 and result.dev_kappa[0] < 1.0
    assert result.test.kappa_b == 1.0 and result.test.only_a_right == 0
    assert len(versions) == 2 and rubrics.RUBRICS["answer_correctness"].version in versions
    ex = FewShotRubric(rubrics.RUBRICS["answer_correctness"], ())
    assert ex.render({"question": "q", "gold_answers": ["a"], "answer": "a"}) == rubrics.RUBRICS["answer_correctness"].render(
        {"question": "q", "gold_answers": ["a"], "answer": "a"}
    )
