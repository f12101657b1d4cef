import numpy as np
import pytest
import xarray as xr
from scipy import ndimage

from hippo_rep.analysis import (
    band_map,
    band_scores,
    grid_scores,
    hex_grid_map,
    place_field_map,
    square_grid_map,
)
from hippo_rep.analysis.gridscore import (
    BNT_ROTATION_ORDER,
    DEEPMIND_ROTATION_ORDER,
    GRID_ANGLES,
    _rotate_points,
    _rotation_operator,
)

from .helpers import angle_diff, as_map, direct_deepmind, with_holes

HEX_CASES = [
    (20, 4),
    (20, 5),
    (20, 7),
    (40, 6),
    (40, 12),
    (40, 16),
]
ORIENTATIONS = [0.0, 8.0, 23.5, 41.0, 57.0]


def scalar(ds, name):
    return float(ds[name])


# ------------------------------------------------------------------ hexagonal grids


@pytest.mark.parametrize(("size", "spacing"), HEX_CASES)
@pytest.mark.parametrize("orientation", ORIENTATIONS)
def test_deepmind_hex_grid_high_score_and_geometry(size, spacing, orientation):
    m = hex_grid_map(size, spacing, orientation, phase=(2.3, 1.1))
    ds = grid_scores(m, method="deepmind")
    assert scalar(ds, "gridness_60") > 1.0
    assert scalar(ds, "spacing") == pytest.approx(spacing, rel=0.05)
    assert angle_diff(scalar(ds, "orientation"), orientation, 60) < 3
    assert 0 <= scalar(ds, "orientation") < 60
    assert str(ds.nan_reason.values) == ""


@pytest.mark.parametrize(
    ("size", "spacing", "low", "high"), [(40, 12, 1.5, 1.75), (20, 5, 1.25, 1.5)]
)
def test_deepmind_reference_values(size, spacing, low, high):
    # the DeepMind code's values (Banino et al. 2018): spacing 12 on 40 x 40 ~1.6, spacing 5
    # on 20 x 20 ~1.35
    g = [
        scalar(grid_scores(hex_grid_map(size, spacing, o)), "gridness_60") for o in (0, 10, 20, 30)
    ]
    assert low < np.mean(g) < high


@pytest.mark.parametrize(("size", "spacing"), [(30, 10), (40, 8), (40, 12), (40, 16)])
@pytest.mark.parametrize("orientation", [3.0, 31.0, 52.0])
def test_bnt_hex_grid_high_score_and_geometry(size, spacing, orientation):
    # (the default 2-bin smoothing biases the spacing up by ~2-3% here, ~5% on 20 x 20)
    ds = grid_scores(hex_grid_map(size, spacing, orientation, phase=(1.0, 4.0)), method="bnt")
    assert scalar(ds, "gridness_60") > 0.9
    assert scalar(ds, "spacing") == pytest.approx(spacing, rel=0.05)
    assert angle_diff(scalar(ds, "orientation"), orientation, 60) < 3
    assert ds.attrs["grid_score_method"] == "bnt"
    assert ds.attrs["min_max"] == 1
    assert 3 <= scalar(ds, "best_radius") <= size // 2


def test_bnt_small_spacing_needs_less_smoothing():
    m = hex_grid_map(20, 5, 10)
    assert scalar(grid_scores(m, method="bnt", smooth_sigma=1.0), "gridness_60") > 0.9


# ------------------------------------------------------------------ other map types


@pytest.mark.parametrize("method", ["deepmind", "bnt"])
@pytest.mark.parametrize(("size", "spacing"), [(20, 8), (40, 10), (40, 14)])
def test_square_grid_scores_at_90_not_60(method, size, spacing):
    ds = grid_scores(square_grid_map(size, spacing, 15), method=method)
    assert scalar(ds, "gridness_60") < 0
    assert scalar(ds, "gridness_90") > 0.8


def test_square_grid_reference_values():
    ds = grid_scores(square_grid_map(40, 10, 0))
    assert scalar(ds, "gridness_60") == pytest.approx(-0.3, abs=0.1)
    assert scalar(ds, "gridness_90") == pytest.approx(1.2, abs=0.2)


