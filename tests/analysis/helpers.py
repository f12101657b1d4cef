"""Slow, obvious reference implementations and map makers shared by the analysis tests."""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import ndimage, signal

ANGLES = (30, 45, 60, 90, 120, 135, 150)


def direct_sac(a: np.ndarray, min_overlap: int = 20) -> np.ndarray:
    """Pearson r per lag over the overlapping finite bins, one lag at a time (NaN if undefined)."""
    ny, nx = a.shape
    out = np.full((2 * ny - 1, 2 * nx - 1), np.nan)
    for dy in range(-(ny - 1), ny):
        for dx in range(-(nx - 1), nx):
            p = a[max(0, -dy) : ny - max(0, dy), max(0, -dx) : nx - max(0, dx)].ravel()
            q = a[max(0, dy) : ny - max(0, -dy), max(0, dx) : nx - max(0, -dx)].ravel()
            ok = np.isfinite(p) & np.isfinite(q)
            p, q = p[ok], q[ok]
            if p.size < min_overlap or np.ptp(p) == 0 or np.ptp(q) == 0:
                continue
            out[dy + ny - 1, dx + nx - 1] = np.corrcoef(p, q)[0, 1]
    return out


def direct_deepmind(
    a: np.ndarray, min_overlap: int = 20, min_max: bool = False
) -> tuple[float, float, float]:
    """The "deepmind" gridness written out: SAC, ndimage.rotate, ring masks, loops."""
    sac = np.nan_to_num(direct_sac(a, min_overlap), nan=0.0)
    outers, g60s, g90s = _ring_gridness(sac, min_max)
    best60 = best90 = -np.inf
    best_r = np.nan
    for outer, g60, g90 in zip(outers, g60s, g90s, strict=True):  # first maximum, NaN skipped
        if g60 > best60:
            best60, best_r = g60, outer
        best90 = max(best90, g90)
    return best60, best90, best_r


def _ring_gridness(sac: np.ndarray, min_max: bool) -> tuple[np.ndarray, list, list]:
    """Per ring of the SAC (inner 0.2 N, outer in linspace(0.4, 1.0, 10) N): the DeepMind
    ring statistic (centred on the unrotated ring mean, + 1e-5) → gridness-60 and -90."""
    ny, nx = (sac.shape[0] + 1) // 2, (sac.shape[1] + 1) // 2
    n = min(ny, nx)
    rot = {ang: ndimage.rotate(sac, ang, reshape=False) for ang in ANGLES}
    ly = np.arange(-(ny - 1), ny)[:, None]
    lx = np.arange(-(nx - 1), nx)[None, :]
    d = np.sqrt(ly**2 + lx**2)
    outers = np.linspace(0.4, 1.0, 10) * n
    g60s, g90s = [], []
    with np.errstate(all="ignore"):
        for outer in outers:
            ring = (d > 0.2 * n) & (d <= outer)
            m = sac[ring].mean()
            v = ((sac[ring] - m) ** 2).mean() + 1e-5
            r = {ang: ((sac[ring] - m) * (rot[ang][ring] - m)).mean() / v for ang in ANGLES}
            if min_max:
                g60s.append(min(r[60], r[120]) - max(r[30], r[90], r[150]))
                g90s.append(r[90] - max(r[45], r[135]))
            else:
                g60s.append((r[60] + r[120]) / 2 - (r[30] + r[90] + r[150]) / 3)
                g90s.append(r[90] - (r[45] + r[135]) / 2)
    return outers, g60s, g90s


