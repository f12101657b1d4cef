"""The whole analysis of a recording in one dataset, dask-parallel over units; writing it.

:func:`analyse` computes, for every unit of every population (``g``, ``g_pi``,
``memory_activity``: concatenated along one ``unit`` dim with coords ``variable`` and
``unit_index``) and every environment: rate maps, grid scores, band scores, place fields,
place score, spatial information, sparsity, selectivity, the plane-wave decomposition,
circular-shift nulls of gridness-60, plane-wave share and spatial information, the
grid/band/two-wave/square/place classification; then remapping between environments
and the population analyses. All per-unit work is one ``xr.apply_ufunc(...,
dask="parallelized")`` over arrays chunked along ``unit`` (one task per chunk of
:data:`DEFAULT_UNIT_CHUNK` units computes every score of those units, calling the same code
as the public functions), so with a ``dask.distributed.Client`` active the units are spread
over its workers; the population analyses are one ``dask.delayed`` task per population.
Every unit is computed by the same code whatever the scheduler, so the result is identical
to the single-process one (the default without a Client: dask's synchronous scheduler).

Speed (``benchmarks/bench_analyse.py``): 16 environments x 278 units x 100 shuffles take
~50 s in one process; a 2-worker local cluster was 1.35x faster on a 2-CPU machine that
other jobs were also using. Workers started by :func:`~hippo_rep.cluster.dask_client`
do not inherit distributed's ``MALLOC_TRIM_THRESHOLD_=65536``, which made this workload ~3x
slower per worker.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from hippo_rep import __version__
from hippo_rep.datasets import CHUNKS_COMPLETE_ATTR, check_chunks, load_checked, missing_reader
from hippo_rep.defaults import (
    BLAS_THREADS,
    N_SHUFFLES,
    NETCDF_COMPLEVEL,
    SESSION_BIN_SIZE_CM,
    SESSION_MIN_SHIFT_S,
    SESSION_MIN_SPEED_CM_S,
    SESSION_SMOOTH_CM,
)
from hippo_rep.fileio import atomic_folder, atomic_write
from hippo_rep.schema import (
    ANALYSIS_KIND,
    G_PI,
    KIND_ATTR,
    POPULATIONS,
    G,
    place_population,
    require_recording,
    validate_analysis,
)

from ._checks import check_positive_number
from .bandscore import band_kernel
from .classify import GRID_QUANTILE, PLACE_QUANTILE, classify
from .fields import place_fields_kernel, place_score_kernel
from .gridscore import grid_kernel
from .kernels import Kernel, Output
from .planewaves import MAX_WAVES, WAVE_DIM, WAVES
from .population import (
    DECODE_MAX_STEPS_PER_ENV,
    assemble,
    population_inputs,
    population_one,
)
from .recordings import (
    NODE_DIM,
    UNIT_DIM,
    AnalysisError,
    node_index,
    rate_maps,
    unit_activity,
)
from .remapping import (
    PAIR_DIM,
    REMAP_MIN_NODES,
    TEM_SHUFFLES,
    _unit_corr_core,
    env_pairs,
    remapping_from_rates,
    stack_units,
)
from .sample_counts import SampleCounts
from .sessions import (
    ARENA_ATTR,
    CELL_ID,
    CELLS_ATTR,
    RATE,
    SESSION_KIND,
    SESSION_MIN_FIELD_AREA_CM2,
    _cells_of,
    _sample_counts,
    is_session,
    parse_arena,
    sample_interval,
    session_node,
    session_populations,
    session_rate_maps,
    validate_session,
)
from .shuffle import (
    NULL_QUANTILES,
    SHUFFLE_DIM,
    SHUFFLE_MIN_SHIFT_FRACTION,
    _null_core,
    _summary_core,
    check_n_shuffles,
    circular_shifts,
    score_gridness_60,
    score_plane_wave_share,
    score_spatial_info,
)
from .spatial import selectivity, sparsity, spatial_information

#: Units per dask chunk when the analysis runs on dask (a distributed Client is active or
#: ``chunk_units`` is given): small enough to balance a few workers, large enough that each
#: task scores a few thousand shuffled maps.
DEFAULT_UNIT_CHUNK = 16

#: Dask scheduler of :func:`analyse` when no ``dask.distributed.Client`` is active: one
#: process, one thread (the reference for "identical to single-process").
DEFAULT_SCHEDULER = "synchronous"

#: Dim and variable of the packed per-unit outputs inside :func:`analyse` (``_UnitBlock``).
_PACKED, _PACKED_VAR = "packed", "packed_outputs"

#: Grid-score family used by :func:`analyse`: the one ML papers report (Banino et al. 2018,
#: Nature; Sorscher et al. 2019, NeurIPS).
GRID_METHOD = "deepmind"

#: Smallest place field :func:`analyse` counts, in world nodes. A TEM-t memory neuron fires at
#: the one (position, observation) conjunction it stores, so its field in a graph world is a
#: single node; with fields.MIN_FIELD_AREA (3 bins at one bin per node) no memory neuron of
#: the shipped 11x11 recording had a field, though their spatial information was near
#: log2(121) bits. Converted to bins with the map resolution.
FIELD_MIN_NODES = 1

#: Per-field outputs (``field`` dim) kept in the analysis dataset: the classification only
#: needs up to 3 fields, and every field is still counted in ``n_fields``.
ANALYSIS_MAX_FIELDS = 4

#: Output suffixes :func:`write_analysis` understands.
SUFFIXES = (".nc", ".zarr")

#: Recording attrs copied to the analysis (provenance); ``seed`` and ``package_version``
#: become ``recording_seed`` and ``recording_package_version``.
PROVENANCE_ATTRS = (
    "checkpoint_sha256",
    "world",
    "n_steps",
    "model_config",
    "world_config",
    "recording_config",
    "controls_config",
)


def _active_client() -> object | None:
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _prefixed(attrs: dict, prefix: str) -> dict:
    return {k if k.startswith(prefix) else f"{prefix}{k}": v for k, v in attrs.items()}


def _single_blas(fn):
    """Run ``fn`` with :data:`~hippo_rep.defaults.BLAS_THREADS` BLAS threads."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper


