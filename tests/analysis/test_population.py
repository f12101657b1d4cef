import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import AnalysisError, population
from hippo_rep.analysis.population import decode_arrays, pca_arrays


@pytest.fixture(scope="module")
def pop(small_rec):
    return population(small_rec, max_steps_per_env=150, folds=3)


def test_dims_and_attrs(pop):
    assert pop.population.values.tolist() == ["g", "g_pi", "memory_activity"]
    assert pop.decode_xy_r2.dims == ("population", "axis")
    assert pop.pca_variance_ratio.dims == ("population", "component")
    assert "GroupKFold" in pop.attrs["decode_cv"]
    assert pop.attrs["decode_folds"] == 3


@pytest.mark.parametrize("variable", ["g", "g_pi"])
def test_positional_units_decode_position_in_unseen_environments(pop, variable):
    p = pop.sel(population=variable)
    assert float(p.decode_node_accuracy) > 5 * float(p.decode_node_chance)
    # a linear read-out of x, y from 4 grids, 4 place fields and 4 noise units is weak,
    # but above chance
    assert (p.decode_xy_r2 > 0.1).all()
    assert float(p.decode_xy_error) < 0.9 * float(p.decode_xy_error_chance)


def test_memory_neurons_do_not_carry_over_to_new_environments(pop, same_rec):
    mem = pop.sel(population="memory_activity")
    assert float(mem.decode_node_accuracy) < 3 * float(mem.decode_node_chance) + 0.02
    assert float(mem.decode_xy_error) > 0.9 * float(mem.decode_xy_error_chance)
    # with the same walk in every environment, memory slot k sits at the same node
    same = population(same_rec, variables=["memory_activity"], max_steps_per_env=150, folds=3)
    assert float(same.decode_node_accuracy[0]) > 0.3


@pytest.mark.parametrize("rank", [1, 3, 6])
def test_pca_on_data_of_known_rank(rank):
    rng = np.random.default_rng(rank)
    latent = rng.standard_normal((2, 50, rank))
    mixing = rng.standard_normal((rank, 10))
    rates = np.einsum("enr,ru->eun", latent, mixing)  # (env, unit, node)
    out = pca_arrays(rates)
    assert out["n_samples"] == 100
    assert np.nansum(out["variance_ratio"][:rank]) == pytest.approx(1.0)
    assert out["participation_ratio"] <= rank + 1e-9
    assert out["n_components"] <= rank


def test_participation_ratio_of_equal_variances():
    rng = np.random.default_rng(0)
    x, _ = np.linalg.qr(rng.standard_normal((400, 4)))  # orthonormal columns
    rates = (x * np.sqrt(400))[None].transpose(0, 2, 1)  # 4 equal-variance components
    out = pca_arrays(rates)
    assert out["participation_ratio"] == pytest.approx(4.0, rel=0.05)


def test_decoding_needs_two_environments():
    rng = np.random.default_rng(0)
    out = decode_arrays(rng.random((1, 50, 3)), np.zeros((1, 50), int), rng.random((1, 50, 2)))
    assert np.isnan(out["node_accuracy"]) and np.isnan(out["xy_r2"]).all()


def test_unit_silent_in_training_envs_does_not_blow_up_the_decoder():
    # Position is coded by two informative units in every environment; unit 2 is ~silent
    # (SD 1e-12) everywhere but environment 3, where it is huge.
    rng = np.random.default_rng(0)
    E, T = 4, 120
    xy = rng.integers(0, 8, (E, T, 2)).astype(float)
    node = (xy[..., 0] * 8 + xy[..., 1]).astype(int)
    act = np.concatenate([xy + 0.1 * rng.standard_normal((E, T, 2)),
                          1e-12 * rng.standard_normal((E, T, 1))], -1)
    act[3, :, 2] = 1e3 * rng.random(T)
    out = decode_arrays(act, node, xy, folds=4)
    assert np.isfinite(out["xy_r2"]).all()
    assert (out["xy_r2"] > 0.5).all()


def test_bad_inputs(small_rec):
    with pytest.raises(AnalysisError, match="'x'"):
        population(small_rec.drop_vars("x"))
    with pytest.raises(AnalysisError, match="folds"):
        population(small_rec, folds=1)
    with pytest.raises(AnalysisError, match="no variable"):
        population(small_rec.drop_vars("g"), variables=["g"])
    assert isinstance(population(small_rec, variables=["g"], max_steps_per_env=20),
                      xr.Dataset)
