"""Pure plotting panels: ``fn(data, ax=None) -> ax``; no savefig, no pyplot, no global style
changes.

Figures are :class:`matplotlib.figure.Figure` objects made outside pyplot
(:func:`~hippo_rep.plotting.style.new_figure`) and drawn inside :func:`paper_style`; the
widths, font sizes, line widths and colour maps of every figure live in
:mod:`hippo_rep.plotting.style`.
"""

from hippo_rep.plotting.learning import accuracy_by_step_type, accuracy_curve
from hippo_rep.plotting.style import (
    BLACK,
    BLUE,
    DOUBLE_COLUMN_WIDTH,
    FULL_WIDTH,
    GREY,
    HALF_WIDTH,
    OKABE_ITO,
    PAPER_STYLE,
    SINGLE_COLUMN_WIDTH,
    VERMILLION,
    new_figure,
    paper_style,
)

#: Okabe-Ito colours by role, shared by every figure.
COLORS = {"temt": BLUE, "sinusoidal": VERMILLION, "node_agent": BLACK, "edge_agent": GREY}


__all__ = ["COLORS", "DOUBLE_COLUMN_WIDTH", "FULL_WIDTH", "HALF_WIDTH", "OKABE_ITO", "PAPER_STYLE",
           "SINGLE_COLUMN_WIDTH", "accuracy_by_step_type", "accuracy_curve", "new_figure",
           "paper_style"]
