"""Rate maps: binning activity by position, graph-world nodes on a square grid, NaN-aware smoothing.

Conventions (whole package): maps are indexed ``[row = y, col = x]`` with dims ``("y", "x")``
last, row 0 at the smallest y (plot with ``origin="lower"``); lengths are in bins; unvisited
bins are NaN, never 0.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import xarray as xr
from scipy import sparse
from scipy.spatial import cKDTree

from ._checks import (
    MAP_DIMS,
    check_dataarray,
    check_maps,
    check_positive_number,
    leading_coords,
)
from .core import smooth_masked

#: Gaussian kernels are cut at this many standard deviations (scipy's default).
SMOOTH_TRUNCATE = 4.0

#: Default bin size, in node spacings, when graph nodes with non-integer coordinates (e.g. a
#: hexagonal lattice) are rasterised onto a square grid: 0.5 gives ~3.5 bins per hexagonal
#: node, fine enough to keep the lattice's true geometry, coarse enough to stay cheap.
NODE_RESOLUTION = 0.5

#: Default radius, in node spacings, within which a raster bin takes its nearest node's value.
#: Just above the circumradius of a hexagonal lattice's Voronoi cell (1/sqrt(3) = 0.577), so
#: every point inside the lattice is covered, and well below 1, so a missing node (a hole)
#: leaves NaN bins at its location.
NODE_RADIUS = 0.6

#: Two node coordinates closer than this (in node spacings) count as equal; coordinates
#: within this of an integer count as integer (square lattices get one bin per node).
NODE_COORD_ATOL = 1e-6


# --------------------------------------------------------------------------------------------
# smoothing
# --------------------------------------------------------------------------------------------


def smooth(
    maps: xr.DataArray,
    sigma: float,
    weights: xr.DataArray | None = None,
    truncate: float = SMOOTH_TRUNCATE,
) -> xr.DataArray:
    """NaN-aware Gaussian smoothing of rate maps by normalised convolution.

    ``out = G(v * w) / G(w)`` with ``G`` a Gaussian filter over ``("y", "x")`` (zero outside
    the map), ``v`` the map with NaN set to 0 and ``w`` the weight of each bin: 1 on finite
    bins (times ``weights`` if given), 0 on NaN bins. NaN bins (and bins of zero weight) stay
    NaN; no value leaks in from outside the map, so edges are not darkened.

    With ``weights`` = occupancy and ``v`` = mean activity per bin this is the classical
    occupancy-weighted smoothing ``G(activity sum) / G(occupancy)``.

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., "y", "x")
        Maps to smooth; any leading dims.
    sigma : float
        Standard deviation of the Gaussian, in bins. 0 returns the maps unchanged.
    weights : xarray.DataArray, optional
        Non-negative bin weights broadcastable against ``maps`` by dim name, dims ending in
        ("y", "x") (e.g. occupancy with dims (env, y, x)). NaN weights count as 0.
    truncate : float
        Kernel half-width in standard deviations.

    Returns
    -------
    xarray.DataArray
        Same dims, coords and name as ``maps``.

    Raises
    ------
    ValueError
        If dims are not ("y", "x")-last or ``sigma``/``truncate`` are negative.
    """
    maps = check_maps(maps)
    sigma = check_positive_number(sigma, "sigma", allow_zero=True)
    truncate = check_positive_number(truncate, "truncate")
    args = [maps]
    if weights is not None:
        weights = check_maps(weights, "weights")
        if float(weights.min(skipna=True).fillna(0)) < 0:
            raise ValueError("weights must be non-negative")
        extra = set(weights.dims) - set(maps.dims)
        if extra:
            raise ValueError(f"weights has dims {sorted(map(str, extra))} that maps lacks")
        maps_b, weights_b = xr.broadcast(maps, weights)
        args = [maps_b, weights_b.transpose(*maps_b.dims)]
    out = xr.apply_ufunc(
        lambda v, w=None: smooth_masked(v, w, sigma, truncate),
        *args,
        input_core_dims=[list(MAP_DIMS)] * len(args),
        output_core_dims=[list(MAP_DIMS)],
        dask="parallelized",
        output_dtypes=[np.float64],
        keep_attrs=True,
    )
    out = out.transpose(*maps.dims)
    out.attrs["smooth_sigma_bins"] = sigma
    return out


# --------------------------------------------------------------------------------------------
# binning helpers
# --------------------------------------------------------------------------------------------


def _split_dims(
    activity: xr.DataArray, pos_dims: Sequence[Hashable], time_dim: str, arg: str
) -> tuple[list[Hashable], list[Hashable]]:
    """Leading dims (shared with the positions, minus time) and unit dims (activity only)."""
    if time_dim not in activity.dims:
        raise ValueError(f"activity must have a {time_dim!r} dim; got {tuple(activity.dims)!r}")
    if time_dim not in pos_dims:
        raise ValueError(f"{arg} must have a {time_dim!r} dim; got {tuple(pos_dims)!r}")
    missing = [d for d in pos_dims if d not in activity.dims]
    if missing:
        raise ValueError(
            f"{arg} has dims {missing!r} that activity lacks; "
            f"activity dims {tuple(activity.dims)!r}"
        )
    for d in pos_dims:
        if d in MAP_DIMS:
            raise ValueError(f"{arg} must not have a dim named {d!r} (reserved for map axes)")
    lead = [d for d in activity.dims if d in pos_dims and d != time_dim]
    units = [d for d in activity.dims if d not in pos_dims]
    for d in units:
        if d in MAP_DIMS:
            raise ValueError(f"activity must not have a dim named {d!r} (reserved for map axes)")
    return lead, units


def _binned_sums(
    values: np.ndarray, flat_bin: np.ndarray, n_groups: int, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum values per (group, bin).

    Parameters
    ----------
    values : (L, T, U) float array (NaN = missing sample for that unit)
    flat_bin : (L, T) int array, bin index per sample in [0, n_bins), or -1 to skip it
    n_groups, n_bins : number of groups L and of bins

    Returns
    -------
    sums : (L, n_bins, U) sum of finite values
    counts : (L, n_bins, U) number of finite values
    occupancy : (L, n_bins) number of samples (regardless of NaN activity)
    """
    n_l, n_t, n_u = values.shape
    ok = flat_bin >= 0
    row = (np.arange(n_l)[:, None] * n_bins + flat_bin)[ok]
    col = np.broadcast_to(np.arange(n_l * n_t).reshape(n_l, n_t), ok.shape)[ok]
    onehot = sparse.csr_matrix(
        (np.ones(row.size), (row, col)), shape=(n_groups * n_bins, n_l * n_t)
    )
    flat_vals = values.reshape(n_l * n_t, n_u)
    finite = np.isfinite(flat_vals)
    sums = np.asarray(onehot @ np.where(finite, flat_vals, 0.0))
    counts = np.asarray(onehot @ finite.astype(np.float64))
    occupancy = np.bincount(row, minlength=n_groups * n_bins).astype(np.float64)
    return (
        sums.reshape(n_groups, n_bins, n_u),
        counts.reshape(n_groups, n_bins, n_u),
        occupancy.reshape(n_groups, n_bins),
    )


