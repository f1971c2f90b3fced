"""What a process forked from a run must redo before it writes anything.

A run may have a thread writing when it forks its workers (the progress bar's refresh thread, a
log handler); a buffer lock that thread held at the fork is held for ever in the child, whose
first write to that stream would then hang. Workers call ``fresh_std_streams`` first thing.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["fresh_std_streams"]


def fresh_std_streams() -> None:
    """New stdout / stderr objects over the same descriptors (and for the log handlers writing to
    them), so no lock inherited from the parent's threads is ever waited on."""
    for name in ("stdout", "stderr"):
        old = getattr(sys, name)
        try:
            fd = old.fileno()
        except (AttributeError, OSError, ValueError):  # not a real descriptor (a test's capture): nothing inherited to fear
            continue
        new = open(fd, "w", encoding=getattr(old, "encoding", None) or "utf-8", errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115
        setattr(sys, name, new)
        for handler in logging.getLogger().handlers + [
            h for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger) for h in lg.handlers
        ]:
            if isinstance(handler, logging.StreamHandler) and handler.stream is old:
                handler.setStream(new)
