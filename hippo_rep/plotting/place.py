"""Place-cell panels: the paper's place metric of memory neurons against positional units."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import get_ax

from .remapping import POPULATION_COLORS, POPULATION_LABELS

#: Histogram bins of :func:`place_score_by_population` (the score lies in [0, 1]).
PLACE_SCORE_BINS = np.linspace(0.0, 1.0, 21)


def place_score_by_population(place_score, ax=None):
    """Distributions of the place metric (largest-field share of firing mass) per population.

    Parameters
    ----------
    place_score : xarray.DataArray, dims (env, unit)
        ``place_score`` with coord ``variable`` on ``unit`` (the population); every
        (env, unit) is one value.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        Normalised histograms (fraction of unit x environment per bin), one per population,
        with each population's median and count in the legend. X: share of firing mass in
        the largest field (unitless, 1 = one field holds everything).
    """
    ax = get_ax(ax)
    variables = list(dict.fromkeys(np.asarray(place_score["variable"].values).tolist()))
    for v in variables:
        vals = np.asarray(place_score.sel(unit=place_score["variable"] == v).values,
                          dtype=float).ravel()
        vals = vals[np.isfinite(vals)]
        if not vals.size:
            continue
        w = np.full(vals.size, 1.0 / vals.size)
        label = POPULATION_LABELS.get(v, v).replace("\n", " ")
        ax.hist(vals, bins=PLACE_SCORE_BINS, weights=w, histtype="stepfilled", alpha=0.35,
                color=POPULATION_COLORS.get(v), label=f"{label}: median "
                f"{np.median(vals):.2f} (n = {vals.size})")
        ax.hist(vals, bins=PLACE_SCORE_BINS, weights=w, histtype="step",
                color=POPULATION_COLORS.get(v))
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of firing mass in the largest field (unitless)")
    ax.set_ylabel("fraction of unit × environment")
    ax.legend(fontsize=5.5, loc="upper left")
    return ax
