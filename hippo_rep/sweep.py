"""Sweeps: a grid of configs × seeds, one dask task per run, the results as one labelled table.

A sweep is the cartesian product of a grid (``{"model.transition_activation": ["linear",
"relu"], "world.worlds": ["square:6", "square:8"]}``) and ``n_seeds`` seeds
(``train.seed = 0 .. n_seeds - 1``) applied to a base config (a preset or TOML file plus
``--set`` overrides). Every combination is a *run*, with its own folder
``OUT/runs/NAME`` (``NAME`` readable and stable, e.g. ``transition_activation=relu__seed=1``)
into which one task, :func:`run_one`, calls the project's own stages:

1. :func:`hippo_rep.training.trainer.train` → ``config.toml``, ``metrics.csv``,
   ``checkpoint.pt`` (continued with the trainer's resume when a checkpoint is there);
2. :func:`hippo_rep.training.evaluate.evaluate_checkpoint` → ``eval.json``;
3. :func:`hippo_rep.recording.record_to_file` → ``recording.nc`` (a few environments);
4. :func:`hippo_rep.analysis.pipeline.analyse` + ``write_analysis`` → ``analysis.nc``;
5. ``done.json`` (written atomically, last) naming these files and their sizes.

``OUT/sweep.json`` (the manifest) holds the base config, the grid, the seeds, the run list and
the recording/analysis settings; :func:`open_sweep` turns the folder into one
``xr.Dataset`` with a dim per grid key plus ``seed``.

**Resuming.** Whether a run is finished is decided from its files only: ``done.json`` and every
file it names, with the sizes it records. A rerun of the same sweep skips finished runs,
continues a run with a checkpoint from that checkpoint (``Trainer(resume=True)``: same batches,
optimiser and RNG state, so the result equals an uninterrupted run), redoes any stage whose
file is missing, and retries failed runs. A run that raises is reported with its error (the
traceback in ``OUT/runs/NAME/error.txt``) and the others go on. A folder holding another
sweep (different base config, grid or settings) is refused unless ``overwrite=True``, which
removes that sweep's ``runs/`` and manifest (nothing else); the number of seeds may change
between reruns (runs are named by seed).

**Where runs execute.** ``scheduler="tcp://HOST:8786"`` sends each run as one task to a
running dask.distributed scheduler (workers must see ``OUT`` on a shared filesystem);
``workers=N`` starts a :class:`distributed.LocalCluster` of N processes with one thread each
(:func:`hippo_rep.cluster.dask_client`, as ``hippo-rep analyse``); neither runs the runs one
after the other in this process. A run is one unit of work for one worker thread: every dask
computation inside it (loading the recording, the analysis) uses dask's synchronous
scheduler (:data:`ANALYSIS_SCHEDULER`), and runs in one process take turns (torch's RNG and
thread count are per process), so give sweep workers one thread each (more threads per
worker process do not run more runs; more processes do).

**Batched ensembles (several seeds in one process with ``torch.func.vmap``) do not apply to
TEM-t** — measured with ``python benchmarks/bench_ensemble.py`` (torch 2.13 CPU, ``small``
preset, 4 members, batch 16 × 64 steps): vmapping ``functional_call`` over
``stack_module_state`` of TEM-t models of seeds 0–3 fails in the first forward, at the
in-place memory write ``state.G[ar, idx] = torch.where(...)`` (``index_put_`` of a
per-member value into a buffer that is not batched). In a patched copy of ``TEMt._loop`` (not
in ``temt.py``) with out-of-place writes it fails next at ``_ConstBmm`` (an
``autograd.Function`` without ``setup_context``, so no functorch support); with ``bmm``
there, at ``written[:, t] = new``; with that out of place, at ``m = int(n.max())``: vmap
cannot call ``.item()``. That last one is the root cause: how many memories a walk writes
depends on the weights (add-if-novel), so members differ (same walks: mean 42.6, 43.6, 41.7
and 42.9 memories per environment for seeds 0–3), and every ``[:, :m]`` slice of the memory
has a per-member length. Batching seeds would need a fixed-capacity memory with masks instead
of data-dependent slices (a change of the model, not of the sweep). The sinusoidal baseline
(a memory at every step) does vmap, forward and backward, with gradients equal to separate
models' — and only 1.09× faster on this CPU (53 vs 58 ms for 4 members). Seeds therefore run
as separate tasks (processes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import itertools
import json
import math
import os
import re
import shutil
import socket
import threading
import time
import tomllib
import traceback
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import dask
import numpy as np
import xarray as xr

from hippo_rep import __version__
from hippo_rep.analysis.pipeline import analyse, open_analysis, write_analysis
from hippo_rep.cluster import ClusterError, dask_client
from hippo_rep.config import (
    Config,
    ConfigError,
    apply_overrides,
    from_dict,
    parse_override,
    read_raw,
)
from hippo_rep.defaults import EVAL_ENVS, EVAL_SEED, GRID_THRESHOLD, QUICK_SHUFFLES, RECORD_STEPS
from hippo_rep.fileio import atomic_write, read_json, write_json
from hippo_rep.recording import open_recording, record_to_file
from hippo_rep.schema import (
    IS_BAND,
    IS_GRID,
    IS_GRID_THRESHOLD,
    IS_PLACE,
    IS_SQUARE,
    IS_TWO_WAVE,
    MEMORY_ACTIVITY,
    G,
)
from hippo_rep.worlds import WorldError, parse_world

#: The manifest's file name, at the sweep's root.
MANIFEST = "sweep.json"
#: Folder (under the sweep's root) holding one folder per run.
RUNS_DIR = "runs"
#: Files of a run folder, in the order the stages write them.
CHECKPOINT_FILE = "checkpoint.pt"
#: TEM-t's checkpoint with its write threshold calibrated (``settings.calibrate``); evaluated
#: and recorded instead of the trained one.
CALIBRATED_FILE = "calibrated.pt"
EVAL_FILE = "eval.json"
RECORDING_FILE = "recording.nc"
ANALYSIS_FILE = "analysis.nc"
#: Written atomically and last: the run is finished (with the files it names).
DONE_FILE = "done.json"
#: A failed run's traceback.
ERROR_FILE = "error.txt"
#: Files a finished run must hold (``done.json`` records their sizes).
RESULT_FILES = ("config.toml", "metrics.csv", CHECKPOINT_FILE, EVAL_FILE, RECORDING_FILE,
                ANALYSIS_FILE)
#: The manifest's format tag and version.
FORMAT, FORMAT_VERSION = "hippo_rep.sweep", 1

#: Calibrate TEM-t's write threshold after training (``hippo-rep calibrate``), as the demo does.
DEFAULT_CALIBRATE = True
#: Seeds per grid combination when not given (``train.seed`` = 0).
DEFAULT_SEEDS = 1
#: Environments recorded per run: few, so that ``recording.nc`` stays small.
DEFAULT_RECORD_ENVS = 4
#: Seed of the recorded environments.
DEFAULT_RECORD_SEED = 0
#: Permutations of the TEM remapping test.
DEFAULT_REMAP_SHUFFLES = 200
#: Seed of the analysis' shuffles.
DEFAULT_ANALYSIS_SEED = 0
#: Run the population analyses (decoding, PCA).
DEFAULT_DECODE = True
#: Resolution of the ``started``/``finished`` timestamps of ``done.json`` (ISO 8601).
TIME_SPEC = "milliseconds"
#: Dask scheduler of the analysis inside a run: one run is one task on one worker thread.
ANALYSIS_SCHEDULER = "synchronous"

#: Config keys that do not change what a run computes; they may differ between reruns.
NON_IDENTITY_KEYS = ("train.device", "train.threads")
#: Dims of :func:`open_sweep` besides the grid's (grid dims may not take these names).
RESERVED_DIMS = ("seed", "agent", "step_type")
#: Agents and step types of the ``accuracy`` variable (see hippo_rep.training.evaluate).
AGENTS = ("model", "node_agent", "edge_agent")
STEP_TYPES = ("revisit", "revisit_new_edge", "revisit_unseen_edge", "revisit_known_edge",
              "first_visit", "all")
#: Held by each run: runs in one process never overlap (build_model seeds torch's global
#: RNG, the trainer sets torch's thread count).
_RUN_LOCK = threading.Lock()
#: Characters kept in run-folder names; any other becomes "-".
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]")

#: Summary statistics :func:`open_sweep` takes from each run's analysis: name → description.
SUMMARY = {
    "grid_fraction": "fraction of positional units (g) grid-like (is_grid: hexagonal plane-wave "
                     "pattern and gridness-60 above its shuffle null's 95th percentile), over "
                     "the (env, unit) pairs that exist (analysis.class_fractions)",
    "grid_fraction_threshold": "fraction of positional units (g) with gridness-60 > "
                               f"{GRID_THRESHOLD:g} (the rule of thumb alone)",
    "two_wave_fraction": "fraction of positional units (g) that are two plane waves, not "
                         "square (is_two_wave)",
    "band_fraction": "fraction of positional units (g) that are one plane wave (is_band)",
    "square_fraction": "fraction of positional units (g) that are square grids (is_square)",
    "gridness_median": "median gridness-60 of the positional units (g) over (env, unit)",
    "hexagonal_fraction": "fraction of positional units (g) whose map is a hexagonal plane-wave "
                          "pattern (three near-equal waves ~60° apart; pattern alone, no null), "
                          "over the (env, unit) pairs that exist",
    "wavelength_median": "median wavelength (bins) of the strongest plane wave of the "
                         "positional units (g) with at least one wave",
    "place_fraction": "fraction of memory neurons place-like (is_place), over the (env, unit) "
                      "pairs that exist (analysis.class_fractions)",
    "remap_corr_g": "mean rate-map correlation of positional units between environments",
    "remap_corr_memory": "mean rate-map correlation of memory neurons between environments",
    "pv_corr_g": "population-vector correlation of g between environments (mean over pairs)",
    "pv_corr_memory": "population-vector correlation of memory neurons between environments",
    "tem_corr": "TEM test: correlation of grid rates at memory peaks across environments "
                "(mean over pairs)",
    "tem_p": "TEM test p-value of the mean over pairs",
}
#: Statistics :func:`open_sweep` takes from each run's eval.json: name → description.
EVAL_SUMMARY = {
    "memories_per_node": "memories written per distinct node visited on the held-out walks "
                         "(add-if-novel's ideal is 1)",
    "loop_cosine": "z-scored cosine between g before and after the smallest closed loop of "
                   "moves (add-if-novel writes a duplicate below model.write_threshold)",
}


def _eval_summary(ev: dict) -> dict[str, float]:
    """The :data:`EVAL_SUMMARY` statistics of one eval.json (NaN where absent)."""
    lr = (ev.get("transitions") or {}).get("loop_returns") or {}
    return {"memories_per_node": (ev.get("memory") or {}).get("memories_per_node", math.nan),
            "loop_cosine": lr.get("loop_cosine", math.nan)}


class SweepError(ValueError):
    """A sweep that cannot run: bad grid, a folder holding another sweep, no scheduler."""


@dataclass(frozen=True)
class SweepSettings:
    """What each run evaluates, records and analyses after training (the same for every run).

    Attributes
    ----------
    eval_envs : int
        Held-out environments evaluated (:data:`~hippo_rep.defaults.EVAL_ENVS`).
    eval_steps : int or None
        Steps per evaluation walk (None: the training walk).
    eval_seed : int
        Seed of the held-out environments (:data:`~hippo_rep.defaults.EVAL_SEED`).
    record_envs : int
        Environments recorded (:data:`DEFAULT_RECORD_ENVS`); ≥ 2 for remapping.
    record_steps : int
        Steps per recorded walk (:data:`~hippo_rep.defaults.RECORD_STEPS`).
    record_seed : int
        Seed of the recorded environments (:data:`DEFAULT_RECORD_SEED`).
    shuffles : int
        Circular-shift shuffles of the analysis (:data:`~hippo_rep.defaults.QUICK_SHUFFLES`).
    remap_shuffles : int
        Permutations of the TEM remapping test (:data:`DEFAULT_REMAP_SHUFFLES`).
    analysis_seed : int
        Seed of the analysis (:data:`DEFAULT_ANALYSIS_SEED`).
    decode : bool
        Run the population analyses (:data:`DEFAULT_DECODE`).
    eval_world, record_world : str or None
        World spec evaluated / recorded (None: the run's first training world), e.g. held-out
        ``square:11`` for a model trained on 8×8, or ``square:20`` so a map holds several
        grid periods.
    calibrate : bool
        Calibrate a TEM-t's add-if-novel write threshold after training and evaluate and
        record that copy (``calibrated.pt``; :data:`DEFAULT_CALIBRATE`). Other model kinds
        are used as trained.
    """

    eval_envs: int = EVAL_ENVS
    eval_steps: int | None = None
    eval_seed: int = EVAL_SEED
    record_envs: int = DEFAULT_RECORD_ENVS
    record_steps: int = RECORD_STEPS
    record_seed: int = DEFAULT_RECORD_SEED
    shuffles: int = QUICK_SHUFFLES
    remap_shuffles: int = DEFAULT_REMAP_SHUFFLES
    analysis_seed: int = DEFAULT_ANALYSIS_SEED
    decode: bool = DEFAULT_DECODE
    eval_world: str | None = None
    record_world: str | None = None
    calibrate: bool = DEFAULT_CALIBRATE

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name.endswith("_world"):
                if v is not None:
                    try:
                        parse_world(v)
                    except (WorldError, TypeError, AttributeError) as err:
                        raise SweepError(f"settings.{f.name}: {err}") from None
                continue
            if f.name in ("decode", "calibrate"):
                if not isinstance(v, bool):
                    raise SweepError(f"settings.{f.name} must be true or false; got {v!r}")
                continue
            if v is None and f.name == "eval_steps":
                continue
            minimum = 0 if f.name.endswith("seed") else 1
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                raise SweepError(f"settings.{f.name} must be an int ≥ {minimum}; got {v!r}")


@dataclass(frozen=True)
class Run:
    """One combination of grid values and seed.

    Attributes
    ----------
    name : str
        Folder name under ``OUT/runs``.
    labels : dict
        Grid dim → coordinate label (the config value; a tuple joined by ",").
    seed : int
        ``train.seed``.
    config : Config
        The run's full config.
    """

    name: str
    labels: dict
    seed: int
    config: Config


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


# ------------------------------------------------------------------------------ the grid
def config_keys() -> list[str]:
    """Every ``section.key`` of :class:`~hippo_rep.config.Config`."""
    keys = []
    for section, cls in typing.get_type_hints(Config).items():
        keys += [f"{section}.{k}" for k in typing.get_type_hints(cls)]
    return keys


def parse_values(text: str, key: str = "value") -> list:
    """The values of one ``--grid KEY=V1,V2,...``, each read like a ``--set`` value.

    The list is first read as a TOML array (``1e-3,3e-4``, ``true,false``,
    ``"square:8:holes=3,4;4,4","square:6"``, ``["square:6","square:8"],["square:10"]``); if
    that fails, it is split at commas and each item read as ``--set`` reads a value (TOML,
    else a bare string: ``linear,relu``, ``square:6,square:8``).
    """
    text = text.strip()
    try:
        values = tomllib.loads(f"v = [{text}]")["v"]
    except tomllib.TOMLDecodeError:
        values = [parse_override(f"x.y={item}")[2] for item in text.split(",") if item.strip()]
    if not values:
        raise SweepError(f"--grid {key}: no values (write {key}=V1,V2,...)")
    return values


def parse_grid(specs: Iterable[str] | Mapping[str, Sequence]) -> dict[str, list]:
    """``["section.key=v1,v2", ...]`` (or a mapping key → values) → ``{key: [values]}``.

    Raises
    ------
    ConfigError
        An unknown key (the message lists the valid keys), ``train.seed`` (use the seeds),
        a repeated key, or no values.
    """
    valid = config_keys()
    items = specs.items() if isinstance(specs, Mapping) else None
    grid: dict[str, list] = {}
    if items is None:
        pairs = []
        for spec in specs:
            key, sep, rhs = spec.partition("=")
            if not sep:
                raise ConfigError(f"--grid {spec!r} is not section.key=V1,V2,... "
                                  "(e.g. model.transition_activation=linear,relu)")
            pairs.append((key.strip(), parse_values(rhs, key.strip())))
    else:
        pairs = [(str(k), list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in items]
    for key, values in pairs:
        if key not in valid:
            raise ConfigError(f"unknown grid key {key!r}; valid keys: {', '.join(valid)}")
        if key == "train.seed":
            raise ConfigError("train.seed cannot be a grid key: seeds are set by the number "
                              "of seeds (--seeds N gives train.seed = 0..N-1)")
        if key in grid:
            raise ConfigError(f"grid key {key!r} is given twice")
        if not values:
            raise ConfigError(f"grid key {key!r} has no values")
        grid[key] = list(values)
    return grid


def _label(value):
    """A coordinate label of a config value: tuples joined by ","; scalars as they are."""
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return value


def _dims(keys: Sequence[str]) -> dict[str, str]:
    """Grid key → dim name: the key without its section, unless that is ambiguous or reserved."""
    short = [k.partition(".")[2] for k in keys]
    return {k: (s if short.count(s) == 1 and s not in RESERVED_DIMS else k)
            for k, s in zip(keys, short, strict=True)}


def _slug(value) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return _NAME_UNSAFE.sub("-", text)


def expand_grid(config: str | Path, grid=(), n_seeds: int = DEFAULT_SEEDS,
                overrides: Sequence[str] = ()) -> list[Run]:
    """The runs of a sweep: every combination of ``grid`` values × ``n_seeds`` seeds.

    Parameters
    ----------
    config : str or path
        Preset name or TOML file (as for ``hippo-rep train``).
    grid : sequence of str or mapping
        ``"section.key=V1,V2"`` strings (:func:`parse_grid`) or ``{key: [values]}``.
    n_seeds : int
        Seeds per combination: ``train.seed`` = 0 .. n_seeds - 1.
    overrides : sequence of str
        ``section.key=value`` applied to the base config before the grid.

    Returns
    -------
    list of Run
        In grid order (keys as given, then values as given), seeds innermost.

    Raises
    ------
    ConfigError
        An unknown key or invalid value (naming the combination), or values of one key that
        are equal once read.
    SweepError
        ``n_seeds`` < 1, or two runs whose folder names coincide.
    """
    if isinstance(n_seeds, bool) or not isinstance(n_seeds, int) or n_seeds < 1:
        raise SweepError(f"the number of seeds must be an int ≥ 1; got {n_seeds!r}")
    grid = parse_grid(grid)
    raw, source = read_raw(config)
    raw = apply_overrides(raw, overrides)
    from_dict(raw, source)  # the base config alone is valid
    keys = list(grid)
    dims = _dims(keys)
    labels: dict[str, dict] = {k: {} for k in keys}  # key → value index → label
    runs, names = [], {}
    for index in itertools.product(*(range(len(grid[k])) for k in keys)):
        combo = [grid[k][i] for k, i in zip(keys, index, strict=True)]
        for seed in range(n_seeds):
            data = {s: dict(v) for s, v in raw.items()}
            for key, value in zip(keys, combo, strict=True):
                section, _, name = key.partition(".")
                data.setdefault(section, {})[name] = value
            data.setdefault("train", {})["seed"] = seed
            where = ", ".join(f"{k}={v!r}" for k, v in zip(keys, combo, strict=True))
            cfg = from_dict(data, f"{source} with {where or 'no grid'}")
            lab = {dims[k]: _label(getattr(getattr(cfg, k.partition(".")[0]),
                                           k.partition(".")[2])) for k in keys}
            for k, i in zip(keys, index, strict=True):
                labels[k][i] = lab[dims[k]]
                seen = [v for j, v in labels[k].items() if j != i]
                if lab[dims[k]] in seen:
                    raise ConfigError(f"grid key {k!r}: value {lab[dims[k]]!r} is given twice "
                                      f"(values {grid[k]} read as {[*seen, lab[dims[k]]]})")
            name = "__".join([*(f"{d}={_slug(v)}" for d, v in lab.items()), f"seed={seed}"])
            if name in names:
                raise SweepError(f"runs {names[name]} and {lab} would share the folder "
                                 f"{name!r}; use distinguishable grid values")
            names[name] = lab
            runs.append(Run(name, lab, seed, cfg))
    return runs


# ------------------------------------------------------------------------ the manifest
def _identity_config(cfg: dict) -> dict:
    out = {s: dict(v) for s, v in cfg.items()}
    for key in NON_IDENTITY_KEYS:
        section, _, name = key.partition(".")
        out.get(section, {}).pop(name, None)
    return out


def build_manifest(runs: Sequence[Run], base: Config, grid: Mapping[str, list], n_seeds: int,
                   settings: SweepSettings, source: str, overrides: Sequence[str]) -> dict:
    """The sweep's manifest (JSON-able): base config, grid, seeds, settings and runs."""
    keys = list(grid)
    dims = _dims(keys)
    labels = {k: [] for k in keys}
    for r in runs:
        for k in keys:
            if r.labels[dims[k]] not in labels[k]:
                labels[k].append(r.labels[dims[k]])
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "package_version": __version__,
        "config_source": str(source),
        "overrides": list(overrides),
        "base_config": base.to_dict(),
        "grid": labels,
        "dims": {k: dims[k] for k in keys},
        "seeds": list(range(n_seeds)),
        "settings": dataclasses.asdict(settings),
        "runs": [{"name": r.name, "labels": r.labels, "seed": r.seed} for r in runs],
    }
    return json.loads(json.dumps(manifest))  # as read back from sweep.json (tuples → lists)


