"""Packaging detail pyproject.toml cannot express: the repository's ``data/`` folder (sample
benchmark, environment databases) ships inside the wheel as the package ``trajectory_judge_data``,
read through ``importlib.resources`` (``pipelines.resources``). Everything else, package data
included, is configured in pyproject.toml.

Every folder of the shipped data is a package of its own (``trajectory_judge_data.envs.olympics``,
``trajectory_judge_data.sample``): Python can import a folder without ``__init__.py`` as a
namespace package, so setuptools wants each such folder it ships listed, and warns ("Package
would be ignored") about every one that is not. The generators in ``data/build`` are not shipped.
"""

from setuptools import find_namespace_packages, setup

CODE = ["judge*", "rubrics*", "pipelines*", "calibration*", "reports*"]
DATA = "trajectory_judge_data"
SHIPPED_DATA = ["envs", "envs.*", "sample", "sample.*"]  # folders of data/, as packages under DATA

setup(
    packages=[
        *find_namespace_packages(include=CODE, exclude=["*.__pycache__"]),
        DATA,
        *(f"{DATA}.{name}" for name in find_namespace_packages(where="data", include=SHIPPED_DATA)),
    ],
    package_dir={DATA: "data"},
)
