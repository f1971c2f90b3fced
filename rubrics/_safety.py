"""Checks a rubric template must pass before it may see a case: it renders its check's material,
and case content reaches the prompt only inside data blocks.

Two independent checks, because each misses what the other sees:
- static (jinja's syntax tree): an output expression that uses material (a material name, or a
  variable derived from one by ``for`` / ``set`` / ``with``) anywhere but inside ``data(...)`` is a
  leak, reported with its line, even when the sample would not show it (``{{ answer[:3] }}``);
  the ``system`` block may not use material at all (the instructions never depend on the case);
- dynamic: the template is rendered with two differently filled samples of its check's material
  (``_materials``); it must render, keep the system message identical, show no sample string
  outside ``<data>`` blocks, and show every material key inside one.

Errors name the file and the line (``RubricFileError``).
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
from jinja2 import nodes

from rubrics._base import RubricFileError, template_environment
from rubrics._materials import CONTRACTS, canaries_in, sample_material

if TYPE_CHECKING:
    from rubrics._base import TemplateRubric

_BLOCK = re.compile(r'<data name="([A-Za-z0-9_]+)">(.*?)</data>', re.S)
REQUIRED_BLOCKS = ("system", "user")


def _names_loaded(expr: nodes.Node) -> Iterator[nodes.Name]:
    if isinstance(expr, nodes.Name) and expr.ctx == "load":
        yield expr
    for child in expr.iter_child_nodes():
        yield from _names_loaded(child)


def _is_data_call(expr: nodes.Node) -> bool:
    return isinstance(expr, nodes.Call) and isinstance(expr.node, nodes.Name) and expr.node.name == "data"


def _tainted_name(expr: nodes.Node, tainted: set[str]) -> nodes.Name | None:
    """The first material-derived name the expression's value depends on outside ``data(...)``."""
    if _is_data_call(expr):
        return None
    if isinstance(expr, nodes.Name) and expr.ctx == "load" and expr.name in tainted:
        return expr
    for child in expr.iter_child_nodes():
        hit = _tainted_name(child, tainted)
        if hit is not None:
            return hit
    return None


def _target_names(target: nodes.Node) -> set[str]:
    if isinstance(target, nodes.NSRef):
        return {target.name}
    return {n.name for n in target.find_all(nodes.Name)} | ({target.name} if isinstance(target, nodes.Name) else set())


class _LeakFinder:
    """Walks a template (and what it includes) tracking which variables carry material."""

    def __init__(self, env: jinja2.Environment, material_names: set[str]):
        self.env = env
        self.material = material_names
        self.problems: list[tuple[str | None, int, str]] = []  # (file, line, message)
        self._seen: set[str] = set()

    def template(self, name: str, tainted: set[str], strict: bool) -> None:
        key = f"{name}|{strict}"
        if key in self._seen:
            return
        self._seen.add(key)
        source, filename, _ = self.env.loader.get_source(self.env, name)  # type: ignore[union-attr]
        self.visit(self.env.parse(source, name, filename), set(tainted), strict, filename)

    def visit(self, node: nodes.Node, tainted: set[str], strict: bool, filename: str | None) -> None:
        if isinstance(node, nodes.Block):
            for child in node.body:
                self.visit(child, tainted, strict or node.name == "system", filename)
            return
        if strict and not isinstance(node, nodes.Template):
            for name in self._own_names(node):
                if name.name in tainted:
                    self.problems.append(
                        (filename, name.lineno, f"the system block uses material {name.name!r}: the system message must not depend on the case")
                    )
                    return
        if isinstance(node, nodes.Output):
            for expr in node.nodes:
                if isinstance(expr, nodes.TemplateData):
                    continue
                hit = _tainted_name(expr, tainted)
                if hit is not None:
                    self.problems.append(
                        (filename, expr.lineno, f'{hit.name!r} is case content and is output outside a data block: write {{{{ data("name", value) }}}}')
                    )
            return
        if isinstance(node, nodes.For):
            if _tainted_name(node.iter, tainted) is not None or any(n.name in tainted for n in _names_loaded(node.iter)):
                tainted |= _target_names(node.target)
        elif isinstance(node, nodes.Assign):
            if any(n.name in tainted for n in _names_loaded(node.node)):
                tainted |= _target_names(node.target)
        elif isinstance(node, nodes.With):
            for target, value in zip(node.targets, node.values, strict=False):
                if any(n.name in tainted for n in _names_loaded(value)):
                    tainted |= _target_names(target)
        elif isinstance(node, nodes.Include | nodes.Import | nodes.FromImport | nodes.Extends):
            if isinstance(node.template, nodes.Const) and isinstance(node.template.value, str):
                self.template(node.template.value, tainted, strict)
            else:
                self.problems.append((filename, node.lineno, "templates may include only fixed names (a computed template name cannot be checked)"))
            return
        elif isinstance(node, nodes.Call | nodes.CallBlock):
            call = node.call if isinstance(node, nodes.CallBlock) else node
            if not _is_data_call(call) and any(_tainted_name(a, tainted) for a in [*call.args, *(k.value for k in call.kwargs)]):
                self.problems.append((filename, node.lineno, "material may be passed only to data(...), not to a macro or other call"))
        for child in node.iter_child_nodes():
            self.visit(child, tainted, strict, filename)

    @staticmethod
    def _own_names(node: nodes.Node) -> list[nodes.Name]:
        """Names used by this node's own expressions (not by nested statements' bodies)."""
        exprs: list[nodes.Node]
        if isinstance(node, nodes.Stmt) and not isinstance(node, nodes.Output | nodes.ExprStmt | nodes.Assign):
            exprs = [c for c in node.iter_child_nodes() if isinstance(c, nodes.Expr)]
        else:
            exprs = [node]
        return [n for e in exprs for n in _names_loaded(e)]


