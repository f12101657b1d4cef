"""Publication figures: a registry of named builders, each writing PDF, SVG and 300-dpi PNG.

A builder takes :class:`FigureInputs` and returns a matplotlib Figure; :func:`build_figures`
writes each in every requested format (atomically) and reports, per figure, the files written
or the reason it was skipped (a missing input, named). Plot panels live in
:mod:`hippo_rep.plotting` and never save anything themselves.

Every registered figure, drawn from the shipped data (or small synthetic inputs where the
shipped data lacks its input), passes :func:`hippo_rep.plotting.checks.check_figure`: no
texts over each other, into another panel or past the figure's edges, no note across the
edge of its panel or over its points, no empty panel that does not say why, a colour bar on
every map, no legend over data (``tests/test_figure_checks.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

# No pyplot: every builder draws a bare matplotlib Figure (new_figure) in the paper style, so
# building figures picks no backend, changes no rcParams and leaves pyplot without figures.
# The PassKey and delay readers (hippo_rep.tasks.results, torch-free) are imported where
# those inputs are read.
from hippo_rep.analysis import autocorrelogram as sac_of
from hippo_rep.analysis.classify import (
    GRID_MIN_SCORE,
    GRID_QUANTILE,
    PLACE_N_FIELDS,
    PLACE_QUANTILE,
)
from hippo_rep.analysis.methods import DEFAULT_GRID_METHOD
from hippo_rep.analysis.pipeline import open_analysis
from hippo_rep.analysis.remapping import MEMORY_IDENTITY, unit_pair_matrix
from hippo_rep.defaults import GRID_THRESHOLD
from hippo_rep.fileio import atomic_write, read_json
from hippo_rep.plotting import COLORS, accuracy_by_step_type, accuracy_curve
from hippo_rep.plotting.axes import (
    LEGEND_DROP_PT,
    figure_title,
    legend_below,
    panel_letter,
    wrap_title,
)
from hippo_rep.plotting.compare import score_distributions
from hippo_rep.plotting.delay import plot_delay, plot_delay_cost
from hippo_rep.plotting.learning import LEARNING_SPEED_KIND, SPEED_MODELS, learning_speed
from hippo_rep.plotting.maps import (
    UNVISITED_GREY_NAME,
    autocorrelogram,
    map_caption,
    place_map,
    rate_map,
)
from hippo_rep.plotting.passkey import passkey_curves, passkey_long_filler
from hippo_rep.plotting.place import field_count_by_population, place_score_by_population
from hippo_rep.plotting.remapping import (
    PER_UNIT_NOTE,
    POPULATION_COLORS,
    POPULATION_LABELS,
    pair_scatter,
    pair_structure_test,
    pv_by_population,
    remap_by_population,
    tem_test,
)
from hippo_rep.plotting.scores import (
    EMPTY_NOTE_CHARS,
    axis_label,
    class_fraction_bars,
    score_histogram,
)
from hippo_rep.plotting.style import (
    BLUE,
    BLUISH_GREEN,
    COLUMN_WIDTHS,
    DEFAULT_COLUMN,
    FIGURE_TITLE_FONT_SIZE,
    FONT_SIZE,
    FULL_WIDTH,
    GREY,
    HALF_WIDTH,
    MAX_HEIGHT,
    MEDIUM_FONT_SIZE,
    ORANGE,
    PLACE_CMAP,
    RATE_CMAP,
    REDDISH_PURPLE,
    REFERENCE_LINE_WIDTH,
    SAVE_DPI,
    SKY_BLUE,
    SMALL_FONT_SIZE,
    TINY_FONT_SIZE,
    VERMILLION,
    column_width,
    new_figure,
    paper_style,
)
from hippo_rep.plotting.sweep import plot_sweep
from hippo_rep.plotting.transitions import (
    loop_return_panel,
    memories_per_node_panel,
    wave_vector_panel,
)
from hippo_rep.recording import open_recording
from hippo_rep.schema import (
    FAM_ACTIVITY,
    IS_BAND,
    IS_BORDER,
    IS_GRID,
    IS_GRID_THRESHOLD,
    IS_PLACE,
    IS_SQUARE,
    IS_TWO_WAVE,
    MEMORY_ACTIVITY,
    G,
    P,
    SchemaError,
    fraction_text,
    place_population,
)
from hippo_rep.sweep.results import open_sweep

#: Formats written by default.
DEFAULT_FORMATS = ("pdf", "svg", "png")
#: PNG resolution, dots per inch (:data:`hippo_rep.plotting.style.SAVE_DPI`).
PNG_DPI = SAVE_DPI


#: Keys every PassKey sweep row needs (:func:`hippo_rep.tasks.passkey.read_sweep`).
PASSKEY_ROW_KEYS = ("variant", "filler", "accuracy", "std")
#: Display labels of evaluation results by ``meta.model_kind``.
MODEL_LABELS = {"temt": "TEM-t"}


class FigureError(ValueError):
    """Unknown figure name or format, or unreadable input."""


class MissingInput(Exception):
    """A figure cannot be built because an input or variable is missing (the reason)."""


@dataclass
class FigureInputs:
    """Everything a figure may draw from; each is optional.

    ``evals`` maps a model label (e.g. "TEM-t", "sinusoidal") to an evaluation result (the JSON
    of ``hippo-rep evaluate``). ``analysis`` and ``recording`` are xarray Datasets.
    ``passkey`` holds the seed-averaged rows of a PassKey sweep
    (:func:`hippo_rep.tasks.passkey.read_sweep`: ``variant``, ``filler`` in tokens,
    ``accuracy`` and ``std`` as fractions). ``sweep`` is a sweep's table
    (:func:`hippo_rep.sweep.open_sweep`). ``delay`` is a long-delay loop-closure result
    (:func:`hippo_rep.tasks.delay.delay_experiment`; with a ``run`` dim when several were
    read) and ``delay_cost`` the rows of ``benchmarks/bench_memory_variants.py --json``.
    ``learning_speed`` is the JSON of ``benchmarks/bench_tem_vs_temt.py --learning``
    (:func:`read_learning_speed`). ``tem_analysis`` is the analysis of a TEM recording, shown
    beside ``analysis`` (TEM-t).
    """

    evals: dict[str, dict] = field(default_factory=dict)
    analysis: object | None = None
    recording: object | None = None
    passkey: list[dict] | None = None
    sweep: object | None = None
    delay: object | None = None
    learning_speed: dict | None = None
    tem_analysis: object | None = None
    delay_cost: list[dict] | None = None

    def need_evals(self) -> dict[str, dict]:
        if not self.evals:
            raise MissingInput("needs an evaluation JSON (--eval EVAL.json)")
        return self.evals

    def need_passkey(self) -> list[dict]:
        if not self.passkey:
            raise MissingInput("needs a PassKey sweep (--passkey SWEEP_DIR_OR_FILE)")
        for key in PASSKEY_ROW_KEYS:
            if any(key not in r for r in self.passkey):
                raise MissingInput(f"the PassKey sweep rows lack {key!r}")
        return self.passkey

    def need(self, dataset: str, *variables: str):
        ds = getattr(self, dataset)
        if ds is None:
            raise MissingInput(f"needs the {dataset} dataset")
        missing = [v for v in variables if v not in ds.variables]
        if missing:
            raise MissingInput(f"the {dataset} dataset lacks variable(s) {', '.join(missing)}")
        return ds


FIGURES: dict[str, Callable[..., object]] = {}

#: The widths every registered figure is drawn at (``FIGURES[name](inputs, width=...)``,
#: ``hippo-rep figures --width``): "double" (the default, a double column,
#: :data:`~hippo_rep.plotting.style.DOUBLE_COLUMN_WIDTH`) or "single" (a single column,
#: :data:`~hippo_rep.plotting.style.SINGLE_COLUMN_WIDTH`: fewer panels per row, maps wrapped
#: onto more rows, the smaller fonts of
#: :data:`~hippo_rep.plotting.style.SINGLE_COLUMN_STYLE`).
WIDTHS = tuple(COLUMN_WIDTHS)


def register(name: str):
    """Decorator: add a builder ``fn(inputs, width) -> matplotlib.figure.Figure`` to the
    registry (``width``: "single" or "double", :data:`WIDTHS`).

    The registered builder, ``FIGURES[name](inputs, width="double")``, checks the width
    (FigureError for another), draws inside :func:`~hippo_rep.plotting.style.paper_style`
    at that width (whoever calls it; ``rcParams`` is restored afterwards) on a bare Figure
    (:func:`~hippo_rep.plotting.style.new_figure`, not registered with pyplot) as wide as
    the column, and the figure it returns has its layout settled (:func:`settle_layout`)."""

    def deco(fn):
        @functools.wraps(fn)
        def build(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
            _check_width(width)
            with paper_style(width):
                return settle_layout(fn(inputs, width))

        FIGURES[name] = build
        return build

    return deco


def _check_width(width: str) -> float:
    try:
        return column_width(width)
    except ValueError as why:
        raise FigureError(str(why)) from None


def settle_layout(fig):
    """Lay out ``fig`` once before it is saved or checked (a draw without rendering, where
    it has a layout engine); returns it.

    Constrained layout makes room for the texts as they were last drawn (a y label is put
    beside its tick labels while the axes draws), so the first layout of a new figure can
    leave a label past the figure's edge (``tem_vs_temt``: its first y label, 10 px) that
    the next layout fixes; saving lays the figure out once more, so every format written
    shows the settled layout."""
    if fig.get_layout_engine() is not None:
        fig.draw_without_rendering()
    return fig


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


@register("learning")
def learning_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Accuracy against the proportion of nodes visited (TEM-t, baseline, ideal agents), and
    accuracy by step type."""
    evals = inputs.need_evals()
    colors = {label: COLORS.get(_kind(res), None) for label, res in evals.items()}
    fig, axes = _panel_row(width, 2, 2.9, 5.0, width_ratios=[1, 1.4])
    accuracy_curve(evals, ax=axes[0], colors=colors)
    accuracy_by_step_type(evals, ax=axes[1], colors=colors, narrow=width == "single")
    first = next(iter(evals.values()))
    meta = first.get("meta", {})
    figure_title(fig, f"held-out {meta.get('world', '')}: {meta.get('envs', '?')} environments "
                   f"× {meta.get('steps', '?')} steps", _size(FONT_SIZE, width))
    _label_panels(axes)
    return fig


