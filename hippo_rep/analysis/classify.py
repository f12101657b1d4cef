"""Cell classes from scores and their circular-shift nulls (:func:`classify`).

A grid cell is a hexagonal plane-wave pattern
(:func:`~hippo_rep.analysis.planewaves.plane_waves`: three waves of near-equal length ~60
degrees apart) with gridness-60 above the 95th percentile of its own
null (gridness alone cannot tell a grid from two plane waves 55-75 degrees apart);
separately, the field's rule of thumb gridness > 0.3 (Whittington, Warren & Behrens 2022,
Fig. 9, quote 0.3-0.5), reported but not a grid classification; band, two-wave and square
patterns are their own classes (one or two plane waves whose plane-wave share beats the 95th
percentile of its own null); a place cell has spatial information above the 99th percentile
of its own null, one to three place fields, the largest not a long thin stripe, and is not a
band, two-wave or square pattern, nor a border cell; a border cell has a border score
(:func:`~hippo_rep.analysis.border_score`, Solstad et al. 2008) above 0.5 and above the 99th
percentile of its own null, and spatial information above the 99th percentile of its own
null. Class names are defined once, in
:mod:`hippo_rep.schema`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from hippo_rep.defaults import GRID_THRESHOLD
from hippo_rep.schema import (
    IS_BAND,
    IS_BORDER,
    IS_GRID,
    IS_GRID_THRESHOLD,
    IS_PLACE,
    IS_SQUARE,
    IS_TWO_WAVE,
    AnalysisError,
)

#: :func:`classify`: a grid cell beats this quantile of its gridness-60 null.
GRID_QUANTILE = 0.95

#: :func:`classify`: a grid cell's gridness-60 must also exceed this floor. A unit whose map is
#: anti-hexagonal (negative gridness) can still beat a null that is more negative still, which
#: is significance without grid structure (seen on trained TEM-t g units of 8x8 worlds).
GRID_MIN_SCORE = 0.0

#: :func:`classify`: band, two-wave and square patterns beat this quantile of their
#: plane-wave-share null.
WAVE_QUANTILE = 0.95

#: :func:`classify`: a place cell beats this quantile of its spatial-information null.
PLACE_QUANTILE = 0.99

#: :func:`classify`: a place cell has between these many place fields (inclusive).
PLACE_N_FIELDS: tuple[int, int] = (1, 3)

#: :func:`classify`: a place cell's largest field is at most this elongated
#: (``field_elongation``, sqrt of the ratio of its principal variances). A round field is
#: ~1 and one cut by a wall ~2; a boundary cell's field along a wall, or a band's stripe,
#: is a long thin field (~6 along a 1 m wall 15 cm wide), which a place cell's is not.
PLACE_MAX_ELONGATION = 4.0

#: :func:`classify`: a place cell is not a band, two-wave or square pattern (when those are
#: classified). Those classes already exclude single fields (``single_field``), so a one-field
#: cell is never affected; what they keep out is a plane-wave pattern cut into one to three
#: pieces by the field threshold, e.g. a band cell's stripes, smoothed, merged into one or two
#: blobs covering half the box (round enough for the elongation limit).
PLACE_NOT_WAVE = True

#: :func:`classify`: a border cell's border score exceeds this (Solstad, Boccara, Kropff,
#: Moser & Moser 2008, Science 322:1865: "cells with border scores above 0.5").
BORDER_MIN_SCORE = 0.5

#: :func:`classify`: a border cell's border score and its spatial information each beat
#: this quantile of their own circular-shift null: the place cells' quantile
#: (:data:`PLACE_QUANTILE`). The border score of a noise map's fields can be high by chance
#: (a field of noise that happens to touch a wall), and so can that of a map whose rate
#: follows the occupancy near a wall; the null, the same cell's activity shifted in time
#: against the trajectory, tells which border scores the walk itself yields.
BORDER_QUANTILE = PLACE_QUANTILE

#: :func:`classify`: a place cell is not a border cell (when those are classified). A
#: boundary cell's field lines a wall (and, for a boundary-vector cell, the ends of the two
#: walls beside it: a U covering a fifth to a half of the box), is one field, spatially
#: informative and often not elongated enough for :data:`PLACE_MAX_ELONGATION`; its border
#: score tells it apart (RatInABox's boundary-vector cells: ``tests/test_ratinabox_session.py``).
PLACE_NOT_BORDER = True


def classify(
    scores: xr.Dataset,
    grid_quantile: float = GRID_QUANTILE,
    place_quantile: float = PLACE_QUANTILE,
    grid_threshold: float = GRID_THRESHOLD,
    grid_min_score: float = GRID_MIN_SCORE,
    place_n_fields: tuple[int, int] = PLACE_N_FIELDS,
    wave_quantile: float = WAVE_QUANTILE,
    place_max_elongation: float = PLACE_MAX_ELONGATION,
    place_not_wave: bool = PLACE_NOT_WAVE,
    border_min_score: float = BORDER_MIN_SCORE,
    border_quantile: float = BORDER_QUANTILE,
    place_not_border: bool = PLACE_NOT_BORDER,
) -> xr.Dataset:
    """Grid, band, two-wave, square, border and place cells from scores and their shuffle
    nulls.

    Parameters
    ----------
    scores : xarray.Dataset
        With ``gridness_60``, ``gridness_60_null_q`` (quantile, ...) and ``hexagonal`` for
        grid cells; ``n_waves``, ``square``, ``plane_wave_share`` and
        ``plane_wave_share_null_q`` for the plane-wave classes; ``spatial_info``,
        ``spatial_info_null_q`` and ``n_fields`` for place cells; ``border_score``,
        ``border_score_null_q``, ``spatial_info`` and ``spatial_info_null_q`` for border
        cells (as in the output of :func:`~hippo_rep.analysis.analyse`). Any set may be
        missing, but not all.
    grid_quantile : float
        A grid cell's gridness-60 exceeds this quantile of its own null (must be one of the
        ``quantile`` coords).
    place_quantile : float
        A place cell's spatial information exceeds this quantile of its own null.
    grid_threshold : float
        The rule-of-thumb threshold on gridness-60 (reported separately).
    grid_min_score : float
        Floor on gridness-60 for the shuffle rule: a grid cell must also score above it.
    place_n_fields : (int, int)
        Allowed number of place fields of a place cell, inclusive.
    wave_quantile : float
        Band, two-wave and square patterns have a plane-wave share above this quantile of
        their own null.
    place_max_elongation : float
        When ``field_elongation`` is given, a place cell's largest field is at most this
        elongated (not a stripe along a wall or a band).
    place_not_wave : bool
        When the plane-wave classes are computed, a place cell is none of ``is_band``,
        ``is_two_wave``, ``is_square`` (:data:`PLACE_NOT_WAVE`).
    border_min_score : float
        A border cell's border score exceeds this (:data:`BORDER_MIN_SCORE`).
    border_quantile : float
        A border cell's border score and spatial information each exceed this quantile of
        their own null (:data:`BORDER_QUANTILE`).
    place_not_border : bool
        When the border class is computed, a place cell is not a border cell
        (:data:`PLACE_NOT_BORDER`).

    Returns
    -------
    xarray.Dataset
        Bool, dims of the scores (names from :mod:`~hippo_rep.schema`):
        ``is_grid`` (hexagonal, gridness-60 > its null's ``grid_quantile`` and >
        ``grid_min_score``), ``is_grid_threshold`` (gridness-60 > ``grid_threshold`` alone:
        the rule of thumb, not a grid classification), ``is_band`` (one plane wave),
        ``is_two_wave`` (two plane waves, not square), ``is_square`` (two near-equal waves
        ~90 degrees apart), each of the three with a plane-wave share > its null's
        ``wave_quantile`` and, when ``single_field`` is given, not a single field;
        ``is_border`` (border score > ``border_min_score`` and > its null's
        ``border_quantile``, and spatial information > its null's ``border_quantile``);
        ``is_place`` (spatial information > its null's
        ``place_quantile`` and ``place_n_fields[0] <= n_fields <= place_n_fields[1]``, and, when
        ``field_elongation`` is given, the largest field no more elongated than
        ``place_max_elongation``; with ``place_not_wave`` and the plane-wave inputs, not a
        band, two-wave or square pattern; with ``place_not_border`` and the border inputs,
        not a border cell). A NaN score or threshold
        gives False. Attrs record the rules.

    Raises
    ------
    AnalysisError
        If no set of inputs is present, gridness is given without ``hexagonal`` (the
        gridness threshold alone no longer makes a grid cell), ``border_score`` without
        ``border_score_null_q`` (the threshold alone no longer makes a border cell), or a
        quantile was not computed.
    """
    out = xr.Dataset()

    def threshold(name: str, q: float) -> xr.DataArray:
        da = scores[f"{name}_null_q"]
        qs = np.asarray(da["quantile"].values, dtype=np.float64)
        hit = np.flatnonzero(np.isclose(qs, q))
        if hit.size == 0:
            raise AnalysisError(
                f"{name}_null_q has quantiles {qs.tolist()}; {q} was not computed"
            )
        return da.isel(quantile=int(hit[0]), drop=True)

    attrs: dict[str, object] = {}
    have = set(scores.variables)
    if {"gridness_60", "gridness_60_null_q"} <= have:
        if "hexagonal" not in have:
            raise AnalysisError(
                "classify needs 'hexagonal' (plane_waves) with gridness_60: the gridness "
                "threshold alone cannot tell a grid from two plane waves"
            )
        g = scores["gridness_60"]
        beats_null = (g > threshold("gridness_60", grid_quantile)).fillna(False)
        hexagonal = scores["hexagonal"].fillna(False).astype(bool)
        out[IS_GRID] = g.notnull() & beats_null & (g > grid_min_score) & hexagonal
        out[IS_GRID_THRESHOLD] = g.notnull() & (g > grid_threshold)
        out[IS_GRID].attrs = {
            "long_name": f"grid cell: hexagonal plane-wave pattern and gridness_60 above the "
            f"{grid_quantile:g} quantile of its shuffle null and above {grid_min_score:g}"
        }
        out[IS_GRID_THRESHOLD].attrs = {
            "long_name": f"gridness_60 > {grid_threshold:g} (the field's rule of thumb alone; "
            "not a grid classification: two plane waves pass it)"
        }
        attrs.update(grid_quantile=grid_quantile, grid_threshold=grid_threshold,
                     grid_min_score=grid_min_score)
    if {"n_waves", "square", "plane_wave_share", "plane_wave_share_null_q"} <= have:
        share = scores["plane_wave_share"]
        sig = share.notnull() & (
            share > threshold("plane_wave_share", wave_quantile)).fillna(False)
        n = scores["n_waves"]
        square = scores["square"].fillna(False).astype(bool)
        if "single_field" in have:  # a single field is not a wave pattern
            sig = sig & ~scores["single_field"].fillna(False).astype(bool)
        out[IS_BAND] = sig & (n == 1)
        out[IS_TWO_WAVE] = sig & (n == 2) & ~square
        out[IS_SQUARE] = sig & (n == 2) & square
        rule = (f"plane_wave_share above the {wave_quantile:g} quantile of its shuffle null"
                + (", not a single field," if "single_field" in have else "") + " and")
        out[IS_BAND].attrs = {"long_name": f"band cell: {rule} one plane wave"}
        out[IS_TWO_WAVE].attrs = {"long_name": f"two-wave (oblique plane-wave) pattern: {rule} "
                                  "two plane waves, not square"}
        out[IS_SQUARE].attrs = {"long_name": f"square grid: {rule} two plane waves of "
                                "near-equal length ~90 degrees apart"}
        attrs.update(wave_quantile=wave_quantile)
    if {"border_score", "spatial_info", "spatial_info_null_q"} <= have:
        if "border_score_null_q" not in have:
            raise AnalysisError(
                "classify needs 'border_score_null_q' (the border score's shuffle null) with "
                "border_score: the threshold alone does not make a border cell"
            )
        b = scores["border_score"]
        si = scores["spatial_info"]
        informative = si.notnull() & (
            si > threshold("spatial_info", border_quantile)).fillna(False)
        beats_null = (b > threshold("border_score", border_quantile)).fillna(False)
        out[IS_BORDER] = b.notnull() & (b > border_min_score) & beats_null & informative
        out[IS_BORDER].attrs = {
            "long_name": f"border cell: border_score > {border_min_score:g} and above the "
            f"{border_quantile:g} quantile of its shuffle null, and spatial_info above the "
            f"{border_quantile:g} quantile of its shuffle null"
        }
        attrs.update(border_min_score=border_min_score, border_quantile=border_quantile)
    if {"spatial_info", "spatial_info_null_q", "n_fields"} <= have:
        si = scores["spatial_info"]
        nf = scores["n_fields"]
        lo, hi = (int(v) for v in place_n_fields)
        sig = si.notnull() & (si > threshold("spatial_info", place_quantile)).fillna(False)
        out[IS_PLACE] = sig & (nf >= lo) & (nf <= hi)
        compact = ""
        if "field_elongation" in have:
            first = scores["field_elongation"].isel(field=0)
            out[IS_PLACE] = out[IS_PLACE] & (first <= place_max_elongation).fillna(False)
            compact = f", the largest no more elongated than {place_max_elongation:g}"
            attrs.update(place_max_elongation=place_max_elongation)
        if place_not_wave and IS_BAND in out:
            out[IS_PLACE] = out[IS_PLACE] & ~(out[IS_BAND] | out[IS_TWO_WAVE] | out[IS_SQUARE])
            compact += ", not a band, two-wave or square pattern"
        attrs.update(place_not_wave=int(place_not_wave))
        if place_not_border and IS_BORDER in out:
            out[IS_PLACE] = out[IS_PLACE] & ~out[IS_BORDER]
            compact += ", not a border cell"
        attrs.update(place_not_border=int(place_not_border))
        out[IS_PLACE].attrs = {
            "long_name": f"place cell: spatial_info above the {place_quantile:g} quantile of "
            f"its shuffle null and {lo}-{hi} place fields{compact}"
        }
        attrs.update(place_quantile=place_quantile, place_n_fields=np.array([lo, hi]))
    if not out.data_vars:
        raise AnalysisError(
            "classify needs gridness_60, gridness_60_null_q and hexagonal; or n_waves, "
            "square, plane_wave_share and plane_wave_share_null_q; or spatial_info, "
            "spatial_info_null_q and n_fields (or border_score and border_score_null_q)"
        )
    out.attrs = attrs
    return out
