"""border_score (Solstad et al. 2008) on maps of known truth, its agreement with opexebo's
``border_score`` (a second implementation), and the border class of classify.

Agreement with opexebo (0.7.2, ``opexebo.analysis.border_score``): given the same fields
(opexebo takes them as input; here hippo_rep's, from place_fields at 0.3 of the peak), CM,
DM and b agree to 1e-12 on every map tested, unvisited wall bins included. The one
difference by design: a map with no field is NaN here, -1 in opexebo (and a coverage of 0).
Field detection itself is not compared: opexebo's ``place_field`` is another method
(adaptive thresholds, BNT's), and its output does not plug into its ``border_score``
(marked "EXPERIMENTAL"): its fields lack the ``field_map`` key ``border_coverage`` reads.
"""

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import (
    AnalysisError,
    analyse,
    band_map,
    border_map,
    border_score,
    classify,
    hex_grid_map,
    place_field_map,
    place_fields,
)
from hippo_rep.analysis.border import (
    BORDER_FIELD_THRESHOLD,
    BORDER_WALL_DISTANCE,
    wall_distance_map,
)
from hippo_rep.analysis.classify import BORDER_MIN_SCORE, BORDER_QUANTILE, PLACE_QUANTILE
from hippo_rep.analysis.sessions import session_from_spikes
from hippo_rep.analysis.synthetic_session import (
    boundary_cell_rate,
    poisson_spike_times,
    simulate_trajectory,
)

#: Agreement with opexebo on the same fields (float round-off only).
OPEXEBO_ATOL = 1e-12

WALLS = ("x_min", "x_max", "y_min", "y_max")


def test_a_band_along_each_wall_is_a_border_map():
    for n in (20, 40):
        for wall in WALLS:
            b = border_score(border_map(n, wall))
            assert float(b["border_score"]) > BORDER_MIN_SCORE, (n, wall)
            assert float(b["border_coverage"]) == 1.0 and str(b["border_wall"].values) == wall
    # along a sixth of the wall (and the band's decay beyond, ~2 bins at each end to 0.3 of
    # the peak): CM ~0.2, below the border rule
    b = border_score(border_map(40, "y_max", extent=1 / 6))
    assert 1 / 6 <= float(b["border_coverage"]) <= 1 / 6 + 4 / 40
    assert float(b["border_score"]) < BORDER_MIN_SCORE


def test_a_one_bin_band_scores_what_the_bins_allow():
    """A field one bin deep along a whole wall: CM = 1, DM = 1 bin / (n / 2)."""
    n = 40
    m = xr.DataArray(np.zeros((n, n)), dims=("y", "x"))
    m[:, 0] = 1.0
    b = border_score(m)
    dm = BORDER_WALL_DISTANCE / (n / 2)
    assert float(b["border_distance"]) == pytest.approx(dm)
    assert float(b["border_score"]) == pytest.approx((1 - dm) / (1 + dm))  # ~0.905


def test_a_central_place_field_scores_low():
    b = border_score(place_field_map(40, [(20, 20)], 4.0))
    assert float(b["border_score"]) == -1.0  # touches no wall: CM = 0
    assert str(b["border_wall"].values) == ""
    # a field in a corner touches two walls a little: still far below a border map
    b = border_score(place_field_map(40, [(3, 3)], 3.0))
    assert -1 < float(b["border_score"]) < 0.3


def test_leading_dims_nan_and_no_field():
    maps = xr.concat([border_map(20, "x_min"), place_field_map(20, [(10, 10)], 2.0),
                      xr.full_like(border_map(20), np.nan)], dim="unit")
    b = border_score(maps)
    assert b["border_score"].dims == ("unit",)
    assert np.isnan(float(b["border_score"][2])) and str(b["border_wall"].values[2]) == ""
    # unvisited wall bins: the first visited bin inward stands for them
    m = border_map(20, "x_min").copy()
    m[:, 0] = np.nan
    assert float(border_score(m)["border_coverage"]) == 1.0
    with pytest.raises(ValueError, match="search_width"):
        border_score(m, search_width=0)
    with pytest.raises(ValueError, match="threshold"):
        border_score(m, threshold=1.5)


def test_wall_distances():
    d = wall_distance_map(4, 5)
    assert d.tolist()[0] == [1, 1, 1, 1, 1] and d.tolist()[1] == [1, 2, 2, 2, 1]


