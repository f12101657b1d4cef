"""The figure registry: :data:`FIGURES` (name → builder), the widths every figure is drawn at
(:data:`WIDTHS`) and :func:`register`, the decorator each figure family puts on its builders.

A registered builder checks its width, draws in the paper style on a bare Figure and returns
it with its layout settled (:func:`settle_layout`). :data:`FIGURES` is in the order the
builders were registered: the order in which :mod:`hippo_rep.figures` imports the family
modules, which is the order :func:`hippo_rep.figures.build_figures` draws and reports them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from hippo_rep.figures.inputs import FigureError, FigureInputs
from hippo_rep.plotting.style import COLUMN_WIDTHS, DEFAULT_COLUMN, column_width, paper_style

FIGURES: dict[str, Callable[..., object]] = {}

#: The widths every registered figure is drawn at (``FIGURES[name](inputs, width=...)``,
#: ``hippo-rep figures --width``): "double" (the default, a double column,
#: :data:`~hippo_rep.plotting.style.DOUBLE_COLUMN_WIDTH`) or "single" (a single column,
#: :data:`~hippo_rep.plotting.style.SINGLE_COLUMN_WIDTH`: fewer panels per row, maps wrapped
#: onto more rows, the smaller fonts of
#: :data:`~hippo_rep.plotting.style.SINGLE_COLUMN_STYLE`).
WIDTHS = tuple(COLUMN_WIDTHS)


def register(name: str):
    """Decorator: add a builder ``fn(inputs, width) -> matplotlib.figure.Figure`` to the
    registry (``width``: "single" or "double", :data:`WIDTHS`).

    The registered builder, ``FIGURES[name](inputs, width="double")``, checks the width
    (FigureError for another), draws inside :func:`~hippo_rep.plotting.style.paper_style`
    at that width (whoever calls it; ``rcParams`` is restored afterwards) on a bare Figure
    (:func:`~hippo_rep.plotting.style.new_figure`, not registered with pyplot) as wide as
    the column, and the figure it returns has its layout settled (:func:`settle_layout`)."""

    def deco(fn):
        @functools.wraps(fn)
        def build(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
            _check_width(width)
            with paper_style(width):
                return settle_layout(fn(inputs, width))

        FIGURES[name] = build
        return build

    return deco


def _check_width(width: str) -> float:
    try:
        return column_width(width)
    except ValueError as why:
        raise FigureError(str(why)) from None


def settle_layout(fig):
    """Lay out ``fig`` once before it is saved or checked (a draw without rendering, where
    it has a layout engine); returns it.

    Constrained layout makes room for the texts as they were last drawn (a y label is put
    beside its tick labels while the axes draws), so the first layout of a new figure can
    leave a label past the figure's edge (``tem_vs_temt``: its first y label, 10 px) that
    the next layout fixes; saving lays the figure out once more, so every format written
    shows the settled layout."""
    if fig.get_layout_engine() is not None:
        fig.draw_without_rendering()
    return fig