def check_template(rubric: TemplateRubric, *, origin: Path | None = None) -> None:
    """Raise ``RubricFileError`` unless the rubric's template is safe and renders its check's material."""
    if rubric.check not in CONTRACTS:
        raise RubricFileError(origin, None, f"unknown check {rubric.check!r}; known: {', '.join(CONTRACTS)}")
    contract = CONTRACTS[rubric.check]
    env = template_environment(rubric.folders)
    path = origin or rubric.source_path
    try:
        template = env.get_template(rubric.template)
    except jinja2.TemplateSyntaxError as exc:
        raise RubricFileError(exc.filename or path, exc.lineno, f"template syntax error: {exc.message}") from None
    except jinja2.TemplateNotFound as exc:
        raise RubricFileError(path, None, f"template not found: {exc.name}") from None
    missing = [b for b in REQUIRED_BLOCKS if b not in template.blocks]
    if missing:
        raise RubricFileError(path, None, f"the template must define the blocks {list(REQUIRED_BLOCKS)}; missing: {missing}")
    finder = _LeakFinder(env, {*contract.keys, "extra_material"})
    try:
        finder.template(rubric.template, {*contract.keys, "extra_material"}, strict=False)
    except jinja2.TemplateSyntaxError as exc:
        raise RubricFileError(exc.filename or path, exc.lineno, f"template syntax error: {exc.message}") from None
    except jinja2.TemplateNotFound as exc:
        raise RubricFileError(path, None, f"included template not found: {exc.name}") from None
    if finder.problems:
        file, line, message = sorted(finder.problems, key=lambda p: (p[0] != str(path), p[1]))[0]
        raise RubricFileError(file, line, message)
    _check_rendering(rubric, contract.check, path)


def _render(rubric: TemplateRubric, tag: str, path: Path | None) -> tuple[list[dict[str, str]], dict]:
    material = sample_material(rubric.check or "", tag)
    try:
        return rubric.render(material), material
    except Exception as exc:
        file, line = _undefined_name_line(exc, rubric) or _template_frame(exc, rubric)
        raise RubricFileError(
            file or path, line, f"cannot render the material of check {rubric.check!r} ({', '.join(material)}): {type(exc).__name__}: {exc}"
        ) from None


def _undefined_name_line(exc: BaseException, rubric: TemplateRubric) -> tuple[str | None, int | None] | None:
    """For an undefined variable, the line where the template first uses that name (exact, unlike
    the traceback, whose line mapping jinja can only approximate)."""
    m = re.match(r"'(\w+)' is undefined", str(exc))
    if not isinstance(exc, jinja2.UndefinedError) or m is None:
        return None
    env = template_environment(rubric.folders)
    for name in rubric.template_bodies():
        source, filename, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]
        hits = [n.lineno for n in env.parse(source).find_all(nodes.Name) if n.name == m.group(1) and n.ctx == "load"]
        if hits:
            return filename, min(hits)
    return None


def _template_frame(exc: BaseException, rubric: TemplateRubric) -> tuple[str | None, int | None]:
    """The innermost traceback frame in one of the rubric's template files (jinja maps lines)."""
    folders = [str(f) for f in rubric.folders]
    hit: tuple[str | None, int | None] = (None, None)
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.endswith(".j2") and any(frame.filename.startswith(f) for f in folders):
            hit = (frame.filename, frame.lineno)
    return hit


def _check_rendering(rubric: TemplateRubric, check: str, path: Path | None) -> None:
    (system_a, user_a), material_a = _render(rubric, "A", path)
    (system_b, _), _ = _render(rubric, "B", path)
    if system_a["content"] != system_b["content"]:
        raise RubricFileError(path, None, "the system message changes with the case: case content may appear only in the user block, inside data blocks")
    text = user_a["content"]
    outside = _BLOCK.sub("", text)
    for key, value in material_a.items():
        leaked = [c for c in canaries_in(value) if c in outside or c[:-2] in outside]
        if leaked:
            raise RubricFileError(path, None, f"material {key!r} appears outside the data blocks of the user message")
    shown: list[str] = []
    for name, payload in _BLOCK.findall(text):
        try:
            shown += canaries_in(json.loads(payload))
        except ValueError:
            raise RubricFileError(path, None, f"data block {name!r} does not hold JSON: render material with data(name, value) only") from None
    unseen = [k for k, v in material_a.items() if canaries_in(v) and not set(canaries_in(v)) & set(shown)]
    if unseen:
        raise RubricFileError(path, None, f"the template never shows material {unseen} of check {check!r}: render each with {{{{ data(...) }}}}")