def _identity(manifest: dict) -> dict:
    return {"base_config": _identity_config(manifest.get("base_config", {})),
            "grid": manifest.get("grid"), "settings": manifest.get("settings")}


def _differences(old: dict, new: dict) -> list[str]:
    a, b = _identity(old), _identity(new)
    diffs = []
    for section in sorted(set(a["base_config"]) | set(b["base_config"])):
        sa, sb = a["base_config"].get(section, {}), b["base_config"].get(section, {})
        diffs += [f"{section}.{k}: {sa.get(k)!r} → {sb.get(k)!r}"
                  for k in sorted(set(sa) | set(sb)) if sa.get(k) != sb.get(k)]
    if a["grid"] != b["grid"]:
        diffs.append(f"grid: {a['grid']} → {b['grid']}")
    if a["settings"] != b["settings"]:
        diffs.append(f"settings: {a['settings']} → {b['settings']}")
    return diffs


def read_manifest(path) -> dict:
    """The manifest of a sweep folder (or of ``sweep.json`` itself).

    Raises
    ------
    FileNotFoundError
        No manifest there.
    SweepError
        Not readable or not a hippo_rep sweep manifest.
    """
    path = Path(path)
    file = path / MANIFEST if path.is_dir() or path.suffix != ".json" else path
    if not file.is_file():
        raise FileNotFoundError(f"{str(file)!r} not found: not a sweep folder "
                                "(hippo-rep sweep writes it)")
    data = read_json(file, SweepError, "sweep manifest")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SweepError(f"{str(file)!r} is not a hippo_rep sweep manifest")
    if data.get("format_version", 0) > FORMAT_VERSION:
        raise SweepError(f"sweep manifest {str(file)!r} has format version "
                         f"{data['format_version']}; this hippo_rep reads ≤ {FORMAT_VERSION}")
    if isinstance(data.get("settings"), dict):
        # sweeps written before calibration existed evaluated the trained checkpoint
        data["settings"].setdefault("calibrate", False)
    return data