def _parse_bins(bins: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(bins, (int, np.integer)):
        ny = nx = int(bins)
    else:
        try:
            ny, nx = (int(b) for b in bins)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise ValueError(f"bins must be an int or a pair (n_y, n_x); got {bins!r}") from None
    if ny < 1 or nx < 1:
        raise ValueError(f"bins must be >= 1 along y and x; got {bins!r}")
    return ny, nx


def _parse_range(
    range_: Sequence[Sequence[float]] | None, x: np.ndarray, y: np.ndarray
) -> tuple[tuple[float, float], tuple[float, float]]:
    if range_ is None:
        fx, fy = x[np.isfinite(x)], y[np.isfinite(y)]
        if fx.size == 0 or fy.size == 0:
            raise ValueError("x and y have no finite positions; cannot infer range")
        out = []
        for f in (fy, fx):
            lo, hi = float(f.min()), float(f.max())
            if hi == lo:
                lo, hi = lo - 0.5, hi + 0.5
            out.append((lo, hi))
        return out[0], out[1]
    try:
        (y0, y1), (x0, x1) = ((float(a), float(b)) for a, b in range_)
    except (TypeError, ValueError):
        raise ValueError(
            f"range must be ((y_min, y_max), (x_min, x_max)); got {range_!r}"
        ) from None
    if not (np.isfinite([y0, y1, x0, x1]).all() and y1 > y0 and x1 > x0):
        raise ValueError(f"range must be finite with max > min along y and x; got {range_!r}")
    return (y0, y1), (x0, x1)


def _bin_index(v: np.ndarray, lo: float, hi: float, n: int) -> np.ndarray:
    """Bin index of each value on n equal bins over [lo, hi] (hi in the last bin); -1 outside."""
    with np.errstate(invalid="ignore"):
        idx = np.floor((v - lo) / (hi - lo) * n)
        idx = np.where(v == hi, n - 1, idx)
        ok = np.isfinite(idx) & (idx >= 0) & (idx < n)
    return np.where(ok, idx, -1).astype(np.int64)


# --------------------------------------------------------------------------------------------
# public: continuous positions
# --------------------------------------------------------------------------------------------


def rate_maps_from_positions(
    activity: xr.DataArray,
    x: xr.DataArray,
    y: xr.DataArray,
    bins: int | Sequence[int],
    range: Sequence[Sequence[float]] | None = None,
    smooth_sigma: float | None = None,
    time_dim: str = "time",
) -> xr.Dataset:
    """Mean activity per spatial bin (rate maps) from continuous positions.

    Parameters
    ----------
    activity : xarray.DataArray, dims (..., time, unit...)
        Activity per time step. Dims shared with ``x``/``y`` (other than ``time_dim``, e.g.
        ``env``) are *leading* dims: each of their entries has its own trajectory and
        occupancy. Dims that ``x``/``y`` lack (e.g. ``unit``, ``g_unit``, ``memory``) are
        *unit* dims. NaN activity is skipped for that unit only.
    x, y : xarray.DataArray, dims (..., time)
        Positions per time step, in the trajectory's length unit. Samples with a NaN
        position or outside ``range`` are dropped.
    bins : int or (int, int)
        Number of bins, the same along y and x, or ``(n_y, n_x)``.
    range : ((float, float), (float, float)), optional
        ``((y_min, y_max), (x_min, x_max))``; bins are equal divisions of these intervals
        (``x == x_max`` falls in the last bin). Default: the finite extent of ``x`` and ``y``.
    smooth_sigma : float, optional
        Gaussian smoothing in bins, occupancy-weighted:
        ``smooth(rate, sigma, weights=counts)``, i.e. ``G(activity sum) / G(counts)``;
        unvisited bins stay NaN. Default: no smoothing.
    time_dim : str
        Name of the time dim.

    Returns
    -------
    xarray.Dataset
        ``rate_map`` (leading..., unit..., y, x): mean activity per bin, NaN where unvisited;
        ``occupancy`` (leading..., y, x): number of samples per bin (0 where unvisited);
        coords ``y``, ``x`` at bin centres (position units); attrs ``x_edges``,
        ``y_edges``, ``smooth_sigma_bins``. Activity coords that do not depend on time are
        kept.

    Raises
    ------
    ValueError
        On missing or conflicting dims, bad ``bins``/``range``, or negative ``smooth_sigma``.
    """
    activity = check_dataarray(activity, "activity")
    x = check_dataarray(x, "x")
    y = check_dataarray(y, "y")
    x, y = xr.broadcast(x, y)
    lead, units = _split_dims(activity, x.dims, time_dim, "x and y")
    ny, nx = _parse_bins(bins)
    pos_order = [*lead, time_dim]
    xv = np.asarray(x.transpose(*pos_order).values, dtype=np.float64)
    yv = np.asarray(y.transpose(*pos_order).values, dtype=np.float64)
    (y0, y1), (x0, x1) = _parse_range(range, xv, yv)
    if activity.sizes[time_dim] != xv.shape[-1]:
        raise ValueError(
            f"activity and x/y disagree on {time_dim!r}: {activity.sizes[time_dim]} vs "
            f"{xv.shape[-1]}"
        )
    vals, lead_shape, unit_shape = _flatten_activity(activity, lead, time_dim, units)
    n_l, n_t, _ = vals.shape
    xv = xv.reshape(n_l, n_t)
    yv = yv.reshape(n_l, n_t)

    iy = _bin_index(yv, y0, y1, ny)
    ix = _bin_index(xv, x0, x1, nx)
    flat = np.where((iy >= 0) & (ix >= 0), iy * nx + ix, -1)
    sums, counts, occ = _binned_sums(vals, flat, n_l, ny * nx)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = sums / counts
    rate = np.where(counts > 0, rate, np.nan)
    # (L, bins, U) -> leading + units + (y, x)
    rate = np.moveaxis(rate, 1, -1).reshape(lead_shape + unit_shape + (ny, nx))
    counts = np.moveaxis(counts, 1, -1).reshape(lead_shape + unit_shape + (ny, nx))
    occ = occ.reshape(lead_shape + (ny, nx))

    x_edges = np.linspace(x0, x1, nx + 1)
    y_edges = np.linspace(y0, y1, ny + 1)
    coords: dict[Hashable, object] = dict(leading_coords(activity, [time_dim]))
    coords.update(leading_coords(x, [time_dim]))
    coords["x"] = ("x", (x_edges[:-1] + x_edges[1:]) / 2, {"long_name": "bin centre x"})
    coords["y"] = ("y", (y_edges[:-1] + y_edges[1:]) / 2, {"long_name": "bin centre y"})
    rate_da = xr.DataArray(rate, dims=[*lead, *units, *MAP_DIMS], coords=coords)
    sigma = 0.0
    if smooth_sigma is not None:
        sigma = check_positive_number(smooth_sigma, "smooth_sigma", allow_zero=True)
        if sigma > 0:
            counts_da = xr.DataArray(counts, dims=rate_da.dims)
            rate_da = smooth(rate_da, sigma, weights=counts_da)
    rate_da.attrs = {
        "long_name": "mean activity per spatial bin (NaN = unvisited)",
        "units": activity.attrs.get("units", "activity units"),
        "smooth_sigma_bins": sigma,
    }
    occ_da = xr.DataArray(
        occ,
        dims=[*lead, *MAP_DIMS],
        attrs={"long_name": "samples per spatial bin", "units": "samples"},
    )
    return xr.Dataset(
        {"rate_map": rate_da, "occupancy": occ_da},
        attrs={
            "x_edges": x_edges,
            "y_edges": y_edges,
            "smooth_sigma_bins": sigma,
            "map_convention": "indexed [row=y, col=x]; row 0 at the smallest y",
        },
    )


# --------------------------------------------------------------------------------------------
# public: graph nodes
# --------------------------------------------------------------------------------------------


def _node_raster(
    nx_: np.ndarray, ny_: np.ndarray, resolution: float | None, radius: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, bool]:
    """Assign each bin of a square raster to a node.

    Returns (node_map (ny, nx) int with -1 = no node, x centres, y centres, resolution,
    one_bin_per_node).
    """
    finite = np.isfinite(nx_) & np.isfinite(ny_)
    if not finite.all():
        raise ValueError("node_x and node_y must be finite for every node")
    pts = np.stack([nx_, ny_], axis=1)
    integer = bool(
        np.all(np.abs(nx_ - np.round(nx_)) < NODE_COORD_ATOL)
        and np.all(np.abs(ny_ - np.round(ny_)) < NODE_COORD_ATOL)
    )
    if resolution is None and integer:
        ix = np.round(nx_).astype(np.int64)
        iy = np.round(ny_).astype(np.int64)
        x_min, y_min = ix.min(), iy.min()
        shape = (iy.max() - y_min + 1, ix.max() - x_min + 1)
        node_map = np.full(shape, -1, dtype=np.int64)
        flat = (iy - y_min) * shape[1] + (ix - x_min)
        if np.unique(flat).size != flat.size:
            raise ValueError("node_x/node_y: two nodes share the same integer coordinates")
        node_map.ravel()[flat] = np.arange(nx_.size)
        xs = np.arange(x_min, x_min + shape[1], dtype=np.float64)
        ys = np.arange(y_min, y_min + shape[0], dtype=np.float64)
        return node_map, xs, ys, 1.0, True
    res = NODE_RESOLUTION if resolution is None else resolution
    tree = cKDTree(pts)
    if nx_.size > 1:
        d, _ = tree.query(pts, k=2)
        if np.any(d[:, 1] < NODE_COORD_ATOL):
            raise ValueError("node_x/node_y: two nodes share the same coordinates")
    pad = int(np.floor(radius / res + 1e-9))
    xs = nx_.min() + res * np.arange(-pad, int(np.floor((np.ptp(nx_)) / res + 1e-9)) + pad + 1)
    ys = ny_.min() + res * np.arange(-pad, int(np.floor((np.ptp(ny_)) / res + 1e-9)) + pad + 1)
    gx, gy = np.meshgrid(xs, ys)
    dist, idx = tree.query(np.stack([gx.ravel(), gy.ravel()], axis=1), k=1)
    node_map = np.where(dist <= radius + NODE_COORD_ATOL, idx, -1).reshape(gx.shape)
    return node_map.astype(np.int64), xs, ys, float(res), False


def rate_maps_from_nodes(
    activity: xr.DataArray,
    node: xr.DataArray,
    node_x: xr.DataArray | Sequence[float] | np.ndarray,
    node_y: xr.DataArray | Sequence[float] | np.ndarray,
    resolution: float | None = None,
    radius: float = NODE_RADIUS,
    time_dim: str = "time",
    node_dim: str = "node",
) -> xr.Dataset:
    """Rate maps for graph worlds: mean activity per node, placed on a square grid.

    Nodes with integer coordinates (square lattices) get one bin each (``resolution=None``).
    Otherwise (e.g. hexagonal lattices, node ``x = col + 0.5 * (row % 2)``,
    ``y = row * sqrt(3) / 2``) the true geometry is rasterised: bins of ``resolution`` node
    spacings, each bin takes the value of its nearest node when that node lies within
    ``radius`` (else NaN). A hexagonal node then covers ~3.5 bins at the default resolution;
    for spatial information or sparsity of such worlds prefer the per-node outputs
    ``node_rate``/``node_occupancy`` with ``dims=("node",)``, which weight each node once.

    Parameters
    ----------
    activity : xarray.DataArray, dims (..., time, unit...)
        Activity per step; dims shared with ``node`` other than ``time_dim`` are leading
        dims (e.g. ``env``), the others unit dims (e.g. ``g_unit``).
    node : xarray.DataArray of int, dims (..., time)
        Index (position in ``node_x``) of the node occupied at each step; negative = skip.
    node_x, node_y : array-like or xarray.DataArray, dims (node,)
        Coordinates of every node, in node spacings (1 = distance between neighbours); the
        same for every leading entry.
    resolution : float, optional
        Bin size in node spacings. Default: one bin per node when all coordinates are
        integers, else ``NODE_RESOLUTION`` (0.5).
    radius : float
        Largest bin-centre to node distance, in node spacings, at which a bin shows a node
        (only used when rasterising).
    time_dim, node_dim : str
        Names of the time dim and of the node dim of the outputs.

    Returns
    -------
    xarray.Dataset
        ``rate_map`` (leading..., unit..., y, x), NaN where no node or an unvisited node;
        ``occupancy`` (leading..., y, x): visits of the node each bin shows (0 if none);
        ``node_rate`` (leading..., unit..., node) and ``node_occupancy`` (leading..., node);
        ``node_map`` (y, x): node index shown by each bin (-1 = none); coords ``y``, ``x``
        (bin centres, node spacings), ``node_x``/``node_y`` on ``node``; attrs
        ``resolution`` (node spacings per bin), ``radius``, ``one_bin_per_node``.

    Raises
    ------
    ValueError
        On missing dims, node indices out of range, duplicate node coordinates,
        non-positive ``resolution``/``radius``.
    """
    activity = check_dataarray(activity, "activity")
    node = check_dataarray(node, "node")
    if not np.issubdtype(node.dtype, np.integer):
        if not np.issubdtype(node.dtype, np.floating) or not bool(
            np.all(node.isnull() | (node == np.round(node)))
        ):
            raise ValueError(f"node must hold integer node indices; got dtype {node.dtype}")
        node = node.fillna(-1).astype(np.int64)
    nx_ = np.asarray(getattr(node_x, "values", node_x), dtype=np.float64)
    ny_ = np.asarray(getattr(node_y, "values", node_y), dtype=np.float64)
    if nx_.ndim != 1 or ny_.ndim != 1 or nx_.shape != ny_.shape or nx_.size == 0:
        raise ValueError(
            "node_x and node_y must be 1-D with one entry per node and the same length; "
            f"got shapes {nx_.shape} and {ny_.shape}"
        )
    if resolution is not None:
        resolution = check_positive_number(resolution, "resolution")
    radius = check_positive_number(radius, "radius")
    n_node = nx_.size
    lead, units = _split_dims(activity, node.dims, time_dim, "node")
    if node_dim in activity.dims:
        raise ValueError(f"activity already has a dim named {node_dim!r}; pass another node_dim")
    if activity.sizes[time_dim] != node.sizes[time_dim]:
        raise ValueError(
            f"activity and node disagree on {time_dim!r}: {activity.sizes[time_dim]} vs "
            f"{node.sizes[time_dim]}"
        )
    idx = np.asarray(node.transpose(*lead, time_dim).values, dtype=np.int64)
    if idx.size and idx.max() >= n_node:
        raise ValueError(f"node holds index {int(idx.max())} but only {n_node} nodes are given")
    vals, lead_shape, unit_shape = _flatten_activity(activity, lead, time_dim, units)
    n_l, n_t, _ = vals.shape
    sums, counts, occ = _binned_sums(
        vals, np.where(idx < 0, -1, idx).reshape(n_l, n_t), n_l, n_node
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        node_rate = np.where(counts > 0, sums / counts, np.nan)  # (L, node, U)
    coords: dict[Hashable, object] = dict(leading_coords(activity, [time_dim]))
    coords.update(leading_coords(node, [time_dim]))
    return node_maps_dataset(
        np.moveaxis(node_rate, 1, -1).reshape(lead_shape + unit_shape + (n_node,)),
        occ.reshape(lead_shape + (n_node,)), nx_, ny_, [*lead], [*units], coords,
        resolution=resolution, radius=radius, node_dim=node_dim,
        units_attr=activity.attrs.get("units", "activity units"))


def node_maps_dataset(
    node_rate: np.ndarray,
    occupancy: np.ndarray,
    node_x: np.ndarray,
    node_y: np.ndarray,
    lead: Sequence[Hashable],
    units: Sequence[Hashable],
    coords: dict,
    resolution: float | None = None,
    radius: float = NODE_RADIUS,
    node_dim: str = "node",
    units_attr: str = "activity units",
) -> xr.Dataset:
    """The Dataset of :func:`rate_maps_from_nodes` from rates per node already formed (its
    second half, shared with callers that sum activity per node their own way, e.g. the
    sparse spike counts of a session).

    Parameters
    ----------
    node_rate : numpy.ndarray, (*lead, *units, node) float
        Mean activity per node (NaN = unvisited).
    occupancy : numpy.ndarray, (*lead, node) float
        Visits per node, steps.
    node_x, node_y : numpy.ndarray, (node,)
        Node coordinates, node spacings (checked by the caller).
    lead, units : sequences of dim names
        The leading dims (e.g. ``env``) and unit dims (e.g. ``unit``) of ``node_rate``.
    coords : dict
        Coords of the lead and unit dims (others are added here).
    resolution, radius, node_dim
        As in :func:`rate_maps_from_nodes` (``resolution`` checked by the caller).
    units_attr : str
        Unit of the activity.
    """
    lead, units = list(lead), list(units)
    n_node = node_x.size
    lead_shape = occupancy.shape[:-1]
    unit_shape = node_rate.shape[len(lead_shape):-1]
    n_l = int(np.prod(lead_shape, dtype=np.int64))
    n_u = int(np.prod(unit_shape, dtype=np.int64))
    node_rate = node_rate.reshape(n_l, n_u, n_node)  # (L, U, node)
    occ = occupancy.reshape(n_l, n_node)
    nx_, ny_ = node_x, node_y
    node_map, xs, ys, res, one_per_node = _node_raster(nx_, ny_, resolution, radius)
    has = node_map >= 0
    safe = np.where(has, node_map, 0)
    rate = np.where(has, node_rate[..., safe], np.nan)  # (L, U, ny, nx)
    occ_map = np.where(has, occ[:, safe], 0.0)  # (L, ny, nx)
    shape_yx = node_map.shape

    coords = dict(coords)
    coords["x"] = ("x", xs, {"long_name": "bin centre x", "units": "node spacings"})
    coords["y"] = ("y", ys, {"long_name": "bin centre y", "units": "node spacings"})
    coords["node_x"] = (node_dim, nx_)
    coords["node_y"] = (node_dim, ny_)
    return xr.Dataset(
        {
            "rate_map": (
                [*lead, *units, *MAP_DIMS],
                rate.reshape(lead_shape + unit_shape + shape_yx),
                {"long_name": "mean activity of the node shown by each bin", "units": units_attr},
            ),
            "occupancy": (
                [*lead, *MAP_DIMS],
                occ_map.reshape(lead_shape + shape_yx),
                {"long_name": "visits of the node shown by each bin", "units": "steps"},
            ),
            "node_rate": (
                [*lead, *units, node_dim],
                node_rate.reshape(lead_shape + unit_shape + (n_node,)),
                {"long_name": "mean activity per node (NaN = unvisited)", "units": units_attr},
            ),
            "node_occupancy": (
                [*lead, node_dim],
                occ.reshape(lead_shape + (n_node,)),
                {"long_name": "visits per node", "units": "steps"},
            ),
            "node_map": (
                list(MAP_DIMS),
                node_map,
                {"long_name": "node index shown by each bin (-1 = none)"},
            ),
        },
        coords=coords,
        attrs={
            "resolution": res,
            "radius": radius,
            "one_bin_per_node": int(one_per_node),
            "map_convention": "indexed [row=y, col=x]; row 0 at the smallest y; node spacings",
        },
    )


def _flatten_activity(activity: xr.DataArray, lead, time_dim, units):
    """Activity as float64 (n_lead, n_time, n_unit), with the lead and unit shapes."""
    act = activity.transpose(*lead, time_dim, *units)
    lead_shape = tuple(act.sizes[d] for d in lead)
    unit_shape = tuple(act.sizes[d] for d in units)
    n_l = int(np.prod(lead_shape, dtype=np.int64))
    n_u = int(np.prod(unit_shape, dtype=np.int64))
    vals = np.asarray(act.values, dtype=np.float64).reshape(n_l, act.sizes[time_dim], n_u)
    return vals, lead_shape, unit_shape
