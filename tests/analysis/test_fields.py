import numpy as np
import pytest
import xarray as xr
from scipy import ndimage

from hippo_rep.analysis import hex_grid_map, place_field_map, place_fields, place_score

from .helpers import as_map, with_holes

METHODS = ["fraction", "adaptive"]


def gaussian_area(size, centre, sigma, threshold):
    """Bins of an isotropic Gaussian at or above threshold x peak (peak = 1 at the centre)."""
    yy, xx = np.indices((size, size))
    r2 = (xx - centre[0]) ** 2 + (yy - centre[1]) ** 2
    return int((np.exp(-r2 / (2 * sigma**2)) >= threshold).sum())


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("sigma", [1.5, 2.5, 4.0])
@pytest.mark.parametrize("threshold", [0.2, 0.5])
def test_single_gaussian_field_count_area_centroid(method, sigma, threshold):
    size, centre = 32, (13.0, 17.0)
    ds = place_fields(place_field_map(size, [centre], sigma), threshold=threshold, method=method)
    assert int(ds.n_fields) == 1
    expected = gaussian_area(size, centre, sigma, threshold)
    if method == "fraction":
        assert float(ds.field_area[0]) == expected
    else:  # stops at the threshold floor or earlier, never beyond
        assert 0.5 * expected <= float(ds.field_area[0]) <= expected
    assert float(ds.field_centroid_x[0]) == pytest.approx(centre[0], abs=1e-6)
    assert float(ds.field_centroid_y[0]) == pytest.approx(centre[1], abs=1e-6)
    assert float(ds.field_peak[0]) == pytest.approx(1.0)
    assert np.isnan(ds.field_area.values[1:]).all()
    assert int((ds.field_labels == 1).sum()) == int(ds.field_area[0])


@pytest.mark.parametrize("method", METHODS)
def test_several_fields_ranked_by_mass(method):
    centres = [(6.0, 6.0), (22.0, 20.0), (7.0, 24.0)]
    sigmas, amps = [1.5, 3.0, 2.0], [1.0, 0.8, 0.7]
    m = place_field_map(30, centres, sigmas, amps)
    ds = place_fields(m, method=method)
    assert int(ds.n_fields) == 3
    masses = ds.field_mass.values[:3]
    assert np.all(np.diff(masses) < 0)
    # mass ~ amplitude x sigma^2: order (22, 20), (7, 24), (6, 6)
    np.testing.assert_allclose(ds.field_centroid_x.values[:3], [22, 7, 6], atol=0.05)
    np.testing.assert_allclose(ds.field_centroid_y.values[:3], [20, 24, 6], atol=0.05)
    assert set(np.unique(ds.field_labels.values)) == {0, 1, 2, 3}


def test_adaptive_splits_fields_that_fraction_merges():
    m = place_field_map(30, [(12.0, 15.0), (18.0, 15.0)], 2.0)
    assert int(place_fields(m, method="fraction").n_fields) == 1
    ds = place_fields(m, method="adaptive")
    assert int(ds.n_fields) == 2
    np.testing.assert_allclose(sorted(ds.field_centroid_x.values[:2]), [12, 18], atol=0.5)
    assert float(ds.field_area[0]) == float(ds.field_area[1])


def test_adaptive_stops_before_a_hole():
    yy, xx = np.indices((21, 21))
    r = np.hypot(yy - 10, xx - 10)
    ring = np.exp(-((r - 5) ** 2) / 2.0)  # ring-shaped activity, peaks all around r = 5
    ring[10, 15] += 0.1  # a single top peak on the ring
    ds = place_fields(as_map(ring), method="adaptive", threshold=0.2)
    labels = ds.field_labels.values
    assert int(ds.n_fields) >= 1
    for k in range(1, int(ds.n_fields) + 1):
        field = labels == k
        np.testing.assert_array_equal(ndimage.binary_fill_holes(field), field)
    whole = place_fields(as_map(ring), method="fraction").field_labels.values == 1
    assert ndimage.binary_fill_holes(whole).sum() > whole.sum()  # the fraction field has a hole


@pytest.mark.parametrize("method", METHODS)
def test_min_area_and_max_fields(method):
    m = place_field_map(40, [(5, 5), (20, 5), (35, 5), (5, 30), (20, 30), (35, 30)], 1.2)
    ds = place_fields(m, method=method, min_area=3, max_fields=4)
    assert int(ds.n_fields) == 6
    assert ds.sizes["field"] == 4
    assert np.isfinite(ds.field_area.values).all()
    assert int(ds.field_labels.max()) == 6
    big = place_fields(m, method=method, min_area=50)
    assert int(big.n_fields) == 0
    assert (big.field_labels.values == 0).all()


