"""Connecting to a dask.distributed scheduler, or starting a local cluster, for the analysis
(``hippo-rep analyse``) and sweeps (``hippo-rep sweep``, ``hippo-rep passkey sweep``); and
running a sweep's runs as jobs, one after the other here or one dask task each
(:func:`run_jobs`), each in its own folder with its error caught (:func:`run_job`)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hippo_rep.fileio import atomic_write
from hippo_rep.run_files import ERROR_FILE

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


# ------------------------------------------------------------------------------ jobs
#: Held by each job (:func:`run_job`): jobs in one process never overlap (torch's global RNG
#: and thread count are per process), also on a worker with several threads.
RUN_LOCK = threading.Lock()


def one_line(err: BaseException) -> str:
    """``"TypeName: first line of the message"``."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".strip()


def write_error(run_dir, text: str) -> None:
    """Write a traceback to ``run_dir``/:data:`~hippo_rep.run_files.ERROR_FILE` (atomically;
    a folder that cannot be written is left as it is)."""
    with contextlib.suppress(OSError):
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        atomic_write(Path(run_dir) / ERROR_FILE, lambda tmp: Path(tmp).write_text(text))


def run_job(run_dir, fn: Callable[..., dict], *args) -> dict:
    """One run of a sweep: ``fn(run_dir, *args)`` under :data:`RUN_LOCK`, timed, its error
    caught (only KeyboardInterrupt propagates).

    Returns
    -------
    dict
        ``name`` (the folder's), ``status`` ("done", or "skipped" where ``fn`` says so, or
        "failed"), ``error`` (one line or None), ``wall_s``, and what ``fn`` returned. A
        failure's traceback is written to the run's ``error.txt`` (an earlier one is removed
        when the run starts).
    """
    run_dir = Path(run_dir)
    with RUN_LOCK:
        t0 = time.perf_counter()
        res = {"name": run_dir.name, "status": "done", "error": None}
        (run_dir / ERROR_FILE).unlink(missing_ok=True)
        try:
            res.update(fn(run_dir, *args))
        except Exception as err:  # one failing run must not stop the sweep
            res.update(status="failed", error=one_line(err))
            write_error(run_dir, traceback.format_exc())
        res["wall_s"] = time.perf_counter() - t0
        return res


def run_jobs(jobs: Sequence[tuple], client=None, *, progress: bool = False,
             total: int | None = None, initial: int = 0,
             on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Run ``jobs``, each ``(run_dir, fn, args)`` run as :func:`run_job` ``(run_dir, fn,
    *args)``: one after the other in this process (``client`` None) or one task each on the
    ``dask.distributed`` client's workers (``fn`` must be importable there; one job at a
    time per worker process). A job whose worker died or whose task was lost is failed.

    ``on_result(result)`` is called in this process as each job ends (in the order they
    end); ``progress`` shows a bar of ``total`` runs (default: the jobs) of which ``initial``
    were done before, with the done / running / failed counts.

    Returns
    -------
    list of dict
        :func:`run_job`'s results, in the order the jobs end.
    """
    bar = _Progress(len(jobs) + initial if total is None else total, initial, progress)
    results = []

    def ended(res):
        results.append(res)
        bar.counts["failed" if res["status"] == "failed" else "done"] += 1
        if on_result is not None:
            on_result(res)

    try:
        if client is None:
            for run_dir, fn, args in jobs:
                bar.update(running=1)
                ended(run_job(run_dir, fn, *args))
                bar.update(running=0, finished=1)
        else:
            _run_on_client(client, jobs, ended, bar)
    finally:
        bar.close()
    return results


def _run_on_client(client, jobs, ended, bar) -> None:
    from distributed import as_completed  # only sweeps on a cluster import distributed

    slots = max(1, len(client.nthreads()))  # one run at a time per worker process
    futures = {client.submit(run_job, str(run_dir), fn, *args, pure=False,
                             key=f"hippo-rep-run-{Path(run_dir).name}-{time.time_ns()}"):
               run_dir for run_dir, fn, args in jobs}
    bar.update(running=min(slots, len(futures)))
    left = len(futures)
    try:
        for fut in as_completed(list(futures)):
            try:
                res = fut.result()
            except Exception as err:  # a worker died, or the task was lost
                run_dir = Path(futures[fut])
                res = {"name": run_dir.name, "status": "failed", "error": one_line(err)}
                write_error(run_dir, "".join(traceback.format_exception(err)))
            left -= 1
            ended(res)
            bar.update(running=min(slots, left), finished=1)
    finally:
        client.cancel([f for f in futures if not f.done()])


class _Progress:
    """A tqdm bar of runs with done / running / failed counts (or nothing)."""

    def __init__(self, total: int, initial: int, enabled: bool):
        self.bar = None
        self.counts = {"done": initial, "running": 0, "failed": 0}
        if enabled:
            from tqdm.auto import tqdm  # only when a bar is shown

            self.bar = tqdm(total=total, initial=initial, desc="sweep", unit="run",
                            dynamic_ncols=True)
            self.bar.set_postfix(self.counts)

    def update(self, running: int | None = None, finished: int = 0) -> None:
        if running is not None:
            self.counts["running"] = running
        if self.bar is not None:
            self.bar.set_postfix(self.counts, refresh=False)
            self.bar.update(finished)
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
