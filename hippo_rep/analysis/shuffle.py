"""Significance by shuffling: circular time shifts of activity against the trajectory.

For every environment and shuffle the whole activity time series of a unit is rotated in
time by a random shift ``s`` (the same shift for every unit of that environment, so the
population's own structure is kept) while the trajectory stays: the shuffled activity at
step ``t`` is ``a[(t - s) mod T]``. Shifts are drawn uniformly from
``[min_shift, T - min_shift]`` with ``min_shift = ceil(min_shift_fraction * T)``
(:data:`SHUFFLE_MIN_SHIFT_FRACTION` = 10% of the walk), so that no shuffle is close to the
real alignment. The shuffled rate maps of a block of shifts are accumulated at once (a
sparse one-hot matrix of (shift, node) against time, multiplied by the activity; for a
session's spike counts, a bincount of the shifted sample indices of its spikes), then scored
in blocks of bounded size; a unit's null distribution is its score over the shuffles, per
environment.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import xarray as xr
from scipy import sparse
from threadpoolctl import threadpool_limits

from hippo_rep.defaults import BLAS_THREADS, N_SHUFFLES
from hippo_rep.schema import G, require_recording

from ._checks import MAP_DIMS, check_maps
from .arena import RECTANGLE
from .border import BORDER_MIN_AREA, border_kernel
from .core import null_summary_arrays, smooth_masked
from .fields import place_score
from .gridscore import grid_kernel
from .methods import DEFAULT_GRID_METHOD, grid_method
from .planewaves import WAVES
from .ratemaps import SMOOTH_TRUNCATE
from .recordings import (
    NODE_DIM,
    UNIT_DIM,
    AnalysisError,
    node_index,
    rate_maps,
    unit_activity,
)
from .sample_counts import SampleCounts
from .spatial import spatial_information

#: Shifts are at least this fraction of the walk (and at most 1 minus it).
SHUFFLE_MIN_SHIFT_FRACTION = 0.1

#: Quantiles of each null distribution that are reported (dim ``quantile``).
NULL_QUANTILES: tuple[float, ...] = (0.95, 0.99)

#: Bins of the shuffled maps scored at once (units x shifts x map bins): bounds the scorers'
#: temporary memory, about 0.6 kB per map bin (the plane-wave share's and gridness' peaks,
#: measured on 40 x 40 maps), so ~80 MB here (81 maps of 40 x 40; fewer would add per-call
#: overhead to the ~7 ms that scoring a map takes).
NULL_BLOCK_BINS = 2**17

#: Nonzeros of the one-hot (shift, node) x time matrix of dense activity built at once (~40
#: bytes each while it is built, ~170 MB): a long session's shifts are taken in blocks.
NULL_BLOCK_ONEHOT = 2**22

#: The shuffle dim.
SHUFFLE_DIM = "shuffle"

ScoreFn = Callable[[xr.Dataset], "xr.DataArray | xr.Dataset"]


# --------------------------------------------------------------------------------------------
# built-in scores (take a rate-map Dataset as returned by rate_maps)
# --------------------------------------------------------------------------------------------

def score_gridness_60(maps: xr.Dataset, method: str = DEFAULT_GRID_METHOD) -> xr.DataArray:
    """Gridness-60 of ``maps.rate_map`` (``grid_scores(rate_map, method).gridness_60``).

    Parameters
    ----------
    maps : xarray.Dataset
        With ``rate_map`` (..., y, x), as returned by :func:`rate_maps`.
    method : str
        Score family, one of :data:`~hippo_rep.analysis.methods.GRID_METHODS`; its faster
        gridness-60-only kernel when it has one ("deepmind").

    Returns
    -------
    xarray.DataArray, dims (...)
        Named ``gridness_60``, unitless; NaN for all-NaN or constant maps and for maps smaller
        than :data:`~hippo_rep.analysis.core.MIN_MAP_SIZE` bins along y or x.
    """
    spec = grid_method(method)
    rm = check_maps(maps["rate_map"], "rate_map")
    out = (spec.scorer().gridness_60 or grid_kernel(spec.name)).apply(rm)["gridness_60"]
    out.attrs = {"long_name": f"gridness at 60 degrees ({spec.name})", "units": "1"}
    return out


def score_spatial_info(maps: xr.Dataset) -> xr.DataArray:
    """Skaggs spatial information per node (``node_rate`` weighted by ``node_occupancy``).

    Per node rather than per bin, so that hexagonal worlds (several bins per node) weight
    every node once. Bits per unit activity; NaN for silent maps or negative activity.
    """
    return spatial_information(maps["node_rate"], maps["node_occupancy"], dims=(NODE_DIM,))


def score_place_score(maps: xr.Dataset) -> xr.DataArray:
    """TEM-t's place score of ``maps.rate_map`` (fraction of mass in the largest field)."""
    return place_score(maps["rate_map"])


