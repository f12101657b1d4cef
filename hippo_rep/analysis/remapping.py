"""Remapping between environments: per-unit map correlation, population vectors, TEM test.

Everything here works on per-node rates (``node_rate(env, unit, world_node)`` from
:func:`~hippo_rep.analysis.rate_maps`), so that hexagonal worlds weight every node once.
Environments are compared in pairs ``(env_a, env_b)``, ``env_a < env_b`` (dim ``env_pair``
with coords ``env_a``, ``env_b``).

What is computed (exactly):

- ``remap_corr(unit, env_pair)``: Pearson correlation, over the nodes visited in both
  environments (at least :data:`REMAP_MIN_NODES`), between a unit's node rates in the two
  environments. NaN when a map is constant or there are too few common nodes. Stable units
  give ~1, randomly remapping units ~0. Positional units are matched by index, memory slots
  by write order (see below): their correlation says whether the walks' k-th memories sit at
  the same place.
- ``pv_corr(population, env_pair)``: population-vector correlation: for each node visited
  in both environments, the Pearson correlation across the population's units (finite in
  both, at least :data:`PV_MIN_UNITS`) of the node-rate vectors; averaged over nodes.
- The TEM test (Whittington et al. 2020, after Barry et al.) of whether place-like units
  remap *together with* grid-like units: for each pair, each memory unit m with a field in
  both environments and each grid-like unit j (every unit of ``grid_variable`` whose map is
  not constant in either environment), take j's rate at m's peak node (its node of highest
  rate) in env a and in env b, each z-scored over j's visited nodes in that environment.
  ``tem_corr(env_pair)`` is the Pearson correlation of these two values over all (m, j)
  pairs. The null permutes which memory unit's peak is used in env b
  (:data:`TEM_SHUFFLES` random permutations); ``tem_null_mean``, ``tem_null_q95`` and
  ``tem_p`` = (1 + #null >= observed) / (1 + #shuffles) are reported, and the same pooled
  over pairs (``tem_corr_mean``, ``tem_p_mean``: the mean over pairs against the mean of
  the same-index null shuffles). A significant positive ``tem_corr`` means memory units
  sit at positions where the grid code is alike in both environments (TEM's prediction for
  place cells); random remapping gives ~0.
- Cell-pair structure (Fyhn et al. 2007; Yoon et al. 2013), the test of the paper's claim
  that grid cells keep their relationships across environments while memory neurons remap
  randomly: ``pair_structure_r(population, env_pair)`` is the Pearson correlation, over
  unit pairs i < j, between the two environments' unit x unit correlation matrices (each
  entry: Pearson r of two units' node rates over the nodes where both are defined in that
  environment; units with a constant map in either environment left out; a pair
  undefined in one environment counts at that matrix's mean, adding nothing to the
  covariance). The null relabels the units
  of env b at random (:data:`PAIR_SHUFFLES` permutations): ``pair_structure_p`` = (1 +
  #null >= observed) / (1 + #shuffles), with ``pair_structure_null_mean`` and
  ``pair_structure_null_q95``. A translated grid population gives ~1; per-unit
  correlations (``remap_corr``) are ~0 for it, because each map moves.
- Shift-tolerant variant: ``pair_shift_match(population, env_pair)``, the fraction of unit
  pairs whose spatial cross-correlogram peaks at the same offset (within
  :data:`SHIFT_TOLERANCE` bins) in both environments, with the same permutation null
  (``pair_shift_p``, ``pair_shift_null_mean``). Offsets are those of the peak of the
  cross-covariance of the two rate maps (each z-scored over its finite bins, NaN bins 0)
  divided by the overlap count, over lags of at most :data:`SHIFT_MAX_LAG_FRACTION` of the
  map size: the local maximum nearest lag 0 among those of at least
  :data:`SHIFT_PEAK_FRACTION` of the largest (for grids: the smallest phase difference).

Memory neurons have no identity across environments: TEM-t creates them anew in each
environment, and slot k is only the k-th memory written there. Wherever memory units are
compared across environments (``remap_corr``, the TEM test, the pair structure) slots are
paired by write order (:data:`MEMORY_IDENTITY` is stored in the attrs); for the pair
structure this is immaterial to the null but it is what "the same pair" means.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

import numpy as np
import xarray as xr
from scipy import fft as sfft
from scipy import ndimage

from hippo_rep.schema import MEMORY_ACTIVITY, POPULATIONS, G, require_recording

from .core import CONSTANT_RTOL, pair_correlations, pearson_rows
from .recordings import (
    NODE_DIM,
    UNIT_DIM,
    AnalysisError,
    rate_maps,
)
from .shuffle import as_rng, check_n_shuffles

#: A per-unit correlation needs at least this many nodes visited in both environments.
REMAP_MIN_NODES = 5

#: A population-vector correlation at a node needs at least this many units finite there.
PV_MIN_UNITS = 3

#: Permutations in the null of the TEM test.
TEM_SHUFFLES = 1000

#: The TEM test needs at least this many memory units with a field in both environments.
TEM_MIN_MEMORIES = 3

PAIR_DIM = "env_pair"

#: Permutations (units relabelled in one environment) in the null of the pair structure.
PAIR_SHUFFLES = 1000

#: The pair structure needs at least this many units defined in both environments.
PAIR_MIN_UNITS = 4

#: Pair offsets within this distance (bins) count as the same relationship.
SHIFT_TOLERANCE = 1.0

#: Cross-correlogram peaks are searched over lags up to this fraction of the map's size.
SHIFT_MAX_LAG_FRACTION = 0.5

#: A pair's offset is the cross-correlogram peak nearest lag 0 among the local maxima of at
#: least this fraction of the largest (periodic maps have many near-equal peaks).
SHIFT_PEAK_FRACTION = 0.5

#: Permutations are drawn and scored this many at a time.
_PERM_BATCH = 64

#: What pairs memory units across environments (stored in attrs wherever that happens).
MEMORY_IDENTITY = (
    "memory neurons are created anew in every environment; slot k is the k-th memory "
    "written in that environment's walk, so comparisons across environments pair slots by "
    "write order, which is no identity of a recorded cell"
)


def env_pairs(env: xr.DataArray) -> tuple[xr.Dataset, np.ndarray]:
    """All pairs ``a < b`` of environments: (coords ``env_a``, ``env_b`` on ``env_pair``,
    ``(n_pairs, 2)`` int positions along ``env``)."""
    n = env.sizes["env"]
    pairs = np.array(list(itertools.combinations(range(n), 2)), dtype=np.int64).reshape(-1, 2)
    vals = np.asarray(env.values)
    return xr.Dataset(coords={"env_a": (PAIR_DIM, vals[pairs[:, 0]]),
                              "env_b": (PAIR_DIM, vals[pairs[:, 1]])}), pairs


def unit_correlation(node_rate: xr.DataArray, min_nodes: int = REMAP_MIN_NODES) -> xr.DataArray:
    """Per-unit spatial correlation between every pair of environments.

    Parameters
    ----------
    node_rate : xarray.DataArray, dims (..., env, world_node)
        Mean activity per node (NaN = unvisited); dask-backed arrays stay lazy (chunk any
        dim but ``env`` and ``world_node``).
    min_nodes : int
        Fewest nodes visited in both environments for a defined correlation.

    Returns
    -------
    xarray.DataArray, dims (..., env_pair)
        Pearson r; coords ``env_a``, ``env_b``.
    """
    coords, pairs = env_pairs(node_rate["env"])
    out = xr.apply_ufunc(
        pair_correlations,
        node_rate,
        input_core_dims=[["env", NODE_DIM]],
        output_core_dims=[[PAIR_DIM]],
        kwargs={"pairs": pairs, "min_n": int(min_nodes)},
        dask="parallelized",
        output_dtypes=[np.float64],
        dask_gufunc_kwargs={"output_sizes": {PAIR_DIM: len(pairs)}},
    )
    out = out.assign_coords(coords.coords)
    out.name = "remap_corr"
    out.attrs = {
        "long_name": "per-unit Pearson r of node rates between two environments",
        "units": "1",
        "min_nodes": int(min_nodes),
    }
    return out


def pv_correlation(
    node_rate: xr.DataArray, min_units: int = PV_MIN_UNITS
) -> xr.DataArray:
    """Population-vector correlation between every pair of environments.

    Parameters
    ----------
    node_rate : xarray.DataArray, dims (env, unit, world_node)
        One population's node rates.
    min_units : int
        Fewest units finite at a node (in both environments) for that node to count.

    Returns
    -------
    xarray.DataArray, dims (env_pair,)
        Mean over common nodes of the across-unit Pearson r; NaN if no node qualifies.
    """
    coords, pairs = env_pairs(node_rate["env"])
    r = np.asarray(node_rate.transpose("env", NODE_DIM, UNIT_DIM).values, dtype=np.float64)
    out = np.full(len(pairs), np.nan)
    for i, (a, b) in enumerate(pairs):
        per_node = pearson_rows(r[a], r[b], int(min_units))  # (node,)
        if np.isfinite(per_node).any():
            out[i] = np.nanmean(per_node)
    da = xr.DataArray(out, dims=(PAIR_DIM,), coords=coords.coords, name="pv_corr")
    da.attrs = {
        "long_name": "population-vector correlation (mean over common nodes of the "
        "across-unit Pearson r)",
        "units": "1",
        "min_units": int(min_units),
    }
    return da


def _zscore_nodes(r: np.ndarray) -> np.ndarray:
    """z-score (unit, node) rates over finite nodes; constant units -> NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(r, axis=-1, keepdims=True)
        s = np.nanstd(r, axis=-1, keepdims=True)
        scale = np.nanmax(np.abs(r), axis=-1, keepdims=True)
    ok = np.isfinite(s) & (s > CONSTANT_RTOL * np.where(np.isfinite(scale), scale, 0.0))
    ok &= s > 0
    return np.where(ok, (r - m) / np.where(ok, s, 1.0), np.nan)


