"""The ``env`` typer sub-app."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pipelines.cli.env import env_app

runner = CliRunner()


def test_list_shows_every_domain():
    result = runner.invoke(env_app, ["list"])
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["flights", "hospital", "movies", "olympics", "retail"]
    assert "108 tools (4 write)" in result.stdout


def test_tools_as_json_are_openai_function_specs():
    result = runner.invoke(env_app, ["tools", "hospital", "--json"])
    assert result.exit_code == 0
    specs = json.loads(result.stdout)
    assert {s["name"] for s in specs if s["side_effect"] == "write"} == {"add_visit_note", "book_appointment", "cancel_appointment"}
    assert all(s["parameters"]["type"] == "object" for s in specs)


def test_unknown_domain_is_a_clear_error():
    result = runner.invoke(env_app, ["tools", "atlantis"])
    assert result.exit_code == 2 and "unknown environment" in result.output
    result = runner.invoke(env_app, ["serve", "olympics", "--transport", "pigeon"])
    assert result.exit_code == 2
