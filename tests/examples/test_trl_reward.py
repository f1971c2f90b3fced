"""``examples/trl_reward.py``: TRL's reward-function call (``reward_func(prompts=..., completions=...,
**dataset_columns)``) on GRPO-style groups of generated conversations gives the rewards of the
CLI's verdicts and scores for the same conversations."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from bench.conversations import conversations
from pipelines.run import GradeOptions, run_grading

ROOT = Path(__file__).resolve().parents[2]
GROUP = 3


def _example():
    spec = importlib.util.spec_from_file_location("trl_reward", ROOT / "examples" / "trl_reward.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _expected(line: dict) -> float | None:
    if line["verdict"] == "pass":
        return 1.0
    if line["verdict"] == "unresolved":
        return None
    if line["verdict"] == "error":
        return 0.0
    return 0.5 * (line.get("scores", {}).get("weighted_total") or 0.0)


def test_the_trl_reward_function_gives_the_cli_verdicts_rewards(tmp_path):
    convs = list(conversations(10, seed=5))
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(c.task_episode) + "\n" for c in convs))
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(c.trajectory) + "\n" for c in convs))
    run_grading(GradeOptions(tasks=tmp_path / "tasks.jsonl", trajectories=tmp_path / "trajectories.jsonl", out=tmp_path / "run", overwrite=True))
    cli = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]

    prompts, completions, tasks, expected = [], [], [], []
    for conv, line in zip(convs, cli, strict=True):
        messages = conv.trajectory["messages"]
        first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
        for _ in range(GROUP):  # a GRPO group: one prompt, several completions, the task column repeated
            prompts.append(messages[: first_user + 1])
            completions.append(messages[first_user + 1 :])
            tasks.append(json.dumps(conv.task_episode))
            expected.append(_expected(line))
    reward_fn = _example().make_reward_fn()
    rewards = reward_fn(prompts=prompts, completions=completions, task=tasks, completion_ids=[[0]] * len(prompts))
    assert rewards == expected
    assert len(set(rewards)) > 1  # passes and failures: the reward separates them


def test_the_reward_function_names_a_missing_task_column():
    reward_fn = _example().make_reward_fn()
    with pytest.raises(ValueError, match="'task' column"):
        reward_fn(prompts=[[{"role": "user", "content": "hi"}]], completions=[[{"role": "assistant", "content": "hello"}]])
