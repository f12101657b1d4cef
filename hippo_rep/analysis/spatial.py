"""Spatial information (Skaggs), sparsity and selectivity of rate maps.

All three reduce over the spatial dims (default ("y", "x"); ("node",) for per-node rates)
and handle NaN (unvisited) bins by leaving them out and renormalising the occupancy over the
remaining bins. They need non-negative activity: a map with any negative finite bin gets NaN
(shift or rectify such units first).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import xarray as xr

from ._checks import MAP_DIMS, check_dataarray


def _prepare(
    maps: xr.DataArray, occupancy: xr.DataArray | None, dims: Sequence[Hashable]
) -> tuple[xr.DataArray, xr.DataArray, list[Hashable], xr.DataArray]:
    """Return (rates with invalid bins 0, occupancy probabilities, dims, negative-map flag)."""
    maps = check_dataarray(maps, "maps")
    dims = [dims] if isinstance(dims, str) else list(dims)
    if not dims:
        raise ValueError("dims must name at least one spatial dim")
    missing = [d for d in dims if d not in maps.dims]
    if missing:
        raise ValueError(
            f"maps must have the spatial dims {tuple(dims)!r}; missing {missing!r} "
            f"(maps dims {tuple(maps.dims)!r})"
        )
    if not np.issubdtype(maps.dtype, np.number):
        raise ValueError(f"maps must hold numbers; got dtype {maps.dtype}")
    maps = maps.astype(np.float64)
    if occupancy is None:
        occ = xr.ones_like(maps)
    else:
        occ = check_dataarray(occupancy, "occupancy")
        missing = [d for d in dims if d not in occ.dims]
        if missing:
            raise ValueError(
                f"occupancy must have the spatial dims {tuple(dims)!r}; missing {missing!r}"
            )
        extra = [d for d in occ.dims if d not in maps.dims]
        if extra:
            raise ValueError(f"occupancy has dims {extra!r} that maps lacks")
        for d in dims:
            if occ.sizes[d] != maps.sizes[d]:
                raise ValueError(
                    f"occupancy and maps differ in size along {d!r}: "
                    f"{occ.sizes[d]} vs {maps.sizes[d]}"
                )
        occ = occ.astype(np.float64)
        if bool((occ < 0).any()):
            raise ValueError("occupancy must be non-negative")
    valid = maps.notnull() & occ.notnull() & (occ > 0)
    p = occ.where(valid, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = p / p.sum(dims)
    rates = maps.where(valid, 0.0)
    negative = (rates < 0).any(dims)
    return rates, p, dims, negative


def spatial_information(
    maps: xr.DataArray,
    occupancy: xr.DataArray | None = None,
    dims: Sequence[Hashable] = MAP_DIMS,
) -> xr.DataArray:
    """Skaggs spatial information in bits per unit activity (textbook form).

    ``I = sum_i p_i (r_i / r) log2(r_i / r)`` with ``p_i`` the occupancy probability of bin i,
    ``r_i`` its mean activity and ``r = sum_i p_i r_i``. Bins with ``r_i = 0`` contribute 0.
    Negative log terms (bins below the mean) are **kept**, not clipped to 0 as opexebo does,
    so values here are lower than opexebo's. Multiply by ``r`` for bits per unit time.

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., *dims)
        Mean activity per bin (>= 0), NaN = unvisited.
    occupancy : xarray.DataArray, optional
        Time (or samples) per bin, dims a subset of ``maps``' dims including ``dims``
        (e.g. (env, y, x) for maps (env, unit, y, x)); broadcast by name. Default: uniform
        over the finite bins (right for graph worlds with one bin per node and an even walk).
    dims : sequence of str
        Spatial dims to reduce over.

    Returns
    -------
    xarray.DataArray, dims (...)
        Bits per unit activity; 0 for a uniform map, ``log2 K`` for activity confined to one
        of K equally occupied bins. NaN where the mean activity is 0 (silent), no bin is
        valid, or any bin is negative.

    Raises
    ------
    ValueError
        On missing dims, mismatched sizes or negative occupancy.
    """
    rates, p, dims, negative = _prepare(maps, occupancy, dims)
    rbar = (p * rates).sum(dims)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = rates / rbar
        term = xr.where(ratio > 0, p * ratio * np.log2(ratio.where(ratio > 0, 1.0)), 0.0)
    out = term.sum(dims).where((rbar > 0) & ~negative)
    out.name = "spatial_info"
    out.attrs = {
        "long_name": "Skaggs spatial information (negative log terms kept)",
        "units": "bits per unit activity",
    }
    return out


def sparsity(
    maps: xr.DataArray,
    occupancy: xr.DataArray | None = None,
    dims: Sequence[Hashable] = MAP_DIMS,
) -> xr.DataArray:
    """Skaggs sparsity ``(sum_i p_i r_i)^2 / sum_i p_i r_i^2``.

    1 for a uniform map, ``1/K`` for activity confined to one of K equally occupied bins.

    Parameters
    ----------
    maps, occupancy, dims
        As in :func:`spatial_information`.

    Returns
    -------
    xarray.DataArray, dims (...)
        Unitless, in (0, 1]; NaN for silent or negative maps.
    """
    rates, p, dims, negative = _prepare(maps, occupancy, dims)
    m1 = (p * rates).sum(dims)
    m2 = (p * rates**2).sum(dims)
    out = (m1**2 / m2.where(m2 > 0)).where(~negative)
    out.name = "sparsity"
    out.attrs = {"long_name": "sparsity (sum p r)^2 / sum p r^2", "units": "1"}
    return out


def selectivity(
    maps: xr.DataArray,
    occupancy: xr.DataArray | None = None,
    dims: Sequence[Hashable] = MAP_DIMS,
) -> xr.DataArray:
    """Selectivity: peak activity over occupancy-weighted mean activity.

    Parameters
    ----------
    maps, occupancy, dims
        As in :func:`spatial_information`.

    Returns
    -------
    xarray.DataArray, dims (...)
        Unitless, >= 1 (1 for a uniform map, K for one of K equally occupied bins); NaN for
        silent or negative maps.
    """
    rates, p, dims, negative = _prepare(maps, occupancy, dims)
    rbar = (p * rates).sum(dims)
    peak = rates.where(p > 0).max(dims)
    out = (peak / rbar.where(rbar > 0)).where(~negative)
    out.name = "selectivity"
    out.attrs = {"long_name": "selectivity max / mean", "units": "1"}
    return out
