"""The analysis's shared numpy core: the array functions that several analysis modules build on.

Everything here is numpy (and scipy) in, numpy out: no xarray, no dims by name, no input
checks (the public, labelled functions that call these check their inputs and name the
dims). A block of maps is a ``(B, ny, nx)`` float array indexed ``[map, row = y, col = x]``,
NaN = unvisited; lengths are in bins. The modules that use them: the autocorrelogram
(:mod:`~hippo_rep.analysis.autocorr`), the grid and band scores
(:mod:`~hippo_rep.analysis.gridscore`, :mod:`~hippo_rep.analysis.bandscore`), smoothing
(:mod:`~hippo_rep.analysis.ratemaps`) and the shuffle nulls
(:mod:`~hippo_rep.analysis.shuffle`), place fields (:mod:`~hippo_rep.analysis.fields`),
remapping (:mod:`~hippo_rep.analysis.remapping`,
:mod:`~hippo_rep.analysis.session_remapping`) and :func:`~hippo_rep.analysis.analyse`.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import fft as sfft
from scipy import ndimage

#: Values within this fraction of their magnitude count as constant: a map's finite bins
#: (:func:`nan_reasons`), a row of :func:`pearson_rows`.
CONSTANT_RTOL = 1e-12

#: A lag of :func:`autocorr_block` whose overlap variance (sum of squared deviations, in units
#: of the map's own variance per bin) is at most this fraction of the number of finite bins
#: counts as zero variance and gets NaN (FFT round-off is ~1e-13 of it).
VARIANCE_RTOL = 1e-10

#: Smallest map side (bins) for which a grid or band score is computed; smaller maps get
#: NaN with reason "too_small" (:func:`too_small_block`).
MIN_MAP_SIZE = 5

#: Per-map reasons for a NaN grid or band score, coded by their index ("" = score defined).
NAN_REASONS: tuple[str, ...] = (
    "",
    "all_nan",
    "constant",
    "too_few_bins",
    "no_annulus",
    "no_central_field",
    "too_small",
)

#: 4-connectivity within each map of a (B, ny, nx) block and none across maps: the structure
#: of ``scipy.ndimage.label`` for place fields and the autocorrelogram's central field
#: (``PLANAR_CROSS[1]`` is the 2-d cross).
PLANAR_CROSS = np.zeros((3, 3, 3), dtype=bool)
PLANAR_CROSS[1] = ndimage.generate_binary_structure(2, 1)


# --------------------------------------------------------------------------------------------
# smoothing
# --------------------------------------------------------------------------------------------


def smooth_masked(
    values: np.ndarray, weights: np.ndarray | None, sigma: float, truncate: float
) -> np.ndarray:
    """Normalised (NaN-aware, optionally weighted) Gaussian convolution over the last two axes.

    Parameters
    ----------
    values : numpy.ndarray, shape (..., ny, nx)
        Maps; NaN = missing.
    weights : numpy.ndarray, broadcastable to ``values``, optional
        Weight per bin (e.g. occupancy); NaN or 0 = missing. None: every finite bin weighs 1.
    sigma : float
        Standard deviation in bins; 0 only masks the missing bins.
    truncate : float
        Kernel cut-off in standard deviations.

    Returns
    -------
    numpy.ndarray, shape of ``values``
        ``G * (w v) / G * w`` over the valid bins (finite, weight > 0); NaN where a bin is not
        valid or no weight reaches it. Same units as ``values``.
    """
    valid = np.isfinite(values)
    w = valid.astype(np.float64)
    if weights is not None:
        wt = np.where(np.isfinite(weights), weights, 0.0)
        w = w * np.broadcast_to(wt, values.shape)
        valid &= w > 0
    if sigma == 0:
        return np.where(valid, values, np.nan)
    sig = (0.0,) * (values.ndim - 2) + (sigma, sigma)
    num = ndimage.gaussian_filter(
        np.where(valid, values, 0.0) * w, sig, mode="constant", cval=0.0, truncate=truncate
    )
    den = ndimage.gaussian_filter(w, sig, mode="constant", cval=0.0, truncate=truncate)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.where(valid & (den > 0), out, np.nan)


# --------------------------------------------------------------------------------------------
# autocorrelograms and their lags
# --------------------------------------------------------------------------------------------


def lag_distance(ny: int, nx: int) -> np.ndarray:
    """Distance from lag 0 of every lag of an autocorrelogram of (ny, nx) maps.

    Parameters
    ----------
    ny, nx : int
        Map size in bins.

    Returns
    -------
    numpy.ndarray, shape (2 ny - 1, 2 nx - 1)
        In bins; entry [i, j] is the lag (i - (ny - 1), j - (nx - 1)) in (y, x).
    """
    ly = np.arange(-(ny - 1), ny, dtype=np.float64)[:, None]
    lx = np.arange(-(nx - 1), nx, dtype=np.float64)[None, :]
    return np.sqrt(ly**2 + lx**2)


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


def autocorr_block(maps: np.ndarray, min_overlap: int) -> np.ndarray:
    """Masked Pearson autocorrelogram of a block of maps (the numpy core of
    :func:`~hippo_rep.analysis.autocorrelogram`).

    Parameters
    ----------
    maps : numpy.ndarray, shape (B, ny, nx)
        Float maps, NaN = missing.
    min_overlap : int
        Lags with fewer overlapping finite bins get NaN.

    Returns
    -------
    numpy.ndarray, shape (B, 2 ny - 1, 2 nx - 1)
        Pearson r per lag (unitless); entry [b, i, j] is the lag (i - (ny - 1), j - (nx - 1))
        in (y, x). NaN where the overlap is too small or has zero variance
        (:data:`VARIANCE_RTOL`).
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
    """:func:`autocorr_block` for maps that are all NaN-free (``no_nan``) or not."""
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


