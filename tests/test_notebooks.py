"""The notebooks: stored without outputs, a first cell tagged ``parameters``, and each one
executes (nbclient) on tiny synthetic data with its parameters overridden; the helpers of
:mod:`hippo_rep.explore` they call."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

nbformat = pytest.importorskip("nbformat")

from tests.test_figures import fake_eval, fake_sweep_rows  # noqa: E402

pytestmark = pytest.mark.slow  # end to end (see pyproject's markers)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
DATA = NOTEBOOKS.parent / "data"
NAMES = ["01_explore_rate_maps", "02_grid_and_place_statistics", "03_publication_figures",
         "04_your_own_data"]
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
                                               '"../data/passkey/"',
                                               '"../data/learning_speed_torch_tem.json"',
                                               '"../data/tem_8x8_analysis.nc"'],
                    "04_your_own_data": ["minutes = 10", "n_shuffles = 100",
                                         "work_dir = None"]}[name]:
        assert default in src


def execute(name, params: dict, cwd: Path):
    """Run a notebook with a cell setting ``params`` injected after its parameters cell."""
    from nbclient import NotebookClient

    nb = read(name)
    src = "# injected by tests/test_notebooks.py\n" + "\n".join(
        f"{k} = {v!r}" for k, v in params.items())
    nb.cells.insert(1, nbformat.v4.new_code_cell(
        src, metadata={"tags": ["injected-parameters"]}))
    # the kernel (and what it starts) imports this checkout's hippo_rep, whatever is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(NOTEBOOKS.parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute(env=env)
    return nb


def outputs(nb, kind):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if kind in o.get("data", {})]


def widget_outputs(nb) -> list[dict]:
    """The outputs held by every ipywidgets Output widget, from the widget state nbclient
    saved in the notebook's metadata (what the front end renders in the explorer)."""
    state = nb.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return [o for m in state.values() if m["model_name"] == "OutputModel"
            for o in m["state"].get("outputs", [])]


def assert_no_figure_text(nb) -> None:
    """No output (cells or widgets) is a figure's bare text repr instead of its image."""
    every = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    every += widget_outputs(nb)
    for o in every:
        texts = [o.get("text", "")] + [v for k, v in o.get("data", {}).items()
                                       if k == "text/plain"]
        for t in texts:
            t = "".join(t) if isinstance(t, list) else t
            assert "<Figure size" not in t, t
        assert o.get("output_type") != "error", o


def png_ok(output) -> bool:
    """A display output whose image/png decodes to a PNG."""
    import base64

    data = output.get("data", {}).get("image/png")
    return bool(data) and base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"


def test_01_explore_rate_maps_executes(tiny, tmp_path):
    pytest.importorskip("ipywidgets")
    root, _ = tiny
    nb = execute("01_explore_rate_maps", {"analysis_path": str(root / "analysis.nc")},
                 tmp_path)
    assert outputs(nb, "application/vnd.jupyter.widget-view+json")
    shown = widget_outputs(nb)  # the explorer's panel holds an image, not a text repr
    assert shown and all(png_ok(o) for o in shown)
    assert outputs(nb, "text/html")  # the unit table
    returned = outputs(nb, "image/png")  # compare_figure returned from the last cell
    assert len(returned) == 1 and png_ok(returned[0])
    assert_no_figure_text(nb)


def test_01_static_fallback_shows_images(tiny, tmp_path):
    """Without widgets, as SVG (the PNG path is the explorer's, checked above)."""
    root, ds = tiny
    nb = execute("01_explore_rate_maps", {"analysis_path": str(root / "analysis.nc"),
                                          "use_widgets": False, "n_static": 1,
                                          "fmt": "svg"}, tmp_path)
    n_pop = len(set(ds["variable"].values.tolist()))
    # per population: its best unit, then that unit across environments; and the last cell
    images = outputs(nb, "image/svg+xml")
    assert len(images) == 2 * n_pop + 1
    assert all("<svg" in "".join(o["data"]["image/svg+xml"]) for o in images)
    assert not outputs(nb, "image/png")
    assert not outputs(nb, "application/vnd.jupyter.widget-view+json")
    assert_no_figure_text(nb)