@_single_blas
def analyse(
    recording: xr.Dataset,
    shuffles: int = N_SHUFFLES,
    seed: int = 0,
    variables: Sequence[str] | None = None,
    grid_method: str = GRID_METHOD,
    smooth_sigma: float | None = None,
    resolution: float | None = None,
    quantiles: Sequence[float] = NULL_QUANTILES,
    min_shift_fraction: float = SHUFFLE_MIN_SHIFT_FRACTION,
    remap_shuffles: int = TEM_SHUFFLES,
    decode: bool = True,
    decode_max_steps_per_env: int = DECODE_MAX_STEPS_PER_ENV,
    keep_null: bool = False,
    chunk_units: int | None = DEFAULT_UNIT_CHUNK,
    scheduler: str | None = None,
    *,
    bin_size_cm: float | None = None,
    smooth_cm: float | None = None,
    min_speed_cm_s: float | None = None,
    min_shift_s: float | None = None,
    progress: bool = False,
    session_checked: bool = False,
) -> xr.Dataset:
    """Analyse a recording or a session: maps, scores, shuffle nulls, classification,
    remapping, decoding.

    Runs with single-threaded BLAS (:data:`~hippo_rep.defaults.BLAS_THREADS`).

    A *session* (your own cells in a continuous arena, :mod:`~hippo_rep.analysis.sessions`)
    is validated once (not here with ``session_checked``: its reader did) and turned into
    the same inputs as a recording: its rate per tracking sample (spikes per sample / sample
    interval) as the activity, the square bin of every speed-filtered sample as its "node"
    (one bin per node), one environment. Every per-unit kernel, the shuffles (circular
    shifts of each cell's spike train, at least ``min_shift_s``) and the classification are
    then the recording's. Spikes are never made a dense (time, cell) array: their counts
    per sample are held sparsely (:class:`~hippo_rep.analysis.sample_counts.SampleCounts`)
    and every map, real or shifted, is a bincount of (shifted) sample indices, the same
    numbers as the dense products; a session of rates is held once, densely, and mapped
    ``chunk_units`` cells at a time. Shifts and scored maps go in blocks of bounded size
    (:data:`~hippo_rep.analysis.shuffle.NULL_BLOCK_ONEHOT`,
    :data:`~hippo_rep.analysis.shuffle.NULL_BLOCK_BINS`), so memory does not grow with the
    number of shuffles, and with a session's length only as its spikes and tracking do. Its
    analysis holds ``x``, ``y`` in cm, ``occupancy`` in seconds, ``rate_map`` in Hz,
    ``spacing_cm`` and ``wave_length_cm``, the coord ``cell_id`` on ``unit``, and its
    populations by their names; it has no decoding (needs environments) and no
    ``spacing_nodes``.

    Parameters
    ----------
    recording : xarray.Dataset
        A recording (``hippo_rep.recording``); needs ``node``, ``node_x``, ``node_y``, the
        variables, and ``x``/``y`` when ``decode``. Or a session.
    shuffles : int
        Circular-shift shuffles per environment (>= 1) for the gridness-60 and
        spatial-information nulls.
    seed : int
        Seed of all randomness (shifts, the TEM test's permutations), via
        ``numpy.random.SeedSequence(seed).spawn(2)``.
    variables : sequence of str, optional
        Populations to analyse (default: those of ``("g", "g_pi", "memory_activity")``
        present, or every population of a session; a named one that is missing is an error).
    grid_method : {"deepmind", "bnt"}
        Grid-score family (never compare scores across families).
    smooth_sigma : float, optional
        Occupancy-weighted smoothing of the rate maps in bins (default none), applied to the
        real and shuffled maps alike. Recordings only (sessions: ``smooth_cm``).
    resolution : float, optional
        Raster bin size in node spacings for non-square worlds (default
        :data:`~hippo_rep.analysis.ratemaps.NODE_RESOLUTION`). Recordings only (sessions:
        ``bin_size_cm``).
    quantiles : sequence of float
        Null quantiles to report; must include 0.95 and 0.99 for :func:`classify`.
    min_shift_fraction : float
        Smallest circular shift as a fraction of the walk (recordings; a session's is
        ``min_shift_s`` over its duration).
    remap_shuffles : int
        Permutations in the TEM remapping test and in the cell-pair structure's nulls.
    decode : bool
        Run the population analyses (decoding and PCA).
    decode_max_steps_per_env : int
        Time steps per environment used for decoding (evenly spaced).
    keep_null : bool
        Keep the full null distributions (``*_null``, dims env, unit, shuffle).
    chunk_units : int or None
        Units per dask chunk (default :data:`DEFAULT_UNIT_CHUNK`). The result depends on
        the chunking only through floating-point round-off (~1e-12); for a given
        ``chunk_units`` it is identical whatever the scheduler. None: plain numpy, no dask.
    scheduler : str, optional
        Dask scheduler of the compute: default the active ``dask.distributed.Client`` if
        there is one (units spread over its workers), else :data:`DEFAULT_SCHEDULER`
        ("synchronous": one process, one thread); "threads" uses a thread pool.
    bin_size_cm, smooth_cm, min_speed_cm_s, min_shift_s : float, optional
        Sessions only: bin side (cm), Gaussian σ of BNT-style smoothing (cm, 0 = none),
        speed filter (cm/s) and smallest circular shift of the spike trains (s); defaults
        :data:`~hippo_rep.defaults.SESSION_BIN_SIZE_CM`, ``SESSION_SMOOTH_CM``,
        ``SESSION_MIN_SPEED_CM_S``, ``SESSION_MIN_SHIFT_S``.
    progress : bool
        Show a tqdm bar of the shuffled maps scored (the bulk of the time) on stderr (or a
        notebook widget). It advances as the chunks of units that run in this process are
        scored (the synchronous and threads schedulers, a Client of threads); with worker
        processes it fills when they are done. Off by default: library calls are quiet. The
        result is the same either way.
    session_checked : bool
        The session has just passed :func:`~hippo_rep.analysis.validate_session` (as what
        :func:`~hippo_rep.analysis.open_session` and :func:`~hippo_rep.analysis.read_nwb`
        return has, with errors naming the file): it is not checked again. Sessions only;
        default False (checked here).

    Returns
    -------
    xarray.Dataset
        Dims ``env``, ``unit``, ``y``, ``x``, ``world_node``, ``quantile``, ``field``, ``wave``,
        ``env_pair``, ``population``, ``axis``, ``component``. Per (env, unit): everything of
        :func:`~hippo_rep.analysis.grid_scores` (``grid_nan_reason``), ``spacing_nodes``,
        :func:`~hippo_rep.analysis.band_scores` (``band_nan_reason``), ``n_fields`` and
        per-field ``field_*`` (env, unit, field), ``place_score``, ``spatial_info``,
        ``sparsity``, ``selectivity`` (per node), the plane-wave decomposition
        (:func:`~hippo_rep.analysis.plane_waves`: ``n_waves``, ``hexagonal``, ``square``,
        ``plane_wave_share``, ``plane_wave_explained``, ``plane_wave_reason`` and
        ``wave_length``, ``wave_angle``, ``wave_share`` (env, unit, wave), and the lattice
        outputs ``triad_phase``, ``lattice``, ``triad_phase_reason``, ``triad_closure``,
        ``hexagonal_angle_deviation``, ``wave_length_ratio``, ``nonnegative``,
        ``single_field``),
        ``gridness_60_null_q``, ``plane_wave_share_null_q``, ``spatial_info_null_q``
        (quantile, env, unit), ``*_percentile``, the classes of
        :mod:`~hippo_rep.schema` (``is_grid``, ``is_grid_threshold``,
        ``is_band``, ``is_two_wave``, ``is_square``, ``is_place``); ``rate_map`` (env, unit, y, x),
        ``occupancy`` (env, y, x), ``node_rate`` (env, unit, world_node), ``node_occupancy``,
        ``node_map``; ``shuffle_shift`` (env, shuffle); the remapping variables
        (:func:`~hippo_rep.analysis.remapping`) and the population variables
        (:func:`~hippo_rep.analysis.population`). Attrs: every method and parameter, the
        seed, this package's version and the recording's provenance.

    Raises
    ------
    AnalysisError
        For a non-recording, a missing variable or coord, ``shuffles`` < 1, an unknown
        ``grid_method`` or bad ``chunk_units``; a session's options given with a recording or
        a recording's with a session; a malformed session (``SessionError``).
    """
    session_opts = dict(bin_size_cm=bin_size_cm, smooth_cm=smooth_cm,
                        min_speed_cm_s=min_speed_cm_s, min_shift_s=min_shift_s)
    session = is_session(recording)
    if session:
        for name, value in (("smooth_sigma", smooth_sigma), ("resolution", resolution)):
            if value is not None:
                raise AnalysisError(f"{name} is for recordings; a session takes "
                                    + ("smooth_cm" if name == "smooth_sigma" else "bin_size_cm"))
        if not session_checked:
            validate_session(recording)
        held = session_populations(recording)
        variables = held if variables is None else list(dict.fromkeys(variables))
        missing = [v for v in variables if v not in held]
        if missing:
            raise AnalysisError(f"the session has no population {missing[0]!r} (populations: "
                                f"{', '.join(held)})")
        decode = False  # decoding is across environments; a session is one
    else:
        given = [k for k, v in session_opts.items() if v is not None]
        given += ["session_checked"] if session_checked else []
        if given:
            raise AnalysisError(f"{given[0]} is for sessions; a recording takes smooth_sigma "
                                "and resolution")
        if variables is None:
            if not isinstance(recording, xr.Dataset):
                require_recording(recording)
            variables = [v for v in POPULATIONS if v in recording.data_vars]
            if not variables:
                require_recording(recording, [G])
        variables = list(dict.fromkeys(variables))
        require_recording(recording, variables, need_xy=decode)
    shuffles = check_n_shuffles(shuffles, "shuffles")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise AnalysisError(f"seed must be an int >= 0; got {seed!r}")
    if grid_method not in ("deepmind", "bnt"):
        raise AnalysisError(f"grid_method must be 'deepmind' or 'bnt'; got {grid_method!r}")
    if chunk_units is not None and (
        isinstance(chunk_units, bool) or not isinstance(chunk_units, (int, np.integer))
        or chunk_units < 1
    ):
        raise AnalysisError(f"chunk_units must be an int >= 1 or None; got {chunk_units!r}")
    if scheduler is None and _active_client() is None:
        scheduler = DEFAULT_SCHEDULER
    for q in (GRID_QUANTILE, PLACE_QUANTILE):
        if not np.isclose(np.asarray(quantiles, dtype=np.float64), q).any():
            raise AnalysisError(f"quantiles must include {q} (for the classification); "
                                f"got {quantiles!r}")
    check_n_shuffles(remap_shuffles, "remap_shuffles")
    steps = int(decode_max_steps_per_env)
    if steps < 1:
        raise AnalysisError(f"decode_max_steps_per_env must be >= 1; got {steps}")
    shift_ss, tem_ss = np.random.SeedSequence(int(seed)).spawn(2)

    # ---- rate maps (one sparse product per population; cheap, eager)
    # (activity and nodes read from the recording or session once, and passed along)
    if session:  # one dense copy of a session's rates, or its spikes held sparsely
        prep = _session_inputs(recording, variables, chunk_units=chunk_units, **session_opts)
        node, maps, acts = prep.node, prep.maps, {}
        activity, counts = prep.activity, prep.counts
        min_shift_fraction = prep.min_shift_fraction
        field_min_area = prep.field_min_area
    else:
        node = node_index(recording)
        acts = {v: unit_activity(recording, v) for v in variables}
        maps = {v: rate_maps(recording, v, smooth_sigma=smooth_sigma, resolution=resolution,
                             activity=acts[v], node=node) for v in variables}
        activity, counts = stack_units(acts), None
    first = maps[variables[0]]
    sigma, res = float(first.attrs["smooth_sigma_bins"]), float(first.attrs["resolution"])
    if not session:  # FIELD_MIN_NODES in bins: a node covers about 1 / resolution² bins
        field_min_area = max(1, int(round(FIELD_MIN_NODES / res**2)))
    rate_map = stack_units({v: m["rate_map"] for v, m in maps.items()})
    node_rate = stack_units({v: m["node_rate"] for v, m in maps.items()})
    n_env, n_time = ((activity.sizes["env"], activity.sizes["time"]) if counts is None
                     else (1, counts.n_time))
    shifts = xr.DataArray(
        circular_shifts(n_time, n_env, shuffles, np.random.default_rng(shift_ss),
                        min_shift_fraction),
        dims=("env", SHUFFLE_DIM),
        coords={"env": rate_map["env"]},
    )
    lazy = chunk_units is not None
    occ = first["node_occupancy"]
    # ---- every per-unit computation: one task per chunk of units (lazy when chunked)
    spec = _UnitBlock(
        kernels=_kernels(grid_method, field_min_area),
        grid_method=grid_method,
        quantiles=tuple(float(q) for q in quantiles),
        node_map=first["node_map"].values,
        n_nodes=first.sizes[NODE_DIM],
        sigma=sigma,
        pairs=env_pairs(rate_map["env"])[1],
        keep_null=bool(keep_null),
        counts=counts,
    )
    # bare arrays in: chunking would also chunk the unit coords, which apply_ufunc would then
    # compute (with dask's default scheduler) to check that the inputs agree
    bare = [da.drop_vars(["variable", "unit_index"], errors="ignore")
            for da in (rate_map, node_rate, activity)]
    inputs = [*bare, occ, node, shifts]
    if lazy:  # chunked along unit only
        inputs[:3] = [b.chunk({UNIT_DIM: int(chunk_units)}) for b in bare]
    sizes = {"env": n_env, "field": ANALYSIS_MAX_FIELDS, "quantile": len(spec.quantiles),
             PAIR_DIM: len(spec.pairs), SHUFFLE_DIM: shuffles, WAVE_DIM: MAX_WAVES}
    pop_inputs = ({v: population_inputs(recording, v, node, acts[v], maps[v]["node_rate"])
                   for v in variables} if decode else {})
    total = n_env * activity.sizes[UNIT_DIM] * shuffles * len(_NULL_SCORES)
    with _progress_bar(progress, total) as bar:
        out, pop_tasks = _per_unit_and_populations(spec, inputs, sizes, lazy, scheduler,
                                                   pop_inputs, steps)
        bar.update(bar.total - bar.n)  # worker processes do not tick this process' bar

    # ---- assemble
    out = spec.unpack(out[_PACKED_VAR], sizes)
    out = out.assign_coords(variable=rate_map["variable"], unit_index=rate_map["unit_index"],
                            env=rate_map["env"], quantile=np.asarray(spec.quantiles))
    out = out.assign_coords(env_pairs(rate_map["env"])[0].coords)
    out = out.assign_coords({WAVE_DIM: np.arange(MAX_WAVES)})
    # the recording's labels of its environments (e.g. ``control`` of a controls recording)
    out = out.assign_coords({k: c for k, c in recording.coords.items()
                             if c.dims == ("env",) and k != "env"})
    if session:
        cm = first.attrs["bin_size_cm"]
        out["spacing_cm"] = out["spacing"] * cm
        out["spacing_cm"].attrs = {"long_name": "grid spacing in cm (spacing x bin size)",
                                   "units": "cm"}
        out["wave_length_cm"] = out["wave_length"] * cm
        out["wave_length_cm"].attrs = {"long_name": "plane-wave length in cm (wave_length x "
                                       "bin size)", "units": "cm"}
        out = out.assign_coords({CELL_ID: (UNIT_DIM, prep.cell_id)})
    else:
        out["spacing_nodes"] = out["spacing"] * res
        out["spacing_nodes"].attrs = {
            "long_name": "grid spacing in node spacings (spacing x resolution)",
            "units": "node spacings",
        }
    for k in ("grid", "band"):
        out[f"{k}_nan_reason"].attrs["long_name"] = f"why the {k} scores are NaN ('' = defined)"
    out = out.transpose("env", UNIT_DIM, ...)
    out["remap_corr"] = out["remap_corr"].transpose(UNIT_DIM, PAIR_DIM)
    for k in _NULL_SCORES:
        out[f"{k}_null_q"] = out[f"{k}_null_q"].transpose("quantile", ...)
    cls = classify(out)
    out.update(cls)
    out["rate_map"] = rate_map
    out["occupancy"] = first["occupancy"]
    out["node_rate"] = node_rate
    out["node_occupancy"] = occ
    out["node_map"] = first["node_map"]
    out["shuffle_shift"] = shifts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out["remap_corr_mean"] = out["remap_corr"].mean(PAIR_DIM, skipna=True)
        remap = remapping_from_rates(
            {v: m["node_rate"] for v, m in maps.items()},
            variables,
            grid_variable=next((v for v in (G, G_PI) if v in variables), None),
            memory_variable=place_population(variables),  # memory neurons, or TEM's p
            n_shuffles=remap_shuffles,
            rng=np.random.default_rng(tem_ss),
            per_unit=False,
            rate_maps={v: m["rate_map"] for v, m in maps.items()},
            pair_shuffles=remap_shuffles,
        )
    out["remap_corr_mean"].attrs = {"long_name": "remap_corr averaged over environment pairs",
                                    "units": "1"}
    out = out.merge(remap, compat="override", join="outer")
    pop = assemble(pop_tasks) if decode else None
    if pop is not None:
        pop.attrs["decode_max_steps_per_env"] = steps
        out = out.merge(pop, compat="override", join="outer")
    _set_attrs(out, recording, spec.kernels, cls, remap, pop, shifts,
               dict(shuffles=shuffles, seed=int(seed), grid_method=grid_method, sigma=sigma,
                    min_shift_fraction=min_shift_fraction, variables=variables,
                    resolution=res, decode=decode, chunk_units=chunk_units))
    if session:
        _session_attrs(out, prep, first)
    return out


