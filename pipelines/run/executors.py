"""Where shards are graded: this process, a pool of worker processes, or a Ray cluster.

The run hands shards to an executor in input order and takes the results back in the same order
(``ordered``); it never depends on which worker graded what, so every executor writes the same
bytes. Each worker receives the ``GradingContext`` (tasks, config, format) once: a forked pool
inherits it, Ray actors are built with it. A pool's workers read each shard's bytes from the
input file themselves (``reads_files``: the shard travels as a byte range); Ray's shards carry
their bytes. Scheduling is the platform's own (``concurrent.futures``, ``ray.util.ActorPool``);
nothing here decides who runs what.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from judge import fresh_std_streams
from pipelines.run.shards import GradingContext, Shard, ShardResult, grade_shard

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["Executor", "InProcess", "ProcessPool", "RayCluster", "default_workers", "make_executor"]


def default_workers() -> int:
    """The machine's cores available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class Executor(Protocol):
    name: str
    workers: int
    reads_files: bool  # its workers read a shard's range of the input themselves (same machine, not this process)

    def ordered(self, shards: Iterable[Shard]) -> Iterator[tuple[Shard, ShardResult]]:
        """Grade ``shards``, yielding (shard, result) in the order given; at most a few shards
        per worker in flight, so memory holds a bounded number of shards."""
        ...

    def close(self) -> None: ...


class InProcess:
    """Grades each shard here, when its turn comes: ``--workers 1``."""

    name = "in-process"
    workers = 1
    reads_files = False  # the bytes are at hand: the cutter read them

    def __init__(self, ctx: GradingContext):
        self.ctx = ctx

    def ordered(self, shards: Iterable[Shard]) -> Iterator[tuple[Shard, ShardResult]]:
        for shard in shards:
            yield shard, grade_shard(self.ctx, shard)

    def close(self) -> None:
        pass


_WORKER_CONTEXT: GradingContext | None = None


def _init_worker(ctx: GradingContext | None) -> None:
    global _WORKER_CONTEXT
    fresh_std_streams()  # forked while the progress bar's thread may have held a stream's lock
    if ctx is not None:
        _WORKER_CONTEXT = ctx


def _grade_in_worker(shard: Shard) -> ShardResult:
    assert _WORKER_CONTEXT is not None, "worker started without a grading context"
    return grade_shard(_WORKER_CONTEXT, shard)


class ProcessPool:
    """``--workers N``: a ``concurrent.futures`` pool of N processes.

    Forked where the platform allows (the workers inherit the context, tasks included, without
    copying it through a pipe); spawned elsewhere (the context is pickled once per worker).
    """

    name = "processes"
    reads_files = True  # a shard is sent as a range of the input (a few hundred bytes, not megabytes through a pipe)

    def __init__(self, ctx: GradingContext, workers: int):
        import multiprocessing  # here: a run graded in this process never imports it
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        if method == "fork":
            global _WORKER_CONTEXT
            _WORKER_CONTEXT = ctx  # inherited by the forked workers
            args: tuple[Any, ...] = (None,)
        else:  # pragma: no cover - not Linux
            args = (ctx,)
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method), initializer=_init_worker, initargs=args)

    def ordered(self, shards: Iterable[Shard]) -> Iterator[tuple[Shard, ShardResult]]:
        window: deque[tuple[Shard, Future[ShardResult]]] = deque()
        for shard in shards:
            window.append((shard, self._pool.submit(_grade_in_worker, shard)))
            if len(window) >= 2 * self.workers:
                done, future = window.popleft()
                yield done, future.result()
        while window:
            done, future = window.popleft()
            yield done, future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        global _WORKER_CONTEXT
        _WORKER_CONTEXT = None


class RayCluster:
    """``--ray [ADDRESS]``: shards graded by Ray actors (one per CPU of the cluster, or
    ``workers`` of them), each built once with the context; ``ray.util.ActorPool`` schedules.

    ``address`` None starts a local Ray instance; "auto" or "ray://host:port" joins a cluster
    whose nodes have trajectory-judge installed (the actors import it).
    """

    name = "ray"
    reads_files = False  # a node may not see this machine's files: shards carry their bytes

    def __init__(self, ctx: GradingContext, address: str | None, workers: int | None = None, ray_init: dict[str, Any] | None = None):
        try:
            import ray
            from ray.util import ActorPool
        except ImportError as exc:  # the optional extra is not installed
            raise RuntimeError("--ray needs Ray: pip install 'trajectory-judge[ray]'") from exc
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False, **(ray_init or {}))
            self._started = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, workers or cpus)
        grader = ray.remote(num_cpus=1)(_RayGrader)
        context = ray.put(ctx)
        self._actors: list[Any] = [grader.remote(context) for _ in range(self.workers)]
        self._pool = ActorPool(self._actors)

    def ordered(self, shards: Iterable[Shard]) -> Iterator[tuple[Shard, ShardResult]]:
        window: deque[Shard] = deque()
        for shard in shards:
            self._pool.submit(lambda actor, s: actor.grade.remote(s), shard)
            window.append(shard)
            if len(window) >= 2 * self.workers:
                yield window.popleft(), self._pool.get_next()
        while window:
            yield window.popleft(), self._pool.get_next()

    def close(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []
        if self._started:
            self._ray.shutdown()


class _RayGrader:
    """A Ray actor: holds the grading context (deserialised once) and grades shards."""

    def __init__(self, ctx: GradingContext):
        self.ctx = ctx

    def grade(self, shard: Shard) -> ShardResult:
        return grade_shard(self.ctx, shard)


def make_executor(ctx: GradingContext, workers: int, ray_address: str | None = None, use_ray: bool = False) -> Executor:
    if use_ray:
        return RayCluster(ctx, ray_address, workers=None if workers <= 0 else workers)
    if workers <= 1:
        return InProcess(ctx)
    return ProcessPool(ctx, workers)
