"""Place-cell panels: the paper's place metric of memory neurons against positional units."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import get_ax
from hippo_rep.plotting.style import TINY_FONT_SIZE

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
    top = 0.0
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
        h, _, _ = ax.hist(vals, bins=PLACE_SCORE_BINS, weights=w, histtype="step",
                          color=POPULATION_COLORS.get(v))
        top = max(top, float(np.max(h)))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, LEGEND_HEADROOM * top or 1.0)  # room for the legend above the bars
    ax.set_xlabel("share of firing mass in the largest field (unitless)")
    ax.set_ylabel("fraction of unit × environment")
    ax.legend(fontsize=TINY_FONT_SIZE, loc="upper left")
    return ax


#: Y-axis top of :func:`field_count_by_population` over its tallest bar (room for the legend).
LEGEND_HEADROOM = 1.4

#: Largest field count given its own bar in :func:`field_count_by_population` (more are pooled).
MAX_FIELDS_SHOWN = 5


def field_count_by_population(n_fields, ax=None, max_fields: int = MAX_FIELDS_SHOWN):
    """Distribution of the number of place fields per unit, one bar group per population.

    Parameters
    ----------
    n_fields : xarray.DataArray, dims (env, unit)
        ``n_fields`` (count, unitless) with coord ``variable`` on ``unit`` (the population);
        every finite (env, unit) is one value.
    ax : matplotlib Axes, optional
    max_fields : int
        Counts of ``max_fields`` or more share the last bar (:data:`MAX_FIELDS_SHOWN`).

    Returns
    -------
    matplotlib Axes
        Grouped bars: fraction of unit x environment with 0, 1, ..., ``max_fields``+ fields,
        one colour per population, with each population's mean count in the legend.
    """
    ax = get_ax(ax)
    variables = list(dict.fromkeys(np.asarray(n_fields["variable"].values).tolist()))
    counts = np.arange(max_fields + 1)
    width = 0.8 / max(len(variables), 1)
    top = 0.0
    for i, v in enumerate(variables):
        vals = np.asarray(n_fields.sel(unit=n_fields["variable"] == v).values,
                          dtype=float).ravel()
        vals = vals[np.isfinite(vals)]
        if not vals.size:
            continue
        frac = np.bincount(np.minimum(vals, max_fields).astype(int),
                           minlength=max_fields + 1) / vals.size
        top = max(top, frac.max())
        label = POPULATION_LABELS.get(v, v).replace("\n", " ")
        ax.bar(counts + (i - (len(variables) - 1) / 2) * width, frac, width=width,
               color=POPULATION_COLORS.get(v),
               label=f"{label}: mean {vals.mean():.2f} (n = {vals.size})")
    ax.set_ylim(0, LEGEND_HEADROOM * top or 1.0)
    ax.set_xticks(counts, [*map(str, counts[:-1]), f"{max_fields}+"])
    ax.set_xlabel("place fields per unit")
    ax.set_ylabel("fraction of unit × environment")
    ax.legend(fontsize=TINY_FONT_SIZE, loc="upper right")
    return ax