@dataclass(frozen=True)
class _SessionInputs:
    """What :func:`analyse` reads from a session (:func:`_session_inputs`)."""

    node: xr.DataArray
    activity: xr.DataArray
    counts: SampleCounts | None
    maps: dict
    cell_id: np.ndarray
    min_shift_s: float
    min_shift_fraction: float
    field_min_area: int
    attrs: dict


def _session_inputs(session: xr.Dataset, variables: list[str], bin_size_cm=None,
                    smooth_cm=None, min_speed_cm_s=None, min_shift_s=None,
                    chunk_units: int | None = None) -> _SessionInputs:
    """A session as :func:`analyse`'s inputs: bins as nodes; as activity, a session of spikes'
    counts per tracking sample held sparsely (``counts``; ``activity`` the cells' positions in
    them) or one dense (env, time, unit) copy of a session's rates, whose maps are formed
    ``chunk_units`` cells at a time."""
    bin_cm = SESSION_BIN_SIZE_CM if bin_size_cm is None else bin_size_cm
    bin_cm = check_positive_number(bin_cm, "bin_size_cm")
    speed = SESSION_MIN_SPEED_CM_S if min_speed_cm_s is None else min_speed_cm_s
    smooth_cm = SESSION_SMOOTH_CM if smooth_cm is None else smooth_cm
    shift_s = SESSION_MIN_SHIFT_S if min_shift_s is None else min_shift_s
    shift_s = check_positive_number(shift_s, "min_shift_s", allow_zero=True)
    node = session_node(session, bin_cm, speed)
    if not (node.values >= 0).any():
        raise AnalysisError(f"the session has no tracking sample at {speed:g} cm/s or faster "
                            "(lower min_speed_cm_s)")
    cells = {v: _cells_of(session, v) for v in variables}
    every = np.concatenate(list(cells.values()))
    ids = np.asarray(session[CELL_ID].values).astype(str)[every]
    bounds = np.cumsum([0] + [c.size for c in cells.values()])
    maps, gaps = {}, 0
    if session.attrs[CELLS_ATTR] == "spikes":
        counts, gaps = _sample_counts(session, every)
        activity = xr.DataArray(np.arange(every.size), dims=(UNIT_DIM,))  # positions in counts
        for v, lo, hi in zip(variables, bounds[:-1], bounds[1:], strict=True):
            maps[v] = session_rate_maps(session, v, bin_cm, smooth_cm, speed, node=node,
                                        session_checked=True,
                                        counts=counts.take(np.arange(lo, hi)))
    else:  # one copy of the selected rates; maps by chunks of cells (bounded temporaries)
        counts = None
        rate = session[RATE]
        values = np.asarray(rate.values, dtype=np.float64)[:, every]
        activity = xr.DataArray(values[None], dims=("env", "time", UNIT_DIM),
                                coords={"env": [0], UNIT_DIM: np.arange(every.size)},
                                attrs={"units": rate.attrs.get("units", "Hz")})
        step = every.size if chunk_units is None else int(chunk_units)
        for v, lo, hi in zip(variables, bounds[:-1], bounds[1:], strict=True):
            parts = []
            for a in range(lo, hi, max(step, 1)):
                act = activity.isel({UNIT_DIM: slice(a, min(a + step, hi))})
                act = act.assign_coords({UNIT_DIM: act[UNIT_DIM].values - lo})
                parts.append(session_rate_maps(session, v, bin_cm, smooth_cm, speed, act, node,
                                               session_checked=True))
            maps[v] = (parts[0] if len(parts) == 1 else
                       xr.concat(parts, UNIT_DIM, data_vars="minimal", coords="minimal",
                                 compat="override", join="override",
                                 combine_attrs="override"))
    dt = sample_interval(session)
    duration = session.sizes["time"] * dt
    fraction = shift_s / duration
    if fraction >= 0.5:
        raise AnalysisError(f"min_shift_s {shift_s:g} s must be under half the session's "
                            f"{duration:.6g} s")
    attrs = {k: session.attrs[k] for k in session.attrs
             if k not in (KIND_ATTR, CELLS_ATTR, ARENA_ATTR)}
    attrs = {f"session_{k}": v for k, v in attrs.items()}
    attrs.update(session_cells=session.attrs[CELLS_ATTR], spikes_in_tracking_gaps=gaps,
                 speed_filtered_fraction=float((node.values < 0).mean()))
    if ARENA_ATTR in session.attrs:
        attrs["session_arena"] = parse_arena(session.attrs[ARENA_ATTR], where="session")
    return _SessionInputs(node=node, activity=activity, counts=counts, maps=maps, cell_id=ids,
                          min_shift_s=float(shift_s), min_shift_fraction=fraction,
                          field_min_area=max(1, math.ceil(
                              SESSION_MIN_FIELD_AREA_CM2 / bin_cm**2 - 1e-9)),
                          attrs=attrs)


