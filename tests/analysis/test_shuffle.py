import math

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import (
    AnalysisError,
    classify,
    grid_scores,
    rate_maps,
    rate_maps_from_nodes,
    shuffle_null,
    synthetic_recording,
    unit_activity,
)
from hippo_rep.analysis._checks import blockwise
from hippo_rep.analysis.gridscore import gridness_60_block
from hippo_rep.analysis.recordings import node_index
from hippo_rep.analysis.shuffle import (
    SCORES,
    _apply_scorers,
    circular_shifts,
    null_scores,
)

from .helpers import as_map, with_holes


@pytest.mark.parametrize("n_time", [2, 10, 101, 3000])
def test_circular_shifts_stay_away_from_the_real_alignment(n_time):
    sh = circular_shifts(n_time, 5, 200, np.random.default_rng(0))
    lo = max(1, math.ceil(0.1 * n_time))
    assert sh.shape == (5, 200)
    assert sh.min() >= lo and sh.max() <= n_time - lo


@pytest.mark.parametrize(("n_time", "frac", "match"), [(1, 0.1, "too short"),
                                                       (100, 0.5, "min_shift_fraction")])
def test_circular_shifts_bad(n_time, frac, match):
    with pytest.raises(AnalysisError, match=match):
        circular_shifts(n_time, 2, 3, np.random.default_rng(0), frac)


def _null(rec, variable, shifts,
          names=("gridness_60", "spatial_info", "place_score", "plane_wave_share",
                 "border_score"), sigma=None):
    maps = rate_maps(rec, variable, smooth_sigma=sigma)
    scorers = [SCORES[k] for k in names]
    sh = xr.DataArray(np.asarray(shifts), dims=("env", "shuffle"))
    out = null_scores(unit_activity(rec, variable), node_index(rec), sh,
                      maps.node_map.values, maps.sizes["world_node"], scorers, names,
                      maps.attrs["smooth_sigma_bins"])
    return maps, scorers, out


@pytest.mark.parametrize(("world", "variable", "sigma"), [("square:9", "g", None),
                                                          ("square:9", "memory_activity", 1.0),
                                                          ("hex:5", "g", None)])
def test_null_at_zero_shift_reproduces_the_observed_scores(world, variable, sigma):
    rec = synthetic_recording(world, n_env=2, n_steps=500, n_memory=10, seed=5)
    maps, scorers, out = _null(rec, variable, np.zeros((2, 2), dtype=int), sigma=sigma)
    observed = _apply_scorers(scorers, maps)
    for k, obs in observed.items():
        for s in range(2):
            got = out[k].isel(shuffle=s)
            xr.testing.assert_allclose(got.drop_vars(list(got.coords)),
                                       obs.transpose("env", "unit").drop_vars(list(obs.coords)))


def test_vectorised_null_equals_rolling_the_activity():
    rec = synthetic_recording("square:8", n_env=2, n_steps=400, n_memory=12, seed=6)
    shifts = np.array([[40, 133, 360], [57, 200, 41]])
    for variable in ("g", "memory_activity"):
        maps, scorers, out = _null(rec, variable, shifts)
        act = unit_activity(rec, variable)
        for e in range(2):
            for s in range(3):
                rolled = act.isel(env=[e]).copy(
                    data=np.roll(act.values[[e]], shifts[e, s], axis=1))
                naive = rate_maps_from_nodes(rolled, node_index(rec).isel(env=[e]),
                                             rec.node_x.values, rec.node_y.values,
                                             node_dim="world_node")
                ref = _apply_scorers(scorers, naive)
                for k in out:
                    got = out[k].isel(env=[e], shuffle=s)
                    want = ref[k].transpose("env", "unit")
                    xr.testing.assert_allclose(got.drop_vars(list(got.coords)),
                                               want.drop_vars(list(want.coords)))


