"""Executable domains: a SQLite database, API tools over it, and a document retriever.

A domain folder holds ``db.sqlite``, ``tools.json`` (``{"tools": [{"spec": ToolSpec, "impl":
{...}}]}``) and optionally ``docs.jsonl`` (``{doc_id, title, text}`` per line). Tool behaviour
is declarative data (``impl.kind`` in sql / write / slot / retrieve), so a domain is content:
its version is the hash of those three files.

Isolation: reads go through one read-only connection (URI ``mode=ro``); a session's first write
copies the database into its own in-memory connection (``Connection.backup``) and every later
call of that session sees that copy. Failures never escape ``Session.execute``: an unknown tool,
bad arguments, a timeout or an internal error all come back as ``ExecResult(ok=False, error=...)``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import msgspec

from judge import BadInputError, ConfigurationError, ToolSpec, canonical_json, json_lines
from pipelines.env import _slot
from pipelines.env._catalog import environment_version, list_environments, roots
from pipelines.env._labels import LabelError, has_reference, resolve
from pipelines.env._sql import Deadline, copy_to_memory, open_read_only, read_schema, rows_as_dicts, state_digest

DEFAULT_TIME_LIMIT_S = 2.0
MAX_RESULT_ROWS = 200
MAX_DATASET_ROWS = 5000
MAX_TOP_K = 10
CACHE_SIZE = 4096
IMPL_KINDS = ("sql", "write", "slot", "retrieve")
SLOT_OPS = ("get_data", "filter", "select", "sort", "aggregate", "retrieve")


class ExecResult(msgspec.Struct, frozen=True):
    ok: bool
    result: Any = None
    error: str | None = None


class ToolError(BadInputError):
    """A failure the agent caused or could see: recorded as the call's error, never raised out."""


class DomainError(ConfigurationError):
    """A broken or unknown domain (a setup problem, raised to the caller)."""


class UnknownEnvironment(DomainError):
    """No domain of that name under the root; the message lists the known ones."""


class _Outcome(msgspec.Struct):
    result: Any
    datasets: dict[str, _slot.Dataset] = msgspec.field(default_factory=dict)