def _session_attrs(out: xr.Dataset, prep: _SessionInputs, first: xr.Dataset) -> None:
    """The attrs of a session's analysis that differ from a recording's."""
    dt = float(first.attrs["sample_interval_s"])
    for k in ("memory_masking", "map_resolution"):
        out.attrs.pop(k, None)
    out.attrs.update(prep.attrs)
    out.attrs.update(
        input_kind=SESSION_KIND,
        map_convention="rate maps indexed [row=y, col=x], row 0 at the smallest y; x, y in "
                       "cm (bin centres); spacing, wave_length, field sizes in bins of "
                       "map_bin_size_cm (spacing_cm, wave_length_cm in cm); angles in degrees "
                       "from +x towards +y; unvisited bins NaN",
        map_bin_size_cm=float(first.attrs["bin_size_cm"]),
        smooth_cm=float(first.attrs["smooth_cm"]),
        smoothing="BNT: spike map and time map smoothed by the same Gaussian (sigma smooth_cm, "
                  "truncated at 4 sigma, zero outside the arena and in unvisited bins), then "
                  "divided; unvisited bins NaN",
        min_speed_cm_s=float(first.attrs["min_speed_cm_s"]),
        sample_interval_s=dt,
        min_field_area_bins=prep.field_min_area,
        min_shift_s=prep.min_shift_s,
        per_node_scores="spatial_info, sparsity, selectivity use the per-bin rate weighted by "
                        "the occupancy in seconds (Skaggs; bits per spike for rates in Hz)",
        null_method="circular time shift of each cell's spike train (its spikes per tracking "
                    "sample) against the trajectory, by whole tracking samples, at least "
                    "min_shift_s; the same shifts for every cell; scores gridness_60, "
                    "plane_wave_share and spatial_info",
    )
    if first["rate_map"].attrs.get("units") == "Hz":  # spikes per second
        for k in ("spatial_info", "spatial_info_null_q"):
            out[k].attrs["units"] = "bits per spike"
    out["rate_map"].attrs.update(long_name="spikes per second in the bin (NaN = unvisited)",
                                 units=first["rate_map"].attrs.get("units", "Hz"))
    out["shuffle_shift"].attrs = {"long_name": "circular shift of the spike trains per "
                                  "shuffle (tracking samples of sample_interval_s)",
                                  "units": "samples"}


