"""Rubric files: a user's own rubrics as jinja2 templates with a TOML header, and the built-ins exported.

A rubric file ``NAME.j2`` holds the template (blocks ``system`` and ``user``, as the built-ins in
``templates/``) and a header, either as TOML front matter between two ``+++`` lines at the top of
the file or in a sidecar ``NAME.toml``::

    +++
    name = "answer_correctness"       # a built-in name overrides the built-in; a new name adds a rubric
    check = "answer"                  # whose material it renders: answer | calls | grounding | policy | open_ended | step_equivalence
    description = "..."
    label_description = "correct: ...; incorrect: ..."   # shown to the judge in the verdict schema

    [labels.correct]                  # in order; outcome match passes the check
    score = 1.0
    outcome = "match"
    [labels.incorrect]
    score = -1.0
    outcome = "mismatch"

    [[examples]]                      # optional few-shot examples (written by calibrate --few-shot)
    label = "incorrect"
    material = '{"question": "...", "gold_answers": ["..."], "answer": "..."}'   # JSON (TOML has no null)
    +++
    {% block system %}...{% endblock %}
    {% block user %}{{ data("answer", answer) }}...{% endblock %}

Files whose name starts with ``_`` are partials (``{% include "_data_rules.j2" %}``); a folder's
partials shadow the built-in ones. Every file is checked before use (``_safety``): errors name
the file and the line.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from judge import Outcome
from rubrics._base import FRONT_MATTER, FrontMatterError, RubricExample, TemplateRubric, refuse_link_out, split_front_matter, verdict_base
from rubrics._materials import CHECK_OF_RUBRIC, CONTRACTS
from rubrics._safety import RubricFileError, check_template

TEMPLATE_SUFFIX = ".j2"
SIDECAR_SUFFIX = ".toml"


class LabelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: float
    outcome: Literal["match", "mismatch"]
    description: str = ""


class ExampleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    material: str  # JSON object text
    item_id: str = ""


class RubricHeader(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    check: str
    description: str = ""
    label_description: str | None = None
    labels: dict[str, LabelSpec] = Field(min_length=2)
    examples: list[ExampleSpec] = Field(default_factory=list)


def schema_title(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Verdict"


def verdict_schema(name: str, labels: Mapping[str, LabelSpec], label_description: str | None, check: str | None = None) -> type[BaseModel]:
    """A ``JudgeVerdict`` subclass named like the built-ins (``AnswerCorrectnessVerdict``), so a built-in
    read back from its file has the same JSON schema, hence the same version and tool name. A rubric
    that judges calls (check policy or calls) names the decisive step too (``StepVerdict``); one on a
    value the answer states (check answer or grounding) copies it (``AnswerVerdict``)."""
    description = label_description or "; ".join(f"{k}: {v.description}" if v.description else k for k, v in labels.items())
    label_type: Any = Literal[tuple(labels)]  # a Literal of the header's labels, built at run time
    base = verdict_base(check)
    return create_model(schema_title(name), __base__=base, label=(label_type, Field(description=description)))


def _toml_error_line(exc: tomllib.TOMLDecodeError) -> int | None:
    m = re.search(r"at line (\d+)", str(exc))
    return int(m.group(1)) if m else None


def _header_line(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best effort: the header line that holds the field at ``loc`` (1-based within ``text``)."""
    lines = text.splitlines()
    start, found = 0, None
    for part in loc:
        if not isinstance(part, str):
            continue
        pattern = re.compile(rf"(^|[\s.\[{{,\"']){re.escape(part)}([\s.\]=\"']|$)")
        for i in range(start, len(lines)):
            if pattern.search(lines[i]):
                start, found = i, i + 1
                break
    return found


