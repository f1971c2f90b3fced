"""Packaging detail pyproject.toml cannot express: the repository's ``data/`` folder (sample
benchmark, environment databases) ships inside the wheel as the package ``trajectory_judge_data``,
read through ``importlib.resources`` (``pipelines.resources``). Everything else, package data
included, is configured in pyproject.toml."""

from setuptools import find_namespace_packages, setup

CODE = ["judge*", "rubrics*", "pipelines*", "calibration*", "reports*"]

setup(
    packages=[*find_namespace_packages(include=CODE, exclude=["*.__pycache__"]), "trajectory_judge_data"],
    package_dir={"trajectory_judge_data": "data"},
)