@pytest.mark.parametrize("method", ["deepmind", "bnt"])
@pytest.mark.parametrize("size", [20, 40])
def test_place_field_and_band_are_not_grids(method, size):
    maps = [place_field_map(size, [(size * 0.3, size * 0.6)], size / 8)]
    if method == "deepmind":
        # (a band of wavelength N / 4 on 40 x 40 scores 0.55 with "bnt", as with opexebo:
        # see test_gridscore_opexebo.py)
        maps.append(band_map(size, size / 4, 20))
    for m in maps:
        assert scalar(grid_scores(m, method=method), "gridness_60") < 0.5


# ------------------------------------------------------------------ exactness


def _test_maps():
    rng = np.random.default_rng(11)
    noisy_grid = hex_grid_map(20, 6, 17).values + 0.4 * rng.standard_normal((20, 20))
    return [
        rng.random((20, 20)),
        noisy_grid,
        hex_grid_map(16, 5, 40).values,
        rng.random((12, 12)),
        rng.random((14, 18)),
        square_grid_map(20, 6, 0).values,
    ]


@pytest.mark.parametrize("index", range(6))
@pytest.mark.parametrize("min_max", [False, True])
@pytest.mark.parametrize("min_overlap", [1, 20])
def test_deepmind_equals_direct_implementation(index, min_max, min_overlap):
    a = _test_maps()[index]
    ds = grid_scores(as_map(a), method="deepmind", min_max=min_max, min_overlap=min_overlap)
    g60, g90, radius = direct_deepmind(a, min_overlap=min_overlap, min_max=min_max)
    assert scalar(ds, "gridness_60") == pytest.approx(g60, abs=1e-6)
    assert scalar(ds, "gridness_90") == pytest.approx(g90, abs=1e-6)
    assert scalar(ds, "best_radius") == pytest.approx(radius)


@pytest.mark.parametrize("shape", [(39, 39), (25, 31)])
@pytest.mark.parametrize("order", [DEEPMIND_ROTATION_ORDER, BNT_ROTATION_ORDER])
def test_rotation_operator_equals_ndimage_rotate(shape, order):
    rng = np.random.default_rng(3)
    imgs = rng.standard_normal((3,) + shape)
    points = np.arange(shape[0] * shape[1])
    op = _rotation_operator(shape, GRID_ANGLES, order, points)
    got = _rotate_points(imgs, op, order, len(GRID_ANGLES))  # (P, A, B)
    for ia, angle in enumerate(GRID_ANGLES):
        for b in range(3):
            ref = ndimage.rotate(imgs[b], angle, reshape=False, order=order)
            np.testing.assert_allclose(got[:, ia, b], ref.ravel(), atol=1e-12)


# ------------------------------------------------------------------ NaN handling


@pytest.mark.parametrize("method", ["deepmind", "bnt"])
@pytest.mark.parametrize("holes", ["random10", "block", "circle"])
@pytest.mark.parametrize(("size", "spacing"), [(20, 7), (40, 12)])
def test_nan_bins_change_scores_little(method, holes, size, spacing):
    rng = np.random.default_rng(size + spacing)
    m = hex_grid_map(size, spacing, 25)
    clean = grid_scores(m, method=method)
    holey = grid_scores(with_holes(m, holes, rng), method=method)
    for name in ("gridness_60", "gridness_90", "spacing", "orientation"):
        assert np.isfinite(scalar(holey, name))
    assert abs(scalar(holey, "gridness_60") - scalar(clean, "gridness_60")) < 0.15
    assert scalar(holey, "spacing") == pytest.approx(scalar(clean, "spacing"), rel=0.05)
    if method == "deepmind":  # bnt's smoothing biases the spacing itself (see docstring)
        assert scalar(holey, "spacing") == pytest.approx(spacing, rel=0.05)
    assert angle_diff(scalar(holey, "orientation"), 25, 60) < 3


