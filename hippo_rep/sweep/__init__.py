"""Sweeps: a grid of configs × seeds, one dask task per run, the results as one labelled table.

A sweep is the cartesian product of a grid (``{"model.transition_activation": ["linear",
"relu"]}``) and ``n_seeds`` seeds (``train.seed`` = 0 .. n_seeds - 1) on a base config. Each
combination is a *run* in ``OUT/runs/NAME`` (e.g. ``transition_activation=relu__seed=1``) into
which one task, :func:`run_one`, runs train → calibrate (TEM-t) → evaluate → record → analyse
(:func:`hippo_rep.stages.run_stages`) and then writes ``done.json`` (atomically, last) naming
the files and their sizes; ``OUT/sweep.json`` (the manifest) holds the base config, grid, seeds,
runs and stage settings, and :func:`open_sweep` reads the folder as one ``xr.Dataset``.

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

Modules: ``grid`` (grid expansion), ``manifest``, ``execute`` (running the runs in order or
on dask) and ``results`` (reading: :func:`open_sweep`); the names used elsewhere are here.
"""

from hippo_rep.analysis.summary import SUMMARY, summarise_analysis
from hippo_rep.run_files import ANALYSIS_FILE, CALIBRATED_FILE, EVAL_FILE, RECORDING_FILE
from hippo_rep.stages import DEFAULT_DECODE, DEFAULT_REMAP_SHUFFLES
from hippo_rep.sweep.execute import (
    ANALYSIS_SCHEDULER,
    RESULT_FILES,
    SweepReport,
    SweepSettings,
    run_one,
    run_sweep,
)
from hippo_rep.sweep.grid import DEFAULT_SEEDS, Run, SweepError, expand_grid, parse_values
from hippo_rep.sweep.manifest import FORMAT, MANIFEST, RUNS_DIR, read_manifest
from hippo_rep.sweep.results import DONE_FILE, ERROR_FILE, EVAL_SUMMARY, is_finished, open_sweep

__all__ = [
    "ANALYSIS_FILE", "ANALYSIS_SCHEDULER", "CALIBRATED_FILE", "DEFAULT_DECODE",
    "DEFAULT_REMAP_SHUFFLES", "DEFAULT_SEEDS", "DONE_FILE", "ERROR_FILE", "EVAL_FILE",
    "EVAL_SUMMARY", "FORMAT", "MANIFEST", "RECORDING_FILE", "RESULT_FILES", "RUNS_DIR",
    "SUMMARY", "Run", "SweepError", "SweepReport", "SweepSettings", "expand_grid",
    "is_finished", "open_sweep", "parse_values", "read_manifest", "run_one", "run_sweep",
    "summarise_analysis",
]
