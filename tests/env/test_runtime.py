"""The environment runtime: tool styles, labels, isolation, and the safety rails."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from data.build._toolkit import endpoint, write_domain
from pipelines.env import DomainError, UnknownEnvironment, list_environments, load_environment
from tests.env.conftest import tiny_domain


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sample_domains_listed_with_versions():
    names = list_environments()
    assert names == sorted(names)
    assert {"flights", "hospital", "movies", "olympics", "retail"} <= set(names)
    versions = {load_environment(n).version for n in names}
    assert len(versions) == len(names)


def test_unknown_environment_names_known_ones():
    with pytest.raises(UnknownEnvironment, match="olympics"):
        load_environment("atlantis")


def test_endpoint_and_slot_chain_with_labels(olympics):
    s = olympics.session()
    loaded = s.execute("get_data", {"table": "athletes"}, label="step1")
    assert loaded.ok and loaded.result["row_count"] == 240
    kenya = s.execute("filter_data", {"data_source": "$step1.data$", "key_name": "country", "value": "Kenya", "condition": "equal"}, label="step2")
    same = s.execute("select_data_equal_to", {"data_source": loaded.result["data"], "key_name": "country", "value": "Kenya"})
    assert kenya.ok and same.ok and kenya.result == same.result  # content-addressed handles: same rows, same response
    count = s.execute("aggregate_data", {"data_source": "$step2.data$", "key_name": "athlete_id", "aggregation_type": "count"})
    assert count.result == {"data": kenya.result["row_count"]}
    top = s.execute("get_athlete_most_medals", {"medal": "gold"})
    assert top.ok and set(top.result) == {"athlete_id", "name", "country", "medal_count"}


def test_unknown_label_and_unknown_handle_are_tool_errors(olympics):
    s = olympics.session()
    r = s.execute("aggregate_data", {"data_source": "$nope.data$", "key_name": "x", "aggregation_type": "count"})
    assert not r.ok and "unknown label" in r.error
    r = s.execute("aggregate_data", {"data_source": "ds_0000", "key_name": "x", "aggregation_type": "count"})
    assert not r.ok and "unknown data_source" in r.error


def test_handles_do_not_leak_between_sessions(olympics):
    a, b = olympics.session(cache=True), olympics.session(cache=True)
    handle = a.execute("get_data", {"table": "games"}).result["data"]
    r = b.execute("aggregate_data", {"data_source": handle, "key_name": "host_city", "aggregation_type": "count"})
    assert not r.ok and "unknown data_source" in r.error


@pytest.mark.parametrize(
    "name,arguments,fragment",
    [
        ("no_such_tool", {}, "unknown tool"),
        ("get_athlete_by_id", {"athlete": 3}, "required property"),
        ("get_athlete_by_id", {"athlete_id": "three"}, "is not of type 'integer'"),
        ("get_athlete_by_id", ["not", "a", "dict"], "must be a JSON object"),
        ("filter_data", {"data_source": "ds_x", "key_name": "k", "value": 1, "condition": "like"}, "is not one of"),
    ],
)
def test_bad_calls_are_recorded_errors(olympics, name, arguments, fragment):
    r = olympics.session().execute(name, arguments)
    assert not r.ok and fragment in r.error


@pytest.mark.parametrize(
    "arguments",
    [
        ("get_athlete_by_name", {"name": "x'; DROP TABLE athletes; --"}),
        ("get_athlete_by_name", {"name": "../../etc/passwd"}),
        ("get_data", {"table": "athletes; DROP TABLE athletes"}),
        ("get_data", {"table": "../../etc/passwd"}),
        ("get_data", {"table": "sqlite_master"}),
        ("count_medals_by_country", {"country": "Kenya' OR '1'='1", "medal": "gold"}),
        ("search_olympic_history", {"query": "'; ATTACH DATABASE '/tmp/x.db' AS x; --"}),
    ],
)
def test_injection_strings_do_nothing(olympics, arguments):
    db = olympics.folder / "db.sqlite"
    before_file, before_state = _file_hash(db), olympics.base_digest()
    s = olympics.session()
    name, args = arguments
    r = s.execute(name, args)
    assert (not r.ok) or r.result in (None, [], {"medal_count": 0}) or name.startswith("search")
    if name == "get_data":  # refused by the schema's enum before the runtime's own table check
        assert not r.ok and "is not one of" in r.error
    loaded = s.execute("get_data", {"table": "athletes"})
    assert loaded.ok and loaded.result["row_count"] == 240
    assert s.state_digest() == before_state and _file_hash(db) == before_file
    assert not s.modified


def test_table_names_are_checked_against_the_schema(tiny_root, tmp_path):
    """Without an enum in the schema, the runtime's own check still refuses unknown tables."""
    from data.build._toolkit import write_domain as _write

    domain = tiny_domain()
    for tool in domain.tools:
        if tool["spec"]["name"] == "get_data":
            tool["spec"]["parameters"]["properties"]["table"].pop("enum")
    _write(domain, tmp_path)
    env = load_environment("tiny", tmp_path)
    for table in ("items; DROP TABLE items", "../../etc/passwd", "sqlite_master", "ITEMS"):
        r = env.session().execute("get_data", {"table": table})
        assert not r.ok and "unknown table" in r.error
    assert env.session().execute("get_data", {"table": "items"}).result["row_count"] == 400


