import numpy as np
import pytest

from hippo_rep.figures import FIGURES, FigureError, FigureInputs, build_figures, read_eval


def fake_eval(kind="temt", acc=0.9):
    types = ["first_visit", "revisit_known_edge", "revisit_new_edge", "revisit_unseen_edge",
             "revisit", "all"]
    x = [0.05 + 0.1 * i for i in range(10)]
    return {"model": dict.fromkeys(types, acc), "node_agent": dict.fromkeys(types, 1.0),
            "edge_agent": dict.fromkeys(types, 0.5),
            "curve": {"proportion_visited": x, "model": [acc * v for v in x],
                      "node_agent": x, "edge_agent": [v / 2 for v in x[:-1]] + [None]},
            "meta": {"world": "square:4x4", "envs": 2, "steps": 10, "model_kind": kind,
                     "chance": 0.1}}


@pytest.mark.parametrize("formats", [("png",), ("pdf", "svg", "png")])
def test_learning_figure_written_in_every_format(tmp_path, formats):
    inputs = FigureInputs(evals={"TEM-t": fake_eval(), "sinusoidal": fake_eval("sinusoidal",
                                                                               0.3)})
    report = build_figures(inputs, tmp_path, only=["learning"], formats=formats)
    assert [p.suffix[1:] for p in report["learning"]] == list(formats)
    for p in report["learning"]:
        assert p.stat().st_size > 1000
    if "png" in formats:
        assert (tmp_path / "learning.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if "svg" in formats:  # editable text, not paths
        assert "<text" in (tmp_path / "learning.svg").read_text() or \
            "proportion of nodes visited" in (tmp_path / "learning.svg").read_text()


def test_missing_input_skips_with_reason(tmp_path):
    report = build_figures(FigureInputs(), tmp_path, only=["learning"])
    assert report["learning"].startswith("skipped:") and "--eval" in report["learning"]
    assert not list(tmp_path.iterdir())


def test_unknown_figure_lists_known(tmp_path):
    with pytest.raises(FigureError, match="known: .*learning"):
        build_figures(FigureInputs(), tmp_path, only=["nope"])
    with pytest.raises(FigureError, match="format"):
        build_figures(FigureInputs(), tmp_path, formats=["bmp"])


def test_read_eval_rejects_other_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"a": 1}')
    with pytest.raises(FigureError, match="x.json"):
        read_eval(p)
    p.write_text("{")
    with pytest.raises(FigureError, match="x.json.*not valid JSON"):
        read_eval(p)


def test_registry_has_learning():
    assert "learning" in FIGURES


@pytest.fixture(scope="module")
def synthetic_analysis():
    from hippo_rep.analysis import analyse
    from hippo_rep.analysis.synthetic_recording import synthetic_recording

    rec = synthetic_recording(n_env=2, n_steps=600, n_grid=4, n_place=4, n_random=2,
                              n_memory=8)
    return analyse(rec, shuffles=2, seed=0)


@pytest.fixture(scope="module")
def every_figure(tmp_path_factory, synthetic_analysis):
    """Every figure of the synthetic analysis (and an evaluation) built once, in every
    format, as a session's plain build_figures call does: (report, pyplot's figure numbers
    and matplotlib.rcParams before and after). Shared by the tests below that each built
    some of these figures themselves (the same inputs, a subset of the formats)."""
    import matplotlib
    import matplotlib.pyplot as plt

    plt.close("all")
    style = dict(matplotlib.rcParams)
    report = build_figures(FigureInputs(analysis=synthetic_analysis,
                                        evals={"TEM-t": fake_eval()}),
                           tmp_path_factory.mktemp("every_figure"),
                           formats=("pdf", "svg", "png"))
    return report, plt.get_fignums(), style, dict(matplotlib.rcParams)


@pytest.mark.parametrize("name", ["grid_cells", "place_cells"])
def test_map_figures_from_synthetic_analysis(every_figure, name):
    check_written(every_figure[0][name])  # each file > 1000 bytes, of its format


def test_map_figure_skipped_when_variable_missing(tmp_path, synthetic_analysis):
    report = build_figures(FigureInputs(analysis=synthetic_analysis.drop_vars("gridness_60")),
                           tmp_path, only=["grid_cells", "place_cells"], formats=("png",))
    assert "gridness_60" in report["grid_cells"]
    assert isinstance(report["place_cells"], list)