def _check_out(out: Path, manifest: dict, overwrite: bool) -> bool:
    """Whether ``out`` holds another sweep that must be cleared (raises unless overwrite)."""
    mpath = out / MANIFEST
    runs_dir = out / RUNS_DIR
    if mpath.exists():
        try:
            old = read_manifest(out)
        except SweepError as err:
            if not overwrite:
                raise SweepError(f"{err}; pass --overwrite (overwrite=True) to replace "
                                 "it") from None
            return True
        diffs = _differences(old, manifest)
        if not diffs:
            return False
        if not overwrite:
            raise SweepError(f"{str(out)!r} holds another sweep ({'; '.join(diffs)}); pass "
                             "--overwrite (overwrite=True) to replace its runs, or choose "
                             "another --out")
        return True
    if runs_dir.exists() and any(runs_dir.iterdir()):
        if not overwrite:
            raise SweepError(f"{str(out)!r} holds runs but no {MANIFEST}; pass --overwrite "
                             "(overwrite=True) to replace them, or choose another --out")
        return True
    return False


def _clear(out: Path) -> None:
    """Remove a previous sweep's runs and manifest (only what a sweep writes)."""
    shutil.rmtree(out / RUNS_DIR, ignore_errors=True)
    (out / MANIFEST).unlink(missing_ok=True)


