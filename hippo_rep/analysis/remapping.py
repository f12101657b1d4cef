"""Remapping between environments: per-unit map correlation, population vectors, TEM test.

Everything here works on per-node rates (``node_rate(env, unit, world_node)`` from
:func:`~hippo_rep.analysis.rate_maps`), so that hexagonal worlds weight every node once.
Environments are compared in pairs ``(env_a, env_b)``, ``env_a < env_b`` (dim ``env_pair``
with coords ``env_a``, ``env_b``).

What is computed (exactly):

- ``remap_corr(unit, env_pair)``: Pearson correlation, over the nodes visited in both
  environments (at least :data:`REMAP_MIN_NODES`), between a unit's node rates in the two
  environments. NaN when a map is constant or there are too few common nodes. Stable units
  give ~1, randomly remapping units ~0. A unit is the same neuron in every environment: for
  positional units that is their index; memory slots have no identity across environments
  (TEM-t writes fresh memories in each), so slot k is matched to slot k, i.e. the k-th memory
  written in each walk, and the correlation of memory units measures whether the walks'
  k-th memories sit at the same place (random remapping gives ~0).
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
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

import numpy as np
import xarray as xr

from .recordings import (
    NODE_DIM,
    UNIT_DIM,
    VARIABLES,
    AnalysisError,
    check_recording,
    rate_maps,
)
from .shuffle import as_rng

#: A per-unit correlation needs at least this many nodes visited in both environments.
REMAP_MIN_NODES = 5

#: A population-vector correlation at a node needs at least this many units finite there.
PV_MIN_UNITS = 3

#: Permutations in the null of the TEM test.
TEM_SHUFFLES = 1000

#: The TEM test needs at least this many memory units with a field in both environments.
TEM_MIN_MEMORIES = 3

#: Map values within this fraction of their magnitude count as constant.
CONSTANT_RTOL = 1e-12

PAIR_DIM = "env_pair"


def env_pairs(env: xr.DataArray) -> tuple[xr.Dataset, np.ndarray]:
    """All pairs ``a < b`` of environments: (coords ``env_a``, ``env_b`` on ``env_pair``,
    ``(n_pairs, 2)`` int positions along ``env``)."""
    n = env.sizes["env"]
    pairs = np.array(list(itertools.combinations(range(n), 2)), dtype=np.int64).reshape(-1, 2)
    vals = np.asarray(env.values)
    return xr.Dataset(
        coords={
            "env_a": (PAIR_DIM, vals[pairs[:, 0]] if pairs.size else vals[:0]),
            "env_b": (PAIR_DIM, vals[pairs[:, 1]] if pairs.size else vals[:0]),
        }
    ), pairs


def _pearson_rows(a: np.ndarray, b: np.ndarray, min_n: int) -> np.ndarray:
    """Pearson r along the last axis over entries finite in both; NaN if < min_n or constant."""
    ok = np.isfinite(a) & np.isfinite(b)
    n = ok.sum(axis=-1)
    a0 = np.where(ok, a, 0.0)
    b0 = np.where(ok, b, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma = a0.sum(-1) / n
        mb = b0.sum(-1) / n
        da = np.where(ok, a0 - ma[..., None], 0.0)
        db = np.where(ok, b0 - mb[..., None], 0.0)
        saa = (da * da).sum(-1)
        sbb = (db * db).sum(-1)
        r = (da * db).sum(-1) / np.sqrt(saa * sbb)
        scale_a = np.where(ok, np.abs(a0), 0.0).max(-1, initial=0.0) ** 2 * np.maximum(n, 1)
        scale_b = np.where(ok, np.abs(b0), 0.0).max(-1, initial=0.0) ** 2 * np.maximum(n, 1)
    const = (saa <= CONSTANT_RTOL * scale_a) | (saa == 0) | (sbb <= CONSTANT_RTOL * scale_b)
    return np.where((n >= min_n) & ~const, np.clip(r, -1.0, 1.0), np.nan)


def _unit_corr_core(rates: np.ndarray, pairs: np.ndarray, min_n: int) -> np.ndarray:
    """rates (..., env, node) -> (..., pair)."""
    if pairs.size == 0:
        return np.zeros(rates.shape[:-2] + (0,))
    a = rates[..., pairs[:, 0], :]
    b = rates[..., pairs[:, 1], :]
    return _pearson_rows(a, b, min_n)


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
        _unit_corr_core,
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i, (a, b) in enumerate(pairs):
            per_node = _pearson_rows(r[a], r[b], int(min_units))  # (node,)
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


def _tem_pair_values(z: np.ndarray, peaks: np.ndarray, a: int, b: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The TEM test's values of one environment pair: (M, J) arrays, env a and env b.

    ``z`` (env, grid unit, node) z-scored grid rates, ``peaks`` (env, memory) peak nodes (-1:
    none). Row m, column j: grid unit j's z-scored rate at memory unit m's peak node; only
    memory units with a peak in both environments, only grid units defined in both.
    """
    both = np.flatnonzero((peaks[a] >= 0) & (peaks[b] >= 0))
    units = np.isfinite(z[a]).any(-1) & np.isfinite(z[b]).any(-1)
    va = z[a][units][:, peaks[a][both]].T  # (M, J)
    vb = z[b][units][:, peaks[b][both]].T
    keep = np.isfinite(va).all(1) & np.isfinite(vb).all(1)
    return va[keep], vb[keep]