@pytest.mark.parametrize("size", [5, 6, 9, 20, 40])
@pytest.mark.parametrize("nan_frac", [0.0, 0.3, 0.6, 0.9])
@pytest.mark.parametrize("min_overlap", [None, 20])
def test_deepmind_never_nan_for_finite_nonconstant_maps(size, nan_frac, min_overlap):
    rng = np.random.default_rng(size)
    vals = rng.random((8, size, size))
    vals[rng.random(vals.shape) < nan_frac] = np.nan
    cnt = np.isfinite(vals).sum(axis=(1, 2))
    enough = cnt >= (min_overlap or 2)
    ds = grid_scores(as_map(vals), min_overlap=min_overlap)
    assert np.isfinite(ds.gridness_60.values[enough]).all()
    assert np.isfinite(ds.gridness_90.values[enough]).all()
    assert (ds.nan_reason.values[enough] == "").all()
    expected = np.where(cnt == 0, "all_nan", np.where(cnt == 1, "constant", "too_few_bins"))
    np.testing.assert_array_equal(ds.nan_reason.values[~enough], expected[~enough])


@pytest.mark.parametrize("method", ["deepmind", "bnt"])
def test_degenerate_maps_give_nan_with_reason(method):
    few = np.full((20, 20), np.nan)
    few[0, :10] = np.arange(10.0)  # 10 finite, non-constant bins: fewer than min_overlap
    vals = np.stack(
        [
            np.full((20, 20), 2.0),
            np.full((20, 20), np.nan),
            few,
            hex_grid_map(20, 8, 0).values,
        ]
    )
    ds = grid_scores(as_map(vals), method=method, min_overlap=20)
    assert list(ds.nan_reason.values[:3]) == ["constant", "all_nan", "too_few_bins"]
    assert np.isnan(ds.gridness_60.values[:3]).all()
    assert np.isnan(ds.spacing.values[:3]).all()
    assert np.isfinite(ds.gridness_60.values[3])
    assert "constant" in ds.attrs["nan_reason"]


def test_bnt_central_field_too_large_is_no_annulus():
    m = place_field_map(20, [(3, 3)], 6.0)  # one broad field in a corner
    ds = grid_scores(m, method="bnt")
    assert str(ds.nan_reason.values) == "no_annulus"
    assert np.isnan(scalar(ds, "gridness_60"))


# ------------------------------------------------------------------ batching, dask, attrs


@pytest.mark.parametrize("method", ["deepmind", "bnt"])
def test_leading_dims_match_single_maps(method):
    rng = np.random.default_rng(5)
    vals = np.stack(
        [
            np.stack([hex_grid_map(20, s, o).values for s in (5, 8)])
            + 0.1 * rng.standard_normal((2, 20, 20))
            for o in (0, 30, 50)
        ]
    )
    vals[1, 0, :3, :4] = np.nan
    maps = xr.DataArray(vals, dims=("env", "unit", "y", "x"), coords={"env": [1, 2, 3]})
    ds = grid_scores(maps, method=method)
    assert ds.gridness_60.dims == ("env", "unit")
    np.testing.assert_array_equal(ds.env, [1, 2, 3])
    for e in range(3):
        for u in range(2):
            single = grid_scores(maps[e, u], method=method)
            xr.testing.assert_allclose(
                ds.isel(env=e, unit=u).drop_vars("nan_reason"), single.drop_vars("nan_reason")
            )


def test_dask_backed_maps():
    pytest.importorskip("dask")
    rng = np.random.default_rng(6)
    maps = as_map(rng.random((6, 12, 12)))
    lazy = grid_scores(maps.chunk({"d0": 3}))
    assert lazy.gridness_60.chunks is not None
    xr.testing.assert_allclose(lazy.compute(), grid_scores(maps))


def test_attrs_document_the_method():
    ds = grid_scores(hex_grid_map(20, 6))
    assert ds.attrs["grid_score_method"] == "deepmind"
    assert ds.attrs["min_max"] == 0
    assert ds.attrs["min_overlap"] == 1  # as the reference code
    assert "linspace(0.4, 1.0, 10)" in ds.attrs["rings"]
    assert ds.spacing.attrs["units"] == "bins"
    assert "degrees" in ds.orientation.attrs["units"]


