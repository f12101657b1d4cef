"""Spatial autocorrelograms (SACs) of rate maps, NaN-aware, by FFT, batched over maps."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._checks import MAP_DIMS, blockwise, check_maps
from .core import autocorr_block

#: Lags whose overlap holds fewer than this many bins that are finite in both copies of the
#: map get NaN: a Pearson correlation over a handful of bins is noise (over 2 bins it is
#: always +-1). 20 bins keep every lag of a 20 x 20 map out to 19 bins along an axis.
MIN_OVERLAP = 20

#: Output dims of an autocorrelogram, after the leading dims.
LAG_DIMS: tuple[str, str] = ("lag_y", "lag_x")


def check_min_overlap(min_overlap: object) -> int:
    """Validate ``min_overlap`` (an int >= 1)."""
    if (isinstance(min_overlap, bool) or not isinstance(min_overlap, (int, np.integer))
            or min_overlap < 1):
        raise ValueError(f"min_overlap must be an int >= 1; got {min_overlap!r}")
    return int(min_overlap)


def autocorrelogram(maps: xr.DataArray, min_overlap: int = MIN_OVERLAP) -> xr.DataArray:
    """Spatial autocorrelogram: Pearson correlation of each map with itself at every lag.

    For a lag ``tau = (lag_y, lag_x)`` the value is the Pearson correlation between
    ``map[p]`` and ``map[p + tau]`` over the bins p where both are finite (NaN bins are
    *excluded* from the overlap statistics, not zeroed; the DeepMind reference code zeroes
    them). Computed exactly by FFT (zero-padded, so no wrap-around) from the per-lag sums
    n, sum a, sum b, sum a^2, sum b^2, sum ab over the overlap (masked normalised
    cross-correlation). The result is symmetric, ``sac(tau) = sac(-tau)``, and 1 at lag 0.

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., "y", "x")
        Rate maps, NaN = unvisited; any leading dims (e.g. ``("env", "unit", "y", "x")``).
    min_overlap : int
        Lags with fewer overlapping finite bins than this get NaN (default ``MIN_OVERLAP``).

    Returns
    -------
    xarray.DataArray, dims (..., "lag_y", "lag_x")
        Sizes ``2 ny - 1`` and ``2 nx - 1``; integer lag coords in bins, from ``-(n - 1)``
        to ``n - 1``; centre (0, 0). NaN where the overlap has fewer than ``min_overlap``
        finite bins or zero variance in either copy (so a constant or all-NaN map gives
        an all-NaN SAC). Unitless.

    Raises
    ------
    ValueError
        If the last two dims are not ("y", "x") or ``min_overlap`` is not an int >= 1.
    """
    maps = check_maps(maps)
    min_overlap = check_min_overlap(min_overlap)
    ny, nx = maps.sizes["y"], maps.sizes["x"]
    out = xr.apply_ufunc(
        lambda a: blockwise(lambda b: (autocorr_block(b, min_overlap),), a, 2)[0],
        maps,
        input_core_dims=[list(MAP_DIMS)],
        output_core_dims=[list(LAG_DIMS)],
        dask="parallelized",
        output_dtypes=[np.float64],
        dask_gufunc_kwargs={"output_sizes": {"lag_y": 2 * ny - 1, "lag_x": 2 * nx - 1}},
    )
    out = out.assign_coords(
        lag_y=("lag_y", np.arange(-(ny - 1), ny), {"units": "bins"}),
        lag_x=("lag_x", np.arange(-(nx - 1), nx), {"units": "bins"}),
    )
    out.name = "sac"
    out.attrs = {
        "long_name": "spatial autocorrelogram (Pearson r per lag over overlapping finite bins)",
        "units": "1",
        "min_overlap": min_overlap,
        "nan_handling": "NaN bins excluded from each lag's overlap statistics (not zeroed)",
    }
    return out
