"""The memory_delay figure: accuracy against D with runs (seeds) as points, beside the
benchmark's per-step cost against D; inputs with known values."""

import json

import matplotlib
import numpy as np
import pytest
import xarray as xr

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hippo_rep.figures import FigureError, build_figures, load_inputs  # noqa: E402
from hippo_rep.plotting.delay import plot_delay, plot_delay_cost  # noqa: E402
from hippo_rep.tasks.delay import write_delay  # noqa: E402

DELAYS = [0, 64, 256]
VARIANTS = ["full", "fam"]
COST = {"meta": {"envs": 2}, "rows": [
    {"variant": "full", "delay": [256, 1024, 4096], "ms_per_step": [1.0, 4.0, 16.0],
     "kb_per_step": [10.0, 40.0, 160.0]},
    {"variant": "fam", "delay": [256, 1024, 4096], "ms_per_step": [2.0, 2.0, 2.0],
     "kb_per_step": [5.0, 5.0, 5.0]},
]}


def delay_result(acc):
    return xr.Dataset(
        {"accuracy": (("variant", "delay"), np.asarray(acc, float)),
         "n_scored": (("variant", "delay"), np.full((2, 3), 10)),
         "walk_steps": (("variant", "delay"), np.full((2, 3), 100.0)),
         "chance": ((), 1 / 45), "node_agent": ((), 1.0)},
        coords={"variant": VARIANTS, "delay": DELAYS},
        attrs={"memory_block": 16, "memory_blocks": 4, "window_steps": "64-80",
               "fam_slots": 8})


def test_plot_delay_cost_draws_the_rows():
    fig, ax = plt.subplots()
    plot_delay_cost(COST["rows"], "kb_per_step", ax=ax)
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    np.testing.assert_array_equal(lines["full"].get_ydata(), [10.0, 40.0, 160.0])
    np.testing.assert_array_equal(lines["fam"].get_xdata(), [256, 1024, 4096])
    assert ax.get_yscale() == "log" and "KB" in ax.get_ylabel()
    plt.close(fig)


def test_runs_are_points_and_the_line_their_mean(tmp_path):
    a = [[1.0, 1.0, 0.9], [1.0, 0.2, 0.1]]
    b = [[1.0, 0.8, 0.7], [1.0, 0.4, 0.3]]
    paths = []
    for i, acc in enumerate((a, b)):
        paths.append(tmp_path / f"d{i}.json")
        write_delay(delay_result(acc), paths[-1])
    ds = load_inputs(delay=[str(p) for p in paths]).delay
    assert ds.accuracy.dims == ("run", "variant", "delay") and ds.sizes["run"] == 2
    assert float(ds.chance) == pytest.approx(1 / 45)
    fig, ax = plt.subplots()
    plot_delay(ds, ax=ax)
    fam = next(ln for ln in ax.get_lines() if ln.get_label() == "fam")
    np.testing.assert_allclose(fam.get_ydata(), [1.0, 0.3, 0.2])
    points = [ln for ln in ax.get_lines() if ln.get_linestyle() == "None"]
    assert len(points) == 4  # 2 runs x 2 variants
    plt.close(fig)
    # one result stays as it was read (no run dim)
    assert "run" not in load_inputs(delay=str(paths[0])).delay.dims


def test_memory_delay_figure_with_cost_panels(tmp_path):
    write_delay(delay_result([[1.0, 1.0, 1.0], [1.0, 0.3, 0.3]]), tmp_path / "d.json")
    (tmp_path / "cost.json").write_text(json.dumps(COST))
    inputs = load_inputs(delay=str(tmp_path / "d.json"), delay_cost=tmp_path / "cost.json")
    assert inputs.delay_cost == COST["rows"]
    report = build_figures(inputs, tmp_path / "figs", only=["memory_delay"], formats=["png"])
    assert isinstance(report["memory_delay"], list), report
    assert (tmp_path / "figs" / "memory_delay.png").is_file()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": [{"variant": "full"}]}))
    with pytest.raises(FigureError, match="bad.json"):
        load_inputs(delay_cost=bad)
