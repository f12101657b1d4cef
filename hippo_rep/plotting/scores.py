"""Panels of score distributions: observed scores against their shuffle nulls, thresholds and
the fractions classified; and a text panel of one unit's scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hippo_rep.plotting.axes import LEGEND_DROP_PT, get_ax, legend_below, wrap_title
from hippo_rep.plotting.style import (
    BLACK,
    BLUE,
    BLUISH_GREEN,
    GREY,
    MEDIUM_FONT_SIZE,
    ORANGE,
    REDDISH_PURPLE,
    SKY_BLUE,
    TINY_FONT_SIZE,
    VERMILLION,
)

#: Histogram bins of a score distribution.
N_BINS = 30

#: Colours of the observed scores and of the shuffle null (Okabe-Ito).
OBSERVED_COLOR = BLUE
NULL_COLOR = GREY

#: The y axis extends to this multiple of the tallest bar.
HEADROOM = 1.15

#: Characters per line of the note of a panel without a finite score
#: (:func:`score_histogram`'s ``empty_reason``), by default: inside a panel half a double
#: column wide at :data:`~hippo_rep.plotting.style.MEDIUM_FONT_SIZE`.
EMPTY_NOTE_CHARS = 42

#: Line styles of threshold lines, by role.
THRESHOLD_STYLE = {
    "null": dict(color=VERMILLION, ls="-", lw=1.0),
    "rule": dict(color=BLUISH_GREEN, ls="--", lw=1.0),
    "floor": dict(color=BLACK, ls=":", lw=1.0),
}


def _finite(values) -> np.ndarray:
    a = np.asarray(values, dtype=float).ravel()
    return a[np.isfinite(a)]


def axis_label(da, fallback: str) -> str:
    """``"long name (units)"`` of a DataArray's attrs (units "1" shown as "unitless")."""
    attrs = getattr(da, "attrs", {}) or {}
    units = attrs.get("units", "1")
    units = "unitless" if str(units) in ("1", "") else units
    return f"{fallback} ({units})"


