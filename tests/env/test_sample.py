"""The committed sample benchmark: composition, gold-by-construction metadata, reproducibility."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from judge import FailureStage, canonical_json
from pipelines.env import list_environments, load_environment
from tests.env.conftest import REPO

STAGES = {s.value for s in FailureStage}


def test_domains_and_tool_counts():
    envs = {n: load_environment(n) for n in list_environments()}
    assert len(envs) >= 5
    assert sum(len(e.tools) for e in envs.values()) >= 150
    assert max(len(e.tools) for e in envs.values()) >= 100
    for env in envs.values():
        assert 15 <= len(env.docs) <= 60
        assert any(t.source == "rag" for t in env.tools) and any(t.source == "api" for t in env.tools)
    assert any(re.search(r"[\u4e00-\u9fff]", d["text"]) for d in envs["flights"].docs)
    assert sum(1 for e in envs.values() for t in e.tools if t.side_effect == "write") >= 8


def test_tasks_cover_the_four_capabilities(sample_tasks):
    caps = Counter(t.metadata.capability for t in sample_tasks.values())
    assert set(caps) == {"1", "2", "3", "4"} and min(caps.values()) >= 20
    chain_lengths = {sum(len(turn.reference_calls) for turn in t.turns) for t in sample_tasks.values() if t.metadata.capability == "1"}
    assert min(chain_lengths) == 1 and max(chain_lengths) == 12  # VAKRA's capability 1 spans 1-12 calls
    for task in sample_tasks.values():
        assert task.environment in list_environments()
        assert task.metadata.domain == task.environment
        cap = task.metadata.capability
        calls = [c for turn in task.turns for c in turn.reference_calls]
        assert all(turn.gold_answers for turn in task.turns)
        assert all(c.has_expected_output for c in calls)
        if cap == "1":
            assert 1 <= len(calls) <= 12
            assert len(calls) == 1 or any("$" in canonical_json(c.arguments) for c in calls[1:])  # chained by labels
        if cap == "2":
            assert len(task.tools) >= 100
        if cap == "3":
            assert 1 <= task.metadata.hop_count <= 5 and task.metadata.hop_count == len(calls)
        if cap == "4":
            assert task.metadata.hop_types and set(task.metadata.hop_types) <= {"API", "RAG"}
            assert task.metadata.policy_condition in {"no_policy", "policy_same_answer", "policy_changes_answer"}
            assert (task.policy is None) == (task.metadata.policy_condition == "no_policy")
            if task.policy is not None:
                assert task.policy.text and task.policy.has_rules
    c4 = [t for t in sample_tasks.values() if t.metadata.capability == "4"]
    assert {tuple(t.metadata.hop_types) for t in c4} >= {("RAG",), ("API",), ("API", "RAG"), ("RAG", "API")}
    assert {t.metadata.policy_condition for t in c4} == {"no_policy", "policy_same_answer", "policy_changes_answer"}
    assert sum(1 for t in c4 if len(t.turns) > 1) >= 15
    writes = [t for t in sample_tasks.values() if any(t.is_write(c.name) for turn in t.turns for c in turn.reference_calls)]
    assert len(writes) >= 5


def test_expected_output_is_what_the_environment_returns(sample_tasks):
    for task in list(sample_tasks.values())[::7]:
        session = load_environment(task.environment).session()
        for turn in task.turns:
            for call in turn.reference_calls:
                assert session.execute(call.name, call.arguments, label=call.label or call.id).result == call.expected_output


def test_trajectories_profiles_and_gold_labels(sample_tasks, sample_trajectories):
    assert len(sample_trajectories) >= 300
    ids = [t.trajectory_id for t in sample_trajectories]
    assert len(ids) == len(set(ids))
    profiles = Counter(t.metadata["profile"] for t in sample_trajectories)
    assert set(profiles) == {
        "careful",
        "wrong_tool",
        "misnamed_args",
        "wrong_values",
        "wrong_answer",
        "ungrounded",
        "policy_violator",
        "alternative_path",
        "retrier",
        "duplicate_writer",
        "switcher",
        "flaky",
        "persistent",
        "looper",
        "stubborn",
        "parallel",
    }
    for traj in sample_trajectories:
        meta = traj.metadata
        assert meta["expected_verdict"] in {"pass", "fail"}
        assert meta["expected_failure_stage"] in STAGES
        assert (meta["expected_verdict"] == "pass") == (meta["expected_failure_stage"] == "none")
        task = sample_tasks[traj.task_id]
        assert [t.turn_id for t in traj.turns] == [t.turn_id for t in task.turns]
        if meta["profile"] == "policy_violator":
            assert task.policy is not None and meta["expected_failure_stage"] == "policy"
        if meta["profile"] == "retrier":
            assert any(not s.ok for s in traj.steps) and meta["expected_verdict"] == "pass"
        steps = traj.steps
        assert all(st.round is not None for st in steps)  # every scripted step records its model message
        rounds = Counter(st.round for st in steps)
        if meta["profile"] == "parallel":
            assert max(rounds.values()) >= 2  # independent calls issued together
        else:
            assert max(rounds.values(), default=1) == 1  # one call per message
        signatures = [(st.name, canonical_json(st.arguments), st.status) for st in steps]
        if meta["profile"] in ("switcher", "flaky"):
            k = next(k for k, st in enumerate(steps) if st.fault is not None)
            assert steps[k + 1].fault is None and steps[k + 1].ok
            assert (steps[k + 1].name == steps[k].name) == (meta["profile"] == "flaky")
        else:
            assert all(st.fault is None for st in steps)
        if meta["profile"] in ("looper", "stubborn"):
            assert max(Counter(signatures).values()) >= 3  # the same call made three times
        if meta["profile"] == "persistent":
            assert sum(not st.ok for st in steps) == 2 and meta["expected_verdict"] == "pass"
        if meta["profile"] == "ungrounded":
            claim_numbers = re.findall(r"\d+", str(traj.final_answer if len(traj.turns) == 1 else [t.final_answer for t in traj.turns]))
            outputs = canonical_json([s.result for s in traj.steps])
            assert any(n not in outputs for n in claim_numbers)


def test_committed_data_is_small():
    total = sum(p.stat().st_size for p in (REPO / "data").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert total < 5 * 1024 * 1024


def test_build_is_deterministic_and_matches_the_committed_files(tmp_path: Path):
    from data.build.__main__ import main

    main(tmp_path)
    for rel in ("sample/tasks.jsonl", "sample/trajectories.jsonl", "envs/retail/tools.json", "envs/flights/docs.jsonl", "envs/olympics/db.sqlite"):
        assert (tmp_path / rel).read_bytes() == (REPO / "data" / rel).read_bytes(), rel
