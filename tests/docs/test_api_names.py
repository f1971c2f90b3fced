"""The hook that keeps the API reference complete (``tests/docs/api_names.py``) reads inventories
and finds the names left out; the build itself runs it (``make docs``)."""

from __future__ import annotations

import zlib

import pytest

from tests.docs.api_names import FACES, check, inventory_names, undocumented


def inventory(*names: str) -> bytes:
    header = b"# Sphinx inventory version 2\n# Project: p\n# Version: 0.0.0\n# The remainder of this file is compressed using zlib.\n"
    body = "".join(f"{name} py:class 1 api/#$ -\n" for name in names).encode()
    return header + zlib.compress(body)


def test_inventory_names_reads_a_version_2_inventory():
    assert inventory_names(inventory("judge.Task", "judge.Task.task_id")) == {"judge.Task", "judge.Task.task_id"}
    with pytest.raises(ValueError, match="version 2"):
        inventory_names(b"# Sphinx inventory version 1\nplain")


def test_a_name_counts_under_its_package_or_the_module_it_lives_in():
    documented = {"judge", "judge.Task", "pipelines.reward.grade_trajectory", "reports.Thing.grade_trajectory"}
    assert undocumented("judge", ["Task", "Verdict"], documented) == ["Verdict"]
    assert undocumented("pipelines", ["grade_trajectory"], documented) == []
    assert undocumented("reports", ["Verdict"], documented) == ["Verdict"]
    assert undocumented("calibration", ["grade_trajectory"], documented) == ["grade_trajectory"]  # another package's


def test_check_names_every_public_name_an_inventory_lacks(tmp_path):
    (tmp_path / "objects.inv").write_bytes(inventory("rubrics.RUBRICS"))
    import rubrics

    missing = check(tmp_path, ["rubrics"])
    assert missing == [f"rubrics.{name}" for name in rubrics.__all__ if name != "RUBRICS"]
    assert "judge" in FACES and "pipelines" in FACES
