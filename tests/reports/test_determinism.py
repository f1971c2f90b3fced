"""Same results -> byte-identical report.md, tables (CSV and Parquet) and report.html, except the
one ``Generated`` line of the HTML."""

from __future__ import annotations

from pathlib import Path

from reports import build_report


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_two_renders_differ_only_in_the_timestamp_line(judged_run: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    build_report([judged_run], tmp_path / "a")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")  # a different clock: only that line may change
    build_report([judged_run], tmp_path / "b")
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a.keys() == b.keys() and any(k.endswith(".parquet") for k in a)
    for name in a:
        if name != "report.html":
            assert a[name] == b[name], name
    la, lb = a["report.html"].decode().splitlines(), b["report.html"].decode().splitlines()
    assert len(la) == len(lb)
    diff = [(x, y) for x, y in zip(la, lb) if x != y]
    assert len(diff) == 1 and 'class="generated"' in diff[0][0] and "2023-11-14" in diff[0][0] and "2027-01-15" in diff[0][1]


def test_pinned_clock_gives_identical_html(graded_run: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    build_report([graded_run, graded_run], tmp_path / "a")
    build_report([graded_run, graded_run], tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
