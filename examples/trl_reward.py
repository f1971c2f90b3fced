"""A TRL-style reward function that grades tool-calling rollouts with trajectory-judge, in process.

TRL's ``GRPOTrainer`` calls each reward function as
``reward_func(prompts=prompts, completions=completions, **reward_kwargs)``, where ``reward_kwargs``
holds every other column of the dataset, one value per completion (recent versions add
``completion_ids`` and ``trainer_state``), and expects one float per completion (``None`` where a
reward does not apply). verl-style loops that hand over batches of prompts and completions fit
the same shape. With conversational datasets a prompt is a list of messages (system and user
turns) and a completion the messages the policy produced (assistant messages with ``tool_calls``,
and the ``tool`` results), in the OpenAI Chat Completions form.

The dataset carries one extra column, ``task``: the native task (``judge.Task``'s JSON: the
reference calls, the gold answer, the policy), as a dict or a JSON string. Each completion is
joined to its prompt as one OpenAI transcript and graded by ``pipelines.grade_trajectories``:
the deterministic waterfall of ``judge grade``, no file written, no LLM judge asked, each distinct
task read once per batch (a GRPO group shares its prompt's task).

The reward (``default_reward``): 1.0 for a pass; otherwise the tool-chain score
(``scores.weighted_total``, 0..1) halved, so a failing rollout that made the right calls still
ranks above one that did not; 0.0 for an input error. An ``unresolved`` rollout (a check the rules
cannot decide and that would need a judge) gets ``None``: TRL leaves it out of that reward's
mean. Pass ``reward=`` to map results differently.

Use::

    from examples.trl_reward import make_reward_fn
    trainer = GRPOTrainer(model=..., reward_funcs=[make_reward_fn()], train_dataset=dataset, ...)

Run ``python examples/trl_reward.py`` for a demonstration on generated conversations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from judge import TrajectoryResult
from pipelines import grade_trajectories
from pipelines.config import GradingConfig


def default_reward(result: TrajectoryResult) -> float | None:
    if result.verdict == "pass":
        return 1.0
    if result.verdict == "unresolved":
        return None
    if result.verdict == "error":
        return 0.0
    return 0.5 * (result.scores.weighted_total or 0.0)


def _task_of(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _messages(value: Any) -> list[dict[str, Any]]:
    """A conversational prompt or completion as messages (a plain string is one message)."""
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    return list(value)


def make_reward_fn(
    config: GradingConfig | None = None, *, reward: Callable[[TrajectoryResult], float | None] = default_reward, task_column: str = "task"
) -> Callable[..., list[float | None]]:
    """A ``reward_fn(prompts, completions, **kwargs)`` grading each completion against its task."""

    def trajectory_judge_reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        tasks = kwargs.get(task_column)
        if tasks is None:
            raise ValueError(f"the dataset needs a {task_column!r} column: the native task each prompt is graded against")
        if not len(prompts) == len(completions) == len(tasks):
            raise ValueError(f"{len(prompts)} prompts, {len(completions)} completions and {len(tasks)} tasks: one of each per completion")
        pairs = []
        for i, (prompt, completion, task) in enumerate(zip(prompts, completions, tasks, strict=True)):
            task = _task_of(task)
            task_id = task.get("task_id") if isinstance(task, dict) else None
            pairs.append((task, {"task_id": task_id, "trajectory_id": f"{task_id}/{i}", "messages": _messages(prompt) + _messages(completion)}))
        return [reward(r) for r in grade_trajectories(pairs, config, fmt="openai")]

    return trajectory_judge_reward


def _demo(n: int = 8, group: int = 4) -> None:  # pragma: no cover - a demonstration
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.conversations import conversations

    prompts, completions, tasks = [], [], []
    for conv in conversations(n):
        messages = conv.trajectory["messages"]
        first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
        for _ in range(group):  # a GRPO group: the same prompt (and task) per completion
            prompts.append(messages[: first_user + 1])
            completions.append(messages[first_user + 1 :])
            tasks.append(json.dumps(conv.task_episode))
    rewards = make_reward_fn()(prompts=prompts, completions=completions, task=tasks)
    print(f"{len(rewards)} completions graded; rewards: {rewards}")


if __name__ == "__main__":  # pragma: no cover
    _demo()