def _json_ready(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    return value


class Environment:
    """One domain. ``session()`` gives a fresh isolated state; the environment itself never changes."""

    def __init__(self, name: str, folder: Path, time_limit_s: float = DEFAULT_TIME_LIMIT_S, cache_size: int = CACHE_SIZE):
        self.name = name
        self.folder = folder
        self.time_limit_s = time_limit_s
        db_path, tools_path, docs_path = folder / "db.sqlite", folder / "tools.json", folder / "docs.jsonl"
        for path in (db_path, tools_path):
            if not path.is_file():
                raise DomainError(f"environment {name!r}: missing {path}")
        self.version = environment_version(folder)
        self._conn, self._deadline = open_read_only(db_path)
        self.schema = read_schema(self._conn)
        self._lock = threading.RLock()
        self.docs = self._load_docs(docs_path) if docs_path.is_file() else []
        self._doc_index: Any = None  # BM25 over the documents, built on the first search (bm25s loads scipy)
        self.tools, self._impl = self._load_tools(tools_path)
        self._tool_index = {t.name: t for t in self.tools}
        self._shortlist_index: Any = None
        self._base_digest: str | None = None
        self._cache: OrderedDict[tuple[str, str], tuple[ExecResult, dict[str, _slot.Dataset]]] = OrderedDict()
        self._cache_size = cache_size
        self.cache_hits = 0
        self.cache_misses = 0

    # -- loading ---------------------------------------------------------------------------
    def _load_docs(self, path: Path) -> list[dict[str, Any]]:
        docs = []
        for lineno, line in enumerate(json_lines(path.read_text(encoding="utf-8")), start=1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except ValueError as exc:
                raise DomainError(f"{path}:{lineno}: invalid JSON ({exc})") from exc
            for key in ("doc_id", "title", "text"):
                if not isinstance(doc.get(key), str):
                    raise DomainError(f"{path}:{lineno}: field {key!r} must be a string")
            docs.append({"doc_id": doc["doc_id"], "title": doc["title"], "text": doc["text"]})
        return docs

    def _load_tools(self, path: Path) -> tuple[list[ToolSpec], dict[str, dict[str, Any]]]:
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))["tools"]
        except (ValueError, KeyError, TypeError) as exc:
            raise DomainError(f"{path}: expected {{'tools': [...]}} ({exc})") from exc
        specs, impls = [], {}
        for i, entry in enumerate(entries):
            label = entry.get("spec", {}).get("name") if isinstance(entry, dict) and isinstance(entry.get("spec"), dict) else None
            where = f"{path}: tools[{i}]" + (f" ({label})" if label else "")
            try:
                spec = ToolSpec.model_validate(entry["spec"])
            except Exception as exc:  # pydantic error text names the field
                raise DomainError(f"{where}.spec: {exc}") from exc
            impl = entry.get("impl")
            if not isinstance(impl, dict) or impl.get("kind") not in IMPL_KINDS:
                raise DomainError(f"{where}.impl.kind: must be one of {IMPL_KINDS}")
            if spec.name in impls:
                raise DomainError(f"{where}.spec.name: duplicate tool {spec.name!r}")
            if (impl["kind"] == "write") != (spec.side_effect == "write"):
                raise DomainError(f"{where}: write impls and side_effect='write' go together")
            if impl["kind"] == "slot" and impl.get("op") not in SLOT_OPS:
                raise DomainError(f"{where}.impl.op: must be one of {SLOT_OPS}")
            for key in ("sql", "precheck", "conflict", "result_sql"):
                sql = impl.get(key)
                if isinstance(sql, dict):
                    sql = sql.get("sql")
                if sql is not None:
                    self._check_sql(sql, f"{where}.impl.{key}")
            for j, sql in enumerate(impl.get("statements", [])):
                self._check_sql(sql, f"{where}.impl.statements[{j}]")
            import jsonschema  # here, not at import time: `judge env list` must start fast

            try:
                jsonschema.Draft202012Validator.check_schema(spec.parameters)
            except jsonschema.SchemaError as exc:
                raise DomainError(f"{where}.spec.parameters: {exc.message}") from exc
            specs.append(spec)
            impls[spec.name] = impl
        return specs, impls

    def _check_sql(self, sql: str, where: str) -> None:
        try:
            with self._lock:
                self._conn.execute("EXPLAIN " + sql, {}).fetchall()
        except sqlite3.ProgrammingError:
            pass  # EXPLAIN wants the parameters bound; syntax was fine
        except sqlite3.Error as exc:
            if "readonly" in str(exc).lower() or "read-only" in str(exc).lower():
                return
            raise DomainError(f"{where}: invalid SQL ({exc})") from exc

    # -- public API --------------------------------------------------------------------------
    def tool(self, name: str) -> ToolSpec | None:
        return self._tool_index.get(name)

    def is_write(self, name: str) -> bool:
        spec = self._tool_index.get(name)
        return spec is not None and spec.side_effect == "write"

    def session(self, cache: bool = False) -> Session:
        return Session(self, cache=cache)

    def base_digest(self) -> str:
        if self._base_digest is None:
            with self._lock:
                self._base_digest = state_digest(self._conn, self.schema)
        return self._base_digest

    def search_documents(self, query: str, k: int = 3) -> list[dict[str, Any]]:
        if self._doc_index is None:
            from pipelines.env._retriever import BM25Index

            with self._lock:
                self._doc_index = BM25Index([f"{d['title']}\n{d['text']}" for d in self.docs])
        hits = self._doc_index.search(query, k)
        return [{**self.docs[h.index], "score": h.score} for h in hits]

    def shortlist(self, query: str, k: int = 20) -> list[ToolSpec]:
        """BM25 over tool names and descriptions: how an agent picks from more than 128 tools."""
        if self._shortlist_index is None:
            from pipelines.env._retriever import BM25Index

            self._shortlist_index = BM25Index([f"{t.name.replace('_', ' ')} {t.description}" for t in self.tools])
        return [self.tools[h.index] for h in self._shortlist_index.search(query, k)]

    def close(self) -> None:
        self._conn.close()

    # -- cache (read calls against unmodified state only) --------------------------------------
    def _cache_get(self, key: tuple[str, str]) -> tuple[ExecResult, dict[str, _slot.Dataset]] | None:
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                self.cache_hits += 1
            else:
                self.cache_misses += 1
            return hit

    def _cache_put(self, key: tuple[str, str], value: tuple[ExecResult, dict[str, _slot.Dataset]]) -> None:
        with self._lock:
            self._cache[key] = value
            self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)


