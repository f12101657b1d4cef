"""The axes a panel ``fn(data, ax=None) -> ax`` draws on, and what is placed around
panels: panel letters, a legend below the axes, a figure-wide title that fits."""

import textwrap

from hippo_rep.plotting.style import (
    FIGURE_TITLE_FONT_SIZE,
    FULL_WIDTH,
    PANEL_LETTER_FONT_SIZE,
    PANEL_SIZE,
    new_figure,
)


def get_ax(ax=None):
    """``ax``, or when None the axes of a new figure outside pyplot
    (:func:`~hippo_rep.plotting.style.new_figure`, :data:`~hippo_rep.plotting.style.PANEL_SIZE`):
    no pyplot figure is made or reused (show ``ax.figure`` with
    :func:`hippo_rep.plotting.display.show`, or save it). Draw inside
    :func:`~hippo_rep.plotting.style.paper_style` for the paper style."""
    if ax is None:
        ax = new_figure(*PANEL_SIZE).subplots()
    return ax


#: Gap between a panel letter and the panel's left edge (labels included), points.
LETTER_PAD_PT = 5.0


def panel_letter(ax, letter: str, fontsize: float = PANEL_LETTER_FONT_SIZE):
    """Write a panel letter at the top left of ``ax``, *outside* everything the panel draws.

    The letter is an annotation of ``ax`` placed at draw time: its right edge
    :data:`LETTER_PAD_PT` left of the panel's tight box (y tick labels and y label
    included) and its top level with the box's top (the title, or text written above the
    axes). It never prints over a title or axis label of its own panel, and it is part of
    the panel's own tight box, so a layout engine (constrained layout) keeps the
    neighbouring panel clear of it and a tight ``savefig`` box includes it. Returns the
    annotation.
    """

    busy = []

    def corner(renderer):
        # the panel's box without the letter itself (else the box would hold the letter
        # that is placed from it); asked again while it is computed (a legend placed "best"
        # looks at every text of the axes, the letter too), the axes' own box
        if busy:
            return ax.get_window_extent(renderer)
        busy.append(True)
        note.set_in_layout(False)
        try:
            return ax.get_tightbbox(renderer)
        finally:
            note.set_in_layout(True)
            busy.clear()

    note = ax.annotate(letter, xy=(0, 1), xycoords=corner, xytext=(-LETTER_PAD_PT, 0),
                       textcoords="offset points", ha="right", va="top",
                       fontweight="bold", fontsize=fontsize, annotation_clip=False)
    return note


#: Drop of a legend placed below its axes (:func:`legend_below`): under the tick labels and
#: the x label at the paper style's sizes, points.
LEGEND_DROP_PT = 30.0


def legend_below(ax, drop_pt: float = LEGEND_DROP_PT, **kwargs):
    """A legend of ``ax`` centred below it, its top ``drop_pt`` points under the axes'
    bottom edge whatever the axes' height (an offset in points, not in axes fraction: clear
    of one line of tick labels and the x label by default; pass more for taller tick
    labels). ``kwargs`` go to :meth:`~matplotlib.axes.Axes.legend`. Returns the legend."""
    from matplotlib.transforms import ScaledTranslation

    below = ax.transAxes + ScaledTranslation(0, -drop_pt / 72, ax.figure.dpi_scale_trans)
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below,
                     **kwargs)


#: Font size of a figure-wide title (:func:`figure_title`), points.
TITLE_FONTSIZE = FIGURE_TITLE_FONT_SIZE
#: Width of the figure :data:`TITLE_CHARS` is measured on, inches (a two-column figure).
TITLE_WIDTH_IN = FULL_WIDTH
#: Characters per line of a figure-wide title at :data:`TITLE_FONTSIZE` on a figure
#: :data:`TITLE_WIDTH_IN` wide.
TITLE_CHARS = 125


def wrap_title(text: str, width: int = TITLE_CHARS) -> str:
    """``text`` in lines of at most ``width`` characters (its own line breaks kept)."""
    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def figure_title(fig, text: str, fontsize: float = TITLE_FONTSIZE):
    """The figure-wide title (suptitle) of ``fig``, in lines that fit the figure's width at
    ``fontsize`` (:data:`TITLE_CHARS` scaled by width and font size; its own line breaks
    kept): a longer line runs past the figure's edges. Returns the title."""
    width = int(TITLE_CHARS * fig.get_figwidth() / TITLE_WIDTH_IN * TITLE_FONTSIZE / fontsize)
    return fig.suptitle(wrap_title(text, width), fontsize=fontsize)