# ------------------------------------------------------------------------------- one run
def is_finished(run_dir) -> bool:
    """A run is finished when ``done.json`` is readable and every file it names is there with
    the size it records (decided from the files alone)."""
    run_dir = Path(run_dir)
    try:
        done = json.loads((run_dir / DONE_FILE).read_text())
        files = done["files"]
        return all((run_dir / name).stat().st_size == size for name, size in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _train_stage(run_dir: Path, cfg: Config) -> int | None:
    """Train, or continue training from the run's checkpoint. Returns the iteration resumed
    from (None: trained from scratch, or already trained)."""
    # torch: imported by the runs that train, not by reading a sweep (open_sweep, figures)
    from hippo_rep.training.checkpoint import read_checkpoint
    from hippo_rep.training.trainer import train

    ckpt = run_dir / CHECKPOINT_FILE
    if not ckpt.is_file():
        # Nothing saved yet (or killed before the first checkpoint): start afresh.
        for name in ("config.toml", "metrics.csv"):
            (run_dir / name).unlink(missing_ok=True)
        train(cfg, run_dir, progress=False)
        return None
    step = int(read_checkpoint(ckpt)["step"])
    if step >= cfg.train.iterations:
        return None
    train(cfg, run_dir, resume=True, progress=False)
    return step


def _execute(run_dir: Path, cfg: Config, settings: SweepSettings) -> dict:
    # torch: imported by the runs that evaluate, not by reading a sweep (open_sweep, figures)
    from hippo_rep.training.calibrate import calibrate_checkpoint
    from hippo_rep.training.checkpoint import file_sha256
    from hippo_rep.training.evaluate import evaluate_checkpoint

    ckpt = run_dir / CHECKPOINT_FILE
    resumed = _train_stage(run_dir, cfg)
    if resumed is not None:  # outputs of an earlier checkpoint are stale
        for name in (CALIBRATED_FILE, EVAL_FILE, RECORDING_FILE, ANALYSIS_FILE):
            (run_dir / name).unlink(missing_ok=True)
    if settings.calibrate and cfg.model.kind == "temt":
        if not (run_dir / CALIBRATED_FILE).is_file():
            calibrate_checkpoint(ckpt, run_dir / CALIBRATED_FILE)
        ckpt = run_dir / CALIBRATED_FILE
    if not (run_dir / EVAL_FILE).is_file():
        result = evaluate_checkpoint(ckpt, n_envs=settings.eval_envs, world=settings.eval_world,
                                     n_steps=settings.eval_steps, seed=settings.eval_seed)
        result["meta"]["checkpoint_sha256"] = file_sha256(ckpt)
        write_json(run_dir / EVAL_FILE, result)
    rec = run_dir / RECORDING_FILE
    if not rec.is_file():
        record_to_file(ckpt, rec, n_envs=settings.record_envs, n_steps=settings.record_steps,
                       seed=settings.record_seed, world=settings.record_world)
    if not (run_dir / ANALYSIS_FILE).is_file():
        with open_recording(rec) as ds:
            recording = ds.load()
        result = analyse(recording, shuffles=settings.shuffles, seed=settings.analysis_seed,
                         remap_shuffles=settings.remap_shuffles, decode=settings.decode,
                         scheduler=ANALYSIS_SCHEDULER)
        write_analysis(result, run_dir / ANALYSIS_FILE)
    else:
        result = open_analysis(run_dir / ANALYSIS_FILE)
    return {"resumed_from": resumed, "summary": summarise_analysis(result)}


def run_one(run_dir, config: Config, settings: SweepSettings | None = None) -> dict:
    """Train → evaluate → record → analyse one run into ``run_dir`` (one dask task).

    Finished runs (:func:`is_finished`) return at once; otherwise every stage whose file is
    missing runs (training continues from the checkpoint), then ``done.json`` is written.
    Errors are not raised: they are written to ``error.txt`` and returned (only
    KeyboardInterrupt propagates, after the trainer has saved a checkpoint). Runs in one
    process take turns (:data:`_RUN_LOCK`): torch's RNG and thread count are per process, so
    a worker with several threads still runs one run at a time.

    Returns
    -------
    dict
        ``name``, ``status`` ("skipped", "done" or "failed"), ``error`` (one line or None),
        ``resumed_from`` (iteration or None), ``wall_s``.
    """
    with _RUN_LOCK:
        return _run_one(Path(run_dir), config,
                        SweepSettings() if settings is None else settings)


def _run_one(run_dir: Path, config: Config, settings: SweepSettings) -> dict:
    t0 = time.perf_counter()
    started = _now()
    res = {"name": run_dir.name, "status": "skipped", "error": None, "resumed_from": None,
           "wall_s": 0.0}
    if is_finished(run_dir):
        return res
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / ERROR_FILE).unlink(missing_ok=True)
    (run_dir / DONE_FILE).unlink(missing_ok=True)
    try:
        # Every dask computation of the run (loading the recording, the analysis) stays in
        # this thread: on a dask worker the default would be the distributed client, and
        # tasks that compute through it secede from the worker's thread pool, which then
        # starts the next run beside this one (measured: 4 runs at once on a 1-thread worker,
        # racing on torch's global RNG in build_model).
        with dask.config.set(scheduler=ANALYSIS_SCHEDULER):
            stages = _execute(run_dir, config, settings)
        res["resumed_from"] = stages["resumed_from"]
        res["wall_s"] = time.perf_counter() - t0
        write_json(run_dir / DONE_FILE, {
            "files": {n: (run_dir / n).stat().st_size for n in RESULT_FILES},
            "summary": {k: (v if math.isfinite(v) else None)  # standard JSON: NaN → null
                        for k, v in stages["summary"].items()},
            "resumed_from": res["resumed_from"], "wall_s": res["wall_s"],
            "started": started, "finished": _now(),
            "host": socket.gethostname(), "pid": os.getpid(),
            "config": config.to_dict(), "settings": dataclasses.asdict(settings)})
        res["status"] = "done"
    except Exception as err:  # one failing run must not stop the sweep
        res.update(status="failed", error=_one_line(err), wall_s=time.perf_counter() - t0)
        _write_error(run_dir, traceback.format_exc())
    return res


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec=TIME_SPEC)


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".strip()


