"""PassKey retrieval: the ``passkey`` figure.

Accuracy against filler length per variant, and the mean over long fillers, from a PassKey
sweep. Panels: :mod:`hippo_rep.plotting.passkey`.
"""

from __future__ import annotations

from hippo_rep.figures._common import _label_panels, _panel_row, _size
from hippo_rep.figures.inputs import FigureInputs
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.passkey import passkey_curves, passkey_long_filler
from hippo_rep.plotting.style import DEFAULT_COLUMN, FONT_SIZE


@register("passkey")
def passkey_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """PassKey accuracy against filler length per variant, and the mean over long fillers."""
    from hippo_rep.tasks.results import CHANCE

    rows = inputs.need_passkey()
    fig, axes = _panel_row(width, 2, 3.2, 5.6, width_ratios=[1.6, 1], height_ratios=[1.3, 1])
    passkey_curves(rows, ax=axes[0], chance=CHANCE)
    passkey_long_filler(rows, ax=axes[1], chance=CHANCE)
    seeds = sorted({int(r.get("n_seeds", 1)) for r in rows})
    bars = "95% Wilson intervals of the pooled prompts" if all("ci_low" in r for r in rows) \
        else "± SD"
    figure_title(fig, f"PassKey retrieval (mean over {'/'.join(map(str, seeds))} seed(s), "
                   f"{bars}; chance {CHANCE:.3f})", _size(FONT_SIZE, width))
    _label_panels(axes)
    return fig
