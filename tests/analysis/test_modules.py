"""grid_modules on maps of known truth: lattices of two and of one spacing, cells that are
grid cells in only some environments, bad input, and the shipped frozen-triad model."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import grid_scores, hex_grid_map
from hippo_rep.analysis.modules import MODULE_GAP, ModulesError, grid_modules

DATA = Path(__file__).resolve().parents[2] / "data"


def _analysis(spacings, orientations, n_env=2, size=40, seed=0, grid=None):
    """An analysis-like dataset of hexagonal maps: unit u has spacing spacings[u] (bins) and
    orientation orientations[u] in every environment, at a random phase per environment;
    spacing and orientation measured by grid_scores (not copied from the truth)."""
    rng = np.random.default_rng(seed)
    maps = np.stack([[hex_grid_map(size, s, o, rng.uniform(0, s, 2)).values
                      for s, o in zip(spacings, orientations, strict=True)]
                     for _ in range(n_env)])
    da = xr.DataArray(maps, dims=("env", "unit", "y", "x"),
                      coords={"env": np.arange(n_env), "unit": np.arange(len(spacings))})
    sc = grid_scores(da)
    is_grid = np.ones((n_env, len(spacings)), bool) if grid is None else np.asarray(grid)
    return xr.Dataset({"spacing": sc["spacing"], "orientation": sc["orientation"],
                       "is_grid": (("env", "unit"), is_grid)},
                      coords={"unit_index": ("unit", np.arange(len(spacings)))})


def test_two_spacings_make_two_modules_with_the_right_cells():
    small, large = 8.0, 12.0  # a ratio of 1.5, as between rodent modules
    spacings = [small, large, small, large, small, large]
    ds = _analysis(spacings, [10.0, 25.0] * 3)
    out = grid_modules(ds)
    assert out.attrs["n_modules"] == 2
    np.testing.assert_array_equal(out["grid_module"].values, [0, 1, 0, 1, 0, 1])
    np.testing.assert_allclose(out["module_spacing"].values, [small, large], rtol=0.05)
    np.testing.assert_allclose(out["module_spacing_ratio"].values[1], large / small, rtol=0.08)
    assert out["module_size"].values.tolist() == [3, 3]
    # orientations (mod 60) recovered per module
    err = (out["module_orientation"].values - [10.0, 25.0] + 30) % 60 - 30
    assert np.all(np.abs(err) < 4)
    assert out["unit_index"].values.tolist() == list(range(6))  # unit coords carried


def test_one_spacing_is_one_module_even_with_scatter():
    # spacings scattered by +-3% (less than MODULE_GAP): one module
    spacings = [10.0, 10.3, 9.7, 10.1]
    out = grid_modules(_analysis(spacings, [0.0] * 4))
    assert out.attrs["n_modules"] == 1
    assert (out["grid_module"].values == 0).all()
    # the same scatter split at a gap smaller than the scatter: more than one module
    assert grid_modules(_analysis(spacings, [0.0] * 4), gap=0.005).attrs["n_modules"] > 1
    assert MODULE_GAP > 0.03


def test_a_cell_grid_in_some_environments_only_is_left_out_by_default():
    grid = [[True, True, True], [True, False, True]]  # unit 1 a grid cell in env 0 only
    ds = _analysis([9.0, 9.0, 13.5], [0.0, 0.0, 0.0], grid=grid)
    out = grid_modules(ds)
    assert out["grid_module"].values.tolist() == [0, -1, 1]
    assert np.isnan(out["unit_spacing"].values[1])
    assert grid_modules(ds, min_env_fraction=0.5)["grid_module"].values.tolist() == [0, 0, 1]


def test_no_grid_cell_gives_no_module():
    ds = _analysis([9.0, 12.0], [0.0, 0.0], grid=np.zeros((2, 2), bool))
    out = grid_modules(ds)
    assert out.attrs["n_modules"] == 0 and out.sizes["module"] == 0
    assert (out["grid_module"].values == -1).all()


def test_bad_input_is_named():
    ds = _analysis([9.0], [0.0])
    with pytest.raises(ModulesError, match="is_grid"):
        grid_modules(ds.drop_vars("is_grid"))
    with pytest.raises(ModulesError, match="gap"):
        grid_modules(ds, gap=0)
    with pytest.raises(ModulesError, match="min_env_fraction"):
        grid_modules(ds, min_env_fraction=1.5)


def test_the_shipped_triad_model_makes_one_module_of_its_shortest_triad():
    """The frozen-triad control's grid cells (data/temt_triad_readout_analysis.nc): the
    cells hexagonal in all four environments share one spacing, that of W_a's shortest
    triad (wavelength 5 nodes: peak spacing 5 * 2/sqrt(3) nodes = 11.5 bins of half a node),
    not the ten modules' spacings of W_a."""
    import hippo_rep.schema  # noqa: F401  (the ds.hippo accessor)

    with xr.open_dataset(DATA / "temt_triad_readout_analysis.nc") as an:
        out = grid_modules(an.hippo.population("g").load())
    assert out.attrs["n_modules"] == 1
    assert int(out["module_size"][0]) >= 10
    np.testing.assert_allclose(float(out["module_spacing"][0]), 5 * 2 / np.sqrt(3) * 2,
                               rtol=0.06)