def _kernels(grid_method: str, min_field_area: int) -> tuple[tuple[Kernel, str, dict], ...]:
    """The map kernels of :func:`analyse`: (kernel, prefix of its attrs in the analysis'
    attrs, {declared output name: name in the analysis, None = not kept})."""
    return (
        (grid_kernel(grid_method), "grid_", {"nan_reason": "grid_nan_reason"}),
        (band_kernel(), "band_", {"nan_reason": "band_nan_reason"}),
        (place_fields_kernel(min_area=min_field_area, max_fields=ANALYSIS_MAX_FIELDS),
         "place_field_", {"field_labels": None}),
        (place_score_kernel(), "", {}),
        (WAVES, "", {}),
    )


#: Per-node scores of :func:`analyse` (node_rate weighted by node_occupancy) and their attrs.
_NODE_SCORES = {
    "spatial_info": {"long_name": "Skaggs spatial information per node (negative log terms "
                     "kept)", "units": "bits per unit activity"},
    "sparsity": {"long_name": "sparsity (sum p r)^2 / sum p r^2 per node", "units": "1"},
    "selectivity": {"long_name": "selectivity max / mean per node", "units": "1"},
}

#: Scores with circular-shift nulls in :func:`analyse`, in the order of its scorers, and
#: their units.
_NULL_SCORES = {"gridness_60": "1", "plane_wave_share": "1",
                "spatial_info": "bits per unit activity"}