def score_plane_wave_share(maps: xr.Dataset) -> xr.DataArray:
    """Variance share of ``maps.rate_map`` explained by its counted plane waves
    (``plane_waves(rate_map).plane_wave_share``; NaN for constant, all-NaN or tiny maps)."""
    return WAVES.apply(check_maps(maps["rate_map"], "rate_map"))["plane_wave_share"]


def score_border_score(maps: xr.Dataset, min_area: int = BORDER_MIN_AREA,
                       arena_shape: str = RECTANGLE) -> xr.DataArray:
    """Border score of ``maps.rate_map`` (``border_score(rate_map, min_area=min_area)
    .border_score``, Solstad et al. 2008).

    Parameters
    ----------
    maps : xarray.Dataset
        With ``rate_map`` (..., y, x), as returned by :func:`rate_maps`.
    min_area : int
        Fewest bins of a field (:data:`~hippo_rep.analysis.border.BORDER_MIN_AREA`;
        :func:`~hippo_rep.analysis.analyse` passes its own field minimum, as for the
        observed score).
    arena_shape : {"rectangle", "circle"}
        The arena's shape (a circle: NaN, :func:`~hippo_rep.analysis.border_score`).

    Returns
    -------
    xarray.DataArray, dims (...)
        Named ``border_score``, unitless, in [-1, 1]; NaN for a map without a field and on a
        circular arena.
    """
    rm = check_maps(maps["rate_map"], "rate_map")
    return border_kernel(min_area=min_area, arena_shape=arena_shape).apply(rm)["border_score"]


#: Built-in scores by name (each takes a rate-map Dataset, returns a DataArray).
SCORES: dict[str, ScoreFn] = {
    "gridness_60": score_gridness_60,
    "plane_wave_share": score_plane_wave_share,
    "spatial_info": score_spatial_info,
    "place_score": score_place_score,
    "border_score": score_border_score,
}


def _resolve_scorers(score_fn: object) -> list[ScoreFn]:
    items = [score_fn] if isinstance(score_fn, str) or callable(score_fn) else score_fn
    try:
        items = list(items)  # type: ignore[arg-type]
    except TypeError:
        raise AnalysisError(
            f"score_fn must be a score name {tuple(SCORES)}, a callable or a list of them; "
            f"got {score_fn!r}"
        ) from None
    if not items:
        raise AnalysisError("score_fn names no score")
    out = []
    for item in items:
        if isinstance(item, str):
            if item not in SCORES:
                raise AnalysisError(f"unknown score {item!r}; built-in scores: {tuple(SCORES)}")
            out.append(SCORES[item])
        elif callable(item):
            out.append(item)
        else:
            raise AnalysisError(f"score_fn entries must be names or callables; got {item!r}")
    return out


