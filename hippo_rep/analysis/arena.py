"""Arena shapes: rectangular boxes and circular arenas (discs) of continuous sessions.

A circular arena is the disc inscribed in a square box ``[x_min, x_max, y_min, y_max]``; its
maps span that square, and a bin belongs to the disc when its *centre* lies in the disc
(opexebo 0.7.2's ``opexebo.general.circular_mask``: "a pixel is assumed to be inside the
circle iff the centre-point is within the radius"). The bins outside the disc are not part of
the arena: NaN in every map (:func:`mask_outside_disc`), never unvisited bins of zero
occupancy. Which scores are defined there: the grid score (its autocorrelogram excludes NaN
bins from every lag's overlap, :func:`~hippo_rep.analysis.autocorrelogram`), the plane-wave
decomposition, spatial information and place fields (finite bins only); the border score is
not (:data:`CIRCLE_BORDER_REASON`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._checks import MAP_DIMS, check_maps

#: Arena shapes: a rectangular box (the default) and a circular arena (a disc).
RECTANGLE, CIRCLE = "rectangle", "circle"
ARENA_SHAPES: tuple[str, ...] = (RECTANGLE, CIRCLE)

#: Why the border score is NaN on a circular arena (the ``border_nan_reason`` attr).
CIRCLE_BORDER_REASON = (
    "the border score (Solstad et al. 2008) is defined for the walls of a rectangular box; "
    "neither BNT's borderScore nor opexebo 0.7.2 defines it for a circular arena (opexebo's "
    "border_coverage raises NotImplementedError for 'circle'), so it is NaN, not a number "
    "computed against the edges of the map's bounding square"
)


def check_arena_shape(shape: object, name: str = "arena_shape") -> str:
    """``shape`` if it is one of :data:`ARENA_SHAPES`.

    Raises
    ------
    ValueError
        One line naming ``name``.
    """
    if not isinstance(shape, str) or shape not in ARENA_SHAPES:
        raise ValueError(f"{name} must be one of {ARENA_SHAPES}; got {shape!r}")
    return shape


def disc_of_box(box, rtol: float = 1e-6) -> tuple[float, float, float]:
    """Centre x, y and radius of the disc inscribed in the square ``box`` = ``[x_min, x_max,
    y_min, y_max]`` (same length unit).

    Raises
    ------
    ValueError
        If the box is not a square (sides differing by more than ``rtol`` of the larger).
    """
    x0, x1, y0, y1 = (float(v) for v in np.asarray(box, dtype=np.float64).ravel())
    wx, wy = x1 - x0, y1 - y0
    if not abs(wx - wy) <= rtol * max(wx, wy):
        raise ValueError(f"a circular arena's box must be a square around the disc; got "
                         f"x [{x0:g}, {x1:g}], y [{y0:g}, {y1:g}] (sides {wx:g} and {wy:g})")
    return (x0 + x1) / 2, (y0 + y1) / 2, (wx + wy) / 4


def in_disc(x, y, cx: float, cy: float, radius: float) -> np.ndarray:
    """Whether the points ``(x, y)`` (broadcast) lie in the closed disc of centre ``(cx,
    cy)`` and ``radius`` (NaN points: False)."""
    with np.errstate(invalid="ignore"):
        return np.hypot(np.asarray(x, dtype=np.float64) - cx,
                        np.asarray(y, dtype=np.float64) - cy) <= radius


def mask_outside_disc(maps: xr.DataArray, centre, radius: float) -> xr.DataArray:
    """Maps with every bin whose centre lies outside a disc set to NaN.

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., "y", "x")
        Rate maps (or occupancy) with coords ``x`` and ``y``: the bin centres, in the
        positions' length unit (as :func:`~hippo_rep.analysis.rate_maps_from_positions` and
        :func:`~hippo_rep.analysis.session_rate_maps` return).
    centre : (float, float)
        The disc's centre (x, y), same unit.
    radius : float
        The disc's radius, same unit, > 0.

    Returns
    -------
    xarray.DataArray
        Same dims, coords and attrs, float; NaN outside the disc (:mod:`the module doc
        <hippo_rep.analysis.arena>`: opexebo's centre-in-disc rule); attrs
        ``arena_shape = "circle"`` and ``disc`` (centre x, y, radius) added.

    Raises
    ------
    ValueError
        Bad dims, no ``x``/``y`` coords, or a radius that is not > 0 and finite.
    """
    maps = check_maps(maps)
    for c in MAP_DIMS:
        if c not in maps.coords:
            raise ValueError(f"maps need coord {c!r} (bin centres) to place the disc")
    radius = float(radius)
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"radius must be finite and > 0; got {radius!r}")
    cx, cy = (float(v) for v in centre)
    inside = xr.DataArray(in_disc(maps["x"].values[None, :], maps["y"].values[:, None],
                                  cx, cy, radius), dims=MAP_DIMS)
    out = maps.astype(np.float64).where(inside)
    out.attrs = {**maps.attrs, "arena_shape": CIRCLE, "disc": np.array([cx, cy, radius])}
    return out


__all__ = [
    "ARENA_SHAPES",
    "CIRCLE",
    "CIRCLE_BORDER_REASON",
    "RECTANGLE",
    "check_arena_shape",
    "disc_of_box",
    "in_disc",
    "mask_outside_disc",
]
