"""The one way hippo_rep draws: figure widths, the paper style and a new figure outside pyplot.

Every figure of the package (the registry of :mod:`hippo_rep.figures`, which ``passkey sweep
--figure`` also draws from, and the notebooks' explorer and statistics figures of
:mod:`hippo_rep.explore`) is a :class:`matplotlib.figure.Figure` made by :func:`new_figure`
(or given by the caller), never by pyplot, and drawn inside :func:`paper_style`, which applies
:data:`PAPER_STYLE` for the drawing only: ``matplotlib.rcParams`` is the same afterwards and
pyplot holds no figure. Panels (``fn(data, ax=None) -> ax``) take their sizes, line widths
and colour maps from the constants here.

Matplotlib reads most style settings when an artist is made (fonts, line widths, colour
cycle) but some when the figure is saved (``savefig.*``, ``pdf.fonttype``, ``svg.fonttype``):
save inside :func:`paper_style` too, as :func:`hippo_rep.figures.build_figures` does.
"""

from __future__ import annotations

from contextlib import contextmanager

# ---- widths -------------------------------------------------------------------------------

#: Width of a single-column journal figure, inches (about 89 mm: Nature's single column;
#: Cell's and eLife's are 85-90 mm).
SINGLE_COLUMN_WIDTH = 3.5
#: Width of a double-column (full-page-width) journal figure, inches (about 178 mm: Nature
#: allows 183 mm, Cell 174 mm).
DOUBLE_COLUMN_WIDTH = 7.0
#: Width of a full-width figure, inches: the double column, which most figures here use.
FULL_WIDTH = DOUBLE_COLUMN_WIDTH
#: Width of a half-width figure, inches: the single column.
HALF_WIDTH = SINGLE_COLUMN_WIDTH
#: Size of the figure a panel makes when it is given no axes, inches (width, height): a
#: single column.
PANEL_SIZE = (SINGLE_COLUMN_WIDTH, 2.8)
#: The widths a registered figure is drawn at, by name (``hippo-rep figures --width``): each
#: figure lays itself out for its width (fewer panels per row in a single column).
COLUMN_WIDTHS = {"single": SINGLE_COLUMN_WIDTH, "double": DOUBLE_COLUMN_WIDTH}
#: The width a registered figure is drawn at by default.
DEFAULT_COLUMN = "double"
#: Tallest figure, inches: the usable height of a journal page (about 247 mm, Nature's
#: maximum figure height, with room for a short caption line). Every registered figure, at
#: either width, is at most this tall as saved (``tests/test_figure_checks.py``,
#: :func:`hippo_rep.plotting.checks.oversized`); a taller one is split into columns or
#: shows fewer example maps, never cut.
MAX_HEIGHT = 9.7


def column_width(width: str) -> float:
    """The width in inches of the named column width, ``"single"`` or ``"double"``
    (:data:`COLUMN_WIDTHS`); ValueError naming the choices for any other."""
    try:
        return COLUMN_WIDTHS[width]
    except (KeyError, TypeError):
        raise ValueError(f"unknown width {width!r}; use {' or '.join(COLUMN_WIDTHS)}") from None

# ---- font sizes (points) ------------------------------------------------------------------

#: Body text, axis labels, default axes titles and short figure-wide titles.
FONT_SIZE = 8.0
#: Tick labels, legends, titles of panels in crowded figures and notes inside a panel.
MEDIUM_FONT_SIZE = 7.0
#: Titles of small maps, notes in an empty slot of a row of maps, crowded legends.
SMALL_FONT_SIZE = 6.0
#: Labels inside a crowded panel (p values, counts) and the smallest legends.
TINY_FONT_SIZE = 5.5
#: The smallest text of any figure (journals ask for at least 5-6 pt at print size).
MIN_FONT_SIZE = 5.0
#: Colour-bar ticks and labels beside a map.
COLORBAR_FONT_SIZE = MIN_FONT_SIZE
#: Panel letters (a, b, ...), bold.
PANEL_LETTER_FONT_SIZE = 10.0
#: Long, caption-like figure-wide titles.
FIGURE_TITLE_FONT_SIZE = MEDIUM_FONT_SIZE

# ---- line widths (points) -----------------------------------------------------------------

#: Data lines.
LINE_WIDTH = 1.4
#: Axes spines and ticks.
AXES_LINE_WIDTH = 0.8
#: Reference lines (zero, chance, thresholds) drawn behind the data.
REFERENCE_LINE_WIDTH = 0.6

# ---- colours ------------------------------------------------------------------------------