def test_map_figure_skipped_when_population_missing(tmp_path, synthetic_analysis):
    only_g = synthetic_analysis.hippo.population("g")
    report = build_figures(FigureInputs(analysis=only_g), tmp_path,
                           only=["grid_cells", "place_cells"], formats=("png",))
    assert isinstance(report["grid_cells"], list)
    assert report["place_cells"] == ("skipped: no population 'memory_activity' in the "
                                     "analysis (populations: g)")


MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF", "svg": b"<?xml"}


def check_written(paths, formats=("pdf", "svg", "png")):
    assert [p.suffix[1:] for p in paths] == list(formats)
    for p in paths:
        data = p.read_bytes()
        assert len(data) > 1000, p
        assert data.startswith(MAGIC[p.suffix[1:]]), p


def fake_sweep_rows(variants=("bswa_m1", "fm1", "sum", "fam_f4"),
                    fillers=(0, 16, 64, 512, 1024)):
    return [{"variant": v, "filler": f, "accuracy": max(0.06, 1 - i * f / 2048),
             "std": 0.05, "n_seeds": 2, "per_seed": "0:1.000 1:1.000"}
            for i, v in enumerate(variants) for f in fillers]


@pytest.mark.parametrize("name", ["scores", "remapping"])
def test_score_and_remapping_figures_from_synthetic_analysis(every_figure, name):
    check_written(every_figure[0][name])


def test_scores_figure_uses_the_full_null_when_kept(tmp_path, synthetic_analysis):
    ds = synthetic_analysis.copy()
    ds["gridness_60_null"] = ds["gridness_60"].expand_dims(shuffle=ds.sizes["shuffle"]) * 0.5
    report = build_figures(FigureInputs(analysis=ds), tmp_path, only=["scores"],
                           formats=("svg",))
    assert "shuffle null (all shuffles)" in report["scores"][0].read_text()


def test_passkey_figure_from_sweep_rows(tmp_path):
    report = build_figures(FigureInputs(passkey=fake_sweep_rows()), tmp_path,
                           only=["passkey"])
    check_written(report["passkey"])
    svg = (tmp_path / "passkey.svg").read_text()
    assert "filler length (tokens" in svg and "fam_f4" in svg


def test_save_figure_writes_the_suffix_format_and_refuses_others(tmp_path):
    from hippo_rep.figures import passkey_figure, save_figure

    fig = passkey_figure(FigureInputs(passkey=fake_sweep_rows()))
    assert save_figure(fig, tmp_path / "p.svg") == tmp_path / "p.svg"
    assert (tmp_path / "p.svg").read_text().lstrip().startswith("<?xml")
    save_figure(fig, tmp_path / "p.PNG")
    assert (tmp_path / "p.PNG").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(FigureError, match=r"p\.jpg.*\.pdf, \.svg, \.png"):
        save_figure(fig, tmp_path / "p.jpg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.PNG", "p.svg"]


def test_passkey_sweep_refuses_a_figure_format_before_training(tmp_path, capsys):
    from hippo_rep import cli

    out = tmp_path / "sweep"
    assert cli.main(["passkey", "sweep", "--out", str(out), "--variants", "bswa_m1",
                     "--seeds", "0", "--figure", str(tmp_path / "acc.jpg")]) == 2
    assert "acc.jpg" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("name, drop", [
    ("scores", "gridness_60_null_q"), ("scores", "is_place"), ("scores", "spatial_info"),
    ("remapping", "tem_corr"), ("remapping", "pv_corr"), ("remapping", "node_rate"),
])
def test_new_figures_skipped_naming_the_missing_variable(tmp_path, synthetic_analysis, name,
                                                         drop):
    report = build_figures(FigureInputs(analysis=synthetic_analysis.drop_vars(drop)),
                           tmp_path, only=[name], formats=("png",))
    assert report[name].startswith("skipped:") and drop in report[name]
    assert "\n" not in report[name]
    assert not list(tmp_path.iterdir())


