"""Place fields (connected high-activity regions) and the place score of rate maps.

Conventions: maps indexed ``[row = y, col = x]`` with dims ("y", "x") last; lengths and
areas in bins; NaN = unvisited (never part of a field). Fields are 4-connected. Activity
below 0 never belongs to a field, and maps whose peak is <= 0 have no fields.
"""

from __future__ import annotations

import functools

import numpy as np
import xarray as xr
from scipy import ndimage

from hippo_rep.defaults import PLACE_THRESHOLD

from ._checks import MAP_DIMS, check_choice, check_positive_number
from .core import PLANAR_CROSS
from .kernels import Kernel, Output

#: Default minimum field area, in bins. BNT uses 9 bins for camera-tracked ~2.5 cm bins; graph
#: worlds of 8-11 nodes per side need smaller: 3 bins = a node and two neighbours.
MIN_FIELD_AREA = 3

#: Size of the ``field`` dim of the per-field outputs (fields beyond it are counted in
#: ``n_fields`` and labelled in ``field_labels`` but get no per-field entries).
MAX_FIELDS = 16

#: "adaptive": the first level tried, as a fraction of the field's own peak.
ADAPTIVE_START = 0.96

#: "adaptive": the level is lowered in steps of this fraction of the field's own peak.
ADAPTIVE_STEP = 0.02

#: "adaptive": the region "explodes" (and the previous level is kept) when one step grows it
#: by more than this factor, once it already has ``min_area`` bins.
ADAPTIVE_MAX_GROWTH = 2.0

_METHODS = ("fraction", "adaptive")

def _check_threshold(threshold: object) -> float:
    t = check_positive_number(threshold, "threshold")
    if t >= 1:
        raise ValueError(f"threshold must be a fraction of the peak in (0, 1); got {threshold!r}")
    return t


def _field_tables(
    maps: np.ndarray, labels: np.ndarray, n_lab: int, min_area: int, max_fields: int
) -> tuple[np.ndarray, ...]:
    """Per-map field properties from global component labels (B, ny, nx).

    Fields smaller than ``min_area`` are dropped; the rest are ranked per map by firing mass
    (sum of activity), largest first, and relabelled 1..n per map.
    """
    b, ny, nx = maps.shape
    vals = np.where(np.isfinite(maps), np.maximum(maps, 0.0), 0.0)
    lab = labels.ravel()
    area = np.bincount(lab, minlength=n_lab + 1).astype(np.float64)
    mass = np.bincount(lab, weights=vals.ravel(), minlength=n_lab + 1)
    rows, cols = np.indices((ny, nx))
    sx = np.bincount(lab, weights=(vals * cols).ravel(), minlength=n_lab + 1)
    sy = np.bincount(lab, weights=(vals * rows).ravel(), minlength=n_lab + 1)
    sxx = np.bincount(lab, weights=(vals * cols * cols).ravel(), minlength=n_lab + 1)
    syy = np.bincount(lab, weights=(vals * rows * rows).ravel(), minlength=n_lab + 1)
    sxy = np.bincount(lab, weights=(vals * rows * cols).ravel(), minlength=n_lab + 1)
    peak = np.zeros(n_lab + 1)
    if n_lab:
        peak[1:] = ndimage.maximum(vals, labels, index=np.arange(1, n_lab + 1))
    map_id = np.zeros(n_lab + 1, dtype=np.int64)
    map_id[lab] = np.repeat(np.arange(b), ny * nx)
    kept = np.flatnonzero(area >= min_area)
    kept = kept[kept > 0]
    order = kept[np.lexsort((-mass[kept], map_id[kept]))]
    mids = map_id[order]
    first = np.searchsorted(mids, mids, side="left")
    rank = np.arange(order.size) - first
    new_label = np.zeros(n_lab + 1, dtype=np.int64)
    new_label[order] = rank + 1
    field_labels = new_label[labels]
    n_fields = np.bincount(mids, minlength=b).astype(np.int64)
    sel = rank < max_fields
    o, r, m = order[sel], rank[sel], mids[sel]
    tables = []  # area, mass, peak, centroid x, centroid y, elongation: (B, max_fields)
    with np.errstate(invalid="ignore", divide="ignore"):
        cx, cy = sx[o] / mass[o], sy[o] / mass[o]
        elong = _elongation(sxx[o] / mass[o] - cx * cx, syy[o] / mass[o] - cy * cy,
                            sxy[o] / mass[o] - cx * cy)
        for v in (area[o], mass[o], peak[o], cx, cy, elong):
            tables.append(np.full((b, max_fields), np.nan))
            tables[-1][m, r] = v
    return (n_fields, *tables, field_labels)