def _peak_nodes(r: np.ndarray) -> np.ndarray:
    """Node of highest rate per unit (unit, node) -> (unit,), -1 when none/constant."""
    fin = np.isfinite(r)
    hi = np.where(fin, r, -np.inf)
    lo = np.where(fin, r, np.inf)
    peak = hi.argmax(axis=-1)
    has = fin.any(axis=-1) & (hi.max(axis=-1) > lo.min(axis=-1))
    return np.where(has, peak, -1)


def tem_remapping(
    grid_rate: xr.DataArray,
    memory_rate: xr.DataArray,
    n_shuffles: int = TEM_SHUFFLES,
    rng: int | np.random.Generator = 0,
) -> xr.Dataset:
    """The TEM test: do memory units remap together with grid units? (see the module doc).

    Parameters
    ----------
    grid_rate : xarray.DataArray, dims (env, unit, world_node)
        Node rates of the grid-like units.
    memory_rate : xarray.DataArray, dims (env, unit, world_node)
        Node rates of the memory (place-like) units, matched across environments by index.
    n_shuffles : int
        Permutations in the null.
    rng : int or numpy.random.Generator
        Seed or generator of the permutations.

    Returns
    -------
    xarray.Dataset
        ``tem_corr``, ``tem_null_mean``, ``tem_null_q95``, ``tem_p``, ``tem_n_memories``
        (env_pair); ``tem_corr_mean``, ``tem_p_mean`` (scalars).
    """
    n_shuffles = check_n_shuffles(n_shuffles, "n_shuffles")
    gen, seed_attr = as_rng(rng)
    coords, pairs = env_pairs(grid_rate["env"])
    g = np.asarray(grid_rate.transpose("env", UNIT_DIM, NODE_DIM).values, dtype=np.float64)
    m = np.asarray(memory_rate.transpose("env", UNIT_DIM, NODE_DIM).values, dtype=np.float64)
    z = np.stack([_zscore_nodes(g[e]) for e in range(g.shape[0])]) if g.size else g
    peaks = np.stack([_peak_nodes(m[e]) for e in range(m.shape[0])]) if m.size else m
    n_p = len(pairs)
    corr = np.full(n_p, np.nan)
    null = np.full((n_p, n_shuffles), np.nan)
    n_mem = np.zeros(n_p, dtype=np.int64)
    for i, (a, b) in enumerate(pairs):
        # row m, column j: grid unit j's z-scored rate at memory unit m's peak node; memory
        # units with a peak in both environments, grid units defined in both
        both = np.flatnonzero((peaks[a] >= 0) & (peaks[b] >= 0))
        units = np.isfinite(z[a]).any(-1) & np.isfinite(z[b]).any(-1)
        va, vb = z[a][units][:, peaks[a][both]].T, z[b][units][:, peaks[b][both]].T  # (M, J)
        keep = np.isfinite(va).all(1) & np.isfinite(vb).all(1)
        va, vb = va[keep], vb[keep]
        n_mem[i] = va.shape[0]
        perms = np.argsort(gen.random((n_shuffles, va.shape[0])), axis=1)
        if va.shape[0] < TEM_MIN_MEMORIES or va.shape[1] == 0:
            continue
        ca = va - va.mean()
        cb = vb - vb.mean()
        den = np.sqrt((ca * ca).sum() * (cb * cb).sum())
        if not den > 0:
            continue
        gram = ca @ cb.T  # (M, M): sum over grid units of ca[m] * cb[m']
        corr[i] = np.trace(gram) / den
        null[i] = gram[np.arange(va.shape[0])[None, :], perms].sum(axis=1) / den
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        null_mean = np.nanmean(null, axis=1)
        q95 = np.nanquantile(null, 0.95, axis=1)
        p = (1 + (null >= corr[:, None]).sum(1)) / (1 + n_shuffles)
        p = np.where(np.isfinite(corr), p, np.nan)
        ok = np.isfinite(corr)
        corr_mean = float(np.mean(corr[ok])) if ok.any() else np.nan
        pooled = np.mean(null[ok], axis=0) if ok.any() else np.full(n_shuffles, np.nan)
        p_mean = (
            float((1 + (pooled >= corr_mean).sum()) / (1 + n_shuffles)) if ok.any() else np.nan
        )
    ds = xr.Dataset(
        {
            "tem_corr": (PAIR_DIM, corr),
            "tem_null_mean": (PAIR_DIM, null_mean),
            "tem_null_q95": (PAIR_DIM, q95),
            "tem_p": (PAIR_DIM, p),
            "tem_n_memories": (PAIR_DIM, n_mem),
            "tem_corr_mean": ((), corr_mean),
            "tem_p_mean": ((), p_mean),
        },
        coords=coords.coords,
    )
    ds["tem_corr"].attrs = {
        "long_name": "Pearson r over (memory, grid unit) pairs of the grid unit's z-scored "
        "rate at the memory unit's peak node, env_a vs env_b",
        "units": "1",
    }
    ds["tem_null_mean"].attrs = {"long_name": "mean of tem_corr with permuted env_b peaks"}
    ds["tem_null_q95"].attrs = {"long_name": "0.95 quantile of the tem_corr null"}
    ds["tem_p"].attrs = {"long_name": "(1 + #null >= tem_corr) / (1 + n_shuffles)"}
    ds["tem_n_memories"].attrs = {"long_name": "memory units with a peak in both envs"}
    ds["tem_corr_mean"].attrs = {"long_name": "tem_corr averaged over env pairs"}
    ds["tem_p_mean"].attrs = {"long_name": "p of tem_corr_mean against the pooled null"}
    ds.attrs = {"tem_shuffles": int(n_shuffles), "tem_seed": seed_attr}
    return ds