def _write_error(run_dir: Path, text: str) -> None:
    with contextlib.suppress(OSError):
        atomic_write(run_dir / ERROR_FILE, lambda tmp: Path(tmp).write_text(text))


# ------------------------------------------------------------------------------ the sweep
def run_sweep(config: str | Path, grid, n_seeds: int, out, *,
              overrides: Sequence[str] = (), settings: SweepSettings | None = None,
              scheduler: str | None = None, workers: int | None = None,
              overwrite: bool = False, progress: bool = True) -> SweepReport:
    """Run (or continue) a sweep: :func:`expand_grid`'s runs, each by :func:`run_one`.

    Parameters
    ----------
    config : str or path
        Preset name or TOML file.
    grid : sequence of str or mapping
        ``"section.key=V1,V2"`` strings or ``{key: [values]}``.
    n_seeds : int
        Seeds per grid combination (``train.seed`` = 0 .. n_seeds - 1).
    out : path
        Sweep folder: ``sweep.json`` and ``runs/NAME/``.
    overrides : sequence of str
        ``section.key=value`` applied to the base config.
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
    ConfigError
        Bad config, grid key or value (before anything is written).
    SweepError
        ``out`` holds another sweep and not ``overwrite``; both or neither of a bad
        ``scheduler``/``workers``; a scheduler that cannot be reached within
        :data:`~hippo_rep.cluster.SCHEDULER_TIMEOUT_S` seconds (the message names
        the address). Nothing is written then.
    """
    t0 = time.perf_counter()
    settings = SweepSettings() if settings is None else settings
    grid = parse_grid(grid)
    runs = expand_grid(config, grid, n_seeds, overrides)
    raw, source = read_raw(config)
    base = from_dict(apply_overrides(raw, overrides), source)
    manifest = build_manifest(runs, base, grid, n_seeds, settings, str(config), overrides)
    out = Path(out).resolve()
    clear = _check_out(out, manifest, overwrite)
    report = SweepReport(out, [r.name for r in runs])
    with contextlib.ExitStack() as stack:
        try:
            client = stack.enter_context(dask_client(scheduler=scheduler, workers=workers))
        except ClusterError as err:
            raise SweepError(str(err)) from None
        if clear:
            _clear(out)
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / MANIFEST, manifest)
        todo = []
        for r in runs:
            if is_finished(out / RUNS_DIR / r.name):
                report.skipped.append(r.name)
            else:
                todo.append(r)
        bar = _Progress(len(runs), len(report.skipped), progress)
        try:
            if client is None:
                _run_sequential(todo, out, settings, report, bar)
            else:
                _run_dask(client, todo, out, settings, report, bar)
        finally:
            bar.close()
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