def _elongation(vxx: np.ndarray, vyy: np.ndarray, vxy: np.ndarray) -> np.ndarray:
    """sqrt(λ_max / λ_min) of the activity-weighted covariance of a field's bin positions,
    each bin counted as a uniform square (variance 1/12 bin² added along both axes, so a
    one-bin field is 1 and a line of n bins is about n): 1 for a round field, large for a
    stripe along a wall or a band."""
    vxx, vyy = vxx + 1 / 12, vyy + 1 / 12
    half = (vxx + vyy) / 2
    root = np.sqrt(np.maximum(((vxx - vyy) / 2) ** 2 + vxy ** 2, 0.0))
    return np.sqrt((half + root) / np.maximum(half - root, 1e-12))


def _above(maps: np.ndarray, threshold: float) -> np.ndarray:
    """Finite bins >= threshold * peak (and > 0), per map."""
    finite = np.isfinite(maps)
    peak = np.where(finite, maps, -np.inf).max(axis=(1, 2))[:, None, None]
    with np.errstate(invalid="ignore"):
        return finite & (maps > 0) & (maps >= threshold * peak) & (peak > 0)


def _fraction_block(
    maps: np.ndarray, threshold: float, min_area: int, max_fields: int
) -> tuple[np.ndarray, ...]:
    labels, n_lab = ndimage.label(_above(maps, threshold), structure=PLANAR_CROSS)
    return _field_tables(maps, labels, n_lab, min_area, max_fields)


def _adaptive_one(m: np.ndarray, threshold: float, min_area: int) -> np.ndarray:
    """Adaptive-threshold fields of one map: boolean (n_fields, ny, nx) masks."""
    finite = np.isfinite(m)
    v = np.where(finite, m, -np.inf)
    top = v.max()
    if not np.isfinite(top) or top <= 0:
        return np.zeros((0,) + m.shape, dtype=bool)
    floor = threshold * top
    local = (
        (v == ndimage.maximum_filter(v, size=3, mode="constant", cval=-np.inf))
        & (v >= floor)
        & (v > 0)
    )
    py, px = np.nonzero(local)
    order = np.argsort(-v[py, px], kind="stable")
    py, px = py[order], px[order]
    assigned = np.zeros(m.shape, dtype=bool)
    fields = []
    for i in range(py.size):
        y0, x0 = py[i], px[i]
        if assigned[y0, x0]:
            continue
        border = ndimage.binary_dilation(assigned, structure=PLANAR_CROSS[1]) & ~assigned
        vp = v[y0, x0]
        fracs = np.arange(ADAPTIVE_START, 0, -ADAPTIVE_STEP)
        levels = vp * fracs[vp * fracs >= floor - 1e-12 * abs(floor)]
        if levels.size == 0:
            continue
        stack = (v[None] >= levels[:, None, None]) & ~assigned[None]
        labels, _ = ndimage.label(stack, structure=PLANAR_CROSS)
        own = labels[:, y0, x0]
        comp = (labels == own[:, None, None]) & (own[:, None, None] > 0)
        area = comp.sum(axis=(1, 2))
        # another (unassigned) local peak inside the region
        others = np.ones(py.size, dtype=bool)
        others[i] = False
        others &= ~assigned[py, px]
        second = comp[:, py[others], px[others]].any(axis=1)
        # holes: finite bins outside the region not connected to the map border
        padded = np.pad(~comp, ((0, 0), (1, 1), (1, 1)), constant_values=True)
        comp_labels, _ = ndimage.label(padded, structure=PLANAR_CROSS)
        outside = comp_labels[:, 1:-1, 1:-1] != comp_labels[:, :1, :1]
        holes = (outside & ~comp & finite[None]).any(axis=(1, 2))
        # touching a field found earlier (same rule as swallowing its peak)
        touch = (comp & border[None]).any(axis=(1, 2))
        growth = np.zeros(levels.size, dtype=bool)
        growth[1:] = (area[1:] > ADAPTIVE_MAX_GROWTH * area[:-1]) & (area[:-1] >= min_area)
        fail = second | touch | holes | growth
        n_ok = int(np.argmax(fail)) if fail.any() else levels.size
        if n_ok == 0:
            continue
        region = comp[n_ok - 1]
        if region.sum() >= min_area:
            fields.append(region)
            assigned |= region
    if not fields:
        return np.zeros((0,) + m.shape, dtype=bool)
    return np.stack(fields)