def test_02_grid_and_place_statistics_executes(tiny, tmp_path):
    root, _ = tiny
    out = tmp_path / "rerun.nc"
    nb = execute("02_grid_and_place_statistics",
                 {"recording_path": str(root / "recording.nc"), "n_shuffles": 2,
                  "out_path": str(out)}, tmp_path)
    assert out.stat().st_size > 0
    text = "".join(o["data"]["text/plain"] for o in outputs(nb, "text/plain"))
    assert "frac_grid" in text and "pv_corr_g" in text
    # class fractions, score distributions vs nulls, place fields, remapping
    images = outputs(nb, "image/png")
    assert len(images) == 4 and all(png_ok(o) for o in images)
    assert_no_figure_text(nb)


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
                  "delay_path": str(tmp_path / "delay.nc"), "formats": ["png"],
                  "learning_speed_path": str(DATA / "learning_speed_torch_tem.json"),
                  "tem_analysis_path": str(DATA / "tem_8x8_analysis.nc")}, tmp_path)
    written = {p.stem for p in out.glob("*.png")}
    for name in ("learning", "grid_cells", "place_cells", "scores", "remapping", "passkey",
                 "memory_delay", "learning_speed", "tem_vs_temt"):
        assert name in written
    assert len(outputs(nb, "image/png")) == len(written) <= len(FIGURES)
    assert_no_figure_text(nb)


def test_04_your_own_data_executes(tmp_path):
    pytest.importorskip("pynwb")
    pytest.importorskip("ratinabox")  # the rat and its cells (tests/test_ratinabox_session.py)
    work = tmp_path / "work"
    nb = execute("04_your_own_data", {"minutes": 2, "n_shuffles": 4, "work_dir": str(work)},
                 tmp_path)
    assert (work / "session.nwb").stat().st_size > 0
    assert (work / "analysis_cli.nc").stat().st_size > 0
    text = "".join("".join(o.get("text", "")) for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs)
    assert "analysed 1 envs × 12 units" in text  # the command line's summary
    assert "the command line and the Python API agree on rate_map, gridness_60" in text
    html = "".join("".join(o["data"]["text/html"]) for o in outputs(nb, "text/html"))
    assert "frac_grid" in html and "planted_spacing_cm" in html and "boundary" in html
    assert "planted_wall_angle" in html and "largest field, % of visited bins" in html
    images = outputs(nb, "image/png")  # session_cells, scores
    assert len(images) == 2 and all(png_ok(o) for o in images)
    assert_no_figure_text(nb)


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
    # per population: its best unit, then that unit in both environments
    assert len(figs) == 6 and all(isinstance(f, Figure) for f in figs)
    # map, autocorrelogram, scores; the two maps' colour bars inset beside them
    assert len(figs[0].axes) == 3 and [len(a.child_axes) for a in figs[0].axes] == [1, 1, 0]
    assert len(figs[1].axes) == ds.sizes["env"]  # one map per environment
    with pytest.raises(ImportError):
        explore_rate_maps(ds, widgets=True, show=False)


def test_explorer_static_fallback_says_why_a_map_is_missing(tiny, capsys):
    import numpy as np

    from hippo_rep.explore import ExploreError, explore_rate_maps

    _, ds = tiny
    ds = ds.copy(deep=True)
    ds["rate_map"].values[:, (ds["variable"] == "g_pi").values] = np.nan
    figs = explore_rate_maps(ds, n_static=1, widgets=False, show=False)
    assert len(figs) == 4  # g and memory_activity: best unit + across environments
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.startswith("g_pi ") for line in lines)
    assert "has no rate maps in env" in lines[0] and "every environment" in lines[1]
    with pytest.raises(ExploreError, match="display format"):
        explore_rate_maps(ds, fmt="gif", show=False)


def test_explorer_widget_switches_population_environment_rank_and_view(tiny):
    pytest.importorskip("ipywidgets")
    from hippo_rep.explore import ExploreError, explore_rate_maps, ranked_units

    _, ds = tiny
    ex = explore_rate_maps(ds, show=False)
    env0 = ds["env"].values[0]
    assert ex.unit.value == ranked_units(ds, env0, ex.population.value)[0][0]
    assert png_ok(ex.output.outputs[0])
    ex.population.value = "memory_activity"
    ranked = ranked_units(ds, env0, "memory_activity")
    assert ex.unit.value == ranked[0][0] and ex.rank.max == len(ranked) - 1
    ex.rank.value = 3  # the slider walks the same best-first order
    assert ex.unit.value == ranked[3][0]
    ex.unit.value = ranked[-1][0]
    assert ex.rank.value == len(ranked) - 1
    kept = ex.unit.value
    ex.env.value = ds["env"].values[1]
    assert ex.unit.value == kept  # a new environment keeps the unit
    ex.view.value = "compare"
    assert png_ok(ex.output.outputs[0])
    with pytest.raises(ExploreError, match="environment"):
        explore_rate_maps(ds, env=99, show=False)
    with pytest.raises(ExploreError, match="populations"):
        from hippo_rep.explore import unit_figure

        unit_figure(ds, env0, "g", 999)