def _apply_scorers(scorers: Sequence[ScoreFn], ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """Run every scorer on ``ds``; returns name -> DataArray (map dims reduced)."""
    out: dict[str, xr.DataArray] = {}
    for i, fn in enumerate(scorers):
        res = fn(ds)
        if isinstance(res, xr.DataArray):
            items = {res.name if res.name is not None else f"score{i}": res}
        elif isinstance(res, xr.Dataset):
            items = dict(res.data_vars)
        else:
            raise AnalysisError(
                f"score_fn {fn!r} must return an xarray DataArray or Dataset; "
                f"got {type(res).__name__}"
            )
        for name, da in items.items():
            name = str(name)
            if name in out:
                raise AnalysisError(f"two scores are named {name!r}")
            out[name] = da
    return out


# --------------------------------------------------------------------------------------------
# shifts and shuffled maps
# --------------------------------------------------------------------------------------------


def as_rng(rng: object) -> tuple[np.random.Generator, object]:
    """``(Generator, seed attr)`` from an int seed or a Generator."""
    if isinstance(rng, np.random.Generator):
        return rng, "caller's numpy Generator"
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng)), int(rng)
    raise AnalysisError(f"rng must be an int seed or a numpy Generator; got {rng!r}")


def check_n_shuffles(n: object, name: str = "n") -> int:
    """Validate a number of shuffles (an int >= 1)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise AnalysisError(f"{name} (number of shuffles) must be an int >= 1; got {n!r}")
    return int(n)


def circular_shifts(
    n_time: int,
    n_env: int,
    n: int,
    rng: np.random.Generator,
    min_shift_fraction: float = SHUFFLE_MIN_SHIFT_FRACTION,
) -> np.ndarray:
    """Random circular shifts, ``(n_env, n)`` int, uniform in [min_shift, T - min_shift].

    ``min_shift = max(1, ceil(min_shift_fraction * T))``. Drawn as one ``(n, n_env)`` array
    of ``rng.integers`` (shuffle-major), then transposed.

    Raises
    ------
    AnalysisError
        If ``min_shift_fraction`` is outside [0, 0.5) or the walk is too short (T < 2).
    """
    n = check_n_shuffles(n)
    if not 0 <= min_shift_fraction < 0.5:
        raise AnalysisError(
            f"min_shift_fraction must be in [0, 0.5); got {min_shift_fraction!r}"
        )
    lo = max(1, math.ceil(min_shift_fraction * n_time))
    hi = n_time - lo
    if hi < lo:
        raise AnalysisError(f"a walk of {n_time} steps is too short to shuffle")
    return rng.integers(lo, hi + 1, size=(n, n_env)).T.astype(np.int64)


def _shifted_sums_dense(
    act: np.ndarray, onehot: sparse.csr_matrix, n_b: int, n_nodes: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Sums and counts of finite activity per (unit, shuffle, node) of dense ``act`` (u, T)
    by the one-hot (shuffle, node) x time matrix of a block of ``n_b`` shifts; counts None
    when every sample is finite (then they are the occupancy)."""
    a = act.T  # (T, u)
    fin = np.isfinite(a)
    sums = np.asarray(onehot @ np.where(fin, a, 0.0)).reshape(n_b, n_nodes, -1)
    counts = (None if fin.all()
              else np.asarray(onehot @ fin.astype(np.float64)).reshape(sums.shape))
    return (sums.transpose(2, 0, 1),
            None if counts is None else counts.transpose(2, 0, 1))


def _onehot(nodes_e: np.ndarray, sh: np.ndarray, n_nodes: int) -> sparse.csr_matrix:
    """(shift, node) x time one-hot matrix: row ``j * n_nodes + k`` marks the samples ``t``
    whose activity lands in node ``k`` under shift ``sh[j]`` (node of ``(t + sh[j]) mod
    T``)."""
    n_t = nodes_e.size
    t = np.arange(n_t)
    nd = nodes_e[(t[None, :] + sh[:, None]) % n_t]  # (S, T): node under a[t]
    ok = nd >= 0
    rows = (np.arange(sh.size)[:, None] * n_nodes + nd)[ok]
    cols = np.broadcast_to(t, nd.shape)[ok]
    return sparse.csr_matrix((np.ones(rows.size), (rows, cols)),
                             shape=(sh.size * n_nodes, n_t))


