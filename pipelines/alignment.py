"""Which part of a trajectory answers which turn of its task: the one turn-alignment rule that
grading and replay share.

Modes (``--turns``, config ``[grading] turns``):
- ``auto`` (default): a task that defines one turn (one goal) is graded as one *episode*, however
  many user messages the dialogue holds (a user simulator, a person following up); a task that
  defines several turns is graded per message.
- ``episode``: every dialogue is one episode. A multi-turn task is collapsed too: all its reference
  calls (dependencies kept), the last turn's gold answer, every turn's criteria and required content.
- ``per-message``: each user message answers one task turn: by turn id when every id of the
  trajectory is one of the task's, else in order. More user messages than task turns is an error.

An episode's calls are all the agent's calls in order, its final answer is the agent's last message
(the last final answer when no message text was recorded), and every agent message counts for
required content.

Rules over the dialogue's order (a write confirmed by the user) work from ``trajectory.turns``, each
opened by one user message: ``dialogue_turn_of_steps`` says in which of them each graded step was
made, whichever mode grades.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from judge import BadInputError, Task, Trajectory, TrajectoryTurn, Turn

TurnsMode = Literal["auto", "episode", "per-message"]
TURNS_MODES: tuple[str, ...] = ("auto", "episode", "per-message")


class TurnAlignmentError(BadInputError):
    """The trajectory's turns cannot be matched to the task's (per-message grading)."""


class Alignment(msgspec.Struct, frozen=True):
    """Task turns paired with the trajectory turn that answers each (None: never reached)."""

    pairs: list[tuple[Turn, TrajectoryTurn | None]]
    episode: bool  # the dialogue was merged into one episode


def align(task: Task, trajectory: Trajectory, mode: TurnsMode = "auto") -> Alignment:
    if mode == "episode" or (mode == "auto" and len(task.turns) == 1):
        turn = task.turns[0] if len(task.turns) == 1 else collapse_task_turns(task)
        return Alignment([(turn, merge_dialogue(trajectory))], episode=len(trajectory.turns) > 1 or len(task.turns) > 1)
    return Alignment(_per_message(task, trajectory), episode=False)


def _per_message(task: Task, trajectory: Trajectory) -> list[tuple[Turn, TrajectoryTurn | None]]:
    task_ids = [t.turn_id for t in task.turns]
    traj_ids = [t.turn_id for t in trajectory.turns]
    if len(trajectory.turns) > len(task.turns):
        raise TurnAlignmentError(
            f"the trajectory has {len(trajectory.turns)} user turns but task {task.task_id!r} defines {len(task.turns)} "
            f"(task turns: {task_ids}); grade the dialogue as one episode with --turns episode"
        )
    if set(traj_ids) <= set(task_ids) and len(set(traj_ids)) == len(traj_ids):
        by_id = {t.turn_id: t for t in trajectory.turns}
        return [(turn, by_id.get(turn.turn_id)) for turn in task.turns]
    ordered: list[TrajectoryTurn | None] = [*trajectory.turns, *([None] * (len(task.turns) - len(trajectory.turns)))]
    return list(zip(task.turns, ordered, strict=True))


def merge_dialogue(trajectory: Trajectory) -> TrajectoryTurn:
    """The whole dialogue as one turn (a single-turn trajectory is returned as it is)."""
    if len(trajectory.turns) == 1:
        return trajectory.turns[0]
    said: list[Any] = []  # everything the agent said, in order (a final answer not among the messages last)
    for turn in trajectory.turns:
        said.extend(turn.agent_messages)
        if turn.final_answer is not None and (not turn.agent_messages or turn.agent_messages[-1] != turn.final_answer):
            said.append(turn.final_answer)
    first = trajectory.turns[0]
    recorded = trajectory.turns[-1].answer_recorded  # the episode's answer is its last turn's: unknown when that was not recorded
    return TrajectoryTurn.model_construct(
        turn_id=first.turn_id,
        query=first.query,
        steps=[s for t in trajectory.turns for s in t.steps],
        final_answer=said[-1] if said and recorded else None,
        agent_messages=[m for m in said if isinstance(m, str)],
        answer_recorded=recorded,
    )


def dialogue_turn_of_steps(trajectory: Trajectory, graded: TrajectoryTurn) -> list[int] | None:
    """For each step of ``graded`` (one of ``trajectory.turns``, per message; or the merged episode
    ``merge_dialogue(trajectory)``, whose steps are every turn's in order), the index in
    ``trajectory.turns`` of the turn it was made in. None when ``graded`` is neither (the caller
    cannot place its steps in the dialogue)."""
    for k, turn in enumerate(trajectory.turns):
        if turn is graded:
            return [k] * len(turn.steps)
    flat = [(k, step) for k, turn in enumerate(trajectory.turns) for step in turn.steps]
    if len(flat) == len(graded.steps) and all(step is mine or step == mine for (_, step), mine in zip(flat, graded.steps)):
        return [k for k, _ in flat]
    equal = [k for k, turn in enumerate(trajectory.turns) if turn == graded]  # a copy of one turn (not the same object)
    return [equal[0]] * len(graded.steps) if len(equal) == 1 else None


def collapse_task_turns(task: Task) -> Turn:
    """A multi-turn task as one episode turn. Reference call ids that repeat across turns are
    prefixed with their turn id so dependencies stay unambiguous."""
    seen: dict[str, int] = {}
    for turn in task.turns:
        for call in turn.reference_calls:
            if call.id is not None:
                seen[call.id] = seen.get(call.id, 0) + 1
    calls = []
    for turn in task.turns:
        local = {c.id for c in turn.reference_calls if c.id is not None}

        def rename(cid: str, turn_id: str = turn.turn_id, local: set[str] = local) -> str:
            return f"{turn_id}:{cid}" if seen.get(cid, 0) > 1 and cid in local else cid

        for call in turn.reference_calls:
            update: dict[str, Any] = {"depends_on": [rename(d) for d in call.depends_on]}
            if call.id is not None:
                update["id"] = rename(call.id)
            calls.append(call.model_copy(update=update))
    last = task.turns[-1]
    criteria = [c for t in task.turns for c in (t.criteria or [])]
    required = [c for t in task.turns for c in (t.required_content or [])]
    assertions = [a for t in task.turns for a in (t.environment_assertions or [])]
    stated: dict[str, Any] = {"reference_calls": calls} if any(t.states_calls for t in task.turns) else {}  # "no write" only if a turn says so
    return Turn(
        turn_id=task.turns[0].turn_id,
        query="\n".join(t.query for t in task.turns),
        **stated,
        gold_answers=last.gold_answers,
        gold_answer_pattern=last.gold_answer_pattern,
        answer_ordered=last.answer_ordered,
        answer_tolerance=last.answer_tolerance,
        criteria=criteria or None,
        required_content=required or None,
        environment_assertions=assertions or None,
        requires_a_call=any(t.requires_a_call for t in task.turns),
    )
