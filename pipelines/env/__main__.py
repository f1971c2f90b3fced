"""``python -m pipelines.env serve DOMAIN``: the env sub-app without the main CLI."""

from pipelines.env.cli import env_app

env_app(prog_name="python -m pipelines.env")