def null_score_arrays(
    act: np.ndarray | SampleCounts,
    node: np.ndarray,
    shifts: np.ndarray,
    ref: np.ndarray | None = None,
    *,
    node_map: np.ndarray,
    n_nodes: int,
    sigma: float,
    scorers: Sequence[ScoreFn],
    names: Sequence[str],
) -> tuple[np.ndarray, ...]:
    """Scores of circularly shifted activity: the numpy engine of :func:`null_scores` (and of
    :func:`~hippo_rep.analysis.analyse`'s nulls).

    Memory is bounded whatever U, S and T: shifts are taken in blocks whose one-hot matrix
    has at most :data:`NULL_BLOCK_ONEHOT` nonzeros (dense activity), and maps are scored in
    blocks of at most :data:`NULL_BLOCK_BINS` map bins (units x shifts x bins). The numbers
    do not depend on the blocks: every map is formed and scored on its own.

    Parameters
    ----------
    act : numpy.ndarray, shape (E, U, T), or SampleCounts
        Activity per unit and time step (NaN = missing sample), or the
        :class:`~hippo_rep.analysis.sample_counts.SampleCounts` of U units (one environment;
        never densified: each shifted map is a bincount of shifted sample indices).
    node : numpy.ndarray of int, shape (E, T) or (E, 1, T)
        Node per time step (negative = skip).
    shifts : numpy.ndarray of int, shape (E, S) or (E, 1, S)
        Circular shifts, in time steps.
    ref : numpy.ndarray, shape (E or 1, U, ny, nx) or (U, ny, nx), optional
        Each unit's reference map, given to the scorers as ``reference_map`` (unit, y, x).
    node_map : numpy.ndarray of int, shape (ny, nx)
        Node shown by each bin (-1 = none).
    n_nodes : int
        Number of world nodes.
    sigma : float
        Occupancy-weighted smoothing of the shuffled maps, in bins (0 = none).
    scorers : sequence of callables
        Score functions of a rate-map Dataset (``rate_map`` (unit, shuffle, y, x), ...).
    names : sequence of str
        The scores to keep.

    Returns
    -------
    tuple of numpy.ndarray, shape (E, U, S)
        One float array per name, in the scores' units.
    """
    counted = isinstance(act, SampleCounts)
    if counted:
        n_e, n_u, n_t = 1, act.n_units, act.n_time
    else:  # arrays deserialised by dask.distributed may be unaligned: numpy's slow paths
        act = np.require(act, np.float64, ["C_CONTIGUOUS", "ALIGNED"])
        n_e, n_u, n_t = act.shape
    node = node.reshape(node.shape[0], -1)
    shifts = shifts.reshape(shifts.shape[0], -1)
    n_s = shifts.shape[1]
    outs = {k: np.full((n_e, n_u, n_s), np.nan) for k in names}
    has = node_map >= 0
    safe = np.where(has, node_map, 0)
    block_maps = max(1, NULL_BLOCK_BINS // max(node_map.size, 1))
    s_block = max(1, min(n_s, block_maps))
    if not counted:
        s_block = max(1, min(s_block, NULL_BLOCK_ONEHOT // max(n_t, 1)))
    u_block = max(1, block_maps // s_block)
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for e in range(n_e):
            nodes_e = node[e] if node.shape[0] == n_e else node[0]
            sh_e = shifts[e] if shifts.shape[0] == n_e else shifts[0]
            occ_node = np.bincount(nodes_e[nodes_e >= 0], minlength=n_nodes).astype(np.float64)
            occ_map = np.where(has, occ_node[safe], 0.0)
            for s0 in range(0, n_s, s_block):
                sh = sh_e[s0 : s0 + s_block]
                onehot = None if counted else _onehot(nodes_e, sh, n_nodes)
                for u0 in range(0, n_u, u_block):
                    u1 = min(u0 + u_block, n_u)
                    if counted:
                        part = act.take(np.arange(u0, u1))
                        sums = np.stack([part.node_sums(nodes_e, n_nodes, int(s)) for s in sh],
                                        axis=1)  # (u, S, K)
                        counts = None  # no missing samples: the occupancy
                    else:
                        sums, counts = _shifted_sums_dense(act[e, u0:u1], onehot, sh.size,
                                                           n_nodes)
                    if counts is None:
                        counts = np.broadcast_to(occ_node, sums.shape)
                    # C order: reductions over nodes then add in the same order whatever
                    # the block's shape, so the scores do not depend on the blocks
                    node_rate = np.ascontiguousarray(np.where(
                        counts > 0, sums / np.where(counts > 0, counts, 1), np.nan))  # (u, S, K)
                    maps = np.where(has, node_rate[..., safe], np.nan)  # (u, S, ny, nx)
                    if sigma > 0:
                        maps = smooth_masked(maps, occ_map, sigma, SMOOTH_TRUNCATE)
                    ds = xr.Dataset(
                        {
                            "rate_map": ((UNIT_DIM, SHUFFLE_DIM, *MAP_DIMS), maps),
                            "occupancy": (MAP_DIMS, occ_map),
                            "node_rate": ((UNIT_DIM, SHUFFLE_DIM, NODE_DIM), node_rate),
                            "node_occupancy": ((NODE_DIM,), occ_node),
                        }
                    )
                    if ref is not None:  # (U, ny, nx) when the reference has no env dim
                        r = ref if ref.ndim == 3 else ref[e] if ref.shape[0] == n_e else ref[0]
                        ds["reference_map"] = ((UNIT_DIM, *MAP_DIMS), r[u0:u1])
                    res = _apply_scorers(scorers, ds)
                    for k in names:
                        da = res[k]
                        extra = set(da.dims) - {UNIT_DIM, SHUFFLE_DIM}
                        if extra:
                            raise AnalysisError(
                                f"score {k!r} kept dims {sorted(map(str, extra))}; a score "
                                "must reduce the map dims"
                            )
                        da = da.broadcast_like(ds["rate_map"].isel(y=0, x=0, drop=True))
                        outs[k][e, u0:u1, s0 : s0 + sh.size] = da.transpose(
                            UNIT_DIM, SHUFFLE_DIM).values
    return tuple(outs[k] for k in names)


def null_scores(
    activity: xr.DataArray,
    node: xr.DataArray,
    shifts: xr.DataArray,
    node_map: np.ndarray,
    n_nodes: int,
    scorers: Sequence[ScoreFn],
    names: Sequence[str],
    smooth_sigma: float = 0.0,
    reference: xr.DataArray | None = None,
) -> dict[str, xr.DataArray]:
    """Null scores of every unit for the given shifts (lazy when ``activity`` is dask-backed).

    Parameters
    ----------
    activity : xarray.DataArray, dims (env, time, unit)
        Activity (NaN = missing sample); chunk it along ``unit`` to spread units over dask
        workers (``env`` and ``time`` must each be one chunk).
    node : xarray.DataArray, dims (env, time)
        Node index per step (negative = skip).
    shifts : xarray.DataArray, dims (env, shuffle)
        Circular shift per environment and shuffle, in steps.
    node_map : numpy.ndarray (ny, nx)
        Node shown by each bin (-1 = none), as returned by :func:`rate_maps`.
    n_nodes : int
        Number of world nodes.
    scorers, names
        Score functions and the names of the scores they return.
    smooth_sigma : float
        Occupancy-weighted smoothing in bins, as in :func:`rate_maps`.
    reference : xarray.DataArray, dims ([env,] unit, y, x), optional
        A reference map per unit (the same map grid as ``node_map``), handed to the scorers
        beside each shuffled map as ``reference_map`` (unit, y, x), for scores that compare
        a unit's shuffled map with another map of the same unit (e.g. its map in another
        session). Chunked along ``unit`` like ``activity`` when that is dask-backed.

    Returns
    -------
    dict of name -> xarray.DataArray, dims (env, unit, shuffle)
    """
    one = len(names) == 1  # apply_ufunc wants a bare array for one output
    refs = [] if reference is None else [reference]
    outs = xr.apply_ufunc(
        (lambda *a, **kw: null_score_arrays(*a, **kw)[0]) if one else null_score_arrays,
        activity,
        node,
        shifts,
        *refs,
        input_core_dims=[["time"], ["time"], [SHUFFLE_DIM]] + [list(MAP_DIMS)] * len(refs),
        output_core_dims=[[SHUFFLE_DIM]] * len(names),
        kwargs={
            "node_map": np.asarray(node_map),
            "n_nodes": int(n_nodes),
            "sigma": float(smooth_sigma),
            "scorers": list(scorers),
            "names": list(names),
        },
        dask="parallelized",
        output_dtypes=[np.float64] * len(names),
        dask_gufunc_kwargs={"output_sizes": {SHUFFLE_DIM: shifts.sizes[SHUFFLE_DIM]}},
    )
    if one:
        outs = (outs,)
    return {
        k: v.transpose("env", UNIT_DIM, SHUFFLE_DIM).rename(f"{k}_null")
        for k, v in zip(names, outs, strict=True)
    }


def null_summary(
    observed: xr.DataArray, null: xr.DataArray, quantiles: Sequence[float] = NULL_QUANTILES
) -> tuple[xr.DataArray, xr.DataArray]:
    """Quantiles of a null distribution and the observed score's percentile within it.

    Parameters
    ----------
    observed : xarray.DataArray, dims (...)
        Observed scores.
    null : xarray.DataArray, dims (..., shuffle)
        Null scores (NaN shuffles are ignored).
    quantiles : sequence of float
        Quantiles in [0, 1] (``numpy.nanquantile``, linear interpolation).

    Returns
    -------
    quantile : xarray.DataArray, dims (quantile, ...)
    percentile : xarray.DataArray, dims (...)
        100 x the fraction of finite null scores strictly below the observed score; NaN when
        the observed score is NaN or no null score is finite.
    """
    qs = np.asarray(quantiles, dtype=np.float64)
    if qs.ndim != 1 or qs.size == 0 or np.any((qs < 0) | (qs > 1)):
        raise AnalysisError(f"quantiles must be numbers in [0, 1]; got {quantiles!r}")
    q, pct = xr.apply_ufunc(
        null_summary_arrays,
        observed,
        null,
        input_core_dims=[[], [SHUFFLE_DIM]],
        output_core_dims=[["quantile"], []],
        kwargs={"quantiles": qs},
        dask="parallelized",
        output_dtypes=[np.float64, np.float64],
        dask_gufunc_kwargs={"output_sizes": {"quantile": qs.size}},
    )
    q = q.assign_coords(quantile=qs).transpose("quantile", ...)
    return q, pct


# --------------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------------


def shuffle_null(
    recording: xr.Dataset,
    score_fn: str | ScoreFn | Sequence[str | ScoreFn] = "gridness_60",
    n: int = N_SHUFFLES,
    rng: int | np.random.Generator = 0,
    variable: str = G,
    smooth_sigma: float | None = None,
    resolution: float | None = None,
    min_shift_fraction: float = SHUFFLE_MIN_SHIFT_FRACTION,
    quantiles: Sequence[float] = NULL_QUANTILES,
    chunk_units: int | None = None,
) -> xr.Dataset:
    """Per-unit null distributions of scores by circular time shifts (see the module doc).

    Parameters
    ----------
    recording : xarray.Dataset
        A recording (``node``, ``node_x``, ``node_y`` and ``variable`` are needed).
    score_fn : str, callable or sequence of them
        A built-in score name (:data:`SCORES`: "gridness_60", "plane_wave_share",
        "spatial_info", "place_score", "border_score") or a function taking a rate-map
        Dataset like :func:`rate_maps` returns (``rate_map`` (..., y, x), ``occupancy``
        (y, x), ``node_rate`` (..., world_node), ``node_occupancy`` (world_node)) and
        returning a DataArray (its ``name`` names the score) or a Dataset of scores, with
        the map dims reduced.
    n : int
        Number of shuffles (>= 1).
    rng : int or numpy.random.Generator
        Seed or generator of the shifts.
    variable : {"g", "g_pi", "memory_activity"}
        The population.
    smooth_sigma, resolution
        As in :func:`rate_maps` (applied identically to the real and the shuffled maps).
    min_shift_fraction : float
        Smallest shift as a fraction of the walk, in [0, 0.5).
    quantiles : sequence of float
        Quantiles of the null distributions to report.
    chunk_units : int, optional
        Chunk the units into dask chunks of this size (computed with the active dask
        scheduler, e.g. a ``dask.distributed.Client``); default: compute eagerly.

    Returns
    -------
    xarray.Dataset
        For every score ``k``: ``k`` (env, unit) observed; ``k_null`` (env, unit, shuffle);
        ``k_null_q`` (quantile, env, unit); ``k_percentile`` (env, unit): percent of the
        finite null scores below the observed one. ``shuffle_shift`` (env, shuffle): the shifts,
        in steps. Attrs: ``n_shuffles``, ``min_shift_steps``, ``min_shift_fraction``,
        ``seed``, ``variable``, ``null_method``.

    Raises
    ------
    AnalysisError
        For ``n`` < 1, an unknown score, a bad ``rng`` or a recording lacking what is needed.
    """
    n = check_n_shuffles(n)
    scorers = _resolve_scorers(score_fn)
    require_recording(recording, [variable])
    gen, seed_attr = as_rng(rng)
    act, node = unit_activity(recording, variable), node_index(recording)
    maps = rate_maps(recording, variable, smooth_sigma=smooth_sigma, resolution=resolution,
                     activity=act, node=node)
    observed = _apply_scorers(scorers, maps)
    names = list(observed)
    n_env, n_time = act.sizes["env"], act.sizes["time"]
    sh = circular_shifts(n_time, n_env, n, gen, min_shift_fraction)
    shifts = xr.DataArray(sh, dims=("env", SHUFFLE_DIM))
    if chunk_units is not None:
        act = act.chunk({"env": -1, "time": -1, UNIT_DIM: int(chunk_units)})
    nulls = null_scores(act, node, shifts, maps["node_map"].values, maps.sizes[NODE_DIM],
                        scorers, names, maps.attrs["smooth_sigma_bins"])
    out = xr.Dataset(coords={"env": maps["env"], UNIT_DIM: maps[UNIT_DIM]})
    for k in names:
        obs = observed[k].transpose("env", UNIT_DIM)
        out[k] = obs
        out[f"{k}_null"] = nulls[k].assign_coords(env=maps["env"], unit=maps[UNIT_DIM])
        q, pct = null_summary(obs, out[f"{k}_null"], quantiles)
        out[f"{k}_null_q"] = q
        out[f"{k}_percentile"] = pct
        out[f"{k}_null"].attrs = {"long_name": f"{k} of circularly shifted activity"}
        out[f"{k}_null_q"].attrs = {"long_name": f"quantiles of the {k} null distribution"}
        out[f"{k}_percentile"].attrs = {
            "long_name": f"percent of finite null {k} scores below the observed one",
            "units": "percent",
        }
    out["shuffle_shift"] = shifts.assign_coords(env=maps["env"])
    out["shuffle_shift"].attrs = {"long_name": "circular shift of the activity", "units": "steps"}
    out = out.compute()
    out.attrs = {
        "n_shuffles": n,
        "min_shift_fraction": float(min_shift_fraction),
        "min_shift_steps": int(sh.min()) if sh.size else 0,
        "seed": seed_attr,
        "variable": variable,
        "null_method": _NULL_METHOD,
    }
    return out


_NULL_METHOD = (
    "circular time shift of each environment's activity against its trajectory (same shift "
    "for all units of an environment), shift uniform in [ceil(f T), T - ceil(f T)] steps"
)