@dataclass(frozen=True)
class _UnitBlock:
    """Everything :func:`analyse` computes per unit, for one chunk of units (one dask task).

    Called by ``xr.apply_ufunc`` with arrays (unit, env, ...): rate maps (.., y, x), node
    rates (.., world_node), activity (.., time) (with ``counts``, a session's spike counts
    held sparsely: (unit,) the units' positions in them), node occupancy (1, env,
    world_node), node (1, env, time), shifts (1, env, shuffle). The map scores are the
    public functions' kernels (:mod:`~hippo_rep.analysis.kernels`) on numpy. All outputs
    are packed into one float64 array (unit, packed) — one result per task, which matters
    on dask.distributed, where every result key costs a message — and unpacked by
    :meth:`unpack` (small ints are exact).
    """

    kernels: tuple[tuple[Kernel, str, dict], ...]
    grid_method: str
    quantiles: tuple[float, ...]
    node_map: np.ndarray
    n_nodes: int
    sigma: float
    pairs: np.ndarray
    keep_null: bool
    counts: SampleCounts | None = None

    def outputs(self) -> list[Output]:
        """Every output (dims after ``unit``), in order."""
        env = ("env",)
        out = [replace(o, name=names.get(o.name, o.name), dims=env + o.dims)
               for kernel, _, names in self.kernels for o in kernel.outputs
               if names.get(o.name, o.name)]
        out += [Output(k, env, attrs=a) for k, a in _NODE_SCORES.items()]
        for k, units in _NULL_SCORES.items():
            out += [Output(f"{k}_null_q", ("env", "quantile"), attrs={
                        "long_name": f"quantiles of the {k} shuffle null", "units": units}),
                    Output(f"{k}_percentile", env, attrs={
                        "long_name": f"percent of finite shuffle {k} scores below the "
                                     "observed one", "units": "percent"})]
        if self.keep_null:
            out += [Output(f"{k}_null", ("env", SHUFFLE_DIM)) for k in _NULL_SCORES]
        out += [Output("remap_corr", (PAIR_DIM,), attrs={
            "long_name": "per-unit Pearson r of node rates between two environments",
            "units": "1", "min_nodes": REMAP_MIN_NODES})]
        return out

    def __call__(self, maps, rates, act, occ, node, shifts) -> np.ndarray:
        with threadpool_limits(limits=BLAS_THREADS, user_api="blas"), \
                np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return self._run(maps, rates, act, occ, node, shifts)

    def _run(self, maps, rates, act, occ, node, shifts) -> np.ndarray:
        # arrays deserialised by dask.distributed may be unaligned (numpy's slow paths)
        maps, rates, act, occ, node, shifts = (
            np.require(a, None, ["C_CONTIGUOUS", "ALIGNED"])
            for a in (maps, rates, act, occ, node, shifts)
        )
        # the unit-less inputs come as (env, ...) or (1, env, ...) depending on the path
        occ, node, shifts = (a.reshape(a.shape[-2:]) for a in (occ, node, shifts))
        maps_eu = np.swapaxes(maps, 0, 1)  # (env, unit, y, x)
        res: dict[str, np.ndarray] = {}
        for kernel, _, names in self.kernels:
            for k, a in kernel.array(maps_eu).items():
                res[names.get(k, k)] = a
        rates_eu = np.swapaxes(rates, 0, 1)
        res.update(zip(_NODE_SCORES, _node_scores(rates_eu, occ[:, None, :]), strict=True))
        scorers = [functools.partial(score_gridness_60, method=self.grid_method),
                   score_plane_wave_share, score_spatial_info]
        bar = _BAR  # set by analyse(progress=True) in this process
        if bar is not None:  # one tick per block of units, shuffles and score
            scorers = [_ticking(fn, bar) for fn in scorers]
        # a session's spikes: ``act`` holds the units' positions in ``self.counts``
        act = (np.swapaxes(act, 0, 1) if self.counts is None
               else self.counts.take(act.reshape(-1)))
        nulls = _null_core(act, node, shifts, node_map=self.node_map,
                           n_nodes=self.n_nodes, sigma=self.sigma, scorers=scorers,
                           names=list(_NULL_SCORES))
        qs = np.asarray(self.quantiles)
        for k, null in zip(_NULL_SCORES, nulls, strict=True):
            res[f"{k}_null_q"], res[f"{k}_percentile"] = _summary_core(res[k], null, qs)
            res[f"{k}_null"] = null
        res["remap_corr"] = _unit_corr_core(rates, self.pairs, REMAP_MIN_NODES)  # (unit, P)
        n_unit = maps.shape[0]
        parts = []
        for o in self.outputs():
            a = res[o.name]
            if o.dims[0] == "env":  # computed as (env, unit, ...): unit first
                a = np.swapaxes(a, 0, 1)
            parts.append(np.asarray(a, dtype=np.float64).reshape(n_unit, -1))
        return np.concatenate(parts, axis=1)

    def packed_size(self, sizes: dict[str, int]) -> int:
        """Length of the packed output per unit."""
        return sum(int(np.prod([sizes[d] for d in o.dims])) for o in self.outputs())

    def unpack(self, packed: xr.DataArray, sizes: dict[str, int]) -> xr.Dataset:
        """The outputs as variables (unit, core dims...) with their dtypes and attrs."""
        values = np.asarray(packed.transpose(UNIT_DIM, _PACKED).values)
        out, start = {}, 0
        for o in self.outputs():
            shape = tuple(sizes[d] for d in o.dims)
            n = int(np.prod(shape))
            block = values[:, start : start + n].reshape((values.shape[0],) + shape)
            block = (block.astype(o.dtype) if o.labels is None
                     else np.asarray(o.labels)[block.astype(np.int64)])
            out[o.name] = ((UNIT_DIM, *o.dims), block, dict(o.attrs))
            start += n
        return xr.Dataset(out, coords={UNIT_DIM: packed[UNIT_DIM].values})


