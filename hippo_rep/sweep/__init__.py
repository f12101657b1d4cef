"""Sweeps as files: a grid of configs × seeds, its manifest, and reading the results as one
labelled table.

A sweep is the cartesian product of a grid (``{"model.transition_activation": ["linear",
"relu"]}``) and ``n_seeds`` seeds on a base config; each combination is a *run* in
``OUT/runs/NAME`` and ``OUT/sweep.json`` (the manifest) holds the base config, grid, seeds,
runs and stage settings. :func:`open_sweep` reads the folder as one ``xr.Dataset``. Running a
sweep is the pipeline's (:func:`hippo_rep.pipeline.run_sweep`); this package only reads, so
that figures can draw sweeps without the runner.

Modules: ``grid`` (grid expansion), ``manifest`` and ``results`` (reading: :func:`open_sweep`);
the names used elsewhere are here.
"""

from hippo_rep.sweep.grid import DEFAULT_SEEDS, Run, SweepError, expand_grid, parse_values
from hippo_rep.sweep.manifest import FORMAT, MANIFEST, RUNS_DIR, read_manifest
from hippo_rep.sweep.results import (
    DONE_FILE,
    ERROR_FILE,
    EVAL_SUMMARY,
    is_finished,
    open_sweep,
    sweep_table,
)

__all__ = [
    "DEFAULT_SEEDS", "DONE_FILE", "ERROR_FILE", "EVAL_SUMMARY", "FORMAT", "MANIFEST", "RUNS_DIR",
    "Run", "SweepError", "expand_grid", "is_finished", "open_sweep", "parse_values",
    "read_manifest", "sweep_table",
]