def _unit_corr_matrix(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit, node) rates -> (unit x unit Pearson r, unit defined).

    Entry [i, j] is the Pearson r of units i and j over the nodes where both are finite
    (memory units are NaN before their memory is written), NaN when fewer than
    :data:`REMAP_MIN_NODES` or either is constant there. A unit is defined when it is finite
    at :data:`REMAP_MIN_NODES` nodes or more and not constant.
    """
    m = np.isfinite(rates).astype(np.float64)
    x = np.where(m > 0, rates, 0.0)
    scale = np.abs(x).max(axis=1, initial=0.0)
    x = x / np.where(scale > 0, scale, 1.0)[:, None]  # unit peak: variance tests are relative
    n = m @ m.T
    s_i = x @ m.T  # [i, j]: sum of x_i over the nodes where both are finite
    s_ii = (x * x) @ m.T
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = x @ x.T - s_i * s_i.T / n
        var = s_ii - s_i * s_i / n
        r = cov / np.sqrt(var * var.T)
    tol = CONSTANT_RTOL * np.maximum(n, 1)
    bad = (n < REMAP_MIN_NODES) | ~(var > tol) | ~(var.T > tol)
    r = np.where(bad, np.nan, np.clip(r, -1.0, 1.0))
    cnt = m.sum(axis=1)
    with np.errstate(invalid="ignore"):
        hi = np.where(m > 0, x, -np.inf).max(axis=1)
        lo = np.where(m > 0, x, np.inf).min(axis=1)
    ok = (cnt >= REMAP_MIN_NODES) & (hi - lo > CONSTANT_RTOL)
    return r, ok


def unit_pair_matrix(node_rate: xr.DataArray, env: object) -> np.ndarray:
    """One environment's unit x unit correlation matrix, as the pair structure uses it.

    Parameters
    ----------
    node_rate : xarray.DataArray, dims (env, unit, world_node)
        One population's node rates.
    env : env coordinate value

    Returns
    -------
    numpy.ndarray, (unit, unit)
        Pearson r of two units' node rates over the nodes where both are finite; NaN for
        units constant there or pairs with fewer than :data:`REMAP_MIN_NODES` common nodes.
    """
    r = np.asarray(node_rate.sel(env=env).transpose(UNIT_DIM, NODE_DIM).values, dtype=float)
    corr, ok = _unit_corr_matrix(r)
    corr[~ok, :] = np.nan
    corr[:, ~ok] = np.nan
    return corr


def _permutation_test(
    xfull: np.ndarray, yfull: np.ndarray, stat: str, n_shuffles: int, gen: np.random.Generator
) -> tuple[float, np.ndarray]:
    """Observed statistic and its null for two environments' unit-pair values, relabelling
    the units of the second.

    ``xfull``, ``yfull``: (n, n) symmetric matrices (``stat="pearson"``: Pearson r over the
    unit pairs i < j, a pair undefined (NaN) in one environment counting at that
    environment's mean, so it adds nothing to the covariance and the moments do not change
    under relabelling) or (n, n, 2) integer offsets, antisymmetric (``"match"``: fraction of
    pairs i < j with ``|x - y| <= SHIFT_TOLERANCE``).
    """
    n = yfull.shape[0]
    iu, ju = np.triu_indices(n, 1)
    if stat == "pearson":
        x = np.nan_to_num(xfull - np.nanmean(xfull[iu, ju]))
        y = np.nan_to_num(yfull - np.nanmean(yfull[iu, ju]))
        np.fill_diagonal(x, 0.0)
        np.fill_diagonal(y, 0.0)
        den = 2 * np.sqrt((x[iu, ju] @ x[iu, ju]) * (y[iu, ju] @ y[iu, ju]))
        if not den > 0:
            return np.nan, np.full(n_shuffles, np.nan)
        xf = x.ravel()
        y = y.astype(np.float32)  # halves the permuted copies; r to ~1e-7

        def score(yy: np.ndarray) -> np.ndarray:  # (k, n, n) -> (k,)
            return yy.reshape(yy.shape[0], -1).astype(np.float64) @ xf / den

    else:
        # integer offsets as one code dy * W + dx; matches are the code differences of the
        # offsets within SHIFT_TOLERANCE
        w = int(max(np.abs(xfull).max(initial=0), np.abs(yfull).max(initial=0))) * 2 + 2
        r = int(np.floor(SHIFT_TOLERANCE))
        near = [dy * w + dx for dy in range(-r, r + 1) for dx in range(-r, r + 1)
                if dy * dy + dx * dx <= SHIFT_TOLERANCE**2]
        x = (xfull[..., 0] * w + xfull[..., 1]).astype(np.int32)
        y = (yfull[..., 0] * w + yfull[..., 1]).astype(np.int32)
        n_pairs = n * (n - 1) / 2

        def score(yy: np.ndarray) -> np.ndarray:  # (k, n, n) -> (k,)
            d = yy - x[None]
            same = d == near[0]
            for c in near[1:]:
                same |= d == c
            return (same.sum(axis=(1, 2)) - n) / 2 / n_pairs  # the diagonal always matches

    obs = float(score(y[None])[0])
    null = np.empty(n_shuffles)
    for start in range(0, n_shuffles, _PERM_BATCH):
        k = min(_PERM_BATCH, n_shuffles - start)
        perm = np.argsort(gen.random((k, n)), axis=1)
        # row then column takes: ~7x faster than one broadcast fancy index
        null[start : start + k] = [score(y.take(p, axis=0).take(p, axis=1)[None])[0]
                                   for p in perm]
    return obs, null


def _pair_offsets(maps: np.ndarray, max_lag: float, block: int = 16) -> np.ndarray:
    """Peak offset (dy, dx) of every unit pair's cross-correlogram: (U, ny, nx) -> (U, U, 2).

    The cross-correlogram of units i, j at lag tau is sum_p a_i(p) a_j(p + tau) / n(tau)
    (maps z-scored over their finite bins, NaN bins 0, n(tau) the overlap of finite bins),
    over lags with |tau| <= max_lag. Entry [i, j] is the local maximum (3 x 3) nearest to
    lag 0 among those of at least :data:`SHIFT_PEAK_FRACTION` of the largest value, so that
    a periodic map's offset is its smallest phase difference, not whichever of its equal
    peaks happens to be highest.
    """
    u, ny, nx = maps.shape
    fin = np.isfinite(maps)
    cnt = np.maximum(fin.sum(axis=(1, 2)), 1)[:, None, None]
    mean = np.where(fin, maps, 0.0).sum(axis=(1, 2))[:, None, None] / cnt
    a = np.where(fin, maps - mean, 0.0)
    sd = np.sqrt((a * a).sum(axis=(1, 2))[:, None, None] / cnt)
    a = a / np.where(sd > 0, sd, 1.0)
    shape = (sfft.next_fast_len(2 * ny - 1, real=True), sfft.next_fast_len(2 * nx - 1, real=True))
    ly = np.arange(-(ny - 1), ny)
    lx = np.arange(-(nx - 1), nx)
    iy, ix = ly % shape[0], lx % shape[1]
    fa = sfft.rfft2(a, s=shape)
    fm = sfft.rfft2(fin.any(axis=0).astype(np.float64), s=shape)
    n = np.rint(sfft.irfft2(np.conj(fm) * fm, s=shape))[iy][:, ix]
    dist = np.hypot(ly[:, None], lx[None, :])
    allowed = (dist <= max_lag) & (n > 0.5)
    inv_n = np.where(allowed, 1.0 / np.where(allowed, n, 1.0), 0.0)
    out = np.zeros((u, u, 2))
    for start in range(0, u, block):
        stop = min(start + block, u)
        # pairs (i, j >= start) only: offset[j, i] = -offset[i, j]
        cc = sfft.irfft2(np.conj(fa[start:stop, None]) * fa[None, start:], s=shape)
        cc = np.where(allowed, cc[..., iy, :][..., ix] * inv_n, -np.inf)
        local = cc >= ndimage.maximum_filter(cc, size=(1, 1, 3, 3), mode="nearest")
        top = cc.max(axis=(-2, -1), keepdims=True)
        cand = local & allowed & (cc >= SHIFT_PEAK_FRACTION * top)
        best = np.argmin(np.where(cand, dist, np.inf).reshape(cc.shape[:2] + (-1,)), axis=-1)
        by, bx = np.divmod(best, lx.size)
        out[start:stop, start:, 0] = ly[by]
        out[start:stop, start:, 1] = lx[bx]
    low = np.tril_indices(u, -1)
    out[low] = -out.transpose(1, 0, 2)[low]
    return out


def pair_structure(
    node_rate: xr.DataArray,
    rate_map: xr.DataArray | None = None,
    n_shuffles: int = PAIR_SHUFFLES,
    rng: int | np.random.Generator = 0,
) -> xr.Dataset:
    """Cell-pair structure of one population across every pair of environments.

    See the module doc for the definitions (``pair_structure_r`` and its permutation null;
    the shift-tolerant ``pair_shift_match`` when ``rate_map`` is given).

    Parameters
    ----------
    node_rate : xarray.DataArray, dims (env, unit, world_node)
        One population's node rates (NaN = unvisited).
    rate_map : xarray.DataArray, dims (env, unit, y, x), optional
        The same population's rate maps, for the shift-tolerant variant.
    n_shuffles : int
        Permutations in each null.
    rng : int or numpy.random.Generator
        Seed or generator of the permutations.

    Returns
    -------
    xarray.Dataset, dims (env_pair,)
        ``pair_structure_r``, ``pair_structure_p``, ``pair_structure_null_mean``,
        ``pair_structure_null_q95``, ``pair_structure_n_units``; with ``rate_map`` also
        ``pair_shift_match``, ``pair_shift_p``, ``pair_shift_null_mean``. NaN where fewer
        than :data:`PAIR_MIN_UNITS` units are defined in both environments.
    """
    n_shuffles = check_n_shuffles(n_shuffles, "n_shuffles")
    gen, seed_attr = as_rng(rng)
    coords, pairs = env_pairs(node_rate["env"])
    n_p = len(pairs)
    # one environment (a session) has no pair: the unit x unit matrices would go unused
    envs = range(node_rate.sizes["env"] if n_p else 0)
    r = np.asarray(node_rate.transpose("env", UNIT_DIM, NODE_DIM).values, dtype=np.float64)
    mats = [_unit_corr_matrix(r[e]) for e in envs]
    offsets = None
    if rate_map is not None:
        m = np.asarray(rate_map.transpose("env", UNIT_DIM, "y", "x").values, dtype=np.float64)
        max_lag = SHIFT_MAX_LAG_FRACTION * min(m.shape[-2:])
        offsets = [_pair_offsets(m[e], max_lag) for e in envs]
    res = {k: np.full(n_p, np.nan) for k in (
        "pair_structure_r", "pair_structure_p", "pair_structure_null_mean",
        "pair_structure_null_q95", "pair_shift_match", "pair_shift_p", "pair_shift_null_mean")}
    n_units = np.zeros(n_p, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i, (a, b) in enumerate(pairs):
            keep = np.flatnonzero(mats[a][1] & mats[b][1])
            n_units[i] = keep.size
            if keep.size < PAIR_MIN_UNITS:
                continue
            sub = np.ix_(keep, keep)
            obs, null = _permutation_test(
                mats[a][0][sub], mats[b][0][sub], "pearson", n_shuffles, gen
            )
            if np.isfinite(obs):
                res["pair_structure_r"][i] = obs
                res["pair_structure_p"][i] = (1 + (null >= obs).sum()) / (1 + n_shuffles)
                res["pair_structure_null_mean"][i] = np.nanmean(null)
                res["pair_structure_null_q95"][i] = np.nanquantile(null, 0.95)
            if offsets is not None:
                obs, null = _permutation_test(
                    offsets[a][sub], offsets[b][sub], "match", n_shuffles, gen
                )
                res["pair_shift_match"][i] = obs
                res["pair_shift_p"][i] = (1 + (null >= obs).sum()) / (1 + n_shuffles)
                res["pair_shift_null_mean"][i] = null.mean()
    ds = xr.Dataset({k: (PAIR_DIM, v) for k, v in res.items()}, coords=coords.coords)
    ds["pair_structure_n_units"] = (PAIR_DIM, n_units)
    if offsets is None:
        ds = ds.drop_vars(["pair_shift_match", "pair_shift_p", "pair_shift_null_mean"])
    _pair_attrs(ds)
    ds.attrs = {"pair_shuffles": int(n_shuffles), "pair_seed": seed_attr}
    return ds


def _pair_attrs(ds: xr.Dataset) -> None:
    docs = {
        "pair_structure_r": ("Pearson r, over unit pairs, of the unit x unit node-rate "
                             "correlation matrices of env_a and env_b", "1"),
        "pair_structure_p": ("(1 + #null >= pair_structure_r) / (1 + shuffles); null: units "
                             "of env_b relabelled at random", "1"),
        "pair_structure_null_mean": ("mean of the pair_structure_r null", "1"),
        "pair_structure_null_q95": ("0.95 quantile of the pair_structure_r null", "1"),
        "pair_structure_n_units": ("units defined in both environments", "1"),
        "pair_shift_match": ("fraction of unit pairs whose cross-correlogram peak offset is "
                             f"the same (within {SHIFT_TOLERANCE} bins) in env_a and env_b",
                             "1"),
        "pair_shift_p": ("(1 + #null >= pair_shift_match) / (1 + shuffles); null: units of "
                         "env_b relabelled at random", "1"),
        "pair_shift_null_mean": ("mean of the pair_shift_match null", "1"),
    }
    for k, (name, units) in docs.items():
        if k in ds:
            ds[k].attrs = {"long_name": name, "units": units}


def remapping(
    recording: xr.Dataset,
    variables: Sequence[str] | None = None,
    grid_variable: str = G,
    memory_variable: str = MEMORY_ACTIVITY,
    n_shuffles: int = TEM_SHUFFLES,
    rng: int | np.random.Generator = 0,
) -> xr.Dataset:
    """Remapping between every pair of environments (see the module doc for definitions).

    Parameters
    ----------
    recording : xarray.Dataset
        A recording with at least two environments.
    variables : sequence of str, optional
        Populations for the per-unit and population-vector correlations (default: those of
        ``("g", "g_pi", "memory_activity")`` present).
    grid_variable, memory_variable : str
        Populations of the TEM test.
    n_shuffles : int
        Permutations in the TEM test's null.
    rng : int or numpy.random.Generator
        Seed or generator of those permutations.

    Returns
    -------
    xarray.Dataset
        ``remap_corr`` (unit, env_pair) with coords ``variable``, ``unit_index`` on
        ``unit``; ``remap_corr_mean`` (unit): mean over pairs; ``pv_corr`` (population,
        env_pair); the TEM test's variables (:func:`tem_remapping`); the pair structure
        (:func:`pair_structure`: ``pair_structure_r``, ``pair_structure_p``, ...,
        ``pair_shift_match``, ``pair_shift_p``, dims (population, env_pair)). Attr
        ``memory_identity`` says how memory slots are paired across environments.

    Raises
    ------
    AnalysisError
        With fewer than two environments or a missing variable.
    """
    if variables is None:
        variables = [v for v in POPULATIONS if v in recording.data_vars]
    variables = list(variables)
    require_recording(recording, sorted({*variables, grid_variable, memory_variable}))
    if recording.sizes["env"] < 2:
        raise AnalysisError("remapping needs a recording with at least 2 environments")
    maps = {v: rate_maps(recording, v) for v in dict.fromkeys([*variables, grid_variable,
                                                                 memory_variable])}
    return remapping_from_rates(
        {v: m["node_rate"] for v, m in maps.items()}, variables, grid_variable,
        memory_variable, n_shuffles, rng,
        rate_maps={v: maps[v]["rate_map"] for v in variables},
    )


def stack_units(rates: dict[str, xr.DataArray]) -> xr.DataArray:
    """Concatenate per-variable ``(env, unit, ...)`` arrays along ``unit``.

    The result's ``unit`` coord is 0..n-1; coords ``variable`` (str) and ``unit_index`` (the
    original unit index) on ``unit`` say where each unit comes from.
    """
    parts = []
    for v, da in rates.items():
        idx = da[UNIT_DIM].values
        parts.append(
            da.drop_vars(UNIT_DIM).assign_coords(
                variable=(UNIT_DIM, np.full(idx.size, v, dtype=object).astype(str)),
                unit_index=(UNIT_DIM, idx),
            )
        )
    out = xr.concat(parts, dim=UNIT_DIM, coords="minimal", compat="override", join="override")
    return out.assign_coords({UNIT_DIM: np.arange(out.sizes[UNIT_DIM])})


def remapping_from_rates(
    rates: dict[str, xr.DataArray],
    variables: Sequence[str],
    grid_variable: str | None = G,
    memory_variable: str | None = MEMORY_ACTIVITY,
    n_shuffles: int = TEM_SHUFFLES,
    rng: int | np.random.Generator = 0,
    per_unit: bool = True,
    rate_maps: dict[str, xr.DataArray] | None = None,
    pair_shuffles: int = PAIR_SHUFFLES,
) -> xr.Dataset:
    """:func:`remapping` from node rates ``{variable: node_rate(env, unit, world_node)}``.

    ``grid_variable`` or ``memory_variable`` None skips the TEM test; ``per_unit=False``
    skips ``remap_corr`` and ``remap_corr_mean``; ``rate_maps`` ``{variable: rate_map(env,
    unit, y, x)}`` adds the shift-tolerant pair structure. The pair structure's permutations
    are drawn from ``rng`` after the TEM test's.
    """
    ds = xr.Dataset()
    if per_unit:
        corr = unit_correlation(stack_units({v: rates[v] for v in variables}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = corr.mean(PAIR_DIM, skipna=True)
        mean.attrs = {"long_name": "remap_corr averaged over environment pairs", "units": "1"}
        ds["remap_corr"] = corr.transpose(UNIT_DIM, PAIR_DIM)
        ds["remap_corr_mean"] = mean
    pv = xr.concat([pv_correlation(rates[v]) for v in variables], dim="population")
    ds["pv_corr"] = pv.assign_coords(population=list(variables))
    attrs: dict[str, object] = {"remap_min_nodes": REMAP_MIN_NODES, "pv_min_units": PV_MIN_UNITS}
    gen, seed_attr = as_rng(rng)  # one stream: the TEM test's permutations, then the pairs'
    if grid_variable is not None and memory_variable is not None:
        tem = tem_remapping(rates[grid_variable], rates[memory_variable], n_shuffles, gen)
        ds = ds.merge(tem, compat="override", join="exact")
        attrs.update(tem.attrs, tem_grid_variable=grid_variable,
                     tem_memory_variable=memory_variable, tem_seed=seed_attr)
    pair = xr.concat(
        [pair_structure(rates[v], None if rate_maps is None else rate_maps[v], pair_shuffles, gen)
         for v in variables],
        dim="population",
        coords="minimal",
        compat="override",
    ).assign_coords(population=list(variables))
    ds = ds.merge(pair, compat="override", join="exact")
    attrs.update(pair_shuffles=int(pair_shuffles), pair_seed=seed_attr,
                 pair_min_units=PAIR_MIN_UNITS, pair_shift_peak_fraction=SHIFT_PEAK_FRACTION,
                 pair_shift_tolerance_bins=SHIFT_TOLERANCE,
                 pair_shift_max_lag_fraction=SHIFT_MAX_LAG_FRACTION)
    if memory_variable is not None and memory_variable in rates:
        attrs["memory_identity"] = MEMORY_IDENTITY
        for k in ("tem_corr", "pair_structure_r", "pair_shift_match", "remap_corr"):
            if k in ds:
                ds[k].attrs["memory_identity"] = MEMORY_IDENTITY
    ds.attrs = attrs
    return ds