@pytest.mark.parametrize("method", METHODS)
def test_nan_bins_never_in_fields(method):
    rng = np.random.default_rng(0)
    m = with_holes(place_field_map(30, [(15, 15)], 3.0), "random10", rng)
    ds = place_fields(m, method=method)
    assert int(ds.n_fields) == 1
    assert (ds.field_labels.values[np.isnan(m.values)] == 0).all()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fill", [0.0, -1.0, np.nan])
def test_no_fields_without_positive_activity(method, fill):
    ds = place_fields(as_map(np.full((10, 10), fill)), method=method)
    assert int(ds.n_fields) == 0
    assert np.isnan(ds.field_area.values).all()


@pytest.mark.parametrize("method", METHODS)
def test_batched_equals_single(method):
    maps = xr.concat(
        [
            place_field_map(20, [(5, 5)], 2.0),
            place_field_map(20, [(5, 5), (15, 14)], 1.5),
            hex_grid_map(20, 7, 10),
        ],
        dim="unit",
    ).expand_dims(env=2)
    ds = place_fields(maps, method=method)
    assert ds.n_fields.dims == ("env", "unit")
    assert ds.field_labels.dims == ("env", "unit", "y", "x")
    for u in range(3):
        single = place_fields(maps[1, u], method=method)
        xr.testing.assert_allclose(ds.isel(env=1, unit=u), single)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"threshold": 0}, "threshold"),
        ({"threshold": 1.5}, "threshold"),
        ({"min_area": 0}, "min_area"),
        ({"max_fields": 2.5}, "max_fields"),
        ({"method": "bnt"}, "method must be one of"),
    ],
)
def test_place_fields_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        place_fields(place_field_map(10, [(5, 5)]), **kwargs)


# ------------------------------------------------------------------ place score


def test_place_score_exact_values():
    one = np.zeros((10, 10))
    one[2:5, 3:6] = 1.0
    two = one.copy()
    two[7:9, 1:4] = 1.5  # 6 bins x 1.5 = 9 = the first block's mass
    diffuse = one.copy()
    diffuse[diffuse == 0] = 0.1  # above 0.2 x peak? no: 0.1 < 0.2
    scores = place_score(as_map(np.stack([one, two, diffuse]))).values
    np.testing.assert_allclose(scores, [1.0, 0.5, 9 / (9 + 0.1 * 91)])


def test_place_score_separates_place_fields_from_grids():
    place = place_score(place_field_map(30, [(10, 12)], 2.5))
    grid = place_score(hex_grid_map(30, 7, 10))
    assert float(place) > 0.7
    assert float(grid) < 0.2


@pytest.mark.parametrize("fill", [0.0, np.nan, -2.0])
def test_place_score_nan_without_positive_activity(fill):
    assert np.isnan(float(place_score(as_map(np.full((6, 6), fill)))))


def test_place_score_ignores_negative_activity_and_nan():
    m = np.full((8, 8), -1.0)
    m[1:3, 1:3] = 2.0
    m[6, 6] = np.nan
    assert float(place_score(as_map(m))) == pytest.approx(1.0)


def test_place_score_bad_threshold():
    with pytest.raises(ValueError, match="threshold"):
        place_score(as_map(np.ones((5, 5))), threshold=-0.1)


def test_dask_backed_maps():
    pytest.importorskip("dask")
    maps = xr.concat(
        [place_field_map(16, [(4, 4), (11, 12)], 1.5), hex_grid_map(16, 6, 0)] * 2, dim="unit"
    )
    for method in METHODS:
        lazy = place_fields(maps.chunk({"unit": 2}), method=method)
        assert lazy.n_fields.chunks is not None
        xr.testing.assert_identical(lazy.compute(), place_fields(maps, method=method))
    xr.testing.assert_identical(place_score(maps.chunk({"unit": 1})).compute(), place_score(maps))


@pytest.mark.parametrize("shape,expected", [((1, 1), 1.0), ((4, 4), 1.0), ((1, 6), 6.0),
                                            ((9, 1), 9.0), ((2, 8), 4.0)])
def test_field_elongation_of_uniform_rectangles(shape, expected):
    """A uniform h x w block of bins (each a uniform square): principal variances h²/12 and
    w²/12, so the elongation is max(h, w) / min(h, w) exactly."""
    m = np.zeros((20, 20))
    h, w = shape
    m[5:5 + h, 3:3 + w] = 1.0
    ds = place_fields(as_map(m), min_area=1)
    assert int(ds.n_fields) == 1
    assert float(ds.field_elongation[0]) == pytest.approx(expected, rel=1e-9)


def test_field_elongation_is_rotation_invariant_and_round_for_a_gaussian():
    ds = place_fields(place_field_map(40, [(20.0, 20.0)], 4.0))
    assert float(ds.field_elongation[0]) == pytest.approx(1.0, abs=0.02)
    diag = np.zeros((30, 30))
    for i in range(12):  # a diagonal stripe two bins wide
        diag[5 + i, 5 + i] = diag[5 + i, 6 + i] = 1.0
    assert float(place_fields(as_map(diag), min_area=1).field_elongation[0]) > 4