def tem_points(
    grid_rate: xr.DataArray, memory_rate: xr.DataArray, env_a: object, env_b: object
) -> tuple[np.ndarray, np.ndarray]:
    """The points of the TEM test for one pair of environments (to plot the grid–place
    relationship): their Pearson correlation is ``tem_corr`` of that pair.

    Parameters
    ----------
    grid_rate : xarray.DataArray, dims (env, unit, world_node)
        Node rates of the grid-like units (activity units).
    memory_rate : xarray.DataArray, dims (env, unit, world_node)
        Node rates of the memory units, matched across environments by index.
    env_a, env_b : env coordinate values
        The two environments.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray), each of shape (M, J)
        For each of the M memory units with a peak in both environments and each of the J
        grid units defined in both: the grid unit's rate at the memory unit's peak node,
        z-scored over the grid unit's visited nodes (dimensionless), in env a and in env b.
    """
    g = grid_rate.sel(env=[env_a, env_b]).transpose("env", UNIT_DIM, NODE_DIM).values
    m = memory_rate.sel(env=[env_a, env_b]).transpose("env", UNIT_DIM, NODE_DIM).values
    g, m = np.asarray(g, dtype=np.float64), np.asarray(m, dtype=np.float64)
    z = np.stack([_zscore_nodes(g[e]) for e in range(2)])
    peaks = np.stack([_peak_nodes(m[e]) for e in range(2)])
    return _tem_pair_values(z, peaks, 0, 1)


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
    if isinstance(n_shuffles, bool) or not isinstance(n_shuffles, (int, np.integer)) or (
        n_shuffles < 1
    ):
        raise AnalysisError(f"n_shuffles must be an int >= 1; got {n_shuffles!r}")
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
        va, vb = _tem_pair_values(z, peaks, a, b)
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


def remapping(
    recording: xr.Dataset,
    variables: Sequence[str] | None = None,
    grid_variable: str = "g",
    memory_variable: str = "memory_activity",
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
        env_pair); the TEM test's variables (:func:`tem_remapping`).

    Raises
    ------
    AnalysisError
        With fewer than two environments or a missing variable.
    """
    if variables is None:
        variables = [v for v in VARIABLES if v in recording.data_vars]
    variables = list(variables)
    check_recording(recording, sorted({*variables, grid_variable, memory_variable}))
    if recording.sizes["env"] < 2:
        raise AnalysisError("remapping needs a recording with at least 2 environments")
    rates = {
        v: rate_maps(recording, v)["node_rate"]
        for v in dict.fromkeys([*variables, grid_variable, memory_variable])
    }
    return remapping_from_rates(
        rates, variables, grid_variable, memory_variable, n_shuffles, rng
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
    grid_variable: str | None = "g",
    memory_variable: str | None = "memory_activity",
    n_shuffles: int = TEM_SHUFFLES,
    rng: int | np.random.Generator = 0,
    per_unit: bool = True,
) -> xr.Dataset:
    """:func:`remapping` from node rates ``{variable: node_rate(env, unit, world_node)}``.

    ``grid_variable`` or ``memory_variable`` None skips the TEM test; ``per_unit=False``
    skips ``remap_corr`` and ``remap_corr_mean``.
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
    if grid_variable is not None and memory_variable is not None:
        tem = tem_remapping(rates[grid_variable], rates[memory_variable], n_shuffles, rng)
        ds = ds.merge(tem, compat="override", join="exact")
        attrs.update(tem.attrs, tem_grid_variable=grid_variable,
                     tem_memory_variable=memory_variable)
    ds.attrs = attrs
    return ds
