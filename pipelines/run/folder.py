"""The output directory of a grading run: what it may hold, how outputs land, and the run state.

Guarantees:
- outputs never land half-written: each is written under a temporary name and renamed; the
  reports are rendered in a staging folder first; ``manifest.json`` is written last and says
  ``complete: true``. A directory without that manifest holds no finished run.
- a run never mixes with another run's files: an ``--out`` that holds another run's outputs, or
  an interrupted run, is refused unless ``--overwrite`` (which removes them, the manifest first)
  or ``--resume`` (which continues the interrupted run);
- the run state (``.judge-run/``) lets an interrupted run continue without regrading a decided
  trajectory or asking a judge again (see ``RunState``); it is removed when the run completes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pipelines.run.records import RecordError, read_manifest
from pipelines.run.state import STATE_DIR, RunDirError, RunState, atomic_write
from reports import DRILL_STEPS

__all__ = [
    "ERRORS",
    "MANIFEST",
    "OUTPUTS",
    "REPORT_HTML",
    "REPORT_MD",
    "RESULTS",
    "SUMMARY",
    "TABLES",
    "RunDirError",
    "RunDirectory",
    "atomic_write",
    "complete_run",
    "demo_run",
]

RESULTS, SUMMARY, REPORT_MD, REPORT_HTML, MANIFEST, TABLES = "results.jsonl", "summary.json", "report.md", "report.html", "manifest.json", "tables"
ERRORS = "errors.jsonl"  # every input error, when there are more than summary.json lists (pipelines.grade.aggregate)
OUTPUTS = (RESULTS, SUMMARY, REPORT_MD, REPORT_HTML, MANIFEST, TABLES, ERRORS, DRILL_STEPS)  # DRILL_STEPS: the drill-down's trajectories


class RunDirectory:
    """An output directory checked for this run: fresh, overwritten, or one to resume."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.state = RunState(self.out / STATE_DIR)

    def existing_outputs(self) -> list[str]:
        return [name for name in OUTPUTS if (self.out / name).exists()]

    def interrupted(self) -> bool:
        return self.state.state_path.exists()

    def prepare(self, *, overwrite: bool, resume: bool, dry_run: bool = False) -> bool:
        """Make the directory ready; True when an interrupted run is to be resumed.

        Raises ``RunDirError`` (naming the option that would help) when the directory holds
        another run and neither ``--overwrite`` nor ``--resume`` says what to do with it.
        ``dry_run`` checks only (nothing is removed or created).
        """
        if self.out.exists() and not self.out.is_dir():
            raise RunDirError(f"--out {self.out}: exists and is not a directory")
        if overwrite and resume:
            raise RunDirError("--overwrite and --resume exclude each other: start over, or continue the interrupted run")
        for name in (STATE_DIR, *OUTPUTS):  # the run writes (and removes) these itself: a link would take it elsewhere
            path = self.out / name
            if path.is_symlink():
                raise RunDirError(
                    f"--out {self.out}: {name} is a symbolic link (to {os.readlink(path)}); the run writes {name} itself and never follows a link there: remove the link, or choose another --out"
                )
        if self.state.busy():
            raise RunDirError(
                f"--out {self.out}: another process is working on this run right now (--overwrite and --resume do not take a run folder from a live run); wait for it to end, or choose another --out"
            )
        found = self.existing_outputs() if self.out.is_dir() else []
        if resume:
            if self.interrupted():
                return True
            if MANIFEST in found and complete_run(self.out / MANIFEST):
                raise RunDirError(f"--resume: {self.out} holds a complete run; nothing to resume (use --overwrite to grade again)")
            raise RunDirError(f"--resume: {self.out} holds no interrupted run to continue")
        if self.interrupted() or found:
            if not overwrite:
                what = "an interrupted run (continue it with --resume)" if self.interrupted() else f"another run's files ({', '.join(found)})"
                raise RunDirError(f"--out {self.out} holds {what}; choose another --out, or pass --overwrite to replace it")
            if not dry_run:
                self.clear()
        if dry_run:
            return False
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            probe = self.out / f".write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise RunDirError(f"--out {self.out}: cannot write there ({exc.strerror or exc})") from exc
        return False

    def clear(self) -> None:
        """Remove an earlier run's outputs and state: the manifest first, so that no moment
        shows a 'complete' manifest beside outputs of another run."""
        for name in (MANIFEST, *[n for n in OUTPUTS if n != MANIFEST]):
            path = self.out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()  # a link itself, never what it points at
        self.state.discard()  # the folder stays this process's (``RunState.hold``)

    def publish(self, staged: Path, names: list[str]) -> list[Path]:
        """Move staged outputs into the directory (each by one rename); the manifest is not among
        them: it is written last, by the caller, with ``atomic_write``."""
        moved = []
        for name in names:
            src, dst = staged / name, self.out / name
            if not src.exists():
                continue
            if dst.is_dir() and not dst.is_symlink():
                shutil.rmtree(dst)
            elif dst.is_symlink():
                dst.unlink()  # a link that appeared under the run: replaced, what it points at untouched
            os.replace(src, dst)
            moved.append(dst)
        return moved


def complete_run(manifest: Path) -> bool:
    """``manifest`` is one of a finished run (a manifest that is not one, of any version, is not)."""
    try:
        return read_manifest(manifest).complete
    except RecordError:
        return False


def demo_run(out: Path) -> bool:
    """``out`` holds a run of ``judge demo`` and nothing another run wrote: its manifest (a
    finished run) and its run state (an interrupted one), whichever it has, were written by a
    command ``judge demo`` (``Manifest.command`` / ``Recipe.command``). Run outputs without a
    manifest of the demo (a user's results.jsonl, a run of ``judge grade``) are not the demo's."""
    from pipelines.run.records import RecordError

    out = Path(out)
    if not out.is_dir():
        return False
    state = RunState(out / STATE_DIR)
    if state.state_path.exists():
        try:
            recipe = state.peek().recipe
        except (RecordError, RunDirError):
            return False
        if recipe is None or recipe.command[1:2] != ["demo"]:
            return False
    found = [name for name in OUTPUTS if (out / name).exists()]
    if not found:
        return state.state_path.exists()
    if MANIFEST not in found:
        return False
    try:
        manifest = read_manifest(out / MANIFEST)
    except RecordError:
        return False
    return manifest.command[1:2] == ["demo"]
