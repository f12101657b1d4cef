"""The learned transition structure: the ``transitions`` figure.

Wave vectors of W_a (linear σ), how far opposite moves and the smallest loop return g to its
start against the add-if-novel threshold, and the memories written per node visited, of each
evaluated recurrent TEM-t. Panels: :mod:`hippo_rep.plotting.transitions`.
"""

from __future__ import annotations

from hippo_rep.figures._common import _label_panels, _panel_row, _size
from hippo_rep.figures.inputs import FigureInputs, MissingInput
from hippo_rep.figures.registry import register
from hippo_rep.plotting import COLORS
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.style import (
    BLUISH_GREEN,
    DEFAULT_COLUMN,
    FONT_SIZE,
    ORANGE,
    REDDISH_PURPLE,
    SKY_BLUE,
)
from hippo_rep.plotting.transitions import (
    loop_return_panel,
    memories_per_node_panel,
    wave_vector_panel,
)


@register("transitions")
def transitions_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """The learned transition structure of each evaluated TEM-t: wave vectors of W_a (linear
    σ), how far opposite moves and the smallest loop return g to its start against the
    add-if-novel threshold, and the memories written per node visited."""
    evals = {k: v for k, v in inputs.need_evals().items()
             if (v.get("transitions") or {}).get("recurrent")}
    if not evals:
        raise MissingInput("needs an evaluation of a recurrent model with transition "
                           "diagnostics (re-run hippo-rep evaluate with this version)")
    palette = [COLORS["temt"], BLUISH_GREEN, REDDISH_PURPLE, ORANGE, SKY_BLUE]
    colors = {label: palette[i % len(palette)] for i, label in enumerate(evals)}
    fig, axes = _panel_row(width, 3, 2.7, 7.2, width_ratios=[1, 1.3, 0.9])
    label, first = next(iter(evals.items()))
    wave_vector_panel(first["transitions"], ax=axes[0], color=colors[label], label=label,
                      walk_constant=(first.get("walk_constant_power") or {}).get("g"))
    loop_return_panel(evals, ax=axes[1], colors=colors)
    memories_per_node_panel(evals, ax=axes[2], colors=colors)
    meta = first.get("meta", {})
    figure_title(fig, f"transition structure ({label}); memories on held-out "
                   f"{meta.get('world', '')}, {meta.get('steps', '?')}-step walks",
                 _size(FONT_SIZE, width))
    _label_panels(axes)
    return fig
