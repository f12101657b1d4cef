"""Scores against their shuffle nulls: the ``scores`` figure.

Distributions of gridness-60 and spatial information against their nulls, with the
classification thresholds and the fractions classified, one row per population; more than
:data:`FULL_SCORE_PANELS` populations share their legends and fit a page up to
:data:`MAX_SCORE_ROWS`. Panels: :mod:`hippo_rep.plotting.scores`.
"""

from __future__ import annotations

import numpy as np

from hippo_rep.analysis.classify import (
    GRID_MIN_SCORE,
    GRID_QUANTILE,
    PLACE_N_FIELDS,
    PLACE_QUANTILE,
)
from hippo_rep.defaults import GRID_THRESHOLD
from hippo_rep.figures._common import _attr, _label_panels, _size, _two_lines
from hippo_rep.figures.inputs import FigureInputs
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import LEGEND_DROP_PT, figure_title, legend_below, wrap_title
from hippo_rep.plotting.scores import EMPTY_NOTE_CHARS, axis_label, score_histogram
from hippo_rep.plotting.style import (
    DEFAULT_COLUMN,
    FONT_SIZE,
    FULL_WIDTH,
    MAX_HEIGHT,
    SMALL_FONT_SIZE,
    TINY_FONT_SIZE,
    column_width,
    new_figure,
)
from hippo_rep.schema import (
    IS_BAND,
    IS_GRID,
    IS_GRID_THRESHOLD,
    IS_PLACE,
    IS_SQUARE,
    IS_TWO_WAVE,
    MEMORY_ACTIVITY,
    G,
    P,
    fraction_text,
    place_population,
)

#: Populations of the ``scores`` figure, one row each: (recording variable, row label); the
#: second row is the model's place-like population (TEM-t's memory neurons or TEM's p).
SCORE_POPULATIONS = ((G, "positional units g"), (MEMORY_ACTIVITY, "memory neurons"),
                     (P, "TEM grounded locations p"))


#: Range of the gridness histograms of the ``scores`` figure ("deepmind" scores of near-empty
#: shuffled memory-neuron maps reached 9.4 on the shipped data: its ring correlations are
#: divided by the ring variance of the unrotated autocorrelogram plus 1e-5, not by both).
GRIDNESS_SHOWN = (-2.0, 2.0)


def _null_of(ds, score: str, quantile: float):
    """(null values, legend label): the full null when kept, else the per-unit quantile."""
    if f"{score}_null" in ds:
        return ds[f"{score}_null"], "shuffle null (all shuffles)"
    q = ds[f"{score}_null_q"].sel(quantile=quantile, method="nearest")
    return q, f"null {quantile:.0%} quantile per unit"


#: Height of a panel of the ``scores`` figure in a single column (its title, notes and
#: legend below it included), inches: two populations' four panels fit a page
#: (:data:`~hippo_rep.plotting.style.MAX_HEIGHT`).
SCORE_PANEL_HEIGHT_SINGLE = 2.25
#: Height of a panel that only says why it is empty, as a fraction of a full one.
EMPTY_PANEL_HEIGHT = 0.85
#: Up to this many populations, every panel of the ``scores`` figure has its own legend and
#: states the classification criteria (at single width, one panel a row). With more, each
#: population is a row of two panels (gridness, spatial information) at both widths, the
#: panels of a column share one legend below it, the criteria are written once in the
#: caption and the rows shrink (to :data:`SCORE_ROW_MIN_HEIGHT`) so that the figure fits a
#: page (:data:`~hippo_rep.plotting.style.MAX_HEIGHT`): up to :data:`MAX_SCORE_ROWS`
#: populations.
FULL_SCORE_PANELS = 2
#: Height of a row of two panels in the ``scores`` figure of more than
#: :data:`FULL_SCORE_PANELS` populations (title and notes above, tick labels below
#: included), inches: at most (first), at least (second).
SCORE_ROW_HEIGHT = 2.2
SCORE_ROW_MIN_HEIGHT = 1.55
#: Height of what that figure adds to its rows (the caption above, the legends below),
#: inches, by column width.
SCORE_FRAME_HEIGHT = {"double": 1.3, "single": 1.7}
#: Height left free below a page (:data:`~hippo_rep.plotting.style.MAX_HEIGHT`) by that
#: figure, inches: its saved box may be a little taller than its set size.
SCORE_PAGE_SPARE = 0.1
#: Populations of the ``scores`` figure that fit a page at either width (rows of
#: :data:`SCORE_ROW_MIN_HEIGHT`; 5).
MAX_SCORE_ROWS = int(min((MAX_HEIGHT - SCORE_PAGE_SPARE - frame) / SCORE_ROW_MIN_HEIGHT
                         for frame in SCORE_FRAME_HEIGHT.values()))
