"""The agent's config file is read by the judges' loader: the same messages, as agent config errors."""

from __future__ import annotations

import pytest

from pipelines.runner._run import load_agent_config
from pipelines.runner.agents import AgentConfigError


def test_no_file_is_the_defaults():
    assert load_agent_config(None).providers == {}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (None, "config file not found"),
        ("[providers\n", "not valid TOML"),
        ('[retry]\nmax_attempts = "many"\n', "field retry.max_attempts"),
    ],
)
def test_a_bad_file_names_itself_and_what_is_wrong(tmp_path, text, said):
    path = tmp_path / "agent.toml"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(AgentConfigError) as err:
        load_agent_config(path)
    assert str(path) in str(err.value) and said in str(err.value)


def test_a_good_file_is_read(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text('[prices."openai:m"]\ninput_per_1m = 1.0\noutput_per_1m = 2.0\n', encoding="utf-8")
    assert load_agent_config(path).prices["openai:m"].input_per_1m == 1.0
