"""Rubric tests run in the judge tests' environment: no real keys, a loopback server, tmp caches."""

from tests.judge.conftest import _isolated_env, server  # noqa: F401  (pytest fixtures, shared)
