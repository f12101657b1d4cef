"""Panels that compare populations of two models (e.g. TEM beside TEM-t)."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import get_ax
from hippo_rep.plotting.style import MEDIUM_FONT_SIZE, TINY_FONT_SIZE

#: Horizontal jitter of the points of :func:`score_distributions`, in box widths.
JITTER = 0.15
#: Seed of that jitter (display only).
JITTER_SEED = 0


def score_distributions(groups: dict, ax=None, ylabel: str = "score",
                        colors: dict | None = None, title: str | None = None):
    """Box plots of one score for several groups of units, every value drawn as a point.

    Parameters
    ----------
    groups : dict
        Label → values (array-like of any shape: every (env, unit) is one value; NaN, e.g. a
        unit whose score is undefined, is left out and not counted).
    ax : matplotlib Axes, optional
    ylabel : str
        Axis label (name and unit of the score).
    colors : dict, optional
        Label → colour of the points.
    title : str, optional

    Returns
    -------
    matplotlib Axes
        One box per group (median, quartiles, whiskers at 1.5 IQR), x tick labels
        ``label``, ``n = count``, ``median``, ``m`` on four lines (narrow: six groups fit
        side by side in two thirds of a page).
    """
    ax = get_ax(ax)
    colors = colors or {}
    rng = np.random.default_rng(JITTER_SEED)
    data, labels = [], []
    for label, values in groups.items():
        v = np.asarray(values, dtype=float).ravel()
        v = v[np.isfinite(v)]
        data.append(v)
        med = f"{np.median(v):.2f}" if v.size else "–"
        labels.append(f"{label}\nn = {v.size}\nmedian\n{med}")
    pos = np.arange(1, len(data) + 1)
    kept = [i for i, v in enumerate(data) if v.size]
    if kept:
        ax.boxplot([data[i] for i in kept], positions=pos[kept], widths=0.6,
                   showfliers=False, medianprops={"color": "k"})
    for i, (label, v) in enumerate(zip(groups, data, strict=True)):
        ax.plot(pos[i] + rng.uniform(-JITTER, JITTER, v.size), v, ".", ms=1.5, alpha=0.4,
                color=colors.get(label, "0.4"))
    ax.set_xticks(pos, labels, fontsize=TINY_FONT_SIZE)
    ax.set_xlim(0.4, len(data) + 0.6)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=MEDIUM_FONT_SIZE)
    return ax
