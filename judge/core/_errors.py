"""Input errors that name the file, the line and the field, so a user can fix the input at once."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel

_INDEX = re.compile(r"\[\d+\]")


class SourceRef(BaseModel):
    """Where an item came from: file and 1-based line (the line an item starts on for JSON arrays)."""

    file: str
    line: int | None = None
    item: int | None = None  # 0-based index within the file


class InputErrorKind(StrEnum):
    """Every kind of input error, one closed list ("Bad input" in docs/formats/index.md documents each)."""

    MALFORMED_JSON = "malformed_json"  # not JSON, or a duplicate key in one object
    ENCODING = "encoding"  # bytes that are not UTF-8 (with the offset), an unpaired surrogate
    INVALID_FIELD = "invalid_field"  # a field of the wrong type or value (names the field path)
    TOO_LARGE = "too_large"  # a line, item, member or string over its size limit
    TOO_DEEP = "too_deep"  # nesting deeper than the limit
    DUPLICATE_ID = "duplicate_id"  # an id already read (names the first place)
    UNKNOWN_TASK = "unknown_task"  # a trajectory whose task is missing or unreadable
    AMBIGUOUS_TASK = "ambiguous_task"  # a task id defined twice with different content
    UNKNOWN_TURN = "unknown_turn"  # a dialogue whose turns cannot be matched to the task's
    UNKNOWN_ITEM = "unknown_item"  # a label for an item the labelling set does not hold
    CONFLICT = "conflict"  # one annotator gives one item two different labels
    UNSUPPORTED = "unsupported"  # a format feature this reader does not grade (says which)
    UNKNOWN_FORMAT = "unknown_format"  # a file that matches no known format
    MALFORMED_ARCHIVE = "malformed_archive"  # a zip archive that cannot be read
    MISSING_MEMBER = "missing_member"  # an archive member a format needs
    MISSING_FILE = "missing_file"  # a file a result set refers to
    UNLISTED_FILE = "unlisted_file"  # a file in a result folder that its index does not list
    NO_SAMPLES = "no_samples"  # a log without a single sample
    INCOMPLETE_LOG = "incomplete_log"  # a log whose run did not finish
    NOT_FOUND = "not_found"  # a path that does not exist
    CHANGED = "changed"  # an input that changed since the run that used it
    EMPTY = "empty"  # a file holding no items
    GRADING_ERROR = "grading_error"  # grading this item failed (an environment fault); the rest goes on
    READER_ERROR = "reader_error"  # a reader failed on an item of a shape it does not handle (a bug to report); the rest goes on


def _known_kind(value: str) -> str:
    if value not in InputErrorKind._value2member_map_:
        raise ValueError(f"unknown input error kind {value!r}; add it to InputErrorKind with its meaning")
    return value


class InputErrorInfo(BaseModel):
    kind: Annotated[str, AfterValidator(_known_kind)]  # an InputErrorKind value
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
