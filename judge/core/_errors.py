"""Input errors that name the file, the line and the field, so a user can fix the input at once."""

from __future__ import annotations

import re

from pydantic import BaseModel

_INDEX = re.compile(r"\[\d+\]")


class SourceRef(BaseModel):
    """Where an item came from: file and 1-based line (the line an item starts on for JSON arrays)."""

    file: str
    line: int | None = None
    item: int | None = None  # 0-based index within the file


class InputErrorInfo(BaseModel):
    kind: str  # malformed_json, invalid_field, unknown_task, duplicate_id, encoding, too_large, ...
    message: str
    file: str
    line: int | None = None
    field: str | None = None

    def render(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        field = f" field {self.field}" if self.field else ""
        return f"{where}:{field} {self.message} [{self.kind}]"


class InputWarning(BaseModel):
    """Something in an input item was read but not understood (an unknown field) or looks off; the
    item is still graded. ``field`` is the path of the item's field; warnings are counted per field
    pattern (indices dropped) in summary.json and shown once per field on the console."""

    kind: str  # unknown_field, orphan_result, empty_acceptable_values, ...
    message: str
    file: str
    line: int | None = None
    field: str | None = None

    @property
    def field_pattern(self) -> str:
        """The field path without indices: ``turns[2].steps[0].id`` -> ``turns[].steps[].id``."""
        return _INDEX.sub("[]", self.field or "<root>")

    def render(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        field = f" field {self.field}" if self.field else ""
        return f"{where}:{field} {self.message} [{self.kind}]"


class TrajectoryJudgeError(Exception):
    """Base of every error trajectory-judge raises on purpose: ``except TrajectoryJudgeError``
    separates what we diagnosed from a bug (the CLI's exit 1, "internal error")."""


class BadInputError(TrajectoryJudgeError, ValueError):
    """Input data that cannot be used as given (a file, an item, a field); says where."""


class ConfigurationError(TrajectoryJudgeError, ValueError):
    """A setting, option or configuration file that cannot work; names it."""


class ExternalCallError(TrajectoryJudgeError):
    """A call outside the process (a model provider, an MCP server) failed after retries."""


class InputError(BadInputError):
    """Raised (or collected) for a bad input item; ``info`` carries file, line and field path."""

    def __init__(self, info: InputErrorInfo):
        super().__init__(info.render())
        self.info = info

    @classmethod
    def at(cls, kind: str, message: str, file: str, line: int | None = None, field: str | None = None) -> InputError:
        return cls(InputErrorInfo(kind=kind, message=message, file=file, line=line, field=field))


def field_path(loc: tuple) -> str:
    """Render a pydantic error location as ``turns[0].reference_calls[2].arguments``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<root>"
