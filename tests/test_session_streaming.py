"""A session's analysis without a dense (time x cell) array: its maps and shuffle nulls from
spike sample indices (sparse counts, shifted modulo the session's length) equal those of a
slow, dense reference written here, and the dense path of rate sessions gives the same."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import analyse
from hippo_rep.analysis import sample_counts as sc
from hippo_rep.analysis import sessions as ss
from hippo_rep.analysis.ratemaps import smooth
from hippo_rep.analysis.sample_counts import SampleCounts, sample_counts
from hippo_rep.analysis.shuffle import null_score_arrays, score_spatial_info
from hippo_rep.analysis.synthetic_session import simulate_session

#: The reference and the streamed path add the same values in other orders only in the
#: per-node sums of the scores: round-off.
RTOL = 1e-12
SHUFFLES = 5


@pytest.fixture(scope="module")
def session():
    return simulate_session(minutes=1.5, seed=4)[0]


@pytest.fixture(scope="module")
def streamed(session):
    return analyse(session, shuffles=SHUFFLES, seed=7, keep_null=True, chunk_units=5)


def _dense_rates(session) -> np.ndarray:
    """(time, cell) Hz, spike by spike: each spike in the sample whose [t - dt/2, t + dt/2)
    holds it (the reference of the sparse counts)."""
    t = session["time"].values
    dt = ss.sample_interval(session)
    out = np.zeros((t.size, session.sizes["cell"]))
    ends = np.cumsum(session["n_spikes"].values)
    spikes = session["spike_times"].values
    for c, (a, b) in enumerate(zip(ends - session["n_spikes"].values, ends, strict=True)):
        for s in spikes[a:b]:
            i = int(np.argmin(np.abs(t - s)))
            if t[i] - dt / 2 <= s < t[i] + dt / 2:
                out[i, c] += 1
    return out / dt


def _node_rates(rates: np.ndarray, node: np.ndarray, n_nodes: int) -> np.ndarray:
    """(cell, node) mean rate per node, sample by sample."""
    sums = np.zeros((rates.shape[1], n_nodes))
    occ = np.zeros(n_nodes)
    for t, k in enumerate(node):
        if k >= 0:
            sums[:, k] += rates[t]
            occ[k] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(occ > 0, sums / occ, np.nan), occ


def test_sparse_counts_are_the_dense_counts(session):
    cells = np.arange(session.sizes["cell"])
    counts, gaps = ss.spike_sample_counts(session, cells)
    assert gaps == 0
    np.testing.assert_array_equal(counts.dense(), _dense_rates(session))
    node = ss.session_node(session).values[0]
    for shift in (0, 1, 777, node.size - 1):
        rolled = np.roll(counts.dense(), shift, axis=0)  # a[(t - s) mod T] at t
        ref, _ = _node_rates(rolled, node, int(node.max()) + 1)
        got = counts.node_sums(node, int(node.max()) + 1, shift)
        occ = np.bincount(node[node >= 0], minlength=got.shape[1])
        with np.errstate(invalid="ignore", divide="ignore"):
            np.testing.assert_allclose(np.where(occ > 0, got / occ, np.nan), ref, rtol=RTOL)
    part = counts.take(np.array([3, 0]))
    np.testing.assert_array_equal(part.dense(), counts.dense()[:, [3, 0]])


def test_counts_by_groups_of_cells_are_the_same(session, monkeypatch):
    cells = np.array([5, 0, 3, 11, 7])
    whole, gaps = ss.spike_sample_counts(session, cells)
    monkeypatch.setattr(ss, "COUNT_BLOCK_SPIKES", 50)  # a group per cell or less
    grouped, gaps_grouped = ss.spike_sample_counts(session, cells)
    assert gaps_grouped == gaps
    for k in ("sample", "count", "offsets"):
        np.testing.assert_array_equal(getattr(grouped, k), getattr(whole, k))


def test_sample_counts_merge_spikes_of_one_sample():
    c = sample_counts(np.array([2, 2, 5, 0, 0, 0]), np.array([0, 0, 0, 2, 2, 2]), 3, 8, 0.5)
    assert c.sample.tolist() == [2, 5, 0] and c.count.tolist() == [2, 1, 3]
    assert c.offsets.tolist() == [0, 2, 2, 3]
    np.testing.assert_array_equal(c.dense()[:, 2], [6, 0, 0, 0, 0, 0, 0, 0])


def test_maps_and_nulls_equal_a_dense_reference(session, streamed):
    rates = _dense_rates(session)
    node = ss.session_node(session).values[0]
    n_nodes = streamed.sizes["world_node"]
    ny, nx = streamed.sizes["y"], streamed.sizes["x"]
    sigma = streamed.attrs["smooth_cm"] / streamed.attrs["map_bin_size_cm"]
    node_rate, occ = _node_rates(rates, node, n_nodes)
    np.testing.assert_allclose(streamed["node_rate"].values[0], node_rate, rtol=RTOL)

    def maps_of(nr):  # one bin per node, BNT-style smoothing
        m = xr.DataArray(nr.reshape(-1, ny, nx), dims=("unit", "y", "x"))
        w = xr.DataArray(occ.reshape(ny, nx), dims=("y", "x"))
        return smooth(m, sigma, weights=w)

    np.testing.assert_allclose(streamed["rate_map"].values[0], maps_of(node_rate).values,
                               rtol=RTOL)
    for j, shift in enumerate(streamed["shuffle_shift"].values[0]):
        nr, _ = _node_rates(np.roll(rates, int(shift), axis=0), node, n_nodes)
        ds = xr.Dataset({"node_rate": (("unit", "world_node"), nr),
                         "node_occupancy": (("world_node",), occ),
                         "rate_map": maps_of(nr)})
        np.testing.assert_allclose(streamed["spatial_info_null"].values[0, :, j],
                                   score_spatial_info(ds).values, rtol=1e-10)


def test_shuffled_scores_of_counts_equal_those_of_dense_activity(session):
    counts, _ = ss.spike_sample_counts(session, np.arange(6))
    node = ss.session_node(session).values[0]
    n_nodes = int(node.max()) + 1
    nx = int(np.ceil(np.sqrt(n_nodes)))
    node_map = np.arange(nx * nx).reshape(nx, nx)
    node_map[node_map >= n_nodes] = -1
    shifts = np.array([[400, 1234, 2500]])
    kw = dict(node_map=node_map, n_nodes=n_nodes, sigma=1.5, scorers=[score_spatial_info],
              names=["spatial_info"])
    sparse_out = null_score_arrays(counts, node[None], shifts, **kw)
    dense_out = null_score_arrays(counts.dense().T[None], node[None], shifts, **kw)
    np.testing.assert_array_equal(sparse_out[0], dense_out[0])


def test_a_spike_session_is_never_densified(session, streamed, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a dense (time, cell) array was formed")

    monkeypatch.setattr(SampleCounts, "dense", refuse)
    monkeypatch.setattr(ss, "session_activity", refuse)
    again = analyse(session, shuffles=SHUFFLES, seed=7, keep_null=True, chunk_units=None)
    xr.testing.assert_allclose(again.drop_attrs(), streamed.drop_attrs(), rtol=RTOL)
    assert sc.SampleCounts.dense is refuse


def test_rate_session_of_the_same_rates_gives_the_same_analysis(session, streamed):
    pops = ss.session_populations(session)
    rates = {p: ss.session_activity(session, p).values[0] for p in pops}
    r = ss.session_from_rates(session["x"].values, session["y"].values,
                              session["time"].values, rates, arena=session.attrs["arena"])
    dense = analyse(r, shuffles=SHUFFLES, seed=7, keep_null=True, chunk_units=3)
    keep = [k for k in streamed.data_vars if k in dense.data_vars]
    assert {"rate_map", "gridness_60_null", "spatial_info_null", "is_grid"} <= set(keep)
    xr.testing.assert_allclose(dense[keep].drop_attrs().drop_vars("cell_id"),
                               streamed[keep].drop_attrs().drop_vars("cell_id"), rtol=RTOL)
    for k in ("is_grid", "is_band", "is_place", "gridness_60_percentile"):
        xr.testing.assert_equal(dense[k].drop_vars("cell_id"), streamed[k].drop_vars("cell_id"))
