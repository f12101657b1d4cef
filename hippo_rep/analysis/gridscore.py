"""Grid scores ("deepmind" and "bnt" families), grid spacing and orientation.

Two families of gridness are in use and disagree a lot on noisy maps; never compare scores
across methods. Every output names the method and its settings in its attrs. Conventions as
in :mod:`hippo_rep.analysis`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import ndimage, sparse, special

from ._checks import check_positive_number
from .autocorr import check_min_overlap
from .core import (
    MIN_MAP_SIZE,
    NAN_REASONS,
    PLANAR_CROSS,
    autocorr_block,
    lag_distance,
    nan_reason_code,
    nan_reasons,
    smooth_masked,
    too_small_block,
)
from .kernels import Kernel, Output
from .methods import DEEPMIND_MIN_OVERLAP, DEFAULT_GRID_METHOD, GRID_METHODS, grid_method
from .ratemaps import SMOOTH_TRUNCATE

# --------------------------------------------------------------------------------------------
# defaults
# --------------------------------------------------------------------------------------------

#: Rotation angles (degrees) at which the autocorrelogram is compared with itself.
GRID_ANGLES: tuple[int, ...] = (30, 45, 60, 90, 120, 135, 150)

#: "deepmind": inner radius of every ring, as a fraction of the map size N (bins).
DEEPMIND_INNER = 0.2

#: "deepmind": outer radii of the candidate rings, as fractions of N: linspace(0.4, 1.0, 10).
DEEPMIND_OUTERS: tuple[float, ...] = tuple(np.linspace(0.4, 1.0, 10).tolist())

#: "deepmind": added to each ring's variance before dividing (as in the reference code).
DEEPMIND_VARIANCE_EPS = 1e-5

#: "deepmind": spline order of the SAC rotation (cubic, scipy.ndimage.rotate's default).
DEEPMIND_ROTATION_ORDER = 3

#: "bnt": the autocorrelogram is cropped (as opexebo's ``autocorrelation`` does) to
#: ``round(N (1 + this))`` lags per axis (made odd); the largest outer radius tried is half
#: of that side, ~0.9 N.
BNT_CROP_OVERLAP = 0.8

#: "bnt": thresholds (fractions of the central peak) of the central field's expansion:
#: (first, last, step), as opexebo's ``place_field`` with ``init_thresh=0.95``.
BNT_FIELD_THRESHOLDS: tuple[float, float, float] = (0.95, 0.2, 0.02)

#: "bnt": a central field needs at least this many bins (opexebo's ``min_bins=5`` for it);
#: its radius is ``floor(sqrt(area / pi))`` and a radius of 0 means no score.
BNT_CENTRE_MIN_BINS = 5

#: "bnt": the smallest outer radius tried, in bins.
BNT_MIN_RADIUS = 3

#: "bnt": the score is the maximum of the moving mean over this many consecutive radii.
BNT_MOVING_WINDOW = 3

#: "bnt": spline order of the SAC rotation (bilinear, as in BNT).
BNT_ROTATION_ORDER = 1

#: Spacing and orientation use this many autocorrelogram peaks nearest to lag 0.
N_PEAKS = 6

#: Spacing and orientation are NaN when fewer peaks than this are found.
MIN_PEAKS = 3

#: The ``nan_reason`` attr of the grid and band scores: what each reason code means.
NAN_REASON_DOC = (
    "'all_nan': no finite bin; 'constant': all finite bins equal; 'too_few_bins': fewer "
    "finite bins than min_overlap; 'no_annulus' (bnt only): the central field of the "
    "autocorrelogram reaches beyond the largest radius, or no radius gives a correlation; "
    "'no_central_field' (bnt only): the autocorrelogram's central field has fewer than "
    f"{BNT_CENTRE_MIN_BINS} bins (radius 0: opexebo returns NaN there too); 'too_small': "
    f"the map has fewer than {MIN_MAP_SIZE} bins along y or x"
)


#: The ``nan_reason`` output of the grid and band kernels (codes into :data:`NAN_REASONS`).
NAN_REASON = Output("nan_reason", dtype=np.int64, labels=NAN_REASONS,
                    attrs={"long_name": "why the scores are NaN ('' = defined)"})


# --------------------------------------------------------------------------------------------
# geometry: lag grids, rings, rotation operators (cached per map shape)
# --------------------------------------------------------------------------------------------


def _rotation_operator(
    shape: tuple[int, int], angles: tuple[int, ...], order: int, points: np.ndarray
) -> sparse.csr_matrix:
    """Exact linear operator of ``scipy.ndimage.rotate(img, angle, reshape=False, order)``.

    For ``order > 1`` it acts on the spline coefficients (``spline_filter1d`` along both
    axes, mode "constant"), for ``order <= 1`` on the image itself. Row ``p * A + a``: output
    point ``points[p]`` rotated by ``angles[a]``; columns: flat input indices. Built by
    probing scipy's own interpolation with combs of unit coefficients 8 bins apart: an output
    point only reads coefficients within [floor(c) - 3, floor(c) + 4] of its source
    coordinate c along each axis, so each probe reaches it through one coefficient at most.
    """
    h, w = shape
    rr, cc = np.unravel_index(points, shape)
    stride = 8
    rows, cols, vals = [], [], []
    for ia, angle in enumerate(angles):
        c, s = special.cosdg(angle), special.sindg(angle)
        mat = np.array([[c, s], [-s, c]])  # as in scipy.ndimage.rotate
        centre = (np.array(shape, dtype=np.float64) - 1) / 2
        src = mat @ np.stack([rr, cc]).astype(np.float64) + (centre - mat @ centre)[:, None]
        fr = np.clip(np.floor(src[0]), 0, h - 1).astype(np.int64)
        fc = np.clip(np.floor(src[1]), 0, w - 1).astype(np.int64)
        for a in range(stride):
            jr = fr - 3 + (a - (fr - 3)) % stride
            for b in range(stride):
                jc = fc - 3 + (b - (fc - 3)) % stride
                probe = np.zeros(shape)
                probe[a::stride, b::stride] = 1.0
                out = ndimage.rotate(
                    probe, angle, reshape=False, order=order, prefilter=False, mode="constant"
                ).ravel()[points]
                nz = np.flatnonzero(out)
                if nz.size == 0:
                    continue
                if np.any((jr[nz] < 0) | (jr[nz] >= h) | (jc[nz] < 0) | (jc[nz] >= w)):
                    raise RuntimeError("rotation operator probe out of range (scipy changed?)")
                rows.append(nz * len(angles) + ia)
                cols.append(jr[nz] * w + jc[nz])
                vals.append(out[nz])
    return sparse.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(len(angles) * points.size, h * w),
    )


def _rotate_points(sac: np.ndarray, op: sparse.csr_matrix, order: int, n_angles: int) -> np.ndarray:
    """Rotated SAC values at the operator's points: (B, H, W) -> (P, n_angles, B)."""
    b = sac.shape[0]
    if order > 1:
        coef = ndimage.spline_filter1d(sac, order, axis=1, mode="constant", output=np.float64)
        coef = ndimage.spline_filter1d(coef, order, axis=2, mode="constant", output=np.float64)
    else:
        coef = sac
    rhs = np.ascontiguousarray(coef.reshape(b, -1).T)  # (H * W, B)
    return np.asarray(op @ rhs).reshape(-1, n_angles, b)


