"""The notebooks: stored without outputs, a first cell tagged ``parameters``, and each one
executes (nbclient) on tiny synthetic data with its parameters overridden; the helpers of
:mod:`hippo_rep.explore` they call."""

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from tests.test_figures import fake_eval, fake_sweep_rows  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = ["01_explore_rate_maps", "02_grid_and_place_statistics", "03_publication_figures"]
#: Seconds one cell may run.
CELL_TIMEOUT = 120


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Shipped-data look-alikes: recording.nc, analysis.nc, eval JSONs, passkey/sweep.json."""
    from hippo_rep.analysis import analyse, synthetic_recording, write_analysis
    from hippo_rep.recording import write_netcdf

    root = tmp_path_factory.mktemp("data")
    rec = synthetic_recording("square:7", n_env=2, n_steps=300, n_grid=2, n_place=2,
                              n_random=1, n_memory=6, seed=1)
    write_netcdf(rec, root / "recording.nc")
    analysis = analyse(rec, shuffles=3, seed=0, decode_max_steps_per_env=60)
    write_analysis(analysis, root / "analysis.nc")
    (root / "eval.json").write_text(json.dumps(fake_eval()))
    (root / "eval_baseline.json").write_text(json.dumps(fake_eval("sinusoidal", 0.3)))
    (root / "passkey").mkdir()
    (root / "passkey" / "sweep.json").write_text(json.dumps({"rows": fake_sweep_rows()}))
    return root, analysis


def read(name):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


@pytest.mark.parametrize("name", NAMES)
def test_stored_without_outputs_with_a_parameters_cell(name):
    nb = read(name)
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "code" and "parameters" in first.metadata.get("tags", [])
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    # defaults: the shipped data
    src = first.source
    for default in {"01_explore_rate_maps": ['"../data/analysis.nc"'],
                    "02_grid_and_place_statistics": ['"../data/recording.nc"'],
                    "03_publication_figures": ['"../data/analysis.nc"', '"../data/eval.json"',
                                               '"../data/eval_baseline.json"',
                                               '"../data/passkey/"']}[name]:
        assert default in src


def execute(name, params: dict, cwd: Path):
    """Run a notebook with a cell setting ``params`` injected after its parameters cell."""
    from nbclient import NotebookClient

    nb = read(name)
    src = "# injected by tests/test_notebooks.py\n" + "\n".join(
        f"{k} = {v!r}" for k, v in params.items())
    nb.cells.insert(1, nbformat.v4.new_code_cell(
        src, metadata={"tags": ["injected-parameters"]}))
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def outputs(nb, kind):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if kind in o.get("data", {})]


def test_01_explore_rate_maps_executes(tiny, tmp_path):
    root, _ = tiny
    nb = execute("01_explore_rate_maps", {"analysis_path": str(root / "analysis.nc")},
                 tmp_path)
    shown = outputs(nb, "application/vnd.jupyter.widget-view+json") or \
        outputs(nb, "image/png")
    assert shown
    assert outputs(nb, "text/html")  # the unit table


def test_02_grid_and_place_statistics_executes(tiny, tmp_path):
    root, _ = tiny
    out = tmp_path / "rerun.nc"
    nb = execute("02_grid_and_place_statistics",
                 {"recording_path": str(root / "recording.nc"), "n_shuffles": 2,
                  "out_path": str(out)}, tmp_path)
    assert out.stat().st_size > 0
    text = "".join(o["data"]["text/plain"] for o in outputs(nb, "text/plain"))
    assert "frac_grid" in text and "pv_corr_g" in text


def test_03_publication_figures_executes(tiny, tmp_path):
    import xarray as xr

    from hippo_rep.figures import FIGURES
    from hippo_rep.tasks.delay import write_delay

    root, _ = tiny
    out = tmp_path / "figs"
    delay = xr.Dataset({"accuracy": (("variant", "delay"), [[1.0, 0.9], [0.6, 0.05]]),
                        "chance": 1 / 45, "node_agent": 1.0},
                       coords={"variant": ["full", "window"], "delay": [0, 64]},
                       attrs={"memory_block": 16, "memory_blocks": 4, "fam_slots": 8,
                              "window_steps": "64-80"})
    write_delay(delay, tmp_path / "delay.nc")
    nb = execute("03_publication_figures",
                 {"analysis_path": str(root / "analysis.nc"),
                  "recording_path": str(root / "recording.nc"),
                  "eval_paths": [str(root / "eval.json"), str(root / "eval_baseline.json")],
                  "passkey_path": str(root / "passkey"), "out_dir": str(out),
                  "delay_path": str(tmp_path / "delay.nc"), "formats": ["png"]}, tmp_path)
    written = {p.stem for p in out.glob("*.png")}
    for name in ("learning", "grid_cells", "place_cells", "scores", "remapping", "passkey",
                 "memory_delay"):
        assert name in written
    assert len(outputs(nb, "image/png")) == len(written) <= len(FIGURES)


# ---- the helpers the notebooks call ------------------------------------------------------


def test_tables_of_an_analysis(tiny):
    from hippo_rep.explore import classification_summary, remapping_table, unit_table

    _, ds = tiny
    t = unit_table(ds)
    assert len(t) == ds.sizes["env"] * ds.sizes["unit"]
    assert t.index.names == ["env", "variable", "unit_index"]
    s = classification_summary(ds)
    for v in ("g", "memory_activity"):
        sub = ds.sel(unit=ds["variable"] == v)
        exists = sub["rate_map"].notnull().any(("y", "x"))  # the denominator: pairs that exist
        assert s.loc[v, "n"] == int(exists.sum())
        for flag in ("is_grid", "is_place", "is_two_wave"):
            k = int((sub[flag] & exists).sum())
            assert s.loc[v, f"frac_{flag[3:]}"] == pytest.approx(k / int(exists.sum()))
    r = remapping_table(ds)
    assert len(r) == ds.sizes["env_pair"]
    assert r["tem_corr"].iloc[0] == pytest.approx(float(ds["tem_corr"][0]))


def test_explorer_static_fallback_without_ipywidgets(tiny, monkeypatch):
    from matplotlib.figure import Figure

    from hippo_rep.explore import explore_rate_maps

    _, ds = tiny
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import fails
    figs = explore_rate_maps(ds, n_static=1, show=False)
    assert len(figs) == 3 and all(isinstance(f, Figure) for f in figs)  # one per population
    assert len(figs[0].axes) == 5  # map, autocorrelogram, scores, two colour bars
    with pytest.raises(ImportError):
        explore_rate_maps(ds, widgets=True, show=False)


def test_explorer_widget_switches_population_and_environment(tiny):
    pytest.importorskip("ipywidgets")
    from hippo_rep.explore import ExploreError, explore_rate_maps, ranked_units

    _, ds = tiny
    box = explore_rate_maps(ds, show=False)
    env_w, var_w, unit_w = box.children[0].children
    assert unit_w.value == ranked_units(ds, env_w.value, var_w.value)[0][0]
    var_w.value = "memory_activity"
    assert unit_w.value == ranked_units(ds, env_w.value, "memory_activity")[0][0]
    unit_w.value = unit_w.options[-1][1]
    kept = unit_w.value
    env_w.value = ds["env"].values[1]
    assert unit_w.value == kept  # a new environment keeps the unit
    with pytest.raises(ExploreError, match="environment"):
        explore_rate_maps(ds, env=99, show=False)
    with pytest.raises(ExploreError, match="populations"):
        from hippo_rep.explore import unit_figure

        unit_figure(ds, ds["env"].values[0], "g", 999)
