"""The figure checker (hippo_rep.plotting.checks) finds planted defects and passes a clean
figure; every registered figure, rendered from the shipped data (or, where the shipped data
lacks its input, from small synthetic inputs) at a single and a double column's width, passes
it, and fits its column and a journal page (checks.oversized)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from hippo_rep.plotting.checks import (  # noqa: E402
    RULES,
    check_figure,
    draw,
    empty_axes,
    images_without_colorbar,
    legends_over_data,
    overlapping_texts,
    oversized,
    report,
    texts_across_axes,
    texts_outside_figure,
    texts_over_panels,
    texts_over_points,
)


@pytest.fixture
def fig():
    f, _ = plt.subplots(1, 2, figsize=(6, 3))
    yield f
    plt.close(f)


def clean(fig):
    a, b = fig.axes
    a.plot([0, 1], [0, 1], label="line")
    a.set_title("a title")
    a.set_xlabel("x (units)")
    a.legend()
    im = b.imshow(np.arange(12.0).reshape(3, 4))
    fig.colorbar(im, ax=b, label="activity")
    b.set_title("a map")
    fig.suptitle("a figure")
    fig.subplots_adjust(bottom=0.2, top=0.8)  # the x label and the titles inside the figure


def test_a_clean_figure_passes(fig):
    clean(fig)
    assert check_figure(fig) == [], report(check_figure(fig))


def test_a_bare_figure_without_pyplot_is_checked_too():
    from matplotlib.figure import Figure

    f = Figure(figsize=(3, 2), layout="constrained")  # its tick labels inside the figure
    ax = f.subplots()
    ax.imshow(np.eye(3))
    assert [p.rule for p in check_figure(f)] == ["colorbar"]


def test_two_texts_at_one_place_are_an_overlap(fig):
    clean(fig)
    a = fig.axes[0]
    a.text(0.5, 0.5, "first note", transform=a.transAxes)
    a.text(0.52, 0.5, "second note", transform=a.transAxes)
    (p,) = overlapping_texts(fig)
    assert p.rule == "overlap" and "first note" in p.detail and "second note" in p.detail


def test_texts_that_run_together_on_one_line_are_an_overlap(fig):
    clean(fig)
    a = fig.axes[0]
    left = a.text(0.1, 0.5, "spacing 9.0", transform=a.transAxes, ha="left")
    fig.canvas.draw()
    bb = left.get_window_extent(fig.canvas.get_renderer())
    x = a.transAxes.inverted().transform((bb.x1 + 0.5, bb.y0))[0]  # half a pixel to the right
    a.text(x, 0.5, "g60 0.67", transform=a.transAxes, ha="left")
    assert [p.rule for p in overlapping_texts(fig)] == ["overlap"]
    a.texts[-1].set_x(x + 0.1)  # a clear gap
    assert overlapping_texts(fig) == []


def test_tick_labels_printed_over_each_other_are_overlaps(fig):
    clean(fig)
    a = fig.axes[0]
    a.set_xticks([0, 0.02], ["positional", "path-integr."])
    assert any("positional" in p.detail and "path-integr." in p.detail
               for p in overlapping_texts(fig))


def test_rotated_tick_labels_side_by_side_are_not_overlaps(fig):
    clean(fig)
    a = fig.axes[0]
    a.set_xticks(np.linspace(0, 1, 10), [f"variant_{i}" for i in range(10)], rotation=60,
                 ha="right")
    assert overlapping_texts(fig) == []


def test_a_text_reaching_into_the_next_panel_is_found(fig):
    clean(fig)
    a, b = fig.axes[:2]
    b.set_yticks([])  # nothing else for the note to run over
    a.text(0.9, 0.5, "a long note running on", transform=a.transAxes)
    (p,) = texts_over_panels(fig)
    assert "long note" in p.detail and "a map" in p.detail
    assert overlapping_texts(fig) == []  # no other text there: only the panel rule sees it


def test_panel_letters_stay_clear_of_titles_labels_and_neighbours():
    from hippo_rep.plotting.axes import panel_letter

    f, axes = plt.subplots(1, 3, figsize=(6, 2.5), layout="constrained")
    for letter, ax in zip("abc", axes, strict=True):
        ax.plot([0, 1], [0, 1], label="x")
        ax.legend(loc="best")  # asks every text of the axes, the letter too, where it is
        ax.set_title("the panel's title", fontsize=7)
        ax.set_ylabel("a label (units)")
        panel_letter(ax, letter)
    assert check_figure(f) == [], report(check_figure(f))
    plt.close(f)


def test_a_legend_over_a_curve_is_found(fig):
    a = fig.axes[0]
    a.plot([0, 1], [1, 1], label="flat at the top")
    a.plot([0, 1], [0, 0.2], label="low")
    a.legend(loc="upper right")  # the flat curve runs under it
    (p,) = legends_over_data(fig)
    assert p.rule == "legend" and "flat at the top" in p.detail
    a.set_ylim(0, 2)  # room above the curves
    assert legends_over_data(fig) == []
    a.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2))  # below the axes
    a.set_ylim(0, 1.05)
    assert legends_over_data(fig) == []


def legend_over(ax, draw_under):
    """A legend at the upper right of ``ax`` with ``draw_under(ax)`` drawn there (a low
    curve keeps the legend's entry and the axes' data)."""
    ax.plot([0, 1], [0, 0.1], label="low")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    draw_under(ax)
    ax.legend(loc="upper right")


def test_a_legend_over_a_reference_line_is_found(fig):
    a = fig.axes[0]
    legend_over(a, lambda ax: ax.axhline(0.93, color="0.5"))
    (p,) = legends_over_data(fig)
    assert p.rule == "legend" and "a line" in p.detail
    a.lines[-1].set_ydata([0.5, 0.5])  # below the legend
    assert legends_over_data(fig) == []


@pytest.mark.parametrize("segments", ["errorbar", "hlines"])
def test_a_legend_over_error_bars_or_segments_is_found(fig, segments):
    a = fig.axes[0]
    if segments == "errorbar":  # a bar from 0.05 to 0.95 under the legend, its point below
        legend_over(a, lambda ax: ax.errorbar([0.85], [0.5], yerr=[0.45], fmt="o",
                                              label="mean ± SD"))
    else:
        legend_over(a, lambda ax: ax.hlines([0.93], 0, 1, label="segments"))
    (p,) = legends_over_data(fig)
    assert p.rule == "legend" and "error bars or line segments" in p.detail
    a.set_ylim(0, 2)  # the segments now under the legend's bottom
    assert legends_over_data(fig) == []


def test_error_bar_caps_under_a_legend_are_data_but_the_gap_between_markers_is_not(fig):
    a = fig.axes[0]
    # markers at two corners, no line between them: the legend between covers nothing
    legend_over(a, lambda ax: ax.plot([0.3, 0.995], [0.995, 0.3], "o", ms=2, label="pts"))
    assert legends_over_data(fig) == []
    a.plot([0.9], [0.93], "_", ms=8, label="cap")  # a marker under the legend
    a.legend(loc="upper right")
    (p,) = legends_over_data(fig)
    assert "line 'cap'" in p.detail


def test_a_line_without_a_finite_point_is_no_data(fig):
    a, b = fig.axes
    legend_over(a, lambda ax: ax.plot([0.8, 1], [np.nan, np.nan], label="not drawn"))
    assert legends_over_data(fig) == []
    b.set_title("a NaN curve")
    b.plot([0, 1], [np.nan, np.nan])  # draws nothing: the panel is empty
    (p,) = empty_axes(fig)
    assert "a NaN curve" in p.detail
    b.lines[0].set_ydata([0, 1])
    assert empty_axes(fig) == []


def test_a_suptitle_wider_than_the_figure_is_outside(fig):
    clean(fig)
    title = fig.texts[0]
    title.set_text("a figure-wide title " * 8)
    (p,) = texts_outside_figure(fig)
    assert p.rule == "outside" and "left" in p.detail and "right" in p.detail
    title.set_text("a figure-wide title " * 2)
    assert texts_outside_figure(fig) == []


def test_a_label_below_the_bottom_edge_and_a_tilted_text_past_the_top_are_outside(fig):
    clean(fig)
    a = fig.axes[0]
    a.set_xlabel("x (units)", labelpad=40)
    note = a.text(0.5, 1.05, "tilted", rotation=30, transform=a.transAxes)
    found = texts_outside_figure(fig)
    assert [("x (units)" in p.detail, "bottom" in p.detail) for p in found] == [(True, True)]
    note.set_y(1.6)
    found = texts_outside_figure(fig)
    assert len(found) == 2 and "'tilted'" in found[1].detail and "top" in found[1].detail


def test_a_note_across_its_axes_edge_is_found(fig):
    """A label at the corner of a panel that runs across its frame is found; one wholly
    inside, a panel letter wholly outside, and a note in an axes switched off are not."""
    a, b = fig.axes
    a.plot([0, 1], [0, 1])
    b.plot([0, 1], [0, 1])
    b.set_yticks([])
    note = a.text(0.75, 0.1, "memory neurons: r = 0.01", transform=a.transAxes)
    a.text(-0.1, 1.02, "a", transform=a.transAxes, ha="right")  # a panel letter
    (p,) = texts_across_axes(fig)
    assert p.rule == "edge" and "memory neurons" in p.detail and "right" in p.detail
    note.set_position((0.75, 0.98))
    note.set_verticalalignment("bottom")  # now across the top edge too
    assert "right" in texts_across_axes(fig)[0].detail and "top" in texts_across_axes(fig)[
        0].detail
    note.set_position((0.05, 0.1))
    note.set_verticalalignment("baseline")
    assert texts_across_axes(fig) == []
    b.set_axis_off()
    b.text(0.9, 0.5, "a text panel's long line", transform=b.transAxes)
    assert texts_across_axes(fig) == []


@pytest.mark.parametrize("markers", ["scatter", "line markers"])
def test_a_note_over_the_points_is_found(fig, markers):
    """A label written where the data lie (the points of a scatter, the markers of a
    line) is found; moved clear of them, or over a line without markers, it is not."""
    a = fig.axes[0]
    x = np.linspace(-1, 1, 41)
    if markers == "scatter":
        a.scatter(np.zeros_like(x), x, s=2, label="memory neurons")
        what = "points of 'memory neurons'"
    else:
        a.plot(np.zeros_like(x), x, "o", ms=2, label="memory neurons")
        what = "markers of line 'memory neurons'"
    a.plot([-1, 1], [-1, 1])  # a line without markers: not looked at
    a.set_xlim(-1.05, 1.05)
    a.set_ylim(-1.05, 1.05)
    note = a.text(0.03, 0.87, "memory neurons: r = 0.01", transform=a.transAxes)
    (p,) = texts_over_points(fig)
    assert p.rule == "data" and "'memory neurons: r = 0.01'" in p.detail and what in p.detail
    note.set_position((0.55, 0.2))  # right of the points, under the diagonal line
    assert texts_over_points(fig) == []
    a.set_ylim(0.5, 1.05)  # points outside the view are not drawn: the note is clear
    note.set_position((0.03, 0.1))
    a.texts[0].set_text("memory neurons: r = 0.01 and a longer note")
    a.set_xlim(0.5, 1.05)
    assert texts_over_points(fig) == []


def test_the_remapping_scatter_label_is_found_where_it_was(shipped):
    """The check of the registered figures would fail: the old layout of the remapping
    figure's unit-pair panel (the correlations written at fixed places in the panel) is
    found at both widths, over the points and across the frame; the figure itself keeps
    them in a legend below the panel and passes."""
    for width in WIDTHS:
        fig = build("remapping", shipped, width)
        ax = next(ax for ax in fig.axes if ax.get_title().startswith("unit pairs"))
        assert ax.texts == [] or all(t.get_text() in "abcdef" for t in ax.texts)
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert [label.split(": r = ")[0] for label in labels] == ["positional g",
                                                                  "memory neurons"]
        assert check_figure(fig) == []
        fig.set_layout_engine("none")  # the panels where they are: only the labels added
        # one where the points are (the memory neurons' pairs at env a r = 0), one at the
        # right edge (the figure's too, at double width: "outside" as well)
        ax.text(0.0, 0.5, labels[1], ha="center", fontsize=6)
        ax.text(0.8, 0.3, labels[0], transform=ax.transAxes, fontsize=6)
        problems = check_figure(fig)
        assert sorted({p.rule for p in problems} - {"outside"}) == ["data", "edge"], (
            width, report(problems))
        where = f"in axes {ax.get_title()[:30]!r}"
        assert f"{labels[1]!r} {where} is written over the points of" in report(problems)
        assert f"{labels[0]!r} {where} crosses its axes' right" in report(problems)


def broken(fig):
    """A figure breaking every rule once: two notes over each other, a note into the
    next panel and across its own panel's edge, a note over points, a legend over its
    curve, a map without a colour bar, a suptitle past both edges and an empty panel."""
    a, b = fig.axes
    legend_over(a, lambda ax: ax.plot([0, 1], [0.95, 0.95], label="under the legend"))
    a.text(0.1, 0.5, "first note", transform=a.transAxes)
    a.text(0.12, 0.5, "second note", transform=a.transAxes)
    a.text(0.7, 0.2, "a note running on into b", transform=a.transAxes)
    a.scatter([0.2], [0.75], s=4)
    a.text(0.2, 0.75, "on a point", ha="center", va="center")
    b.imshow(np.eye(3))
    b.set_title("a map")
    extra = fig.add_axes((0.45, 0.85, 0.1, 0.1))
    extra.set_title("nothing")
    fig.suptitle("a figure-wide title " * 8, y=0.95)
    fig.subplots_adjust(bottom=0.2, top=0.7)


def test_a_figure_with_every_problem_gets_all_of_them_from_one_drawing(fig):
    broken(fig)
    draws = []
    original = fig.canvas.draw
    fig.canvas.draw = lambda *args, **kw: (draws.append(1), original(*args, **kw))
    problems = check_figure(fig)
    assert len(draws) == 1  # once for every rule, not once per rule
    assert {p.rule for p in problems} == {"overlap", "outside", "edge", "data", "empty",
                                          "colorbar", "legend"}
    # the same findings as each rule drawing the figure for itself, and the shared drawing
    # gives each rule what it finds alone
    alone = [p for rule in RULES for p in rule(fig)]
    shared = draw(fig)
    assert problems == alone == [p for rule in RULES for p in rule(fig, drawing=shared)]
    assert len(draws) == 1 + len(RULES) + 1
    details = report(problems)
    for what in ("'first note'", "into the panel 'a map'", "figure-wide title",
                 "'nothing' draws nothing", "'a map' shows a map without",
                 "lies over line 'under the legend'", "crosses its axes' right",
                 "'on a point' in an axes is written over the points of a scatter"):
        assert what in details, details


def test_hidden_and_empty_texts_are_ignored(fig):
    clean(fig)
    a = fig.axes[0]
    a.text(0.5, 0.5, "hidden", transform=a.transAxes).set_visible(False)
    a.text(0.5, 0.5, "shown", transform=a.transAxes)
    a.text(0.5, 0.5, "  ", transform=a.transAxes)
    assert overlapping_texts(fig) == []


def test_an_empty_axes_is_found_unless_it_says_why(fig):
    a, b = fig.axes
    a.plot([0, 1], [0, 1])
    b.set_title("spatial information")
    b.axvline(0.5)  # a reference line is no data
    (p,) = empty_axes(fig)
    assert p.rule == "empty" and "spatial information" in p.detail
    b.text(0.5, 0.5, "undefined for signed activity", transform=b.transAxes, ha="center")
    assert empty_axes(fig) == []


def test_a_blank_axes_switched_off_is_a_gap_not_a_defect(fig):
    a, b = fig.axes
    a.plot([0, 1], [0, 1])
    b.set_axis_off()
    assert empty_axes(fig) == []


def test_a_panel_letter_outside_the_box_does_not_say_why(fig):
    a, b = fig.axes
    a.plot([0, 1], [0, 1])
    b.text(-0.1, 1.05, "b", transform=b.transAxes)
    assert [p.rule for p in empty_axes(fig)] == ["empty"]


@pytest.mark.parametrize("draw", ["imshow", "pcolormesh"])
def test_a_map_without_colour_bar_is_found(fig, draw):
    a, b = fig.axes
    a.plot([0, 1], [0, 1])
    z = np.arange(12.0).reshape(3, 4)
    m = getattr(b, draw)(z)
    b.set_title("rate map")
    (p,) = images_without_colorbar(fig)
    assert p.rule == "colorbar" and "rate map" in p.detail
    fig.colorbar(m, ax=b)
    assert images_without_colorbar(fig) == []


def test_one_colour_bar_serves_maps_on_the_same_scale(fig):
    a, b = fig.axes
    z = np.arange(12.0).reshape(3, 4)
    ma = a.pcolormesh(z, cmap="RdBu_r", vmin=-1, vmax=1)
    b.pcolormesh(-z, cmap="RdBu_r", vmin=-1, vmax=1)
    fig.colorbar(ma, ax=[a, b])
    assert images_without_colorbar(fig) == []
    b.collections[0].set_clim(-2, 2)  # another scale: needs its own bar
    assert [p.rule for p in images_without_colorbar(fig)] == ["colorbar"]


# ------------------------------------------------------------------ every registered figure
DATA = __import__("pathlib").Path(__file__).resolve().parents[1] / "data"

#: The inputs the shipped data gives each figure (as in data/README.md), small ones first.
SHIPPED = dict(
    analysis=DATA / "analysis.nc", evals=[DATA / "eval.json", DATA / "eval_baseline.json"],
    passkey=DATA / "passkey",
    delay=[DATA / "fam_keep48_return" / f"{n}.nc"
           for n in ("paper_s0", "paper_s1", "paper_s2", "train_seed1", "train_seed2")],
    delay_cost=DATA / "fam_keep48_return" / "cost.json",
    learning_speed=DATA / "learning_speed_torch_tem.json",
    tem_analysis=DATA / "tem_8x8_analysis.nc")


def fake_sweep():
    """A finished 2 activations × 2 seeds sweep table (what open_sweep returns)."""
    import json

    import xarray as xr

    from hippo_rep.analysis.summary import SUMMARY
    from hippo_rep.worlds import AGENTS, REPORTED

    coords = {"transition_activation": ["none", "relu"], "seed": [0, 1]}
    rng = np.random.default_rng(0)
    ds = xr.Dataset(coords={**coords, "agent": list(AGENTS), "step_type": list(REPORTED)})
    ds["accuracy"] = xr.DataArray(rng.uniform(0.3, 1, (2, 2, len(AGENTS), len(REPORTED))),
                                  dims=("transition_activation", "seed", "agent", "step_type"),
                                  attrs={"long_name": "held-out accuracy", "units": "1"})
    for k, long in SUMMARY.items():
        ds[k] = xr.DataArray(rng.uniform(0, 1, (2, 2)), dims=("transition_activation", "seed"),
                             attrs={"long_name": long, "units": "1"})
    ds["status"] = xr.DataArray(np.full((2, 2), "done"), dims=("transition_activation", "seed"))
    ds.attrs.update(dims=json.dumps({"transition_activation": "model.transition_activation"}),
                    sweep_path="runs/sweep")
    return ds


@pytest.fixture(scope="module")
def shipped():
    from hippo_rep.figures import load_inputs

    return load_inputs(**SHIPPED)


@pytest.fixture(scope="module")
def synthetic():
    """Inputs of the figures the shipped data cannot draw: FAM slots (a synthetic analysis
    with fam_activity), the model-grown controls (small), a training sweep (a table), a
    recorded session (simulated spikes of a grid cell and three place cells)."""
    from hippo_rep.analysis import analyse
    from hippo_rep.analysis import controls as C
    from hippo_rep.analysis.synthetic_recording import synthetic_recording
    from hippo_rep.figures import FigureInputs

    rec = synthetic_recording(n_env=2, n_steps=600, n_grid=0, n_place=4, n_random=2,
                              n_memory=8)
    fam = rec["g"].rename(g_unit="fam_slot").drop_vars("fam_slot", errors="ignore")
    rec = rec.assign(fam_activity=fam.assign_coords(fam_slot=np.arange(fam.sizes["fam_slot"])))
    maps = C.control_maps(2, seed=0, n_iterations=C.N_ITERATIONS)
    controls = analyse(C.controls_recording(maps, steps_per_node=6, seed=0), shuffles=4,
                       seed=0, decode=False)
    from tests.test_sessions import _small

    session = analyse(_small(minutes=2), shuffles=2, min_shift_s=5)
    return {"fam_slots": FigureInputs(analysis=analyse(rec, shuffles=2, seed=0, decode=False)),
            "controls": FigureInputs(analysis=controls),
            "sweep": FigureInputs(sweep=fake_sweep()),
            "session_cells": FigureInputs(analysis=session)}


#: The column widths every registered figure is drawn at (hippo_rep.figures.WIDTHS).
WIDTHS = ("double", "single")


def build(name, inputs, width):
    """The figure ``name`` built as build_figures builds it (the registered builder draws in
    the paper style on a bare Figure) at ``width``; building it leaves
    ``matplotlib.rcParams`` as it was and pyplot without figures."""
    from hippo_rep.figures import FIGURES
    from hippo_rep.plotting.style import column_width

    style = dict(matplotlib.rcParams)
    fig = FIGURES[name](inputs, width=width)
    assert plt.get_fignums() == [], f"{name} made a pyplot figure"
    assert dict(matplotlib.rcParams) == style, f"{name} changed rcParams"
    if width == "single":  # a single column wide (a figure of few maps may be narrower)
        assert fig.get_figwidth() <= column_width("single") + 1e-9, fig.get_figwidth()
    return fig


@pytest.fixture(scope="module")
def built():
    """The registered figures built once per module, by (name, width): the checks and the
    size test share them (each figure takes seconds to draw)."""
    figures = {}
    yield figures
    figures.clear()


def built_figure(built, request, name, width):
    """The figure ``name`` at ``width`` from the shipped data (or the synthetic inputs where
    the shipped data lacks its input; that fixture is made only when needed), built once."""
    if (name, width) not in built:
        inputs = request.getfixturevalue("synthetic")[name] if name in FROM_SYNTHETIC \
            else request.getfixturevalue("shipped")
        built[name, width] = build(name, inputs, width)
    return built[name, width]


def test_every_figure_is_drawn_by_this_test():
    from hippo_rep.figures import FIGURES
    from hippo_rep.figures import WIDTHS as REGISTRY_WIDTHS

    assert set(FIGURES) == set(FROM_SHIPPED) | set(FROM_SYNTHETIC)
    assert set(WIDTHS) == set(REGISTRY_WIDTHS)


FROM_SHIPPED = ("learning", "learning_speed", "tem_vs_temt", "transitions", "grid_cells",
                "place_cells", "scores", "remapping", "passkey", "memory_delay")
FROM_SYNTHETIC = ("fam_slots", "controls", "sweep", "session_cells")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", FROM_SHIPPED)
def test_figure_from_the_shipped_data_passes_the_checks(built, request, name, width):
    problems = check_figure(built_figure(built, request, name, width))
    assert problems == [], f"{name} ({width} column):\n{report(problems)}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", FROM_SYNTHETIC)
def test_figure_the_shipped_data_lacks_passes_the_checks(built, request, name, width):
    problems = check_figure(built_figure(built, request, name, width))
    assert problems == [], f"{name} ({width} column):\n{report(problems)}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", FROM_SHIPPED + FROM_SYNTHETIC)
def test_figure_fits_its_column_and_a_page(built, request, name, width):
    """Every registered figure, at either width, is no wider than the column it was drawn
    for and no taller than a journal page (MAX_HEIGHT), as set and as saved."""
    problems = oversized(built_figure(built, request, name, width), width)
    assert problems == [], f"{name} ({width} column):\n{report(problems)}"


def test_an_oversized_figure_is_found():
    """The size test would fail: a figure wider than its column or taller than a page, by
    its set size or by a text past its edge that widens the saved figure, is found; one
    that fits passes."""
    from matplotlib.figure import Figure

    from hippo_rep.plotting.style import DOUBLE_COLUMN_WIDTH, MAX_HEIGHT, SINGLE_COLUMN_WIDTH

    def plain(width, height):
        f = Figure(figsize=(width, height), layout="constrained")
        f.subplots().plot([0, 1], [0, 1])
        return f

    assert oversized(plain(SINGLE_COLUMN_WIDTH, MAX_HEIGHT), "single") == []
    assert oversized(plain(DOUBLE_COLUMN_WIDTH, 3.0), "double") == []
    (p,) = oversized(plain(DOUBLE_COLUMN_WIDTH, 3.0), "single")
    assert p.rule == "size" and "wider than the single column (3.5 in)" in p.detail
    too_tall = oversized(plain(SINGLE_COLUMN_WIDTH, MAX_HEIGHT + 0.5), "single")
    assert [p.detail.split(": ")[1][:11] for p in too_tall] == ["taller than"]
    both = oversized(plain(DOUBLE_COLUMN_WIDTH + 1.2, MAX_HEIGHT + 1), "double")
    assert len(both) == 2 and "8.20 in wide as set" in both[0].detail
    wide_text = Figure(figsize=(SINGLE_COLUMN_WIDTH, 3.0))  # set to the column, saved wider
    wide_text.subplots().text(0.9, 0.5, "a note running past the right edge", fontsize=8)
    (p,) = oversized(wide_text, "single")
    assert "3.50 in wide as set" in p.detail and "as saved" in p.detail


def test_a_planted_overlap_in_a_single_column_figure_is_found(shipped):
    """The check of the registered figures would fail: a note planted over a single-column
    figure's tick label is found (and the figure is clean without it)."""
    fig = build("learning", shipped, "single")
    assert check_figure(fig) == []
    ax = fig.axes[1]
    label = ax.get_xticklabels()[0]
    ax.annotate("planted note", xy=label.get_position(), xycoords=label.get_transform(),
                ha="center", va="top")
    problems = check_figure(fig)
    assert [p.rule for p in problems] == ["overlap"], report(problems)
    assert "planted note" in problems[0].detail