def test_column_names_are_checked_against_the_data(olympics):
    s = olympics.session()
    s.execute("get_data", {"table": "athletes"}, label="a")
    r = s.execute("sort_data", {"data_source": "$a.data$", "key_name": "name; DROP TABLE athletes"})
    assert not r.ok and "unknown key_name" in r.error


def test_hanging_tool_is_cut_off_and_session_survives(tiny):
    s = tiny.session()
    r = s.execute("hang", {"floor": 0})
    assert not r.ok and "time limit exceeded" in r.error
    assert s.execute("get_item", {"item_id": 2}).result == {"item_id": 2, "name": "item2", "grp": 2}


def test_result_size_is_capped(tiny):
    r = tiny.session().execute("items_in_group", {"grp": 0})  # 133 rows: under the cap
    assert r.ok and len(r.result) == 133
    s = tiny.session()
    s.execute("get_data", {"table": "items"}, label="all")
    r = s.execute("retrieve_data", {"data_source": "$all.data$", "key_name": "name"})  # 400 values > 200
    assert not r.ok and "result too large" in r.error


def test_writes_are_isolated_per_session_and_never_touch_the_file(tiny):
    db = tiny.folder / "db.sqlite"
    before = _file_hash(db)
    a, b = tiny.session(), tiny.session()
    base = a.state_digest()
    w = a.execute("rename_item", {"item_id": 1, "name": "renamed"})
    assert w.ok and w.result["record"]["name"] == "renamed"
    assert a.execute("get_item", {"item_id": 1}).result["name"] == "renamed"  # the session sees its own write
    assert b.execute("get_item", {"item_id": 1}).result["name"] == "item1"  # another session does not
    assert a.state_digest() != base and b.state_digest() == base
    assert tiny.session().state_digest() == base and _file_hash(db) == before
    failed = b.execute("rename_item", {"item_id": 999, "name": "x"})
    assert not failed.ok and "not found" in failed.error and b.state_digest() == base


def test_cached_reads_are_not_served_after_a_write(tiny):
    a = tiny.session(cache=True)
    assert a.execute("get_item", {"item_id": 5}).result["name"] == "item5"
    a.execute("rename_item", {"item_id": 5, "name": "five"})
    assert a.execute("get_item", {"item_id": 5}).result["name"] == "five"
    assert tiny.session(cache=True).execute("get_item", {"item_id": 5}).result["name"] == "item5"


def test_domain_with_attach_tool_is_refused(tmp_path):
    bad = tiny_domain([endpoint("escape", "Attach a file.", {}, "ATTACH DATABASE '/tmp/evil.db' AS evil", "rows")])
    write_domain(bad, tmp_path)
    with pytest.raises(DomainError, match="escape"):
        load_environment("tiny", tmp_path)


def test_authorizer_blocks_attach_even_at_runtime(olympics):
    conn = olympics._conn
    with pytest.raises(sqlite3.DatabaseError):
        conn.execute("ATTACH DATABASE ':memory:' AS other")


def test_read_connection_is_read_only(olympics):
    with pytest.raises(sqlite3.OperationalError):
        olympics._conn.execute("DELETE FROM athletes")


def test_broken_tools_file_names_the_entry(tmp_path):
    write_domain(tiny_domain(), tmp_path)
    path = tmp_path / "tiny" / "tools.json"
    path.write_text('{"tools": [{"spec": {"name": "x"}, "impl": {"kind": "teleport"}}]}', encoding="utf-8")
    with pytest.raises(DomainError, match=r"tools\[0\] \(x\)\.impl\.kind"):
        load_environment("tiny", tmp_path)
