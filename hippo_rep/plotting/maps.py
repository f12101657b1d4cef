"""Panels of rate maps and autocorrelograms (maps indexed [row = y, col = x], y up)."""

from __future__ import annotations

import numpy as np

from hippo_rep.defaults import PLACE_THRESHOLD
from hippo_rep.plotting.axes import get_ax
from hippo_rep.plotting.style import (
    AUTOCORR_CMAP,
    COLORBAR_FONT_SIZE,
    OKABE_ITO,
    PLACE_CMAP,
    RATE_CMAP,
    SMALL_FONT_SIZE,
)

#: Colour of the field outlines of :func:`rate_map` (Okabe-Ito sky blue: visible on the
#: light zero and the dark peak of a reversed magma map).
OUTLINE_COLOR = OKABE_ITO[5]

#: Colour of unvisited bins where a map's own colour map reaches white (e.g. ``magma_r``).
UNVISITED_GREY = "0.82"

#: What the colour bar of a rate map reads, in captions (:func:`map_caption`).
MAP_QUANTITY = "mean activity per bin"

#: The colours of :data:`OUTLINE_COLOR`, of the default (white) background and of
#: :data:`UNVISITED_GREY` in words, for captions.
OUTLINE_NAME = "blue"
BACKGROUND_NAME = "white"
UNVISITED_GREY_NAME = "grey"

#: Font size of colour-bar ticks and label on a map, points.
CBAR_FONTSIZE = COLORBAR_FONT_SIZE

#: Colour bar of a map: [x0, y0, width, height] in the map's axes fraction.
CBAR_BOUNDS = (1.04, 0.0, 0.06, 1.0)


def _frame(ax) -> None:
    """Equal aspect, no ticks, a thin grey frame on all four sides (the box's extent where
    its edge bins are unvisited)."""
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(True)
        spine.set_linewidth(0.5)
        spine.set_color("0.5")


def _edges(c: np.ndarray) -> np.ndarray:
    """Bin edges of evenly spaced bin centres ``c``."""
    step = float(c[1] - c[0]) if c.size > 1 else 1.0
    return np.concatenate([c - step / 2, [c[-1] + step / 2]])