#: Characters per line of a legend label below a column of that figure at single width
#: (half the column), and of its panels' titles and notes.
SCORE_LEGEND_CHARS = 26
SCORE_TITLE_CHARS = 26
#: Characters per line of the note in an empty panel of that figure at single width.
SCORE_NOTE_CHARS = 22


def _scores_layout(pops, width: str):
    """(fig, axes (population, score)) of the ``scores`` figure: :data:`FULL_SCORE_PANELS`
    populations or fewer as ever (single width: one panel a row, an empty spatial
    information panel shorter), more one row each, rows as tall as a page allows."""
    n = len(pops)
    if n > FULL_SCORE_PANELS:
        frame = SCORE_FRAME_HEIGHT[width]
        room = MAX_HEIGHT - SCORE_PAGE_SPARE - frame
        row = min(SCORE_ROW_HEIGHT, max(SCORE_ROW_MIN_HEIGHT, room / n))
        fig = new_figure(column_width(width), frame + n * row)
        return fig, fig.subplots(n, 2, squeeze=False)
    if width == "single":
        heights = [h for sub, _, _ in pops for h in (
            1.0, 1.0 if np.isfinite(sub["spatial_info"].values).any() else EMPTY_PANEL_HEIGHT)]
        fig = new_figure(column_width(width), SCORE_PANEL_HEIGHT_SINGLE * sum(heights) + 0.5)
        return fig, fig.subplots(2 * n, 1, height_ratios=heights).reshape(n, 2)
    fig = new_figure(FULL_WIDTH, 3.3 * n)
    return fig, fig.subplots(n, 2, squeeze=False)