# ------------------------------------------------------------------------------ opexebo
def _maps() -> dict[str, xr.DataArray]:
    rng = np.random.default_rng(0)
    maps = {f"border {w} {n}": border_map(n, w, width=s)
            for n, w, s in ((40, "x_min", 1.5), (30, "y_max", 3.0), (24, "x_max", 0.7))}
    maps["border part"] = border_map(40, "y_min", extent=0.6)
    maps["place centre"] = place_field_map(40, [(20, 20)], 4.0)
    maps["place corner"] = place_field_map(32, [(2, 28)], 3.0)
    maps["two places"] = place_field_map(36, [(5, 18), (28, 30)], 3.0, [1.0, 0.7])
    maps["grid"] = hex_grid_map(40, 12.0, 7.0)
    maps["band"] = band_map(40, 15.0, 30.0)
    maps["rectangle"] = border_map((30, 45), "x_max") + place_field_map((30, 45), [(10, 20)], 3)
    noisy = border_map(40, "y_min") + 0.3 * rng.random((40, 40))
    maps["noisy border"] = noisy
    holes = border_map(40, "x_min").copy()
    holes.values[rng.random((40, 40)) < 0.15] = np.nan  # unvisited bins, some at the walls
    holes.values[:5, :3] = np.nan  # a corner unvisited
    maps["unvisited bins"] = holes
    return maps


def _opexebo(m: xr.DataArray) -> tuple[float, float]:
    opexebo = pytest.importorskip("opexebo")
    lab = place_fields(m, threshold=BORDER_FIELD_THRESHOLD)["field_labels"].values
    unvisited = ~np.isfinite(m.values)
    fields = [{"field_map": np.ma.masked_array((lab == k).astype(float), mask=unvisited)}
              for k in range(1, lab.max() + 1)]
    score, coverage = opexebo.analysis.border_score(
        np.ma.masked_invalid(m.values), np.ma.masked_array(lab, mask=unvisited), fields,
        "square")
    return float(score), float(coverage)


@pytest.mark.parametrize("name", list(_maps()))
def test_agrees_with_opexebo_on_the_same_fields(name):
    m = _maps()[name]
    b = border_score(m)
    score, coverage = _opexebo(m)
    assert float(b["border_coverage"]) == pytest.approx(coverage, abs=OPEXEBO_ATOL)
    assert float(b["border_score"]) == pytest.approx(score, abs=OPEXEBO_ATOL)


# ------------------------------------------------------------------------------ classify
def _scores(border, si, elongation=2.0, border_null=(0.3, 0.4)):
    q = xr.DataArray([1.0, 2.0], dims="quantile", coords={"quantile": [0.95, 0.99]})
    bq = xr.DataArray(list(border_null), dims="quantile", coords={"quantile": [0.95, 0.99]})
    n = len(border)
    return xr.Dataset({
        "border_score": ("unit", np.asarray(border, dtype=float)),
        "border_score_null_q": bq.expand_dims(unit=n).transpose("quantile", "unit"),
        "spatial_info": ("unit", np.asarray(si, dtype=float)),
        "spatial_info_null_q": q.expand_dims(unit=n).transpose("quantile", "unit"),
        "n_fields": ("unit", np.ones(n, dtype=int)),
        "field_elongation": (("unit", "field"), np.full((n, 1), elongation)),
    })


def test_border_cells_are_not_place_cells():
    # a border map, a central place field, a border map without information, NaN
    cls = classify(_scores([0.7, -1.0, 0.7, np.nan], [3.0, 3.0, 1.5, 3.0]))
    assert cls["is_border"].values.tolist() == [True, False, False, False]
    assert cls["is_place"].values.tolist() == [False, True, False, True]
    assert "not a border cell" in cls["is_place"].attrs["long_name"]
    # the old rule, for comparison: the border map was a place cell
    old = classify(_scores([0.7, -1.0, 0.7, np.nan], [3.0, 3.0, 1.5, 3.0]),
                   place_not_border=False)
    assert old["is_place"].values.tolist() == [True, True, False, True]
    assert cls.attrs["border_min_score"] == BORDER_MIN_SCORE


