import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import autocorrelogram, hex_grid_map
from hippo_rep.analysis.autocorr import MIN_OVERLAP

from .helpers import as_map, direct_sac


@pytest.mark.parametrize("shape", [(7, 7), (9, 6), (12, 15)])
@pytest.mark.parametrize("nan_frac", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("min_overlap", [1, 5, 20])
def test_matches_direct_per_lag_pearson(shape, nan_frac, min_overlap):
    rng = np.random.default_rng(hash((shape, nan_frac, min_overlap)) % 2**32)
    a = rng.random(shape)
    a[rng.random(shape) < nan_frac] = np.nan
    sac = autocorrelogram(as_map(a), min_overlap=min_overlap).values
    ref = direct_sac(a, min_overlap)
    np.testing.assert_array_equal(np.isnan(sac), np.isnan(ref))
    np.testing.assert_allclose(sac, ref, atol=1e-9, equal_nan=True)


def test_dims_coords_symmetry_and_centre():
    m = hex_grid_map((10, 13), 5, 10)
    sac = autocorrelogram(m, min_overlap=1)
    assert sac.dims == ("lag_y", "lag_x")
    assert sac.shape == (19, 25)
    np.testing.assert_array_equal(sac.lag_y, np.arange(-9, 10))
    np.testing.assert_array_equal(sac.lag_x, np.arange(-12, 13))
    assert float(sac.sel(lag_y=0, lag_x=0)) == pytest.approx(1.0)
    flipped = sac.values[::-1, ::-1]
    np.testing.assert_allclose(sac.values, flipped, atol=1e-12, equal_nan=True)
    assert sac.attrs["min_overlap"] == 1
    assert np.nanmax(sac.values) <= 1.0 and np.nanmin(sac.values) >= -1.0


def test_min_overlap_nan_pattern():
    n = 20
    rng = np.random.default_rng(0)
    sac = autocorrelogram(as_map(rng.random((n, n))))  # default MIN_OVERLAP = 20
    ly, lx = np.meshgrid(np.arange(-(n - 1), n), np.arange(-(n - 1), n), indexing="ij")
    overlap = (n - np.abs(ly)) * (n - np.abs(lx))
    np.testing.assert_array_equal(np.isnan(sac.values), overlap < MIN_OVERLAP)


@pytest.mark.parametrize("fill", [3.0, np.nan])
def test_constant_or_empty_map_gives_all_nan(fill):
    sac = autocorrelogram(as_map(np.full((8, 8), fill)))
    assert np.isnan(sac.values).all()


def test_batched_leading_dims_equal_single_maps():
    rng = np.random.default_rng(1)
    vals = rng.random((2, 3, 9, 9))
    vals[0, 1, 2:4, 3:6] = np.nan
    maps = xr.DataArray(
        vals, dims=("env", "unit", "y", "x"), coords={"unit": ["a", "b", "c"], "env": [5, 6]}
    )
    sac = autocorrelogram(maps, min_overlap=4)
    assert sac.dims == ("env", "unit", "lag_y", "lag_x")
    assert list(sac.unit.values) == ["a", "b", "c"]
    for e in range(2):
        for u in range(3):
            single = autocorrelogram(maps[e, u], min_overlap=4)
            xr.testing.assert_allclose(sac[e, u], single)


def test_dask_backed_input_stays_lazy_and_matches():
    pytest.importorskip("dask")
    rng = np.random.default_rng(2)
    maps = as_map(rng.random((6, 10, 10)))
    lazy = autocorrelogram(maps.chunk({"d0": 2}), min_overlap=5)
    assert lazy.chunks is not None
    xr.testing.assert_allclose(lazy.compute(), autocorrelogram(maps, min_overlap=5))


@pytest.mark.parametrize(
    ("maps", "kwargs", "exc", "match"),
    [
        (xr.DataArray(np.zeros((4, 4)), dims=("a", "b")), {}, ValueError, r"\('y', 'x'\)"),
        (xr.DataArray(np.zeros((4, 4)), dims=("x", "y")), {}, ValueError, "last two dims"),
        (np.zeros((4, 4)), {}, TypeError, "maps must be an xarray.DataArray"),
        (as_map(np.zeros((4, 4))), {"min_overlap": 0}, ValueError, "min_overlap"),
        (as_map(np.zeros((4, 4))), {"min_overlap": 2.5}, ValueError, "min_overlap"),
        (as_map(np.zeros((4, 4), dtype=complex)), {}, ValueError, "real-valued"),
    ],
)
def test_bad_inputs(maps, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        autocorrelogram(maps, **kwargs)
