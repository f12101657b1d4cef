"""The border score of rate maps (Solstad, Boccara, Kropff, Moser & Moser 2008, Science
322:1865): how much one firing field lines one wall, against how far the firing lies from
the walls.

``b = (CM - DM) / (CM + DM)`` in [-1, 1]: ``CM`` the largest fraction of one wall's bins
covered by one field, ``DM`` the firing-weighted mean distance of every field bin to its
nearest wall, divided by half the map's shortest side. A field lining a whole wall one bin
deep scores near 1 (``(1 - 2/n) / (1 + 2/n)``, 0.9 on 40 bins: a bin's width keeps ``DM``
from 0), a central field below 0. Solstad et al. called cells with ``b > 0.5`` border
cells (:data:`~hippo_rep.analysis.classify.BORDER_MIN_SCORE`).

The definitions follow the paper and its Matlab lineage (BNT's ``borderScore``) as opexebo
implements it (``opexebo.analysis.border_score`` and ``border_coverage``, opexebo 0.7.2;
agreement tested in ``tests/analysis/test_border.py``): fields are the place fields of
:func:`~hippo_rep.analysis.place_fields` (4-connected bins at or above
:data:`BORDER_FIELD_THRESHOLD` of the peak, at least ``min_area`` bins); a wall's coverage
by a field is the fraction of the wall's bins inside the field, an unvisited (NaN) wall bin
replaced by the first visited bin inward from it (at most :data:`BORDER_SEARCH_WIDTH`
bins), and not counted when there is none; ``DM`` counts distances in bins with a bin next
to a wall at :data:`BORDER_WALL_DISTANCE`. The walls are the map's four edges: a session's
arena (its maps span it), a graph world's box of nodes (its rate maps span the nodes' bounding
box: the walls of a square world; around a world of another shape, its edge sites are
found by the inward search).

A circular arena has no walls in this sense: the score is NaN there
(``arena_shape="circle"``; :data:`~hippo_rep.analysis.arena.CIRCLE_BORDER_REASON`, in the
attr ``border_nan_reason``). Neither BNT nor opexebo defines it for a circle (opexebo 0.7.2's
``border_coverage`` raises ``NotImplementedError`` for "circle"), and the edges of a disc's
bounding square are not walls: a field along the disc's rim touches them at four points.

Conventions: maps indexed ``[row = y, col = x]`` with dims ("y", "x") last, row 0 at the
smallest y; NaN = unvisited; square bins.
"""

from __future__ import annotations

import functools

import numpy as np
import xarray as xr

from .arena import CIRCLE, CIRCLE_BORDER_REASON, RECTANGLE, check_arena_shape
from .fields import MIN_FIELD_AREA, place_fields_kernel
from .kernels import Kernel, Output

#: Fields of the border score: bins at or above this fraction of the map's peak (Solstad et
#: al. 2008: "firing rates higher than 0.3 times the cell's maximum firing rate").
BORDER_FIELD_THRESHOLD = 0.3

#: Fewest bins of a field of the border score (:data:`~hippo_rep.analysis.fields.MIN_FIELD_AREA`;
#: :func:`~hippo_rep.analysis.analyse` passes its own field minimum, as for place fields).
BORDER_MIN_AREA = MIN_FIELD_AREA

#: An unvisited wall bin is replaced by the first visited bin at most this many bins inward
#: from it (opexebo's and BNT's ``search_width``, 8 bins); a wall site with none within it
#: is not counted in the wall's coverage.
BORDER_SEARCH_WIDTH = 8

#: Distance, in bins, of a bin next to a wall from that wall in ``DM`` (each bin further in
#: adds one): 1 as in BNT and opexebo (the taxicab distance to the outside of the map), on
#: which the field's threshold of 0.5 was set. (0.5, a bin centre's distance, would lower
#: ``DM`` by ``1 / min(ny, nx)`` and raise scores.)
BORDER_WALL_DISTANCE = 1.0

#: Codes of ``border_wall``: the wall of the largest coverage ("" = no field on a wall).
BORDER_WALLS: tuple[str, ...] = ("", "x_min", "x_max", "y_min", "y_max")


def wall_distance_map(ny: int, nx: int,
                      wall_distance: float = BORDER_WALL_DISTANCE) -> np.ndarray:
    """Distance of every bin of a (ny, nx) map to its nearest wall, in bins.

    Parameters
    ----------
    ny, nx : int
        Map size in bins.
    wall_distance : float
        Distance of a bin next to a wall (:data:`BORDER_WALL_DISTANCE`).

    Returns
    -------
    numpy.ndarray, shape (ny, nx)
        ``min(row, ny - 1 - row, col, nx - 1 - col) + wall_distance``.
    """
    rows = np.arange(ny)[:, None]
    cols = np.arange(nx)[None, :]
    steps = np.minimum(np.minimum(rows, ny - 1 - rows), np.minimum(cols, nx - 1 - cols))
    return steps + float(wall_distance)