@pytest.mark.parametrize(
    ("maps", "kwargs", "exc", "match"),
    [
        (as_map(np.zeros((10, 10))), {"method": "matlab"}, ValueError, "registered grid method"),
        (as_map(np.zeros((10, 10))), {"min_overlap": -1}, ValueError, "min_overlap"),
        (as_map(np.zeros((10, 10))), {"smooth_sigma": -1}, ValueError, "smooth_sigma"),
        (xr.DataArray(np.zeros((10, 10)), dims=("row", "col")), {}, ValueError, "last two"),
        (np.zeros((10, 10)), {}, TypeError, "DataArray"),
    ],
)
def test_grid_scores_bad_inputs(maps, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        grid_scores(maps, **kwargs)


# ------------------------------------------------------------------ band scores


@pytest.mark.parametrize("size", [20, 40])
@pytest.mark.parametrize(("wavelength", "orientation"), [(5, 0), (7, 35), (10, 100), (6, 165)])
def test_band_cells_score_high(size, wavelength, orientation):
    ds = band_scores(band_map(size, wavelength, orientation, phase=(1.5, 0.5)))
    assert scalar(ds, "band_score") > 0.8
    tol = 3 if size == 40 else 6
    assert angle_diff(scalar(ds, "band_orientation"), orientation, 180) <= tol
    assert scalar(ds, "band_wavelength") == pytest.approx(wavelength, rel=0.05)


@pytest.mark.parametrize("size", [20, 40])
@pytest.mark.parametrize(
    "make",
    [
        lambda n: hex_grid_map(n, 5, 10),
        lambda n: hex_grid_map(n, 8, 33),
        lambda n: square_grid_map(n, 6, 20),
        lambda n: place_field_map(n, [(n / 2, n / 3)], n / 10),
        lambda n: place_field_map(n, [(n / 4, 2 * n / 3)], 2.0),
    ],
)
def test_grids_and_place_fields_score_low_on_band(size, make):
    assert scalar(band_scores(make(size)), "band_score") < 0.2


def test_band_scores_nan_robust_and_batched():
    rng = np.random.default_rng(8)
    maps = xr.concat(
        [with_holes(band_map(30, 6, a), "random10", rng) for a in (0, 45, 90)], dim="unit"
    )
    ds = band_scores(maps)
    assert ds.band_score.dims == ("unit",)
    assert (ds.band_score.values > 0.8).all()
    ds_const = band_scores(as_map(np.ones((10, 10))))
    assert str(ds_const.nan_reason.values) == "constant"


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"half_width": 40}, "half_width"), ({"min_overlap": 0}, "min_overlap")]
)
def test_band_scores_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        band_scores(band_map(20, 5), **kwargs)


# ------------------------------------------------------------------ small maps


@pytest.mark.parametrize("method", ["deepmind", "bnt"])
@pytest.mark.parametrize("shape", [(2, 3), (4, 4), (3, 12), (12, 4)])
def test_maps_too_small_give_nan_with_reason(method, shape):
    rng = np.random.default_rng(1)
    vals = rng.random((3,) + shape)
    vals[2] = np.nan
    ds = grid_scores(as_map(vals), method=method)
    assert np.isnan(ds.gridness_60.values).all()
    assert np.isnan(ds.spacing.values).all()
    assert list(ds.nan_reason.values) == ["too_small", "too_small", "all_nan"]
    assert "too_small" in ds.attrs["nan_reason"]
    band = band_scores(as_map(vals))
    assert np.isnan(band.band_score.values).all()
    assert list(band.nan_reason.values) == ["too_small", "too_small", "all_nan"]


def test_smallest_scored_map_is_5_bins():
    ds = grid_scores(square_grid_map(5, 2.5, 0))
    assert np.isfinite(scalar(ds, "gridness_60"))
    assert str(ds.nan_reason.values) == ""
