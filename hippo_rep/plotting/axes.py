"""The axes a panel ``fn(data, ax=None) -> ax`` draws on."""


def get_ax(ax=None):
    """``ax``, or pyplot's current axes when None (pyplot is imported only then)."""
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.gca()
    return ax


#: Gap between a panel letter and the panel's left edge (labels included), points.
LETTER_PAD_PT = 5.0


def panel_letter(ax, letter: str, fontsize: float = 10):
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