def test_explorer_panel_says_why_instead_of_raising(tiny):
    """An all-NaN map, a population without maps, and no rate maps at all: the panel holds
    one line of text (a widget callback would swallow an exception)."""
    pytest.importorskip("ipywidgets")
    import numpy as np

    from hippo_rep.explore import explore_rate_maps, ranked_units

    _, ds = tiny
    ds = ds.copy(deep=True)
    env0 = ds["env"].values[0]
    g_pi = (ds["variable"] == "g_pi").values
    ds["rate_map"].values[:, g_pi] = np.nan  # a population without maps
    bad = ranked_units(ds, env0, "memory_activity")[1][0]
    mem = ((ds["variable"] == "memory_activity") & (ds["unit_index"] == bad)).values
    ds["rate_map"].values[0, mem] = np.nan  # one unit's map, in env 0 only
    ex = explore_rate_maps(ds, show=False)

    def panel_text():
        (o,) = ex.output.outputs
        assert o["output_type"] == "stream", o
        assert o["text"].count("\n") == 1
        return o["text"]

    ex.population.value = "g_pi"
    assert "'g_pi' has no rate maps" in panel_text()
    ex.population.value = "memory_activity"
    assert png_ok(ex.output.outputs[0])
    ex.unit.value = bad
    assert f"unit {bad} has an all-NaN rate map in env {env0}" in panel_text()
    ex.view.value = "compare"  # its map in env 1 is still drawn
    assert png_ok(ex.output.outputs[0])
    ex.env.value = ds["env"].values[1]
    ex.view.value = "unit"
    assert png_ok(ex.output.outputs[0])
    ex2 = explore_rate_maps(ds.drop_vars("rate_map"), show=False)
    (o,) = ex2.output.outputs
    assert "no rate maps" in o["text"]


# ---- display of bare figures and the statistics figures ------------------------------------


def _figure(w=3.0, h=2.0):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h))
    fig.subplots().plot([0, 1], [0, 1])
    return fig


def test_figure_bundle_png_at_twice_the_display_size_and_svg():
    import base64
    import struct

    from hippo_rep.plotting.display import (
        DISPLAY_DPI,
        PNG_SCALE,
        DisplayError,
        figure_bundle,
    )

    data, meta = figure_bundle(_figure())
    png = base64.b64decode(data["image/png"])
    w, h = struct.unpack(">II", png[16:24])
    shown = meta["image/png"]["width"], meta["image/png"]["height"]
    assert abs(w - PNG_SCALE * shown[0]) <= 1 and abs(h - PNG_SCALE * shown[1]) <= 1
    assert 200 <= meta["image/png"]["width"] <= 320  # 3 in at 100 dpi, tight box
    assert "<Figure" not in data["text/plain"]
    wide = _figure(2.0, 1.5)  # a title wider than the canvas (as the remapping figure's)
    wide.set_layout_engine("constrained")
    wide.suptitle("a title much wider than this two-inch figure, which must stay whole " * 2)
    _, meta = figure_bundle(wide)
    assert meta["image/png"]["width"] > 2.0 * DISPLAY_DPI * 2
    svg, _ = figure_bundle(_figure(), fmt="svg")
    assert "<svg" in svg["image/svg+xml"] and "image/png" not in svg
    with pytest.raises(DisplayError, match="format"):
        figure_bundle(_figure(), fmt="gif")
    with pytest.raises(DisplayError, match="Figure"):
        figure_bundle("not a figure")


def test_figure_formatter_registered_on_a_shell():
    """A bare Figure returned from a cell: the shell's formatters give an image."""
    from types import SimpleNamespace

    from IPython.core.formatters import DisplayFormatter

    from hippo_rep.plotting.display import FigureView, register_figure_formatter

    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    data, _ = shell.display_formatter.format(_figure())
    assert "image/png" not in data and "<Figure size" in data["text/plain"]  # the bug
    assert register_figure_formatter("png", shell=shell)
    data, meta = shell.display_formatter.format(_figure())
    assert data["image/png"] and meta["image/png"]["width"] > 0
    assert "<Figure size" not in data["text/plain"]
    assert register_figure_formatter("svg", shell=shell)
    data, _ = shell.display_formatter.format(_figure())
    assert "image/svg+xml" in data and "image/png" not in data
    data, _ = shell.display_formatter.format(FigureView(_figure()))  # no formatter needed
    assert "image/png" in data
    assert not register_figure_formatter("png")  # outside IPython: nothing to do


