"""``python -m pipelines.env serve DOMAIN``: the env sub-app without the main CLI."""

from pipelines.cli.env import env_app

env_app(prog_name="python -m pipelines.env")