def _node_scores(rates: np.ndarray, occ: np.ndarray) -> tuple[np.ndarray, ...]:
    """Spatial information, sparsity, selectivity of (..., node) rates (numpy, inside
    :meth:`_UnitBlock.__call__`, which silences their warnings)."""
    dims = [f"d{i}" for i in range(rates.ndim - 1)] + [NODE_DIM]
    r = xr.DataArray(rates, dims=dims)
    o = xr.DataArray(np.broadcast_to(occ, rates.shape), dims=dims)
    return tuple(np.asarray(f(r, o, dims=(NODE_DIM,)).values, dtype=np.float64)
                 for f in (spatial_information, sparsity, selectivity))


def _per_unit_and_populations(spec: _UnitBlock, inputs: list, sizes: dict, lazy: bool,
                              scheduler: str | None, pop_inputs: dict, steps: int
                              ) -> tuple[xr.Dataset, dict]:
    """The packed per-unit outputs (``spec`` over ``inputs``, one task per chunk of units)
    and the population analyses of ``pop_inputs`` (population -> arguments), computed."""
    act_dims = ["env", "time"] if spec.counts is None else []  # else: positions in counts
    packed = xr.apply_ufunc(
        spec,
        *inputs,
        input_core_dims=[["env", "y", "x"], ["env", NODE_DIM], act_dims,
                         ["env", NODE_DIM], ["env", "time"], ["env", SHUFFLE_DIM]],
        output_core_dims=[[_PACKED]],
        dask="parallelized",
        output_dtypes=[np.float64],
        dask_gufunc_kwargs={"output_sizes": {_PACKED: spec.packed_size(sizes)}},
    )
    out = xr.Dataset({_PACKED_VAR: packed})
    if lazy:
        import dask

        task = dask.delayed(population_one, pure=True)
    else:
        task = population_one
    pop_tasks = {v: task(*args, max_steps=steps) for v, args in pop_inputs.items()}
    if lazy:
        out, pop_tasks = _compute(out, pop_tasks, scheduler)
    return out, pop_tasks


#: The bar of the :func:`analyse` running with ``progress=True`` in this process (None when
#: none): :meth:`_UnitBlock._run` advances it as it scores shuffled maps. A module global,
#: not a context variable, so that the threads of dask's threaded scheduler see it.
_BAR = None


class _NoBar:
    """What :func:`_progress_bar` yields when no bar is shown."""

    total = n = 0

    def update(self, n: float = 1) -> None:
        pass


@contextlib.contextmanager
def _progress_bar(enabled: bool, total: int):
    """A tqdm bar of ``total`` shuffled-map scores, as :data:`_BAR` while the block runs (or
    a bar that shows nothing)."""
    global _BAR
    if not enabled:
        yield _NoBar()
        return
    from tqdm.auto import tqdm  # only when a bar is shown

    bar = tqdm(total=total, desc="analyse: shuffled maps scored", unit="score",
               unit_scale=True, dynamic_ncols=True)
    _BAR = bar
    try:
        yield bar
    finally:
        _BAR = None
        bar.close()


def _ticking(scorer, bar):
    """``scorer`` advancing ``bar`` by the number of shuffled maps it scored (units x
    shuffles of the block it is given)."""

    @functools.wraps(scorer)
    def run(ds: xr.Dataset):
        res = scorer(ds)
        bar.update(ds.sizes[UNIT_DIM] * ds.sizes.get(SHUFFLE_DIM, 1))
        return res

    return run


def _compute(ds: xr.Dataset, tasks: dict, scheduler: str | None) -> tuple[xr.Dataset, dict]:
    """Compute the dask arrays of ``ds`` and the delayed ``tasks`` in one graph.

    (``dask.compute(ds)`` on a Dataset whose variables share graph layers fails with
    "Missing dependency" in dask 2026.8; computing the variables' arrays does not.)
    """
    import dask

    names = [k for k in ds.data_vars if dask.is_dask_collection(ds[k].data)]
    kw = {} if scheduler is None else {"scheduler": scheduler}
    with warnings.catch_warnings():
        # distributed: the activity is part of the graph (it is sent once to the scheduler)
        warnings.filterwarnings("ignore", message="Sending large graph")
        arrays, tasks = dask.compute([ds[k].data for k in names], tasks, **kw)
    ds = ds.copy()
    for k, a in zip(names, arrays, strict=True):
        ds[k] = ds[k].copy(data=a)
    return ds, tasks


def _set_attrs(out: xr.Dataset, recording: xr.Dataset, kernels: tuple, cls: xr.Dataset,
               remap: xr.Dataset, pop: xr.Dataset | None, shifts: xr.DataArray,
               p: dict) -> None:
    out["shuffle_shift"].attrs = {"long_name": "circular shift of the activity per shuffle",
                          "units": "steps"}
    out["rate_map"].attrs = {"long_name": "mean activity per bin (NaN = unvisited / no node);"
                             " memory neurons only after their memory was written",
                             "units": "activity units", "smooth_sigma_bins": p["sigma"]}
    out["variable"].attrs = {"long_name": "population (recording variable) of each unit"}
    out["unit_index"].attrs = {"long_name": "index of the unit within its population"}
    attrs: dict[str, object] = {
        KIND_ATTR: ANALYSIS_KIND,
        "package_version": __version__,
        "seed": p["seed"],
        "seed_use": "numpy SeedSequence(seed).spawn(2): shifts, TEM-test permutations",
        "variables": ",".join(p["variables"]),
        "map_convention": "rate maps indexed [row=y, col=x], row 0 at the smallest y; "
                          "lengths in bins (resolution node spacings per bin); angles in "
                          "degrees from +x towards +y; unvisited bins NaN",
        "map_resolution": p["resolution"],
        "smooth_sigma_bins": p["sigma"],
        "memory_masking": "memory neurons count only steps after memory_time (NaN before)",
        "per_node_scores": "spatial_info, sparsity, selectivity use node_rate weighted by "
                           "node_occupancy (textbook Skaggs form, negative log terms kept; "
                           "NaN for units with negative activity)",
        "n_shuffles": p["shuffles"],
        "min_shift_fraction": float(p["min_shift_fraction"]),
        "min_shift_steps": int(shifts.values.min()),
        "null_method": "circular time shift of each environment's activity against its "
                       "trajectory (same shift for all units of an environment); scores "
                       "gridness_60, plane_wave_share and spatial_info",
        "dask_chunk_units": -1 if p["chunk_units"] is None else int(p["chunk_units"]),
    }
    for kernel, prefix, _ in kernels:
        attrs.update(_prefixed(kernel.attrs, prefix))
    attrs.update(_prefixed(cls.attrs, "classify_"))
    for k in cls.data_vars:
        attrs[f"classify_rule_{k}"] = cls[k].attrs.get("long_name", "")
    attrs.update(_prefixed(remap.attrs, "remap_"))
    if pop is not None:
        attrs.update(pop.attrs)
    for k in PROVENANCE_ATTRS:
        if k in recording.attrs:
            attrs[k] = recording.attrs[k]
    for k in ("seed", "package_version"):
        if k in recording.attrs:
            attrs[f"recording_{k}"] = recording.attrs[k]
    out.attrs = attrs


