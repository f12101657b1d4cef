"""Connecting to a dask.distributed scheduler, or starting a local cluster, for the analysis
(``hippo-rep analyse``) and sweeps (``hippo-rep sweep``)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

#: Seconds to wait for a scheduler before giving up (fail fast on a wrong address).
SCHEDULER_TIMEOUT_S = 5

#: Threads per worker of a local cluster: one, so that workers (processes) are the unit of
#: parallelism and BLAS does not oversubscribe the cores.
THREADS_PER_WORKER = 1

#: Environment of local-cluster worker processes, set before they start
#: (``distributed.nanny.pre-spawn-environ``): single-threaded BLAS/OpenMP, and glibc's own
#: malloc trimming. distributed's default ``MALLOC_TRIM_THRESHOLD_=65536`` turns off glibc's
#: adaptive mmap threshold, so every temporary array above 128 kB is a fresh mmap and page
#: faults on use; it made the shuffle computation ~3x slower per worker (measured). None
#: removes the variable. Workers of an external scheduler are configured by whoever starts
#: them: unset it there too.
WORKER_PRE_SPAWN_ENV: dict[str, str | None] = {
    "MALLOC_TRIM_THRESHOLD_": None,
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}



class ClusterError(ValueError):
    """Bad cluster arguments, or a scheduler that cannot be reached."""


_QUIET = ("distributed", "distributed.comm", "distributed.client", "tornado", "asyncio")


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    saved = {name: logging.getLogger(name).level for name in _QUIET}
    try:
        for name in _QUIET:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def dask_client(
    scheduler: str | None = None,
    workers: int | None = None,
    processes: bool = True,
) -> Iterator[object | None]:
    """A ``dask.distributed.Client`` for the duration of a ``with`` block (or nothing).

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler, e.g. ``"tcp://10.0.0.5:8786"``; connecting gives up
        after :data:`SCHEDULER_TIMEOUT_S` seconds.
    workers : int, optional
        Start a local cluster of this many workers (:data:`THREADS_PER_WORKER` thread each).
    processes : bool
        Local-cluster workers are processes (True) or threads of this process.

    Yields
    ------
    distributed.Client or None
        None when neither ``scheduler`` nor ``workers`` is given (single process).

    Raises
    ------
    ClusterError
        If both are given, ``workers`` < 1, or the scheduler cannot be reached (the message
        names the address).
    """
    if scheduler is not None and workers is not None:
        raise ClusterError("give a scheduler address or a number of workers, not both")
    if scheduler is None and workers is None:
        yield None
        return
    # distributed takes seconds to import: only a run that asks for a cluster pays for it
    import dask
    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            with _quiet_logs():
                client = Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT_S}s")
        except (OSError, TimeoutError, ValueError, TypeError) as err:
            raise ClusterError(
                f"cannot reach the dask scheduler at {scheduler!r} within "
                f"{SCHEDULER_TIMEOUT_S} s ({type(err).__name__}: {err})"
            ) from None
        try:
            yield client
        finally:
            with _quiet_logs():
                client.close()
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ClusterError(f"the number of workers must be an int >= 1; got {workers!r}")
    env = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_PRE_SPAWN_ENV.items()}
    with _quiet_logs(), dask.config.set(env):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=THREADS_PER_WORKER,
            processes=processes,
            dashboard_address=None,
        )
        client = Client(cluster)
    try:
        yield client
    finally:
        with _quiet_logs():
            client.close()
            cluster.close()