def read_rubric_file(path: Path) -> TemplateRubric:
    """Parse and check one rubric file; ``RubricFileError`` names file and line on any problem."""
    path = Path(path)
    refuse_link_out(path, path.parent)
    sidecar = path.with_suffix(SIDECAR_SUFFIX)
    refuse_link_out(sidecar, path.parent)
    if not path.is_file():
        raise RubricFileError(path, None, "rubric file not found (a missing file or a broken link)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RubricFileError(path, None, f"not UTF-8 (byte {exc.start})") from None
    try:
        front, _, _ = split_front_matter(text)
    except FrontMatterError as exc:
        raise RubricFileError(path, 1, str(exc)) from None
    if front is not None and sidecar.is_file():
        raise RubricFileError(path, 1, f"the header is given twice: as front matter and in {sidecar.name}; keep one")
    if front is None and not sidecar.is_file():
        raise RubricFileError(path, 1, f"no header: start the file with a TOML front matter between {FRONT_MATTER!r} lines, or put {sidecar.name} beside it")
    header_path, header_text, offset = (path, front, 1) if front is not None else (sidecar, sidecar.read_text(encoding="utf-8"), 0)
    assert header_text is not None
    try:
        raw = tomllib.loads(header_text)
    except tomllib.TOMLDecodeError as exc:
        line = _toml_error_line(exc)
        raise RubricFileError(header_path, None if line is None else line + offset, f"header is not valid TOML: {exc}") from None
    try:
        header = RubricHeader.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        line = _header_line(header_text, loc)
        field = ".".join(str(p) for p in loc)
        raise RubricFileError(header_path, None if line is None else line + offset, f"header field {field}: {err['msg']}") from None

    def at(*loc: Any) -> int | None:
        line = _header_line(header_text, loc)
        return None if line is None else line + offset

    if header.check not in CONTRACTS:
        raise RubricFileError(header_path, at("check"), f"header field check: {header.check!r} is not a check; use one of {', '.join(CONTRACTS)}")
    builtin_check = CHECK_OF_RUBRIC.get(header.name)
    if builtin_check is not None and builtin_check != header.check:
        raise RubricFileError(
            header_path, at("check"), f"rubric {header.name!r} overrides the built-in that serves check {builtin_check!r}; this file says {header.check!r}"
        )
    outcomes = {v.outcome for v in header.labels.values()}
    if outcomes != {"match", "mismatch"}:
        raise RubricFileError(header_path, at("labels"), "labels need at least one with outcome 'match' (passes the check) and one with 'mismatch'")
    examples = []
    for i, ex in enumerate(header.examples):
        try:
            material = json.loads(ex.material)
        except ValueError as exc:
            raise RubricFileError(header_path, at("examples", "material"), f"header field examples.{i}.material: not JSON: {exc}") from None
        if not isinstance(material, dict):
            raise RubricFileError(header_path, at("examples", "material"), f"header field examples.{i}.material: a JSON object is needed")
        if ex.label not in header.labels:
            raise RubricFileError(header_path, at("examples", "label"), f"header field examples.{i}.label: {ex.label!r} is not one of {list(header.labels)}")
        examples.append(RubricExample(label=ex.label, material=material, item_id=ex.item_id))
    contract = CONTRACTS[header.check]
    rubric = TemplateRubric(
        name=header.name,
        template=path.name,
        verdict_schema=verdict_schema(header.name, header.labels, header.label_description, header.check),
        label_scores={k: v.score for k, v in header.labels.items()},
        label_outcomes={k: Outcome(v.outcome) for k, v in header.labels.items()},
        required=contract.required,
        optional=contract.optional,
        description=header.description,
        check=header.check,
        folder=path.parent.resolve(),
        examples=tuple(examples),
    )
    check_template(rubric, origin=path.resolve())
    return rubric


def read_rubric_folder(folder: Path) -> dict[str, TemplateRubric]:
    """The rubrics a folder defines (not the built-ins), by name; two files with one name are an error."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RubricFileError(folder, None, "rubric folder not found (or not a folder)")
    out: dict[str, TemplateRubric] = {}
    origin: dict[str, Path] = {}
    for entry in sorted(folder.iterdir()):  # partials too, used or not: the folder is refused as a whole
        if entry.suffix in (TEMPLATE_SUFFIX, SIDECAR_SUFFIX):
            refuse_link_out(entry, folder)
    templates = sorted(p for p in folder.glob(f"*{TEMPLATE_SUFFIX}") if not p.name.startswith("_"))
    for sidecar in sorted(folder.glob(f"*{SIDECAR_SUFFIX}")):
        if not sidecar.with_suffix(TEMPLATE_SUFFIX).is_file():
            raise RubricFileError(sidecar, None, f"a rubric header without its template {sidecar.with_suffix(TEMPLATE_SUFFIX).name}")
    if not templates:
        raise RubricFileError(folder, None, f"no rubric files (*{TEMPLATE_SUFFIX}, not starting with '_') in this folder")
    for path in templates:
        rubric = read_rubric_file(path)
        if rubric.name in out:
            raise RubricFileError(path, None, f"rubric {rubric.name!r} is already defined by {origin[rubric.name].name}")
        out[rubric.name] = rubric
        origin[rubric.name] = path
    return out


def rubric_set(folder: Path | None = None, builtins: Mapping[str, TemplateRubric] | None = None) -> dict[str, TemplateRubric]:
    """The built-in rubrics with a folder's rubrics added or overriding them by name."""
    from rubrics import RUBRICS

    table = dict(RUBRICS if builtins is None else builtins)
    if folder is not None:
        table.update(read_rubric_folder(folder))
    return dict(sorted(table.items()))


def rubric_header(rubric: TemplateRubric) -> dict[str, Any]:
    props = rubric.verdict_schema.model_json_schema().get("properties", {})
    header: dict[str, Any] = {"name": rubric.name, "check": rubric.check}
    if rubric.description:
        header["description"] = rubric.description
    label_description = props.get("label", {}).get("description")
    if label_description:
        header["label_description"] = label_description
    header["labels"] = {lab: {"score": float(rubric.label_scores[lab]), "outcome": str(rubric.label_outcomes[lab])} for lab in rubric.labels}
    if rubric.examples:
        header["examples"] = [
            {"label": e.label, "material": json.dumps(dict(e.material), ensure_ascii=False, sort_keys=True), **({"item_id": e.item_id} if e.item_id else {})}
            for e in rubric.examples
        ]
    return header


def rubric_file_text(rubric: TemplateRubric) -> str:
    bodies = rubric.template_bodies()
    return f"{FRONT_MATTER}\n{tomli_w.dumps(rubric_header(rubric))}{FRONT_MATTER}\n{bodies[rubric.template]}"


def write_rubric_files(rubrics: Mapping[str, TemplateRubric], folder: Path, *, overwrite: bool = False) -> list[Path]:
    """Write each rubric as ``NAME.j2`` with front matter, plus the partials they include.

    Refuses to replace a different existing file unless ``overwrite`` (the folder may hold a user's
    edits); an identical file is left as it is. Returns the files written or kept, sorted.
    """
    folder = Path(folder)
    planned: dict[Path, str] = {}
    for rubric in rubrics.values():
        if rubric.check is None:
            raise ValueError(f"rubric {rubric.name!r} names no check; it cannot be written as a file")
        bodies = rubric.template_bodies()
        planned[folder / f"{rubric.name}{TEMPLATE_SUFFIX}"] = rubric_file_text(rubric)
        for name, body in bodies.items():
            if name != rubric.template:
                planned[folder / name] = body
    clashes = [p for p, text in planned.items() if p.is_file() and p.read_text(encoding="utf-8") != text]
    if clashes and not overwrite:
        raise FileExistsError(f"would replace files that differ: {', '.join(str(p) for p in clashes)} (use --force to replace them)")
    folder.mkdir(parents=True, exist_ok=True)
    for path, text in planned.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return sorted(planned)
