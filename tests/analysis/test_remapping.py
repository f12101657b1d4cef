import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import AnalysisError, rate_maps, remapping
from hippo_rep.analysis.remapping import pv_correlation, tem_remapping, unit_correlation


@pytest.fixture(scope="module")
def remap_random(small_rec):
    return remapping(small_rec, n_shuffles=300, rng=0)


@pytest.fixture(scope="module")
def remap_same(same_rec):
    return remapping(same_rec, n_shuffles=300, rng=0)


def test_dims_and_pairs(remap_random):
    r = remap_random
    assert r.remap_corr.dims == ("unit", "env_pair")
    assert r.env_a.values.tolist() == [0, 0, 1] and r.env_b.values.tolist() == [1, 2, 2]
    assert r.pv_corr.dims == ("population", "env_pair")
    assert r.population.values.tolist() == ["g", "g_pi", "memory_activity"]
    assert r.tem_corr.dims == ("env_pair",) and r.tem_corr_mean.dims == ()
    assert r.attrs["tem_shuffles"] == 300


@pytest.mark.parametrize("variable", ["g", "g_pi"])
def test_stable_units_correlate_random_units_do_not(small_rec, remap_random, variable):
    planted = small_rec.planted.values
    sub = remap_random.sel(unit=remap_random.variable == variable)
    stable = sub.remap_corr_mean.values[planted != "random"]
    noise = sub.remap_corr_mean.values[planted == "random"]
    assert (stable > 0.95).all()
    assert (np.abs(noise) < 0.3).all()


def test_memory_units_remap_randomly_unless_the_walks_are_the_same(remap_random, remap_same):
    for r, lo, hi in ((remap_random, -0.25, 0.25), (remap_same, 0.95, 1.0)):
        mem = r.sel(unit=r.variable == "memory_activity")
        assert lo <= float(mem.remap_corr_mean.mean()) <= hi
        assert float(r.pv_corr.sel(population="g").mean()) > 0.9
    # population vectors of 16 sparse memory units: ~0 at nodes far from every memory, so
    # the mean over nodes is lower than the per-unit correlation, but far above random
    pv = [float(r.pv_corr.sel(population="memory_activity").mean())
          for r in (remap_random, remap_same)]
    assert abs(pv[0]) < 0.15 and pv[1] > pv[0] + 0.2


def test_tem_test_separates_coherent_from_random_remapping(remap_random, remap_same):
    assert (remap_same.tem_corr > remap_same.tem_null_q95).all()
    assert float(remap_same.tem_p_mean) < 0.01
    assert float(remap_same.tem_corr_mean) > 0.5
    assert float(remap_random.tem_p_mean) > 0.01
    assert abs(float(remap_random.tem_corr_mean)) < 0.2
    assert (remap_random.tem_n_memories == 16).all()


def test_unit_correlation_is_pearson_over_common_nodes(small_rec):
    rates = rate_maps(small_rec, "memory_activity").node_rate
    got = unit_correlation(rates)
    want = np.full(got.shape, np.nan)
    for u in range(rates.sizes["unit"]):
        for p, (a, b) in enumerate([(0, 1), (0, 2), (1, 2)]):
            x, y = rates.values[a, u], rates.values[b, u]
            ok = np.isfinite(x) & np.isfinite(y)
            want[u, p] = np.corrcoef(x[ok], y[ok])[0, 1]
    xr.testing.assert_allclose(got, got.copy(data=want))


def test_tem_corr_is_pearson_of_grid_rates_at_memory_peaks():
    # by hand: each grid unit z-scored over its visited nodes per environment, read at each
    # memory unit's peak node in env a and env b; tem_corr is the Pearson r of those pairs
    rng = np.random.default_rng(3)
    g = rng.random((2, 6, 40))
    m = rng.random((2, 5, 40))
    g[:, :, 35:] = m[:, :, 35:] = np.nan  # unvisited nodes
    dims = ("env", "unit", "world_node")
    got = tem_remapping(xr.DataArray(g, dims=dims), xr.DataArray(m, dims=dims),
                        n_shuffles=10, rng=0)
    z = (g - np.nanmean(g, -1, keepdims=True)) / np.nanstd(g, -1, keepdims=True)
    va, vb = (z[e][:, np.nanargmax(m[e], -1)].T for e in (0, 1))  # (memory, grid unit)
    assert int(got.tem_n_memories[0]) == 5
    assert float(got.tem_corr[0]) == pytest.approx(np.corrcoef(va.ravel(), vb.ravel())[0, 1])


def test_hand_made_correlations():
    rng = np.random.default_rng(0)
    base = rng.random((5, 30))
    rates = xr.DataArray(np.stack([base, 2 * base + 1, -base, rng.random((5, 30))]),
                         dims=("env", "unit", "world_node"))
    r = unit_correlation(rates)
    # pairs (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)
    np.testing.assert_allclose(r.values[:, [0, 1, 3]], [[1.0, -1.0, -1.0]] * 5)
    pv = pv_correlation(rates)
    assert pv.values[0] == pytest.approx(1.0) and pv.values[1] == pytest.approx(-1.0)
    const = rates.copy()
    const.values[1, 0] = 3.0  # a constant map has no correlation
    assert np.isnan(unit_correlation(const).values[0, 0])
    const.values[1, 1, :26] = np.nan  # fewer than 5 common nodes
    assert np.isnan(unit_correlation(const).values[1, 0])


def test_bad_inputs(small_rec):
    with pytest.raises(AnalysisError, match="at least 2 environments"):
        remapping(small_rec.isel(env=[0]))
    with pytest.raises(AnalysisError, match="n_shuffles"):
        rates = rate_maps(small_rec, "g").node_rate
        tem_remapping(rates, rates, n_shuffles=0)
    with pytest.raises(AnalysisError, match="no variable 'g_pi'"):
        remapping(small_rec.drop_vars("g_pi"), variables=["g_pi"])