@pytest.fixture(scope="module")
def many_populations():
    """Analyses of simulated sessions of 4 populations (grid, place, boundary and band
    cells) and of 5 (two place cells relabelled), by number of populations: the ``scores``
    figure draws each of a session's populations."""
    from hippo_rep.analysis import analyse
    from hippo_rep.analysis.synthetic_session import simulate_session

    session, _ = simulate_session(minutes=2, seed=0)
    five = session["cell_population"].values.astype("<U16")
    five[np.flatnonzero(five == "place")[:2]] = "interneuron"
    out = {}
    for pops in (session["cell_population"].values, five):
        ds = analyse(session.assign_coords(cell_population=("cell", pops)), shuffles=2,
                     min_shift_s=5)
        out[len(ds.hippo.populations)] = ds
    assert sorted(out) == [4, 5]
    return out


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("n_populations", [4, 5])
def test_scores_of_many_populations_fit_a_page_and_pass_the_checks(many_populations, width,
                                                                    n_populations):
    """The ``scores`` figure of a session of 4 or 5 populations (a row of two panels each)
    is no taller than a page and no wider than its column at either width, and passes
    the checks."""
    from hippo_rep.figures import FigureInputs

    ds = many_populations[n_populations]
    fig = build("scores", FigureInputs(analysis=ds), width)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 2 * n_populations
    for name in ds.hippo.populations:  # each population named once, left of its row
        assert sum(f"population {name!r}" in ax.get_ylabel() for ax in panels) == 1
    problems = oversized(fig, width) + check_figure(fig)
    assert problems == [], f"scores of {n_populations} populations ({width}):\n" \
                           f"{report(problems)}"


def test_scores_of_many_populations_laid_out_as_for_two_are_too_tall(many_populations,
                                                                     monkeypatch):
    """The size test would fail: the layout of up to two populations (every panel with
    its own legend; at single width one panel a row) is taller than a page for four."""
    import hippo_rep.figures.scores as scores
    from hippo_rep.figures import FigureInputs

    monkeypatch.setattr(scores, "FULL_SCORE_PANELS", 10)
    for width in WIDTHS:
        fig = build("scores", FigureInputs(analysis=many_populations[4]), width)
        problems = oversized(fig, width)
        assert problems and all("taller than a page" in p.detail for p in problems), (
            width, report(problems))


def test_checking_leaves_a_rotated_text_as_it_was():
    """The checker measures a tilted text unrotated and must put its rotation back exactly
    (330°, not the 150° of rotation % 180: that would turn the text upside down)."""
    from matplotlib.figure import Figure

    from hippo_rep.plotting.checks import check_figure as check

    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    text = ax.text(0.5, 0.5, "tilted", rotation=-30)
    check(fig)
    assert text.get_rotation() == 330.0