def _run_sequential(todo, out: Path, settings, report: SweepReport, bar) -> None:
    for r in todo:
        bar.update(running=1)
        _record(report, run_one(out / RUNS_DIR / r.name, r.config, settings))
        bar.update(report=report, running=0, finished=1)


def _run_dask(client, todo, out: Path, settings, report: SweepReport, bar) -> None:
    from distributed import as_completed  # only sweeps on a cluster import distributed

    slots = max(1, len(client.nthreads()))  # one run at a time per worker process
    futures = {}
    for r in todo:
        fut = client.submit(run_one, str(out / RUNS_DIR / r.name), r.config, settings,
                            key=f"hippo-rep-sweep-{r.name}-{time.time_ns()}", pure=False)
        futures[fut] = r
    bar.update(running=min(slots, len(futures)))
    left = len(futures)
    try:
        for fut in as_completed(list(futures)):
            r = futures[fut]
            try:
                res = fut.result()
            except Exception as err:  # a worker died, or the task was lost
                res = {"name": r.name, "status": "failed", "error": _one_line(err)}
                _write_error(out / RUNS_DIR / r.name,
                             "".join(traceback.format_exception(err)))
            _record(report, res)
            left -= 1
            bar.update(report=report, running=min(slots, left), finished=1)
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

    def update(self, report: SweepReport | None = None, running: int | None = None,
               finished: int = 0) -> None:
        if report is not None:
            self.counts.update(done=len(report.done) + len(report.skipped),
                               failed=len(report.failed))
        if running is not None:
            self.counts["running"] = running
        if self.bar is not None:
            self.bar.set_postfix(self.counts, refresh=False)
            self.bar.update(finished)
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ------------------------------------------------------------------------------- reading
def summarise_analysis(analysis) -> dict[str, float]:
    """The :data:`SUMMARY` statistics of one analysis dataset (NaN where not computable).

    Fractions are :func:`~hippo_rep.analysis.class_fractions` (over the (env, unit) pairs
    of the population that exist: memory slots unused in an environment are left out);
    correlations are means over environment pairs (and units) of the analysis' remapping
    variables.
    """
    a = analysis
    out = dict.fromkeys(SUMMARY, math.nan)
    if "variable" not in a.coords:
        return out
    held = a.hippo.populations
    g, mem = (a.hippo.population(p) if p in held else a.isel(unit=[])
              for p in (G, MEMORY_ACTIVITY))

    fr = a.hippo.summary() if "rate_map" in a else None

    def frac(pop, flag):
        if fr is None or flag not in fr["cell_class"] or pop not in fr["population"]:
            return math.nan
        return float(fr["fraction"].sel(population=pop, cell_class=flag))

    def nanmean(x):
        x = np.asarray(x, dtype=np.float64)
        x = x[np.isfinite(x)]
        return float(x.mean()) if x.size else math.nan

    out["grid_fraction"] = frac(G, IS_GRID)
    out["grid_fraction_threshold"] = frac(G, IS_GRID_THRESHOLD)
    out["two_wave_fraction"] = frac(G, IS_TWO_WAVE)
    out["band_fraction"] = frac(G, IS_BAND)
    out["square_fraction"] = frac(G, IS_SQUARE)
    if "gridness_60" in g and g.sizes.get("unit", 0):
        s = g["gridness_60"].values
        s = s[np.isfinite(s)]
        out["gridness_median"] = float(np.median(s)) if s.size else math.nan
    if "hexagonal" in g and "rate_map" in g and g.sizes.get("unit", 0):
        exists = g["rate_map"].notnull().any(("y", "x")).values
        out["hexagonal_fraction"] = (float(g["hexagonal"].values[exists].mean())
                                     if exists.any() else math.nan)
    if "wave_length" in g and g.sizes.get("unit", 0):
        first = g["wave_length"].isel(wave=0).values
        first = first[np.isfinite(first)]
        out["wavelength_median"] = float(np.median(first)) if first.size else math.nan
    out["place_fraction"] = frac(MEMORY_ACTIVITY, IS_PLACE)
    if "remap_corr" in a:
        out["remap_corr_g"] = nanmean(g["remap_corr"].values) if g.sizes["unit"] else math.nan
        out["remap_corr_memory"] = (nanmean(mem["remap_corr"].values) if mem.sizes["unit"]
                                    else math.nan)
    if "pv_corr" in a and "population" in a["pv_corr"].dims:
        pops = list(a["population"].values)
        for pop, name in ((G, "pv_corr_g"), (MEMORY_ACTIVITY, "pv_corr_memory")):
            if pop in pops:
                out[name] = nanmean(a["pv_corr"].sel(population=pop).values)
    if "tem_corr_mean" in a:
        out["tem_corr"] = float(a["tem_corr_mean"])
    if "tem_p_mean" in a:
        out["tem_p"] = float(a["tem_p_mean"])
    return out


