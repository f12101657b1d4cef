"""Recording TEM (model.kind = "tem"): g with its modules, p as its own population, and the
analysis and figures run unchanged on it."""

import numpy as np
import pytest
import torch
import xarray as xr

from hippo_rep import cli
from hippo_rep import recording as R
from hippo_rep import schema as S
from hippo_rep.analysis import analyse
from hippo_rep.figures import FigureInputs, build_figures
from hippo_rep.training import trainer as T
from hippo_rep.training.checkpoint import load_checkpoint
from tests.test_tem import small_cfg

pytestmark = pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")

#: 3 environments of 60 steps in chunks of 16 (the Hebbian memory carried across chunks).
KW = dict(n_envs=3, n_steps=60, chunk=16, seed=2)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A tiny TEM trained for 4 iterations (modules of 6 and 4 g units, 3 and 2 of them in
    the memory, x_c of 5 units: 25 p units)."""
    out = tmp_path_factory.mktemp("tem") / "run"
    T.train(small_cfg("train.iterations=4"), out, progress=False)
    return out / "checkpoint.pt"


@pytest.fixture(scope="module")
def rec(ckpt):
    return R.record_checkpoint(ckpt, **KW)


def test_tem_recording_holds_raw_g_with_modules_and_p(ckpt, rec):
    S.validate(rec)
    assert rec.hippo.populations == (S.G, S.G_PI, S.P)
    assert S.MEMORY not in rec.dims and S.MEMORY_ACTIVITY not in rec
    assert rec[S.G].dims == ("env", "time", "g_unit") and rec.sizes["g_unit"] == 10
    assert rec[S.P].dims == ("env", "time", "p_unit") and rec.sizes["p_unit"] == 25
    # module of each g unit: 6 units of module 0, then 4 of module 1
    assert rec[S.MODULE].dims == ("g_unit",)
    np.testing.assert_array_equal(rec[S.MODULE].values, [0] * 6 + [1] * 4)
    # p = flatten(g_down ⊗ x̃) per module: g_down = g units 0-2 (module 0) and 6-7 (module 1)
    np.testing.assert_array_equal(rec[S.P_MODULE].values, [0] * 15 + [1] * 10)
    np.testing.assert_array_equal(rec[S.P_G_UNIT].values,
                                  np.repeat([0, 1, 2, 6, 7], 5))
    np.testing.assert_array_equal(rec[S.P_SENSORY].values, np.tile(np.arange(5), 5))
    # the values are the model's own outputs on the recorder's walks (raw g, not unit RMS)
    model, _, _ = load_checkpoint(ckpt)
    obs = torch.as_tensor(rec["observation"].values)
    act = torch.as_tensor(rec["action"].values)
    with torch.no_grad():
        out, _ = model.eval()(obs, act)
    np.testing.assert_allclose(rec[S.G].values, out.g.numpy(), atol=1e-5)
    np.testing.assert_allclose(rec[S.G_PI].values, out.g_pi.numpy(), atol=1e-5)
    np.testing.assert_allclose(rec[S.P].values, out.p.numpy(), atol=1e-5)
    np.testing.assert_array_equal(rec["prediction"].values, out.logits_pi.argmax(-1).numpy())
    assert float(np.abs(rec[S.G]).max()) <= 1.0  # TEM's g is clamped, not rescaled
    rms = np.sqrt((rec[S.G].values ** 2).mean(-1))
    assert not np.allclose(rms, 1.0, atol=0.05)
    # each p unit is f_p (leaky ReLU, slope 0.01 below 0; x̃ ≥ 0) of its g unit times one
    # sensory value x̃: dividing by g (and the slope) gives the same x̃ for every g unit of
    # the module, which checks the p_g_unit, p_module and p_sensory_unit coords
    g = rec[S.G].values[..., rec[S.P_G_UNIT].values].astype(np.float64)
    p = rec[S.P].values.astype(np.float64)
    ok = (np.abs(g) > 0.05) & (np.abs(p) > 1e-5) & (p < 1)
    slope = np.where(g > 0, 1.0, 0.01)
    xs = np.where(ok, p / np.where(ok, g * slope, 1), np.nan)  # = x̃[sensory] where linear
    compared = 0
    for m in (0, 1):
        for s in range(5):
            cols = (rec[S.P_MODULE].values == m) & (rec[S.P_SENSORY].values == s)
            v = xs[..., cols]
            two = np.isfinite(v).sum(-1) >= 2  # steps where two g units can be compared
            compared += int(two.sum())
            spread = np.nanmax(v[two], -1) - np.nanmin(v[two], -1)
            assert spread.size == 0 or spread.max() < 1e-4
    assert compared > 100
    assert "raw" in rec[S.G].attrs["long_name"]


def test_tem_zarr_and_netcdf_hold_the_same_values(ckpt, rec, tmp_path):
    nc, zarr = tmp_path / "r.nc", tmp_path / "r.zarr"
    R.record_to_file(ckpt, nc, **KW)
    R.record_to_file(ckpt, zarr, **KW)
    for path in (nc, zarr):
        with R.open_recording(path) as ds:
            for name in (S.G, S.G_PI, S.P, S.MODULE, S.P_G_UNIT):
                np.testing.assert_allclose(ds[name].values, rec[name].values, atol=1e-6)
            assert int(ds.attrs[S.N_STEPS]) == KW["n_steps"]


def test_tem_schema_errors_name_the_field(rec):
    bad = rec.drop_vars(S.P)  # without p, a recording needs TEM-t's memory slots
    with pytest.raises(S.SchemaError, match="memory_activity"):
        S.validate(bad)
    bad = rec.copy()
    bad[S.P] = bad[S.P].transpose("p_unit", "env", "time")
    with pytest.raises(S.SchemaError, match=r"wrong dims: p\("):
        S.validate(bad)
    bad = rec.reset_coords(S.MODULE)
    with pytest.raises(S.SchemaError, match="module .should be a coordinate"):
        S.validate(bad)


def test_record_analyse_figures_end_to_end_on_tem(ckpt, tmp_path, capsys):
    rec_path, an_path = tmp_path / "rec.nc", tmp_path / "an.nc"
    assert cli.main(["record", str(ckpt), "--out", str(rec_path), "--envs", "3",
                     "--steps", "60"]) == 0
    assert "25 TEM p units" in capsys.readouterr().out
    assert cli.main(["analyse", str(rec_path), "--out", str(an_path), "--shuffles", "5"]) == 0
    an = xr.open_dataset(an_path)
    S.validate_analysis(an)
    assert an.hippo.populations == (S.G, S.G_PI, S.P)
    assert int((an["variable"] == S.P).sum()) == 25
    assert an.attrs["remap_tem_memory_variable"] == S.P  # the TEM test uses p as place cells
    an.close()
    inputs = FigureInputs(analysis=xr.load_dataset(an_path), recording=xr.load_dataset(rec_path))
    report = build_figures(inputs, tmp_path / "figs", formats=["png"])
    for name in ("grid_cells", "place_cells", "scores", "remapping"):
        assert not isinstance(report[name], str), (name, report[name])
        assert report[name][0].stat().st_size > 1000


def test_analysis_rate_maps_of_p_match_the_recording(rec):
    """The analysis reads p as its own population: a p unit's map at a node is its mean
    activity over the visits to that node."""
    an = analyse(rec, variables=[S.P], shuffles=3)
    unit = 7
    got = an["node_rate"].isel(unit=unit).sel(env=0).values
    node = rec["node"].sel(env=0).values
    act = rec[S.P].sel(env=0).isel(p_unit=unit).values
    want = np.array([act[node == n].mean() if (node == n).any() else np.nan
                     for n in range(rec.sizes["world_node"])])
    np.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)



def test_tem_vs_temt_figure_from_two_analyses(ckpt, rec, tmp_path):
    from tests.test_recording import _checkpoint

    temt_rec = R.record_checkpoint(_checkpoint(tmp_path / "temt.pt"), **KW)
    temt = analyse(temt_rec, shuffles=3)
    tem = analyse(rec, shuffles=3)
    report = build_figures(FigureInputs(analysis=temt), tmp_path, only=["tem_vs_temt"])
    assert report["tem_vs_temt"].startswith("skipped:") and "--tem-analysis" in \
        report["tem_vs_temt"]
    swapped = build_figures(FigureInputs(analysis=tem, tem_analysis=temt), tmp_path,
                            only=["tem_vs_temt"])
    assert "not the analysis of a TEM recording" in swapped["tem_vs_temt"]
    report = build_figures(FigureInputs(analysis=temt, tem_analysis=tem), tmp_path,
                           only=["tem_vs_temt"], formats=["png", "svg"])
    assert [p.suffix for p in report["tem_vs_temt"]] == [".png", ".svg"]
    svg = (tmp_path / "tem_vs_temt.svg").read_text()
    # one best unit per TEM module (2 modules), labelled by module, and both populations
    assert "module 0" in svg and "module 1" in svg and "TEM p" in svg
    # class fractions of all four populations, with their counts, and the remapping panel
    assert "cell classes" in svg and "two-wave" in svg and "remapping" in svg
    n_p = int(tem["is_place"].sel(unit=tem["variable"] == "p").notnull().sum())
    assert f"TEM p (n = {n_p})" in svg  # the denominator in the class panel's legend
    assert "TEM-t memory" in svg


def test_score_distributions_counts_and_medians():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hippo_rep.plotting.compare import score_distributions

    fig, ax = plt.subplots()
    groups = {"a": np.array([[1.0, 2.0, np.nan], [3.0, 4.0, 5.0]]), "b": [0.5, np.nan],
              "empty": [np.nan]}
    assert score_distributions(groups, ax=ax, ylabel="gridness") is ax
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["a\nn = 5\nmedian\n3.00", "b\nn = 1\nmedian\n0.50",
                      "empty\nn = 0\nmedian\n–"]
    medians = [ln for ln in ax.get_lines() if ln.get_color() == "k"]
    assert [float(ln.get_ydata()[0]) for ln in medians] == [3.0, 0.5]
    assert ax.get_ylabel() == "gridness"
    plt.close(fig)