# --------------------------------------------------------------------------------------------
# writing and reading
# --------------------------------------------------------------------------------------------


def _clean_attr(v: object) -> object:
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if v is None:
        return ""
    if isinstance(v, dict):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        arr = np.asarray(v)
        if arr.dtype.kind in "biuf" and arr.ndim == 1:
            return arr.astype(np.float64 if arr.dtype.kind == "f" else np.int64)
        return ", ".join(map(str, v))
    if isinstance(v, np.ndarray) and v.dtype.kind == "b":
        return v.astype(np.int8)
    return v


def _storable(ds: xr.Dataset) -> xr.Dataset:
    """A copy whose attrs (dataset, variables, coords) netCDF and zarr can store."""
    ds = ds.copy()
    ds.attrs = {k: _clean_attr(v) for k, v in ds.attrs.items()}
    for name in ds.variables:
        ds[name].attrs = {k: _clean_attr(v) for k, v in ds[name].attrs.items()}
    return ds


def _check_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise AnalysisError(f"analysis output {str(path)!r} must end in .nc or .zarr")
    return suffix


def check_output(path: str | os.PathLike, overwrite: bool = False) -> Path:
    """Refuse an output path before any work: a wrong suffix, or an existing output.

    Raises
    ------
    AnalysisError
        If ``path`` does not end in ``.nc`` or ``.zarr``.
    FileExistsError
        If ``path`` exists and ``overwrite`` is False.
    """
    path = Path(path)
    _check_suffix(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{str(path)!r} exists; pass --overwrite to replace it")
    return path


def write_analysis(ds: xr.Dataset, path: str | os.PathLike, overwrite: bool = False) -> Path:
    """Write an analysis dataset atomically to ``.nc`` (netCDF4) or ``.zarr``.

    The data are written to a temporary sibling (``.<name>.<random>.tmp``) that is renamed
    into place only when complete, so a failed write never leaves a partial file at
    ``path``.

    Parameters
    ----------
    ds : xarray.Dataset
        The analysis (computed, not lazy).
    path : str or path-like
        Output path ending in ``.nc`` or ``.zarr``.
    overwrite : bool
        Replace an existing output.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    FileExistsError
        If ``path`` exists and ``overwrite`` is False.
    AnalysisError
        For another suffix.
    """
    path = check_output(path, overwrite)
    data = _storable(ds)
    if path.suffix.lower() == ".nc":
        # lossless: rate maps and node rates are most of the file and gzip to about half
        encoding = {k: {"compression": "gzip", "compression_opts": NETCDF_COMPLEVEL}
                    for k, v in data.data_vars.items() if v.ndim and v.dtype.kind in "fiub"}
        atomic_write(path, lambda tmp: data.to_netcdf(tmp, engine="h5netcdf",
                                                      encoding=encoding))
        return path
    for k in data.variables:  # variable-length strings: zarr v3 has no spec for fixed-width
        if data[k].dtype.kind in "UT":
            data[k] = data[k].astype(object)
    data.attrs[CHUNKS_COMPLETE_ATTR] = 1  # every chunk written: see open_analysis

    def write(tmp: Path) -> None:
        with warnings.catch_warnings():
            # zarr v3: "consolidated metadata is not part of the specification" notice
            warnings.simplefilter("ignore", UserWarning)
            data.to_zarr(tmp, mode="w", consolidated=True, write_empty_chunks=True)

    atomic_folder(path, write)
    return path


def open_analysis(path: str | os.PathLike) -> xr.Dataset:
    """Open an analysis dataset written by :func:`write_analysis` (loaded into memory) and
    check it (:func:`validate_analysis`).

    Raises
    ------
    FileNotFoundError
        A missing path.
    AnalysisError
        Naming the file: not netCDF/zarr, unreadable or damaged (a missing, empty or corrupt
        zarr chunk names its variable), or not an analysis dataset.
    """
    path = Path(path)
    suffix = _check_suffix(path)
    if not path.exists():
        raise FileNotFoundError(f"analysis {str(path)!r} not found")
    if suffix == ".nc" and not path.is_file():
        raise AnalysisError(f"analysis {str(path)!r} is not a file")
    if suffix == ".zarr" and not path.is_dir():
        raise AnalysisError(f"analysis {str(path)!r} is not a zarr store (a folder)")
    try:
        if suffix == ".nc":
            opened = xr.open_dataset(path, engine="h5netcdf")
        else:
            check_chunks(path, AnalysisError, "analysis")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                opened = xr.open_zarr(path)
    except AnalysisError:
        raise
    except ImportError as err:
        raise AnalysisError(missing_reader(path, err)) from None
    except Exception as err:  # h5py/zarr raise many types for damaged files
        raise AnalysisError(f"analysis {str(path)!r} is not a readable netCDF file or zarr "
                            f"store ({type(err).__name__})") from None
    with opened as ds:
        ds = load_checked(ds, path, AnalysisError, "analysis")
    ds.attrs.pop(CHUNKS_COMPLETE_ATTR, None)
    for k in list(ds.variables):
        if ds[k].dtype.kind in "OT":  # variable-length strings back to numpy str
            ds[k] = ds[k].copy(data=np.array(ds[k].values.tolist(), dtype=str))
    validate_analysis(ds, path)
    return ds

