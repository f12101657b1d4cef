"""Band (stripe) scores of rate maps: how much of the autocorrelogram's periodicity lies
along one axis (conventions as in :mod:`hippo_rep.analysis`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import fft as sfft
from scipy import sparse

from ._checks import check_positive_number
from .autocorr import MIN_OVERLAP, check_min_overlap
from .core import MIN_MAP_SIZE, autocorr_block, lag_distance, nan_reasons, too_small_block
from .gridscore import NAN_REASON, NAN_REASON_DOC
from .kernels import Kernel, Output

#: Band score: half-width (degrees) of the orientation window over which spectral power is
#: summed.
BAND_HALF_WIDTH = 15.0

#: Band score: the autocorrelogram's spectrum is sampled on an FFT grid this many times finer
#: than the autocorrelogram itself.
BAND_FFT_PAD = 2


@dataclass(frozen=True)
class _BandGeometry:
    taper: np.ndarray  # (H, W) radial cos^2 taper of the SAC
    fft_shape: tuple[int, int]
    keep: np.ndarray  # flat indices of the kept wave vectors
    k_norm: np.ndarray  # (K,) |k| of kept wave vectors, cycles per bin
    onehot: sparse.csr_matrix  # (K, 180): 1-degree orientation bin of each kept wave vector


@functools.lru_cache(maxsize=16)
def _band_geometry(ny: int, nx: int) -> _BandGeometry:
    n = min(ny, nx)
    d = lag_distance(ny, nx)
    taper = np.where(d < n, np.cos(np.pi * d / (2 * n)) ** 2, 0.0)
    h, w = d.shape
    shape = (sfft.next_fast_len(BAND_FFT_PAD * h), sfft.next_fast_len(BAND_FFT_PAD * w))
    ky = sfft.fftfreq(shape[0])[:, None]
    kx = sfft.fftfreq(shape[1])[None, :]
    k = np.sqrt(ky**2 + kx**2)
    keep = np.flatnonzero((k >= 1.0 / n) & (k <= 0.5))
    ang = np.mod(np.rad2deg(np.arctan2(np.broadcast_to(ky, k.shape), kx)), 180.0).ravel()[keep]
    bins = np.floor(ang).astype(np.int64) % 180
    onehot = sparse.csr_matrix(
        (np.ones(keep.size), (np.arange(keep.size), bins)), shape=(keep.size, 180)
    )
    return _BandGeometry(taper, shape, keep, k.ravel()[keep], onehot)


def _band_block(maps: np.ndarray, min_overlap: int, half_width: float) -> tuple[np.ndarray, ...]:
    b, ny, nx = maps.shape
    if min(ny, nx) < MIN_MAP_SIZE:
        return too_small_block(maps, 3)
    code = nan_reasons(maps, min_overlap)
    sac = np.nan_to_num(autocorr_block(maps, min_overlap), nan=0.0)
    geo = _band_geometry(ny, nx)
    spec = np.abs(sfft.fft2(sac * geo.taper, s=geo.fft_shape)) ** 2
    power = spec.reshape(b, -1)[:, geo.keep]  # (B, K)
    per_deg = np.asarray((geo.onehot.T @ power.T).T)  # (B, 180)
    total = per_deg.sum(axis=1, keepdims=True)
    hw = int(round(half_width))
    window = np.zeros(180)
    window[np.r_[0 : hw + 1, 180 - hw : 180]] = 1.0
    # circular sum over +-half_width degrees, via FFT along the orientation axis
    win_pow = np.real(sfft.ifft(sfft.fft(per_deg, axis=1) * sfft.fft(window)[None, :], axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = win_pow / total
    others = np.maximum.reduce([np.roll(frac, -s, axis=1) for s in (60, 90, 120)])
    contrast = frac - others
    best = np.argmax(np.where(np.isfinite(contrast), contrast, -np.inf), axis=1)
    score = contrast[np.arange(b), best]
    orientation = best.astype(np.float64)
    # wavelength: power-weighted |k| over the strongest half of the orientation window
    ang_bin = np.asarray(geo.onehot.argmax(axis=1)).ravel()
    dang = np.abs((ang_bin[None, :] - best[:, None] + 90) % 180 - 90)
    in_win = dang <= hw
    pw = np.where(in_win, power, 0.0)
    strong = pw >= 0.5 * pw.max(axis=1, keepdims=True)
    wts = np.where(strong, pw, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        kbar = (wts * geo.k_norm[None, :]).sum(axis=1) / wts.sum(axis=1)
        wavelength = 1.0 / kbar
    bad = (code != 0) | ~np.isfinite(score)
    res = [np.where(bad, np.nan, a) for a in (score, orientation, wavelength)]
    return (*res, code)


def band_kernel(min_overlap: int = MIN_OVERLAP, half_width: float = BAND_HALF_WIDTH) -> Kernel:
    """The :class:`~hippo_rep.analysis.kernels.Kernel` of :func:`band_scores` (same
    arguments, checked here)."""
    min_overlap = check_min_overlap(min_overlap)
    half_width = check_positive_number(half_width, "half_width")
    if not 1 <= round(half_width) <= 29:
        raise ValueError(f"half_width must be between 1 and 29 degrees; got {half_width!r}")
    outputs = (
        Output("band_score", attrs={
            "long_name": "band score: D(theta*) - max(D(theta*+60), D(theta*+90), "
                         "D(theta*+120))", "units": "1"}),
        Output("band_orientation", attrs={
            "long_name": "wave-vector direction (normal to the stripes)",
            "units": "degrees from +x towards +y, in [0, 180)"}),
        Output("band_wavelength", attrs={"long_name": "distance between stripes",
                                         "units": "bins"}),
        NAN_REASON,
    )
    attrs = {
        "band_score_method": "orientation contrast of the tapered autocorrelogram's spectrum",
        "half_width_deg": float(half_width),
        "min_overlap": min_overlap,
        "nan_reason": NAN_REASON_DOC,
    }
    fn = functools.partial(_band_block, min_overlap=min_overlap, half_width=half_width)
    return Kernel(fn, outputs, attrs)


def band_scores(
    maps: xr.DataArray, min_overlap: int = MIN_OVERLAP, half_width: float = BAND_HALF_WIDTH
) -> xr.Dataset:
    """Band (stripe) score: how much of the autocorrelogram's periodicity lies along one axis.

    Definition. The spatial autocorrelogram (NaN-aware, NaN lags set to 0) is tapered by
    ``cos^2(pi d / 2N)`` for lag distance ``d < N`` (0 beyond; isotropic, so it favours no
    orientation), and its power spectrum ``S(k)`` is taken on a 2x finer FFT grid. Wave
    vectors with ``1/N <= |k| <= 1/2`` cycles per bin (periods between 2 bins and the map
    size) are binned by orientation (1-degree bins, modulo 180). ``D(theta)`` is the fraction
    of the kept power whose orientation lies within ``half_width`` degrees of ``theta``. The
    band score is ``max over theta of D(theta) - max(D(theta + 60), D(theta + 90),
    D(theta + 120))``: periodicity along one axis against the orthogonal and hexagonal
    alternatives. A plane-wave stripe scores near 1; a hexagonal grid (equal power at 60
    degrees) and a square grid (equal power at 90 degrees) near 0 or below; a place field
    (isotropic spectrum) near 0. Range [-1, 1].

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., "y", "x")
        Rate maps, NaN = unvisited; any leading dims.
    min_overlap : int
        Minimum overlapping finite bins per autocorrelogram lag.
    half_width : float
        Half-width of the orientation window, degrees (rounded to whole degrees).

    Returns
    -------
    xarray.Dataset
        ``band_score`` (unitless); ``band_orientation`` (degrees from +x towards +y, in
        [0, 180): direction of the wave vector, i.e. normal to the stripes);
        ``band_wavelength`` (bins: distance between neighbouring stripes, from the
        power-weighted mean |k| near the spectral peak); ``nan_reason`` as in
        :func:`grid_scores`.

    Raises
    ------
    ValueError
        On bad dims, ``min_overlap < 1`` or ``half_width`` outside [1, 29]. (Maps smaller
        than 5 bins along y or x get NaN, reason "too_small".)
    """
    return band_kernel(min_overlap, half_width).apply(maps)