def score_histogram(observed, null=None, ax=None, thresholds: Sequence[tuple] = (),
                    notes: Sequence[str] = (), xlabel: str | None = None,
                    null_label: str = "shuffle null", title: str | None = None,
                    bins: int = N_BINS, clip_to: tuple[float, float] | None = None,
                    empty_reason: str | None = None, legend: bool = True,
                    empty_chars: int = EMPTY_NOTE_CHARS):
    """Distribution of a score (any dims, pooled) against its shuffle null.

    Both are drawn as fractions of their own finite values, on shared bins, so a null with
    many shuffles per unit is comparable to the observed scores.

    Parameters
    ----------
    observed : array-like or xarray.DataArray
        Observed scores (e.g. gridness_60 (env, unit)); NaN dropped.
    null : array-like or xarray.DataArray, optional
        The null: per-unit null quantiles (e.g. ``gridness_60_null_q`` at one quantile) or
        the full null distribution (env, unit, shuffle); NaN dropped.
    ax : matplotlib Axes, optional
    thresholds : sequence of (value, label, role)
        Vertical lines; role is a key of :data:`THRESHOLD_STYLE` ("null", "rule", "floor").
        NaN values are not drawn.
    notes : sequence of str
        Lines written under the title, above the axes (e.g. the fractions classified).
    xlabel : str, optional
        Axis label with units (default from ``observed.attrs``).
    null_label, title : str
        Legend label of the null; panel title.
    bins : int
        Number of histogram bins.
    clip_to : (float, float), optional
        Draw values outside this range in its edge bins, and say how many (e.g. the
        "deepmind" gridness of near-empty maps, which its ring-variance normalisation can
        push far beyond the [-2, 2] of Pearson-based scores).
    empty_reason : str, optional
        Why no observed score is finite, written in the panel when none is (e.g. spatial
        information of units with signed activity); the panel then has no ticks.
    legend : bool
        Draw a legend below the axes, the counts in its labels; False: no legend, the
        histograms labelled without counts (one legend can serve several panels) and the
        counts written as the last note.
    empty_chars : int
        Characters per line of the note of a panel without a finite score (it stays inside
        the panel: fewer for a narrow one).

    Returns
    -------
    matplotlib Axes
        Y axis: fraction of values per bin.
    """
    ax = get_ax(ax)
    n_obs = int(np.asarray(observed).size)
    obs = _finite(observed)
    nul = _finite(null) if null is not None else np.empty(0)
    notes = list(notes)
    if clip_to is not None:
        lo_c, hi_c = clip_to
        for name, x in (("observed", obs), ("null", nul)):
            k = int(((x < lo_c) | (x > hi_c)).sum())
            if k:
                notes.append(f"{k} {name} value(s) outside [{lo_c:g}, {hi_c:g}] drawn at "
                             "the edges")
        obs, nul = np.clip(obs, lo_c, hi_c), np.clip(nul, lo_c, hi_c)
    both = np.concatenate([obs, nul])
    top = 0.0
    if both.size:
        lo, hi = float(both.min()), float(both.max())
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, bins + 1)
        if obs.size:
            h, _, _ = ax.hist(obs, bins=edges, weights=np.full(obs.size, 1 / obs.size),
                              color=OBSERVED_COLOR, alpha=0.7,
                              label=f"observed (n = {obs.size})" if legend else "observed")
            top = max(top, float(np.max(h)))
        if nul.size:
            h, _, _ = ax.hist(nul, bins=edges, weights=np.full(nul.size, 1 / nul.size),
                              histtype="step", color=NULL_COLOR, lw=1.2,
                              label=f"{null_label} (n = {nul.size})" if legend else null_label)
            top = max(top, float(np.max(h)))
    if not legend and obs.size:
        notes.append(f"n = {obs.size} observed" + (f", {nul.size} null" if nul.size else ""))
    if not obs.size:  # e.g. spatial information of units with negative activity
        why = f"\n{empty_reason}" if empty_reason else ""
        note = f"not drawn: no finite score ({n_obs} undefined){why}"
        ax.text(0.5, 0.5, wrap_title(note, empty_chars),
                transform=ax.transAxes, ha="center", va="center", fontsize=MEDIUM_FONT_SIZE,
                bbox=dict(boxstyle="round", fc="#F2F2F2", ec="0.6", lw=0.6))
        ax.set_xticks([])
        ax.set_yticks([])
    for value, label, role in thresholds:
        if value is not None and np.isfinite(value):
            ax.axvline(value, label=label, **THRESHOLD_STYLE[role])
    ax.set_xlabel(xlabel or axis_label(observed, "score"))
    if obs.size:
        ax.set_ylabel("fraction of values per bin")
    if top > 0:
        ax.set_ylim(0, HEADROOM * top)
    lines = ([title] if title else []) + list(notes)
    if lines:
        ax.set_title("\n".join(lines), fontsize=MEDIUM_FONT_SIZE)
    if legend and ax.get_legend_handles_labels()[0]:
        # below the axes, clear of the bars and the threshold lines (inside, a threshold
        # line ran through the legend's text)
        legend_below(ax, LEGEND_DROP_PT, ncol=2, fontsize=TINY_FONT_SIZE, frameon=False)
    return ax


def scores_text(scores: Mapping[str, object], ax=None, title: str | None = None):
    """A text panel listing one unit's scores (``name: value`` lines, no axes drawn).

    Parameters
    ----------
    scores : mapping
        Name (with its units) → value; floats are shown with 3 significant digits.
    ax : matplotlib Axes, optional
    title : str, optional
    """
    ax = get_ax(ax)
    lines = []
    for k, v in scores.items():
        if isinstance(v, (float, np.floating)):
            v = "NaN" if not np.isfinite(v) else f"{float(v):.3g}"
        lines.append(f"{k}: {v}")
    ax.text(0.0, 1.0, "\n".join(lines), transform=ax.transAxes, va="top", ha="left",
            fontsize=MEDIUM_FONT_SIZE, family="monospace")
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=MEDIUM_FONT_SIZE)
    return ax


#: Font size of the counts written beside the bars of :func:`class_fraction_bars`, points.
BAR_LABEL_FONTSIZE = TINY_FONT_SIZE



