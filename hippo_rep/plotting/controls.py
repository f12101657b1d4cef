"""Panels of the model-grown controls (:mod:`hippo_rep.analysis.controls`)."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import get_ax
from hippo_rep.plotting.style import MEDIUM_FONT_SIZE, TINY_FONT_SIZE

#: Shading of the triad phases that make a lattice of peaks (|psi| < tol) or troughs.
LATTICE_SHADE = "#DDDDDD"


def triad_phases(psi, ax=None, tol: float = 45.0, title: str | None = None):
    """Triad phase psi of every unit, one column of points per group.

    Parameters
    ----------
    psi : xarray.DataArray, dims (group, unit)
        Triad phases in degrees (NaN: no triad, not drawn; counted in the labels).
    ax : matplotlib Axes, optional
    tol : float
        Half-width of the shaded bands around 0 (lattice of peaks) and ±180 degrees (of
        troughs), degrees.
    title : str, optional

    Returns
    -------
    matplotlib Axes
        X: the groups (labelled with the count of finite psi); y: psi in degrees.
    """
    ax = get_ax(ax)
    group = psi.dims[0]
    names = [str(g) for g in psi[group].values]
    values = np.asarray(psi.transpose(group, ...).values, dtype=float).reshape(len(names), -1)
    for lo, hi in ((-tol, tol), (180 - tol, 180), (-180, -180 + tol)):
        ax.axhspan(lo, hi, color=LATTICE_SHADE, zorder=0, lw=0)
    rng = np.random.default_rng(0)  # jitter only
    labels = []
    for i, v in enumerate(values):
        fin = v[np.isfinite(v)]
        ax.scatter(i + rng.uniform(-0.2, 0.2, fin.size), fin, s=4, color="k", zorder=2)
        labels.append(f"{names[i]} ({fin.size}/{v.size})")
    ax.set_xticks(np.arange(len(names)), labels, fontsize=TINY_FONT_SIZE, rotation=45, ha="right")
    ax.set_ylim(-180, 180)
    ax.set_yticks([-180, -90, -45, 0, 45, 90, 180])
    ax.set_ylabel("triad phase ψ (degrees)")
    if title:
        ax.set_title(title, fontsize=MEDIUM_FONT_SIZE)
    return ax
