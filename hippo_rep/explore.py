"""Helpers of the notebooks: tables of an analysis dataset, statistics figures and an
interactive rate-map explorer.

Everything the notebooks in ``notebooks/`` compute lives here, so the notebooks stay thin and
the logic is tested. Figures are built as :class:`matplotlib.figure.Figure` objects outside
pyplot (no global state, nothing shown twice) in the paper style and shown in Jupyter as
images by :mod:`hippo_rep.plotting.display` (PNG at 2× resolution, or SVG).

The explorer (:func:`explore_rate_maps`) uses ipywidgets when it can be imported (pick an
environment, a population and a unit — from a list or a slider ordered by score — and see its
rate map, autocorrelogram and scores with their null percentiles, or its maps in every
environment side by side) and otherwise shows static panels of the top units of each
population. A map that cannot be drawn shows its one-line reason instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# matplotlib, IPython and ipywidgets (optional) are imported where a figure or widget is made.
from hippo_rep.analysis import autocorrelogram as sac_of
from hippo_rep.figures import FIGURES, FigureInputs, MissingInput
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.display import (
    DEFAULT_FORMAT,
    FORMATS,
    display_in_ipython,
    display_output,
    register_figure_formatter,
    text_output,
)
from hippo_rep.plotting.display import show as show_figure
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
from hippo_rep.schema import (
    CLASS_DIM,
    CLASS_LABELS,
    CLASSES,
    G_PI,
    MEMORY_ACTIVITY,
    MEMORY_POPULATIONS,
    G,
    SchemaError,
)

#: Per-(env, unit) variables of :func:`unit_table` (those present are used).
UNIT_TABLE_COLUMNS = (
    "gridness_60",
    "gridness_60_percentile",
    "gridness_90",
    "spacing_nodes",
    "orientation",
    "spatial_info",
    "spatial_info_percentile",
    "place_score",
    "n_fields",
    "n_waves",
    "hexagonal",
    "triad_phase",
    "lattice",
    "plane_wave_share",
    *CLASSES,
)

#: Per-unit variables (no env dim) added to :func:`unit_table` when present.
UNIT_ONLY_COLUMNS = ("remap_corr_mean",)

#: Score that ranks the units of each population in the explorer (highest first); other
#: populations use :data:`DEFAULT_RANK_SCORE`.
RANK_SCORE = {G: "gridness_60", G_PI: "gridness_60", MEMORY_ACTIVITY: "spatial_info"}

#: Ranking score of populations not in :data:`RANK_SCORE`.
DEFAULT_RANK_SCORE = "spatial_info"

#: Units per population shown by the static explorer (no ipywidgets).
STATIC_UNITS = 2

#: Size of one explorer figure (rate map, autocorrelogram, scores), inches: the width and
#: the least height (it grows with the lines of scores, :data:`SCORE_LINE_INCHES` each).
UNIT_FIGSIZE = (FULL_WIDTH, 2.4)

#: Height of one line of the explorer's scores text (7 pt monospace), inches, and the lines'
#: worth of room its title and the figure's padding take.
SCORE_LINE_INCHES = 0.135
SCORE_EXTRA_LINES = 4

#: Rendered panels the explorer keeps (oldest dropped first), so going back is instant.
EXPLORER_CACHE = 64

#: Maps per row of the "compare environments" figure.
COMPARE_COLUMNS = 4

#: Size of one map of the "compare environments" figure, inches.
COMPARE_PANEL_INCHES = 1.6

#: Short names of ranking scores in map titles.
SHORT_NAMES = {"gridness_60": "g60", "spatial_info": "SI"}

#: Scores written on the explorer's text panel: variable → label with units.
UNIT_SCORES = {
    "gridness_60": "gridness-60 (1)",
    "gridness_60_percentile": "gridness-60 vs null (pctl)",
    "gridness_90": "gridness-90 (1)",
    "spacing_nodes": "spacing (node spacings)",
    "orientation": "orientation (deg)",
    "spatial_info": "spatial info (bits/activity)",
    "spatial_info_percentile": "spatial info vs null (pctl)",
    "place_score": "place score (1)",
    "n_fields": "place fields (count)",
    "n_waves": "plane waves (count)",
    "hexagonal": "hexagonal (3 waves at 60°, a lattice)",
    "triad_phase": "triad phase ψ (deg)",
    "lattice": "lattice (peaks / troughs)",
    "plane_wave_share": "plane-wave share of variance (1)",
    **CLASS_LABELS,
    "remap_corr_mean": "remap corr (Pearson r)",
}


class ExploreError(ValueError):
    """A unit, environment or population that is not in the analysis dataset."""


def unit_table(analysis, columns: Sequence[str] = UNIT_TABLE_COLUMNS):
    """One row per (environment, unit) with its scores.

    Parameters
    ----------
    analysis : xarray.Dataset
        An analysis dataset (:func:`hippo_rep.analysis.analyse`).
    columns : sequence of str
        Per-(env, unit) variables to include (missing ones are left out);
        :data:`UNIT_ONLY_COLUMNS` are added when present.

    Returns
    -------
    pandas.DataFrame
        Index (env, variable, unit_index); one column per score, in the dataset's units
        (``spacing_nodes`` in node spacings, ``spatial_info`` in bits per unit activity,
        percentiles in percent, ``is_*`` bool).
    """
    import xarray as xr

    cols = [c for c in columns if c in analysis.data_vars]
    if not cols:
        raise ExploreError(f"the analysis dataset holds none of {', '.join(columns)}")
    ds = xr.Dataset({c: analysis[c] for c in cols})
    for c in UNIT_ONLY_COLUMNS:
        if c in analysis.data_vars and analysis[c].dims == ("unit",):
            ds[c] = analysis[c].broadcast_like(ds[cols[0]])
    df = ds.to_dataframe().reset_index()
    keep = ["env", "variable", "unit_index", *cols,
            *[c for c in UNIT_ONLY_COLUMNS if c in ds]]
    return df[keep].set_index(["env", "variable", "unit_index"]).sort_index()


def classification_summary(analysis):
    """Per population: how many (unit, environment) pairs exist, the fractions in each class
    and median scores.

    The fractions are :func:`~hippo_rep.schema.class_fractions` (the one
    definition, also used by the sweep, the ``scores`` figure and ``hippo-rep analyse``):
    over the (env, unit) pairs in which the unit exists (memory slots not written in an
    environment are left out).

    Returns
    -------
    pandas.DataFrame
        Index ``variable``; columns ``n`` (unit × environment pairs that exist: the
        denominator), ``frac_<class>`` for each class flag present (``frac_grid``,
        ``frac_grid_threshold``, ``frac_band``, ``frac_two_wave``, ``frac_square``,
        ``frac_place``; fractions, 0–1), ``median_gridness_60`` (1),
        ``median_spatial_info`` (bits per unit activity) and, when present,
        ``median_remap_corr`` (Pearson r over units).
    """
    fr = analysis.hippo.summary()
    frac = fr["fraction"].to_pandas()  # population x class
    out = fr["denominator"].isel({CLASS_DIM: 0}, drop=True).to_pandas().to_frame("n")
    out.index.name = "variable"
    for c in fr[CLASS_DIM].values:
        out[f"frac_{str(c).removeprefix('is_')}"] = frac[c]
    df = unit_table(analysis).reset_index()
    g = df.groupby("variable", sort=False)
    for col in ("gridness_60", "spatial_info"):
        if col in df:
            out[f"median_{col}"] = g[col].median()
    if "remap_corr_mean" in analysis.data_vars:
        rc = analysis["remap_corr_mean"].to_dataframe().reset_index()
        out["median_remap_corr"] = rc.groupby("variable", sort=False)["remap_corr_mean"].median()
    out.attrs["denominator"] = fr.attrs["denominator"]
    return out


def remapping_table(analysis):
    """Per environment pair: the population-vector correlation of each population and the
    TEM test (observed correlation, null mean and 95th percentile, p, memories used).

    Returns
    -------
    pandas.DataFrame
        Index (env_a, env_b); columns ``pv_corr_<population>`` and ``tem_*`` (Pearson r,
        unitless; p a probability; ``tem_n_memories`` a count).
    """
    need = [v for v in ("pv_corr",) if v not in analysis.data_vars]
    if need or analysis.sizes.get("env_pair", 0) == 0:
        raise ExploreError("the analysis dataset has no remapping (pv_corr over env_pair): "
                           "it needs at least 2 environments")
    pv = analysis["pv_corr"].transpose("env_pair", "population").values
    pops = [str(p) for p in analysis["population"].values]
    import pandas as pd

    data = {"env_a": analysis["env_a"].values, "env_b": analysis["env_b"].values}
    data.update({f"pv_corr_{p}": pv[:, i] for i, p in enumerate(pops)})
    for k in ("tem_corr", "tem_null_mean", "tem_null_q95", "tem_p", "tem_n_memories"):
        if k in analysis.data_vars:
            data[k] = analysis[k].values
    return pd.DataFrame(data).set_index(["env_a", "env_b"])


def _unit_of(analysis, variable: str, unit_index: int):
    """The ``unit`` coord of (variable, unit_index)."""
    match = (analysis["variable"] == variable) & (analysis["unit_index"] == int(unit_index))
    units = analysis["unit"].values[np.asarray(match.values)]
    if units.size == 0:
        raise ExploreError(f"no unit {unit_index} of population {variable!r} in the analysis "
                           f"(populations: {', '.join(analysis.hippo.populations)})")
    return units[0]


def _extra_score_vars(analysis) -> list[str]:
    """(env, unit) classes (``is_*``) and null percentiles (``*_percentile``) of the dataset
    that :data:`UNIT_SCORES` does not name (e.g. classes added by later analyses)."""
    return [k for k, da in analysis.data_vars.items()
            if k not in UNIT_SCORES and set(da.dims) == {"env", "unit"}
            and (k.startswith("is_") or k.endswith("_percentile"))]


def rank_key(analysis, variable: str) -> str | None:
    """The score that ranks a population's units: :data:`RANK_SCORE` (or
    :data:`DEFAULT_RANK_SCORE`) when the dataset has it, else None (units in index order)."""
    for key in (RANK_SCORE.get(variable, DEFAULT_RANK_SCORE), DEFAULT_RANK_SCORE):
        if key in analysis.data_vars:
            return key
    return None


def ranked_units(analysis, env, variable: str) -> list[tuple[int, float]]:
    """(unit_index, score) of a population's units in one environment, best first.

    The score is :func:`rank_key` of the population (NaN last; all NaN, in index order,
    when the dataset has no ranking score).
    """
    if env not in analysis["env"].values:
        raise ExploreError(f"no environment {env!r}; environments: "
                           f"{', '.join(map(str, analysis['env'].values))}")
    try:
        sub = analysis.hippo.population(variable)
    except SchemaError as err:
        raise ExploreError(str(err)) from None
    key = rank_key(analysis, variable)
    if key is None:
        score = np.full(sub.sizes["unit"], np.nan)
    else:
        score = np.asarray(sub[key].sel(env=env).values, dtype=float)
    order = np.argsort(-np.where(np.isfinite(score), score, -np.inf), kind="stable")
    idx = sub["unit_index"].values
    return [(int(idx[i]), float(score[i])) for i in order]


def unit_scores(analysis, env, variable: str, unit_index: int) -> dict[str, object]:
    """The :data:`UNIT_SCORES` of one unit in one environment (label with units → value),
    then any other class (``is_*``) or null percentile (``*_percentile``) of the dataset."""
    sel = analysis.sel(unit=_unit_of(analysis, variable, unit_index))
    labels = dict(UNIT_SCORES)
    for k in _extra_score_vars(analysis):
        units = analysis[k].attrs.get("units")
        labels[k] = f"{k} ({units})" if units else k
    out: dict[str, object] = {}
    for k, label in labels.items():
        if k not in analysis.data_vars:
            continue
        da = sel[k].sel(env=env) if "env" in sel[k].dims else sel[k]
        v = da.values.item() if da.size == 1 else da.values
        out[label] = bool(v) if isinstance(v, (bool, np.bool_)) else v
    return out


def map_problem(analysis, env, variable: str, unit_index: int) -> str | None:
    """Why one unit's rate map in one environment cannot be drawn (one line), or None.

    Reasons: no ``rate_map`` in the dataset, no such unit, a population without any map in
    that environment (all NaN), or a unit whose map is all NaN.
    """
    if "rate_map" not in analysis.data_vars:
        return "the analysis dataset has no rate maps (variable rate_map)"
    try:
        unit = _unit_of(analysis, variable, unit_index)
    except ExploreError as err:
        return str(err)
    if not np.isfinite(analysis["rate_map"].sel(env=env, unit=unit).values).any():
        pop = analysis.hippo.population(variable)["rate_map"].sel(env=env)
        if not np.isfinite(pop.values).any():
            return (f"population {variable!r} has no rate maps in env {env} (all NaN): "
                    "nothing to draw")
        return (f"{variable} unit {unit_index} has an all-NaN rate map in env {env} "
                "(no visited bin with activity): nothing to draw")
    return None


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


def _reason(err: Exception) -> str:
    """One line saying why a panel is empty."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return text if isinstance(err, ExploreError) else f"{type(err).__name__}: {text}"