def _adaptive_block(
    maps: np.ndarray, threshold: float, min_area: int, max_fields: int
) -> tuple[np.ndarray, ...]:
    b = maps.shape[0]
    labels = np.zeros(maps.shape, dtype=np.int64)
    n_lab = 0
    for i in range(b):  # the adaptive search is sequential per map
        for region in _adaptive_one(maps[i], threshold, min_area):
            n_lab += 1
            labels[i][region] = n_lab
    return _field_tables(maps, labels, n_lab, min_area, max_fields)


def place_fields_kernel(
    threshold: float = PLACE_THRESHOLD,
    min_area: int = MIN_FIELD_AREA,
    method: str = "fraction",
    max_fields: int = MAX_FIELDS,
) -> Kernel:
    """The :class:`~hippo_rep.analysis.kernels.Kernel` of :func:`place_fields` (same
    arguments, checked here)."""
    method = check_choice(method, "method", _METHODS)
    threshold = _check_threshold(threshold)
    for name, val in (("min_area", min_area), ("max_fields", max_fields)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 1:
            raise ValueError(f"{name} must be an int >= 1; got {val!r}")
    block = _adaptive_block if method == "adaptive" else _fraction_block
    declared = (
        ("n_fields", (), np.int64, "number of place fields", "1"),
        ("field_area", ("field",), np.float64, "field area", "bins"),
        ("field_mass", ("field",), np.float64, "summed activity in the field",
         "activity units x bins"),
        ("field_peak", ("field",), np.float64, "peak activity in the field", "activity units"),
        ("field_centroid_x", ("field",), np.float64,
         "activity-weighted centroid, column index", "bins"),
        ("field_centroid_y", ("field",), np.float64, "activity-weighted centroid, row index",
         "bins"),
        ("field_elongation", ("field",), np.float64,
         "sqrt of the ratio of the principal variances of the field's activity-weighted "
         "bin positions (1 = round)", "1"),
        ("field_labels", MAP_DIMS, np.int64,
         "field label per bin (0 = none, k = k-th largest by mass)", "1"),
    )
    outputs = tuple(Output(k, dims, dtype, {"long_name": long_name, "units": units})
                    for k, dims, dtype, long_name, units in declared)
    attrs = {
        "place_field_method": method,
        "threshold": threshold,
        "min_area_bins": int(min_area),
        "connectivity": 4,
        "ranking": "by firing mass, largest first",
    }
    if method == "adaptive":
        attrs.update(
            adaptive_start=ADAPTIVE_START,
            adaptive_step=ADAPTIVE_STEP,
            adaptive_max_growth=ADAPTIVE_MAX_GROWTH,
        )
    fn = functools.partial(block, threshold=threshold, min_area=int(min_area),
                           max_fields=int(max_fields))
    return Kernel(fn, outputs, attrs, sizes={"field": int(max_fields)})


def place_fields(
    maps: xr.DataArray,
    threshold: float = PLACE_THRESHOLD,
    min_area: int = MIN_FIELD_AREA,
    method: str = "fraction",
    max_fields: int = MAX_FIELDS,
) -> xr.Dataset:
    """Detect place fields: 4-connected regions of high activity.

    ``method="fraction"``: a field is a 4-connected component of the finite bins with
    activity >= ``threshold`` x the map's peak, of at least ``min_area`` bins.

    ``method="adaptive"`` (BNT/opexebo style, not a replica): local maxima (3 x 3) at or above
    ``threshold`` x the map's peak are visited from the highest; for each one not yet inside
    a field, the level is lowered from 0.96 x its own peak in steps of 0.02 x its peak (not
    below ``threshold`` x the map's peak), taking the 4-connected region around it at each
    level; the search stops before the level at which the region swallows another local
    maximum, touches a field found earlier, encloses a hole (finite bins below the level not
    connected to the map border; unvisited NaN bins are not holes), or grows more than
    2-fold in one step once it has ``min_area`` bins. The last good region is a field if it
    has >= ``min_area`` bins. BNT's peak >= 1 Hz rule is not applied (activity units are
    arbitrary). Loops over maps.

    In both methods fields are ranked per map by firing mass (sum of activity), largest first.

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., "y", "x")
        Rate maps, NaN = unvisited; any leading dims.
    threshold : float
        Fraction of the map's peak, in (0, 1).
    min_area : int
        Minimum field area in bins.
    method : {"fraction", "adaptive"}
        Detection method.
    max_fields : int
        Size of the ``field`` dim of the per-field outputs.

    Returns
    -------
    xarray.Dataset
        ``n_fields`` (...): number of fields (int);
        ``field_area`` (..., field): bins; ``field_mass`` (..., field): summed activity;
        ``field_peak`` (..., field): peak activity; ``field_centroid_x``,
        ``field_centroid_y`` (..., field): activity-weighted centroid in bins (column and
        row index, 0 = first bin; map coords via ``np.interp(c, range(n), maps.x)``);
        ``field_elongation`` (..., field): sqrt of the ratio of the principal variances of
        the field's activity-weighted bin positions (1 = round; a stripe along a wall or a
        band is long and thin); NaN where a map has fewer fields;
        ``field_labels`` (..., y, x): int, 0 = no field, k = the k-th field.

    Raises
    ------
    ValueError
        On bad dims, an unknown method, ``threshold`` outside (0, 1), ``min_area`` < 1 or
        ``max_fields`` < 1.
    """
    return place_fields_kernel(threshold, min_area, method, max_fields).apply(maps)


def _place_score_block(maps: np.ndarray, threshold: float) -> tuple[np.ndarray]:
    best = _fraction_block(maps, threshold, 1, 1)[2][:, 0]  # mass of the largest field
    total = np.where(np.isfinite(maps), np.maximum(maps, 0.0), 0.0).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.where(total > 0, np.nan_to_num(best) / total, np.nan),)


