"""The system prompt an agent runs under: a short, versioned harness prompt plus the task's policy.

Why versioned: a change of wording changes agent behaviour, so a result is only comparable with
another run under the same harness. ``HARNESS_VERSION`` names the wording; the manifest records
it with the text's digest, so an edit without a version bump still shows.
"""

from __future__ import annotations

import hashlib

from judge import Task

HARNESS_VERSION = "1"
HARNESS_PROMPT = """\
You are an assistant that completes the user's requests with the tools provided.
- Use the tools to look up facts; never invent a tool result.
- Calls that do not depend on each other may be made together in one message.
- When a call fails, read the error and decide: correct the call, use another tool, or say what failed.
- When you have the answer, reply with it in plain text, concisely, without calling a tool."""

HARNESS_DIGEST = hashlib.sha256(HARNESS_PROMPT.encode("utf-8")).hexdigest()[:12]


def harness_id() -> str:
    """``<version>+<digest>``: what trajectories and the manifest record."""
    return f"{HARNESS_VERSION}+{HARNESS_DIGEST}"


def system_prompt(task: Task) -> str:
    """The harness prompt, then the task's policy text (the rules the agent must follow)."""
    policy = task.policy.text.strip() if task.policy is not None and task.policy.text else ""
    return HARNESS_PROMPT if not policy else f"{HARNESS_PROMPT}\n\nPolicy:\n{policy}"
