"""Failure-mode clustering in a child process (``python -m pipelines.orchestration._child``).

Why: clustering a large run needs working memory (numpy and the dense matrices); in a
child it is returned to the system when it exits, the streaming grader's peak stays where it was, and the child works while the
parent computes the rest of the summary. Same function, same inputs (JSON both ways, floats
round-trip exactly): the same bytes as in process. If the child cannot run, the clustering runs
in process, with a warning.
"""

from __future__ import annotations

from typing import Any

from pipelines.orchestration.clusters import Clustering, FailureFeatures, Member, cluster_failures

CHILD_TIMEOUT_S = 600


class PendingClustering:
    """A clustering under way: in a child process (started at once, so the caller can do other
    work meanwhile) or, for small runs or when the child cannot run, in process at ``result()``."""

    def __init__(self, rows: list[FailureFeatures], members: list[Member], seed: int, isolate: bool):
        self.rows, self.members, self.seed = rows, members, seed
        self._proc: Any = None
        self._done: Clustering | None = None
        if isolate:
            self._start_child()

    def _start_child(self) -> None:
        import json
        import os
        import subprocess
        import sys
        import tempfile
        from pathlib import Path

        payload = {
            "seed": self.seed,
            "rows": [[r.stage, list(r.tools), list(r.kinds), r.text] for r in self.rows],
            "members": [[m.trajectory_id, m.task_id, m.agent, m.row] for m in self.members],
        }
        root = str(Path(__file__).resolve().parents[2])  # where the pipelines package lives
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])]), "OMP_NUM_THREADS": "1"}
        try:
            with tempfile.TemporaryFile() as fh:  # a file, not a pipe: starting the child never waits for it to read
                fh.write(json.dumps(payload).encode("utf-8"))
                fh.seek(0)
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "pipelines.orchestration._child"], stdin=fh, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
                )
        except OSError as exc:
            self._fallback(f"could not start ({exc})")

    def _fallback(self, why: str) -> None:
        import warnings

        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        self._proc = None
        warnings.warn(f"failure-mode clustering child process {why}; clustering in process", RuntimeWarning, stacklevel=3)

    def result(self) -> Clustering:
        import json
        import subprocess

        if self._done is not None:
            return self._done
        if self._proc is not None:
            try:
                out, err = self._proc.communicate(timeout=CHILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._fallback(f"ran over {CHILD_TIMEOUT_S} s")
            else:
                if self._proc.returncode == 0:
                    data = json.loads(out)
                    self._done = Clustering(data["summary"], data["member_clusters"])
                    return self._done
                self._fallback(f"exited with {self._proc.returncode}: {err.decode('utf-8', 'replace')[-2000:]}")
        self._done = cluster_failures(self.rows, self.members, self.seed)
        return self._done


def _child_main() -> None:
    import json
    import sys

    payload = json.loads(sys.stdin.buffer.read())
    rows = [FailureFeatures(stage, tuple(tools), tuple(kinds), text) for stage, tools, kinds, text in payload["rows"]]
    members = [Member(tid, task, agent, row) for tid, task, agent, row in payload["members"]]
    done = cluster_failures(rows, members, payload["seed"])
    sys.stdout.write(json.dumps({"summary": done.summary, "member_clusters": done.member_clusters}))


if __name__ == "__main__":
    _child_main()
