"""VAKRA-style labelled intermediate results: ``$LABEL.data_path$`` inside later arguments.

An argument that is exactly one reference is replaced by the referenced value (any JSON type);
a reference embedded in longer text is replaced by the value's text. Paths walk dict keys and
list indexes separated by dots; ``$LABEL$`` alone is the whole result.
"""

from __future__ import annotations

import json
import re
from typing import Any

from judge import BadInputError

REFERENCE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_\-]*)((?:\.[A-Za-z0-9_\-]+)*)\$")


class LabelError(BadInputError):
    pass


def _walk(value: Any, path: str, ref: str) -> Any:
    for part in [p for p in path.split(".") if p]:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise LabelError(f"reference {ref} does not resolve: no {part!r} in the labelled result")
    return value


def resolve(arguments: Any, labels: dict[str, Any]) -> Any:
    if isinstance(arguments, dict):
        return {k: resolve(v, labels) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [resolve(v, labels) for v in arguments]
    if not isinstance(arguments, str) or "$" not in arguments:
        return arguments

    def lookup(match: re.Match[str]) -> Any:
        label, path = match.group(1), match.group(2)
        if label not in labels:
            raise LabelError(f"reference {match.group(0)} names unknown label {label!r}")
        return _walk(labels[label], path, match.group(0))

    whole = REFERENCE.fullmatch(arguments)
    if whole:
        return lookup(whole)
    return REFERENCE.sub(lambda m: v if isinstance(v := lookup(m), str) else json.dumps(v, sort_keys=True), arguments)


def has_reference(arguments: Any) -> bool:
    if isinstance(arguments, dict):
        return any(has_reference(v) for v in arguments.values())
    if isinstance(arguments, list):
        return any(has_reference(v) for v in arguments)
    return isinstance(arguments, str) and REFERENCE.search(arguments) is not None