@pytest.mark.parametrize("size", [11, 20, (15, 18)])
@pytest.mark.parametrize("holes", ["none", "random10", "block"])
def test_fast_gridness_equals_grid_scores(size, holes):
    rng = np.random.default_rng(1)
    shape = (size, size) if isinstance(size, int) else size
    maps = rng.random((6,) + shape)
    maps[0] = 1.0  # constant: NaN in both
    da = as_map(maps)
    if holes != "none":
        da = xr.concat([with_holes(m, holes, rng) for m in da], dim="d0")
    want = grid_scores(da).gridness_60
    got = want.copy(data=blockwise(gridness_60_block, da.values, 2)[0])
    xr.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert np.isnan(got.values[0])


def test_shuffle_null_outputs(small_rec):
    ds = shuffle_null(small_rec, ["gridness_60", "spatial_info"], n=12, rng=3)
    for k in ("gridness_60", "spatial_info"):
        assert ds[k].dims == ("env", "unit")
        assert ds[f"{k}_null"].dims == ("env", "unit", "shuffle")
        assert ds[f"{k}_null_q"].dims == ("quantile", "env", "unit")
        pct = ds[f"{k}_percentile"]
        assert ((pct >= 0) & (pct <= 100)).all()
        q = ds[f"{k}_null_q"]
        assert (q.sel(quantile=0.95) <= q.sel(quantile=0.99)).all()
        xr.testing.assert_allclose(
            q.sel(quantile=0.99, drop=True),
            ds[f"{k}_null"].quantile(0.99, "shuffle").drop_vars("quantile"))
    assert ds.shuffle_shift.dims == ("env", "shuffle")
    assert ds.attrs["n_shuffles"] == 12 and ds.attrs["seed"] == 3
    assert ds.attrs["min_shift_steps"] >= 150
    # same seed, same result; chunked over units, same result
    again = shuffle_null(small_rec, ["gridness_60", "spatial_info"], n=12, rng=3, chunk_units=5)
    xr.testing.assert_allclose(ds, again)


def test_border_score_null_of_a_recording(small_rec):
    """The built-in "border_score": the observed score is border_score of the rate maps; its
    null has dims (env, unit, shuffle), scores in [-1, 1] (NaN: a shuffled map without a
    field)."""
    from hippo_rep.analysis import border_score

    ds = shuffle_null(small_rec, "border_score", n=8, rng=2)
    maps = rate_maps(small_rec, "g")
    want = border_score(maps.rate_map)["border_score"].transpose("env", "unit")
    np.testing.assert_allclose(ds["border_score"].values, want.values)
    assert ds["border_score_null"].dims == ("env", "unit", "shuffle")
    assert ds["border_score_null"].sizes["shuffle"] == 8
    null = ds["border_score_null"].values
    assert ((null[np.isfinite(null)] >= -1) & (null[np.isfinite(null)] <= 1)).all()
    assert ds["border_score_null_q"].dims == ("quantile", "env", "unit")


def test_one_score_equals_the_same_score_beside_another(small_rec):
    """(A single score failed in apply_ufunc, which wants a bare array for one output.)"""
    one = shuffle_null(small_rec, n=6, rng=4)  # default: gridness_60 alone
    two = shuffle_null(small_rec, ["gridness_60", "spatial_info"], n=6, rng=4)
    assert "spatial_info" not in one
    xr.testing.assert_identical(one.gridness_60_null, two.gridness_60_null)
    xr.testing.assert_identical(one.gridness_60_percentile, two.gridness_60_percentile)


def test_custom_score_function(small_rec):
    def peak(maps):
        return xr.Dataset({"peak": maps.rate_map.max(("y", "x")),
                           "mean": maps.rate_map.mean(("y", "x"))})

    ds = shuffle_null(small_rec, peak, n=5, rng=0, variable="g")
    assert {"peak", "peak_null", "mean_null_q"} <= set(ds.data_vars)
    # a circular shift keeps the visits per node, so the occupancy-weighted mean of a unit
    # barely moves; its peak does
    assert float(ds.peak_null.std("shuffle").mean()) > 0


