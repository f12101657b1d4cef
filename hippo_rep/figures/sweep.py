"""Training sweeps: the ``sweep`` figure.

Held-out loop-closure accuracy and the fraction of grid-like positional units by grid value,
seeds as points. Panels: :mod:`hippo_rep.plotting.sweep`.
"""

from __future__ import annotations

from hippo_rep.figures._common import _label_panels, _panel_row, _size
from hippo_rep.figures.inputs import FigureInputs, MissingInput
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.style import DEFAULT_COLUMN, FONT_SIZE
from hippo_rep.plotting.sweep import plot_sweep

#: Panels of the sweep figure: (variable, selection of its other dims).
SWEEP_PANELS = (("accuracy", {"agent": "model", "step_type": "revisit_new_edge"}),
                ("grid_fraction", {}))


@register("sweep")
def sweep_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """A training sweep: held-out loop-closure accuracy and the fraction of grid-like
    positional units by grid value, seeds as points (``hippo-rep figures --sweep DIR``)."""
    ds = inputs.sweep
    if ds is None:
        raise MissingInput("needs a training sweep (--sweep DIR)")
    if not (ds["status"] == "done").any():
        raise MissingInput("the sweep has no finished run")
    fig, axes = _panel_row(width, len(SWEEP_PANELS), 2.8, 2.3 * len(SWEEP_PANELS) + 0.4)
    for ax, (var, sel) in zip(axes, SWEEP_PANELS, strict=True):
        plot_sweep(ds, var, ax=ax, select=sel)
    n_done, n = int((ds["status"] == "done").sum()), ds["status"].size
    figure_title(fig, f"sweep {ds.attrs.get('sweep_path', '')}: {n_done} of {n} runs finished",
                 _size(FONT_SIZE, width))
    _label_panels(axes)
    return fig
