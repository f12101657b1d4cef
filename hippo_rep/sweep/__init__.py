"""Sweeps: a grid of configs × seeds, one dask task per run, the results as one labelled table.

A sweep is the cartesian product of a grid (``{"model.transition_activation": ["linear",
"relu"], "world.worlds": ["square:6", "square:8"]}``) and ``n_seeds`` seeds
(``train.seed = 0 .. n_seeds - 1``) applied to a base config (a preset or TOML file plus
``--set`` overrides). Every combination is a *run*, with its own folder
``OUT/runs/NAME`` (``NAME`` readable and stable, e.g. ``transition_activation=relu__seed=1``)
into which one task, :func:`run_one`, runs the stages train → calibrate (TEM-t) → evaluate →
record → analyse with :func:`hippo_rep.stages.run_stages` (``config.toml``, ``metrics.csv``,
``checkpoint.pt``, ``calibrated.pt``, ``eval.json``, ``recording.nc`` of a few environments,
``analysis.nc``), then writes ``done.json`` (atomically, last) naming these files and their
sizes. ``OUT/sweep.json`` (the manifest) holds the base config, the grid, the seeds, the run
list and the stage settings; :func:`open_sweep` turns the folder into one ``xr.Dataset`` with
a dim per grid key plus ``seed``.

**Resuming.** Whether a run is finished is decided from its files only: ``done.json`` and every
file it names, with the sizes it records. A rerun of the same sweep skips finished runs,
continues a run with a checkpoint from that checkpoint (``Trainer(resume=True)``: same batches,
optimiser and RNG state, so the result equals an uninterrupted run), redoes any stage whose
file is missing (and the stages after it), and retries failed runs. A run that raises is
reported with its error (the traceback in ``OUT/runs/NAME/error.txt``) and the others go on.
A folder holding another sweep (different base config, grid or settings) is refused unless
``overwrite=True``, which removes that sweep's ``runs/`` and manifest (nothing else); the
number of seeds may change between reruns (runs are named by seed).

**Where runs execute.** ``scheduler="tcp://HOST:8786"`` sends each run as one task to a
running dask.distributed scheduler (workers must see ``OUT`` on a shared filesystem);
``workers=N`` starts a :class:`distributed.LocalCluster` of N processes with one thread each
(:func:`hippo_rep.cluster.dask_client`, as ``hippo-rep analyse``); neither runs the runs one
after the other in this process. A run is one unit of work for one worker thread: every dask
computation inside it (loading the recording, the analysis) uses dask's synchronous
scheduler (:data:`ANALYSIS_SCHEDULER`), and runs in one process take turns (torch's RNG and
thread count are per process), so give sweep workers one thread each (more threads per
worker process do not run more runs; more processes do). Seeds run as separate tasks: TEM-t
cannot train several seeds in one process as a ``torch.func.vmap`` ensemble
(``benchmarks/bench_ensemble.py``).

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
