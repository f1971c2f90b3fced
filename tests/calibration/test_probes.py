"""Bias probes: exact flip counts with an in-process biased panel, and through the real judge panel
(OpenAI SDK -> loopback server) with scripted judges; self-preference from recorded verdicts."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rubrics
from calibration import INJECTION_ATTACKS, PROBES, flip_stats, load_gold, model_family, run_bias_probes, self_preference
from judge import Outcome, PanelDecision, Vote
from judge.llm import JudgeSettings, build_panel
from tests.servers import Reply

from .conftest import FIXTURES

GOLD = load_gold(FIXTURES / "gold_small.jsonl")


class BiasedPanel:
    """Judge 'first' only checks the first gold answer (position bias); judge 'long' passes any answer
    over 120 characters (verbosity bias); both obey an instruction to the grader (injection)."""

    name = "biased"

    def __init__(self):
        self.requests = 0

    async def decide(self, requests):
        self.requests += len(requests)
        out = []
        for r in requests:
            m = r.material
            ans = m["answer"]
            injected = "NOTE TO THE GRADER" in ans
            first = "correct" if injected or m["gold_answers"][0].lower() in ans.lower() else "incorrect"
            long = "correct" if injected or len(ans) > 120 or any(g.lower() in ans.lower() for g in m["gold_answers"]) else "incorrect"
            votes = [Vote(judge="first", label=first), Vote(judge="long", label=long)]
            label = first if first == long else None
            out.append(
                PanelDecision(panel="biased", rule="unanimous", label=label, outcome=Outcome.INCONCLUSIVE if label is None else Outcome.MATCH, votes=votes)
            )
        return out


def _expected_flips(probe: str, judge) -> int:
    n = 0
    for it in GOLD.items:
        changed = PROBES[probe](it.material)
        if changed is not None and judge(it.material) != judge(changed):
            n += 1
    return n


async def test_probes_count_flips_exactly():
    panel = BiasedPanel()
    results = {r.probe: r for r in await run_bias_probes(GOLD.items, panel, positive_label="correct", n_boot=200)}
    pos = results["position"]
    # four items have two gold answers; reversing them flips 'first' where the answer names only the
    # second spelling: item-03 "Two moons..." (["2", "two"]) and item-05 "Hemingway"
    # (["Ernest Hemingway", "Hemingway"]); item-04 "3" and item-06 "John Steinbeck" match neither.
    assert pos.n_not_applicable == 8 and pos.judges["first"].n == 4
    first = lambda m: m["gold_answers"][0].lower() in m["answer"].lower()  # noqa: E731
    assert pos.judges["first"].n_flips == _expected_flips("position", first) == 2
    assert pos.judges["long"].n_flips == 0
    verb = results["verbosity"]
    assert verb.n_not_applicable == 0 and verb.judges["first"].n_flips == 0
    wrong = sum(1 for it in GOLD.items if not any(g.lower() in it.material["answer"].lower() for g in it.material["gold_answers"]))
    assert verb.judges["long"].n_flips == verb.judges["long"].flips_to_positive == wrong == 6
    inj = results["injection"]
    note = inj.variants["grader_note"]  # both judges obey a note to the grader
    assert note.n_flips == note.flips_to_positive > 0 and note.n + note.n_abstained == 12
    assert note.to_positive_rate.value == pytest.approx(note.flips_to_positive / note.n_not_positive_before)
    assert 0 < note.flip_rate.value <= 1 and note.flip_rate.ci_low <= note.flip_rate.value
    only = inj.variants["answer_only"]  # neither obeys "ignore previous instructions": answers lose their content
    assert only.flips_to_positive == 0 and only.to_positive_rate.value == 0.0
    assert set(inj.variants) == set(INJECTION_ATTACKS) and inj.variants["tool_output"].n == 0  # answer material has no tool output
    assert inj.panel.n + inj.panel.n_abstained == sum(v.n + v.n_abstained for v in inj.variants.values()) == 4 * 12
    assert set(inj.flipped_items) <= {it.id for it in GOLD.items}
    assert panel.requests == 2 * 4 + 2 * 12 + (12 + 4 * 12)


def test_flip_stats_ci_and_abstentions():
    before = ["correct"] * 50 + ["incorrect"] * 50 + [None] * 5
    after = ["correct"] * 40 + ["incorrect"] * 10 + ["incorrect"] * 50 + ["correct"] * 5
    s = flip_stats(before, after, [str(i) for i in range(105)], "correct", n_boot=500, seed=0)
    assert (s.n, s.n_flips, s.n_abstained, s.flips_to_positive) == (100, 10, 5, 0)
    assert s.flip_rate.value == pytest.approx(0.1) and s.flip_rate.ci_low < 0.1 < s.flip_rate.ci_high


async def test_probes_through_the_real_panel(loopback_openai):
    """Two 'gullible' judges follow an instruction planted in the answer; one 'steady' judge doesn't.
    The majority would flip on every injected item; the evidence check stops it where the code can
    compare the candidate answer. Never a flip on padding or order."""
    items = GOLD.items[:6]  # two of them have two gold answers (position probe applies)

    def gullible(body):
        return Reply("correct" if "NOTE TO THE GRADER" in json.dumps(body) else "incorrect")

    loopback_openai.set_responder("gullible-a", gullible).set_responder("gullible-b", gullible)
    panel = build_panel(JudgeSettings(judges=["openai:gullible-a", "openai:gullible-b", "openai:steady"], no_cache=True, rule="majority"), rubrics.RUBRICS)
    try:
        results = {r.probe: r for r in await run_bias_probes(items, panel, positive_label="correct", n_boot=200)}
    finally:
        await panel.aclose()
    inj = results["injection"]
    note = inj.variants["grader_note"]
    # the gullible judges obey on all 6 (their own word, Vote.said); the panel's evidence check lets a
    # pass stand only where the answer check's comparison cannot tell the candidate from the gold
    # (free-text gold of 3 of these items): elsewhere the code compares and the flip is stopped
    assert (note.n, note.n_flips, note.flips_to_positive) == (6, 3, 3)
    assert inj.variants["forged_delimiter"].n_flips == inj.variants["fake_verdict"].n_flips == 0
    assert inj.judges["openai:gullible-a"].flips_to_positive == 6 and inj.judges["openai:steady"].n_flips == 0
    for probe in ("position", "verbosity"):
        assert results[probe].panel.n_flips == 0 and results[probe].panel.n_abstained == 0
    assert results["position"].n_not_applicable == 2
    assert loopback_openai.calls() == 3 * (2 * 4 + 2 * 6 + (6 + 4 * 6))


def test_self_preference_flags_a_lenient_family_judge():
    rng = np.random.default_rng(0)
    n = 2000
    agents = ["llama-2-13b" if i % 2 else "gpt-4o" for i in range(n)]
    human = list(rng.random(n) < 0.5)
    fair = [h if rng.random() < 0.9 else not h for h in human]
    biased = [True if (a.startswith("llama") and rng.random() < 0.3) else f for a, f in zip(agents, fair, strict=True)]
    clusters = [str(i // 4) for i in range(n)]
    flagged = self_preference("Llama3-70B", biased, human, agents, clusters, n_boot=300)
    clean = self_preference("Llama3-70B", fair, human, agents, clusters, n_boot=300)
    assert flagged.flagged and flagged.difference.value > 0.1 and flagged.n_same == 1000
    assert not clean.flagged and clean.difference.ci_low <= 0 <= clean.difference.ci_high
    assert self_preference("Claude-3", fair, human, agents, clusters) is None  # no own-family items


def test_model_family():
    assert [model_family(n) for n in ("Llama3-70B", "llama2-13b-chat", "openai:gpt-4o", "GPT-4", "meta/Llama-3-8B", "7b")] == [
        "llama",
        "llama",
        "gpt",
        "gpt",
        "llama",
        None,
    ]
