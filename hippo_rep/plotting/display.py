"""Show bare :class:`matplotlib.figure.Figure` objects in Jupyter without pyplot.

A figure built outside pyplot (``Figure(...)``, as :mod:`hippo_rep.explore` does) has no
image repr of its own: IPython shows ``<Figure size ... with N Axes>`` unless pyplot's inline
backend happened to register an image formatter. The helpers here render the figure
themselves — a PNG at :data:`PNG_SCALE` × :data:`DISPLAY_DPI` shown at its 1× size (crisp on
high-density screens), or an SVG — and hand Jupyter the bytes:

- :func:`figure_bundle`: the (data, metadata) mime bundle of a figure, for a display message
  or an ipywidgets ``Output`` widget's ``outputs``;
- :class:`FigureView`: wraps a figure with ``_repr_mimebundle_`` (return it from a cell or
  pass it to ``IPython.display.display``);
- :func:`register_figure_formatter`: makes the current IPython shell (when there is one)
  show every bare ``Figure`` returned from a cell the same way.

No pyplot state is read or changed.
"""

from __future__ import annotations

import base64
import io
import struct

#: Display formats: "png" (raster at :data:`PNG_SCALE` × resolution) or "svg" (vector).
FORMATS = ("png", "svg")
#: Default display format.
DEFAULT_FORMAT = "png"
#: Resolution a figure is shown at on screen, dots per inch (1 inch of figure = 100 CSS px).
DISPLAY_DPI = 100
#: PNGs are rendered at this multiple of :data:`DISPLAY_DPI` and shown at 1× size.
PNG_SCALE = 2
#: Padding around the tight bounding box, inches.
PAD_INCHES = 0.05

MIME = {"png": "image/png", "svg": "image/svg+xml"}


class DisplayError(ValueError):
    """An unknown display format or something that is not a matplotlib figure."""


def _check(fig, fmt: str) -> None:
    from matplotlib.figure import Figure

    if fmt not in FORMATS:
        raise DisplayError(f"unknown display format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not isinstance(fig, Figure):
        raise DisplayError(f"expected a matplotlib Figure, got {type(fig).__name__}")


def _png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's IHDR chunk."""
    return struct.unpack(">II", png[16:24])


def _describe(fig, fmt: str) -> str:
    """The text/plain alternative of a displayed figure."""
    w, h = fig.get_size_inches()
    return f"<hippo_rep figure {w:.1f}×{h:.1f} in, {len(fig.axes)} axes, shown as {fmt}>"


def figure_bundle(fig, fmt: str = DEFAULT_FORMAT, scale: int = PNG_SCALE,
                  dpi: float = DISPLAY_DPI) -> tuple[dict, dict]:
    """Render a figure to a Jupyter mime bundle.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Any figure (with or without pyplot); it is not modified or closed. The image is its
        tight bounding box (everything drawn, plus :data:`PAD_INCHES`).
    fmt : {"png", "svg"}
        PNG: rendered at ``scale × dpi`` and shown at ``dpi`` (its width and height in the
        metadata, CSS pixels); SVG: vector.
    scale : int
        Oversampling of the PNG (2: crisp on high-density screens).
    dpi : float
        Display resolution, dots per inch of figure size.

    Returns
    -------
    (dict, dict)
        ``data`` (mime type → content: base64 ASCII for PNG, text for SVG, and a
        ``text/plain`` description) and ``metadata`` (mime type → display size).
    """
    _check(fig, fmt)
    buf = io.BytesIO()
    # a tight box: titles wider than the canvas (a layout engine does not shrink them) or
    # placed above it stay whole
    fig.savefig(buf, format=fmt, dpi=dpi * (scale if fmt == "png" else 1),
                bbox_inches="tight", pad_inches=PAD_INCHES, facecolor="white")
    text = _describe(fig, fmt)
    raw = buf.getvalue()
    if fmt == "svg":
        return {MIME["svg"]: raw.decode("utf-8"), "text/plain": text}, {}
    width, height = _png_size(raw)
    meta = {MIME["png"]: {"width": round(width / scale), "height": round(height / scale)}}
    return {MIME["png"]: base64.b64encode(raw).decode("ascii"), "text/plain": text}, meta


def display_output(fig, fmt: str = DEFAULT_FORMAT) -> dict:
    """A figure as one nbformat ``display_data`` output (for an ``Output`` widget's
    ``outputs``)."""
    data, meta = figure_bundle(fig, fmt)
    return {"output_type": "display_data", "data": data, "metadata": meta}


def text_output(text: str) -> dict:
    """A line of text as one nbformat ``stream`` output (stdout)."""
    return {"output_type": "stream", "name": "stdout", "text": text.rstrip("\n") + "\n"}


class FigureView:
    """A matplotlib figure that Jupyter displays as an image (PNG at 2× or SVG).

    Parameters
    ----------
    figure : matplotlib.figure.Figure
    fmt : {"png", "svg"}

    Return it from a cell, or ``IPython.display.display`` it; ``.figure`` is the figure
    (e.g. to save it).
    """

    def __init__(self, figure, fmt: str = DEFAULT_FORMAT):
        _check(figure, fmt)
        self.figure = figure
        self.fmt = fmt

    def _repr_mimebundle_(self, include=None, exclude=None):
        return figure_bundle(self.figure, self.fmt)

    def __repr__(self) -> str:
        w, h = self.figure.get_size_inches()
        return f"FigureView({w:.1f}×{h:.1f} in, {len(self.figure.axes)} axes, {self.fmt})"


def show(fig, fmt: str = DEFAULT_FORMAT) -> None:
    """Display a figure in IPython as an image (PNG at 2× or SVG); nothing outside IPython.

    Returns None, so ``show(fig)`` as a cell's last line displays the figure once.
    """
    display_in_ipython(FigureView(fig, fmt))


def display_in_ipython(obj) -> None:
    """``IPython.display.display(obj)`` inside IPython; nothing outside it."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is not None:
        display(obj)


def register_figure_formatter(fmt: str = DEFAULT_FORMAT, shell=None) -> bool:
    """Make an IPython shell display bare matplotlib Figures as images.

    Registers a ``fmt`` formatter for :class:`matplotlib.figure.Figure` on ``shell`` (default:
    the current one) and removes the other format's, so a figure returned from a cell shows
    once, as :func:`figure_bundle` renders it; its text alternative says so (instead of
    ``<Figure size ...>``).

    Returns
    -------
    bool
        False (and nothing done) outside IPython.
    """
    from matplotlib.figure import Figure

    if fmt not in FORMATS:
        raise DisplayError(f"unknown display format {fmt!r}; use one of {', '.join(FORMATS)}")
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    formatters = shell.display_formatter.formatters

    def render(fig):
        data, meta = figure_bundle(fig, fmt)
        return data[MIME[fmt]], meta.get(MIME[fmt], {})

    def plain(fig, printer, cycle):
        printer.text(_describe(fig, fmt))

    for other in FORMATS:
        if other != fmt:
            formatters[MIME[other]].pop(Figure, None)
    formatters[MIME[fmt]].for_type(Figure, render)
    formatters["text/plain"].for_type(Figure, plain)
    return True
