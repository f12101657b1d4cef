"""The figure checker (hippo_rep.plotting.checks) finds planted defects and passes a clean
figure; every registered figure, rendered from the shipped data (or, where the shipped data
lacks its input, from small synthetic inputs), passes it."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from hippo_rep.plotting.checks import (  # noqa: E402
    check_figure,
    empty_axes,
    images_without_colorbar,
    overlapping_texts,
    report,
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
    fig.suptitle("a figure", y=1.02)


def test_a_clean_figure_passes(fig):
    clean(fig)
    assert check_figure(fig) == [], report(check_figure(fig))


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