@register("learning_speed")
def learning_speed_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """The TEM-t paper's Fig. 4: held-out zero-shot accuracy of TEM and TEM-t against
    gradient updates, training wall-clock seconds and (where the rows have them) steps
    walked, node agent as the ceiling."""
    data = inputs.learning_speed
    if data is None:
        raise MissingInput("needs a learning-speed JSON (--learning-speed FILE, from "
                           "benchmarks/bench_tem_vs_temt.py --learning)")
    # Samples as a third abscissa when every row has them (older files lack them): models
    # with an update per chunk make several updates per walk.
    xs = ["updates", "seconds"] + (["walk_steps"] if all(
        "walk_steps" in r for rows in data["runs"].values() for r in rows) else [])
    single = width == "single"
    if single:  # the panels one above the other
        fig = new_figure(column_width(width), 1.9 * len(xs) + 1.3)
        axes = fig.subplots(len(xs), 1)
    else:
        fig = new_figure(FULL_WIDTH, 3.0)
        axes = fig.subplots(1, len(xs))
    for x, ax in zip(xs, axes, strict=True):
        learning_speed(data, x, ax=ax)
        ax.get_legend().remove()
    # one legend for all panels, below them (it would hide the curves inside a panel); at
    # double width in the small size, its three columns clear of the figure's edges (at
    # 7 pt they were as wide as the column, and wider where drawn at 110 dpi)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=1 if single else 3,
               fontsize=_size(MEDIUM_FONT_SIZE, width) if single else SMALL_FONT_SIZE,
               frameon=False)
    worlds = ", ".join(data.get("worlds", []))
    figure_title(fig, f"zero-shot accuracy on {data.get('eval_envs', '?')} held-out walks of "
                   f"{worlds} (same worlds, seed, batch {data.get('batch_size', '?')}; "
                   f"{data.get('threads', '?')} CPU thread(s); TEM schedule "
                   f"{data.get('tem_schedule', '?')})"
                   + ("" if data.get("complete", True) else " — partial: run still going or "
                      "stopped early") + _resumed(data))
    _label_panels(axes)
    return fig


def _resumed(data: dict) -> str:
    """Where a learning-speed run was continued from its checkpoint (its seconds then add
    up runs made at different times, under whatever load each had)."""
    parts = [f"{SPEED_MODELS.get(k, (k,))[0]} at update{'s' if len(v) > 1 else ''} "
             f"{', '.join(str(u) for u in v)}"
             for k, v in sorted((data.get("resumed_at") or {}).items()) if v]
    return f"\nresumed from a checkpoint: {'; '.join(parts)}" if parts else ""


#: Columns of rate maps per row of the ``tem_vs_temt`` figure.
N_COMPARE_SHOWN = 5
#: Rate maps per population of the ``tem_vs_temt`` figure in a single column, two
#: populations a row (four rows of maps above the four distribution panels are taller than a
#: page, :data:`~hippo_rep.plotting.style.MAX_HEIGHT`).
N_COMPARE_SHOWN_SINGLE = 2
#: Rate maps per row of a single-column figure (``width="single"``): a figure of more maps
#: per row wraps them onto more rows, or (``fam_slots``, ``controls``: maps above
#: distribution panels) shows this many (``tem_vs_temt``: :data:`N_COMPARE_SHOWN_SINGLE`).
MAPS_PER_ROW_SINGLE = 3
#: Short names of the scores in map titles.
SCORE_SHORT = {"gridness_60": "g60", "place_score": "place"}
#: Colours of the populations in the ``tem_vs_temt`` score panels (Okabe-Ito).
COMPARE_COLORS = {"TEM g": GREY, "TEM p": VERMILLION, "TEM-t g": BLUE,
                  "TEM-t memory": REDDISH_PURPLE}


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


def _tem_modules(tem) -> np.ndarray:
    """Frequency module of each g unit of a TEM analysis (the ``module`` coord of its
    recording: contiguous blocks of ``model.tem_n_g`` units, 0 = highest frequency)."""
    import json

    sizes = json.loads(tem.attrs.get("model_config", "{}")).get("tem_n_g")
    if not sizes:
        raise MissingInput("the TEM analysis has no model_config with tem_n_g (not a TEM?)")
    return np.repeat(np.arange(len(sizes)), sizes)


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


def _panel_row(width: str, n: int, height: float, single_height: float,
               width_ratios=None, height_ratios=None):
    """A figure of ``n`` panels side by side at double width (full width × ``height`` in), or
    one above the other at single width (column width × ``single_height`` in); (fig, axes)."""
    if width == "single":
        fig = new_figure(column_width(width), single_height)
        return fig, fig.subplots(n, 1, height_ratios=height_ratios)
    fig = new_figure(FULL_WIDTH, height)
    return fig, fig.subplots(1, n, width_ratios=width_ratios)


#: An axis label longer than this (characters) is wrapped by :func:`_three_lines`.
THREE_LINES_FROM = 30