def test_synthetic_maps_classified_from_their_scores():
    """The border score of a border map and of a place map, through classify."""
    maps = xr.concat([border_map(40, "x_min"), place_field_map(40, [(20, 20)], 4.0)],
                     dim="unit")
    b = border_score(maps)["border_score"].values
    cls = classify(_scores(b, [3.0, 3.0]))
    assert cls["is_border"].values.tolist() == [True, False]
    assert cls["is_place"].values.tolist() == [False, True]


def test_a_border_score_below_its_own_null_is_no_border_cell():
    """Above the 0.5 threshold and informative, but not above the 99th percentile of its own
    null: not a border cell (a walk that hugs the walls gives such scores by itself)."""
    scores = _scores([0.7, 0.7, 0.7], [3.0, 3.0, 3.0]).assign(
        border_score_null_q=(("quantile", "unit"), [[0.3, 0.3, 0.6], [0.4, 0.69, 0.75]]))
    cls = classify(scores)
    assert cls["is_border"].values.tolist() == [True, True, False]
    assert "quantile of its shuffle null, and spatial_info" in cls["is_border"].attrs[
        "long_name"]
    assert cls.attrs["border_quantile"] == BORDER_QUANTILE == PLACE_QUANTILE
    # the quantile must have been computed, and the null given with the score
    with pytest.raises(AnalysisError, match="0.9 was not computed"):
        classify(_scores([0.7], [3.0]), border_quantile=0.9)
    with pytest.raises(AnalysisError, match="border_score_null_q"):
        classify(_scores([0.7], [3.0]).drop_vars("border_score_null_q"))


# ------------------------------------------------------------------ the border score's null
#: The session of the null's ground truth: minutes, bin side (cm), shuffles.
NULL_MINUTES, NULL_BIN_CM, NULL_SHUFFLES = 5, 5.0, 100


@pytest.fixture(scope="module")
def border_null():
    """A boundary cell along the west wall; the same cell driven by the trajectory's
    positions scrambled in time; a uniform 3 Hz cell. Poisson spikes, one session."""
    rng = np.random.default_rng(3)
    t, x, y = simulate_trajectory(NULL_MINUTES, rng)
    perm = rng.permutation(t.size)
    cells = {"cells": [poisson_spike_times(t, boundary_cell_rate(x, y, "west"), rng),
                       poisson_spike_times(t, boundary_cell_rate(x[perm], y[perm], "west"),
                                           rng),
                       poisson_spike_times(t, np.full(t.size, 3.0), rng)]}
    session = session_from_spikes(x, y, t, cells, arena=(0, 100, 0, 100))
    return analyse(session, shuffles=NULL_SHUFFLES, seed=0, bin_size_cm=NULL_BIN_CM,
                   keep_null=True).isel(env=0)


def test_a_boundary_cell_beats_its_border_null_and_scrambled_or_flat_cells_do_not(border_null):
    an = border_null
    q99 = an["border_score_null_q"].sel(quantile=BORDER_QUANTILE)
    border, scrambled, flat = (an.isel(unit=k) for k in range(3))
    assert float(border["border_score"]) > max(BORDER_MIN_SCORE, float(q99[0]))
    assert bool(border["is_border"]) and str(border["border_wall"].values) == "x_min"
    assert float(border["border_score_percentile"]) == 100.0
    for cell in (scrambled, flat):
        assert not bool(cell["is_border"])
        assert float(cell["border_score_percentile"]) < 100 * BORDER_QUANTILE
    assert float(scrambled["border_score"]) < float(q99[1])
    assert "border_score" in an.attrs["null_method"]


def test_the_border_null_is_per_cell_and_shuffle(border_null):
    """``border_score_null`` (env, unit, shuffle) with ``keep_null``; its quantiles
    (quantile, unit) and the observed score's percentile (unit)."""
    an = border_null
    assert an["border_score_null"].dims == ("unit", "shuffle")
    assert an["border_score_null"].shape == (3, NULL_SHUFFLES)
    assert an["border_score_null_q"].dims == ("quantile", "unit")
    assert an["border_score_percentile"].attrs["units"] == "percent"
    null = an["border_score_null"].values
    assert np.isfinite(null).all() and (null >= -1).all() and (null <= 1).all()
    # the quantiles are those of the kept null
    np.testing.assert_allclose(an["border_score_null_q"].sel(quantile=BORDER_QUANTILE),
                               np.nanquantile(null, BORDER_QUANTILE, axis=1))