@pytest.mark.parametrize("n", [0, -3, 2.5, True])
def test_shuffle_null_needs_at_least_one_shuffle(small_rec, n):
    with pytest.raises(AnalysisError, match="number of shuffles"):
        shuffle_null(small_rec, "gridness_60", n=n)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"score_fn": "gridness_45"}, "unknown score"),
    ({"score_fn": 3}, "score_fn"),
    ({"score_fn": []}, "no score"),
    ({"rng": "seed"}, "rng"),
    ({"variable": "h"}, "unknown activity variable"),
])
def test_shuffle_null_bad_arguments(small_rec, kwargs, match):
    with pytest.raises(AnalysisError, match=match):
        shuffle_null(small_rec, **{"score_fn": "spatial_info", "n": 2, **kwargs})


def test_planted_units_are_classified(small_rec, small_analysis):
    an = small_analysis
    planted = small_rec.planted.values
    for pop in ("g", "g_pi"):
        sub = an.sel(unit=an.variable == pop)
        grid = sub.isel(unit=np.flatnonzero(planted == "grid"))
        place = sub.isel(unit=np.flatnonzero(planted == "place"))
        rand = sub.isel(unit=np.flatnonzero(planted == "random"))
        assert grid.is_grid.all() and grid.is_grid_threshold.all() and grid.hexagonal.all()
        assert not (grid.is_band | grid.is_two_wave | grid.is_square).any()
        # planted grids are plane waves far beyond what shuffled activity makes
        assert (grid.plane_wave_share_percentile >= 95).all()
        assert float(rand.plane_wave_share_percentile.median()) < 95
        assert place.is_place.all()
        assert float(rand.is_grid.mean()) <= 0.25
        assert float(rand.is_place.mean()) <= 0.1
        assert not grid.is_place.any() or float(grid.is_place.mean()) < 1
    mem = an.sel(unit=an.variable == "memory_activity")
    assert float(mem.is_place.mean()) >= 0.9


def test_classify_rules():
    q = xr.DataArray([[0.4, 0.4, 0.4, 0.4, 0.4], [0.6, 0.4, 0.4, 0.4, 0.4]],
                     dims=("quantile", "unit"),
                     coords={"quantile": [0.95, 0.99]})
    scores = xr.Dataset({
        "gridness_60": ("unit", [0.5, 0.45, np.nan, 0.2, 0.35]),
        "gridness_60_null_q": q,
        "spatial_info": ("unit", [1.0, 1.0, 1.0, np.nan, 0.1]),
        "spatial_info_null_q": q,
        "n_fields": ("unit", [1, 4, 3, 1, 2]),
        "hexagonal": ("unit", [True, True, True, True, True]),
    })
    out = classify(scores)
    xr.testing.assert_equal(out.is_grid, xr.DataArray([True, True, False, False, False],
                                                      dims="unit"))
    xr.testing.assert_equal(out.is_grid_threshold,
                            xr.DataArray([True, True, False, False, True], dims="unit"))
    xr.testing.assert_equal(out.is_place, xr.DataArray([True, False, True, False, False],
                                                       dims="unit"))
    strict = classify(scores, grid_quantile=0.99, grid_threshold=0.46)
    assert strict.is_grid.values.tolist() == [False, True, False, False, False]
    assert strict.is_grid_threshold.values.tolist() == [True, False, False, False, False]
    with pytest.raises(AnalysisError, match="0.9 was not computed"):
        classify(scores, grid_quantile=0.9)
    with pytest.raises(AnalysisError, match="classify needs"):
        classify(scores[["n_fields"]])
    only_grid = classify(scores.drop_vars("n_fields"))
    assert set(only_grid.data_vars) == {"is_grid", "is_grid_threshold"}
    # a grid needs a hexagonal plane-wave pattern: gridness (however high) is not enough
    not_hex = classify(scores.assign(hexagonal=("unit", [False, True, True, True, True])))
    assert not_hex.is_grid.values.tolist() == [False, True, False, False, False]
    assert not_hex.is_grid_threshold.values.tolist() == [True, True, False, False, True]
    with pytest.raises(AnalysisError, match="needs 'hexagonal'"):
        classify(scores.drop_vars("hexagonal"))


