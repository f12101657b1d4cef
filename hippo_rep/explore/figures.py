"""Figures of the notebooks built outside pyplot: one unit's rate map, autocorrelogram and
scores; a unit across environments; class fractions; place fields; any registered figure.

Every function returns a bare :class:`matplotlib.figure.Figure` (not registered with pyplot,
so an inline backend shows it once) drawn in the paper style; show it with
:func:`hippo_rep.plotting.display.show` or save it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# matplotlib and IPython are imported where a figure is made.
from hippo_rep.analysis import autocorrelogram as sac_of
from hippo_rep.explore.tables import (
    ExploreError,
    _unit_of,
    map_problem,
    rank_key,
    unit_scores,
)
from hippo_rep.figures import FIGURES, FigureInputs, MissingInput
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.display import display_in_ipython
from hippo_rep.plotting.maps import autocorrelogram, map_caption, rate_map
from hippo_rep.plotting.scores import (
    axis_label,
    class_fraction_bars,
    count_distribution,
    score_histogram,
    scores_text,
)
from hippo_rep.plotting.style import (
    FONT_SIZE,
    FULL_WIDTH,
    HALF_WIDTH,
    SMALL_FONT_SIZE,
    new_figure,
    paper_style,
)
from hippo_rep.schema import CLASS_DIM, MEMORY_POPULATIONS

#: Size of one explorer figure (rate map, autocorrelogram, scores), inches: the width and
#: the least height (it grows with the lines of scores, :data:`SCORE_LINE_INCHES` each).
UNIT_FIGSIZE = (FULL_WIDTH, 2.4)

#: Height of one line of the explorer's scores text (7 pt monospace), inches, and the lines'
#: worth of room its title and the figure's padding take.
SCORE_LINE_INCHES = 0.135
SCORE_EXTRA_LINES = 4

#: Maps per row of the "compare environments" figure.
COMPARE_COLUMNS = 4

#: Size of one map of the "compare environments" figure, inches.
COMPARE_PANEL_INCHES = 1.6

#: Short names of ranking scores in map titles.
SHORT_NAMES = {"gridness_60": "g60", "spatial_info": "SI"}


def unit_figure(analysis, env, variable: str, unit_index: int, fig=None):
    """Rate map, spatial autocorrelogram and scores of one unit in one environment.

    A pure plotting function, like the panels of :mod:`hippo_rep.plotting`: it draws into
    ``fig`` (or a new one) and returns it; no pyplot figure is made, nothing is shown or
    saved, and the global style is left as it was (the paper style applies while drawing).

    Parameters
    ----------
    analysis : xarray.Dataset
        With ``rate_map`` (env, unit, y, x) and the scores.
    env : env coordinate value
    variable : str
        Population ("g", "g_pi", "memory_activity").
    unit_index : int
        Index of the unit within its population.
    fig : matplotlib.figure.Figure or SubFigure, optional
        Where to draw (three panels side by side); default a new
        :class:`~matplotlib.figure.Figure` of :data:`UNIT_FIGSIZE` with constrained layout.

    Returns
    -------
    matplotlib.figure.Figure or SubFigure
        ``fig``, or the new figure: not registered with pyplot: display it with
        :func:`hippo_rep.plotting.display.show` (or return it from a cell after
        :func:`hippo_rep.plotting.display.register_figure_formatter`), or save it.

    Raises
    ------
    ExploreError
        With the one-line reason of :func:`map_problem` (before anything is drawn).
    """
    why = map_problem(analysis, env, variable, unit_index)
    if why:
        raise ExploreError(why)
    unit = _unit_of(analysis, variable, unit_index)
    m = analysis["rate_map"].sel(env=env, unit=unit)
    units = analysis["rate_map"].attrs.get("units") or "activity units"
    scores = unit_scores(analysis, env, variable, unit_index)
    with paper_style():
        if fig is None:
            height = max(UNIT_FIGSIZE[1], SCORE_LINE_INCHES * (len(scores) + SCORE_EXTRA_LINES))
            fig = new_figure(UNIT_FIGSIZE[0], height)
        axes = fig.subplots(1, 3, width_ratios=[1, 1, 1.3])
        # slim colour bars beside the maps, as every map of the package has
        rate_map(m, ax=axes[0], outline_fields=variable in MEMORY_POPULATIONS,
                 title=f"rate map, env {env}\n{variable} {unit_index}", colorbar=True,
                 units=f"mean activity ({units})")
        autocorrelogram(sac_of(m), ax=axes[1], title="spatial autocorrelogram",
                        colorbar=True)
        scores_text(scores, ax=axes[2], title="scores (pctl: vs own shuffle null)")
    return fig


def _score_title(analysis, env, unit, key: str | None) -> str:
    if key is None:
        return f"env {env}"
    v = float(analysis[key].sel(env=env, unit=unit))
    text = f"env {env}\n{SHORT_NAMES.get(key, key)} {v:.2f}"
    pct = f"{key}_percentile"
    if pct in analysis.data_vars:
        p = float(analysis[pct].sel(env=env, unit=unit))
        text += f" (null pctl {p:.0f})" if np.isfinite(p) else ""
    return text


def compare_figure(analysis, variable: str, unit_index: int, envs: Sequence | None = None):
    """The same unit's rate map in every environment, side by side, each titled with its
    ranking score and that score's percentile in the unit's own shuffle null.

    Parameters
    ----------
    analysis : xarray.Dataset
        With ``rate_map`` (env, unit, y, x).
    variable : str
        Population.
    unit_index : int
        Index of the unit within its population.
    envs : sequence, optional
        Environments shown (default: all), in rows of :data:`COMPARE_COLUMNS`.

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot. Each map has its own colour scale (activity units) and
        colour bar, ticked at its lowest value and peak; an environment where the map is
        all NaN is marked "no map".

    Raises
    ------
    ExploreError
        No rate maps, no such unit, or an all-NaN map in every environment shown.
    """
    if "rate_map" not in analysis.data_vars:
        raise ExploreError("the analysis dataset has no rate maps (variable rate_map)")
    unit = _unit_of(analysis, variable, unit_index)
    envs = list(analysis["env"].values) if envs is None else list(envs)
    maps = analysis["rate_map"].sel(unit=unit, env=envs)
    finite = np.isfinite(maps.values).reshape(len(envs), -1).any(axis=1)
    if not finite.any():
        raise ExploreError(f"{variable} unit {unit_index} has an all-NaN rate map in every "
                           "environment: nothing to draw")
    key = rank_key(analysis, variable)
    ncol = min(len(envs), COMPARE_COLUMNS)
    nrow = -(-len(envs) // ncol)
    units = analysis["rate_map"].attrs.get("units", "")
    title = (f"{variable} unit {unit_index} in {len(envs)} environments, a colour bar per map; "
             f"{map_caption(units, outline=variable in MEMORY_POPULATIONS)}")
    if "remap_corr_mean" in analysis.data_vars:
        r = float(analysis["remap_corr_mean"].sel(unit=unit))
        title += f"; mean remap corr r = {r:.2f}" if np.isfinite(r) else ""
    with paper_style():
        fig = new_figure(COMPARE_PANEL_INCHES * ncol, COMPARE_PANEL_INCHES * nrow + 0.3)
        axes = np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False)).ravel()
        for ax, env, ok in zip(axes, envs, finite, strict=False):
            if ok:
                rate_map(maps.sel(env=env), ax=ax, title=_score_title(analysis, env, unit, key),
                         outline_fields=variable in MEMORY_POPULATIONS, colorbar=True,
                         units="")
            else:
                ax.text(0.5, 0.5, f"env {env}\nno map (all NaN)", ha="center", va="center",
                        transform=ax.transAxes, fontsize=SMALL_FONT_SIZE)
                ax.set_axis_off()
        for ax in axes[len(envs):]:
            ax.set_axis_off()
        figure_title(fig, title)
    return fig


def registry_figure(name: str, width: str = "double", **inputs):
    """One figure of the registry (:data:`hippo_rep.figures.FIGURES`) from data in memory.

    Parameters
    ----------
    name : str
        A registered figure (e.g. "scores", "remapping", "grid_cells", "place_cells").
    width : {"double", "single"}
        The journal column width it is laid out for (:data:`hippo_rep.figures.WIDTHS`).
    **inputs
        Fields of :class:`hippo_rep.figures.FigureInputs` (``analysis=``, ``recording=``, …).

    Returns
    -------
    matplotlib.figure.Figure
        Drawn in the paper style on a bare Figure (not registered with pyplot, so an inline
        backend does not show it a second time); show it with
        :func:`hippo_rep.plotting.display.show` or save it.

    Raises
    ------
    ExploreError
        An unknown name, or the reason the figure cannot be built (a missing variable).
    """
    if name not in FIGURES:
        raise ExploreError(f"unknown figure {name!r}; registered: {', '.join(FIGURES)}")
    try:
        return FIGURES[name](FigureInputs(**inputs), width=width)  # in the paper style
    except MissingInput as why:
        raise ExploreError(f"figure {name!r} cannot be built: {why}") from None


def class_fraction_figure(analysis):
    """Fractions of (unit, environment) pairs in each class, per population, each bar
    labelled with its count and denominator (``k/n``).

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot.
    """
    c = analysis.hippo.summary()
    with paper_style():
        fig = new_figure(HALF_WIDTH + 1, 0.5 + 0.45 * c.sizes[CLASS_DIM]
                         * max(1, c.sizes["population"]) ** 0.5)
        class_fraction_bars(c, ax=fig.subplots(),
                            title="classes (rules in the dataset's classify_rule_* attrs)")
    return fig


def field_figure(analysis):
    """Place-field size and count distributions per population.

    Top row: areas of every detected field (bins) of every (unit, environment) map; bottom
    row: the fraction of maps with each number of fields.

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot.
    """
    missing = [v for v in ("field_area", "n_fields") if v not in analysis.data_vars]
    if missing:
        raise ExploreError(f"the analysis dataset lacks variable(s) {', '.join(missing)}")
    pops = analysis.hippo.populations
    with paper_style():
        fig = new_figure(FULL_WIDTH, 4.2)
        axes = fig.subplots(2, len(pops), squeeze=False)
        for j, p in enumerate(pops):
            sub = analysis.hippo.population(p)
            maps = sub.sizes["env"] * sub.sizes["unit"]
            score_histogram(sub["field_area"], ax=axes[0, j],
                            title=f"{p}: place-field area (largest {sub.sizes['field']} per map)",
                            xlabel=axis_label(analysis["field_area"], "field area"))
            count_distribution(sub["n_fields"], ax=axes[1, j], xlabel="fields per map",
                               title=f"{p}: place fields per map ({maps} maps)")
        fig.suptitle("place fields of every (unit, environment) rate map", fontsize=FONT_SIZE)
    return fig


def show_figures(report: dict, fmt: str = "png") -> list:
    """Display the files of one format from a :func:`hippo_rep.figures.build_figures` report
    and print the reason of every skipped figure.

    Parameters
    ----------
    report : dict
        Figure name → list of written paths, or the reason it was skipped.
    fmt : str
        Format displayed ("png"; others are listed only).

    Returns
    -------
    list of pathlib.Path
        The files displayed.
    """
    from pathlib import Path

    shown = []
    for name, res in report.items():
        if isinstance(res, str):
            print(f"{name}: {res}")
            continue
        paths = [Path(p) for p in res]
        print(f"{name}: {', '.join(str(p) for p in paths)}")
        for p in paths:
            if p.suffix == f".{fmt}" and fmt == "png":
                try:
                    from IPython.display import Image
                except ImportError:
                    continue
                display_in_ipython(Image(filename=str(p)))
                shown.append(p)
    return shown