def test_class_fraction_bars_draw_the_one_definition(tiny):
    from matplotlib.figure import Figure

    from hippo_rep.explore import class_fraction_figure
    from hippo_rep.plotting.scores import class_fraction_bars
    from hippo_rep.schema import class_fractions

    _, ds = tiny
    c = class_fractions(ds)
    ax = Figure().subplots()
    class_fraction_bars(c, ax=ax)
    widths = [b.get_width() for b in ax.patches]
    expect = np.nan_to_num(c["fraction"].values)  # bars drawn population by population
    assert widths == pytest.approx(expect.ravel().tolist())
    # the counts right of the axes, one line per class, populations in legend order (k/n
    # where a population's n differs between classes; its n in the legend where it does not)
    from matplotlib.offsetbox import AnnotationBbox, TextArea

    k, n = c["numerator"].values.astype(int), c["denominator"].values.astype(int)
    lines = [[t.get_text() for t in a.offsetbox.get_children() if isinstance(t, TextArea)]
             for a in ax.artists if isinstance(a, AnnotationBbox)]
    want = [[("–" if n[i][j] == 0 else f"{k[i][j]}" if len(set(n[i])) == 1
              else f"{k[i][j]}/{n[i][j]}") for i in range(k.shape[0])]
            for j in range(k.shape[1])]
    assert lines == want
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert all(f"(n = {n[i][0]})" in legend[i] for i in range(k.shape[0])
               if len(set(n[i])) == 1)
    assert len(class_fraction_figure(ds).axes) == 1


def test_class_fraction_bars_say_n_a_for_a_class_one_analysis_lacks(tiny):
    """Two analyses, one written before a class existed (its border class dropped here):
    joined outer, that population's count for the class reads "n/a", the others' stand."""
    import xarray as xr
    from matplotlib.figure import Figure
    from matplotlib.offsetbox import AnnotationBbox, TextArea

    from hippo_rep.plotting.scores import class_fraction_bars
    from hippo_rep.schema import class_fractions

    _, ds = tiny
    c = class_fractions(ds)
    pops = [str(p) for p in c["population"].values][:2]
    new = c.sel(population=pops[0], drop=True)
    old = c.sel(population=pops[1], drop=True).isel(cell_class=slice(0, -1))
    lost = str(c["cell_class"].values[-1])
    both = xr.concat([new, old], dim=xr.DataArray(["new", "old"], dims="population",
                                                  name="population"), join="outer")
    ax = Figure().subplots()
    class_fraction_bars(both, ax=ax)
    lines = [[t.get_text() for t in a.offsetbox.get_children() if isinstance(t, TextArea)]
             for a in ax.artists if isinstance(a, AnnotationBbox)]
    classes = [str(x) for x in both["cell_class"].values]
    assert lines[classes.index(lost)][1] == "n/a"
    assert all(line[1] != "n/a" for cls, line in zip(classes, lines, strict=True) if cls != lost)
    assert all(line[0] != "n/a" for line in lines)


def test_count_distribution_fractions():
    from matplotlib.figure import Figure

    from hippo_rep.plotting.scores import count_distribution

    ax = count_distribution([0, 1, 1, 3, float("nan")], ax=Figure().subplots())
    assert [b.get_height() for b in ax.patches] == pytest.approx([0.25, 0.5, 0.0, 0.25])
    assert [b.get_x() + b.get_width() / 2 for b in ax.patches] == pytest.approx([0, 1, 2, 3])


def test_field_and_registry_figures(tiny):
    import matplotlib.pyplot as plt

    from hippo_rep.explore import ExploreError, field_figure, registry_figure

    _, ds = tiny
    n_pop = len(set(ds["variable"].values.tolist()))
    assert len(field_figure(ds).axes) == 2 * n_pop
    before = plt.get_fignums()
    fig = registry_figure("scores", analysis=ds)
    assert fig.axes and plt.get_fignums() == before  # a bare Figure: not shown twice inline
    with pytest.raises(ExploreError, match="unknown figure"):
        registry_figure("nope", analysis=ds)
    with pytest.raises(ExploreError, match="lacks"):
        registry_figure("scores", analysis=ds.drop_vars("is_place"))
    with pytest.raises(ExploreError, match="field_area"):
        field_figure(ds.drop_vars("field_area"))