class Session:
    """Fresh state for one run (reference or predicted), carried across that run's turns."""

    def __init__(self, env: Environment, cache: bool = False):
        self.env = env
        self.cache = cache
        self.labels: dict[str, Any] = {}
        self.datasets: dict[str, _slot.Dataset] = {}
        self._own: tuple[sqlite3.Connection, Deadline] | None = None  # set on first write
        self.calls = 0

    @property
    def modified(self) -> bool:
        return self._own is not None

    def state_digest(self) -> str:
        if self._own is None:
            return self.env.base_digest()
        conn, _ = self._own
        return state_digest(conn, self.env.schema)

    def execute(self, name: str, arguments: Any = None, label: str | None = None) -> ExecResult:
        """Run one call. Never raises for anything the caller passed in."""
        self.calls += 1
        try:
            result = self._execute(name, {} if arguments is None else arguments)
        except (ToolError, _slot.SlotError, LabelError) as exc:
            result = ExecResult(ok=False, error=str(exc))
        except sqlite3.OperationalError as exc:
            if "interrupt" in str(exc).lower():
                result = ExecResult(ok=False, error=f"time limit exceeded ({self.env.time_limit_s:g}s)")
            else:
                result = ExecResult(ok=False, error=f"database error: {exc}")
        except sqlite3.Error as exc:
            result = ExecResult(ok=False, error=f"database error: {exc}")
        except Exception as exc:
            result = ExecResult(ok=False, error=f"internal error: {type(exc).__name__}: {exc}")
        if label and result.ok:
            self.labels[label] = result.result
        return result

    # -- dispatch ----------------------------------------------------------------------------
    def _execute(self, name: str, arguments: Any) -> ExecResult:
        if not isinstance(name, str) or name not in self.env._impl:
            raise ToolError(f"unknown tool {name!r}")
        if not isinstance(arguments, dict):
            raise ToolError(f"arguments must be a JSON object, got {type(arguments).__name__}")
        spec, impl = self.env._tool_index[name], self.env._impl[name]
        args = resolve(arguments, self.labels) if has_reference(arguments) else arguments
        self._validate(spec, args)
        args = self._with_defaults(spec, args)
        if impl["kind"] == "slot" and "data_source" in args:
            self._dataset(args["data_source"])  # unknown handles fail before any cache lookup
        cacheable = self.cache and impl["kind"] != "write" and self._own is None
        key = (name, canonical_json(args))
        if cacheable:
            hit = self.env._cache_get(key)
            if hit is not None:
                self.datasets.update(hit[1])
                return hit[0]
        outcome = self._run(name, impl, args)
        result = ExecResult(ok=True, result=outcome.result)
        self.datasets.update(outcome.datasets)
        if cacheable:
            self.env._cache_put(key, (result, dict(outcome.datasets)))
        return result

    def _validate(self, spec: ToolSpec, args: dict[str, Any]) -> None:
        import jsonschema

        validator = jsonschema.Draft202012Validator(spec.parameters)
        errors = sorted(validator.iter_errors(args), key=lambda e: (list(e.absolute_path), e.message))
        if errors:
            parts = []
            for err in errors[:5]:
                where = ".".join(str(p) for p in err.absolute_path)
                parts.append(err.message + (f" (at {where})" if where else ""))
            raise ToolError(f"invalid arguments for {spec.name}: " + "; ".join(parts))

    def _with_defaults(self, spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
        full = {}
        for pname, pschema in spec.properties.items():
            value = args.get(pname, pschema.get("default"))
            if pschema.get("type") == "integer" and isinstance(value, float) and value == int(value):
                value = int(value)
            full[pname] = value
        return full

    def _connection(self) -> tuple[sqlite3.Connection, Deadline]:
        return self._own if self._own is not None else (self.env._conn, self.env._deadline)

    def _query(self, sql: str, args: dict[str, Any]) -> sqlite3.Cursor:
        conn, deadline = self._connection()
        deadline.until = time.monotonic() + self.env.time_limit_s
        return conn.execute(sql, args)

    def _run(self, name: str, impl: dict[str, Any], args: dict[str, Any]) -> _Outcome:
        kind = impl["kind"]
        with self.env._lock:
            try:
                if kind == "sql":
                    return _Outcome(self._run_sql(impl, args))
                if kind == "write":
                    return _Outcome(self._run_write(impl, args))
                if kind == "retrieve":
                    k = args.get("k") or 3
                    if not 1 <= k <= MAX_TOP_K:
                        raise ToolError(f"k must be between 1 and {MAX_TOP_K}")
                    return _Outcome(self.env.search_documents(str(args["query"]), k))
                return self._run_slot(impl, args)
            finally:
                self._connection()[1].until = None

    def _run_sql(self, impl: dict[str, Any], args: dict[str, Any]) -> Any:
        rows, more = rows_as_dicts(self._query(impl["sql"], args), MAX_RESULT_ROWS)
        if more:
            raise ToolError(f"result too large: more than {MAX_RESULT_ROWS} rows; narrow the query")
        rows = [{k: _json_ready(v) for k, v in r.items()} for r in rows]
        shape = impl.get("result", "rows")
        if shape == "value":
            return next(iter(rows[0].values())) if rows else None
        if shape == "row":
            return rows[0] if rows else None
        return rows

    def _run_write(self, impl: dict[str, Any], args: dict[str, Any]) -> Any:
        for key, want_row in (("precheck", True), ("conflict", False)):
            check = impl.get(key)
            if check:
                found = self._query(check["sql"], args).fetchone() is not None
                if found != want_row:
                    raise ToolError(check["error"].format(**args))
        if self._own is None:
            self._own = copy_to_memory(self.env._conn)
            self._own[0].isolation_level = None
        conn, deadline = self._own
        deadline.until = time.monotonic() + self.env.time_limit_s
        conn.execute("BEGIN")
        try:
            for sql in impl["statements"]:
                conn.execute(sql, args)
            result = None
            if impl.get("result_sql"):
                row = conn.execute(impl["result_sql"], args).fetchone()
                result = {k: _json_ready(row[k]) for k in row.keys()} if row is not None else None  # noqa: SIM118 (sqlite3.Row iterates values)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return {"status": "ok", "record": result}

    def _dataset(self, handle: Any) -> _slot.Dataset:
        if not isinstance(handle, str) or handle not in self.datasets:
            raise ToolError(f"unknown data_source {handle!r}: pass the 'data' handle returned by an earlier call")
        return self.datasets[handle]

    def _run_slot(self, impl: dict[str, Any], args: dict[str, Any]) -> _Outcome:
        op = impl["op"]
        if op == "get_data":
            table = args["table"]
            allowed = impl.get("tables", sorted(self.env.schema))
            matches = [t for t in allowed if t == table and t in self.env.schema]
            if not matches:
                raise ToolError(f"unknown table {table!r}; tables are {sorted(allowed)}")
            schema_name = matches[0]  # the schema's own spelling goes into SQL, never the argument
            cur = self._query(f'SELECT * FROM "{schema_name}" ORDER BY rowid', {})
            rows = cur.fetchmany(MAX_DATASET_ROWS + 1)
            if len(rows) > MAX_DATASET_ROWS:
                raise ToolError(f"table {table!r} is too large to load (> {MAX_DATASET_ROWS} rows)")
            ds = _slot.Dataset(tuple(d[0] for d in cur.description), tuple(tuple(_json_ready(v) for v in r) for r in rows))
            return _Outcome(ds.describe(), {ds.handle: ds})
        source = self._dataset(args["data_source"])
        if op == "aggregate":
            value = _slot.aggregate(source, args["key_name"], args["aggregation_type"])
            return _Outcome({"data": value})
        if op == "retrieve":
            return _Outcome({"data": _slot.retrieve_values(source, args["key_name"], bool(args.get("distinct")))})
        if op == "filter":
            ds = _slot.filter_rows(source, args["key_name"], args["value"], impl.get("condition") or args["condition"])
        elif op == "select":
            ds = _slot.select_columns(source, args["columns"])
        else:
            ds = _slot.sort_rows(source, args["key_name"], bool(args.get("ascending", True)), args.get("limit"))
        return _Outcome(ds.describe(), {ds.handle: ds})


_LOADED: dict[tuple[str, str, float], Environment] = {}
_LOAD_LOCK = threading.Lock()


def _root(root: Path | None) -> Path:
    return roots(root)


def load_environment(name: str, root: Path | None = None, time_limit_s: float = DEFAULT_TIME_LIMIT_S) -> Environment:
    """Load (once per process, per root) a domain; a clear error names the known domains."""
    base = _root(root)
    if not isinstance(name, str) or name not in list_environments(base):
        raise UnknownEnvironment(f"unknown environment {name!r} under {base}; known: {list_environments(base)}")
    key = (str(base.resolve()), name, time_limit_s)
    with _LOAD_LOCK:
        env = _LOADED.get(key)
        if env is None:
            env = Environment(name, base / name, time_limit_s=time_limit_s)
            _LOADED[key] = env
        return env