@dataclass(frozen=True)
class _DeepmindGeometry:
    points: np.ndarray  # (P,) flat SAC indices with inner < d <= largest outer
    rings: np.ndarray  # (K, P) 0/1 ring membership
    ring_size: np.ndarray  # (K,)
    outer: np.ndarray  # (K,) outer radii in bins
    op: sparse.csr_matrix  # (A * P, H * W)


@functools.lru_cache(maxsize=16)
def _deepmind_geometry(ny: int, nx: int) -> _DeepmindGeometry:
    n = min(ny, nx)
    d = lag_distance(ny, nx).ravel()
    inner = DEEPMIND_INNER * n
    outer = np.asarray(DEEPMIND_OUTERS) * n
    points = np.flatnonzero((d > inner) & (d <= outer.max()))
    rings = (d[points][None, :] <= outer[:, None]).astype(np.float64)
    size = rings.sum(axis=1)
    if np.any(size == 0):
        raise ValueError(f"maps of {ny} x {nx} bins are too small for ring masks")
    op = _rotation_operator((2 * ny - 1, 2 * nx - 1), GRID_ANGLES, DEEPMIND_ROTATION_ORDER, points)
    return _DeepmindGeometry(points, rings, size, outer, op)


@dataclass(frozen=True)
class _BntGeometry:
    points: np.ndarray  # (P,) flat SAC indices with d < outer_bound
    sq_dist: np.ndarray  # (U,) sorted unique squared distances of the points
    cumulative: np.ndarray  # (U, P) 0/1: point's squared distance <= sq_dist[u]
    outer_bound: int  # largest outer radius: half the side of opexebo's SAC crop
    op: sparse.csr_matrix


