"""The real BFCL runs as a function-calling API model writes them: every tool name sanitised.

BFCL's API handlers (OpenAI, Mistral, Google... ``is_fc_model`` with ``underscore_to_dot``) declare
``math.factorial`` as ``math_factorial`` and write ``result`` as a list of
``{"math_factorial": "<arguments JSON>"}``; BFCL's checker compares such a call with the reference
name after ``.`` -> ``_`` (``convert_func_name``). The fixtures in fixtures/formats/bfcl_fc/ are the
shared v3 xLAM and v4 gemma result files rewritten into that form (``fc_api_form``; origin:
fixtures/formats/bfcl_fc/BFCL_FC_ORIGIN.md). Grading them must give exactly the verdicts of the
originals: with ``--labels`` BFCL's own score files, the same agreement.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from judge import sanitise_tool_name
from pipelines.ingest._bfcl_decode import decode_result
from tests.ingest.conftest import FIXTURES
from tests.ingest.test_bfcl_results import V3, V4, _run, needs_shared

FC = FIXTURES / "bfcl_fc"
API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
V3_CATEGORIES = ("simple", "parallel")
V4_CATEGORIES = ("simple_python", "live_simple")


def fc_api_form(entry: dict[str, Any]) -> dict[str, Any]:
    """One result line as an API function-calling handler writes it: the calls as
    ``[{sanitised name: arguments JSON text}]``. A result that is no call list (text, an
    unreadable call, positional arguments) is what such a model sends as its message: kept."""
    decoded = decode_result(entry["result"])
    if decoded.error is not None or not decoded.calls or any(c.error or c.positional for c in decoded.calls):
        return entry
    return {**entry, "result": [{sanitise_tool_name(c.name): json.dumps(c.arguments)} for c in decoded.calls]}


def originals() -> dict[str, Path]:
    """Fixture file name -> the shared result file it is derived from."""
    out = {f"BFCL_v3_{c}_result.json": next(V3.glob(f"result/*/BFCL_v3_{c}_result.json")) for c in V3_CATEGORIES}
    out |= {f"BFCL_v4_{c}_result.json": next(V4.glob(f"result/*/*/BFCL_v4_{c}_result.json")) for c in V4_CATEGORIES}
    return out


def derived_text(original: Path) -> str:
    return "".join(json.dumps(fc_api_form(json.loads(line))) + "\n" for line in original.read_text().splitlines())


def write_fixtures() -> None:
    """Regenerate fixtures/formats/bfcl_fc/ from the shared samples."""
    for name, original in originals().items():
        (FC / name).write_text(derived_text(original))


def _names(path: Path) -> list[str]:
    return [name for line in path.read_text().splitlines() if isinstance(r := json.loads(line)["result"], list) for call in r for name in call]


@needs_shared
@pytest.mark.parametrize("name", [f"BFCL_v3_{c}_result.json" for c in V3_CATEGORIES] + [f"BFCL_v4_{c}_result.json" for c in V4_CATEGORIES])
def test_the_fixture_is_the_shared_run_in_fc_api_form(name):
    original = originals()[name]
    assert (FC / name).read_text() == derived_text(original)
    names = _names(FC / name)
    assert names and all(API_NAME.match(n) for n in names)
    assert any("." in c.name for line in original.read_text().splitlines() for c in decode_result(json.loads(line)["result"]).calls)


SANITISED_MATCH = {  # one entry per category, its evidence as graded
    "simple": ("simple_1", "math.factorial satisfied by step 0 (structural) (matched after name sanitisation: math_factorial -> math.factorial)"),
    "parallel": ("parallel_0", "spotify.play satisfied by step 0 (structural) (matched after name sanitisation: spotify_play -> spotify.play)"),
}


def _verdicts(rows: dict[str, dict]) -> dict[str, tuple[str, str]]:
    return {tid: (row["verdict"], row["failure_stage"]) for tid, row in rows.items()}


def _sanitised_matches(rows: dict[str, dict]) -> list[str]:
    return [
        e["message"]
        for row in rows.values()
        for check in row["turns"][0]["checks"]
        for e in check["evidence"]
        if check["check"] == "calls" and "matched after name sanitisation" in e["message"]
    ]


@needs_shared
@pytest.mark.parametrize("category", V3_CATEGORIES)
def test_sanitised_names_keep_the_agreement_with_bfcls_score_files(category, tmp_path):
    """The xLAM v3 run in FC API form, ``--labels score/<model>/``: every entry agrees with BFCL,
    as the original does, and each entry gets the original's verdict and failure stage."""
    tasks, answers, labels = V3 / "data" / f"BFCL_v3_{category}.json", V3 / "data" / "possible_answer" / f"BFCL_v3_{category}.json", next(V3.glob("score/*/"))
    fc_rows, fc_summary = _run(tmp_path / "fc", FC / f"BFCL_v3_{category}_result.json", tasks, answers, labels=labels)
    rows, summary = _run(tmp_path / "original", originals()[f"BFCL_v3_{category}_result.json"], tasks, answers, labels=labels)
    agreement = fc_summary["external_agreement"]["bfcl"]
    assert (agreement["n"], agreement["both_decided"], agreement["agreement"], agreement["disagreements"]) == (30, 30, 1.0, [])
    assert agreement == summary["external_agreement"]["bfcl"]
    assert _verdicts(fc_rows) == _verdicts(rows)
    trajectory_id, message = SANITISED_MATCH[category]
    assert any(message in m for m in _sanitised_matches({trajectory_id: fc_rows[trajectory_id]}))
    assert not _sanitised_matches(rows)


@needs_shared
@pytest.mark.parametrize("category", V4_CATEGORIES)
def test_sanitised_names_agree_with_bfcls_fc_checker_on_the_v4_run(category, tmp_path):
    """The gemma v4 run in FC API form: the original's verdicts, and those of the re-implemented
    checker with BFCL's ``convert_func_name`` (the FC model's name against ``.`` -> ``_``)."""
    from tests.matching import bfcl_reference_checker as bfcl

    data = V4 / "data"
    questions = {q["id"]: q for q in map(json.loads, (data / f"BFCL_v4_{category}.json").read_text().splitlines())}
    answers = {a["id"]: a for a in map(json.loads, (data / "possible_answer" / f"BFCL_v4_{category}.json").read_text().splitlines())}
    tasks, gold = data / f"BFCL_v4_{category}.json", data / "possible_answer" / f"BFCL_v4_{category}.json"
    fc_rows, _ = _run(tmp_path / "fc", FC / f"BFCL_v4_{category}_result.json", tasks, gold)
    rows, _ = _run(tmp_path / "original", originals()[f"BFCL_v4_{category}_result.json"], tasks, gold)
    assert _verdicts(fc_rows) == _verdicts(rows)
    for line in (FC / f"BFCL_v4_{category}_result.json").read_text().splitlines():
        entry = json.loads(line)
        result = entry["result"]
        if isinstance(result, list):  # BFCL's FC decoding: {name: json.loads(arguments)}
            output = [{name: json.loads(args) for name, args in call.items()} for call in result]
            function, possible = questions[entry["id"]]["function"][0], answers[entry["id"]]["ground_truth"][0]
            theirs = len(output) == 1 and bfcl.simple_function_checker(function, output[0], possible, underscore_to_dot=True).valid
        else:
            theirs = False  # the model answered in text: no call to check
        assert (fc_rows[entry["id"]]["verdict"] == "pass") == theirs, entry["id"]