def _wall_sites(labels: np.ndarray, finite: np.ndarray, search_width: int
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per wall (x_min, x_max, y_min, y_max): the field label of each wall site (B, L) (the
    first finite bin inward, within ``search_width``) and whether it has one (B, L)."""
    strips = (
        (labels[:, :, :search_width], finite[:, :, :search_width]),  # x_min: col 0 inward
        (labels[:, :, ::-1][:, :, :search_width], finite[:, :, ::-1][:, :, :search_width]),
        (np.swapaxes(labels[:, :search_width, :], 1, 2),
         np.swapaxes(finite[:, :search_width, :], 1, 2)),  # y_min: row 0 inward
        (np.swapaxes(labels[:, ::-1, :][:, :search_width, :], 1, 2),
         np.swapaxes(finite[:, ::-1, :][:, :search_width, :], 1, 2)),
    )
    out = []
    for lab, fin in strips:  # (B, L, depth), depth 0 at the wall
        first = np.argmax(fin, axis=2)
        valid = fin.any(axis=2)
        site = np.take_along_axis(lab, first[..., None], axis=2)[..., 0]
        out.append((np.where(valid, site, 0), valid))
    return out


def _border_block(maps: np.ndarray, threshold: float, min_area: int, search_width: int,
                  wall_dist: float) -> tuple[np.ndarray, ...]:
    b, ny, nx = maps.shape
    fields = place_fields_kernel(threshold, min_area, "fraction", max_fields=1).array(maps)
    local = fields["field_labels"]  # (B, ny, nx), 1..n per map
    n_fields = fields["n_fields"].astype(np.int64)
    offset = np.concatenate([[0], np.cumsum(n_fields)[:-1]])
    labels = np.where(local > 0, local + offset[:, None, None], 0)  # unique over the block
    n_lab = int(n_fields.sum())
    map_of = np.repeat(np.arange(b), n_fields)  # map of global label k + 1
    finite = np.isfinite(maps)
    cover = np.zeros(b)
    wall = np.zeros(b, dtype=np.int64)
    for w, (site, valid) in enumerate(_wall_sites(labels, finite, search_width)):
        n_valid = valid.sum(axis=1)  # (B,)
        hits = np.bincount(site.ravel(), minlength=n_lab + 1)[1:].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = hits / n_valid[map_of]  # coverage of this wall by each field
        per_map = np.zeros(b)
        if n_lab:
            np.maximum.at(per_map, map_of, np.nan_to_num(frac))
        better = per_map > cover
        wall[better] = w + 1
        cover = np.maximum(cover, per_map)
    has = n_fields > 0
    dist = wall_distance_map(ny, nx, wall_dist)
    rate = np.where((labels > 0) & finite, np.maximum(maps, 0.0), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        dm = (rate * dist).sum(axis=(1, 2)) / rate.sum(axis=(1, 2)) / (min(ny, nx) / 2)
        cm = np.where(has, cover, np.nan)
        dm = np.where(has, dm, np.nan)
        score = (cm - dm) / (cm + dm)
    return score, cm, dm, np.where(has, wall, 0)


def _undefined_block(maps: np.ndarray) -> tuple[np.ndarray, ...]:
    """The border outputs of a circular arena's maps: NaN scores, no wall."""
    nan = np.full(maps.shape[0], np.nan)
    return nan, nan.copy(), nan.copy(), np.zeros(maps.shape[0], dtype=np.int64)


def border_kernel(threshold: float = BORDER_FIELD_THRESHOLD, min_area: int = BORDER_MIN_AREA,
                  search_width: int = BORDER_SEARCH_WIDTH,
                  wall_distance: float = BORDER_WALL_DISTANCE,
                  arena_shape: str = RECTANGLE) -> Kernel:
    """The :class:`~hippo_rep.analysis.kernels.Kernel` of :func:`border_score` (same
    arguments, checked here)."""
    arena_shape = check_arena_shape(arena_shape)
    place_fields_kernel(threshold, min_area)  # checks threshold and min_area
    if (isinstance(search_width, bool) or not isinstance(search_width, (int, np.integer))
            or search_width < 1):
        raise ValueError(f"search_width must be an int >= 1; got {search_width!r}")
    wall_distance = float(wall_distance)
    if not np.isfinite(wall_distance) or wall_distance < 0:
        raise ValueError(f"wall_distance must be finite and >= 0; got {wall_distance!r}")
    outputs = (
        Output("border_score", attrs={
            "long_name": "border score (CM - DM) / (CM + DM) (Solstad et al. 2008)",
            "units": "1"}),
        Output("border_coverage", attrs={
            "long_name": "CM: largest fraction of one wall's sites covered by one field",
            "units": "1"}),
        Output("border_distance", attrs={
            "long_name": "DM: firing-weighted mean distance of field bins to the nearest "
                         "wall / half the map's shortest side", "units": "1"}),
        Output("border_wall", dtype=np.int64, labels=BORDER_WALLS, attrs={
            "long_name": "wall of the largest coverage ('' = no field on a wall)"}),
    )
    attrs = {
        "border_method": "Solstad et al. 2008 (BNT borderScore, opexebo border_score)",
        "border_field_threshold": float(threshold),
        "border_min_area_bins": int(min_area),
        "border_search_width_bins": int(search_width),
        "border_wall_distance_bins": wall_distance,
        "border_walls": "the rate map's four edges",
        "border_arena_shape": arena_shape,
    }
    if arena_shape == CIRCLE:
        attrs.update(border_walls="none (a circular arena)",
                     border_nan_reason=CIRCLE_BORDER_REASON)
        return Kernel(_undefined_block, outputs, attrs)
    fn = functools.partial(_border_block, threshold=float(threshold), min_area=int(min_area),
                           search_width=int(search_width), wall_dist=wall_distance)
    return Kernel(fn, outputs, attrs)


def border_score(
    maps: xr.DataArray,
    threshold: float = BORDER_FIELD_THRESHOLD,
    min_area: int = BORDER_MIN_AREA,
    search_width: int = BORDER_SEARCH_WIDTH,
    wall_distance: float = BORDER_WALL_DISTANCE,
    arena_shape: str = RECTANGLE,
) -> xr.Dataset:
    """Border score of rate maps: ``b = (CM - DM) / (CM + DM)`` (Solstad et al. 2008).

    Fields are those of :func:`~hippo_rep.analysis.place_fields` (``method="fraction"``):
    4-connected finite bins with activity >= ``threshold`` x the map's peak (and > 0), of at
    least ``min_area`` bins. ``CM``: over every field and each of the four walls (the map's
    edges), the fraction of the wall's sites inside the field; a wall site is its bin next
    to the wall or, when that is unvisited (NaN), the first visited bin inward within
    ``search_width`` bins (sites with none are not counted). ``DM``: the mean over all field
    bins of their distance to the nearest wall (in bins, ``wall_distance`` for a bin next to
    a wall), weighted by activity, divided by half the shortest side (``min(ny, nx) / 2``).

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., "y", "x")
        Rate maps, NaN = unvisited, square bins; any leading dims.
    threshold : float
        Field threshold as a fraction of the peak, in (0, 1)
        (:data:`BORDER_FIELD_THRESHOLD`).
    min_area : int
        Fewest bins of a field (:data:`BORDER_MIN_AREA`).
    search_width : int
        How far inward an unvisited wall bin is replaced, in bins
        (:data:`BORDER_SEARCH_WIDTH`).
    wall_distance : float
        Distance of a bin next to a wall, in bins (:data:`BORDER_WALL_DISTANCE`).
    arena_shape : {"rectangle", "circle"}
        The arena the maps span: a rectangular box (its walls the map's edges) or a
        circular arena, where the score is not defined: every output NaN (``border_wall``
        ""), the reason in the attr ``border_nan_reason``
        (:data:`~hippo_rep.analysis.arena.CIRCLE_BORDER_REASON`).

    Returns
    -------
    xarray.Dataset
        Dims (...): ``border_score`` in [-1, 1] (unitless), ``border_coverage`` (``CM``,
        in [0, 1]), ``border_distance`` (``DM``, fraction of half the shortest side),
        ``border_wall`` (str, the wall of ``CM``: "x_min", "x_max", "y_min", "y_max"; ""
        when no field reaches a wall). NaN when a map has no field (opexebo returns -1 there)
        and on a circular arena. Attrs: the method and its settings (``border_arena_shape``,
        and on a circle ``border_nan_reason``).

    Raises
    ------
    ValueError
        On bad dims, ``threshold`` outside (0, 1), ``min_area`` or ``search_width`` < 1,
        a negative ``wall_distance`` or an unknown ``arena_shape``.
    """
    return border_kernel(threshold, min_area, search_width, wall_distance,
                         arena_shape).apply(maps)


__all__ = [
    "BORDER_FIELD_THRESHOLD",
    "BORDER_MIN_AREA",
    "BORDER_SEARCH_WIDTH",
    "BORDER_WALLS",
    "BORDER_WALL_DISTANCE",
    "border_kernel",
    "border_score",
    "wall_distance_map",
]