@functools.lru_cache(maxsize=16)
def _bnt_geometry(ny: int, nx: int) -> _BntGeometry:
    outer = min(_bnt_crop_half(ny), _bnt_crop_half(nx))
    ly = np.arange(-(ny - 1), ny)[:, None]
    lx = np.arange(-(nx - 1), nx)[None, :]
    sq = (ly**2 + lx**2).ravel()
    points = np.flatnonzero(sq < outer**2)
    sq_pts = sq[points]
    uniq = np.unique(sq_pts)
    cumulative = (sq_pts[None, :] <= uniq[:, None]).astype(np.float64)
    op = _rotation_operator((2 * ny - 1, 2 * nx - 1), GRID_ANGLES, BNT_ROTATION_ORDER, points)
    return _BntGeometry(points, uniq, cumulative, outer, op)


# --------------------------------------------------------------------------------------------
# per-map pieces
# --------------------------------------------------------------------------------------------


def _gridness(corr: np.ndarray, min_max: bool, angles: tuple[int, ...] = GRID_ANGLES
              ) -> tuple[np.ndarray, np.ndarray]:
    """Gridness-60 and -90 from correlations with the angle axis (``angles``) at position 1
    (gridness-90 None unless ``angles`` has 45 and 135)."""

    def r(a: int) -> np.ndarray:
        return corr[:, angles.index(a)]

    if min_max:
        g60 = np.minimum(r(60), r(120)) - np.maximum(np.maximum(r(30), r(90)), r(150))
    else:
        g60 = (r(60) + r(120)) / 2 - (r(30) + r(90) + r(150)) / 3
    if 45 not in angles:
        return g60, None
    return g60, r(90) - (np.maximum(r(45), r(135)) if min_max else (r(45) + r(135)) / 2)


