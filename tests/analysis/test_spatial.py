import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import selectivity, sparsity, spatial_information

from .helpers import as_map


def one_hot_maps(k_values, size=(6, 8)):
    """Activity 1 in one of K equally occupied bins (the other bins NaN beyond K)."""
    out = []
    for k in k_values:
        m = np.full(size, np.nan)
        m.ravel()[:k] = 0.0
        m.ravel()[k // 2] = 1.0
        out.append(m)
    return as_map(np.stack(out))


@pytest.mark.parametrize("k", [1, 2, 5, 16, 48])
def test_activity_in_one_of_k_bins(k):
    maps = one_hot_maps([k])
    assert float(spatial_information(maps)[0]) == pytest.approx(np.log2(k))
    assert float(sparsity(maps)[0]) == pytest.approx(1 / k)
    assert float(selectivity(maps)[0]) == pytest.approx(k)


@pytest.mark.parametrize("level", [0.3, 1.0, 7.0])
def test_uniform_map(level):
    maps = as_map(np.full((5, 5), level))
    assert float(spatial_information(maps)) == pytest.approx(0.0, abs=1e-12)
    assert float(sparsity(maps)) == pytest.approx(1.0)
    assert float(selectivity(maps)) == pytest.approx(1.0)


def test_two_level_map_with_occupancy_closed_form():
    # two bins: rates r1, r2 with occupancy p1, p2 -- textbook formula, negative term kept
    r = np.array([[4.0, 1.0]])
    occ = np.array([[1.0, 3.0]])
    p = occ / occ.sum()
    rbar = (p * r).sum()
    expected = (p * r / rbar * np.log2(r / rbar)).sum()
    assert ((r / rbar) < 1).any()  # one log term is negative
    maps = xr.DataArray(r, dims=("y", "x"))
    occupancy = xr.DataArray(occ, dims=("y", "x"))
    assert float(spatial_information(maps, occupancy)) == pytest.approx(expected)
    clipped = (p * r / rbar * np.maximum(np.log2(r / rbar), 0)).sum()
    assert float(spatial_information(maps, occupancy)) < clipped
    assert float(sparsity(maps, occupancy)) == pytest.approx(rbar**2 / (p * r**2).sum())
    assert float(selectivity(maps, occupancy)) == pytest.approx(4.0 / rbar)


def test_nan_bins_are_left_out_and_occupancy_renormalised():
    rng = np.random.default_rng(0)
    r = rng.random((6, 6))
    occ = rng.integers(1, 10, (6, 6)).astype(float)
    holey = r.copy()
    holey[:2, :3] = np.nan
    keep = np.isfinite(holey)
    full = spatial_information(
        xr.DataArray(r[keep][None], dims=("y", "x")), xr.DataArray(occ[keep][None], dims=("y", "x"))
    )
    got = spatial_information(
        xr.DataArray(holey, dims=("y", "x")), xr.DataArray(occ, dims=("y", "x"))
    )
    assert float(got) == pytest.approx(float(full))
    zero_occ = occ.copy()
    zero_occ[:2, :3] = 0  # zero occupancy is the same as unvisited
    got2 = spatial_information(
        xr.DataArray(r, dims=("y", "x")), xr.DataArray(zero_occ, dims=("y", "x"))
    )
    assert float(got2) == pytest.approx(float(full))


def test_occupancy_broadcast_over_units():
    rng = np.random.default_rng(1)
    rates = xr.DataArray(rng.random((2, 3, 4, 5)), dims=("env", "unit", "y", "x"))
    occ = xr.DataArray(rng.random((2, 4, 5)) + 0.1, dims=("env", "y", "x"))
    for fn in (spatial_information, sparsity, selectivity):
        out = fn(rates, occ)
        assert out.dims == ("env", "unit")
        for e in range(2):
            for u in range(3):
                single = fn(rates[e, u], occ[e])
                assert float(out[e, u]) == pytest.approx(float(single))


def test_per_node_dims():
    rates = xr.DataArray([[0.0, 0.0, 2.0, 0.0]], dims=("unit", "node"))
    out = spatial_information(rates, dims=("node",))
    xr.testing.assert_allclose(out, xr.DataArray([2.0], dims=("unit",)), check_dim_order=True)


@pytest.mark.parametrize("fn", [spatial_information, sparsity, selectivity])
def test_silent_negative_and_empty_maps_give_nan(fn):
    maps = as_map(
        np.stack(
            [
                np.zeros((3, 3)),
                np.full((3, 3), np.nan),
                np.array([[1.0, -0.5, 0], [0] * 3, [0] * 3]),
            ]
        )
    )
    assert np.isnan(fn(maps).values).all()


@pytest.mark.parametrize("fn", [spatial_information, sparsity, selectivity])
@pytest.mark.parametrize(
    ("maps", "kwargs", "exc", "match"),
    [
        (as_map(np.ones((3, 3))), {"dims": ("node",)}, ValueError, "spatial dims"),
        (
            as_map(np.ones((3, 3))),
            {"occupancy": xr.DataArray(np.ones(3), dims=("y",))},
            ValueError,
            "occupancy must have",
        ),
        (
            as_map(np.ones((3, 3))),
            {"occupancy": xr.DataArray(-np.ones((3, 3)), dims=("y", "x"))},
            ValueError,
            "non-negative",
        ),
        (
            as_map(np.ones((3, 3))),
            {"occupancy": xr.DataArray(np.ones((3, 3, 2)), dims=("y", "x", "env"))},
            ValueError,
            "maps lacks",
        ),
        (np.ones((3, 3)), {}, TypeError, "DataArray"),
    ],
)
def test_bad_inputs(fn, maps, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        fn(maps, **kwargs)
