"""What the grading path imports decides its memory floor: scipy.optimize alone is ~50 MB of RSS
per process (and per worker), so the matchers load it on first use of an unordered comparison;
pandas + pyarrow are another ~50 MB: the report writes its CSV tables without them and loads them
only to write Parquet (a run of reports.PARQUET_FROM trajectories or more, or --parquet)."""

from __future__ import annotations

import subprocess
import sys


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(m for m in ('scipy', 'sklearn', 'instructor', 'openai', 'anthropic', 'pandas', 'pyarrow') if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_grading_path_loads_no_heavy_library():
    assert _loaded_after("import pipelines.run") == set()
    # what a shard grader takes from the report package (its compact row) comes without pandas
    assert _loaded_after("import pipelines.run.shards\nfrom reports import to_row") == set()


def test_the_report_modules_load_no_tables_library():
    assert _loaded_after("import reports\nreports.write_reports\nreports.build_report\nreports.render_html") == set()


def test_unordered_comparisons_load_it_when_they_need_it():
    code = (
        "from pipelines.matching.values import values_equal\n"
        "assert values_equal([1, 2, 3], [3, 1, 2], unordered=True)\n"
        "assert not values_equal([1, 2, 3], [3, 1, 1], unordered=True)"
    )
    assert "scipy" in _loaded_after(code)


def test_listing_environments_loads_no_heavy_library():
    """`judge env list` is a start-up figure (< 0.3 s): it reads the catalogue as JSON. typer 0.29
    coerces every parameter through pydantic, which alone costs more than the rest of the command."""
    code = "import sys\nfrom pipelines.cli import main\nsys.argv = ['judge', 'env', 'list']\ntry:\n    main()\nexcept SystemExit:\n    pass"
    probe = f"{code}\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})), file=sys.stderr)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "pydantic" not in out.stderr.split() and "scipy" not in out.stderr.split()
    assert "olympics" in out.stdout  # the command ran: the bundled environments were listed