def place_score_kernel(threshold: float = PLACE_THRESHOLD) -> Kernel:
    """The :class:`~hippo_rep.analysis.kernels.Kernel` of :func:`place_score`."""
    threshold = _check_threshold(threshold)
    out = Output("place_score", attrs={
        "long_name": "fraction of firing mass in the largest connected field",
        "units": "1",
        "threshold": threshold,
        "connectivity": 4,
    })
    return Kernel(functools.partial(_place_score_block, threshold=threshold), (out,))


def place_score(maps: xr.DataArray, threshold: float = PLACE_THRESHOLD) -> xr.DataArray:
    """Fraction of a map's firing mass in its largest connected field.

    Firing mass is the sum of the non-negative activity over finite bins. The field is the
    4-connected component, among finite bins with activity >= ``threshold`` x peak, holding
    the most mass. 1 when all firing is in one field; small for grid-like or diffuse maps.
    NaN when the map has no positive activity.

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., "y", "x")
        Rate maps, NaN = unvisited; any leading dims.
    threshold : float
        Fraction of the peak, in (0, 1).

    Returns
    -------
    xarray.DataArray, dims (...)
        ``place_score`` in [0, 1] (unitless).

    Raises
    ------
    ValueError
        On bad dims or ``threshold`` outside (0, 1).
    """
    return place_score_kernel(threshold).apply(maps)["place_score"]