def _static(analysis, env, variables: Sequence[str], n_units: int, fmt: str,
            show: bool) -> list:
    figs = []
    for v in variables:
        try:
            ranked = ranked_units(analysis, env, v)[:n_units]
        except ExploreError as err:
            print(f"{v}: {_reason(err)}")
            continue
        todo = [(f"{v} {i}", unit_figure, (analysis, env, v, i)) for i, _ in ranked]
        if ranked and analysis.sizes["env"] > 1:
            todo.append((f"{v} {ranked[0][0]} across environments", compare_figure,
                         (analysis, v, ranked[0][0])))
        for name, build, args in todo:
            try:
                fig = build(*args)
            except ExploreError as err:
                print(f"{name}: {_reason(err)}")
                continue
            figs.append(fig)
            if show:
                show_figure(fig, fmt)
    return figs


@dataclass
class Explorer:
    """The widgets of :func:`explore_rate_maps`; displays as its ``widget`` (a VBox).

    ``env``, ``population``, ``view`` ("unit" or "compare"), ``unit`` (a Dropdown, best first)
    and ``rank`` (an IntSlider over the same order) are the controls; ``output`` (an
    ipywidgets ``Output``) holds the figure as an image, or the one-line reason there is none.
    ``cache`` holds the last :data:`EXPLORER_CACHE` panels drawn (clear it to redraw).
    """

    widget: object
    env: object
    population: object
    view: object
    unit: object
    rank: object
    output: object
    cache: dict

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def explore_rate_maps(analysis, env=None, variables: Sequence[str] | None = None,
                      widgets: bool | None = None, n_static: int = STATIC_UNITS,
                      show: bool = True, fmt: str = DEFAULT_FORMAT):
    """Pick an environment, a population and a unit; see its rate map, autocorrelogram and
    scores side by side, or its maps in every environment.

    Parameters
    ----------
    analysis : xarray.Dataset
        An analysis dataset.
    env : env coordinate value, optional
        Environment shown first (default: the first); it also ranks the units.
    variables : sequence of str, optional
        Populations offered (default: every population of the dataset).
    widgets : bool, optional
        True: ipywidgets (an error if it is not installed); False: static panels; None
        (default): ipywidgets when importable, else static panels.
    n_static : int
        Units per population in the static panels (the top ones by :func:`rank_key`),
        followed by the best unit's maps across environments.
    show : bool
        Display the result (in IPython) before returning it.
    fmt : {"png", "svg"}
        How figures are shown (PNG at 2× resolution, or SVG). Bare figures returned from
        later cells are shown the same way (:func:`register_figure_formatter`).

    Returns
    -------
    Explorer or list of matplotlib.figure.Figure
        The explorer's widgets, or the static figures (a unit whose map cannot be drawn is
        left out, its reason printed).
    """

    if fmt not in FORMATS:
        raise ExploreError(f"unknown display format {fmt!r}; use one of {', '.join(FORMATS)}")
    envs = list(analysis["env"].values)
    env = envs[0] if env is None else env
    if env not in envs:
        raise ExploreError(f"no environment {env!r}; environments: {', '.join(map(str, envs))}")
    if variables is None:
        variables = list(analysis.hippo.populations)
    if not variables:
        raise ExploreError("no population to explore (variables is empty)")
    register_figure_formatter(fmt)
    if widgets is None or widgets:
        try:
            import ipywidgets
        except ImportError:
            if widgets:
                raise
            ipywidgets = None
    else:
        ipywidgets = None
    if ipywidgets is None:
        return _static(analysis, env, variables, n_static, fmt, show)
    explorer = _widget(ipywidgets, analysis, envs, env, list(variables), fmt)
    if show:
        display_in_ipython(explorer.widget)
    return explorer


