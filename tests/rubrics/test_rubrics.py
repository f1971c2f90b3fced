"""Every rubric: schema/label maps agree, version is a stable content hash, material errors are
clear, and each renders and parses a verdict end to end through the real SDKs over HTTP."""

from __future__ import annotations

import re
from typing import Literal

import pytest

import rubrics
from judge import JudgeRequest, Outcome
from judge.llm import JudgeVerdict, Rubric
from rubrics import MaterialError, TemplateRubric
from rubrics.answer_correctness import AnswerCorrectnessVerdict
from tests.judge.helpers import decide, make_panel
from tests.judge.test_injection import BENIGN
from tests.servers import Reply

EXPECTED = {
    "answer_correctness": {"correct": (1.0, Outcome.MATCH), "incorrect": (-1.0, Outcome.MISMATCH), "missing": (0.0, Outcome.MISMATCH)},
    "trajectory_sufficiency": {"sufficient": (1.0, Outcome.MATCH), "insufficient": (0.0, Outcome.MISMATCH)},
    "groundedness": {
        "supported": (1.0, Outcome.MATCH),
        "partially": (0.5, Outcome.MISMATCH),
        "unsupported": (0.0, Outcome.MISMATCH),
        "unsure": (0.0, Outcome.MISMATCH),
    },
    "policy_adherence": {"compliant": (1.0, Outcome.MATCH), "violated": (0.0, Outcome.MISMATCH)},
    "step_equivalence": {"equivalent": (1.0, Outcome.MATCH), "not_equivalent": (0.0, Outcome.MISMATCH)},
    "open_ended": {"meets": (1.0, Outcome.MATCH), "partially_meets": (0.5, Outcome.MISMATCH), "fails": (0.0, Outcome.MISMATCH)},
}


def test_registry_names():
    assert rubrics.rubric_names() == sorted(EXPECTED)
    with pytest.raises(KeyError, match="unknown rubric 'nope'"):
        rubrics.get_rubric("nope")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_label_maps_schema_and_protocol(name):
    rubric = rubrics.get_rubric(name)
    assert isinstance(rubric, Rubric)
    assert {label: (rubric.label_scores[label], rubric.label_outcomes[label]) for label in rubric.labels} == EXPECTED[name]
    props = rubric.verdict_schema.model_json_schema()["properties"]
    assert props["label"]["enum"] == list(EXPECTED[name])
    assert {"rationale", "evidence", "confidence"} <= set(props)
    assert props["confidence"]["minimum"] == 0 and props["confidence"]["maximum"] == 1


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_version_is_a_stable_content_hash(name):
    rubric = rubrics.get_rubric(name)
    assert re.fullmatch(r"[0-9a-f]{16}", rubric.version)
    clone = TemplateRubric(**{f: getattr(rubric, f) for f in ("name", "template", "verdict_schema", "label_scores", "label_outcomes", "required", "optional")})
    assert clone.version == rubric.version
    changed = TemplateRubric(
        **{
            **{f: getattr(rubric, f) for f in ("name", "template", "verdict_schema", "label_outcomes", "required", "optional")},
            "label_scores": dict.fromkeys(rubric.label_scores, 0.0),
        }
    )
    assert changed.version != rubric.version


def test_versions_differ_between_rubrics():
    versions = [r.version for r in rubrics.RUBRICS.values()]
    assert len(set(versions)) == len(versions)


def test_label_maps_must_match_schema():
    class TwoLabels(JudgeVerdict):
        label: Literal["yes", "no"]

    with pytest.raises(ValueError, match="do not match schema labels"):
        TemplateRubric(
            name="x", template="answer_correctness.j2", verdict_schema=TwoLabels, label_scores={"yes": 1.0}, label_outcomes={"yes": Outcome.MATCH}, required=()
        )


def test_missing_material_is_named_and_extra_material_is_rendered():
    rubric = rubrics.get_rubric("answer_correctness")
    with pytest.raises(MaterialError, match="lacks gold_answers"):
        rubric.render({"question": "q", "answer": "a"})
    _, user = rubric.render({"question": "q", "gold_answers": ["1"], "answer": "a", "units": "USD"})
    assert '<data name="units">"USD"</data>' in user["content"]


def test_optional_material_may_be_absent():
    material = dict(BENIGN["trajectory_sufficiency"])
    material.pop("gold_answers")
    _, user = rubrics.get_rubric("trajectory_sufficiency").render(material)
    assert '<data name="gold_answers">null</data>' in user["content"]


def test_answer_correctness_has_its_own_few_shot_examples():
    system, _ = rubrics.get_rubric("answer_correctness").render(BENIGN["answer_correctness"])
    examples = re.findall(r"^\d+\. Question: .* -> (correct|incorrect|missing)", system["content"], re.M)
    assert len(examples) >= 6 and set(examples) == {"correct", "incorrect", "missing"}


def test_verdict_schema_reads_an_off_scale_confidence_but_rejects_a_label_it_does_not_allow():
    """The confidence is advisory: read by judge.llm._reading's rule (78 -> 0.78, 150 -> none),
    noted; the label is what counts and is never guessed at."""
    from judge.llm._reading import repairs_of

    verdict = AnswerCorrectnessVerdict(label="correct", rationale="r", confidence=78)
    assert verdict.confidence == 0.78 and repairs_of(verdict) == ["confidence: 78 is outside 0..1, read as a percentage (0.78)"]
    verdict = AnswerCorrectnessVerdict(label="correct", rationale="r", confidence=150)
    assert verdict.confidence is None and repairs_of(verdict) == ["confidence: 150 is on no scale from 0 to 1 or 100: no confidence"]
    assert repairs_of(AnswerCorrectnessVerdict(label="correct", rationale="r", confidence=0.4)) == []
    with pytest.raises(ValueError):
        AnswerCorrectnessVerdict(label="probably", rationale="r", confidence=0.5)


@pytest.mark.parametrize("judge,model", [("openai:judge-a", "judge-a"), ("anthropic:judge-b", "judge-b")])
@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_every_rubric_end_to_end_over_http(server, tmp_path, name, judge, model):
    rubric = rubrics.get_rubric(name)
    label = rubric.labels[-1]  # a non-default label, so the parse is really exercised
    server.set_default(model, Reply(label, rationale=f"graded {name}", evidence=("tool_outputs[0]",), confidence=0.7))
    [d] = await decide(make_panel(tmp_path, [judge]), [JudgeRequest(key=f"t/1/{name}", rubric=name, material=BENIGN[name])])
    assert (d.label, d.outcome, d.rubric, d.rubric_version) == (label, rubric.label_outcomes[label], name, rubric.version)
    [vote] = d.votes
    assert (vote.score, vote.rationale, vote.evidence, vote.confidence) == (rubric.label_scores[label], f"graded {name}", ["tool_outputs[0]"], 0.7)
    body = server.requests[0].body
    tool_schema = body["tools"][0]["function"]["parameters"] if judge.startswith("openai") else body["tools"][0]["input_schema"]
    assert tool_schema["properties"]["label"]["enum"] == rubric.labels


def test_material_contracts_come_from_the_typed_models_and_their_samples_validate():
    from judge import MATERIAL_FOR_RUBRIC, material_keys
    from rubrics import CONTRACTS

    assert {c.rubric for c in CONTRACTS.values()} == set(MATERIAL_FOR_RUBRIC)
    for contract in CONTRACTS.values():
        model = MATERIAL_FOR_RUBRIC[contract.rubric]
        assert (contract.required, contract.optional) == material_keys(model)
        model.model_validate(contract.sample)  # the sample rubric files are tested with is real material