def _three_lines(label: str) -> str:
    """A long axis label (of one line or two; over :data:`THREE_LINES_FROM` characters)
    on at most three lines of about equal length, for a low axes; a shorter one as it is."""
    import textwrap

    words = label.replace("\n", " ")
    if len(words) <= THREE_LINES_FROM:
        return label
    width = len(words) // 3
    while len(textwrap.wrap(words, width)) > 3:
        width += 1
    return "\n".join(textwrap.wrap(words, width))


def _two_lines(label: str, width: str) -> str:
    """An axis label on one line, or at ``width="single"`` on two (broken at the space
    nearest its middle), for a short axes."""
    if width != "single" or " " not in label:
        return label
    cut = min((i for i, c in enumerate(label) if c == " "),
              key=lambda i: abs(i - len(label) / 2))
    return f"{label[:cut]}\n{label[cut + 1:]}"


@register("tem_vs_temt")
def tem_vs_temt_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """TEM beside TEM-t: the most grid-like g unit of each TEM module, the most place-like
    TEM p units, the most grid-like TEM-t g units and place-like memory neurons (rate maps
    in the first environment), the gridness-60 and place-metric distributions of every
    population (every unit × environment), the fractions classified grid, two-wave, band,
    square and place (:func:`~hippo_rep.schema.class_fractions`) and the spatial correlation
    of each unit across environments (remapping)."""
    need = ("rate_map", "gridness_60", "place_score")
    temt = inputs.need("analysis", *need)
    if inputs.tem_analysis is None:
        raise MissingInput("needs a TEM analysis (--tem-analysis FILE) beside the TEM-t one")
    tem = inputs.need("tem_analysis", *need)
    if P not in tem.hippo.populations:
        raise MissingInput("--tem-analysis is not the analysis of a TEM recording (no p)")
    if MEMORY_ACTIVITY not in temt.hippo.populations:
        raise MissingInput("the analysis is not of a TEM-t recording (no memory neurons)")
    tem_g, tem_p = tem.hippo.population(G), tem.hippo.population(P)
    temt_g, temt_m = temt.hippo.population(G), temt.hippo.population(MEMORY_ACTIVITY)
    module = _tem_modules(tem)[tem_g["unit_index"].values]
    single = width == "single"
    if single:  # two populations a row of maps, N_COMPARE_SHOWN_SINGLE maps each (a page
        # high); the grid and place panels, classes and remapping stacked
        n = N_COMPARE_SHOWN_SINGLE
        map_rows = 2
        fig = new_figure(column_width(width), 9.6)
        grid = fig.add_gridspec(map_rows + 4, 2 * n,
                                height_ratios=[0.8, 0.8, 1.3, 1.3, 1.9, 1.2])
    else:
        n = N_COMPARE_SHOWN
        map_rows = 4
        fig = new_figure(FULL_WIDTH, 9.6)
        grid = fig.add_gridspec(map_rows + 2, n, height_ratios=[1, 1, 1, 1, 1.6, 1.9])
    rows = []
    env = tem_g["env"].values[0]
    best = []  # one unit per module: its best by gridness, else its first (saying so)
    for m in np.unique(module)[:N_COMPARE_SHOWN]:
        in_m = tem_g.isel(unit=module == m)
        top = _top_units(in_m, "gridness_60", env, 1)
        best.append((top[0], f"module {m}") if len(top) else
                    (in_m["unit"].values[0], f"module {m}, no gridness"))
    if len(best) > n:  # the modules whose best unit is the most grid-like, in module order
        g = np.nan_to_num([float(tem_g["gridness_60"].sel(env=env, unit=u)) for u, _ in best],
                          nan=-np.inf)
        best = [best[k] for k in sorted(np.argsort(-g, kind="stable")[:n])]
    rows.append(("TEM g", tem_g, env, best, "gridness_60", RATE_CMAP, False))
    rows.append(("TEM p", tem_p, env,
                 [(u, "") for u in _top_units(tem_p, "place_score", env, n, "spatial_info",
                                              MIN_PEAK_FRACTION)],
                 "place_score", PLACE_CMAP, True))
    env_t = temt_g["env"].values[0]
    rows.append(("TEM-t g", temt_g, env_t,
                 [(u, "") for u in _top_units(temt_g, "gridness_60", env_t, n)],
                 "gridness_60", RATE_CMAP, False))
    rows.append(("TEM-t memory", temt_m, env_t,
                 [(u, "") for u in _top_units(temt_m, "place_score", env_t, n,
                                              "spatial_info", MIN_PEAK_FRACTION)],
                 "place_score", PLACE_CMAP, True))
    for i, (name, ds, e, units, score, cmap, outline) in enumerate(rows):
        r, c0 = divmod(i, 2) if single else (i, 0)
        for j in range(n):
            ax = fig.add_subplot(grid[r, c0 * n + j])
            if j >= len(units):
                if j == len(units):
                    _fewer_units_note(ax, len(units), n, f"has a finite {SCORE_SHORT[score]}"
                                      + (f"\nand a peak ≥ {MIN_PEAK_FRACTION:.0%}" if outline
                                         else ""))
                else:
                    ax.set_axis_off()
                continue
            u, extra = units[j]
            idx = int(ds["unit_index"].sel(unit=u))
            value = f"{SCORE_SHORT[score]} {float(ds[score].sel(env=e, unit=u)):.2f}"
            # in a single column no line wider than the small map (its first would run past
            # the figure's left edge): the unit on its own line, or beside a short name
            title = ((f"{name} {idx}\n{extra.replace(', ', chr(10))}" if extra
                      else f"{name}\n{idx}") + f"\n{value}" if single
                     else f"{name} {idx}{', ' + extra if extra else ''}\n{value}")
            if outline:
                place_map(ds["rate_map"].sel(env=e, unit=u), ax=ax, title=title)
            else:
                rate_map(ds["rate_map"].sel(env=e, unit=u), ax=ax, cmap=cmap, colorbar=True,
                         units="", title=title)
    g60 = {f"TEM g m{m}": tem_g["gridness_60"].isel(unit=module == m).values
           for m in np.unique(module)}
    g60["TEM-t g"] = temt_g["gridness_60"].values
    bottom = (grid[map_rows:map_rows + 2, :].subgridspec(2, 1) if single
              else grid[map_rows, :].subgridspec(1, 2, width_ratios=[1.6, 1]))
    score_distributions(g60, ax=fig.add_subplot(bottom[0]), colors=COMPARE_COLORS,
                        ylabel=_two_lines("gridness-60 (unitless)", width), title="grid scores")
    place = {"TEM g": tem_g["place_score"].values, "TEM p": tem_p["place_score"].values,
             "TEM-t g": temt_g["place_score"].values,
             "TEM-t memory": temt_m["place_score"].values}
    place, colors = _narrow_groups(place, COMPARE_COLORS, width)
    score_distributions(place, ax=fig.add_subplot(bottom[1]), colors=colors,
                        ylabel=_two_lines("place metric (largest-field share)", "single"),
                        title="place metric")
    named = {"TEM g": (tem, G), "TEM p": (tem, P), "TEM-t g": (temt, G),
             "TEM-t memory": (temt, MEMORY_ACTIVITY)}
    _classes_and_remapping(fig, grid[map_rows + 2:, :] if single else grid[map_rows + 1, :],
                           named, COMPARE_COLORS,
                           width, height_ratios=(2.4, 1.5))
    units = temt["rate_map"].attrs.get("units", "")
    modules = (f"; TEM g: the {n} of {len(np.unique(module))} modules with the most grid-like "
               "best unit" if len(np.unique(module)) > n else "")
    figure_title(fig, f"TEM ({tem.sizes['env']} envs) beside TEM-t ({temt.sizes['env']} "
                   "envs): rate maps in the first environment, the most grid-like g units "
                   f"(g60 = gridness-60; white = unvisited{modules}) and the most place-like "
                   "p units and memory neurons (place = place metric; ties by spatial information; "
                   f"peak at least {MIN_PEAK_FRACTION:.0%} of the population's largest); "
                   f"{map_caption(units, outline=True, unvisited=UNVISITED_GREY_NAME)}; every "
                   "unit x environment in the distributions", _size(FIGURE_TITLE_FONT_SIZE, width))
    return fig


