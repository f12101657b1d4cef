"""Spatial autocorrelograms (SACs) of rate maps, NaN-aware, by FFT, batched over maps."""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import fft as sfft

from ._checks import MAP_DIMS, blockwise, check_maps

#: Lags whose overlap holds fewer than this many bins that are finite in both copies of the
#: map get NaN: a Pearson correlation over a handful of bins is noise (over 2 bins it is
#: always +-1). 20 bins keep every lag of a 20 x 20 map out to 19 bins along an axis.
MIN_OVERLAP = 20

#: A lag whose overlap variance (sum of squared deviations, in units of the map's own
#: variance per bin) is at most this fraction of the number of finite bins counts as zero
#: variance and gets NaN (FFT round-off is ~1e-13 of it).
VARIANCE_RTOL = 1e-10

#: Output dims of an autocorrelogram, after the leading dims.
LAG_DIMS: tuple[str, str] = ("lag_y", "lag_x")


def _rect_sums(a: np.ndarray) -> np.ndarray:
    """For every lag tau, the sum of a(p) over the p with p + tau inside the map.

    a: (B, ny, nx) -> (B, 2 ny - 1, 2 nx - 1), via an integral image.
    """
    _, ny, nx = a.shape
    integral = np.zeros((a.shape[0], ny + 1, nx + 1))
    integral[:, 1:, 1:] = a.cumsum(axis=1).cumsum(axis=2)
    ly = np.arange(-(ny - 1), ny)
    lx = np.arange(-(nx - 1), nx)
    r0, r1 = np.maximum(0, -ly)[:, None], (ny - np.maximum(0, ly))[:, None]
    c0, c1 = np.maximum(0, -lx)[None, :], (nx - np.maximum(0, lx))[None, :]
    return integral[:, r1, c1] - integral[:, r0, c1] - integral[:, r1, c0] + integral[:, r0, c0]


def _autocorr_block(maps: np.ndarray, min_overlap: int) -> np.ndarray:
    """Masked Pearson autocorrelogram of a block of maps.

    Parameters
    ----------
    maps : (B, ny, nx) float array, NaN = missing
    min_overlap : int

    Returns
    -------
    (B, 2 ny - 1, 2 nx - 1) float array; entry [b, i, j] is the lag
    (i - (ny - 1), j - (nx - 1)) in (y, x).
    """
    b, ny, nx = maps.shape
    mask = np.isfinite(maps)
    full = mask.all(axis=(1, 2))
    if full.all() or not full.any():
        return _autocorr_maps(maps, mask, min_overlap, bool(full.all()))
    out = np.empty((b, 2 * ny - 1, 2 * nx - 1))
    out[full] = _autocorr_maps(maps[full], mask[full], min_overlap, True)
    out[~full] = _autocorr_maps(maps[~full], mask[~full], min_overlap, False)
    return out


def _autocorr_maps(
    maps: np.ndarray, mask: np.ndarray, min_overlap: int, no_nan: bool
) -> np.ndarray:
    """:func:`_autocorr_block` for maps that are all NaN-free (``no_nan``) or not."""
    _, ny, nx = maps.shape
    cnt = mask.sum(axis=(1, 2))
    safe_cnt = np.maximum(cnt, 1)[:, None, None]
    mean = np.where(mask, maps, 0.0).sum(axis=(1, 2))[:, None, None] / safe_cnt
    a = np.where(mask, maps - mean, 0.0)
    # scale to unit variance per bin: makes VARIANCE_RTOL meaningful and FFT error relative
    scale = np.sqrt((a * a).sum(axis=(1, 2))[:, None, None] / safe_cnt)
    a = a / np.where(scale > 0, scale, 1.0)
    shape = (sfft.next_fast_len(2 * ny - 1, real=True), sfft.next_fast_len(2 * nx - 1, real=True))
    iy = np.arange(-(ny - 1), ny) % shape[0]
    ix = np.arange(-(nx - 1), nx) % shape[1]

    def lagged(spec: np.ndarray) -> np.ndarray:
        # irfft2(conj(F) G)[tau] = sum_p f(p) g(p + tau)  (no wrap-around thanks to the padding)
        full = sfft.irfft2(spec, s=shape)
        return full[:, iy][:, :, ix]

    fa = sfft.rfft2(a, s=shape)
    s_ab = lagged(np.conj(fa) * fa)
    if no_nan:
        # the mask is all ones: the masked sums are rectangle sums (integral images)
        ly = ny - np.abs(np.arange(-(ny - 1), ny))
        lx = nx - np.abs(np.arange(-(nx - 1), nx))
        n = (ly[:, None] * lx[None, :]).astype(np.float64)[None]
        s_a = _rect_sums(a)  # sum a(p) over p with p + tau inside
        s_aa = _rect_sums(a * a)
    else:
        m = mask.astype(np.float64)
        fm = sfft.rfft2(m, s=shape)
        fa2 = sfft.rfft2(a * a, s=shape)
        n = np.rint(lagged(np.conj(fm) * fm))
        s_a = lagged(np.conj(fa) * fm)  # sum a(p) m(p + tau)
        s_aa = lagged(np.conj(fa2) * fm)
    s_b = s_a[:, ::-1, ::-1]  # sum m(p) a(p + tau) = s_a(-tau)
    s_bb = s_aa[:, ::-1, ::-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = s_ab - s_a * s_b / n
        var_a = s_aa - s_a * s_a / n
        var_b = s_bb - s_b * s_b / n
        r = cov / np.sqrt(var_a * var_b)
    tol = VARIANCE_RTOL * np.maximum(cnt, 1)[:, None, None]
    bad = (n < min_overlap) | ~(var_a > tol) | ~(var_b > tol)
    r = np.clip(r, -1.0, 1.0)
    r[bad] = np.nan
    return r


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
        lambda a: blockwise(lambda b: (_autocorr_block(b, min_overlap),), a, 2)[0],
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