# The Okabe-Ito colours (Okabe & Ito 2008; colour-blind safe), by name.
BLUE = "#0072B2"
VERMILLION = "#D55E00"
BLUISH_GREEN = "#009E73"
REDDISH_PURPLE = "#CC79A7"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
YELLOW = "#F0E442"
BLACK = "#000000"
#: A neutral grey beside the Okabe-Ito colours (baselines, nulls, secondary models).
GREY = "#999999"
#: Okabe-Ito palette, the colour cycle of every axes: blue, vermillion, bluish green, reddish
#: purple, orange, sky blue, yellow, black.
OKABE_ITO = (BLUE, VERMILLION, BLUISH_GREEN, REDDISH_PURPLE, ORANGE, SKY_BLUE, YELLOW, BLACK)
#: Colour map of rate maps (lowest value to peak).
RATE_CMAP = "viridis"
#: Colour map of place-like maps: zero light, the peak dark (a sparse map is a few dark bins
#: on a light ground, not a black mask).
PLACE_CMAP = "magma_r"
#: Colour map of spatial autocorrelograms (Pearson r, -1 to 1, zero white).
AUTOCORR_CMAP = "RdBu_r"

# ---- the style ----------------------------------------------------------------------------

#: Resolution of saved raster figures, dots per inch.
SAVE_DPI = 300
#: Margin a saved figure keeps around what it draws (the tight save box), inches: small,
#: so a figure laid out at a column's width is saved no wider than the column (matplotlib's
#: 0.1 in on each side made a 3.5 in single-column figure 3.6 in wide).
SAVE_PAD_INCHES = 0.02


def _cycle():
    from cycler import cycler

    return cycler(color=list(OKABE_ITO))


def _paper_style() -> dict:
    return {
        "figure.dpi": 100,
        "savefig.dpi": SAVE_DPI,
        "savefig.bbox": "tight",
        "savefig.pad_inches": SAVE_PAD_INCHES,
        "font.size": FONT_SIZE,
        "axes.titlesize": FONT_SIZE,
        "axes.labelsize": FONT_SIZE,
        "xtick.labelsize": MEDIUM_FONT_SIZE,
        "ytick.labelsize": MEDIUM_FONT_SIZE,
        "legend.fontsize": MEDIUM_FONT_SIZE,
        "legend.frameon": False,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.linewidth": AXES_LINE_WIDTH,
        "lines.linewidth": LINE_WIDTH,
        "axes.prop_cycle": _cycle(),
        # text stays text in vector files (editable in Illustrator/Inkscape; TrueType in PDF)
        "svg.fonttype": "none",
        "pdf.fonttype": 42,
        "image.cmap": RATE_CMAP,
    }


#: The paper style: matplotlib rc settings applied by :func:`paper_style` while a figure is
#: drawn and saved, never set globally.
PAPER_STYLE = _paper_style()

#: What a single-column figure changes in :data:`PAPER_STYLE`: axis labels and default
#: titles a step smaller (:data:`MEDIUM_FONT_SIZE`), tick labels and legends another
#: (:data:`SMALL_FONT_SIZE`), thinner data lines; never below :data:`MIN_FONT_SIZE`.
SINGLE_COLUMN_STYLE = {
    "font.size": MEDIUM_FONT_SIZE,
    "axes.titlesize": MEDIUM_FONT_SIZE,
    "axes.labelsize": MEDIUM_FONT_SIZE,
    "xtick.labelsize": SMALL_FONT_SIZE,
    "ytick.labelsize": SMALL_FONT_SIZE,
    "legend.fontsize": SMALL_FONT_SIZE,
    "lines.linewidth": 1.1,
}


def column_style(width: str = DEFAULT_COLUMN) -> dict:
    """The rc settings of a figure drawn at the named column width: :data:`PAPER_STYLE`,
    with :data:`SINGLE_COLUMN_STYLE` over it for ``"single"``."""
    column_width(width)  # a known width
    return {**PAPER_STYLE, **(SINGLE_COLUMN_STYLE if width == "single" else {})}


@contextmanager
def paper_style(width: str = DEFAULT_COLUMN):
    """Draw (and save) in :data:`PAPER_STYLE` (at ``width="single"``, with the smaller
    fonts of :data:`SINGLE_COLUMN_STYLE`); ``matplotlib.rcParams`` is restored on exit.

    Examples
    --------
    >>> from hippo_rep.plotting.style import new_figure, paper_style
    >>> with paper_style():
    ...     fig = new_figure(height=2.0)
    ...     ax = fig.subplots()
    """
    import matplotlib

    with matplotlib.rc_context(column_style(width)):
        yield


def new_figure(width: float = FULL_WIDTH, height: float = 3.0, layout: str | None = "constrained",
               **kwargs):
    """A new :class:`~matplotlib.figure.Figure` outside pyplot (no global state; show it with
    :func:`hippo_rep.plotting.display.show`, save it with ``fig.savefig``).

    Parameters
    ----------
    width, height : float
        Size in inches (default width :data:`FULL_WIDTH`, a double column).
    layout : str or None
        Layout engine ("constrained" by default).
    **kwargs
        Passed to :class:`~matplotlib.figure.Figure`.
    """
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout=layout, **kwargs)
