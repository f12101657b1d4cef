"""The axes a panel ``fn(data, ax=None) -> ax`` draws on."""


def get_ax(ax=None):
    """``ax``, or pyplot's current axes when None (pyplot is imported only then)."""
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.gca()
    return ax


#: Gap between a panel letter and the panel's left edge (labels included), points.
LETTER_PAD_PT = 2.0


def panel_letter(ax, letter: str, fontsize: float = 10):
    """Write a panel letter at the top left of ``ax`` *outside* everything the panel draws.

    The letter is a figure-level annotation placed at draw time, so it follows any layout
    engine: its right edge :data:`LETTER_PAD_PT` left of the panel's tight box (y tick
    labels and y label included) and its top level with the box's top (the title, or text
    written above the axes). It never prints over a title or an axis label of its own panel;
    a tight ``savefig`` box includes it. Returns the annotation.
    """
    from matplotlib.text import Annotation

    def corner(renderer):
        return ax.get_tightbbox(renderer)

    note = Annotation(letter, xy=(0, 1), xycoords=corner, xytext=(-LETTER_PAD_PT, 0),
                      textcoords="offset points", ha="right", va="top",
                      fontweight="bold", fontsize=fontsize)
    ax.figure.add_artist(note)
    return note
