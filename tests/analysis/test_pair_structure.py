"""Cell-pair structure across environments, on synthetic populations of known answer."""

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import remapping
from hippo_rep.analysis.remapping import (
    MEMORY_IDENTITY,
    _pair_offsets,
    pair_structure,
    unit_correlation,
)

N = 20  # world side (nodes = bins)


def _hex(x, y, spacing, orientation, phase):
    k = 4 * np.pi / (np.sqrt(3) * spacing)
    out = sum(
        np.cos(k * ((x - phase[0]) * np.cos(t) + (y - phase[1]) * np.sin(t)))
        for t in np.deg2rad(orientation + np.array([0.0, 60.0, 120.0]))
    )
    return (out + 1.5) / 4.5


def _population(kind, n_units=24, n_env=3, seed=0, noise=0.05):
    """(node_rate, rate_map) of a grid module that translates, or of random remappers."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:N, 0:N].astype(float)
    phases = rng.uniform(0, 8, (n_units, 2))
    maps = np.empty((n_env, n_units, N, N))
    for e in range(n_env):
        shift = rng.uniform(0, 8, 2)  # the whole module moves together
        for u in range(n_units):
            if kind == "translated_grid":
                ph = phases[u] + shift
            else:  # random remapping: every unit gets a new, independent phase
                ph = rng.uniform(0, 8, 2)
            maps[e, u] = _hex(x, y, 7.0, 10.0, ph)
    maps += noise * rng.standard_normal(maps.shape)
    rate_map = xr.DataArray(maps, dims=("env", "unit", "y", "x"))
    node_rate = xr.DataArray(maps.reshape(n_env, n_units, -1), dims=("env", "unit", "world_node"))
    return node_rate, rate_map


@pytest.fixture(scope="module")
def translated():
    nr, rm = _population("translated_grid")
    return pair_structure(nr, rm, n_shuffles=200, rng=1), nr


@pytest.fixture(scope="module")
def random_remap():
    nr, rm = _population("random")
    return pair_structure(nr, rm, n_shuffles=200, rng=1), nr


def test_translated_grid_module_keeps_its_pair_structure(translated):
    ds, nr = translated
    assert ds.pair_structure_r.dims == ("env_pair",)
    assert (ds.pair_structure_r > 0.9).all()
    assert (ds.pair_structure_p <= 1 / 201 + 1e-12).all()  # no relabelling does as well
    assert (np.abs(ds.pair_structure_null_mean) < 0.1).all()
    assert (ds.pair_shift_match > 0.9).all()
    assert (ds.pair_shift_p <= 1 / 201 + 1e-12).all()
    assert (ds.pair_structure_n_units == 24).all()
    # ... while each unit's own map moves: per-unit correlation is no test of it
    per_unit = unit_correlation(nr)
    assert float(np.abs(per_unit).mean()) < 0.6
    assert float(np.abs(per_unit).mean()) < float(ds.pair_structure_r.min()) - 0.3


def test_random_remapping_has_no_pair_structure(random_remap):
    ds, _ = random_remap
    assert (np.abs(ds.pair_structure_r) < 0.25).all()
    assert (ds.pair_structure_p > 0.05).all()
    assert (ds.pair_shift_match < 0.3).all()
    assert (ds.pair_shift_p > 0.05).all()
    np.testing.assert_allclose(ds.pair_shift_match, ds.pair_shift_null_mean, atol=0.1)


def test_null_p_value_is_uniformish_under_random_remapping():
    ps = []
    for seed in range(12):
        nr, _ = _population("random", n_units=12, n_env=2, seed=seed)
        ps.append(float(pair_structure(nr, n_shuffles=99, rng=seed).pair_structure_p[0]))
    ps = np.array(ps)
    assert 0.2 < ps.mean() < 0.8
    assert (ps < 0.05).sum() <= 3


def test_pair_offsets_are_the_planted_shifts():
    y, x = np.mgrid[0:N, 0:N].astype(float)
    bump = lambda cx, cy: np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / 4.0)  # noqa: E731
    maps = np.stack([bump(5, 5), bump(8, 4), bump(5, 11)])
    maps[:, 0, :3] = np.nan  # a few unvisited bins change nothing
    off = _pair_offsets(maps, max_lag=10)
    assert off[0, 1].tolist() == [-1.0, 3.0]  # (dy, dx) from unit 0 to unit 1
    assert off[0, 2].tolist() == [6.0, 0.0]
    assert off[1, 0].tolist() == [1.0, -3.0]
    assert off[2, 2].tolist() == [0.0, 0.0]


def test_constant_units_are_left_out_and_too_few_units_give_nan():
    nr, rm = _population("translated_grid", n_units=6, n_env=2)
    vals = nr.values.copy()
    vals[1, :3] = 1.0  # three units silent in env 1
    ds = pair_structure(nr.copy(data=vals), n_shuffles=50, rng=0)
    assert int(ds.pair_structure_n_units[0]) == 3
    assert np.isnan(float(ds.pair_structure_r[0]))  # fewer than PAIR_MIN_UNITS


def test_seeded_and_validated():
    nr, rm = _population("random", n_units=8, n_env=2)
    a = pair_structure(nr, rm, n_shuffles=50, rng=3)
    b = pair_structure(nr, rm, n_shuffles=50, rng=3)
    xr.testing.assert_identical(a, b)
    with pytest.raises(Exception, match="n_shuffles"):
        pair_structure(nr, n_shuffles=0)


def test_remapping_output_has_pair_structure_and_memory_identity(small_rec):
    r = remapping(small_rec, n_shuffles=50, rng=0)
    assert r.pair_structure_r.dims == ("population", "env_pair")
    assert r.pair_structure_p.dims == ("population", "env_pair")
    assert r.pair_shift_match.dims == ("population", "env_pair")
    assert r.population.values.tolist() == ["g", "g_pi", "memory_activity"]
    assert r.attrs["memory_identity"] == MEMORY_IDENTITY
    for k in ("tem_corr", "pair_structure_r", "pair_shift_match", "remap_corr"):
        assert r[k].attrs["memory_identity"] == MEMORY_IDENTITY
    # planted grids and place fields are the same maps in every env (its 4 random units are
    # not). (Its 16 memory slots are the walk's first 16 new nodes, so slots k and k + 1
    # are neighbours in every env: write order carries some pair structure there.)
    g = r.sel(population="g")
    assert (g.pair_structure_r > 0.3).all() and (g.pair_structure_p < 0.05).all()
