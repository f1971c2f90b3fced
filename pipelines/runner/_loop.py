"""The agent loop for one trajectory: the model proposes calls, the policy gate checks each, the
tool runs (or a fault is injected, or the call is blocked), the results go back together, and so
on until the model answers without calling a tool; then the next turn's query, if any.

Invariants:
- every call the model proposed within the budget becomes exactly one ``Step``, in the order
  proposed; calls of one model message share a ``round`` (rounds count model messages that
  issued calls, over the whole trajectory, as the chat readers count them);
- the calls of one message are executed in the order listed (deterministic state) and their
  results are sent back together, in one message;
- the budget counts every proposed call (executed, blocked, faulted or unparseable): at most
  ``--max-steps``, and at most the policy's ``max_calls`` + 1 (the first call over the limit is
  attempted, so grading sees the violation; blocked when the policy is enforced). A call over the
  budget is not executed and not recorded: the trajectory stops there (``stop_reason="max_steps"``,
  ``dropped_calls`` counts them, ``ended_early`` says so: grading fails the run at answer
  correctness unless it broke earlier) and later turns are not run;
- a turn's final answer is the last assistant text of that turn (a refusal's text included); every
  text the agent sent in the turn is kept in ``agent_messages``;
- nothing here raises for anything the model does; ``AgentCallError`` (no answer from the model)
  and tool-transport failures propagate: the trajectory is then not collected at all.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from judge import EndedEarly, Step, Task, TokenUsage, ToolNames, Trajectory, TrajectoryTurn, Turn
from pipelines.runner._caller import ModelCaller
from pipelines.runner._conversation import Conversation, ModelReply, ToolCall, ToolReply, ToolResults, UserMessage
from pipelines.runner._faults import FaultPlan, malformed
from pipelines.runner._gate import PolicyGate
from pipelines.runner._prompt import harness_id, system_prompt
from pipelines.runner._shortlist import ToolMenu
from pipelines.runner.tools import ToolSession

INJECTED_ERROR = "injected fault: the tool is unavailable"
INJECTED_TIMEOUT = "injected fault: the tool did not answer in time"


class TrajectoryJob(msgspec.Struct, frozen=True):
    """One (task, trial) of the run."""

    task: Task
    trial: int  # 1-based
    seed: int
    trajectory_id: str
    order: int  # position in the run's canonical order (task order, then trial)


class LoopSettings(msgspec.Struct, frozen=True):
    agent: str  # recorded as the trajectory's agent
    max_steps: int
    enforce_policy: bool = True
    faults: FaultPlan | None = None


def call_budget(task: Task, max_steps: int) -> int:
    policy = task.policy
    if policy is not None and policy.max_calls is not None:
        return min(max_steps, policy.max_calls + 1)
    return max_steps


class _Run:
    """The state of one trajectory while it runs."""

    def __init__(self, job: TrajectoryJob, caller: ModelCaller, tools: ToolSession, menu: ToolMenu, settings: LoopSettings, source: str):
        self.job = job
        self.caller = caller
        self.tools = tools
        self.menu = menu
        self.settings = settings
        self.source = source
        self.gate = PolicyGate(job.task) if settings.enforce_policy else None
        # the providers see sanitised tool names (sanitise_tool_name); steps record and execute the
        # tool a called name means (an ambiguous one, two tools sanitising alike, stays as called)
        self.names = ToolNames(menu.names)
        self.budget = call_budget(job.task, settings.max_steps)
        self.calls = 0  # proposed calls recorded so far (whole trajectory)
        self.rounds = 0
        self.dropped = 0
        self.stop_reason = "completed"
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.model_ms = 0.0
        self.tool_ms = 0.0
        self.model_calls = 0
        self.cached_calls = 0
        self.attempts = 0
        self.versions: list[str] = []
        self.offered: dict[str, list[str]] = {}
        self.refused_turns: list[str] = []
        self.faults = 0
        self.blocked = 0

    async def run(self) -> Trajectory:
        started = time.perf_counter()
        task = self.job.task
        conversation = Conversation(system_prompt(task))
        turns: list[TrajectoryTurn] = []
        for turn in task.turns:
            conversation.add(UserMessage(turn.query))
            offered = self.menu.offer(turn.query)
            if self.menu.shortlisting:
                self.offered[turn.turn_id] = [t.name for t in offered]
            steps, messages = await self._turn(conversation, turn, offered, calls_before=self.calls)
            answer = messages[-1] if messages else None  # the turn's last assistant text
            turns.append(TrajectoryTurn(turn_id=turn.turn_id, query=turn.query, steps=steps, final_answer=answer, agent_messages=messages))
            if self.stop_reason == "max_steps":
                break
        wall_ms = (time.perf_counter() - started) * 1000
        return Trajectory(
            task_id=task.task_id,
            trajectory_id=self.job.trajectory_id,
            agent=self.settings.agent,
            turns=turns,
            token_usage=TokenUsage(input_tokens=self.input_tokens, output_tokens=self.output_tokens, cost_usd=round(self.cost_usd, 10)),
            metadata=self._metadata(wall_ms),
            ended_early=self._ended_early(),
        )

    def _ended_early(self) -> EndedEarly | None:
        if self.stop_reason != "max_steps":
            return None
        return EndedEarly(
            kind="limit",
            reason=f"the call budget ({self.budget} calls) ran out: {self.dropped} further proposed call(s) were dropped and the run stopped before the agent answered",
        )

    async def _turn(self, conversation: Conversation, turn: Turn, offered: list[Any], calls_before: int) -> tuple[list[Step], list[str]]:
        """The turn's steps and every text the agent sent in it (the last one is its final answer)."""
        steps: list[Step] = []
        messages: list[str] = []
        while True:
            reply = await self._ask(conversation, offered)
            conversation.add(reply)
            text = reply.text if reply.text is not None else reply.refusal
            if text:
                messages.append(text)
            if reply.refusal is not None and turn.turn_id not in self.refused_turns:
                self.refused_turns.append(turn.turn_id)
            if not reply.tool_calls:
                return steps, messages
            round_index = self.rounds
            self.rounds += 1
            replies: list[ToolReply] = []
            for n, call in enumerate(reply.tool_calls):
                if self.calls >= self.budget:
                    self.dropped += len(reply.tool_calls) - n
                    self.stop_reason = "max_steps"
                    return steps, messages
                step, tool_reply = await self._execute(call, round_index, turn, steps, calls_before)
                self.calls += 1
                steps.append(step)
                replies.append(tool_reply)
            conversation.add(ToolResults(tuple(replies)))

    async def _ask(self, conversation: Conversation, offered: list[Any]) -> ModelReply:
        reply, record = await self.caller.reply(conversation, offered, self.job.seed)
        self.model_calls += 1
        self.cached_calls += record.cached
        self.attempts += record.attempts
        self.model_ms += record.latency_ms
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        self.cost_usd += record.cost_usd
        if reply.model_version and reply.model_version not in self.versions:
            self.versions.append(reply.model_version)
        return reply

    async def _execute(self, call: ToolCall, round_index: int, turn: Turn, earlier: list[Step], calls_before: int) -> tuple[Step, ToolReply]:
        name = self.names.resolve(call.name)
        base: dict[str, Any] = {"name": name, "arguments": call.arguments or {}, "call_id": call.id, "round": round_index}

        def answer(content: str, is_error: bool) -> ToolReply:
            return ToolReply(call_id=call.id, name=call.name, content=content, is_error=is_error)

        if call.parse_error is not None:
            text = f"Error: the arguments must be a JSON object; got {call.parse_error}"
            return Step(**base, status="error", error=f"unparseable arguments: {call.parse_error}", result=text), answer(text, True)
        if self.gate is not None:
            rule = self.gate.check(turn, earlier, calls_before, Step(**base, status="unknown"))
            if rule is not None:
                self.blocked += 1
                text = f"blocked by policy: {rule}"
                return Step(**base, status="blocked", error=text, result=text), answer(text, True)
        plan = self.settings.faults
        fault = plan.pick(self.job.trajectory_id, self.calls, name) if plan is not None else None
        if fault in ("error", "timeout"):  # the call never reaches the tool
            self.faults += 1
            error = INJECTED_ERROR if fault == "error" else INJECTED_TIMEOUT
            text = f"Error: {error.removeprefix('injected fault: ')}"
            return Step(**base, status="error", error=error, result=text, fault=fault, latency_ms=0.0), answer(text, True)
        started = time.perf_counter()
        outcome = await self.tools.call(name, call.arguments or {})
        latency = round((time.perf_counter() - started) * 1000, 3)
        self.tool_ms += latency
        if not outcome.ok:
            return Step(**base, status="error", error=outcome.error, result=outcome.text, latency_ms=latency), answer(outcome.text, True)
        if fault == "empty":
            self.faults += 1
            return Step(**base, status="ok", result="", fault=fault, latency_ms=latency), answer("", False)
        if fault == "malformed":
            self.faults += 1
            text = malformed(outcome.text)
            return Step(**base, status="ok", result=text, fault=fault, latency_ms=latency), answer(text, False)
        return Step(**base, status="ok", result=outcome.result, latency_ms=latency), answer(outcome.text, False)

    def _metadata(self, wall_ms: float) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "trial": self.job.trial,
            "seed": self.job.seed,
            "harness": harness_id(),
            "tool_source": self.source,
            "stop_reason": self.stop_reason,
            "model_version": self.versions[0] if len(self.versions) == 1 else (self.versions or None),
            "model_calls": self.model_calls,
            "cached_model_calls": self.cached_calls,
            "model_attempts": self.attempts,
            "latency_ms": {"model": round(self.model_ms, 3), "tools": round(self.tool_ms, 3), "total": round(wall_ms, 3)},
            "call_budget": self.budget,
            "enforce_policy": self.settings.enforce_policy,
            "blocked_calls": self.blocked,
            "injected_faults": self.faults,
            "tool_count": len(self.menu.tools),
        }
        if self.dropped:
            meta["dropped_calls"] = self.dropped
        if self.refused_turns:
            meta["refused_turns"] = self.refused_turns
        if self.offered:
            meta["tools_offered"] = self.offered
        return meta


async def run_trajectory(job: TrajectoryJob, caller: ModelCaller, tools: ToolSession, menu: ToolMenu, settings: LoopSettings, source: str) -> Trajectory:
    """Run one trajectory to its end (see the module's invariants)."""
    return await _Run(job, caller, tools, menu, settings, source).run()
