"""Helpers that several figure families share.

Font sizes by column width, panel letters, a row of panels, axis labels on two lines, where
the units of a wrapped row of maps go, the units a row of maps shows (ranked, with a note in
the first empty slot where fewer qualify), counts in captions, numeric attrs, and the
cell-class and remapping panels of the ``tem_vs_temt`` and ``fam_slots`` figures. The family
modules import them from here; :mod:`hippo_rep.figures` re-exports :data:`N_UNITS_SHOWN` and
:data:`MIN_PEAK_FRACTION`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from hippo_rep.defaults import GRID_THRESHOLD
from hippo_rep.plotting.axes import panel_letter
from hippo_rep.plotting.compare import score_distributions
from hippo_rep.plotting.scores import class_fraction_bars
from hippo_rep.plotting.style import (
    DEFAULT_COLUMN,
    FONT_SIZE,
    FULL_WIDTH,
    MEDIUM_FONT_SIZE,
    REFERENCE_LINE_WIDTH,
    SMALL_FONT_SIZE,
    TINY_FONT_SIZE,
    column_width,
    new_figure,
)
from hippo_rep.schema import (
    IS_BAND,
    IS_BORDER,
    IS_GRID,
    IS_GRID_THRESHOLD,
    IS_PLACE,
    IS_SQUARE,
    IS_TWO_WAVE,
)

#: A font size one step smaller, for the same text in a single-column figure.
_ONE_STEP_SMALLER = {FONT_SIZE: MEDIUM_FONT_SIZE, MEDIUM_FONT_SIZE: SMALL_FONT_SIZE,
                     SMALL_FONT_SIZE: TINY_FONT_SIZE}


def _size(fontsize: float, width: str) -> float:
    """``fontsize`` in a double-column figure, one step of the style smaller in a single
    column (never below :data:`~hippo_rep.plotting.style.TINY_FONT_SIZE`)."""
    return _ONE_STEP_SMALLER.get(fontsize, fontsize) if width == "single" else fontsize


def _label_panels(axes) -> None:
    """Panel letters a, b, ... left of each panel's labels, level with its title's top."""
    for letter, ax in zip("abcdefghijklmnop", axes, strict=False):
        panel_letter(ax, letter)


def _panel_row(width: str, n: int, height: float, single_height: float,
               width_ratios=None, height_ratios=None):
    """A figure of ``n`` panels side by side at double width (full width × ``height`` in), or
    one above the other at single width (column width × ``single_height`` in); (fig, axes)."""
    if width == "single":
        fig = new_figure(column_width(width), single_height)
        return fig, fig.subplots(n, 1, height_ratios=height_ratios)
    fig = new_figure(FULL_WIDTH, height)
    return fig, fig.subplots(1, n, width_ratios=width_ratios)


def _two_lines(label: str, width: str) -> str:
    """An axis label on one line, or at ``width="single"`` on two (broken at the space
    nearest its middle), for a short axes."""
    if width != "single" or " " not in label:
        return label
    cut = min((i for i, c in enumerate(label) if c == " "),
              key=lambda i: abs(i - len(label) / 2))
    return f"{label[:cut]}\n{label[cut + 1:]}"


#: Units shown per map figure.
N_UNITS_SHOWN = 6
#: Rate maps per row of a single-column figure (``width="single"``): a figure of more maps
#: per row wraps them onto more rows, or (``fam_slots``, ``controls``: maps above
#: distribution panels) shows this many (``tem_vs_temt``:
#: :data:`~hippo_rep.figures.compare.N_COMPARE_SHOWN_SINGLE`).
MAPS_PER_ROW_SINGLE = 3


def _maps_per_row(width: str, n: int = N_UNITS_SHOWN) -> int:
    """Maps per row of a figure of ``n`` units a row at ``width``: ``n``, or in a single
    column :data:`MAPS_PER_ROW_SINGLE` (the units wrapped onto more rows)."""
    return min(n, MAPS_PER_ROW_SINGLE) if width == "single" else n


def _wrapped(j: int, per_row: int, rows_per_block: int) -> tuple[int, int]:
    """(row offset, column) of the ``j``-th unit of a figure whose units are wrapped
    ``per_row`` a row, each unit taking ``rows_per_block`` rows (a map, its
    autocorrelogram, ...): the unit's first row and its column."""
    return (j // per_row) * rows_per_block, j % per_row


#: Maps whose peak is below this fraction of the largest peak of their population in the
#: environment are not shown as the "most place-like" (a near-silent unit with one faint bin
#: has place score 1 and high spatial information: both are blind to the rate's scale).
MIN_PEAK_FRACTION = 0.01


def _top_units(ds, score: str, env, n: int, tie: str | None = None,
               min_peak_fraction: float = 0.0) -> np.ndarray:
    """At most ``n`` units of ``ds`` with the highest ``score`` in ``env`` (ties by
    ``tie``), best first: only units whose score is finite and, with
    ``min_peak_fraction``, whose map's peak is at least that fraction of the largest. Fewer
    than ``n``, or none, when fewer units qualify (the figures then say how many)."""
    s = np.asarray(ds[score].sel(env=env).values, dtype=float)
    ok = np.isfinite(s)
    if min_peak_fraction > 0 and "rate_map" in ds:
        peak = np.nan_to_num(ds["rate_map"].sel(env=env).max(("y", "x")).values, nan=-np.inf)
        ok &= peak >= min_peak_fraction * np.max(peak, initial=-np.inf)
    keys = (-s,) if tie is None or tie not in ds else (
        -ds[tie].sel(env=env).fillna(-np.inf).values, -s)
    order = np.lexsort(keys)
    return ds["unit"].values[order[ok[order]][:n]]


#: Font size of the note in the first empty slot of a row of maps with fewer units than
#: it has room for (:func:`_fewer_units_note`), points.
NOTE_FONTSIZE = SMALL_FONT_SIZE


def _fewer_units_note(ax, shown: int, n: int, why: str) -> None:
    """Say, in the first empty slot ``ax`` of a row of ``n`` maps, that only ``shown`` are
    shown and ``why`` (no other unit qualifies); the axes is switched off."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, f"{shown} of {n} shown:\nno other unit\n{why}", transform=ax.transAxes,
            ha="center", va="center", fontsize=NOTE_FONTSIZE)


def _counted(counts: dict, noun: str) -> str:
    """``"the 6 {noun}"``, ``"the 6 {noun} in env 0 and 2 in env 1"`` (counts by label
    where they differ) or ``"no {noun}"`` (none at all)."""
    values = list(counts.values())
    if not any(values):
        return f"no {noun}"
    if len(set(values)) == 1:
        return f"the {values[0]} {noun}"
    first, *rest = counts.items()
    return (f"the {first[1]} {noun} in {first[0]}"
            + "".join(f"{' and' if i == len(rest) - 1 else ','} {k} in {lab}"
                      for i, (lab, k) in enumerate(rest)))


#: Short names of the cell classes in the comparison figures' class-fraction panels.
CLASS_SHORT = {IS_GRID: "grid", IS_GRID_THRESHOLD: f"gridness > {GRID_THRESHOLD:g}",
               IS_BAND: "band", IS_TWO_WAVE: "two-wave", IS_SQUARE: "square",
               IS_BORDER: "border", IS_PLACE: "place"}


def _classes_and_remapping(fig, spec, named: dict, colors: dict, width: str = DEFAULT_COLUMN,
                           height_ratios=(1.5, 1)) -> None:
    """Two panels in ``spec``: the fractions of each named population in each cell class
    (:func:`~hippo_rep.schema.class_fractions`) and, when every analysis has ``remap_corr``,
    each unit's rate-map correlation across environments. ``named``: label → (analysis,
    population). Side by side, or one above the other (``height_ratios``) at
    ``width="single"``."""
    sub = (spec.subgridspec(2, 1, height_ratios=height_ratios) if width == "single"
           else spec.subgridspec(1, 2))
    summaries = {id(ds): ds.hippo.summary() for ds, _ in named.values()}  # once per analysis
    # join="outer": a class one analysis lacks (written before it existed) is NaN, "n/a"
    fractions = xr.concat([summaries[id(ds)].sel(population=pop, drop=True)
                           for ds, pop in named.values()], join="outer",
                          dim=xr.DataArray(list(named), dims="population", name="population"))
    fractions = fractions.assign_coords(cell_class=[
        CLASS_SHORT.get(str(c), str(c)) for c in fractions["cell_class"].values])
    class_fraction_bars(fractions, ax=fig.add_subplot(sub[0]), title="cell classes",
                        colors=colors)
    if all("remap_corr" in ds for ds, _ in named.values()):
        remap = {k: ds["remap_corr"].sel(unit=ds["variable"] == pop).values
                 for k, (ds, pop) in named.items()}
        remap, colors = _narrow_groups(remap, colors, width)
        ax = score_distributions(remap, ax=fig.add_subplot(sub[1]), colors=colors,
                                 ylabel=_two_lines("correlation across envs (r)", width),
                                 title="remapping (every unit x env pair)")
        ax.axhline(0, color="0.5", lw=REFERENCE_LINE_WIDTH)


def _narrow_groups(groups: dict, colors: dict, width: str) -> tuple[dict, dict]:
    """``groups`` and their ``colors``, at ``width="single"`` with each label of two words or
    more on two lines (its last word, of three letters or more, on the second): narrow tick
    labels for a narrow panel."""
    if width != "single":
        return groups, colors

    def two(label: str) -> str:
        head, _, tail = label.rpartition(" ")
        return f"{head}\n{tail}" if head and len(label) > 8 and len(tail) > 2 else label

    return ({two(k): v for k, v in groups.items()},
            {two(k): v for k, v in colors.items()})


def _attr(ds, name: str, default: float) -> float:
    value = np.asarray(ds.attrs.get(name, default), dtype=float).ravel()
    return float(value[0]) if value.size else float(default)
