"""tau2-bench results (``tau2 run --save-to DIR``): one JSON object holding the run's tasks and its
simulations, ``{timestamp, info, tasks[], simulations[], simulation_index?}``. tau2's "dir" layout
(an empty ``simulations`` here, each simulation in ``simulations/<id>.json`` beside the file) is
read too.

Tasks follow tau2's own evaluator (``src/tau2/evaluator``): a reward component gates the task only
when it is in ``reward_basis`` (tau2's default ``[DB, COMMUNICATE]``), so a component maps to a
check only then and is kept in ``metadata.tags["tau2"]`` otherwise.
- ``evaluation_criteria.actions`` (requestor ``assistant``) -> reference calls, id = ``action_id``.
  ``compare_args`` null compares every argument (extra arguments fail, as tau2 compares the call's
  keys); a list compares only those (``extra_arguments: "allow"``). The list is unordered.
  ``DB`` without ``ACTION`` -> ``grading: "outcome"`` (reads advisory; writes decide); ``ACTION``
  -> every action required; neither -> every action advisory (``required: false``). Without ``DB``
  tau2 scores no end state: ``final_state: "unchecked"`` (surplus writes are not failures). With
  ``DB``, a task whose actions hold no write expects none ("no write" is a check).
  Actions with requestor ``user`` (telecom device actions) are the user's: ``tags.tau2.user_actions``.
- ``communicate_info`` -> ``required_content`` (COMMUNICATE); ``nl_assertions`` -> ``criteria``
  (NL_ASSERTION); ``env_assertions`` (ENV_ASSERTION) -> the turn's ``environment_assertions``:
  they need tau2's environment, so such a task is unresolved unless another check fails it (warned).
- ``info.environment_info.policy`` -> the policy text, as the domain's policy document
  (``scope: "domain"``: context for the judges, audited only with ``--policy-text gate``);
  ``domain_name`` -> metadata domain.
- Tools: every tool the file types (``reward_info.action_checks[].tool_type``) or, for tau2's
  published domains, that tau2's source types (``tau2_tool_types.json``); ``write`` -> a write tool,
  ``read``/``generic``/``think`` -> a read. A reference call's tool of unknown type is a read, with a
  warning (``--tool-specs`` can give it).

Simulations -> trajectories: task_id = ``task_id``, trajectory_id = the simulation ``id`` (unique per
trial), agent = ``info.agent_info.llm``. Each user message with text starts a turn; assistant tool
calls are steps paired with ``role: "tool"`` messages by id (``error: true`` -> a failed step whose
error is the tool's message); calls without a result stay ``unknown``. User-side tool calls
(``requestor: "user"``) are not the agent's: they and their results go to ``metadata.user_tool_calls``.
``reward_info.reward`` -> external label ``tau2.reward`` with tau2's reasons. A ``termination_reason``
other than ``agent_stop`` / ``user_stop`` -> ``ended_early`` (``limit``: max_steps, timeout,
too_many_errors, context_window_exceeded; ``error``: agent_error, user_error, infrastructure_error,
unexpected_error and any value tau2 adds), as tau2 gives such runs reward 0. Every other field of the
simulation (termination_reason too, trial, seed, costs, reward_info, ...) is kept in metadata; per
message, the timing, cost and raw provider response fields are summarised (usage -> token_usage)
and fields tau2's message model does not have are kept in ``metadata.message_extras``.
Full-duplex (voice) simulations, recorded as ``ticks``, are reported as ``unsupported``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge import EndedEarly, EndedEarlyKind, ExternalLabel, InputErrorInfo, InputWarning, Policy, SourceRef, Task, Trajectory, parse_json_text
from pipelines.ingest._base import (
    Bundle,
    BundleFormat,
    ItemContext,
    ItemError,
    Limits,
    Loaded,
    TaskCollector,
    TaskSet,
    as_id,
    expect,
    guarded,
    short,
    validation_error,
)
from pipelines.ingest._chat import TurnBuilder, text_of
from pipelines.ingest._document import Document, DocumentError, Span, read_document
from pipelines.ingest._openai import parse_arguments
from pipelines.ingest._reader import read_items
from pipelines.ingest._rows import Rows

DEFAULT_REWARD_BASIS = ("DB", "COMMUNICATE")  # tau2's EvaluationCriteria default
_HEAD = re.compile(r'[\ufeff \t\r\n]*\{\s*"(?:timestamp|info)"\s*:')  # tau2 writes Results' fields in order
_FINISHED = {"agent_stop", "user_stop"}  # other terminations get reward 0 in tau2, whatever happened
_MESSAGE_FIELDS = {
    # tau2's message models (src/tau2/data_model/message.py): read, summarised or deliberately not kept
    "role",
    "content",
    "tool_calls",
    "tool_messages",
    "id",
    "requestor",
    "error",
    "turn_idx",
    "timestamp",
    "cost",
    "usage",
    "raw_data",
    "generation_time_seconds",
    "context_truncation",
    "is_audio",
    "audio_format",
    "audio_content",
    "audio_path",
    "audio_script_gold",
    "speech_effects",
    "source_effects",
    "channel_effects",
    "turn_taking_action",
    "utterance_ids",
    "chunk_id",
    "is_final_chunk",
    "source",
    "contains_speech",
}


@cache
def published_tool_types() -> dict[str, dict[str, str]]:
    """Tool types of tau2's published domains, from tau2's source (see the JSON file's ``_source``)."""
    text = resources.files(__package__).joinpath("tau2_tool_types.json").read_text(encoding="utf-8")
    return json.loads(text)["domains"]


@cache
def published_tool_schemas() -> dict[str, dict[str, dict[str, Any]]]:
    """Domain -> tool name -> the OpenAI function schema (``name``, ``description``, ``parameters``)
    tau2 offers the agent for each tool of its published domains, generated by tau2's own code (see
    the JSON file's ``_source``). For files whose ``tool_defs`` is null. Every ``$ref`` is inlined;
    a nested object that the tool reads through a pydantic model which ignores undeclared keys is
    marked ``"x-extra-keys": "ignore"``. Cached and shared: callers must not modify it."""
    text = resources.files(__package__).joinpath("tau2_tool_schemas.json").read_text(encoding="utf-8")
    return json.loads(text)["domains"]


def _sniff(head: bytes, first: dict[str, Any] | None) -> bool:
    """The first object (when the file could be parsed whole for detection), else its first bytes:
    tau2 writes ``{"timestamp", "info": {"git_commit", "num_trials", "max_steps", ..., "user_info"`` first."""
    if first is not None and isinstance(first.get("info"), dict) and isinstance(first.get("tasks"), list) and "simulations" in first:
        return True
    text = head.decode("utf-8", "replace")
    return _HEAD.match(text) is not None and all(key in text for key in ('"info"', '"num_trials"', '"max_steps"', '"user_info"'))


# ---- tool types ---------------------------------------------------------------------------------


class _ToolTypes:
    """Tool name -> tau2 tool type, from the file's action checks, else tau2's published domains."""

    def __init__(self) -> None:
        self.from_file: dict[str, str] = {}
        self.conflicts: dict[str, set[str]] = {}
        self.published: dict[str, str] = {}

    def use_domain(self, domain: str | None) -> None:
        """The file's domain is known once its ``info`` is read: use tau2's table for it, if published."""
        self.published = published_tool_types().get(domain or "", {})

    def visit(self, array: str, _span: Span, simulation: Any) -> None:
        """Collect ``reward_info.action_checks[].tool_type`` of one simulation (read once, in the scan)."""
        if array != "simulations":
            return
        reward = simulation.get("reward_info") if isinstance(simulation, dict) else None
        checks = reward.get("action_checks") if isinstance(reward, dict) else None
        for check in checks if isinstance(checks, list) else ():
            action = check.get("action") if isinstance(check, dict) else None
            kind = check.get("tool_type") if isinstance(check, dict) else None
            if not isinstance(action, dict) or not isinstance(kind, str) or action.get("requestor", "assistant") != "assistant":
                continue
            name = action.get("name")
            if not isinstance(name, str):
                continue
            known = self.from_file.setdefault(name, kind)
            if known != kind:
                self.conflicts.setdefault(name, {known}).add(kind)

    def get(self, name: str) -> str | None:
        if name in self.conflicts:
            return None
        return self.from_file.get(name) or self.published.get(name)

    def names(self) -> list[str]:
        return sorted((set(self.from_file) - set(self.conflicts)) | set(self.published))


# ---- tool schemas --------------------------------------------------------------------------------

_MAX_SCHEMA_DEPTH = 64  # $ref chains and nesting of a file's tool_defs (a cycle stops here)


def tool_schemas(tool_defs: Any, domain: str | None) -> dict[str, dict[str, Any]]:
    """Tool name -> ``{description, parameters}``: the file's own ``tool_defs`` (tau2 writes
    ``{name: {name, doc, params, returns}}``, ``params`` a JSON Schema with ``$defs``), else the
    published schemas of its domain, else nothing (the reference calls are then the declaration).
    ``$ref`` is inlined, and a nested object schema with properties is marked as tau2's pydantic
    argument models read it: undeclared keys ignored (``x-extra-keys``), unless it says otherwise."""
    if isinstance(tool_defs, dict) and tool_defs:
        out: dict[str, dict[str, Any]] = {}
        for name, spec in tool_defs.items():
            params = spec.get("params") if isinstance(spec, dict) else None
            if not isinstance(name, str) or not isinstance(params, dict):
                continue
            found = params.get("$defs")
            defs: dict[str, Any] = found if isinstance(found, dict) else {}
            doc = spec.get("doc")
            out[name] = {"description": doc if isinstance(doc, str) else "", "parameters": _inline(params, defs, 0)}
        return out
    return {name: {k: v for k, v in schema.items() if k != "name"} for name, schema in published_tool_schemas().get(domain or "", {}).items()}


def _inline(schema: Any, defs: dict[str, Any], depth: int) -> Any:
    """``schema`` with every ``#/$defs/X`` reference replaced by ``X`` (nested objects marked)."""
    if depth > _MAX_SCHEMA_DEPTH:
        return {}
    if isinstance(schema, list):
        return [_inline(item, defs, depth + 1) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    target = defs.get(ref[len("#/$defs/") :]) if isinstance(ref, str) and ref.startswith("#/$defs/") else None
    if isinstance(target, dict):
        return _inline({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, defs, depth + 1)
    out = {k: _inline(v, defs, depth + 1) for k, v in schema.items() if k != "$defs"}
    if depth > 0 and isinstance(out.get("properties"), dict) and "additionalProperties" not in out:
        out.setdefault("x-extra-keys", "ignore")  # a pydantic model's default: extra keys are dropped
    return out


# ---- tasks --------------------------------------------------------------------------------------


class _TaskReader:
    """tasks[k] -> Task, with warnings for what cannot be checked."""

    def __init__(self, file: str, info: dict[str, Any], types: _ToolTypes, collector: TaskCollector):
        environment = _object(info.get("environment_info"))
        self.file = file
        self.domain = as_id(environment.get("domain_name"))
        policy = environment.get("policy")
        # the domain's policy document, shared by every task: context for the judges, not a per-task gate
        self.policy = Policy(text=policy, scope="domain") if isinstance(policy, str) and policy.strip() else None
        self.types = types
        self.collector = collector
        self.schemas = tool_schemas(environment.get("tool_defs"), self.domain)
        self.histories: dict[str, list[Any]] = {}  # task id -> the messages every simulation of it starts with

    def add(self, raw: Any, span: Span) -> None:
        path = f"tasks[{span.index}]"
        source = SourceRef(file=self.file, line=span.line, item=span.index)
        task_id = as_id(raw.get("id")) if isinstance(raw, dict) else None
        warnings: list[InputWarning] = []
        try:
            task = self._task(
                raw, path, lambda kind, message, field: warnings.append(InputWarning(kind=kind, message=message, file=self.file, line=span.line, field=field))
            )
        except ItemError as err:
            self.collector.add_error(err.info(self.file, span.line), task_id)
            return
        except ValidationError as err:
            self.collector.add_error(validation_error(err, note=f"task {task_id!r} converts to an invalid task").info(self.file, span.line), task_id)
            return
        self.collector.result.warnings.extend(warnings)
        self.collector.add(task, source)

    @guarded
    def _task(self, raw: Any, path: str, warn: Callable[[str, str, str], None]) -> Task:
        expect(raw, dict, path, "a task")
        task_id = as_id(raw.get("id"))
        if task_id is None:
            raise ItemError("invalid_field", f"a task needs an id (a string or an integer), got {short(raw.get('id'))}", f"{path}.id")
        criteria = raw.get("evaluation_criteria")
        if criteria is not None:
            expect(criteria, dict, f"{path}.evaluation_criteria", "evaluation_criteria")
        criteria = criteria or {}
        cpath = f"{path}.evaluation_criteria"
        basis_raw = criteria.get("reward_basis")
        basis = set(DEFAULT_REWARD_BASIS) if basis_raw is None else {str(b) for b in expect(basis_raw, list, f"{cpath}.reward_basis", "reward_basis")}
        required = "ACTION" in basis or "DB" in basis
        actions = criteria.get("actions")
        calls, user_actions, notes = self._actions(actions, f"{cpath}.actions", required, warn)
        # tau2 scores the end state only when the criteria say what it should be: with no criteria, or
        # neither actions nor env assertions, its environment reward is 1.0 ("No expected actions or env assertions")
        state_scored = raw.get("evaluation_criteria") is not None and "DB" in basis and not (actions is None and criteria.get("env_assertions") is None)
        turn: dict[str, Any] = {"turn_id": "1", "query": self._query(raw, path)}
        if actions is not None or state_scored:  # null actions state no calls; [] (or a scored state) expects no write
            turn["reference_calls"] = calls
        self._seeded(raw, task_id, path)
        tags: dict[str, Any] = {"reward_basis": sorted(basis)}
        communicate = _strings(criteria.get("communicate_info"), f"{cpath}.communicate_info")
        if communicate and "COMMUNICATE" in basis:
            turn["required_content"] = communicate
        elif communicate:
            tags["communicate_info"] = communicate  # diagnostics only in tau2: not in reward_basis
        assertions = _strings(criteria.get("nl_assertions"), f"{cpath}.nl_assertions")
        if assertions and "NL_ASSERTION" in basis:
            turn["criteria"] = assertions
        elif assertions:
            tags["nl_assertions"] = assertions
        if criteria.get("env_assertions"):
            tags["env_assertions"] = criteria["env_assertions"]
            if "ENV_ASSERTION" in basis:
                turn["environment_assertions"] = expect(criteria["env_assertions"], list, f"{cpath}.env_assertions", "env_assertions")
                warn(
                    "uncheckable_criterion",
                    f"task {task_id!r}: env_assertions gate tau2's reward but need tau2's environment to check: the task stays unresolved unless another check fails it",
                    f"{cpath}.env_assertions",
                )
        if user_actions:
            tags["user_actions"] = user_actions
        if notes:
            tags["action_notes"] = notes
        mapped = ("actions", "env_assertions", "communicate_info", "nl_assertions", "reward_basis")
        tags.update({k: v for k, v in criteria.items() if k not in mapped and v is not None})
        tags.update({k: v for k, v in raw.items() if k not in ("id", "evaluation_criteria") and v is not None})
        names = {c["name"] for c in calls}
        for name in sorted(names):
            if self.types.get(name) is None:
                warn(
                    "tool_type_unknown",
                    f"task {task_id!r}: whether {name!r} writes is not known from this file or tau2's published domains; it is graded as a read (give its side_effect with --tool-specs)",
                    f"{cpath}.actions",
                )
        tools = [
            {**self.schemas.get(n, {}), "name": n, "side_effect": "write" if self.types.get(n) == "write" else "read"}
            for n in sorted(names | set(self.types.names()))
        ]
        return Task.model_validate(
            {
                "task_id": task_id,
                "turns": [turn],
                "tools": tools,
                "policy": self.policy,
                "metadata": {"domain": self.domain, "tags": {"tau2": tags}},
                "grading": "outcome" if "DB" in basis and "ACTION" not in basis else "trajectory",
                "final_state": "checked" if state_scored else "unchecked",
            }
        )

    def _seeded(self, raw: dict[str, Any], task_id: str, path: str) -> None:
        """Remember the task's ``initial_state.message_history``: tau2 starts each simulation with it
        (part of the initial state, replayed into the gold environment too), so those messages are
        not the agent's."""
        state = raw.get("initial_state")
        history = state.get("message_history") if isinstance(state, dict) else None
        if history is not None:
            self.histories[task_id] = expect(history, list, f"{path}.initial_state.message_history", "message_history")

    def _query(self, raw: dict[str, Any], path: str) -> str:
        scenario = raw.get("user_scenario")
        if isinstance(scenario, dict):
            return _scenario_text(scenario, f"{path}.user_scenario")
        ticket = raw.get("ticket")
        if isinstance(ticket, str) and ticket.strip():
            return ticket
        raise ItemError("invalid_field", "a task needs user_scenario (or a ticket) saying what the user wants", f"{path}.user_scenario")

    def _actions(
        self, actions: Any, path: str, required: bool, warn: Callable[[str, str, str], None]
    ) -> tuple[list[dict[str, Any]], list[Any], dict[str, Any]]:
        """(reference calls, the user's actions, per action what a reference call cannot hold: its
        ``info`` text and fields of newer tau2 versions such as ``allow_partial_match``)."""
        calls: list[dict[str, Any]] = []
        user_actions: list[Any] = []
        notes: dict[str, Any] = {}
        ids: set[str] = set()
        for j, action in enumerate(expect(actions, list, path, "actions") if actions is not None else ()):
            apath = f"{path}[{j}]"
            expect(action, dict, apath, "an action")
            if action.get("requestor", "assistant") == "user":
                user_actions.append(action)
                continue
            name = action.get("name")
            if not isinstance(name, str) or not name:
                raise ItemError("invalid_field", f"an action needs a tool name, got {short(name)}", f"{apath}.name")
            arguments = expect(action.get("arguments") if action.get("arguments") is not None else {}, dict, f"{apath}.arguments", "arguments")
            call: dict[str, Any] = {"name": name, "arguments": arguments, "required": required}
            compare = action.get("compare_args")
            if compare is not None:
                keys = expect(compare, list, f"{apath}.compare_args", "compare_args")
                for key in keys:
                    expect(key, str, f"{apath}.compare_args", "a compare_args entry")
                absent = [k for k in keys if k not in arguments]
                if absent:
                    warn(
                        "uncheckable_criterion",
                        f"compare_args names {absent} which the action does not give (tau2 then requires the agent to leave them out); not checked",
                        f"{apath}.compare_args",
                    )
                call["arguments"] = {k: arguments[k] for k in keys if k in arguments}
                call["extra_arguments"] = "allow"
            action_id = as_id(action.get("action_id"))
            if action_id is not None and action_id not in ids:
                call["id"] = action_id
                ids.add(action_id)
            elif action_id is not None:
                warn("duplicate_id", f"action_id {action_id!r} is used twice; the second action has no id", f"{apath}.action_id")
            extras = {k: v for k, v in action.items() if k not in ("action_id", "requestor", "name", "arguments", "compare_args") and v is not None}
            if extras:
                notes[action_id or str(j)] = extras
            calls.append(call)
        return calls, user_actions, notes


def _strings(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    items = expect(value, list, path, "a list of strings")
    for i, item in enumerate(items):
        expect(item, str, f"{path}[{i}]", "an entry")
    return [s for s in items if s.strip()]


def _scenario_text(scenario: dict[str, Any], path: str) -> str:
    """The user scenario as tau2 shows it to its user simulator (persona, then instructions)."""
    parts: list[str] = []
    persona = scenario.get("persona")
    if isinstance(persona, str) and persona.strip():
        parts.append(f"Persona:\n{persona}")
    instructions = scenario.get("instructions")
    if isinstance(instructions, str):
        parts.append(instructions)
    elif isinstance(instructions, dict):
        for key, title in (
            ("domain", "Domain"),
            ("reason_for_call", "Reason for call"),
            ("known_info", "Known info"),
            ("unknown_info", "Unknown info"),
            ("task_instructions", "Task instructions"),
        ):
            value = instructions.get(key)
            if isinstance(value, str) and value.strip():
                parts.append(f"{title}:\n{value}")
    elif instructions is not None:
        raise ItemError("invalid_field", f"instructions must be a string or an object, got {short(instructions)}", f"{path}.instructions")
    return "\n\n".join(parts)


# ---- simulations --------------------------------------------------------------------------------


class _UserCalls:
    """The simulated user's own tool calls (telecom device actions) and their results: not the agent's."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._pending: dict[str, list[dict[str, Any]]] = {}

    def call(self, call: dict[str, Any], path: str) -> None:
        call_id = _call_id(call.get("id"), f"{path}.id", "tool call id")
        record = {"name": call.get("name"), "arguments": call.get("arguments"), "id": call_id, "at": path}
        self.calls.append(record)
        if call_id is not None:
            self._pending.setdefault(call_id, []).append(record)

    def result(self, message: dict[str, Any], path: str) -> None:
        call_id = _call_id(message.get("id"), f"{path}.id", "a tool message's id (the call it answers)")
        waiting = (self._pending.get(call_id) or []) if call_id is not None else []
        record = waiting.pop() if waiting else None
        if record is None:
            record = {"id": call_id, "at": path, "orphan": True}
            self.calls.append(record)
        record["result"] = parse_json_text(message.get("content"))
        record["error"] = bool(message.get("error"))


def _call_id(value: Any, path: str, what: str) -> str | None:
    """A user tool call's id, or its result's (null: none; it pairs them): a string."""
    return None if value is None else expect(value, str, path, what)


class _Simulation:
    """One simulation -> one trajectory (see the module docstring)."""

    def __init__(self, raw: Any, prefix: str, ctx: ItemContext, agent: str | None, histories: dict[str, list[Any]] | None = None):
        self.raw = raw
        self.prefix = prefix
        self.ctx = ctx
        self.agent = agent
        self.histories = histories or {}
        self.builder = TurnBuilder(ctx)
        self.user_calls = _UserCalls()
        self.system: list[str] = []
        self.extras: dict[str, dict[str, Any]] = {}
        self.audio: list[str] = []  # messages whose content is audio (voice runs): not read as text
        self.input_tokens = 0
        self.output_tokens = 0
        self.usage_seen = False

    def path(self, suffix: str) -> str:
        return f"{self.prefix}.{suffix}" if self.prefix else suffix

    def convert(self) -> Trajectory:
        raw = expect(self.raw, dict, self.prefix or "<root>", "a simulation")
        sim_id = as_id(raw.get("id"))
        if sim_id is None:
            raise ItemError("invalid_field", f"a simulation needs an id, got {short(raw.get('id'))}", self.path("id"))
        task_id = as_id(raw.get("task_id"))
        if task_id is None:
            raise ItemError("invalid_field", f"a simulation needs the task_id it attempts, got {short(raw.get('task_id'))}", self.path("task_id"))
        messages = raw.get("messages")
        if messages is None and raw.get("ticks"):
            raise ItemError(
                "unsupported",
                "a full-duplex (voice) simulation records ticks instead of messages; only half-duplex (text) simulations are read",
                self.path("ticks"),
            )
        messages = expect(messages, list, self.path("messages"), "messages")
        seeded = _seeded_prefix(messages, self.histories.get(task_id))
        for j, message in enumerate(messages[seeded:], seeded):
            self.message(message, self.path(f"messages[{j}]"))
        metadata = {k: v for k, v in raw.items() if k not in ("id", "task_id", "messages", "ticks") and v is not None}
        if seeded:
            metadata["seeded_messages"] = seeded  # the task's initial message history: not the agent's
        if self.user_calls.calls:
            metadata["user_tool_calls"] = self.user_calls.calls
        if self.system:
            metadata["system"] = "\n".join(self.system)
        if self.extras:
            metadata["message_extras"] = self.extras
        if self.audio:
            metadata["audio_messages"] = self.audio
        usage: dict[str, Any] = {}
        if self.usage_seen:
            usage = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        cost = raw.get("agent_cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
            usage["cost_usd"] = cost
        item = {"task_id": task_id, "trajectory_id": sim_id, "agent": self.agent}
        trajectory = self.builder.build(item, self.ctx, usage or None, metadata)
        update: dict[str, Any] = {}
        label = reward_label(raw.get("reward_info"), raw.get("termination_reason"), self.path("reward_info"))
        if label is not None:
            update["external_labels"] = [label]
        ended = ended_early(raw.get("termination_reason"))
        if ended is not None:
            update["ended_early"] = ended
        return trajectory.model_copy(update=update) if update else trajectory

    def message(self, message: Any, path: str) -> None:
        expect(message, dict, path, "a message")
        extra = {k: v for k, v in message.items() if k not in _MESSAGE_FIELDS}
        if extra:
            self.extras[path] = extra
        role = message.get("role")
        if role == "tool":
            if isinstance(message.get("tool_messages"), list):  # tau2's MultiToolMessage
                for k, sub in enumerate(message["tool_messages"]):
                    self.message(sub, f"{path}.tool_messages[{k}]")
            else:
                self.tool_result(message, path)
            return
        if role not in ("system", "user", "assistant"):
            raise ItemError("invalid_field", f"unknown role {role!r}; expected system, user, assistant or tool", f"{path}.role")
        content = message.get("content")
        if message.get("is_audio") is True:  # content holds base64 audio, not text
            self.audio.append(path)
            content = None
        text = text_of(content, f"{path}.content") if content is not None else None
        if role == "system":
            if text:
                self.system.append(text)
            return
        calls = message.get("tool_calls")
        calls = expect(calls, list, f"{path}.tool_calls", "tool_calls") if calls is not None else []
        if role == "user":
            if text and text.strip():
                self.builder.start(text)
            for k, call in enumerate(calls):
                expect(call, dict, f"{path}.tool_calls[{k}]", "a tool call")
                self.user_calls.call(call, f"{path}.tool_calls[{k}]")
            return
        self.builder.begin_message()
        usage = message.get("usage")
        if isinstance(usage, dict):
            self.usage_seen = True
            self.input_tokens += _count(usage.get("prompt_tokens"))
            self.output_tokens += _count(usage.get("completion_tokens"))
        if text and text.strip():
            self.builder.say(text)
        agent_calls = 0
        for k, call in enumerate(calls):
            cpath = f"{path}.tool_calls[{k}]"
            expect(call, dict, cpath, "a tool call")
            if call.get("requestor", "assistant") == "user":
                self.user_calls.call(call, cpath)
                continue
            name = call.get("name")
            if not isinstance(name, str) or not name:
                raise ItemError("invalid_field", f"a tool call needs a tool name, got {short(name)}", f"{cpath}.name")
            call_id = call.get("id")
            if call_id is not None:
                expect(call_id, str, f"{cpath}.id", "tool call id")
            arguments, error = parse_arguments(call.get("arguments"))
            self.builder.add_call(name, arguments, call_id or None, cpath, error)
            agent_calls += 1
        if not agent_calls and text and text.strip():
            self.builder.set_answer(text)

    def tool_result(self, message: dict[str, Any], path: str) -> None:
        if message.get("requestor", "assistant") == "user":
            self.user_calls.result(message, path)
            return
        call_id = expect(message.get("id"), str, f"{path}.id", "a tool message's id (the call it answers)")
        content = message.get("content")
        failed = message.get("error") is True
        error = (content if isinstance(content, str) and content.strip() else "the tool reported an error") if failed else None
        self.builder.add_result(call_id, parse_json_text(content), "error" if failed else "ok", path, "id", error=error)


def _seeded_prefix(messages: list[Any], history: list[Any] | None) -> int:
    """How many leading messages are the task's seeded history (same role, text and calls, in order)."""
    if not history:
        return 0
    n = 0
    for message, seeded in zip(messages, history, strict=False):
        if not (isinstance(message, dict) and isinstance(seeded, dict) and _same_message(message, seeded)):
            break
        n += 1
    return n if n == len(history) else 0  # only the whole history: a partial match is the agent's own words


def _same_message(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def calls(m: dict[str, Any]) -> list[Any]:
        return [(c.get("id"), c.get("name"), c.get("arguments")) for c in m.get("tool_calls") or () if isinstance(c, dict)]

    return a.get("role") == b.get("role") and a.get("content") == b.get("content") and a.get("id") == b.get("id") and calls(a) == calls(b)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# tau2's TerminationReason values other than agent_stop / user_stop (src/tau2/data_model/simulation.py):
# a budget tau2 enforces ran out (limit), or something crashed (error). tau2's evaluator gives each reward 0.
_ENDED_EARLY: dict[str, tuple[EndedEarlyKind, str]] = {
    "max_steps": ("limit", "the simulation reached its step limit (info.max_steps)"),
    "timeout": ("limit", "the simulation ran past its wall-clock timeout"),
    "too_many_errors": ("limit", "too many tool errors in a row (info.max_errors)"),
    "context_window_exceeded": ("limit", "the conversation outgrew the model's context window (tau2 counts this run as not evaluable)"),
    "agent_error": ("error", "the agent failed with an error"),
    "user_error": ("error", "the user simulator failed with an error"),
    "infrastructure_error": ("error", "the infrastructure failed (e.g. an API disconnect; tau2 counts this run as not evaluable)"),
    "unexpected_error": ("error", "an unexpected error stopped the simulation"),
}


def ended_early(termination: Any) -> EndedEarly | None:
    """A ``termination_reason`` other than ``agent_stop`` / ``user_stop``: the simulation stopped
    before the agent or the user ended it. A value tau2 does not define (yet) is an error."""
    if not isinstance(termination, str) or not termination or termination in _FINISHED:
        return None
    kind, what = _ENDED_EARLY.get(termination, ("error", "the simulation stopped for a reason this reader does not know"))
    return EndedEarly(kind=kind, reason=f"tau2 termination_reason {termination}: {what}; tau2 gives reward 0")


_CHECK_LISTS = ("action_checks", "communicate_checks", "nl_assertions", "env_assertions")


def reward_label(reward_info: Any, termination: Any, path: str = "reward_info") -> ExternalLabel | None:
    """tau2's verdict: the reward, with the reasons tau2 recorded (failing components first).
    ``path``: where ``reward_info`` is, for the error when one of its lists of checks is not a list."""
    if not isinstance(reward_info, dict) or "reward" not in reward_info:
        return None
    for key in _CHECK_LISTS:
        if reward_info.get(key) is not None:
            expect(reward_info[key], list, f"{path}.{key}", f"reward_info.{key}")
    reward = reward_info["reward"]
    reasons: list[str] = []
    breakdown = reward_info.get("reward_breakdown")
    if isinstance(breakdown, dict) and breakdown:
        reasons.append(" x ".join(f"{k} {v}" for k, v in breakdown.items()))
    if isinstance(termination, str) and termination not in _FINISHED:
        reasons.append(f"terminated early ({termination}): tau2 gives reward 0")
    db = reward_info.get("db_check")
    if isinstance(db, dict) and db.get("db_match") is False:
        reasons.append("database end state differs from the reference")
    for check in reward_info.get("action_checks") or ():
        if isinstance(check, dict) and check.get("action_match") is False and isinstance(check.get("action"), dict):
            action = check["action"]
            reasons.append(f"action {action.get('name')}({short(action.get('arguments'), 120)}) not matched")
    for check in reward_info.get("communicate_checks") or ():
        if isinstance(check, dict) and check.get("met") is False:
            reasons.append(f"did not communicate {check.get('info')!r}")
    for check in reward_info.get("nl_assertions") or ():
        if isinstance(check, dict) and check.get("met") is False:
            reasons.append(f"NL assertion not met: {check.get('nl_assertion')!r}")
    for check in reward_info.get("env_assertions") or ():
        if isinstance(check, dict) and check.get("met") is False:
            assertion = _object(check.get("env_assertion"))
            reasons.append(f"env assertion {assertion.get('func_name')}({short(assertion.get('arguments'), 120)}) failed")
    info = reward_info.get("info")
    if isinstance(info, dict):
        note = info.get("note") or info.get("error")
        if isinstance(note, str):
            reasons.append(note)
    return ExternalLabel(source="tau2.reward", value=reward, reason="; ".join(reasons) or None)


# ---- the bundle ---------------------------------------------------------------------------------


def _read(path: str, limits: Limits) -> Bundle:
    types = _ToolTypes()
    try:  # the scan collects the tool types the simulations' action checks give
        doc = read_document(path, limits, arrays=("tasks", "simulations"), visit=types.visit)
    except DocumentError as err:
        rows = Rows(path)
        return Bundle(tasks=TaskSet(), items=iter([rows.error(err.info, line=err.info.line, task_id=None, trajectory_id=None)]))
    info = _object(doc.members.get("info"))
    environment = _object(info.get("environment_info"))
    types.use_domain(as_id(environment.get("domain_name")))
    collector = TaskCollector()
    tasks = _TaskReader(path, info, types, collector)
    for name, conflict in sorted(types.conflicts.items()):
        collector.result.warnings.append(
            InputWarning(kind="tool_type_conflict", message=f"action checks give {name!r} the tool types {sorted(conflict)}; it is graded as a read", file=path)
        )
    for span, value in doc.items("tasks"):
        if isinstance(value, InputErrorInfo):
            collector.add_error(value, None)
        else:
            tasks.add(value, span)
    if "tasks" not in doc.spans and doc.stopped is None:
        got = f", got {short(doc.members['tasks'])}" if "tasks" in doc.members else ""
        collector.result.errors.append(
            InputErrorInfo(kind="invalid_field", message=f"a tau2 results file needs its tasks (an array){got}", file=path, field="tasks")
        )
    agent_info = _object(info.get("agent_info"))
    agent = as_id(agent_info.get("llm")) or as_id(agent_info.get("implementation"))
    return Bundle(tasks=collector.result, items=_simulations(doc, agent, tasks.histories))


def _simulations(doc: Document, agent: str | None, histories: dict[str, list[Any]]) -> Iterator[Loaded]:
    rows = Rows(doc.file)
    for span, value in doc.items("simulations"):
        yield _row(rows, value, f"simulations[{span.index}]", span.line, agent, None, histories)
    if doc.stopped is not None:
        yield rows.error(doc.stopped, line=doc.stopped.line, task_id=None, trajectory_id=None)
        return
    if not doc.spans.get("simulations"):
        folder = Path(doc.file).parent / "simulations"
        if doc.members.get("simulation_index") or folder.is_dir():  # tau2's dir layout
            yield from _simulation_files(doc, rows, agent, histories)
        else:
            yield rows.error(_no_simulations(doc), line=None, task_id=None, trajectory_id=None)
    doc.text = ""  # the rows are out: let the text go before the run ends


def _no_simulations(doc: Document) -> InputErrorInfo:
    if "simulations" in doc.members:
        message = f"simulations must be an array, got {short(doc.members['simulations'])}"
    elif "simulations" in doc.spans:
        message = "the file holds no simulations (and no simulations/ folder beside it)"
    else:
        message = "a tau2 results file needs its simulations (inline, or listed in simulation_index beside a simulations/ folder)"
    return InputErrorInfo(kind="invalid_field", message=message, file=doc.file, field="simulations")


def _row(rows: Rows, value: Any, prefix: str, line: int | None, agent: str | None, file: str | None, histories: dict[str, list[Any]]) -> Loaded:
    if isinstance(value, InputErrorInfo):
        return rows.error(value, line=line, task_id=None, trajectory_id=None, file=file)
    task_id = as_id(value.get("task_id")) if isinstance(value, dict) else None
    trajectory_id = as_id(value.get("id")) if isinstance(value, dict) else None
    where = f"{file or rows.file}" + (f":{line}" if line is not None else "")

    def convert(ctx: ItemContext) -> Trajectory:
        return _Simulation(value, prefix, ctx, agent, histories).convert()

    return rows.convert(convert, line=line, task_id=task_id, trajectory_id=trajectory_id, where=where, file=file)


def _simulation_files(doc: Document, rows: Rows, agent: str | None, histories: dict[str, list[Any]]) -> Iterator[Loaded]:
    """tau2's dir layout: ``simulations/<id>.json`` beside the results file, listed by ``simulation_index``."""
    folder = Path(doc.file).parent / "simulations"
    index = doc.members.get("simulation_index")
    on_disk = sorted(folder.glob("*.json")) if folder.is_dir() else []
    listed: list[tuple[str, Path]] = []
    if isinstance(index, list) and index:
        for k, entry in enumerate(index):
            sim_id = as_id(entry.get("id")) if isinstance(entry, dict) else None
            if sim_id is None:
                info = InputErrorInfo(
                    kind="invalid_field", message=f"a simulation_index entry needs an id, got {short(entry)}", file=doc.file, field=f"simulation_index[{k}].id"
                )
                yield rows.error(info, line=None, task_id=None, trajectory_id=None)
                continue
            listed.append((sim_id, folder / f"{sim_id}.json"))
    else:
        listed = [(p.stem, p) for p in on_disk]
    names = {p.name for _, p in listed}
    for sim_id, file in listed:
        if not file.is_file():
            info = InputErrorInfo(
                kind="missing_file",
                message=f"simulation {sim_id!r} is listed in simulation_index but {file} does not exist",
                file=doc.file,
                field="simulation_index",
            )
            yield rows.error(info, line=None, task_id=None, trajectory_id=sim_id)
            continue
        for raw in read_items(file, doc.limits):
            value = raw.error if raw.error is not None else raw.value
            yield _row(rows, value, "", raw.line, agent, str(file), histories)
    for file in on_disk:
        if file.name not in names:
            info = InputErrorInfo(kind="unlisted_file", message=f"{file.name} is in {folder} but not in simulation_index; not read", file=str(file))
            yield rows.error(info, line=None, task_id=None, trajectory_id=file.stem, file=str(file))


BUNDLE = BundleFormat(
    name="tau2",
    description="tau2-bench results: {timestamp, info, tasks, simulations} (tasks come from the file)",
    sniff=_sniff,
    read=_read,
)

__all__ = ["BUNDLE", "published_tool_schemas", "published_tool_types", "reward_label", "tool_schemas"]