def test_others_still_written_when_one_is_skipped(tmp_path, synthetic_analysis):
    ds = synthetic_analysis.drop_vars(["gridness_60_null_q", "tem_corr"])
    report = build_figures(FigureInputs(analysis=ds), tmp_path,
                           only=["scores", "remapping", "place_cells"], formats=("png",))
    assert "gridness_60_null_q" in report["scores"] and "tem_corr" in report["remapping"]
    assert [p.name for p in report["place_cells"]] == ["place_cells.png"]


def test_remapping_skipped_with_one_environment(tmp_path, synthetic_analysis):
    one = synthetic_analysis.isel(env_pair=slice(0, 0))
    report = build_figures(FigureInputs(analysis=one), tmp_path, only=["remapping"])
    assert "env_pair" in report["remapping"]


def test_passkey_skipped_without_sweep_or_with_bad_rows(tmp_path):
    report = build_figures(FigureInputs(), tmp_path, only=["passkey"])
    assert "--passkey" in report["passkey"]
    rows = [{k: v for k, v in r.items() if k != "std"} for r in fake_sweep_rows()]
    report = build_figures(FigureInputs(passkey=rows), tmp_path, only=["passkey"])
    assert "'std'" in report["passkey"]


def test_cli_figures_reads_a_passkey_sweep(tmp_path, capsys):
    import json

    from hippo_rep import cli

    sweep = tmp_path / "pk"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"rows": fake_sweep_rows()}))
    out = tmp_path / "figs"
    assert cli.main(["figures", "--passkey", str(sweep), "--out", str(out), "--only",
                     "passkey", "--only", "scores", "--format", "png"]) == 0
    assert (out / "passkey.png").stat().st_size > 1000
    printed = capsys.readouterr().out
    assert "scores: skipped: needs the analysis dataset" in printed
    assert cli.main(["figures", "--passkey", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert "not found" in capsys.readouterr().err


def test_load_inputs_missing_ok(tmp_path):
    from hippo_rep.figures import load_inputs

    absent = tmp_path / "absent"
    inputs = load_inputs(analysis=absent / "a.nc", evals=[absent / "e.json"],
                         passkey=absent, missing_ok=True)
    assert inputs.analysis is None and not inputs.evals and inputs.passkey is None
    with pytest.raises(FigureError):
        load_inputs(evals=[absent / "e.json"])


def test_score_histogram_clips_and_counts_outliers():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from hippo_rep.plotting.scores import score_histogram

    fig, ax = plt.subplots()
    score_histogram(np.array([0.1, 0.5, 3.0]), np.array([-5.0, 0.2, 9.4, 0.3]), ax=ax,
                    clip_to=(-2.0, 2.0))
    lo, hi = ax.get_xlim()
    assert -2.5 < lo and hi < 2.5
    title = ax.get_title()
    assert "1 observed value(s) outside [-2, 2]" in title
    assert "2 null value(s) outside [-2, 2]" in title
    plt.close(fig)


def test_transitions_figure_from_a_model_with_known_weights(tmp_path):
    from hippo_rep.models.transitions import transition_diagnostics
    from hippo_rep.training.evaluate import evaluate
    from hippo_rep.worlds import parse_world
    from tests.test_transitions import spoiled

    evals = {}
    for label, scale in (("exact", 1.0), ("spoiled", 0.7)):
        model = spoiled(scale)
        res = evaluate(model, parse_world("square:6"), 2, 80, 45)
        res["transitions"] = transition_diagnostics(model, "square")
        evals[label] = res
    rep = build_figures(FigureInputs(evals=evals), tmp_path, only=["transitions"])
    check_written(rep["transitions"])
    # an evaluation without diagnostics (older JSON, or the baseline) is a named skip
    rep = build_figures(FigureInputs(evals={"old": fake_eval()}), tmp_path,
                        only=["transitions"])
    assert "transition diagnostics" in rep["transitions"]


@pytest.fixture(scope="module")
def fam_analysis():
    """Synthetic analysis with FAM slots: slots 0-3 are the planted place units (one
    Gaussian field each), slots 4-5 the planted uniform-noise units."""
    from hippo_rep.analysis import analyse
    from hippo_rep.analysis.synthetic_recording import synthetic_recording

    rec = synthetic_recording(n_env=2, n_steps=600, n_grid=0, n_place=4, n_random=2,
                              n_memory=8)
    fam = rec["g"].rename(g_unit="fam_slot").drop_vars("fam_slot", errors="ignore")
    rec = rec.assign(fam_activity=fam.assign_coords(fam_slot=np.arange(fam.sizes["fam_slot"])))
    return analyse(rec, shuffles=2, seed=0, decode=False)


def test_fam_slots_figure_shows_the_planted_place_slots_first(tmp_path, fam_analysis):
    import matplotlib

    matplotlib.use("Agg")
    fig = FIGURES["fam_slots"](FigureInputs(analysis=fam_analysis))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title().startswith("FAM slot")]
    assert len(titles) == 6
    # the four planted place slots are ranked above the two noise slots
    assert sorted(int(t.split()[2]) for t in titles[:4]) == [0, 1, 2, 3]
    assert sum(ax.get_title().startswith("memory") for ax in fig.axes) == 6
    legends = [t.get_text() for ax in fig.axes if ax.get_legend()
               for t in ax.get_legend().get_texts()]
    assert any(t.startswith("FAM slots") for t in legends)
    assert any(t.startswith("memory neurons") for t in legends)
    # the class panel's bars are the analysis's own class fractions, per population
    (classes,) = [ax for ax in fig.axes if ax.get_title() == "cell classes"]
    summary = fam_analysis.hippo.summary()
    for bars in classes.containers:
        pop = {"FAM slots": "fam_activity", "memory neurons": "memory_activity",
               "positional g": "g"}[bars.get_label().split(" (n = ")[0]]
        want = np.nan_to_num(summary["fraction"].sel(population=pop).values)
        np.testing.assert_allclose([b.get_width() for b in bars], want)
    assert [t.get_text() for t in classes.get_yticklabels()][-1] == "place"
    assert any(ax.get_title().startswith("remapping") for ax in fig.axes)
    import matplotlib.pyplot as plt

    plt.close(fig)
    report = build_figures(FigureInputs(analysis=fam_analysis), tmp_path, only=["fam_slots"],
                           formats=("png", "svg"))
    check_written(report["fam_slots"], formats=("png", "svg"))


def test_fam_slots_figure_skipped_without_fam_activity(tmp_path, synthetic_analysis):
    report = build_figures(FigureInputs(analysis=synthetic_analysis), tmp_path,
                           only=["fam_slots"], formats=("png",))
    assert report["fam_slots"] == ("skipped: the analysis has no 'fam_activity' population "
                                   "(FAM slots are recorded from model.memory='fam' models "
                                   "only)")


def test_field_count_by_population_bar_heights():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import xarray as xr

    from hippo_rep.plotting.place import field_count_by_population

    # population a: counts 0, 1, 1, 7 (7 pooled into the 5+ bar); b: 2, 2, NaN (left out)
    n = xr.DataArray([[0, 1, 1, 7, 2, 2, np.nan]], dims=("env", "unit"),
                     coords={"variable": ("unit", ["a"] * 4 + ["b"] * 3)})
    fig, ax = plt.subplots()
    assert field_count_by_population(n, ax=ax, max_fields=5) is ax
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(heights[:6], [0.25, 0.5, 0, 0, 0, 0.25])
    np.testing.assert_allclose(heights[6:], [0, 0, 1, 0, 0, 0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "a: mean 2.25 (n = 4)", "b: mean 2.00 (n = 2)"]
    assert ax.get_xticklabels()[-1].get_text() == "5+"
    plt.close(fig)


def _title(fig) -> str:
    return fig._suptitle.get_text().replace("\n", " ")


def test_place_cells_caption_and_rows_say_how_many_units_qualify(synthetic_analysis):
    """_top_units leaves out units with an undefined score: the caption gives the true
    count per environment, and the first empty slot of a short row says why it is short;
    with none at all the caption says so."""
    import matplotlib.pyplot as plt

    from hippo_rep.figures import MIN_PEAK_FRACTION, N_UNITS_SHOWN
    from hippo_rep.figures._common import _top_units
    from hippo_rep.plotting.checks import check_figure, report

    ds = synthetic_analysis
    mem = (ds["variable"] == "memory_activity").values
    env0, env1 = ds["env"].values[:2]
    keep = np.flatnonzero(mem)[:2]  # two memory neurons keep a score in env 0, none in env 1
    score = ds["place_score"].copy()
    gone = np.isin(np.arange(ds.sizes["unit"]), keep, invert=True) & mem
    score.loc[{"env": env0}] = score.sel(env=env0).where(~gone)
    score.loc[{"env": env1}] = score.sel(env=env1).where(~mem)
    short = ds.assign(place_score=score)
    pop = short.hippo.population("memory_activity")
    assert set(_top_units(pop, "place_score", env0, N_UNITS_SHOWN, "spatial_info",
                          MIN_PEAK_FRACTION)) <= set(ds["unit"].values[keep])
    assert len(_top_units(pop, "place_score", env1, N_UNITS_SHOWN)) == 0
    n0 = len(_top_units(pop, "place_score", env0, N_UNITS_SHOWN, "spatial_info",
                        MIN_PEAK_FRACTION))
    assert n0 in (1, 2)
    fig = FIGURES["place_cells"](FigureInputs(analysis=short))
    title = _title(fig)
    assert (f"the {n0} memory neurons (softmax units) in env {env0} and 0 in env {env1} with "
            "the highest place score") in title, title
    notes = [t.get_text() for ax in fig.axes for t in ax.texts if " shown:" in t.get_text()]
    assert [n.split(":")[0] for n in notes] == [f"{n0} of {N_UNITS_SHOWN} shown",
                                               f"0 of {N_UNITS_SHOWN} shown"]
    assert check_figure(fig) == [], report(check_figure(fig))
    plt.close(fig)
    none = ds.assign(place_score=ds["place_score"].where(~mem))
    fig = FIGURES["place_cells"](FigureInputs(analysis=none))
    assert _title(fig).startswith("no memory neurons (softmax units) with the highest")
    plt.close(fig)


def test_counted_names_the_count_per_label():
    from hippo_rep.figures._common import _counted

    assert _counted({"env 0": 6, "env 1": 6}, "units") == "the 6 units"
    assert _counted({"env 0": 6, "env 1": 2}, "units") == "the 6 units in env 0 and 2 in env 1"
    assert _counted({"a": 1, "b": 2, "c": 0}, "units") == "the 1 units in a, 2 in b and 0 in c"
    assert _counted({"env 0": 0}, "units") == "no units"


def test_map_figures_share_one_caption_of_their_colour_bars(synthetic_analysis):
    import matplotlib.pyplot as plt

    from hippo_rep.plotting.maps import UNVISITED_GREY_NAME, map_caption

    units = synthetic_analysis["rate_map"].attrs.get("units", "")
    for name, caption in (
            ("place_cells", map_caption(units, outline=True, unvisited=UNVISITED_GREY_NAME)),
            ("grid_cells", map_caption(units, autocorrelograms=True))):
        fig = FIGURES[name](FigureInputs(analysis=synthetic_analysis))
        assert caption in _title(fig), (name, _title(fig))
        plt.close(fig)


def test_map_caption_says_what_each_option_draws():
    from hippo_rep.defaults import PLACE_THRESHOLD
    from hippo_rep.plotting.maps import map_caption

    plain = map_caption("a.u.")
    assert plain == ("colour bars: mean activity per bin (a.u.) from the map's lowest value "
                     "to its peak (top tick); white = unvisited")
    full = map_caption("Hz", quantity="firing rate", outline=True, unvisited="grey",
                       autocorrelograms=True)
    assert full.startswith("colour bars: firing rate (Hz) from")
    assert f"blue outline: bins at or above {PLACE_THRESHOLD:.0%} of the peak" in full
    assert full.endswith("grey = unvisited; autocorrelograms in Pearson r")
    assert "()" not in map_caption("")


def test_a_legend_below_drops_the_same_points_whatever_the_axes_height():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from hippo_rep.plotting.axes import LEGEND_DROP_PT, legend_below

    fig = Figure(figsize=(4, 6))
    FigureCanvasAgg(fig)
    tall, short = fig.add_axes((0.1, 0.45, 0.8, 0.5)), fig.add_axes((0.1, 0.1, 0.8, 0.1))
    gaps = []
    for ax, drop in ((tall, LEGEND_DROP_PT), (short, LEGEND_DROP_PT), (short, 50.0)):
        ax.plot([0, 1], [0, 1], label="a curve")
        legend = legend_below(ax, drop, frameon=False, borderaxespad=0)
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        top = legend.get_window_extent(r).y1
        gaps.append((ax.get_window_extent(r).y0 - top) * 72 / fig.dpi)
    np.testing.assert_allclose(gaps, [LEGEND_DROP_PT, LEGEND_DROP_PT, 50.0], atol=0.5)


def test_place_map_lives_in_plotting_and_figures_still_finds_it():
    from hippo_rep import figures
    from hippo_rep.plotting.maps import PLACE_CMAP, place_map

    assert figures.place_map is place_map
    m = __import__("xarray").DataArray(np.eye(3), dims=("y", "x"))
    from matplotlib.figure import Figure

    ax = place_map(m, ax=Figure().subplots(), title="a place map")
    assert ax.collections[0].get_cmap().name == PLACE_CMAP and ax.get_title() == "a place map"


def test_unit_figure_is_a_pure_plotting_function(synthetic_analysis):
    """The explorer's unit panel: a new Figure outside pyplot, or drawn into the figure
    (or subfigure) given; the global style as it was; the checks pass."""
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from hippo_rep.explore import ExploreError, ranked_units, unit_figure
    from hippo_rep.plotting.checks import check_figure, report

    ds = synthetic_analysis
    env0 = ds["env"].values[0]
    (best, _), *_ = ranked_units(ds, env0, "g")
    before, style = plt.get_fignums(), dict(matplotlib.rcParams)
    fig = unit_figure(ds, env0, "g", best)
    assert isinstance(fig, Figure) and plt.get_fignums() == before
    assert dict(matplotlib.rcParams) == style
    assert check_figure(fig) == [], report(check_figure(fig))
    units = ds["rate_map"].attrs.get("units") or "activity units"
    labels = [cax.get_ylabel() for ax in fig.axes for cax in ax.child_axes]
    assert labels == [f"mean activity ({units})", "Pearson r"]
    host = Figure(figsize=(7, 5), layout="constrained")
    top, _ = host.subfigures(2, 1)
    assert unit_figure(ds, env0, "g", best, fig=top) is top
    assert len(top.axes) == 3 and all(ax.figure is top for ax in top.axes)
    with pytest.raises(ExploreError, match="populations"):
        unit_figure(ds, env0, "g", 999, fig=host)
    assert len(host.axes) == 3  # nothing drawn for a unit that does not exist


def test_building_the_figures_leaves_rcparams_and_pyplot_alone(every_figure):
    """build_figures draws every figure on a bare Figure in the paper style applied locally:
    afterwards matplotlib.rcParams is unchanged and pyplot manages no figure."""
    report, fignums, style_before, style_after = every_figure
    written = [name for name, files in report.items() if not isinstance(files, str)]
    assert {"learning", "scores", "grid_cells", "place_cells", "remapping"} <= set(written)
    assert fignums == []
    assert style_after == style_before


def test_the_package_draws_without_pyplot():
    """One way to draw: no module of hippo_rep imports pyplot (figures are bare Figures,
    hippo_rep.plotting.style.new_figure), and the figure widths are defined once, in
    hippo_rep.plotting.style."""
    import re
    from pathlib import Path

    import hippo_rep

    root = Path(hippo_rep.__file__).parent
    pyplot = re.compile(r"^\s*(import matplotlib\.pyplot|from matplotlib import pyplot)", re.M)
    width = re.compile(r"^\s*[A-Z_]*WIDTH\s*=\s*[0-9.]+\s*$", re.M)
    uses, widths = [], []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if pyplot.search(text):
            uses.append(path.name)
        if path.name != "style.py" and "plotting" in path.parts or "explore" in path.parts \
                or "figures" in path.relative_to(root).parts:
            widths += [f"{path.name}: {m.group(0).strip()}" for m in width.finditer(text)]
    assert uses == []
    assert widths == []


def test_grid_cells_figure_names_read_out_cells_as_such():
    import json

    import xarray as xr

    from hippo_rep.figures.grid import _g_name

    assert _g_name(xr.Dataset()) == "positional units g"
    ro = xr.Dataset(attrs={"model_config": json.dumps({"cells": "readout"})})
    assert _g_name(ro) == "read-out cells r"
    assert _g_name(xr.Dataset(attrs={"model_config": "not json"})) == "positional units g"


def test_the_figures_are_registered_in_the_order_they_are_drawn(tmp_path):
    """FIGURES, in which build_figures draws and reports the figures, is in the order
    hippo_rep.figures imports the family modules (each registers its builders)."""
    order = ["learning", "learning_speed", "tem_vs_temt", "transitions", "grid_cells",
             "controls", "place_cells", "fam_slots", "session_cells", "scores", "remapping",
             "passkey", "memory_delay", "sweep"]
    assert list(FIGURES) == order
    assert list(build_figures(FigureInputs(), tmp_path, formats=("png",))) == order


# ------------------------------------------------------------------ single and double column
def test_every_figure_takes_a_width_and_refuses_another(tmp_path):
    from hippo_rep.figures import WIDTHS
    from hippo_rep.plotting.style import DOUBLE_COLUMN_WIDTH, SINGLE_COLUMN_WIDTH

    assert WIDTHS == ("single", "double")
    inputs = FigureInputs(evals={"TEM-t": fake_eval(), "sinusoidal": fake_eval("sinusoidal",
                                                                               0.3)})
    assert FIGURES["learning"](inputs).get_figwidth() == DOUBLE_COLUMN_WIDTH  # the default
    assert FIGURES["learning"](inputs, width="double").get_figwidth() == DOUBLE_COLUMN_WIDTH
    single = FIGURES["learning"](inputs, width="single")
    assert single.get_figwidth() == SINGLE_COLUMN_WIDTH
    assert len(single.axes) == 2 and single.axes[0].get_position().y0 > \
        single.axes[1].get_position().y1  # the panels one above the other, not squeezed
    with pytest.raises(FigureError, match="unknown width 'triple'; use single or double"):
        FIGURES["learning"](inputs, width="triple")
    with pytest.raises(FigureError, match="unknown width"):
        build_figures(inputs, tmp_path, only=["learning"], width="wide")
    report = build_figures(inputs, tmp_path, only=["learning"], formats=("png",),
                           width="single")
    assert report["learning"] == [tmp_path / "learning.png"]


def test_cli_figures_width_flag(tmp_path, capsys, monkeypatch):
    """``hippo-rep figures --width single|double`` reaches build_figures (double by default);
    another width is refused by argparse, and --help documents the flag."""
    import hippo_rep.pipeline as pipeline
    from hippo_rep import cli

    seen = []
    monkeypatch.setattr(pipeline, "build_figures",
                        lambda out, **kw: seen.append(kw["width"]) or {})
    for argv, width in (([], "double"), (["--width", "single"], "single"),
                        (["--width", "double"], "double")):
        assert cli.main(["figures", "--out", str(tmp_path / "f"), *argv]) == 0
        assert seen[-1] == width
    with pytest.raises(SystemExit):
        cli.main(["figures", "--width", "triple"])
    assert "invalid choice: 'triple'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["figures", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--width {single,double}" in text and "3.5 in" in text and "7 in" in text


def test_grid_figure_gives_spacing_in_the_analysis_unit(synthetic_analysis):
    """Panel titles give each unit's spacing in node spacings where the analysis holds
    ``spacing_nodes`` (a model recording), else in bins; the title says which."""
    def texts(fig):
        return [fig._suptitle.get_text() if fig._suptitle else ""] + [
            t.get_text() for ax in fig.axes for t in (ax.title,)] + [
            t.get_text() for t in fig.texts]

    # as at two bins a node (the synthetic recording has one)
    halved = synthetic_analysis.assign(spacing_nodes=synthetic_analysis["spacing"] / 2)
    g = halved.hippo.population("g")
    top = g["unit"].values[int(np.nanargmax(g["gridness_60"].sel(env=g["env"].values[0])))]
    nodes = float(g["spacing_nodes"].sel(env=g["env"].values[0], unit=top))
    bins = float(g["spacing"].sel(env=g["env"].values[0], unit=top))
    assert f"{nodes:.1f}" != f"{bins:.1f}"
    shown = " ".join(texts(FIGURES["grid_cells"](FigureInputs(analysis=halved))))
    assert "spacing in node spacings" in shown and f"sp. {nodes:.1f}" in shown
    plain = synthetic_analysis.drop_vars("spacing_nodes")
    shown = " ".join(texts(FIGURES["grid_cells"](FigureInputs(analysis=plain))))
    assert "spacing in bins" in shown and f"sp. {bins:.1f}" in shown