def _sac_peaks(sac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spacing and orientation from the N_PEAKS local maxima of the SAC nearest lag 0.

    sac: (B, H, W), NaN allowed. Local maxima: equal to the maximum of their 3 x 3
    neighbourhood and > 0, lag 0 excluded; positions refined to sub-bin precision by a
    parabola through each peak and its two neighbours along y and along x.
    """
    b, h, w = sac.shape
    v = np.where(np.isfinite(sac), sac, -np.inf)
    mf = ndimage.maximum_filter(v, size=(1, 3, 3), mode="constant", cval=-np.inf)
    cy, cx = (h - 1) // 2, (w - 1) // 2
    peak = (v == mf) & (v > 0)
    peak[:, cy, cx] = False
    d = lag_distance((h + 1) // 2, (w + 1) // 2).ravel()
    dd = np.where(peak.reshape(b, -1), d[None, :], np.inf)
    k = min(N_PEAKS, dd.shape[1])
    idx = np.argpartition(dd, k - 1, axis=1)[:, :k]
    ok = np.isfinite(np.take_along_axis(dd, idx, axis=1))
    iy, ix = np.divmod(idx, w)
    bi = np.arange(b)[:, None]
    centre = v[bi, iy, ix]

    def offset(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        den = lo - 2 * centre + hi
        with np.errstate(invalid="ignore", divide="ignore"):
            off = (lo - hi) / (2 * den)
        good = np.isfinite(lo) & np.isfinite(hi) & (den < 0) & np.isfinite(off)
        return np.where(good, np.clip(off, -0.5, 0.5), 0.0)

    # the neighbours along y and x (-inf beyond the SAC's edge)
    up = np.where(iy > 0, v[bi, np.clip(iy - 1, 0, h - 1), ix], -np.inf)
    dn = np.where(iy < h - 1, v[bi, np.clip(iy + 1, 0, h - 1), ix], -np.inf)
    lf = np.where(ix > 0, v[bi, iy, np.clip(ix - 1, 0, w - 1)], -np.inf)
    rt = np.where(ix < w - 1, v[bi, iy, np.clip(ix + 1, 0, w - 1)], -np.inf)
    py = iy - cy + offset(up, dn)
    px = ix - cx + offset(lf, rt)
    dist = np.where(ok, np.hypot(py, px), np.nan)
    theta = np.arctan2(py, px)
    n_ok = ok.sum(axis=1)
    enough = n_ok >= MIN_PEAKS
    with np.errstate(invalid="ignore"):
        spacing = np.where(
            enough, np.nanmedian(np.where(enough[:, None], dist, 0.0), axis=1), np.nan
        )
    z = np.where(ok, np.exp(6j * theta), 0).sum(axis=1)
    orientation = np.mod(np.rad2deg(np.angle(z)) / 6, 60.0)
    orientation = np.where(enough, orientation, np.nan)
    return spacing, orientation


def _ring_corr(sac: np.ndarray, geo: _DeepmindGeometry, op: sparse.csr_matrix, n_a: int
               ) -> np.ndarray:
    """"deepmind" ring correlations (B, A, K) of SACs (B, H, W) with their rotations by the
    ``n_a`` angles of ``op`` (rows point-major, as :func:`_rotation_operator`)."""
    b = sac.shape[0]
    rot = _rotate_points(sac, op, DEEPMIND_ROTATION_ORDER, n_a)  # (P, A, B)
    s = np.ascontiguousarray(sac.reshape(b, -1).T)[geo.points]  # (P, B)
    rings = geo.rings  # (K, P)
    n = geo.ring_size[:, None]  # (K, 1)
    s1 = rings @ s  # (K, B)
    mean = s1 / n
    var = (rings @ (s * s)) / n - mean**2 + DEEPMIND_VARIANCE_EPS
    sr = (rings @ (rot * s[:, None, :]).reshape(s.shape[0], -1)).reshape(-1, n_a, b)
    r1 = (rings @ rot.reshape(s.shape[0], -1)).reshape(-1, n_a, b)  # (K, A, B)
    m = mean[:, None, :]
    cross = (sr - m * r1 - m * s1[:, None, :]) / n[:, None] + m**2
    return (cross / var[:, None, :]).transpose(2, 1, 0)


def _deepmind_sac(maps: np.ndarray, min_overlap: int, smooth_sigma: float) -> np.ndarray:
    src = smooth_masked(maps, None, smooth_sigma, SMOOTH_TRUNCATE) if smooth_sigma else maps
    return np.nan_to_num(autocorr_block(src, min_overlap), nan=0.0)


def _deepmind_block(
    maps: np.ndarray, min_overlap: int, min_max: bool, smooth_sigma: float
) -> tuple[np.ndarray, ...]:
    _, ny, nx = maps.shape
    code = nan_reasons(maps, min_overlap)
    sac = _deepmind_sac(maps, min_overlap, smooth_sigma)
    geo = _deepmind_geometry(ny, nx)
    g60, g90 = _gridness(_ring_corr(sac, geo, geo.op, len(GRID_ANGLES)), min_max)  # (B, K)
    k60, k90 = np.argmax(g60, axis=1), np.argmax(g90, axis=1)
    spacing, orientation = _sac_peaks(sac)
    bad = code != 0
    res = [g60.max(axis=1), g90.max(axis=1), spacing, orientation, geo.outer[k60],
           geo.outer[k90]]
    res = [np.where(bad, np.nan, a) for a in res]
    return (*res, code)


#: Angles gridness-60 needs (:func:`gridness_60_block`).
_G60_ANGLES = (30, 60, 90, 120, 150)


@functools.lru_cache(maxsize=16)
def _g60_operator(ny: int, nx: int) -> sparse.csr_matrix:
    geo = _deepmind_geometry(ny, nx)
    n_a = len(GRID_ANGLES)
    sel = np.array([GRID_ANGLES.index(a) for a in _G60_ANGLES])
    return geo.op[(np.arange(geo.points.size)[:, None] * n_a + sel[None, :]).ravel()]


def gridness_60_block(maps: np.ndarray) -> tuple[np.ndarray]:
    """"deepmind" gridness-60 (mean form, no smoothing, default overlap) of (B, ny, nx) maps:
    :func:`grid_scores`' computation restricted to the five angles it needs, without
    spacing and orientation (about twice as fast; the shuffle nulls use it)."""
    b, ny, nx = maps.shape
    if min(ny, nx) < MIN_MAP_SIZE:  # too small for a score (grid_scores: "too_small")
        return (np.full(b, np.nan),)
    code = nan_reasons(maps, DEEPMIND_MIN_OVERLAP)
    sac = _deepmind_sac(maps, DEEPMIND_MIN_OVERLAP, 0.0)
    corr = _ring_corr(sac, _deepmind_geometry(ny, nx), _g60_operator(ny, nx), len(_G60_ANGLES))
    g60 = _gridness(corr, False, _G60_ANGLES)[0]
    return (np.where(code != 0, np.nan, g60.max(axis=1)),)


#: The kernel of :func:`gridness_60_block` (its output's attrs are set by its users).
GRIDNESS_60 = Kernel(gridness_60_block, (Output("gridness_60"),))


def _bnt_crop_half(n: int) -> int:
    """Half-width (lags) of opexebo's autocorrelogram crop of a map n bins long."""
    size = int(np.round(n * (1 + BNT_CROP_OVERLAP)))
    if size % 2 == 0:
        size -= 1
    return size // 2


def _bnt_central_area(sac: np.ndarray) -> np.ndarray:
    """Area (bins) of the central field of each SAC, as opexebo's ``place_field`` finds it.

    ``sac``: (B, H, W) with odd H, W, lag 0 at the centre, cropped as opexebo crops it, no
    NaN. The SAC is normalised by its maximum and opened by reconstruction (erosion by a
    3 x 3 cross, then greyscale reconstruction by dilation with a 3 x 3 square), as
    opexebo does before field detection. The field is the 4-connected region around lag 0
    above ``t x`` the (opened) centre value, for t from 0.95 down to 0.2 in steps of 0.02;
    the expansion stops (keeping the last area) at the first threshold where the field
    gets a hole, where its growth ratio exceeds 3x the ratio between the first two
    thresholds, or after 3 successive decreases or 10 unchanged steps. Returns 0 where the
    first two thresholds already give a hole or the field has fewer than 5 bins.
    """
    b, h, w = sac.shape
    cy, cx = h // 2, w // 2
    peak = sac.max(axis=(1, 2), keepdims=True)
    img = sac / np.where(peak > 0, peak, 1.0)
    cross = PLANAR_CROSS[1][None]
    square = np.ones((1, 3, 3), dtype=bool)
    fmap = ndimage.grey_erosion(img, footprint=cross, mode="nearest")
    for _ in range(h * w):  # greyscale reconstruction by dilation (converges long before)
        nxt = np.minimum(ndimage.grey_dilation(fmap, footprint=square, mode="nearest"), img)
        if np.array_equal(nxt, fmap):
            break
        fmap = nxt
    centre_val = fmap[:, cy, cx][:, None, None]

    def field(t: float) -> tuple[np.ndarray, np.ndarray]:
        lab, _ = ndimage.label(fmap >= t * centre_val, structure=PLANAR_CROSS)
        comp = lab == lab[:, cy, cx][:, None, None]
        filled = ndimage.binary_fill_holes(comp, structure=PLANAR_CROSS)
        return comp.sum(axis=(1, 2)).astype(np.float64), (filled & ~comp).any(axis=(1, 2))

    start, stop, step = BNT_FIELD_THRESHOLDS
    thresholds = np.round(np.linspace(start, stop, int((start - stop) / step) + 1), 2)
    a1, bad1 = field(thresholds[0])
    a2, bad2 = field(thresholds[0] - step)
    initial = a2 / a1
    alive = ~(bad1 | bad2)
    last = np.where(alive, a2, 0.0)
    n_dec = np.zeros(b, dtype=np.int64)
    n_same = np.zeros(b, dtype=np.int64)
    for t in thresholds:
        if not alive.any():
            break
        area, hole = field(t)
        alive &= ~hole
        change = area / np.where(last > 0, last, 1.0)
        n_dec = np.where(change < 1, n_dec + 1, 0)
        ok = (np.floor(change / initial) <= 2) & (n_dec < 3)
        n_same = np.where(ok & (change == 1), n_same + 1, np.where(ok, 0, n_same))
        ok &= n_same < 10
        grow = alive & ok
        last = np.where(grow, area, last)
        alive &= ok
    return np.where(last >= BNT_CENTRE_MIN_BINS, last, 0.0)


def _bnt_block(
    maps: np.ndarray, min_overlap: int, min_max: bool, smooth_sigma: float
) -> tuple[np.ndarray, ...]:
    b, ny, nx = maps.shape
    code = nan_reasons(maps, min_overlap)
    src = smooth_masked(maps, None, smooth_sigma, SMOOTH_TRUNCATE) if smooth_sigma else maps
    sac = np.nan_to_num(autocorr_block(src, min_overlap), nan=0.0)
    geo = _bnt_geometry(ny, nx)
    hy, hx = _bnt_crop_half(ny), _bnt_crop_half(nx)
    crop = sac[:, ny - 1 - hy : ny + hy, nx - 1 - hx : nx + hx]
    r_c = np.floor(np.sqrt(_bnt_central_area(crop) / np.pi))
    outer = geo.outer_bound

    # annulus sums over r_c < d < R via cumulative sums over sorted squared distances
    n_a = len(GRID_ANGLES)
    rot = _rotate_points(sac, geo.op, BNT_ROTATION_ORDER, n_a)  # (P, A, B)
    n_p = rot.shape[0]
    x = np.ascontiguousarray(sac.reshape(b, -1).T)[geo.points]  # (P, B)
    cum = geo.cumulative  # (U, P)

    def csum(a: np.ndarray) -> np.ndarray:
        # cumulative sums over squared distance with a leading zero row: (U + 1, A or 1, B)
        out = (cum @ a.reshape(n_p, -1)).reshape((-1,) + a.shape[1:])
        if out.ndim == 2:
            out = out[:, None, :]
        return np.concatenate([np.zeros((1,) + out.shape[1:]), out], axis=0)

    sx, sxx = csum(x), csum(x * x)
    sy, syy = csum(rot), csum(rot * rot)
    sxy = csum(rot * x[:, None, :])
    cnt = np.concatenate([[0.0], cum.sum(axis=1)])[:, None, None]  # (U + 1, 1, 1)
    radii = np.arange(1, outer + 1)
    j_r = np.searchsorted(geo.sq_dist, radii**2, side="left")  # rows with d^2 < R^2
    j_c = np.searchsorted(geo.sq_dist, r_c**2, side="right")  # rows with d^2 <= r_c^2

    def ann(s: np.ndarray) -> np.ndarray:
        # sums over the annulus r_c < d < R: (U + 1, A', B') -> (R, A', B)
        s = np.broadcast_to(s, s.shape[:2] + (b,))
        lo = np.take_along_axis(s, np.broadcast_to(j_c[None, None, :], (1,) + s.shape[1:]), 0)
        return s[j_r] - lo

    n = ann(cnt)
    ax, axx, ay, ayy, axy = ann(sx), ann(sxx), ann(sy), ann(syy), ann(sxy)
    with np.errstate(invalid="ignore", divide="ignore"):
        num = n * axy - ax * ay
        den = np.sqrt(np.clip(n * axx - ax**2, 0, None) * np.clip(n * ayy - ay**2, 0, None))
        corr = np.where((n >= 2) & (den > 1e-12 * np.maximum(n, 1) ** 2), num / den, np.nan)
    corr = corr.transpose(2, 1, 0)  # (B, A, R)
    g60, g90 = _gridness(corr, min_max)  # (B, R): index R - 1

    out60, out90 = np.full(b, np.nan), np.full(b, np.nan)
    rad60, rad90 = np.full(b, np.nan), np.full(b, np.nan)
    win = BNT_MOVING_WINDOW
    for i in range(b):
        c = int(r_c[i])
        if c == 0 or outer < c or outer - c < 1:
            continue
        rs = np.linspace(max(BNT_MIN_RADIUS, c + 1), outer, outer - c).astype(int)
        for g, out, rad in ((g60, out60, rad60), (g90, out90, rad90)):
            gi = g[i, rs - 1]
            if not np.isfinite(gi).any():
                continue
            steps = max(rs.size - win, 1)  # opexebo: windows starting at 0 .. n - win - 1
            if steps == 1:
                out[i], rad[i] = np.nanmean(gi), rs[rs.size // 2]
                continue
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                mm = np.array([np.nanmean(gi[k : k + win]) for k in range(steps)])
            if np.isfinite(mm).any():
                k = int(np.nanargmax(mm))
                out[i], rad[i] = mm[k], rs[min(k + win // 2, rs.size - 1)]
    code = np.where((code == 0) & (r_c == 0), nan_reason_code("no_central_field"), code)
    code = np.where((code == 0) & ~np.isfinite(out60), nan_reason_code("no_annulus"), code)
    spacing, orientation = _sac_peaks(sac)
    bad = code != 0
    res = [out60, out90, spacing, orientation, rad60, rad90]
    res = [np.where(bad, np.nan, a) for a in res]
    return (*res, code)


# --------------------------------------------------------------------------------------------
# the scorers of the registered grid methods (hippo_rep.analysis.methods)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GridScorer:
    """The implementation of a registered grid method
    (:class:`~hippo_rep.analysis.methods.GridMethod`, whose ``implementation`` names it).

    Attributes
    ----------
    block : callable
        ``block(maps, min_overlap, min_max, smooth_sigma)`` of (B, ny, nx) maps (bins, NaN =
        unvisited, at least :data:`~hippo_rep.analysis.core.MIN_MAP_SIZE` a side) ->
        gridness-60, gridness-90 (unitless), spacing (bins), orientation (degrees), best
        radius for 60 and 90 (bins), each (B,) float, and the NaN reason code (B,) int
        (:data:`~hippo_rep.analysis.core.NAN_REASONS`).
    rings : str
        Its rings (annuli) and rotation, for the scores' attrs.
    gridness_60 : Kernel or None
        A faster kernel of gridness-60 alone with the method's defaults (the shuffle nulls
        use it); None: the full scorer's ``gridness_60``.
    """

    block: Callable[..., tuple[np.ndarray, ...]]
    rings: str
    gridness_60: Kernel | None = None


#: The "deepmind" method's scorer.
DEEPMIND_SCORER = GridScorer(
    block=_deepmind_block,
    rings=f"rings {DEEPMIND_INNER} N < d <= outer, outer in linspace(0.4, 1.0, 10) N, "
          f"variance + {DEEPMIND_VARIANCE_EPS}, cubic rotation",
    gridness_60=GRIDNESS_60,
)

#: The "bnt" method's scorer.
BNT_SCORER = GridScorer(
    block=_bnt_block,
    rings=f"annuli r_c < d < R, R = int(linspace(max({BNT_MIN_RADIUS}, r_c + 1), R_max, "
          f"R_max - r_c)), R_max = half of opexebo's SAC crop (~0.9 N), r_c = floor(sqrt(area "
          f"/ pi)) of the central field (opexebo's adaptive threshold 0.95..0.2), Pearson r, "
          f"bilinear rotation, max of moving mean over {BNT_MOVING_WINDOW} radii (opexebo 0.7)",
)


def _grid_block(maps: np.ndarray, method: str, min_overlap: int, min_max: bool,
                sigma: float) -> tuple[np.ndarray, ...]:
    if min(maps.shape[-2:]) < MIN_MAP_SIZE:
        return too_small_block(maps, 6)
    return GRID_METHODS[method].scorer().block(maps, min_overlap, min_max, sigma)


def grid_kernel(
    method: str = DEFAULT_GRID_METHOD,
    min_max: bool | None = None,
    min_overlap: int | None = None,
    smooth_sigma: float | None = None,
) -> Kernel:
    """The :class:`~hippo_rep.analysis.kernels.Kernel` of :func:`grid_scores` (same
    arguments, checked here; the defaults are the method's,
    :data:`~hippo_rep.analysis.methods.GRID_METHODS`)."""
    spec = grid_method(method)
    method = spec.name
    min_overlap = check_min_overlap(spec.min_overlap if min_overlap is None else min_overlap)
    if smooth_sigma is not None:
        smooth_sigma = check_positive_number(smooth_sigma, "smooth_sigma", allow_zero=True)
    mm = spec.min_max if min_max is None else bool(min_max)
    sigma = spec.smooth_sigma if smooth_sigma is None else smooth_sigma
    form = "min/max" if mm else "mean"
    definitions = (("min(r60, r120) - max(r30, r90, r150)", "r90 - max(r45, r135)") if mm
                   else ("mean(r60, r120) - mean(r30, r90, r150)", "r90 - mean(r45, r135)"))
    outputs = (
        *(Output(f"gridness_{a}", attrs={"long_name": f"gridness at {a} degrees ({method}, "
                                         f"{form} form)", "units": "1", "definition": d})
          for a, d in zip((60, 90), definitions, strict=True)),
        Output("spacing", attrs={
            "long_name": "grid spacing: median distance of the 6 SAC peaks nearest lag 0",
            "units": "bins"}),
        Output("orientation", attrs={
            "long_name": "grid orientation: circular mean of the 6 nearest SAC peaks' angles "
                         "mod 60", "units": "degrees from +x towards +y, in [0, 60)"}),
        Output("best_radius", attrs={"long_name": "radius chosen for gridness_60",
                                     "units": "bins"}),
        Output("best_radius_90", attrs={"long_name": "radius chosen for gridness_90",
                                        "units": "bins"}),
        NAN_REASON,
    )
    attrs = {
        "grid_score_method": method,
        "min_max": int(mm),
        "min_overlap": min_overlap,
        "smooth_sigma_bins": float(sigma),
        "angles_deg": np.asarray(GRID_ANGLES),
        "rings": spec.scorer().rings,
        "sac_nan_handling": (
            "NaN bins excluded from each lag's overlap statistics; lags with fewer than "
            "min_overlap finite bins or zero variance set to 0 before rotation"
        ),
        "nan_reason": NAN_REASON_DOC,
    }
    fn = functools.partial(_grid_block, method=method, min_overlap=min_overlap, min_max=mm,
                           sigma=float(sigma))
    return Kernel(fn, outputs, attrs)


# --------------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------------


def grid_scores(
    maps: xr.DataArray,
    method: str = DEFAULT_GRID_METHOD,
    min_max: bool | None = None,
    min_overlap: int | None = None,
    smooth_sigma: float | None = None,
) -> xr.Dataset:
    """Gridness (60 and 90 degrees), grid spacing and orientation of rate maps.

    Both methods start from the NaN-aware spatial autocorrelogram (SAC, see
    :func:`~hippo_rep.analysis.autocorrelogram`), size ``(2 ny - 1, 2 nx - 1)``; lags with
    fewer than ``min_overlap`` finite overlapping bins or zero variance are NaN there and are
    **replaced by 0 before rotating** (and in all ring statistics). N below is
    ``min(ny, nx)``. Rotations are those of ``scipy.ndimage.rotate(sac, angle,
    reshape=False)`` (zeros outside), computed exactly by a cached sparse operator.

    ``method="deepmind"`` (Banino et al. 2018; Sorscher et al.): for each ring of lags with
    ``0.2 N < distance <= outer``, ``outer`` in ``linspace(0.4, 1.0, 10) * N``: ``m`` = mean
    of the SAC over the ring, ``v`` = mean of ``(SAC - m)^2`` over the ring + 1e-5, and for
    each angle ``r_angle`` = mean over the ring of ``(SAC - m) * (rotated SAC - m) / v``
    (cubic spline rotation; not a true Pearson r, not bounded by 1). gridness-60 =
    ``mean(r60, r120) - mean(r30, r90, r150)``, gridness-90 = ``r90 - mean(r45, r135)``
    (``min_max=True``: ``min(r60, r120) - max(r30, r90, r150)`` and ``r90 - max(r45, r135)``);
    each is maximised over rings separately. Deviation from the reference code: NaN bins are
    excluded from the SAC's overlap statistics (the reference zeroes them), and a lag whose
    overlap has zero variance is 0, where the reference divides round-off by 0 and returns
    a NaN score (e.g. bands along an axis); so a finite, non-constant map never gets a NaN
    score.

    ``method="bnt"`` (BNT's ``gridnessScore`` as opexebo 0.7 implements it): the SAC is
    normalised by its maximum and cropped to ``round(1.8 N)`` lags per axis (odd); the
    central field is found with opexebo's adaptive threshold (opening by reconstruction,
    then the 4-connected region around lag 0 above 0.95, 0.93, ... 0.2 of the centre value,
    stopping when the area jumps, a hole appears or 10 steps change nothing; at least 5
    bins), its radius ``r_c = floor(sqrt(area / pi))`` (0: NaN, reason
    "no_central_field"); outer radii ``R = int(linspace(max(3, r_c + 1), R_max, R_max -
    r_c))`` with ``R_max`` half the crop's side (~0.9 N); for each R the lags with ``r_c <
    distance < R`` are Pearson-correlated with the bilinearly rotated SAC; score
    ``min(r60, r120) - max(r30, r90, r150)`` (gridness-90: ``r90 - max(r45, r135)``; with
    ``min_max=False`` the means instead); the grid score is the maximum of the mean over 3
    consecutive radii (opexebo's windows, which leave out the last one; with 4 radii or
    fewer, the mean of all). Deviations from opexebo: NaN bins are excluded from the SAC's
    overlap statistics (opexebo sets them to 0 first, which can give a noise map with
    unvisited bins a central field and a score where the same map fully visited has none;
    here it stays NaN, "no_central_field"), a window's mean ignores NaN
    correlations, and the map is not smoothed unless ``smooth_sigma`` says so (opexebo's
    ``grid_score`` does not smooth either: BNT smooths, by 2 bins, when it makes the rate
    map).

    Spacing and orientation (both methods) come from the six local maxima (3 x 3
    neighbourhood, value > 0) of the SAC nearest to lag 0, refined to sub-bin precision by
    parabolas: spacing is their median distance from lag 0 (= distance between neighbouring
    grid peaks), orientation the circular mean of their angles modulo 60 degrees. Both assume
    a hexagonal grid; NaN when fewer than 3 peaks are found. For smoothed maps
    (``smooth_sigma``) the peaks are those of the smoothed map's SAC.

    How these scores, spacings and orientations compare with the DeepMind code and with
    opexebo (``tests/analysis/test_gridscore.py``, ``tests/analysis/test_gridscore_opexebo.py``)
    is recorded in the project's findings (``docs/findings.md``).

    Maps smaller than 5 bins along y or x get NaN (reason "too_small").

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., "y", "x")
        Rate maps, NaN = unvisited; any leading dims. Dask-backed arrays stay lazy (the map
        dims must be one chunk).
    method : str
        Score family, one of :data:`~hippo_rep.analysis.methods.GRID_METHODS` (default
        :data:`~hippo_rep.analysis.methods.DEFAULT_GRID_METHOD`); never compare scores across
        families.
    min_max : bool, optional
        Use the min/max form of the gridness. Default: the method's
        (:data:`~hippo_rep.analysis.methods.GRID_METHODS`: False for "deepmind", True for
        "bnt").
    min_overlap : int, optional
        Minimum number of overlapping finite bins per SAC lag; lags with fewer get 0.
        Default 1 for both methods, as the references (the DeepMind code and opexebo
        compute every lag).
    smooth_sigma : float, optional
        Gaussian smoothing of the maps before the SAC, in bins (NaN-aware). Default 0.

    Returns
    -------
    xarray.Dataset
        With the leading dims and coords of ``maps``:
        ``gridness_60``, ``gridness_90`` (unitless);
        ``spacing`` (bins, distance between neighbouring peaks);
        ``orientation`` (degrees from +x towards +y, in [0, 60));
        ``best_radius``, ``best_radius_90`` (bins: the outer radius of the chosen ring for
        "deepmind", the centre of the best 3-radius window for "bnt", for gridness-60 and
        gridness-90);
        ``nan_reason`` (str, "" where the scores are defined; see attrs ``nan_reason``).
        Attrs record the method and all its settings.

    Raises
    ------
    ValueError
        On bad dims, a method not in :data:`~hippo_rep.analysis.methods.GRID_METHODS`,
        ``min_overlap < 1`` or negative ``smooth_sigma``.
    """
    return grid_kernel(method, min_max, min_overlap, smooth_sigma).apply(maps)