def class_fraction_bars(fractions, ax=None, title: str | None = None,
                        colors: dict | None = None):
    """Fractions classified per class and population, as bars, with the counts classified
    in a column right of the axes, one line per class.

    Parameters
    ----------
    fractions : xarray.Dataset
        :func:`hippo_rep.schema.class_fractions`: ``numerator``, ``denominator``
        and ``fraction``, dims (population, cell_class).
    ax : matplotlib Axes, optional
    title : str, optional
    colors : dict, optional
        Population → bar colour (default: a fixed Okabe-Ito cycle).

    Returns
    -------
    matplotlib Axes
        X axis: fraction classified (0–1); one group of bars per class, one bar per
        population. Right of the axes, level with each class, the count classified of
        every population in its bar's colour and in legend order (``k``, or ``k/n`` where a
        population's denominator differs between classes; "–" where it is 0; "n/a" where it
        is NaN, a class that population's analysis does not have): one line per
        class, so counts never pile up however thin the bars. The legend gives each
        population's denominator (``name (n = N)``) where it is the same in every class.
    """
    from matplotlib.offsetbox import AnnotationBbox, HPacker, TextArea

    ax = get_ax(ax)
    pop_dim, cls_dim = fractions["fraction"].dims
    pops = [str(p) for p in fractions[pop_dim].values]
    classes = [str(c) for c in fractions[cls_dim].values]
    k = np.asarray(fractions["numerator"].values)
    n = np.asarray(fractions["denominator"].values)
    frac = np.asarray(fractions["fraction"].values, dtype=float)
    height = 0.8 / max(len(pops), 1)
    cycle = (OBSERVED_COLOR, ORANGE, BLUISH_GREEN, REDDISH_PURPLE, SKY_BLUE, VERMILLION)
    color = [(colors or {}).get(pop, cycle[i % len(cycle)]) for i, pop in enumerate(pops)]
    # a class an analysis does not have (e.g. one written before the class existed): NaN
    measured = np.isfinite(n.astype(float))
    same_n = [np.unique(n[i][measured[i]]).size == 1 for i in range(len(pops))]
    y0 = np.arange(len(classes))
    for i, pop in enumerate(pops):
        y = y0 + (i - (len(pops) - 1) / 2) * height
        label = (f"{pop} (n = {int(n[i][measured[i]][0])})" if same_n[i] and measured[i].any()
                 else pop)
        ax.barh(y, np.nan_to_num(frac[i]), height=height * 0.9, color=color[i], label=label)
    for c in range(len(classes)):
        parts = [TextArea("n/a" if not measured[i][c] else "–" if n[i][c] == 0
                          else f"{int(k[i][c])}" if same_n[i]
                          else f"{int(k[i][c])}/{int(n[i][c])}",
                          textprops=dict(color=color[i], fontsize=BAR_LABEL_FONTSIZE,
                                         fontweight="bold"))
                 for i in range(len(pops))]
        box = AnnotationBbox(HPacker(children=parts, pad=0, sep=5, align="center"),
                             (1.0, y0[c]), xycoords=("axes fraction", "data"),
                             box_alignment=(0.0, 0.5), xybox=(3, 0), boxcoords="offset points",
                             frameon=False, pad=0)
        ax.add_artist(box)
    ax.set_yticks(y0, classes)
    ax.set_ylim(len(classes) - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.set_xlabel("fraction classified (of the unit × environment pairs that exist)")
    legend_below(ax, LEGEND_DROP_PT, ncol=min(len(pops), 2), fontsize=TINY_FONT_SIZE, frameon=False,
                 title="counts right of the bars, in this order", title_fontsize=TINY_FONT_SIZE)
    if title:
        ax.set_title(title, fontsize=MEDIUM_FONT_SIZE)
    return ax


def count_distribution(values, ax=None, xlabel: str = "count", title: str | None = None,
                       color: str = OBSERVED_COLOR):
    """Fraction of values at each integer count (e.g. place fields per map); NaN dropped.

    Parameters
    ----------
    values : array-like or xarray.DataArray
        Integer counts, any dims (pooled).
    ax : matplotlib Axes, optional
    xlabel, title : str
    color : str

    Returns
    -------
    matplotlib Axes
        One bar per count from the smallest to the largest, height the fraction of values.
    """
    ax = get_ax(ax)
    v = _finite(values).astype(int)
    if v.size:
        ks = np.arange(v.min(), v.max() + 1)
        frac = np.bincount(v - v.min(), minlength=ks.size) / v.size
        ax.bar(ks, frac, color=color, alpha=0.8, label=f"n = {v.size}")
        ax.set_xticks(ks)
        ax.legend(loc="upper right", fontsize=TINY_FONT_SIZE)
    else:
        ax.text(0.5, 0.5, "no finite value", transform=ax.transAxes, ha="center",
                va="center", fontsize=MEDIUM_FONT_SIZE)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of values")
    if title:
        ax.set_title(title, fontsize=MEDIUM_FONT_SIZE)
    return ax