def _run_summary(run_dir: Path, open_analysis) -> dict[str, float]:
    """The run's :data:`SUMMARY`, as ``done.json`` keeps it (computed from the analysis when
    the run was finished; opening ``analysis.nc`` again only if it lacks a statistic)."""
    try:
        kept = json.loads((run_dir / DONE_FILE).read_text())["summary"]
        if set(SUMMARY) <= set(kept):
            return {k: (math.nan if kept[k] is None else float(kept[k])) for k in SUMMARY}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return summarise_analysis(open_analysis(run_dir / ANALYSIS_FILE))


def _status(run_dir: Path) -> str:
    if is_finished(run_dir):
        return "done"
    if (run_dir / ERROR_FILE).is_file():
        return "failed"
    if run_dir.is_dir():
        return "unfinished"
    return "not started"


def open_sweep(path):
    """A sweep folder as one ``xr.Dataset``: a dim per grid key plus ``seed``.

    Parameters
    ----------
    path : path
        The sweep folder (``hippo-rep sweep --out``) or its ``sweep.json``.

    Returns
    -------
    xarray.Dataset
        Dims: one per grid key (named by the key without its section, e.g.
        ``transition_activation``, unless ambiguous; ``attrs["dims"]`` maps dims to keys;
        coords are the config values, tuples joined by ","), ``seed``, and for ``accuracy``
        also ``agent`` (:data:`AGENTS`) and ``step_type`` (:data:`STEP_TYPES`). Variables:
        ``accuracy`` (fraction correct on the held-out environments of ``eval.json``), the
        :data:`SUMMARY` statistics of ``analysis.nc``, ``status`` ("done", "failed",
        "unfinished", "not started") and ``run`` (folder name). Values of runs that are
        not finished are NaN. Attrs: ``manifest`` (the manifest as JSON), ``dims``,
        ``sweep_path``.

    Raises
    ------
    FileNotFoundError, SweepError
        No or unreadable manifest.
    """
    man = read_manifest(path)
    root = Path(path)
    root = root.parent if root.suffix == ".json" and root.is_file() else root
    keys = list(man["grid"])
    dims = [man["dims"][k] for k in keys]
    coords = {d: list(man["grid"][k]) for d, k in zip(dims, keys, strict=True)}
    coords["seed"] = list(man["seeds"])
    shape = tuple(len(v) for v in coords.values())
    acc = np.full((*shape, len(AGENTS), len(STEP_TYPES)), np.nan)
    summ = {k: np.full(shape, np.nan) for k in (*SUMMARY, *EVAL_SUMMARY)}
    status = np.full(shape, "not started", dtype=object)
    names = np.full(shape, "", dtype=object)
    for r in man["runs"]:
        if r["seed"] not in coords["seed"]:
            continue
        idx = tuple(coords[d].index(r["labels"][d]) for d in dims) + \
            (coords["seed"].index(r["seed"]),)
        run_dir = root / RUNS_DIR / r["name"]
        names[idx] = r["name"]
        status[idx] = _status(run_dir)
        if status[idx] != "done":
            continue
        ev = json.loads((run_dir / EVAL_FILE).read_text())
        for k, v in _eval_summary(ev).items():
            summ[k][idx] = v
        for i, agent in enumerate(AGENTS):
            for j, st in enumerate(STEP_TYPES):
                v = ev.get(agent, {}).get(st)
                acc[idx + (i, j)] = np.nan if v is None else v
        for k, v in _run_summary(run_dir, open_analysis).items():
            summ[k][idx] = v
    rdims = (*dims, "seed")
    ds = xr.Dataset(coords={**coords, "agent": list(AGENTS), "step_type": list(STEP_TYPES)})
    ds["accuracy"] = xr.DataArray(acc, dims=(*rdims, "agent", "step_type"), attrs={
        "long_name": "held-out accuracy", "units": "1",
        "description": "fraction of steps predicted correctly on held-out environments, by "
                       "agent and step type (eval.json)"})
    for k, v in summ.items():
        ds[k] = xr.DataArray(v, dims=rdims, attrs={
            "long_name": {**SUMMARY, **EVAL_SUMMARY}[k], "units": "1"})
    ds["status"] = xr.DataArray(status.astype(str), dims=rdims)
    ds["run"] = xr.DataArray(names.astype(str), dims=rdims)
    ds.attrs.update(manifest=json.dumps(man), dims=json.dumps(dict(zip(dims, keys, strict=True))),
                    sweep_path=str(root))
    return ds