@register("scores")
def scores_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Distributions of gridness-60 and spatial information against their shuffle nulls,
    with the classification thresholds and the fractions classified
    (:func:`~hippo_rep.analysis.class_fractions`: over the (unit, environment) pairs that
    exist), for positional units and memory neurons (a session's analysis: each of its
    populations; more than :data:`FULL_SCORE_PANELS` share their legends, and fit a page up
    to :data:`MAX_SCORE_ROWS`)."""
    ds = inputs.need("analysis", "gridness_60", "gridness_60_null_q", "spatial_info",
                     "spatial_info_null_q", "rate_map", IS_GRID, IS_GRID_THRESHOLD, IS_PLACE)
    fr = ds.hippo.summary()
    held = ds.hippo.populations
    pops = [(ds.hippo.population(v), label, v) for v, label in SCORE_POPULATIONS
            if v in held and (v == G or v == place_population(held))]
    if not pops:  # a session's analysis: its populations, by their names
        pops = [(ds.hippo.population(v), f"population {v!r}", v) for v in held]
    gq = _attr(ds, "classify_grid_quantile", GRID_QUANTILE)
    gt = _attr(ds, "classify_grid_threshold", GRID_THRESHOLD)
    floor = _attr(ds, "classify_grid_min_score", GRID_MIN_SCORE)
    pq = _attr(ds, "classify_place_quantile", PLACE_QUANTILE)
    nf = np.asarray(ds.attrs.get("classify_place_n_fields", PLACE_N_FIELDS)).ravel()
    fields = f"{int(nf[0])}–{int(nf[-1])} fields" if nf.size else "fields"
    full = len(pops) <= FULL_SCORE_PANELS  # else: legends shared, criteria in the caption
    grid_rule = f"hexagonal, > own null {gq:.0%}, > {floor:g}"
    place_rule = f"> own null {pq:.0%}, {fields}"
    fig, axes = _scores_layout(pops, width)
    for i, (sub, label, pop) in enumerate(pops):
        # which population a panel shows: in its title, or (a row per population) once a
        # row, in its y label
        titles = (f"{label}: gridness", f"{label}: spatial information") if full else (
            None, None)
        wave_notes = [f"{name} {float(fr['fraction'].sel(population=pop, cell_class=c)):.0%}"
                      for c, name in ((IS_TWO_WAVE, "two-wave"), (IS_BAND, "band"),
                                      (IS_SQUARE, "square")) if c in fr["cell_class"]]
        if wave_notes and full:
            n_pairs = int(fr["denominator"].sel(population=pop).isel(cell_class=0))
            wave_notes[-1] += f" (of {n_pairs})"
        null, null_label = _null_of(sub, "gridness_60", gq)
        q = sub["gridness_60_null_q"].sel(quantile=gq, method="nearest")
        score_histogram(
            sub["gridness_60"], null, ax=axes[i, 0], null_label=null_label,
            thresholds=[(_median(q), f"null {gq:.0%} quantile (median over units)", "null"),
                        (gt, f"rule of thumb {gt:g}", "rule"),
                        (floor, f"floor {floor:g}", "floor")],
            notes=[f"grid{f' ({grid_rule})' if full else ''}: "
                   f"{fraction_text(fr, pop, IS_GRID)}",
                   f"{'gridness-60' if full else 'g60'} > {gt:g}{' alone' if full else ''}: "
                   f"{fraction_text(fr, pop, IS_GRID_THRESHOLD)}",
                   *([", ".join(wave_notes)] if wave_notes else [])],
            xlabel="gridness-60 (unitless)", title=titles[0],
            clip_to=GRIDNESS_SHOWN, legend=full)
        null, null_label = _null_of(sub, "spatial_info", pq)
        q = sub["spatial_info_null_q"].sel(quantile=pq, method="nearest")
        maps = sub["rate_map"]
        signed = int(((maps < 0).any(("y", "x")) & maps.notnull().any(("y", "x"))).sum())
        exist = int(maps.notnull().any(("y", "x")).sum())
        score_histogram(
            sub["spatial_info"], null, ax=axes[i, 1], null_label=null_label,
            empty_reason=None if not signed else (
                f"spatial information is undefined for signed activity: {signed} of "
                f"{exist} maps have negative bins (Skaggs information needs rates ≥ 0)"
                if full else f"signed activity: {signed} of {exist} maps have negative bins"),
            thresholds=[(_median(q), f"null {pq:.0%} quantile (median over units)", "null")],
            notes=[f"place{f' ({place_rule})' if full else ''}: "
                   f"{fraction_text(fr, pop, IS_PLACE)}"],
            xlabel=axis_label(ds["spatial_info"], "spatial information"),
            title=titles[1], legend=full,
            empty_chars=SCORE_NOTE_CHARS if not full and width == "single" else EMPTY_NOTE_CHARS)
    if width == "single":
        for ax in axes.ravel():
            _narrow_histogram(ax)
    if not full:
        for (_, label, _), (left, right) in zip(pops, axes, strict=True):
            # the population and the y quantity once a row
            left.set_ylabel(f"{label}\nfraction per bin" if left.get_ylabel() else label)
            right.set_ylabel("")
        if width == "single":  # two panels side by side in the column: narrow ones, their
            # notes (and that of an empty one) a step smaller and wrapped
            for ax in axes.ravel():
                ax.set_title(wrap_title(ax.get_title(), SCORE_TITLE_CHARS),
                             fontsize=TINY_FONT_SIZE)
                ax.set_xlabel(_two_lines(ax.get_xlabel(), width))
                for text in ax.texts:
                    text.set_fontsize(TINY_FONT_SIZE)
        for column in axes.T:
            _column_legend(column, width)
    figure_title(fig, f"scores of every (unit, environment) against circular-shift nulls "
                   f"({ds.attrs.get('n_shuffles', '?')} shuffles per environment; "
                   f"fractions of the unit × environment pairs that exist)"
                   + ("" if full else f". grid: {grid_rule}; place: {place_rule}; "
                      f"g60 > {gt:g}: gridness-60 above the rule of thumb alone"),
                 FONT_SIZE if full else _size(FONT_SIZE, width))
    _label_panels(axes.ravel())
    return fig


def _column_legend(column, width: str) -> None:
    """One legend below the last of a column of score histograms, for all of them (their
    entries, each label once, in order; at single width the labels wrapped to half the
    column)."""
    entries: dict[str, object] = {}
    for ax in column:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if not entries:
        return
    labels = list(entries)
    if width == "single":
        labels = [wrap_title(label, SCORE_LEGEND_CHARS) for label in labels]
    legend_below(column[-1], LEGEND_DROP_PT, handles=list(entries.values()), labels=labels,
                 ncol=1 if width == "single" else 2, fontsize=TINY_FONT_SIZE, frameon=False)


def _narrow_histogram(ax) -> None:
    """A :func:`~hippo_rep.plotting.scores.score_histogram` panel fitted to a single
    column: its title and notes and any text in it a step smaller, its legend below it in
    one column (two columns of long labels are wider than the panel)."""
    ax.title.set_fontsize(SMALL_FONT_SIZE)
    for text in ax.texts:
        text.set_fontsize(SMALL_FONT_SIZE)
    if ax.get_legend() is not None:
        legend_below(ax, LEGEND_DROP_PT, ncol=1, fontsize=TINY_FONT_SIZE, frameon=False)


def _median(values) -> float:
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a)]
    return float(np.median(a)) if a.size else float("nan")
