"""Long-delay loop closure: the ``memory_delay`` figure.

Accuracy on returning home against excursion length per memory variant (seeds as points),
beside their per-step time and memory from the benchmark. Panels:
:mod:`hippo_rep.plotting.delay`.
"""

from __future__ import annotations

from hippo_rep.figures._common import _label_panels
from hippo_rep.figures.inputs import FigureInputs
from hippo_rep.figures.registry import register
from hippo_rep.plotting.delay import plot_delay, plot_delay_cost
from hippo_rep.plotting.style import (
    DEFAULT_COLUMN,
    FULL_WIDTH,
    HALF_WIDTH,
    MEDIUM_FONT_SIZE,
    SMALL_FONT_SIZE,
    column_width,
    new_figure,
)


@register("memory_delay")
def memory_delay_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Long-delay loop closure: accuracy on returning home against excursion length for the
    memory variants of trained TEM-t runs (``hippo-rep figures --delay RESULT``, repeated for
    seeds: points), beside their per-step time and memory against D when ``--delay-cost``
    gives the benchmark's JSON."""
    ds = inputs.need("delay", "accuracy")
    cost = inputs.delay_cost
    if width == "single":  # the column's width; the cost panels below the accuracy
        fig = new_figure(column_width(width), 2.6 + (4.4 if cost else 0))
        axes = fig.subplots(3 if cost else 1, 1, squeeze=False,
                            height_ratios=[1.3, 1, 1] if cost else None).T
    else:
        # with the cost panels: the three in the double column, one legend below them
        fig = new_figure(FULL_WIDTH if cost else HALF_WIDTH + 1.2, 2.9 if cost else 2.6)
        axes = fig.subplots(1, 3 if cost else 1, squeeze=False,
                            width_ratios=[1.15, 1, 1] if cost else None)  # a's long title
    ax = axes[0, 0]
    plot_delay(ds, ax=ax)
    if cost and width != "single":  # the variants' colours are those of every panel
        handles, labels = ax.get_legend_handles_labels()
        ax.get_legend().remove()
        fig.legend(handles, labels, loc="outside lower center", ncols=len(labels),
                   fontsize=SMALL_FONT_SIZE, frameon=False)
    if cost:
        for a, key in zip(axes[0, 1:], ("ms_per_step", "kb_per_step"), strict=True):
            plot_delay_cost(cost, key, ax=a)
            if width != "single":  # a third of the column: the x label wider than the axes
                a.set_xlabel(a.get_xlabel().replace(" (", "\n(", 1))
        axes[0, 1].set_title("per-step cost (benchmark)", fontsize=MEDIUM_FONT_SIZE)
        _label_panels(axes[0])
    window = ds.attrs.get("window_steps", "?")
    ax.set_title(f"memory after an excursion{chr(10) if cost else ' '}(window {window} steps, "
                 f"{ds.attrs.get('fam_slots', '?')} FAM slots)", fontsize=MEDIUM_FONT_SIZE)
    return fig
