"""Panels of rate maps and autocorrelograms (maps indexed [row = y, col = x], y up)."""

from __future__ import annotations

import numpy as np

from hippo_rep.defaults import PLACE_THRESHOLD
from hippo_rep.plotting.axes import get_ax


def rate_map(map2d, ax=None, title: str | None = None, outline_fields: bool = False,
             cmap: str = "viridis"):
    """One rate map (DataArray with dims (y, x)); NaN (unvisited) bins left blank.

    With ``outline_fields``, contours at :data:`~hippo_rep.defaults.PLACE_THRESHOLD` of the
    peak outline the fields.
    """
    ax = get_ax(ax)
    z = np.asarray(map2d, dtype=float)
    x = np.asarray(map2d["x"]) if "x" in map2d.coords else np.arange(z.shape[1])
    y = np.asarray(map2d["y"]) if "y" in map2d.coords else np.arange(z.shape[0])
    ax.pcolormesh(x, y, np.ma.masked_invalid(z), cmap=cmap, shading="nearest")
    if outline_fields and np.isfinite(z).any():
        peak = np.nanmax(z)
        if peak > 0:
            ax.contour(x, y, np.nan_to_num(z, nan=0.0), levels=[PLACE_THRESHOLD * peak],
                       colors="w", linewidths=0.8)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=6)
    return ax


def autocorrelogram(sac, ax=None, title: str | None = None):
    """A spatial autocorrelogram (dims (lag_y, lag_x)), Pearson r from −1 to 1."""
    ax = get_ax(ax)
    z = np.asarray(sac, dtype=float)
    ax.pcolormesh(np.asarray(sac["lag_x"]), np.asarray(sac["lag_y"]), np.ma.masked_invalid(z),
                  cmap="RdBu_r", vmin=-1, vmax=1, shading="nearest")
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=6)
    return ax
