"""Running a sweep (:mod:`hippo_rep.sweep`: its grid, manifest and reading): each run
through the stage runner (:func:`~hippo_rep.pipeline.stages.run_stages`) in its own folder
``OUT/runs/NAME`` (e.g. ``transition_activation=relu__seed=1``), one after the other in this
process or one dask task per run. One task, :func:`run_one`, runs train → calibrate (TEM-t) →
evaluate → record → analyse and then writes ``done.json`` (atomically, last) naming the files
and their sizes.

**Resuming.** A run is finished when ``done.json`` and every file it names (with its size)
are there. A rerun skips finished runs, continues the others from their checkpoints and
stages (same result as an uninterrupted run) and retries failed ones (traceback in
``error.txt``); a folder of another sweep is refused unless ``overwrite=True``.

**Where runs execute.** In this process one after the other, on a running scheduler
(``scheduler="tcp://HOST:8786"``; workers must see ``OUT``) or on a local cluster of
``workers=N`` single-threaded processes. A run is one task on one worker thread: its dask
computations use the synchronous scheduler (:data:`ANALYSIS_SCHEDULER`) and runs in one process
take turns (torch's RNG and threads are per process). Seeds run as separate tasks: TEM-t cannot
train several seeds as one ``torch.func.vmap`` ensemble (``benchmarks/bench_ensemble.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib.util
import math
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import dask

from hippo_rep import run_files as F
from hippo_rep.analysis.analysis_files import open_analysis
from hippo_rep.analysis.summary import summarise_analysis
from hippo_rep.cluster import ClusterError, dask_client, run_job, run_jobs
from hippo_rep.config import Config, load_config
from hippo_rep.fileio import write_json
from hippo_rep.pipeline.stages import StageSettings, run_stages
from hippo_rep.sweep.grid import SweepError, expand_grid, parse_grid
from hippo_rep.sweep.manifest import MANIFEST, RUNS_DIR, build_manifest, check_out, clear
from hippo_rep.sweep.results import DONE_FILE, is_finished

#: The stages of every run.
SWEEP_STAGES = ("train", "calibrate", "evaluate", "record", "analyse")
#: Files a finished run must hold (``done.json`` records their sizes).
RESULT_FILES = (F.CONFIG_FILE, F.METRICS_FILE, F.CHECKPOINT_FILE, F.EVAL_FILE,
                F.RECORDING_FILE, F.ANALYSIS_FILE)
#: Resolution of the ``started``/``finished`` timestamps of ``done.json`` (ISO 8601).
TIME_SPEC = "milliseconds"
#: Dask scheduler of the analysis inside a run: one run is one task on one worker thread.
ANALYSIS_SCHEDULER = "synchronous"


class SweepSettings(StageSettings):
    """The :class:`~hippo_rep.pipeline.stages.StageSettings` of every run of a sweep (the manifest
    keeps them); a bad value raises :class:`SweepError`."""

    error = SweepError


@dataclass
class SweepReport:
    """What :func:`run_sweep` did.

    Attributes
    ----------
    out : Path
        The sweep folder.
    runs : list of str
        Every run's name, in grid order.
    done : list of str
        Runs that ran and finished in this call.
    skipped : list of str
        Runs already finished before this call (not run again).
    failed : dict
        Run name → its error (one line); the traceback is in the run's ``error.txt``.
    resumed : dict
        Run name → the training iteration it continued from.
    wall_s : float
        Seconds this call took.
    """

    out: Path
    runs: list[str]
    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    resumed: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def ran(self) -> list[str]:
        """Runs executed in this call (finished or failed)."""
        return [r for r in self.runs if r in self.done or r in self.failed]


def run_one(run_dir, config: Config, settings: SweepSettings | None = None) -> dict:
    """Train → calibrate → evaluate → record → analyse one run into ``run_dir`` (one job of
    :func:`~hippo_rep.cluster.run_jobs`).

    Finished runs (:func:`~hippo_rep.sweep.is_finished`) return at once; otherwise
    :func:`~hippo_rep.pipeline.stages.run_stages` runs every stage not yet complete (training
    continues from the checkpoint), then ``done.json`` is written. Errors are not raised:
    they are written to ``error.txt`` and returned (:func:`~hippo_rep.cluster.run_job`; only
    KeyboardInterrupt propagates, after the trainer has saved a checkpoint).

    Returns
    -------
    dict
        ``name``, ``status`` ("skipped", "done" or "failed"), ``error`` (one line or None),
        ``resumed_from`` (iteration or None), ``wall_s``.
    """
    return run_job(run_dir, _run_stages, config,
                   SweepSettings() if settings is None else settings)


def _run_stages(run_dir: Path, config: Config, settings: SweepSettings) -> dict:
    if is_finished(run_dir):
        return {"status": "skipped", "resumed_from": None}
    t0, started = time.perf_counter(), _now()
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / DONE_FILE).unlink(missing_ok=True)
    # Every dask computation of the run (loading the recording, the analysis) stays in this
    # thread: on a dask worker the default would be the distributed client, and tasks that
    # compute through it secede from the worker's thread pool, which then starts the next run
    # beside this one (measured: 4 runs at once on a 1-thread worker, racing on torch's
    # global RNG in build_model).
    with dask.config.set(scheduler=ANALYSIS_SCHEDULER):
        done = run_stages(run_dir, config, SWEEP_STAGES, settings, scheduler=ANALYSIS_SCHEDULER)
        summary = summarise_analysis(open_analysis(run_dir / F.ANALYSIS_FILE))
    wall_s = time.perf_counter() - t0
    write_json(run_dir / DONE_FILE, {
        "files": {n: (run_dir / n).stat().st_size for n in RESULT_FILES},
        "summary": {k: (v if math.isfinite(v) else None)  # standard JSON: NaN → null
                    for k, v in summary.items()},
        "resumed_from": done.resumed_from, "wall_s": wall_s,
        "started": started, "finished": _now(),
        "host": socket.gethostname(), "pid": os.getpid(),
        "config": config.to_dict(), "settings": dataclasses.asdict(settings)})
    return {"resumed_from": done.resumed_from}


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec=TIME_SPEC)


# ------------------------------------------------------------------------------ the sweep
def run_sweep(config: str | Path, grid, n_seeds: int, out, *,
              overrides: Sequence[str] = (), settings: SweepSettings | None = None,
              scheduler: str | None = None, workers: int | None = None,
              overwrite: bool = False, progress: bool = True) -> SweepReport:
    """Run (or continue) a sweep: :func:`~hippo_rep.sweep.expand_grid`'s runs, each by
    :func:`run_one`.

    Parameters
    ----------
    config, grid, n_seeds, overrides
        The runs, as :func:`~hippo_rep.sweep.expand_grid` reads them: a preset or TOML file,
        ``"section.key=V1,V2"`` strings or ``{key: [values]}``, seeds per combination
        (``train.seed`` = 0 .. n_seeds - 1), ``section.key=value`` overrides of the base.
    out : path
        Sweep folder: ``sweep.json`` and ``runs/NAME/``.
    settings : SweepSettings, optional
        Evaluation, recording and analysis of each run (default :class:`SweepSettings`).
    scheduler : str, optional
        Address of a dask.distributed scheduler (its workers must see ``out``).
    workers : int, optional
        Start a local cluster of this many single-threaded worker processes.
    overwrite : bool
        Replace another sweep's runs in ``out`` (a matching sweep is always continued).
    progress : bool
        Show a progress bar (runs done / running / failed).

    Returns
    -------
    SweepReport

    Raises
    ------
    ModuleNotFoundError
        PyTorch is not installed (named "torch"; before anything is written).
    ConfigError
        Bad config, grid key or value (before anything is written).
    SweepError
        ``out`` holds another sweep and not ``overwrite``; both or neither of a bad
        ``scheduler``/``workers``; a scheduler that cannot be reached within
        :data:`~hippo_rep.cluster.SCHEDULER_TIMEOUT_S` seconds (the message names
        the address). Nothing is written then.
    """
    if importlib.util.find_spec("torch") is None:  # every run trains: say so once, at once
        raise ModuleNotFoundError("No module named 'torch'", name="torch")
    t0 = time.perf_counter()
    settings = SweepSettings() if settings is None else settings
    grid = parse_grid(grid)  # a bad grid is reported before a bad n_seeds
    runs = expand_grid(config, grid, n_seeds, overrides)
    manifest = build_manifest(runs, load_config(config, overrides), list(grid), n_seeds,
                              dataclasses.asdict(settings), str(config), overrides)
    out = Path(out).resolve()
    must_clear = check_out(out, manifest, overwrite)
    report = SweepReport(out, [r.name for r in runs])
    with contextlib.ExitStack() as stack:
        try:
            client = stack.enter_context(dask_client(scheduler=scheduler, workers=workers))
        except ClusterError as err:
            raise SweepError(str(err)) from None
        if must_clear:
            clear(out)
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / MANIFEST, manifest)
        todo = []
        for r in runs:
            if is_finished(out / RUNS_DIR / r.name):
                report.skipped.append(r.name)
            else:
                todo.append((out / RUNS_DIR / r.name, _run_stages, (r.config, settings)))
        run_jobs(todo, client, progress=progress, total=len(runs), initial=len(report.skipped),
                 on_result=lambda res: _record(report, res))
    report.wall_s = time.perf_counter() - t0
    return report


def _record(report: SweepReport, res: dict) -> None:
    name = res["name"]
    if res["status"] == "failed":
        report.failed[name] = res["error"]
    elif res["status"] == "skipped":
        report.skipped.append(name)
    else:
        report.done.append(name)
    if res.get("resumed_from") is not None:
        report.resumed[name] = res["resumed_from"]
