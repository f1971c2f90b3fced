"""Helpers that write tool entries (ToolSpec + declarative impl) and build a domain folder.

Tool behaviour is data: an ``impl`` the runtime interprets (sql / write / slot / retrieve).
Every schema closes ``additionalProperties`` so a misnamed argument is an error, as in a real API.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import msgspec

TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array"}


def schema(params: dict[str, tuple], required: list[str] | None = None) -> dict[str, Any]:
    """``params``: name -> (python type or JSON type name, description[, extra schema keys])."""
    props = {}
    for name, spec in params.items():
        kind, desc = spec[0], spec[1]
        extra = spec[2] if len(spec) > 2 else {}
        props[name] = {"type": kind if isinstance(kind, (list, str)) else TYPES[kind], "description": desc, **extra}
    req = list(params) if required is None else required
    return {"type": "object", "properties": props, "required": req, "additionalProperties": False}


def endpoint(
    name: str, description: str, params: dict[str, tuple], sql: str, result: str = "rows", required: list[str] | None = None, alias_of: str | None = None
) -> dict[str, Any]:
    impl: dict[str, Any] = {"kind": "sql", "sql": sql, "result": result}
    if alias_of:
        impl["alias_of"] = alias_of
    return {"spec": {"name": name, "description": description, "parameters": schema(params, required), "side_effect": "read", "source": "api"}, "impl": impl}


def write(
    name: str,
    description: str,
    params: dict[str, tuple],
    statements: list[str],
    precheck: tuple[str, str] | None = None,
    conflict: tuple[str, str] | None = None,
    result_sql: str | None = None,
) -> dict[str, Any]:
    impl: dict[str, Any] = {"kind": "write", "statements": statements}
    if precheck:
        impl["precheck"] = {"sql": precheck[0], "error": precheck[1]}
    if conflict:
        impl["conflict"] = {"sql": conflict[0], "error": conflict[1]}
    if result_sql:
        impl["result_sql"] = result_sql
    return {"spec": {"name": name, "description": description, "parameters": schema(params), "side_effect": "write", "source": "api"}, "impl": impl}


def retriever(name: str, description: str) -> dict[str, Any]:
    params = {
        "query": (str, "What to search for, in the user's words."),
        "k": (int, "How many passages to return (1-10).", {"default": 3, "minimum": 1, "maximum": 10}),
    }
    return {
        "spec": {"name": name, "description": description, "parameters": schema(params, ["query"]), "side_effect": "read", "source": "rag"},
        "impl": {"kind": "retrieve"},
    }


def slot_family(tables: list[str]) -> list[dict[str, Any]]:
    """SLOT-BIRD-style generic query tools; results are chained through the returned ``data`` handle."""
    ds = (str, "A data handle returned by an earlier call (its 'data' field), or a $LABEL.data$ reference.")
    key = (str, "Column name.")
    conds = ["equal", "not_equal", "greater_than", "less_than", "greater_or_equal", "less_or_equal", "contains"]
    aggs = ["count", "count_distinct", "sum", "mean", "min", "max"]

    def slot(name, desc, params, op, required=None, **extra):
        return {
            "spec": {"name": name, "description": desc, "parameters": schema(params, required), "side_effect": "read", "source": "api"},
            "impl": {"kind": "slot", "op": op, **extra},
        }

    return [
        slot(
            "get_data",
            "Load a table as a data source; returns a 'data' handle, its columns, row count and a preview.",
            {"table": (str, "Table to load.", {"enum": sorted(tables)})},
            "get_data",
            tables=sorted(tables),
        ),
        slot(
            "filter_data",
            "Keep the rows of a data source whose column satisfies a condition.",
            {"data_source": ds, "key_name": key, "value": (["string", "number"], "Value to compare with."), "condition": (str, "Comparison.", {"enum": conds})},
            "filter",
        ),
        slot(
            "select_data_equal_to",
            "Keep the rows of a data source whose column equals a value.",
            {"data_source": ds, "key_name": key, "value": (["string", "number"], "Value the column must equal.")},
            "filter",
            condition="equal",
        ),
        slot(
            "select_columns",
            "Keep only the given columns of a data source.",
            {"data_source": ds, "columns": ("array", "Columns to keep, in order.", {"items": {"type": "string"}, "minItems": 1})},
            "select",
        ),
        slot(
            "sort_data",
            "Sort a data source by a column; optionally keep the first `limit` rows.",
            {
                "data_source": ds,
                "key_name": key,
                "ascending": (bool, "Ascending order when true.", {"default": True}),
                "limit": (int, "Keep only this many rows after sorting.", {"minimum": 0}),
            },
            "sort",
            ["data_source", "key_name"],
        ),
        slot(
            "aggregate_data",
            "Aggregate one column of a data source.",
            {"data_source": ds, "key_name": key, "aggregation_type": (str, "Aggregation.", {"enum": aggs})},
            "aggregate",
        ),
        slot(
            "retrieve_data",
            "Return the values of one column of a data source (at most 200).",
            {"data_source": ds, "key_name": key, "distinct": (bool, "Drop repeated values.", {"default": False})},
            "retrieve",
            ["data_source", "key_name"],
        ),
    ]


class Table(msgspec.Struct):
    name: str
    ddl: str
    rows: list[tuple]


class Domain(msgspec.Struct):
    name: str
    tables: list[Table]
    tools: list[dict[str, Any]]
    docs: list[dict[str, str]]
    facts: dict[str, Any] = msgspec.field(default_factory=dict)  # generator-side knowledge for task templates


def write_domain(domain: Domain, root: Path) -> Path:
    folder = root / domain.name
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "db.sqlite"
    if db.exists():
        db.unlink()
    conn = sqlite3.connect(db)
    for table in domain.tables:
        conn.execute(table.ddl)
        if table.rows:
            marks = ",".join("?" * len(table.rows[0]))
            conn.executemany(f"INSERT INTO {table.name} VALUES ({marks})", table.rows)
    conn.commit()
    conn.execute("VACUUM")
    conn.close()
    (folder / "tools.json").write_text(json.dumps({"tools": domain.tools}, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as fh:
        for doc in domain.docs:
            fh.write(json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n")
    return folder