def test_classify_plane_wave_classes():
    q = xr.DataArray([[0.5] * 6, [0.6] * 6], dims=("quantile", "unit"),
                     coords={"quantile": [0.95, 0.99]})
    scores = xr.Dataset({
        "n_waves": ("unit", [1, 2, 2, 3, 1, 0]),
        "square": ("unit", [False, False, True, False, False, False]),
        "plane_wave_share": ("unit", [0.9, 0.9, 0.9, 0.9, 0.4, np.nan]),
        "plane_wave_share_null_q": q,
    })
    out = classify(scores)
    assert out.is_band.values.tolist() == [True, False, False, False, False, False]
    assert out.is_two_wave.values.tolist() == [False, True, False, False, False, False]
    assert out.is_square.values.tolist() == [False, False, True, False, False, False]
    assert "is_grid" not in out and out.attrs["wave_quantile"] == 0.95
    strict = classify(scores, wave_quantile=0.99)
    assert strict.is_band.values.tolist() == [True, False, False, False, False, False]


@pytest.mark.parametrize("floor, expected", [(0.0, [False, False, True]),
                                             (-1.0, [True, False, True]),
                                             (0.5, [False, False, False])])
def test_classify_grid_floor(floor, expected):
    # Unit 0 is anti-hexagonal but beats an even more negative null; unit 2 is a real grid.
    q = xr.DataArray([[-0.6, 0.1, 0.2], [-0.5, 0.2, 0.3]], dims=("quantile", "unit"),
                     coords={"quantile": [0.95, 0.99]})
    scores = xr.Dataset({"gridness_60": ("unit", [-0.3, 0.05, 0.45]), "gridness_60_null_q": q,
                         "hexagonal": ("unit", [True, True, True])})
    out = classify(scores, grid_min_score=floor)
    assert out.is_grid.values.tolist() == expected
    assert out.attrs["grid_min_score"] == floor


def test_classify_a_plane_wave_pattern_is_not_a_place_cell():
    """Units 0-2 are spatially informative with 2 fields: a band, a two-wave and a square
    pattern are not place cells; unit 3 (no significant wave) is; unit 4 is a single field,
    never a wave class, so the rule cannot remove a one-field place cell."""
    q = xr.DataArray([[0.5] * 5, [0.6] * 5], dims=("quantile", "unit"),
                     coords={"quantile": [0.95, 0.99]})
    scores = xr.Dataset({
        "n_waves": ("unit", [1, 2, 2, 1, 1]),
        "square": ("unit", [False, False, True, False, False]),
        "plane_wave_share": ("unit", [0.9, 0.9, 0.9, 0.4, 0.9]),
        "plane_wave_share_null_q": q,
        "single_field": ("unit", [False, False, False, False, True]),
        "spatial_info": ("unit", [1.0] * 5),
        "spatial_info_null_q": q,
        "n_fields": ("unit", [2, 2, 2, 2, 1]),
    })
    out = classify(scores)
    assert out.is_place.values.tolist() == [False, False, False, True, True]
    assert out.is_band.values.tolist() == [True, False, False, False, False]
    assert "not a band" in out.is_place.attrs["long_name"] and out.attrs["place_not_wave"] == 1
    old = classify(scores, place_not_wave=False)
    assert old.is_place.values.tolist() == [True] * 5
    # without the plane-wave inputs the place rule is as before
    assert classify(scores[["spatial_info", "spatial_info_null_q", "n_fields"]]
                    ).is_place.values.all()
