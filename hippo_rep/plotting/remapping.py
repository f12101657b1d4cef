"""Panels of remapping between environments (:mod:`hippo_rep.analysis.remapping` outputs)."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import LEGEND_DROP_PT, get_ax, legend_below
from hippo_rep.plotting.style import (
    BLUE,
    BLUISH_GREEN,
    MEDIUM_FONT_SIZE,
    MIN_FONT_SIZE,
    REDDISH_PURPLE,
    REFERENCE_LINE_WIDTH,
    SKY_BLUE,
    SMALL_FONT_SIZE,
    TINY_FONT_SIZE,
    VERMILLION,
)
from hippo_rep.schema import FAM_ACTIVITY, G_PI, MEMORY_ACTIVITY, G, P

#: Display names of the populations (recording variables), two short lines each (tick labels
#: of three populations side by side in a third of a page stay apart).
POPULATION_LABELS = {G: "positional\ng", G_PI: "path int.\ng_pi",
                     MEMORY_ACTIVITY: "memory\nneurons", FAM_ACTIVITY: "FAM\nslots",
                     P: "TEM\np"}

#: Colours of the populations (Okabe-Ito).
POPULATION_COLORS = {G: BLUE, G_PI: SKY_BLUE, MEMORY_ACTIVITY: REDDISH_PURPLE,
                     FAM_ACTIVITY: BLUISH_GREEN, P: VERMILLION}

#: Horizontal jitter of the per-unit points in :func:`remap_by_population`, in box widths.
JITTER = 0.15

#: Seed of that jitter (drawing only; no result depends on it).
JITTER_SEED = 0

#: Up to this many environment pairs, :func:`tem_test` labels each pair and its p-value.
MAX_LABELLED_PAIRS = 10

#: Significance level of the TEM test summarised by :func:`tem_test`.
TEM_ALPHA = 0.05

#: Largest number of points drawn by :func:`pair_scatter` (a random subset beyond it).
MAX_SCATTER_POINTS = 20000

#: Opacity of :func:`pair_scatter`'s points: (up to DENSE_POINTS points, beyond).
SCATTER_ALPHA = (0.7, 0.2)

#: Number of points beyond which :func:`pair_scatter` draws them fainter.
DENSE_POINTS = 2000

#: Size of :func:`pair_scatter`'s legend markers, in multiples of its points.
SCATTER_LEGEND_MARKERSCALE = 4.0

#: Font size of the population tick labels, points.
TICK_FONTSIZE = SMALL_FONT_SIZE

#: Top of the y axis of :func:`pair_structure_test` (its values reach 1).
PAIR_TOP = 1.1

#: Drop of :func:`pair_structure_test`'s legend below the axes, under its four-line tick
#: labels, points.
PAIR_LEGEND_DROP_PT = 38.0


def _population_ticks(ax, labels) -> None:
    ax.set_xticks(range(len(labels)), labels, fontsize=TICK_FONTSIZE)


def _label(v: str) -> str:
    return POPULATION_LABELS.get(v, v)


def remap_by_population(remap_corr, ax=None):
    """Per-unit spatial correlation across environments, one box per population.

    Parameters
    ----------
    remap_corr : xarray.DataArray, dims (unit, env_pair)
        Pearson r of each unit's node rates between two environments, with coord
        ``variable`` on ``unit`` (the population); every (unit, pair) is one point.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        Y axis: Pearson r (unitless); each population's count and median in its tick
        label.
    """
    ax = get_ax(ax)
    rng = np.random.default_rng(JITTER_SEED)
    variables = list(dict.fromkeys(np.asarray(remap_corr["variable"].values).tolist()))
    data, labels = [], []
    for i, v in enumerate(variables):
        vals = np.asarray(remap_corr.sel(unit=remap_corr["variable"] == v).values,
                          dtype=float).ravel()
        vals = vals[np.isfinite(vals)]
        data.append(vals)
        med = f"{float(np.median(vals)):.2f}" if vals.size else "–"
        labels.append(f"{_label(v)}\nn = {vals.size}\nmedian\n{med}")
        color = POPULATION_COLORS.get(v)
        ax.scatter(i + rng.uniform(-JITTER, JITTER, vals.size), vals, s=3, alpha=0.5,
                   color=color, lw=0, rasterized=True)
    ax.boxplot([d if d.size else [np.nan] for d in data], positions=range(len(data)),
               widths=0.5, showfliers=False, medianprops=dict(color="k"))
    ax.axhline(0, color="0.5", lw=REFERENCE_LINE_WIDTH)
    _population_ticks(ax, labels)
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel("spatial correlation across envs\n(Pearson r, unitless)")
    return ax


def pv_by_population(pv_corr, ax=None):
    """Population-vector correlation across environments: mean over environment pairs
    (bar) and each pair (points), per population.

    Parameters
    ----------
    pv_corr : xarray.DataArray, dims (population, env_pair)
        Mean over common nodes of the across-unit Pearson r.
    ax : matplotlib Axes, optional
    """
    ax = get_ax(ax)
    pops = np.asarray(pv_corr["population"].values).tolist()
    for i, v in enumerate(pops):
        vals = np.asarray(pv_corr.sel(population=v).values, dtype=float).ravel()
        fin = vals[np.isfinite(vals)]
        mean = float(fin.mean()) if fin.size else np.nan
        ax.bar(i, mean, width=0.6, color=POPULATION_COLORS.get(v, "0.6"), alpha=0.8)
        ax.scatter(np.full(fin.size, i), fin, s=6, color="k", zorder=3)
    ax.axhline(0, color="0.5", lw=REFERENCE_LINE_WIDTH)
    _population_ticks(ax, [_label(v) for v in pops])
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel("population-vector correlation\n(Pearson r, unitless)")
    return ax


def tem_test(tem, ax=None, legend_columns: int = 1):
    """The TEM test across environment pairs: observed correlation against its null.

    Parameters
    ----------
    tem : xarray.Dataset
        With ``tem_corr``, ``tem_null_mean``, ``tem_null_q95``, ``tem_p`` (env_pair) and
        coords ``env_a``, ``env_b``.
    ax : matplotlib Axes, optional
    legend_columns : int
        Columns of the legend, which is below the axes.

    Returns
    -------
    matplotlib Axes
        One column per pair (ticks ``a–b`` up to :data:`MAX_LABELLED_PAIRS` pairs, else
        the pair's index); y in Pearson r (unitless). The observed correlation filled
        where p < :data:`TEM_ALPHA`, open elsewhere (p undefined included); the legend,
        below the axes, gives the number of pairs with p < :data:`TEM_ALPHA`. Nothing is
        written over the points.
    """
    ax = get_ax(ax)
    n = tem.sizes["env_pair"]
    x = np.arange(n)
    corr = np.asarray(tem["tem_corr"].values, dtype=float)
    p = np.asarray(tem["tem_p"].values, dtype=float)
    fin = np.isfinite(p)
    low = fin & (p < TEM_ALPHA)
    color = POPULATION_COLORS[MEMORY_ACTIVITY]
    if low.any():
        ax.plot(x[low], corr[low], "o", color=color, ms=4,
                label=f"observed: p < {TEM_ALPHA:g} in {int(low.sum())}/{int(fin.sum())} pairs")
    if (~low).any():
        ax.plot(x[~low], corr[~low], "o", color=color, mfc="none", ms=4,
                label=f"observed: p ≥ {TEM_ALPHA:g}" if low.any() else
                f"observed: p < {TEM_ALPHA:g} in 0/{int(fin.sum())} pairs")
    ax.plot(x, tem["tem_null_mean"].values, "_", color="0.4", ms=8, mew=1.5,
            label="null mean")
    ax.plot(x, tem["tem_null_q95"].values, "_", color=VERMILLION, ms=8, mew=1.5,
            label="null 95th pct")
    if n <= MAX_LABELLED_PAIRS:
        ax.set_xticks(x, [f"{a}–{b}" for a, b in zip(tem["env_a"].values, tem["env_b"].values,
                                                    strict=True)])
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(-1.05, 1.05)
    ax.axhline(0, color="0.5", lw=REFERENCE_LINE_WIDTH)
    # short: the panel is in the figure's last column
    ax.set_xlabel("environment pair (a–b)" if n <= MAX_LABELLED_PAIRS
                  else "environment pair (index)")
    ax.set_ylabel("TEM grid–place correlation\n(Pearson r, unitless)")
    legend_below(ax, LEGEND_DROP_PT, ncol=legend_columns, fontsize=TINY_FONT_SIZE,
                 frameon=False, columnspacing=1.0, borderaxespad=0)
    return ax


#: Significance level summarised by :func:`pair_structure_test`.
PAIR_ALPHA = 0.05

#: Why per-unit correlations are no test of the grid claim (written on that panel).
PER_UNIT_NOTE = ("r ≈ 0 for grid maps that translate between environments: each map "
                 "moves, the pairs keep their offsets (see a, b)")


def pair_structure_test(pair, ax=None, stat: str = "pair_structure", legend_columns: int = 1):
    """Cell-pair structure across environments per population, against its null.

    Parameters
    ----------
    pair : xarray.Dataset
        ``{stat}_r`` (or ``pair_shift_match``), ``{stat}_p``, ``{stat}_null_mean`` and, for
        the correlation, ``{stat}_null_q95``, dims (population, env_pair).
    ax : matplotlib Axes, optional
    stat : {"pair_structure", "pair_shift"}
        The correlation of the unit x unit correlation matrices, or the shift-tolerant
        fraction of unit pairs keeping their cross-correlogram offset.
    legend_columns : int
        Columns of the legend, which is below the tick labels (one entry a row by default;
        as many as it has entries for one row under a wide, low panel).

    Returns
    -------
    matplotlib Axes
        One column per population: every environment pair's observed value (points), its
        null mean (grey bars) and, for the correlation, the null's 95th percentile (red
        bars); the number of pairs with p < :data:`PAIR_ALPHA` in each population's tick
        label.
    """
    ax = get_ax(ax)
    obs_name = "pair_structure_r" if stat == "pair_structure" else "pair_shift_match"
    pops = np.asarray(pair["population"].values).tolist()
    rng = np.random.default_rng(JITTER_SEED)
    labels = []
    for i, v in enumerate(pops):
        sub = pair.sel(population=v)
        obs = np.asarray(sub[obs_name].values, dtype=float)
        null = np.asarray(sub[f"{stat}_null_mean"].values, dtype=float)
        p = np.asarray(sub[f"{stat}_p"].values, dtype=float)
        fin = np.isfinite(obs)
        ax.scatter(i + rng.uniform(-JITTER, JITTER, int(fin.sum())), obs[fin], s=8,
                   color=POPULATION_COLORS.get(v, "0.3"), zorder=3,
                   label="observed (each env pair)" if i == 0 else None)
        ax.hlines(np.nanmean(null), i - 0.3, i + 0.3, color="0.4", lw=2,
                  label="null mean (units relabelled)" if i == 0 else None)
        if f"{stat}_null_q95" in sub:
            ax.hlines(np.nanmean(sub[f"{stat}_null_q95"].values), i - 0.3, i + 0.3,
                      color=VERMILLION, lw=1.2, label="null 95th pct" if i == 0 else None)
        pf = p[np.isfinite(p)]
        labels.append(f"{_label(v)}\np<{PAIR_ALPHA:g}:\n{int((pf < PAIR_ALPHA).sum())}/"
                      f"{pf.size}")
    _population_ticks(ax, labels)
    ax.set_xlim(-0.6, len(pops) - 0.4)
    if stat == "pair_structure":
        ax.set_ylim(-0.3, PAIR_TOP)
        ax.set_ylabel("r of unit × unit correlation\nmatrices, env a vs b (unitless)")
    else:
        ax.set_ylim(0, PAIR_TOP)
        ax.set_ylabel("unit pairs keeping their\ncross-correlogram offset (fraction)")
    ax.axhline(0, color="0.5", lw=REFERENCE_LINE_WIDTH)
    # below the tick labels: inside, the legend lay over the values wherever they fell
    # between 0 and 1
    legend_below(ax, PAIR_LEGEND_DROP_PT, ncol=legend_columns, fontsize=MIN_FONT_SIZE,
                 frameon=False, columnspacing=0.8, handlelength=1.2, borderaxespad=0)
    return ax


def pair_scatter(corr_a, corr_b, population: str, ax=None, title: str | None = None,
                 legend_columns: int = 1):
    """Unit-pair correlations in one environment against another (one point per pair).

    Parameters
    ----------
    corr_a, corr_b : numpy.ndarray, (unit, unit)
        The population's unit x unit correlation matrices in env a and env b (NaN =
        undefined); the pairs i < j are drawn.
    population : str
        Recording variable (colour and label).
    ax : matplotlib Axes, optional
    title : str, optional
    legend_columns : int
        Columns of the legend (one population a row by default).

    Returns
    -------
    matplotlib Axes
        Axes in Pearson r (unitless); below them (the points may fill every corner of the
        axes) a legend of every population drawn in the axes so far, each with the
        correlation of all its pairs (call it once per population on the same axes).
    """
    ax = get_ax(ax)
    iu, ju = np.triu_indices(np.asarray(corr_a).shape[0], 1)
    x, y = np.asarray(corr_a)[iu, ju], np.asarray(corr_b)[iu, ju]
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    r = (f"r = {float(np.corrcoef(x, y)[0, 1]):.2f}"
         if x.size >= 3 and np.std(x) > 0 and np.std(y) > 0 else "r undefined")
    if x.size > MAX_SCATTER_POINTS:
        keep = np.random.default_rng(JITTER_SEED).choice(x.size, MAX_SCATTER_POINTS,
                                                         replace=False)
        x, y = x[keep], y[keep]
    alpha = SCATTER_ALPHA[0] if x.size <= DENSE_POINTS else SCATTER_ALPHA[1]
    ax.scatter(x, y, s=2, alpha=alpha, lw=0, color=POPULATION_COLORS.get(population, "0.3"),
               rasterized=True, label=f"{_label(population).replace(chr(10), ' ')}: {r}")
    key = legend_below(ax, LEGEND_DROP_PT, ncol=legend_columns, fontsize=SMALL_FONT_SIZE,
                       frameon=False, borderaxespad=0, handletextpad=0.2,
                       markerscale=SCATTER_LEGEND_MARKERSCALE)
    for handle in key.legend_handles:  # the points drawn faint, their key not
        handle.set_alpha(1.0)
    ax.set_xlim(-1.05, 1.05)
    ax.set_ylim(-1.05, 1.05)
    # short: the widest label of the panel (a longer one ran past the figure's right edge
    # when the panel is in the last column)
    ax.set_xlabel("pair r, env a (unitless)")
    ax.set_ylabel("pair r, env b (unitless)")
    if title:
        ax.set_title(title, fontsize=MEDIUM_FONT_SIZE)
    return ax