def deepmind_reference_sac(a: np.ndarray) -> np.ndarray:
    """The DeepMind scorer's SAC, re-stated: six 2-D convolutions, NaN -> 0, no overlap limit.

    Like the reference (Banino et al. 2018, ``scores.py``): standard deviations from
    ``E[x^2] - E[x]^2`` over each lag's overlap, ``x / 0`` left as +-inf and then turned
    into +-1.8e308 by ``np.nan_to_num``, ``0 / 0`` into 0.
    """

    def filter2(b: np.ndarray, x: np.ndarray) -> np.ndarray:
        return signal.convolve2d(x, np.rot90(b, 2), mode="full")

    s = np.nan_to_num(a)
    ones = np.where(np.isnan(a), 0.0, 1.0)
    with np.errstate(all="ignore"):
        s_ab = filter2(s, s)
        s_a, s_b = filter2(s, ones), filter2(ones, s)
        s_aa, s_bb = filter2(s * s, ones), filter2(ones, s * s)
        n = filter2(ones, ones)
        std_a = np.power(s_aa / n - s_a**2 / n**2, 0.5)
        std_b = np.power(s_bb / n - s_b**2 / n**2, 0.5)
        r = (s_ab / n - s_a * s_b / n**2) / (std_a * std_b)
    return np.nan_to_num(np.real(r))


def deepmind_reference(a: np.ndarray, min_max: bool = False) -> tuple[float, float]:
    """The DeepMind scorer (``GridScorer.get_scores``) re-stated for one square map.

    Rings ``0.2 N < d <= outer`` (``circle_mask`` with ``<=``), ``outer`` in
    ``linspace(0.4, 1.0, 10) N``, ``scipy.ndimage.rotate(sac, angle, reshape=False)``;
    returns (gridness-60, gridness-90), NaN where the reference's SAC overflows.
    """
    _, g60s, g90s = _ring_gridness(deepmind_reference_sac(a), min_max)
    return float(np.max(g60s)), float(np.max(g90s))


def as_map(values: np.ndarray) -> xr.DataArray:
    """Wrap a (..., y, x) array as a DataArray with dims (d0, ..., y, x)."""
    dims = [f"d{i}" for i in range(values.ndim - 2)] + ["y", "x"]
    return xr.DataArray(values, dims=dims)


def with_holes(m: xr.DataArray, kind: str, rng: np.random.Generator) -> xr.DataArray:
    """Copy of a (y, x) map with NaN bins: random 10%, a missing block, or a circular arena."""
    out = m.copy()
    ny, nx = m.shape
    if kind == "random10":
        out.values[rng.random((ny, nx)) < 0.1] = np.nan
    elif kind == "block":
        out.values[ny // 4 : ny // 2, nx // 2 : 3 * nx // 4] = np.nan
    elif kind == "circle":
        yy, xx = np.indices((ny, nx))
        cy, cx = (ny - 1) / 2, (nx - 1) / 2
        out.values[(yy - cy) ** 2 + (xx - cx) ** 2 > (min(ny, nx) / 2) ** 2] = np.nan
    elif kind != "none":
        raise ValueError(kind)
    return out


def angle_diff(a: float, b: float, period: float) -> float:
    """Smallest absolute difference between two angles modulo ``period``."""
    d = (a - b) % period
    return min(d, period - d)


def opexebo_grid_score(a: np.ndarray) -> tuple[float, float, float]:
    """opexebo 0.7's gridness, spacing and orientation of one map, as experimental labs run it.

    ``opexebo.analysis.autocorrelation`` then ``opexebo.analysis.grid_score``. opexebo 0.7.2
    raises ``TypeError`` under numpy 2 (seen with 2.4: ``int()`` of its one-element central-radius
    array); the central radius is passed on as a scalar, nothing else changes.
    """
    import importlib
    import warnings

    from opexebo.analysis import autocorrelation

    mod = importlib.import_module("opexebo.analysis.grid_score")
    if not getattr(mod, "_hippo_rep_scalar_radius", False):
        orig = mod._findCentreRadius

        def scalar_radius(acorr: np.ndarray, **kwargs: object) -> float:
            return float(np.ravel(orig(acorr, **kwargs))[0])

        mod._findCentreRadius = scalar_radius
        mod._hippo_rep_scalar_radius = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score, stats = mod.grid_score(autocorrelation(a))
    return float(score), float(stats["grid_spacing"]), float(stats["grid_orientation"])