def field_outline(ax, x, y, mask, color: str = OUTLINE_COLOR, lw: float = 1.0):
    """Outline the bins where ``mask`` holds along their edges (a field of one bin is a
    square around that bin, not a point: a contour of the map itself shrinks to a dot)."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return ax
    k = 8  # sub-steps per bin: the 0.5 level runs within 1/16 of a bin of the bin edge
    padded = np.pad(mask, 1).astype(float)
    ex, ey = _edges(np.asarray(x, dtype=float)), _edges(np.asarray(y, dtype=float))
    sx, sy = float(ex[1] - ex[0]), float(ey[1] - ey[0])
    up = np.kron(padded, np.ones((k, k)))
    fx = ex[0] - sx + (np.arange(up.shape[1]) + 0.5) * sx / k
    fy = ey[0] - sy + (np.arange(up.shape[0]) + 0.5) * sy / k
    ax.contour(fx, fy, up, levels=[0.5], colors=color, linewidths=lw)
    return ax


def map_colorbar(mappable, ax, label: str | None = None):
    """A slim colour bar beside a map, ticked at the map's lowest value and its peak (the top
    tick: the peak, written out) and labelled ``label`` (e.g. the units); returns it."""
    # an inset beside the map's own box (after its equal aspect), not space taken from its
    # grid cell: the bar hugs the map and the map keeps its size
    cax = ax.inset_axes(CBAR_BOUNDS)
    cb = ax.figure.colorbar(mappable, cax=cax)
    lo, hi = mappable.norm.vmin, mappable.norm.vmax
    cb.set_ticks([lo, hi], labels=[f"{lo:.2g}", f"{hi:.2g}"])
    cb.ax.tick_params(labelsize=CBAR_FONTSIZE, length=1.5, pad=1)
    cb.outline.set_linewidth(0.4)
    if label:
        cb.set_label(label, fontsize=CBAR_FONTSIZE, labelpad=2.5)
    return cb


def rate_map(map2d, ax=None, title: str | None = None, outline_fields: bool = False,
             cmap: str = RATE_CMAP, colorbar: bool = False, units: str | None = None,
             unvisited: str | None = None):
    """One rate map (DataArray with dims (y, x)); NaN (unvisited) bins left blank.

    Parameters
    ----------
    map2d : xarray.DataArray, dims (y, x)
    ax : matplotlib Axes, optional
    title : str, optional
    outline_fields : bool
        Outline the bins at or above :data:`~hippo_rep.defaults.PLACE_THRESHOLD` of the peak
        (the place-field threshold) along their edges, in :data:`OUTLINE_COLOR`.
    cmap : str
        Colour map, from the map's lowest to its highest value
        (:data:`~hippo_rep.plotting.style.RATE_CMAP`).
    colorbar : bool
        Add a colour bar (:func:`map_colorbar`) ticked at the lowest value and the peak,
        labelled with ``units`` (default: the map's ``units`` attribute).
    units : str, optional
        Label of the colour bar ("": none, e.g. where the figure's caption gives the units
        of many maps).
    unvisited : str, optional
        Colour of unvisited bins (default: the axes background, white).

    Returns
    -------
    matplotlib Axes
    """
    ax = get_ax(ax)
    z = np.asarray(map2d, dtype=float)
    x = np.asarray(map2d["x"]) if "x" in map2d.coords else np.arange(z.shape[1])
    y = np.asarray(map2d["y"]) if "y" in map2d.coords else np.arange(z.shape[0])
    finite = z[np.isfinite(z)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if hi <= lo:
        hi = lo + 1.0 if lo == 0 else lo + abs(lo) * 1e-6
    mesh = ax.pcolormesh(x, y, np.ma.masked_invalid(z), cmap=cmap, shading="nearest",
                         vmin=lo, vmax=hi)
    if unvisited is not None:
        ax.set_facecolor(unvisited)
    if outline_fields and finite.size:
        peak = float(finite.max())
        if peak > 0:
            field_outline(ax, x, y, np.nan_to_num(z, nan=-np.inf) >= PLACE_THRESHOLD * peak)
    _frame(ax)
    if title:
        ax.set_title(title, fontsize=SMALL_FONT_SIZE)
    if colorbar:
        attrs = getattr(map2d, "attrs", {}) or {}
        map_colorbar(mesh, ax, label=units if units is not None else attrs.get("units"))
    return ax


def autocorrelogram(sac, ax=None, title: str | None = None, colorbar: bool = False):
    """A spatial autocorrelogram (dims (lag_y, lag_x)), Pearson r from −1 to 1 (with
    ``colorbar``, a colour bar of r beside it; maps on this fixed scale can share one)."""
    ax = get_ax(ax)
    z = np.asarray(sac, dtype=float)
    mesh = ax.pcolormesh(np.asarray(sac["lag_x"]), np.asarray(sac["lag_y"]),
                         np.ma.masked_invalid(z), cmap=AUTOCORR_CMAP, vmin=-1, vmax=1,
                         shading="nearest")
    _frame(ax)
    if title:
        ax.set_title(title, fontsize=SMALL_FONT_SIZE)
    if colorbar:
        map_colorbar(mesh, ax, label="Pearson r")
    return ax


def place_map(m, ax=None, title: str | None = None):
    """A place-like rate map as the place figures draw it:
    :data:`~hippo_rep.plotting.style.PLACE_CMAP` (zero light, the peak dark), fields
    outlined, unvisited bins :data:`UNVISITED_GREY`, a colour bar ticked at the lowest value
    and the peak (no units: the caption, :func:`map_caption` with ``outline=True`` and
    ``unvisited=UNVISITED_GREY_NAME``, gives them). Returns the axes."""
    return rate_map(m, ax=ax, outline_fields=True, cmap=PLACE_CMAP, colorbar=True, units="",
                    unvisited=UNVISITED_GREY, title=title)


def map_caption(units: str = "", quantity: str = MAP_QUANTITY, outline: bool = False,
                unvisited: str = BACKGROUND_NAME, autocorrelograms: bool = False) -> str:
    """What the maps of a figure drawn with :func:`rate_map` (``colorbar=True``) show, for
    its caption: the colour bars (``quantity`` in ``units`` from the map's lowest value to
    its peak, the top tick), with ``outline`` the field outlines (bins at or above
    :data:`~hippo_rep.defaults.PLACE_THRESHOLD` of the peak), the colour of unvisited bins
    (``unvisited``, in words) and with ``autocorrelograms`` their scale (Pearson r)."""
    parts = [f"colour bars: {quantity}{f' ({units})' if units else ''} from the map's lowest "
             "value to its peak (top tick)"]
    if outline:
        parts.append(f"{OUTLINE_NAME} outline: bins at or above {PLACE_THRESHOLD:.0%} of the "
                     "peak (the field threshold)")
    parts.append(f"{unvisited} = unvisited")
    if autocorrelograms:
        parts.append("autocorrelograms in Pearson r")
    return "; ".join(parts)