def _widget(ipywidgets, analysis, envs: list, env, variables: list[str], fmt: str) -> Explorer:
    env_w = ipywidgets.Dropdown(options=[(str(e), e) for e in envs], value=env,
                                description="env")
    var_w = ipywidgets.Dropdown(options=variables, value=variables[0], description="population")
    view_w = ipywidgets.ToggleButtons(
        options=[("unit", "unit"), ("compare environments", "compare")], value="unit",
        style={"button_width": "auto"},
        tooltips=["rate map, autocorrelogram and scores in one environment",
                  "the unit's rate maps in every environment"])
    unit_w = ipywidgets.Dropdown(description="unit")
    rank_w = ipywidgets.IntSlider(min=0, max=0, value=0, description="rank",
                                  continuous_update=False)
    out = ipywidgets.Output()
    state = {"busy": False, "ids": [], "reason": ""}
    cache: dict = {}  # (compare, env, population, unit) → output, oldest first

    def options(keep: bool) -> None:
        old = unit_w.value
        state["busy"] = True  # no redraw while the options change
        try:
            try:
                ranked = ranked_units(analysis, env_w.value, var_w.value)
                state["reason"] = ""
            except ExploreError as err:
                ranked, state["reason"] = [], _reason(err)
            key = rank_key(analysis, var_w.value) or "unranked"
            ids = [i for i, _ in ranked]
            state["ids"] = ids
            unit_w.options = [(f"{i}  ({key} {s:.2f})", i) for i, s in ranked]
            unit_w.value = old if keep and old in ids else (ids[0] if ids else None)
            rank_w.max = max(len(ids) - 1, 0)
            rank_w.value = ids.index(unit_w.value) if unit_w.value in ids else 0
        finally:
            state["busy"] = False

    def draw() -> None:
        if unit_w.value is None:
            why = state["reason"] or f"population {var_w.value!r} has no units"
            out.outputs = (text_output(why),)
            return
        compare = view_w.value == "compare"
        key = (compare, None if compare else env_w.value, var_w.value, unit_w.value)
        if key not in cache:
            try:
                if compare:
                    fig = compare_figure(analysis, var_w.value, unit_w.value)
                else:
                    fig = unit_figure(analysis, env_w.value, var_w.value, unit_w.value)
                shown = display_output(fig, fmt)
            except Exception as err:  # noqa: BLE001 — a widget callback would swallow it
                shown = text_output(_reason(err))
            cache[key] = shown
            while len(cache) > EXPLORER_CACHE:
                cache.pop(next(iter(cache)))
        out.outputs = (cache[key],)

    def on_unit(_change) -> None:
        if state["busy"]:
            return
        state["busy"] = True
        try:
            if unit_w.value in state["ids"]:
                rank_w.value = state["ids"].index(unit_w.value)
        finally:
            state["busy"] = False
        draw()

    def on_rank(_change) -> None:
        if state["busy"] or not state["ids"]:
            return
        state["busy"] = True
        try:
            unit_w.value = state["ids"][min(rank_w.value, len(state["ids"]) - 1)]
        finally:
            state["busy"] = False
        draw()

    options(keep=False)
    # a new environment keeps the unit (to compare environments); a new population starts
    # from its best unit
    env_w.observe(lambda _change: (options(keep=True), draw()), names="value")
    var_w.observe(lambda _change: (options(keep=False), draw()), names="value")
    view_w.observe(lambda _change: draw(), names="value")
    unit_w.observe(on_unit, names="value")
    rank_w.observe(on_rank, names="value")
    draw()
    box = ipywidgets.VBox([ipywidgets.HBox([env_w, var_w]), ipywidgets.HBox([unit_w, rank_w]),
                           view_w, out])
    return Explorer(widget=box, env=env_w, population=var_w, view=view_w, unit=unit_w,
                    rank=rank_w, output=out, cache=cache)


# ---- statistics figures (notebook 02) ------------------------------------------------------


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
