import numpy as np
import pytest
import xarray as xr

from hippo_rep import schema
from hippo_rep.analysis import AnalysisError, rate_maps, synthetic_recording, unit_activity


@pytest.mark.parametrize("world", ["square:11", "hex:6"])
def test_synthetic_recording_is_a_valid_recording(world):
    rec = synthetic_recording(world, n_env=2, n_steps=300, n_memory=8)
    schema.validate(rec)
    assert rec.g.dims == ("env", "time", "g_unit")
    assert set(rec.planted.values) == {"grid", "place", "random"}


@pytest.mark.parametrize("variable", ["g", "g_pi", "memory_activity"])
def test_square_rate_maps_are_node_means(small_rec, variable):
    ds = rate_maps(small_rec, variable)
    udim = "g_unit" if variable != "memory_activity" else "memory"
    n_unit = small_rec.sizes[udim]
    assert ds.rate_map.dims == ("env", "unit", "y", "x")
    assert ds.occupancy.dims == ("env", "y", "x")
    assert ds.rate_map.shape == (3, n_unit, 11, 11)  # one bin per node
    assert ds.attrs["variable"] == variable
    np.testing.assert_array_equal(ds.unit.values, small_rec[udim].values)
    # direct: mean per node of the (masked) activity, env 1, every unit
    act = unit_activity(small_rec, variable).isel(env=1)
    node = small_rec.node.isel(env=1).values
    direct = np.full((n_unit, 121), np.nan)
    for k in range(121):
        sel = act.values[node == k]
        cnt = np.isfinite(sel).sum(0)
        direct[:, k] = np.where(cnt > 0, np.nansum(sel, 0) / np.maximum(cnt, 1), np.nan)
    got = ds.rate_map.isel(env=1)
    xr.testing.assert_allclose(got, got.copy(data=direct.reshape(n_unit, 11, 11)))
    occ = np.bincount(node, minlength=121).reshape(11, 11).astype(float)
    xr.testing.assert_equal(ds.occupancy.isel(env=1), ds.occupancy.isel(env=1).copy(data=occ))


def test_memory_neurons_count_only_after_their_memory_exists(small_rec):
    act = unit_activity(small_rec, "memory_activity")
    raw = small_rec.memory_activity.values
    mt = small_rec.memory_time.values
    for e, m in [(0, 0), (1, 5), (2, 15)]:
        t0 = mt[e, m]
        assert np.isnan(act.values[e, : t0 + 1, m]).all()
        np.testing.assert_allclose(act.values[e, t0 + 1 :, m], raw[e, t0 + 1 :, m], rtol=1e-6)
        assert (raw[e, : t0 + 1, m] == 0).all()  # the recording holds 0 there
    ds = rate_maps(small_rec, "memory_activity")
    # each memory's map peaks at the node where it was written
    peak = ds.node_rate.fillna(-1).argmax("world_node").values
    np.testing.assert_array_equal(peak, small_rec.memory_node.values)


def test_unused_memory_slots_are_all_nan():
    rec = synthetic_recording("square:4", n_env=2, n_steps=200, n_memory=20)
    assert (rec.memory_time.values[:, 16:] == -1).all()  # 16 nodes, 20 slots
    ds = rate_maps(rec, "memory_activity")
    assert ds.rate_map.isel(unit=slice(16, None)).isnull().all()
    assert ds.rate_map.isel(unit=slice(0, 16)).notnull().any(("y", "x")).all()


def test_hex_world_is_rasterised_at_true_geometry():
    rec = synthetic_recording("hex:6", n_env=2, n_steps=600, n_memory=8)
    ds = rate_maps(rec, "g")
    assert ds.attrs["resolution"] == 0.5
    assert ds.attrs["one_bin_per_node"] == 0
    assert ds.sizes["y"] > 6 and ds.sizes["x"] > 6
    nm = ds.node_map.values
    # a bin shows the node nearest to it, and every node shows in some bin
    assert set(np.unique(nm[nm >= 0])) == set(range(36))
    yy, xx = np.meshgrid(ds.y.values, ds.x.values, indexing="ij")
    shown = np.maximum(nm, 0)
    d = np.hypot(xx - rec.node_x.values[shown], yy - rec.node_y.values[shown])
    assert (d[nm >= 0] <= 0.6 + 1e-9).all()


def test_smoothing_keeps_unvisited_nan():
    rec = synthetic_recording("square:8", n_env=1, n_steps=40, n_memory=4, seed=1)
    raw = rate_maps(rec, "g")
    sm = rate_maps(rec, "g", smooth_sigma=1.0)
    assert raw.rate_map.isnull().any()  # 40 steps do not visit 64 nodes
    xr.testing.assert_equal(raw.rate_map.isnull(), sm.rate_map.isnull())
    assert sm.rate_map.attrs["smooth_sigma_bins"] == 1.0
    assert not np.allclose(np.nan_to_num(raw.rate_map.values), np.nan_to_num(sm.rate_map.values))


def test_bad_recordings(small_rec):
    with pytest.raises(AnalysisError, match="xarray.Dataset"):
        rate_maps(small_rec.g, "g")
    with pytest.raises(AnalysisError, match="hippo_rep_kind"):
        rate_maps(small_rec.assign_attrs(hippo_rep_kind="analysis"), "g")
    with pytest.raises(AnalysisError, match="no variable 'g_pi'"):
        rate_maps(small_rec.drop_vars("g_pi"), "g_pi")
    with pytest.raises(AnalysisError, match="unknown activity variable 'foo'"):
        rate_maps(small_rec, "foo")
    with pytest.raises(AnalysisError, match="'node'"):
        rate_maps(small_rec.drop_vars("node"), "g")
    with pytest.raises(AnalysisError, match="memory_time"):
        rate_maps(small_rec.drop_vars("memory_time"), "memory_activity")
    with pytest.raises(AnalysisError, match="dims"):
        rate_maps(small_rec.assign(g=small_rec.g.transpose("env", "g_unit", "time")
                                   .rename(g_unit="other")), "g")