@register("transitions")
def transitions_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """The learned transition structure of each evaluated TEM-t: wave vectors of W_a (linear
    σ), how far opposite moves and the smallest loop return g to its start against the
    add-if-novel threshold, and the memories written per node visited."""
    evals = {k: v for k, v in inputs.need_evals().items()
             if (v.get("transitions") or {}).get("recurrent")}
    if not evals:
        raise MissingInput("needs an evaluation of a recurrent model with transition "
                           "diagnostics (re-run hippo-rep evaluate with this version)")
    palette = [COLORS["temt"], BLUISH_GREEN, REDDISH_PURPLE, ORANGE, SKY_BLUE]
    colors = {label: palette[i % len(palette)] for i, label in enumerate(evals)}
    fig, axes = _panel_row(width, 3, 2.7, 7.2, width_ratios=[1, 1.3, 0.9])
    label, first = next(iter(evals.items()))
    wave_vector_panel(first["transitions"], ax=axes[0], color=colors[label], label=label,
                      walk_constant=(first.get("walk_constant_power") or {}).get("g"))
    loop_return_panel(evals, ax=axes[1], colors=colors)
    memories_per_node_panel(evals, ax=axes[2], colors=colors)
    meta = first.get("meta", {})
    figure_title(fig, f"transition structure ({label}); memories on held-out "
                   f"{meta.get('world', '')}, {meta.get('steps', '?')}-step walks",
                 _size(FONT_SIZE, width))
    _label_panels(axes)
    return fig


#: Units shown per map figure.
N_UNITS_SHOWN = 6


def _maps_per_row(width: str, n: int = N_UNITS_SHOWN) -> int:
    """Maps per row of a figure of ``n`` units a row at ``width``: ``n``, or in a single
    column :data:`MAPS_PER_ROW_SINGLE` (the units wrapped onto more rows)."""
    return min(n, MAPS_PER_ROW_SINGLE) if width == "single" else n


