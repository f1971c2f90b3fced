"""Errors in how the inputs were named (not in an item of them): the run cannot start.

Each names the command-line option to change (``--format``, ``--task-format``, ``--reference``,
``--tasks``, ``--trajectories``) and, where there is a choice, the accepted names, so the CLI
can exit 2 with a message a user acts on. The text itself names no Python argument.
"""

from __future__ import annotations

from judge import ConfigurationError


class UsageError(ConfigurationError):
    """The inputs cannot be read as named; ``option`` says which option to fix."""

    def __init__(self, option: str, message: str, accepted: tuple[str, ...] | list[str] = ()):
        self.option = option
        self.accepted = tuple(accepted)
        self.detail = message
        super().__init__(message + (f"; accepted: {', '.join(self.accepted)}" if self.accepted else ""))

    def for_cli(self) -> str:
        return f"{self.option}: {self}"
