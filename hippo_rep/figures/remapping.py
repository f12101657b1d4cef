"""Remapping: the ``remapping`` figure.

Cell-pair structure across environments of positional units and memory neurons against
permutation nulls, with per-unit and population-vector correlations and the TEM grid–place
test as secondary panels. Panels: :mod:`hippo_rep.plotting.remapping`.
"""

from __future__ import annotations

import numpy as np

from hippo_rep.analysis.remapping import MEMORY_IDENTITY, unit_pair_matrix
from hippo_rep.figures._common import _label_panels, _size
from hippo_rep.figures.inputs import FigureInputs, MissingInput
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.remapping import (
    PER_UNIT_NOTE,
    pair_scatter,
    pair_structure_test,
    pv_by_population,
    remap_by_population,
    tem_test,
)
from hippo_rep.plotting.style import (
    DEFAULT_COLUMN,
    FIGURE_TITLE_FONT_SIZE,
    FULL_WIDTH,
    MEDIUM_FONT_SIZE,
    column_width,
    new_figure,
)
from hippo_rep.schema import MEMORY_ACTIVITY, G

#: An axis label longer than this (characters) is wrapped by :func:`_three_lines`.
THREE_LINES_FROM = 30


def _three_lines(label: str) -> str:
    """A long axis label (of one line or two; over :data:`THREE_LINES_FROM` characters)
    on at most three lines of about equal length, for a low axes; a shorter one as it is."""
    import textwrap

    words = label.replace("\n", " ")
    if len(words) <= THREE_LINES_FROM:
        return label
    width = len(words) // 3
    while len(textwrap.wrap(words, width)) > 3:
        width += 1
    return "\n".join(textwrap.wrap(words, width))


@register("remapping")
def remapping_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """The paper's remapping claim tested: cell-pair structure across environments of
    positional units vs memory neurons against permutation nulls (top), with per-unit and
    population-vector correlations and the TEM grid–place test as secondary panels."""
    ds = inputs.need("analysis", "remap_corr", "pv_corr", "tem_corr", "tem_null_mean",
                     "tem_null_q95", "tem_p", "node_rate", "pair_structure_r",
                     "pair_structure_p")
    if ds.sizes.get("env_pair", 0) == 0:
        raise MissingInput("the analysis dataset has no env_pair (remapping needs at least "
                           "2 environments)")
    grid_var = str(ds.attrs.get("remap_tem_grid_variable", G))
    mem_var = str(ds.attrs.get("remap_tem_memory_variable", MEMORY_ACTIVITY))
    a, b = ds["env_a"].values[0], ds["env_b"].values[0]
    if width == "single":
        # one panel a row, in the same order (half a column is narrower than the three
        # populations' tick labels of a, b, d and e), short enough for a page: the panels
        # low, long y labels on three lines, the caption a step smaller
        fig = new_figure(column_width(width), 9.6)
        axes = fig.subplots(6, 1, height_ratios=[1.1, 1.1, 1.1, 1.2, 1, 1]).reshape(2, 3)
    else:
        fig = new_figure(FULL_WIDTH, 6.0)
        axes = fig.subplots(2, 3)
    pair_vars = [k for k in ds.data_vars if str(k).startswith(("pair_structure", "pair_shift"))]
    pair = ds[pair_vars]
    # the legends of a, b, c and f below them: on one row (c, f: two columns) under a panel
    # as wide as the column, one entry a row under a third of it
    columns = 3 if width == "single" else 1
    pair_structure_test(pair, ax=axes[0, 0], legend_columns=columns)
    axes[0, 0].set_title("cell-pair structure kept?", fontsize=MEDIUM_FONT_SIZE)
    if "pair_shift_match" in pair:
        pair_structure_test(pair, ax=axes[0, 1], stat="pair_shift", legend_columns=columns)
        axes[0, 1].set_title("pair offsets kept?\n(shift-tolerant)", fontsize=MEDIUM_FONT_SIZE)
    else:
        axes[0, 1].text(0.5, 0.5, "no shift-tolerant test\n(the analysis has no\n"
                        "pair_shift_match)", transform=axes[0, 1].transAxes, ha="center",
                        va="center", fontsize=MEDIUM_FONT_SIZE)
        axes[0, 1].set_axis_off()
    for v in (grid_var, mem_var):
        if v in np.asarray(ds["population"].values).tolist():
            rate = ds.hippo.population(v)["node_rate"]
            pair_scatter(unit_pair_matrix(rate, a), unit_pair_matrix(rate, b), v,
                         ax=axes[0, 2], title=f"unit pairs, env {a} vs env {b}",
                         legend_columns=min(columns, 2))
    remap_by_population(ds["remap_corr"], ax=axes[1, 0])
    axes[1, 0].set_title("per-unit correlation\n(secondary; see note)", fontsize=MEDIUM_FONT_SIZE)
    pv_by_population(ds["pv_corr"], ax=axes[1, 1])
    axes[1, 1].set_title("population vectors\n(secondary)", fontsize=MEDIUM_FONT_SIZE)
    tem_test(ds[["tem_corr", "tem_null_mean", "tem_null_q95", "tem_p"]], ax=axes[1, 2],
             legend_columns=min(columns, 2))
    # its longest line no wider than the panel (the panel is at the figure's right edge)
    axes[1, 2].set_title(f"TEM test ({grid_var} at\n{mem_var} peaks)", fontsize=MEDIUM_FONT_SIZE)
    if width == "single":  # low panels: long y labels on three lines
        for ax in axes.ravel():
            ax.set_ylabel(_three_lines(ax.get_ylabel()))
    title = (f"remapping across {ds.sizes['env']} environments ({ds.sizes['env_pair']} "
             f"pairs; {ds.attrs.get('remap_pair_shuffles', '?')} permutations per null). "
             f"Memory-neuron identity across environments: {MEMORY_IDENTITY}. "
             f"Note on d: {PER_UNIT_NOTE}.")
    figure_title(fig, title, _size(FIGURE_TITLE_FONT_SIZE, width))
    _label_panels(axes.ravel())
    return fig
