"""Pipeline tests run with the judge tests' isolation: no real API keys, caches in tmp, and a
``server`` fixture (loopback OpenAI/Anthropic wire-format server) for end-to-end judge runs."""

from tests.judge.conftest import _isolated_env, server  # noqa: F401  (pytest fixtures, shared)