# --------------------------------------------------------------------------------------------
# why a grid or band score is NaN
# --------------------------------------------------------------------------------------------


def nan_reason_code(reason: str) -> int:
    """The code of ``reason`` (its index in :data:`NAN_REASONS`)."""
    return NAN_REASONS.index(reason)


def nan_reasons(maps: np.ndarray, min_overlap: int) -> np.ndarray:
    """The reason code per map that no score can mend: no finite bin, constant, too few bins.

    Parameters
    ----------
    maps : numpy.ndarray, shape (B, ny, nx)
        Float maps, NaN = missing.
    min_overlap : int
        Fewest finite bins for a score.

    Returns
    -------
    numpy.ndarray of int64, shape (B,)
        Index into :data:`NAN_REASONS`: "all_nan", "constant" (finite bins within
        :data:`CONSTANT_RTOL` of their magnitude), "too_few_bins", or 0 ("").
    """
    finite = np.isfinite(maps)
    cnt = finite.sum(axis=(1, 2))
    with np.errstate(invalid="ignore"):
        hi = np.where(finite, maps, -np.inf).max(axis=(1, 2))
        lo = np.where(finite, maps, np.inf).min(axis=(1, 2))
        const = (hi - lo) <= CONSTANT_RTOL * np.maximum(np.abs(hi), np.abs(lo))
    code = np.zeros(maps.shape[0], dtype=np.int64)
    code[cnt < min_overlap] = nan_reason_code("too_few_bins")
    code[(cnt > 0) & const] = nan_reason_code("constant")
    code[cnt == 0] = nan_reason_code("all_nan")
    return code


def too_small_block(maps: np.ndarray, n_scores: int) -> tuple[np.ndarray, ...]:
    """The result of a grid or band block for maps under :data:`MIN_MAP_SIZE` bins a side.

    Parameters
    ----------
    maps : numpy.ndarray, shape (B, ny, nx)
        Float maps, NaN = missing.
    n_scores : int
        Float outputs of the block.

    Returns
    -------
    tuple of numpy.ndarray, shape (B,)
        ``n_scores`` all-NaN float arrays, then the reason code (int64): "too_small" unless
        :func:`nan_reasons` gives an earlier reason.
    """
    code = nan_reasons(maps, 1)
    code = np.where(code == 0, nan_reason_code("too_small"), code)
    return (*[np.full(maps.shape[0], np.nan) for _ in range(n_scores)], code)


# --------------------------------------------------------------------------------------------
# correlations and null summaries
# --------------------------------------------------------------------------------------------


def pearson_rows(a: np.ndarray, b: np.ndarray, min_n: int) -> np.ndarray:
    """Pearson r along the last axis over the entries finite in both.

    Parameters
    ----------
    a, b : numpy.ndarray, shape (..., n)
        Broadcast-compatible; NaN entries are skipped pairwise.
    min_n : int
        Fewest entries finite in both for an r.

    Returns
    -------
    numpy.ndarray, shape (...)
        r in [-1, 1], unitless; NaN where fewer than ``min_n`` entries are finite in both or
        either row is constant (variance within :data:`CONSTANT_RTOL` of its scale).
    """
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


def pair_correlations(rates: np.ndarray, pairs: np.ndarray, min_n: int) -> np.ndarray:
    """Per-row Pearson r of node rates between pairs of environments.

    Parameters
    ----------
    rates : numpy.ndarray, shape (..., env, node)
        Node rates, NaN = unvisited.
    pairs : numpy.ndarray of int, shape (P, 2)
        Environment positions (a, b) of each pair.
    min_n : int
        Fewest nodes finite in both environments for an r.

    Returns
    -------
    numpy.ndarray, shape (..., P)
        :func:`pearson_rows` of each pair (unitless).
    """
    if pairs.size == 0:
        return np.zeros(rates.shape[:-2] + (0,))
    a = rates[..., pairs[:, 0], :]
    b = rates[..., pairs[:, 1], :]
    return pearson_rows(a, b, min_n)


def null_summary_arrays(
    observed: np.ndarray, null: np.ndarray, quantiles: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Quantiles of null distributions and the observed scores' percentiles in them.

    Parameters
    ----------
    observed : numpy.ndarray, shape (...)
        Observed scores.
    null : numpy.ndarray, shape (..., S)
        Null scores, S shuffles; NaN ignored.
    quantiles : numpy.ndarray, shape (Q,)
        In [0, 1].

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The null's quantiles, shape (..., Q), in the scores' units; the percent of finite
        null scores below the observed one, shape (...) (NaN for a NaN score or an all-NaN
        null).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(null, quantiles, axis=-1)  # (Q, ...)
        fin = np.isfinite(null)
        n_fin = fin.sum(axis=-1)
        below = (fin & (null < observed[..., None])).sum(axis=-1)
        pct = np.where(np.isfinite(observed) & (n_fin > 0), 100.0 * below / n_fin, np.nan)
    return np.moveaxis(q, 0, -1), pct
