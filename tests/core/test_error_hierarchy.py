"""One exception hierarchy: every exception class the packages define derives from
``judge.TrajectoryJudgeError`` (so callers can tell a diagnosed problem from a bug)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from judge import TrajectoryJudgeError

PACKAGES = ("judge", "rubrics", "calibration", "reports", "pipelines")


def _modules():
    for name in PACKAGES:
        package = importlib.import_module(name)
        yield package
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if info.name.endswith("__main__"):
                continue
            try:
                yield importlib.import_module(info.name)
            except ImportError:  # an optional extra (llama.cpp, ray) that is not installed
                continue


def test_every_exception_derives_from_the_common_base():
    strays = []
    for module in _modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, BaseException):
                continue
            if cls.__name__.startswith("_"):
                continue  # private control flow (a parser's stop signal) that never leaves its module
            if not issubclass(cls, TrajectoryJudgeError):
                strays.append(f"{cls.__module__}.{cls.__qualname__}")
    assert strays == []