def _wrapped(j: int, per_row: int, rows_per_block: int) -> tuple[int, int]:
    """(row offset, column) of the ``j``-th unit of a figure whose units are wrapped
    ``per_row`` a row, each unit taking ``rows_per_block`` rows (a map, its
    autocorrelogram, ...): the unit's first row and its column."""
    return (j // per_row) * rows_per_block, j % per_row


def _g_name(ds: xr.Dataset) -> str:
    """What the recording's population ``g`` is: TEM-t's positional units, or the read-out
    cells r of a ``model.cells = "readout"`` model (its model config, kept in the analysis)."""
    import json

    try:
        cells = json.loads(ds.attrs.get("model_config", "{}")).get("cells", "g")
    except (TypeError, ValueError):
        cells = "g"
    return "read-out cells r" if cells == "readout" else "positional units g"


@register("grid_cells")
def grid_cells_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Rate maps of the most grid-like positional units (ranked in the first environment) with
    their autocorrelograms, gridness and spacing, in two environments."""
    ds = inputs.need("analysis", "rate_map", "gridness_60", "spacing").hippo.population(G)
    envs = ds["env"].values[:2]
    score = ds["gridness_60"].sel(env=envs[0]).fillna(-np.inf)
    top = ds["unit"].values[np.argsort(-score.values)[:N_UNITS_SHOWN]]
    rows = [("map", envs[0]), ("sac", envs[0])] + [("map", e) for e in envs[1:]]
    per_row = _maps_per_row(width, max(len(top), 1))  # a single column: the units wrapped
    blocks = -(-len(top) // per_row)
    fig = new_figure(column_width(width), 1.2 * len(rows) * blocks + 0.4
                     + (0.6 if width == "single" else 0))
    axes = fig.subplots(len(rows) * blocks, per_row, squeeze=False)
    for j, u in enumerate(top):
        r0, c = _wrapped(j, per_row, len(rows))
        for i, (what, env) in enumerate(rows):
            m = ds["rate_map"].sel(env=env, unit=u)
            g60 = float(ds["gridness_60"].sel(env=env, unit=u))
            sp = float(ds["spacing"].sel(env=env, unit=u))
            if what == "map":
                idx = int(ds["unit_index"].sel(unit=u))
                rate_map(m, ax=axes[r0 + i, c], colorbar=True, units="",
                         title=f"unit {idx}, env {env}\ng60 {g60:.2f}, sp. {sp:.1f}")
            else:
                autocorrelogram(sac_of(m), ax=axes[r0 + i, c], title="autocorrelogram",
                                colorbar=True)
    for j in range(len(top), blocks * per_row):  # the slots a last, shorter row leaves
        r0, c = _wrapped(j, per_row, len(rows))
        for i in range(len(rows)):
            axes[r0 + i, c].set_axis_off()
    units = ds["rate_map"].attrs.get("units", "")
    method = ds.attrs.get("grid_score_method", DEFAULT_GRID_METHOD)
    figure_title(fig, f"most grid-like {_g_name(ds)} (ranked by gridness-60, g60, in env "
                   f"{envs[0]}; method {method}; sp. = "
                   f"spacing in bins)\n{map_caption(units, autocorrelograms=True)}")
    return fig


#: Maps (each with its autocorrelogram) shown per control in the ``controls`` figure.
N_CONTROL_MAPS = 3
#: In a single column (``width="single"``): maps per control, and controls side by side.
N_CONTROL_MAPS_SINGLE = 1
CONTROLS_PER_ROW_SINGLE = 2


def _control_title(name: str, unit: int, verdict: str, psi: float, narrow: bool) -> str:
    """A control map's title: its control and unit, verdict and triad phase; ``narrow``: on
    three short lines (control / verdict / unit and phase) for a narrow map."""
    phase = "" if np.isnan(psi) else f"ψ {round(psi) + 0:d}°"
    if narrow:
        return f"{name}\n{verdict}\nunit {unit}" + (f", {phase}" if phase else "")
    return f"{name}, unit {unit}\n{verdict}" + (f", {phase}" if phase else "")


@register("controls")
def controls_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """The model-grown controls (``hippo-rep controls``, analysed): per control, the first
    units' rate maps with their autocorrelograms and plane-wave verdicts; the fraction of
    each control's units per class; every unit's triad phase."""
    from hippo_rep.analysis.controls import CONTROL_DIM, control_fractions
    from hippo_rep.analysis.planewaves import LATTICE_PHASE_TOL
    from hippo_rep.plotting.controls import triad_phases

    full = inputs.need("analysis", "rate_map", "hexagonal", "triad_phase", "n_waves")
    if CONTROL_DIM not in full.coords:
        raise MissingInput("the analysis is not of a controls recording (no 'control' coord; "
                           "make one with hippo-rep controls)")
    ds = full.hippo.population(G)
    names = [str(c) for c in ds[CONTROL_DIM].values]
    single = width == "single"
    # a single column: one unit a control, two controls a row
    n_show = min(N_CONTROL_MAPS_SINGLE if single else N_CONTROL_MAPS, ds.sizes["unit"])
    per_row = CONTROLS_PER_ROW_SINGLE if single else 1
    n_rows = -(-len(names) // per_row)
    top_h, bottom_h = (1.1 * n_rows, 5.4) if single else (1.25 * n_rows, 3.2)
    fig = new_figure(column_width(width), top_h + bottom_h)
    rows = fig.subfigures(2, 1, height_ratios=[top_h, bottom_h])
    grid = rows[0].add_gridspec(n_rows, 2 * n_show * per_row)
    for i, env in enumerate(ds["env"].values):
        one = ds.sel(env=env)
        row, first = i // per_row, 2 * n_show * (i % per_row)
        for j, u in enumerate(one["unit"].values[:n_show]):
            m = one["rate_map"].sel(unit=u)
            m = m.isel(y=m.notnull().any("x").values, x=m.notnull().any("y").values)
            v = one.sel(unit=u)
            psi = float(v["triad_phase"])
            one_field = "single_field" in v and bool(v["single_field"])
            verdict = ("hexagonal" if bool(v["hexagonal"]) else "single field" if one_field
                       else f"{int(v['n_waves'])} waves")
            rate_map(m, ax=rows[0].add_subplot(grid[row, first + 2 * j]), colorbar=True,
                     units="", title=_control_title(names[i], int(v["unit_index"]), verdict,
                                                    psi, single))
            autocorrelogram(sac_of(m), ax=rows[0].add_subplot(grid[row, first + 2 * j + 1]),
                            title="autocorrelogram", colorbar=True)
    bottom = (rows[1].subplots(2, 1, height_ratios=[1.3, 1]) if single
              else rows[1].subplots(1, 2, width_ratios=[1.6, 1]))
    class_fraction_bars(control_fractions(full), ax=bottom[0],
                        title="fraction of each control's units (g)")
    triad_phases(ds["triad_phase"].swap_dims(env=CONTROL_DIM).drop_vars("env"),
                 ax=bottom[1], tol=LATTICE_PHASE_TOL,
                 title="triad phase\n(shaded: lattice of peaks / of troughs)")
    units = ds["rate_map"].attrs.get("units", "")
    figure_title(fig, "model-grown controls: pattern formation (relu, periodic √3/2 and "
                   "square box) and its negatives (tanh, no surround, linear eigenmodes); "
                   f"{map_caption(units, autocorrelograms=True)}")
    return fig


@register("place_cells")
def place_cells_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Memory-neuron rate maps with their fields outlined (most place-like per environment),
    and the place metric of memory neurons against positional units."""
    full = inputs.need("analysis", "rate_map", "place_score", "n_fields")
    pop = place_population(full.hippo.populations) or MEMORY_ACTIVITY
    ds = full.hippo.population(pop)
    name = "TEM p unit" if pop == P else "memory"
    envs = ds["env"].values[:2]
    per_row = _maps_per_row(width)  # a single column: each environment's maps on two rows
    blocks = -(-N_UNITS_SHOWN // per_row)
    n_rows = len(envs) * blocks
    fig = new_figure(column_width(width), 1.3 * n_rows + (3.0 if width == "single" else 2.4))
    grid = fig.add_gridspec(n_rows + 1, per_row, height_ratios=[1.0] * n_rows + [1.5])
    slots = np.array([[fig.add_subplot(grid[i, j]) for j in range(per_row)]
                      for i in range(n_rows)]).reshape(n_rows, per_row)
    # axes[i, j]: the j-th map of environment i, wherever its row and column
    axes = np.array([[slots[i * blocks + r, c] for r, c in
                      (_wrapped(j, per_row, 1) for j in range(N_UNITS_SHOWN))]
                     for i in range(len(envs))])
    counts = {}
    for i, env in enumerate(envs):
        score = ds["place_score"].sel(env=env).fillna(-np.inf)
        # ties in place score (1 = all mass in one field) broken by spatial information
        top = _top_units(ds, "place_score", env, N_UNITS_SHOWN, "spatial_info",
                         MIN_PEAK_FRACTION)
        counts[f"env {env}"] = len(top)
        for j in range(N_UNITS_SHOWN):
            if j == len(top):
                _fewer_units_note(axes[i, j], len(top), N_UNITS_SHOWN,
                                  f"has a place score\nand a peak ≥ {MIN_PEAK_FRACTION:.0%}")
            if j >= len(top):
                axes[i, j].set_axis_off()
                continue
            u = top[j]
            place_map(ds["rate_map"].sel(env=env, unit=u), ax=axes[i, j],
                      title=f"{name} {int(ds['unit_index'].sel(unit=u))}, env {env}\n"
                            f"place score {float(score.sel(unit=u)):.2f}")
    dist = fig.add_subplot(grid[n_rows, :])
    place_score_by_population(full["place_score"], ax=dist)
    if width == "single":  # the legend below the panel: inside, it covers the bars
        legend_below(dist, fontsize=TINY_FONT_SIZE)
    ny, nx = full.sizes["y"], full.sizes["x"]
    dist.set_title(f"place metric, all units and environments ({ny} x {nx} bins:"
                   f"{chr(10) if width == 'single' else ' '}it needs maps large enough for a "
                   "grid unit to show several fields)", fontsize=_size(MEDIUM_FONT_SIZE, width))
    units = full["rate_map"].attrs.get("units", "")
    who = "TEM grounded locations p" if pop == P else "memory neurons (softmax units)"
    figure_title(fig, f"{_counted(counts, who)} with the highest place score (ties: spatial "
                   f"information; a finite score and a peak at least {MIN_PEAK_FRACTION:.0%} "
                   "of the population's largest in the environment); "
                   f"{map_caption(units, outline=True, unvisited=UNVISITED_GREY_NAME)}")
    return fig


#: Rate maps per population in the ``fam_slots`` figure (most place-like first).
N_FAM_SHOWN = 6


@register("fam_slots")
def fam_slots_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """FAM slots as cells: rate maps of the most spatially informative FAM slots beside the
    most informative memory neurons of the same recording (first environment; ranked by
    spatial information, not the place metric, which is near 1 for any flat map), and the
    place metric and field-count distributions of both populations over every environment,
    and the cell-class fractions and remapping of slots, memory neurons and positional units."""
    full = inputs.need("analysis", "rate_map", "place_score", "n_fields", "spatial_info")
    pops = (FAM_ACTIVITY, MEMORY_ACTIVITY)
    for pop in pops:
        if pop not in full.hippo.populations:
            raise MissingInput(f"the analysis has no {pop!r} population" + (
                " (FAM slots are recorded from model.memory='fam' models only)"
                if pop == FAM_ACTIVITY else ""))
    both = full.isel(unit=np.isin(np.asarray(full["variable"].values).astype(str), pops))
    env = full["env"].values[0]
    single = width == "single"
    if single:  # three maps a population; the distributions side by side (legends below
        # them), the classes and remapping stacked
        n = MAPS_PER_ROW_SINGLE
        fig = new_figure(column_width(width), 9.5)
        grid = fig.add_gridspec(5, n, height_ratios=[1.0, 1.0, 1.9, 2.1, 1.4])
    else:
        n = N_FAM_SHOWN
        fig = new_figure(FULL_WIDTH, 8.4)
        grid = fig.add_gridspec(4, n, height_ratios=[1.0, 1.0, 1.6, 2.4])
    counts = {}
    for i, (pop, name) in enumerate(((FAM_ACTIVITY, "FAM slot"), (MEMORY_ACTIVITY, "memory"))):
        ds = full.hippo.population(pop)
        score, info = ds["place_score"].sel(env=env), ds["spatial_info"].sel(env=env)
        top = _top_units(ds, "spatial_info", env, n)
        counts[pop] = len(top)
        for j in range(n):
            ax = fig.add_subplot(grid[i, j])
            if j == len(top):
                _fewer_units_note(ax, len(top), n, "has a finite\nspatial information")
            if j >= len(top):
                ax.set_axis_off()
                continue
            u = top[j]
            place_map(ds["rate_map"].sel(env=env, unit=u), ax=ax,
                      title=f"{name} {int(ds['unit_index'].sel(unit=u))}\n"
                            f"SI {float(info.sel(unit=u)):.2f}, "
                            f"place {float(score.sel(unit=u)):.2f}")
    dist = grid[2, :].subgridspec(1, 2)
    dists = [place_score_by_population(both["place_score"], ax=fig.add_subplot(dist[0]))]
    # field counts of the (env, unit) pairs in which the unit exists (schema.DENOMINATOR)
    exists = both["rate_map"].notnull().any(("y", "x"))
    dists.append(field_count_by_population(both["n_fields"].where(exists),
                                           ax=fig.add_subplot(dist[1])))
    if single:  # half a column each: labels on two lines, the legend below the panel
        for ax in dists:
            ax.set_xlabel(_two_lines(ax.get_xlabel(), width))
            ax.set_ylabel(_two_lines(ax.get_ylabel(), width))
            handles, labels = ax.get_legend_handles_labels()
            legend_below(ax, LEGEND_DROP_PT + 8, handles=handles, ncol=1, frameon=False,
                         labels=[lab.replace(": ", ":\n", 1) for lab in labels],
                         fontsize=TINY_FONT_SIZE)
    shown = {POPULATION_LABELS[p].replace("\n", " "): p for p in (*pops, G)}
    _classes_and_remapping(fig, grid[3:, :] if single else grid[3, :],
                           {k: (full, p) for k, p in shown.items()},
                           {k: POPULATION_COLORS[p] for k, p in shown.items()}, width,
                           height_ratios=(2.4, 1.6))
    units = full["rate_map"].attrs.get("units", "")
    figure_title(fig, f"{_counted({0: counts[FAM_ACTIVITY]}, 'FAM slots')} (top row) beside "
                   f"{_counted({0: counts[MEMORY_ACTIVITY]}, 'memory neurons')} (second row) "
                   f"with the highest finite spatial information in env {env}, most "
                   "informative first; SI = spatial information "
                   f"({axis_label(full['spatial_info'], 'SI').split('(', 1)[1][:-1]}); "
                   f"{map_caption(units, outline=True, unvisited=UNVISITED_GREY_NAME)}")
    return fig


#: Classes named in the ``session_cells`` figure's titles, in order.
SESSION_CLASS_NAMES = ((IS_GRID, "grid"), (IS_BAND, "band"), (IS_TWO_WAVE, "two-wave"),
                       (IS_SQUARE, "square"), (IS_BORDER, "border"), (IS_PLACE, "place"))


def _classes_of(one) -> str:
    names = [name for c, name in SESSION_CLASS_NAMES if c in one and bool(one[c])]
    return " + ".join(names) or "unclassified"


@register("session_cells")
def session_cells_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Your own cells (the analysis of a session, ``hippo-rep analyse SESSION.nwb``): per
    population, the rate maps (Hz, fields outlined) of up to :data:`N_UNITS_SHOWN` cells,
    classified cells first then by spatial information, with their classes, gridness-60 and
    spacing in cm, and their autocorrelograms."""
    full = inputs.need("analysis", "rate_map", "gridness_60", "spatial_info", IS_GRID, IS_PLACE)
    if full.attrs.get("input_kind") != "session":
        raise MissingInput("the analysis is not of a session (hippo-rep analyse SESSION.nwb)")
    pops = full.hippo.populations
    env = full["env"].values[0]
    shown = [min(N_UNITS_SHOWN, full.hippo.population(p).sizes["unit"]) for p in pops]
    ncols = _maps_per_row(width, max(shown))  # a single column: the cells wrapped, 3 a row
    # rows of cells of each population (a map and its autocorrelogram each), its first row
    blocks = [-(-k // ncols) for k in shown]
    first_row = np.cumsum([0] + [2 * b for b in blocks])
    fig = new_figure(column_width(width) * max(ncols, 3) / _maps_per_row(width),
                     2.9 * sum(blocks))
    axes = fig.subplots(int(first_row[-1]), ncols, squeeze=False)
    for ax in axes.ravel():
        ax.set_axis_off()
    for i, pop in enumerate(pops):
        ds = full.hippo.population(pop).sel(env=env)
        classified = np.zeros(ds.sizes["unit"], dtype=bool)
        for c, _ in SESSION_CLASS_NAMES:
            if c in ds:
                classified |= ds[c].values.astype(bool)
        info = np.nan_to_num(ds["spatial_info"].values, nan=-np.inf)
        order = np.lexsort((-info, ~classified))[:N_UNITS_SHOWN]
        for j, k in enumerate(order):
            r0, c = _wrapped(j, ncols, 2)
            r0 += int(first_row[i])
            one = ds.isel(unit=k)
            m = one["rate_map"]
            cell = str(one["cell_id"].values) if "cell_id" in one.coords else str(k)
            spacing = (f", {float(one['spacing_cm']):.0f} cm"
                       if "spacing_cm" in one and np.isfinite(float(one["spacing_cm"])) else "")
            peak = float(m.max()) if m.notnull().any() else float("nan")
            axes[r0, c].set_axis_on()
            rate_map(m, ax=axes[r0, c], outline_fields=True, colorbar=True, units="",
                     title=f"{pop} {cell}: {_classes_of(one)}\npeak {peak:.1f} Hz\n"
                           f"g60 {float(one['gridness_60']):.2f}{spacing}")
            axes[r0 + 1, c].set_axis_on()
            autocorrelogram(sac_of(m), ax=axes[r0 + 1, c], title="autocorrelogram",
                            colorbar=True)
    bin_cm = _attr(full, "map_bin_size_cm", float("nan"))
    figure_title(
        fig, f"session cells ({', '.join(pops)}): rate maps ({bin_cm:g} cm bins, smoothing σ "
        f"{_attr(full, 'smooth_cm', float('nan')):g} cm, speed > "
        f"{_attr(full, 'min_speed_cm_s', float('nan')):g} cm/s) and autocorrelograms; "
        f"{map_caption('Hz', quantity='firing rate', outline=True, autocorrelograms=True)}")
    return fig


#: Populations of the ``scores`` figure, one row each: (recording variable, row label); the
#: second row is the model's place-like population (TEM-t's memory neurons or TEM's p).
SCORE_POPULATIONS = ((G, "positional units g"), (MEMORY_ACTIVITY, "memory neurons"),
                     (P, "TEM grounded locations p"))


def _attr(ds, name: str, default: float) -> float:
    value = np.asarray(ds.attrs.get(name, default), dtype=float).ravel()
    return float(value[0]) if value.size else float(default)


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


@register("remapping")
def remapping_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """The paper's remapping claim tested: cell-pair structure across environments of
    positional units vs memory neurons against permutation nulls (top), with per-unit and
    population-vector correlations and the TEM grid–place test as secondary panels."""
    ds = inputs.need("analysis", "remap_corr", "pv_corr", "tem_corr", "tem_null_mean",
                     "tem_null_q95", "tem_p", "node_rate", "pair_structure_r",
                     "pair_structure_p")
    if ds.sizes.get("env_pair", 0) == 0:
        raise MissingInput("the analysis dataset has no env_pair (remapping needs at least "
                           "2 environments)")
    grid_var = str(ds.attrs.get("remap_tem_grid_variable", G))
    mem_var = str(ds.attrs.get("remap_tem_memory_variable", MEMORY_ACTIVITY))
    a, b = ds["env_a"].values[0], ds["env_b"].values[0]
    if width == "single":
        # one panel a row, in the same order (half a column is narrower than the three
        # populations' tick labels of a, b, d and e), short enough for a page: the panels
        # low, long y labels on three lines, the caption a step smaller
        fig = new_figure(column_width(width), 9.6)
        axes = fig.subplots(6, 1, height_ratios=[1.1, 1.1, 1.1, 1.2, 1, 1]).reshape(2, 3)
    else:
        fig = new_figure(FULL_WIDTH, 6.0)
        axes = fig.subplots(2, 3)
    pair_vars = [k for k in ds.data_vars if str(k).startswith(("pair_structure", "pair_shift"))]
    pair = ds[pair_vars]
    # the legends of a, b, c and f below them: on one row (c, f: two columns) under a panel
    # as wide as the column, one entry a row under a third of it
    columns = 3 if width == "single" else 1
    pair_structure_test(pair, ax=axes[0, 0], legend_columns=columns)
    axes[0, 0].set_title("cell-pair structure kept?", fontsize=MEDIUM_FONT_SIZE)
    if "pair_shift_match" in pair:
        pair_structure_test(pair, ax=axes[0, 1], stat="pair_shift", legend_columns=columns)
        axes[0, 1].set_title("pair offsets kept?\n(shift-tolerant)", fontsize=MEDIUM_FONT_SIZE)
    else:
        axes[0, 1].text(0.5, 0.5, "no shift-tolerant test\n(the analysis has no\n"
                        "pair_shift_match)", transform=axes[0, 1].transAxes, ha="center",
                        va="center", fontsize=MEDIUM_FONT_SIZE)
        axes[0, 1].set_axis_off()
    for v in (grid_var, mem_var):
        if v in np.asarray(ds["population"].values).tolist():
            rate = ds.hippo.population(v)["node_rate"]
            pair_scatter(unit_pair_matrix(rate, a), unit_pair_matrix(rate, b), v,
                         ax=axes[0, 2], title=f"unit pairs, env {a} vs env {b}",
                         legend_columns=min(columns, 2))
    remap_by_population(ds["remap_corr"], ax=axes[1, 0])
    axes[1, 0].set_title("per-unit correlation\n(secondary; see note)", fontsize=MEDIUM_FONT_SIZE)
    pv_by_population(ds["pv_corr"], ax=axes[1, 1])
    axes[1, 1].set_title("population vectors\n(secondary)", fontsize=MEDIUM_FONT_SIZE)
    tem_test(ds[["tem_corr", "tem_null_mean", "tem_null_q95", "tem_p"]], ax=axes[1, 2],
             legend_columns=min(columns, 2))
    # its longest line no wider than the panel (the panel is at the figure's right edge)
    axes[1, 2].set_title(f"TEM test ({grid_var} at\n{mem_var} peaks)", fontsize=MEDIUM_FONT_SIZE)
    if width == "single":  # low panels: long y labels on three lines
        for ax in axes.ravel():
            ax.set_ylabel(_three_lines(ax.get_ylabel()))
    title = (f"remapping across {ds.sizes['env']} environments ({ds.sizes['env_pair']} "
             f"pairs; {ds.attrs.get('remap_pair_shuffles', '?')} permutations per null). "
             f"Memory-neuron identity across environments: {MEMORY_IDENTITY}. "
             f"Note on d: {PER_UNIT_NOTE}.")
    figure_title(fig, title, _size(FIGURE_TITLE_FONT_SIZE, width))
    _label_panels(axes.ravel())
    return fig


@register("passkey")
def passkey_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """PassKey accuracy against filler length per variant, and the mean over long fillers."""
    from hippo_rep.tasks.results import CHANCE

    rows = inputs.need_passkey()
    fig, axes = _panel_row(width, 2, 3.2, 5.6, width_ratios=[1.6, 1], height_ratios=[1.3, 1])
    passkey_curves(rows, ax=axes[0], chance=CHANCE)
    passkey_long_filler(rows, ax=axes[1], chance=CHANCE)
    seeds = sorted({int(r.get("n_seeds", 1)) for r in rows})
    bars = "95% Wilson intervals of the pooled prompts" if all("ci_low" in r for r in rows) \
        else "± SD"
    figure_title(fig, f"PassKey retrieval (mean over {'/'.join(map(str, seeds))} seed(s), "
                   f"{bars}; chance {CHANCE:.3f})", _size(FONT_SIZE, width))
    _label_panels(axes)
    return fig


@register("memory_delay")
def memory_delay_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Long-delay loop closure: accuracy on returning home against excursion length for the
    memory variants of trained TEM-t runs (``hippo-rep figures --delay RESULT``, repeated for
    seeds: points), beside their per-step time and memory against D when ``--delay-cost``
    gives the benchmark's JSON."""
    ds = inputs.need("delay", "accuracy")
    cost = inputs.delay_cost
    if width == "single":  # the column's width; the cost panels below the accuracy
        fig = new_figure(column_width(width), 2.6 + (4.4 if cost else 0))
        axes = fig.subplots(3 if cost else 1, 1, squeeze=False,
                            height_ratios=[1.3, 1, 1] if cost else None).T
    else:
        # with the cost panels: the three in the double column, one legend below them
        fig = new_figure(FULL_WIDTH if cost else HALF_WIDTH + 1.2, 2.9 if cost else 2.6)
        axes = fig.subplots(1, 3 if cost else 1, squeeze=False,
                            width_ratios=[1.15, 1, 1] if cost else None)  # a's long title
    ax = axes[0, 0]
    plot_delay(ds, ax=ax)
    if cost and width != "single":  # the variants' colours are those of every panel
        handles, labels = ax.get_legend_handles_labels()
        ax.get_legend().remove()
        fig.legend(handles, labels, loc="outside lower center", ncols=len(labels),
                   fontsize=SMALL_FONT_SIZE, frameon=False)
    if cost:
        for a, key in zip(axes[0, 1:], ("ms_per_step", "kb_per_step"), strict=True):
            plot_delay_cost(cost, key, ax=a)
            if width != "single":  # a third of the column: the x label wider than the axes
                a.set_xlabel(a.get_xlabel().replace(" (", "\n(", 1))
        axes[0, 1].set_title("per-step cost (benchmark)", fontsize=MEDIUM_FONT_SIZE)
        _label_panels(axes[0])
    window = ds.attrs.get("window_steps", "?")
    ax.set_title(f"memory after an excursion{chr(10) if cost else ' '}(window {window} steps, "
                 f"{ds.attrs.get('fam_slots', '?')} FAM slots)", fontsize=MEDIUM_FONT_SIZE)
    return fig


#: Range of the gridness histograms of the ``scores`` figure ("deepmind" scores of near-empty
#: shuffled memory-neuron maps reached 9.4 on the shipped data: its ring correlations are
#: divided by the ring variance of the unrotated autocorrelogram plus 1e-5, not by both).
GRIDNESS_SHOWN = (-2.0, 2.0)

#: Panels of the sweep figure: (variable, selection of its other dims).
SWEEP_PANELS = (("accuracy", {"agent": "model", "step_type": "revisit_new_edge"}),
                ("grid_fraction", {}))


@register("sweep")
def sweep_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """A training sweep: held-out loop-closure accuracy and the fraction of grid-like
    positional units by grid value, seeds as points (``hippo-rep figures --sweep DIR``)."""
    ds = inputs.sweep
    if ds is None:
        raise MissingInput("needs a training sweep (--sweep DIR)")
    if not (ds["status"] == "done").any():
        raise MissingInput("the sweep has no finished run")
    fig, axes = _panel_row(width, len(SWEEP_PANELS), 2.8, 2.3 * len(SWEEP_PANELS) + 0.4)
    for ax, (var, sel) in zip(axes, SWEEP_PANELS, strict=True):
        plot_sweep(ds, var, ax=ax, select=sel)
    n_done, n = int((ds["status"] == "done").sum()), ds["status"].size
    figure_title(fig, f"sweep {ds.attrs.get('sweep_path', '')}: {n_done} of {n} runs finished",
                 _size(FONT_SIZE, width))
    _label_panels(axes)
    return fig


def _kind(result: dict) -> str:
    return result.get("meta", {}).get("model_kind", "")


def read_eval(path) -> dict:
    """An evaluation JSON, checked for the keys figures use."""

    path = Path(path)
    data = read_json(path, FigureError, "evaluation file")
    for key in ("model", "node_agent", "edge_agent", "curve"):
        if not isinstance(data, dict) or key not in data:
            raise FigureError(f"{str(path)!r} is not an evaluation JSON (no {key!r})")
    for key in ("model", "node_agent", "edge_agent"):
        if not isinstance(data[key], dict):
            raise FigureError(f"{str(path)!r}: {key!r} is not a table of accuracies")
    return data


def read_learning_speed(path) -> dict:
    """A learning-speed JSON (``bench_tem_vs_temt.py --learning``), checked for what the
    ``learning_speed`` figure reads (FigureError naming the file and the field)."""
    path = Path(path)
    data = read_json(path, FigureError, "learning-speed file")
    if not isinstance(data, dict) or data.get("kind") != LEARNING_SPEED_KIND:
        raise FigureError(f"{str(path)!r} is not a learning-speed JSON (kind is not "
                          f"{LEARNING_SPEED_KIND!r})")
    runs = data.get("runs")
    if not isinstance(runs, dict) or not runs:
        raise FigureError(f"{str(path)!r}: 'runs' is not a table of models")
    for kind, rows in runs.items():
        if not isinstance(rows, list) or not rows or not all(
                isinstance(r, dict) and {"updates", "seconds", "zero_shot"} <= r.keys()
                for r in rows):
            raise FigureError(f"{str(path)!r}: runs.{kind} is not a list of evaluations with "
                              "updates, seconds and zero_shot")
    if not isinstance(data.get("node_agent"), (int, float)):
        raise FigureError(f"{str(path)!r}: 'node_agent' is not a number")
    return data


def load_inputs(analysis=None, recording=None, evals=(), passkey=None,
                missing_ok: bool = False, sweep=None, delay=None,
                learning_speed=None, tem_analysis=None, delay_cost=None) -> FigureInputs:
    """Read the figures' inputs from files.

    Parameters
    ----------
    analysis : path, optional
        Analysis dataset (``hippo-rep analyse`` output, ``.nc`` or ``.zarr``).
    recording : path, optional
        Recording (``.nc`` or ``.zarr``).
    evals : sequence of path
        Evaluation JSONs (``hippo-rep evaluate``), labelled by their ``meta.model_kind``
        (:data:`MODEL_LABELS`).
    passkey : path, optional
        A PassKey sweep folder or its ``sweep.json``.
    missing_ok : bool
        Leave out inputs whose path does not exist (their figures are then skipped with the
        reason) instead of raising FileNotFoundError.
    sweep : path, optional
        A training sweep folder (``hippo-rep sweep --out``), read by
        :func:`hippo_rep.sweep.open_sweep`.
    delay : path or sequence of path, optional
        ``hippo-rep delay`` results (``.nc`` or ``.json``), e.g. one per seed; several are
        stacked along a ``run`` dim.
    delay_cost : path, optional
        The JSON of ``benchmarks/bench_memory_variants.py --json`` (needs ``rows``).
    learning_speed : path, optional
        A learning-speed JSON (``benchmarks/bench_tem_vs_temt.py --learning``).
    tem_analysis : path, optional
        The analysis of a TEM recording (for ``tem_vs_temt``, beside ``analysis``).

    Returns
    -------
    FigureInputs
    """
    def present(path) -> bool:
        if path is None or str(path) == "":
            return False
        if missing_ok and not Path(path).exists():
            return False
        return True

    out = FigureInputs()
    delays = [p for p in ([delay] if isinstance(delay, str | Path) else delay or ())
              if present(p)]
    if delays:
        from hippo_rep.tasks.results import read_delay

        runs = [read_delay(p) for p in delays]
        out.delay = runs[0] if len(runs) == 1 else xr.concat(
            runs, dim="run", data_vars=["accuracy", "n_scored", "walk_steps"], coords="minimal",
            compat="override", combine_attrs="drop_conflicts")
    if present(delay_cost):
        data = read_json(delay_cost, FigureError, "delay cost")
        rows = data.get("rows") if isinstance(data, dict) else None
        if not rows or any(k not in r for r in rows for k in ("variant", "delay", "ms_per_step",
                                                                "kb_per_step")):
            raise FigureError(f"{str(delay_cost)!r} is not a bench_memory_variants JSON (needs "
                              "rows with variant, delay, ms_per_step, kb_per_step)")
        out.delay_cost = rows
    for path in evals:
        if present(path):
            res = read_eval(path)
            kind = res.get("meta", {}).get("model_kind", "model")
            out.evals[MODEL_LABELS.get(kind, kind)] = res
    if present(analysis):
        out.analysis = open_analysis(analysis)
    if present(recording):
        out.recording = open_recording(recording)
    if present(passkey):
        from hippo_rep.tasks.results import read_sweep

        out.passkey = read_sweep(passkey)
    if present(sweep):
        out.sweep = open_sweep(sweep)
    if present(learning_speed):
        out.learning_speed = read_learning_speed(learning_speed)
    if present(tem_analysis):
        out.tem_analysis = open_analysis(tem_analysis)
    return out


def build_figures(inputs: FigureInputs, out_dir, only=None,
                  formats=DEFAULT_FORMATS,
                  width: str = DEFAULT_COLUMN) -> dict[str, list[Path] | str]:
    """Build the registered figures (or those in ``only``) into ``out_dir``, each at
    ``width``: "double" (a double column, the default) or "single" (a single column, each
    figure laid out for it; :data:`WIDTHS`).

    Each figure is a bare Figure (no pyplot, no backend chosen) drawn and saved in the paper
    style (:func:`~hippo_rep.plotting.style.paper_style`); ``matplotlib.rcParams`` is the
    same afterwards. Every file is written atomically (a temporary file renamed onto it).

    Returns
    -------
    dict
        Figure name → list of written files, or the one-line reason it was skipped.
    """
    names = list(FIGURES) if not only else list(only)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise FigureError(f"unknown figure(s) {', '.join(unknown)}; known: "
                          f"{', '.join(FIGURES)}")
    bad = [f for f in formats if f not in DEFAULT_FORMATS]
    if bad:
        raise FigureError(f"unknown format(s) {', '.join(bad)}; use {', '.join(DEFAULT_FORMATS)}")
    _check_width(width)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, list[Path] | str] = {}
    for name in names:
        try:
            fig = FIGURES[name](inputs, width=width)
        except (MissingInput, SchemaError) as why:  # an input lacking what it needs
            report[name] = f"skipped: {why}"
            continue
        paths = []
        # saved in the style too: matplotlib reads savefig.* and the font types when saving
        with paper_style(width):
            for fmt in formats:
                path = out / f"{name}.{fmt}"
                atomic_write(path, lambda tmp, fig=fig, fmt=fmt: fig.savefig(
                    tmp, format=fmt, dpi=PNG_DPI))
                paths.append(path)
        report[name] = paths
    return report
