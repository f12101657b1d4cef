"""Helpers of the notebooks: tables of an analysis dataset and an interactive rate-map explorer.

Everything the notebooks in ``notebooks/`` compute lives here, so the notebooks stay thin and
the logic is tested. Figures are built as :class:`matplotlib.figure.Figure` objects outside
pyplot (no global state, nothing shown twice) in the paper style; Jupyter displays them.

The explorer (:func:`explore_rate_maps`) uses ipywidgets when it can be imported (pick an
environment, a population and a unit: rate map, autocorrelogram and scores side by side) and
otherwise shows static panels of the top units of each population.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hippo_rep.analysis.classes import CLASS_DIM, CLASS_LABELS, CLASSES, class_fractions

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
    "plane_wave_share",
    *CLASSES,
)

#: Per-unit variables (no env dim) added to :func:`unit_table` when present.
UNIT_ONLY_COLUMNS = ("remap_corr_mean",)

#: Score that ranks the units of each population in the explorer (highest first); other
#: populations use :data:`DEFAULT_RANK_SCORE`.
RANK_SCORE = {"g": "gridness_60", "g_pi": "gridness_60", "memory_activity": "spatial_info"}

#: Ranking score of populations not in :data:`RANK_SCORE`.
DEFAULT_RANK_SCORE = "spatial_info"

#: Units per population shown by the static explorer (no ipywidgets).
STATIC_UNITS = 2

#: Size of one explorer figure (rate map, autocorrelogram, scores), inches.
UNIT_FIGSIZE = (7.0, 2.4)

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
    "hexagonal": "hexagonal (3 waves at 60°)",
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

    The fractions are :func:`~hippo_rep.analysis.classes.class_fractions` (the one
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
    fr = class_fractions(analysis)
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
        known = ", ".join(dict.fromkeys(map(str, analysis["variable"].values)))
        raise ExploreError(f"no unit {unit_index} of population {variable!r} in the analysis "
                           f"(populations: {known})")
    return units[0]


def ranked_units(analysis, env, variable: str) -> list[tuple[int, float]]:
    """(unit_index, score) of a population's units in one environment, best first.

    The score is :data:`RANK_SCORE` of the population (NaN last).
    """
    if env not in analysis["env"].values:
        raise ExploreError(f"no environment {env!r}; environments: "
                           f"{', '.join(map(str, analysis['env'].values))}")
    key = RANK_SCORE.get(variable, DEFAULT_RANK_SCORE)
    sub = analysis.sel(unit=analysis["variable"] == variable)
    if sub.sizes["unit"] == 0:
        raise ExploreError(f"no population {variable!r} in the analysis")
    score = np.asarray(sub[key].sel(env=env).values, dtype=float)
    order = np.argsort(-np.where(np.isfinite(score), score, -np.inf), kind="stable")
    idx = sub["unit_index"].values
    return [(int(idx[i]), float(score[i])) for i in order]


def unit_scores(analysis, env, variable: str, unit_index: int) -> dict[str, object]:
    """The :data:`UNIT_SCORES` of one unit in one environment (label with units → value)."""
    sel = analysis.sel(unit=_unit_of(analysis, variable, unit_index))
    out: dict[str, object] = {}
    for k, label in UNIT_SCORES.items():
        if k not in analysis.data_vars:
            continue
        da = sel[k].sel(env=env) if "env" in sel[k].dims else sel[k]
        v = da.values.item() if da.size == 1 else da.values
        out[label] = bool(v) if isinstance(v, (bool, np.bool_)) else v
    return out


def unit_figure(analysis, env, variable: str, unit_index: int):
    """Rate map, spatial autocorrelogram and scores of one unit in one environment.

    Parameters
    ----------
    analysis : xarray.Dataset
        With ``rate_map`` (env, unit, y, x) and the scores.
    env : env coordinate value
    variable : str
        Population ("g", "g_pi", "memory_activity").
    unit_index : int
        Index of the unit within its population.

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot (display it, or save it).
    """
    from matplotlib.figure import Figure

    from hippo_rep.analysis import autocorrelogram as sac_of
    from hippo_rep.plotting import paper_style
    from hippo_rep.plotting.maps import autocorrelogram, rate_map
    from hippo_rep.plotting.scores import scores_text

    if "rate_map" not in analysis.data_vars:
        raise ExploreError("the analysis dataset lacks variable rate_map")
    unit = _unit_of(analysis, variable, unit_index)
    m = analysis["rate_map"].sel(env=env, unit=unit)
    with paper_style():
        fig = Figure(figsize=UNIT_FIGSIZE, layout="constrained")
        axes = fig.subplots(1, 3, width_ratios=[1, 1, 1.3])
        rate_map(m, ax=axes[0], outline_fields=variable == "memory_activity",
                 title=f"rate map, env {env}\n{variable} {unit_index}")
        fig.colorbar(axes[0].collections[0], ax=axes[0], shrink=0.8,
                     label="mean activity (activity units)")
        autocorrelogram(sac_of(m), ax=axes[1], title="spatial autocorrelogram")
        fig.colorbar(axes[1].collections[0], ax=axes[1], shrink=0.8, label="Pearson r")
        scores_text(unit_scores(analysis, env, variable, unit_index), ax=axes[2],
                    title="scores")
    return fig


def _display(obj) -> None:
    try:
        from IPython.display import display
    except ImportError:  # outside IPython: nothing to show
        return
    display(obj)


def _static(analysis, env, variables: Sequence[str], n_units: int) -> list:
    figs = []
    for v in variables:
        for idx, _ in ranked_units(analysis, env, v)[:n_units]:
            figs.append(unit_figure(analysis, env, v, idx))
    return figs


def explore_rate_maps(analysis, env=None, variables: Sequence[str] | None = None,
                      widgets: bool | None = None, n_static: int = STATIC_UNITS,
                      show: bool = True):
    """Pick an environment, a population and a unit; see its rate map, autocorrelogram and
    scores side by side.

    Parameters
    ----------
    analysis : xarray.Dataset
        An analysis dataset.
    env : env coordinate value, optional
        Environment shown first (default: the first).
    variables : sequence of str, optional
        Populations offered (default: every population of the dataset).
    widgets : bool, optional
        True: ipywidgets (an error if it is not installed); False: static panels; None
        (default): ipywidgets when importable, else static panels.
    n_static : int
        Units per population in the static panels (the top ones by :data:`RANK_SCORE`).
    show : bool
        Display the result (in IPython) before returning it.

    Returns
    -------
    ipywidgets.VBox or list of matplotlib.figure.Figure
        The explorer widget, or the static figures.
    """
    envs = list(analysis["env"].values)
    env = envs[0] if env is None else env
    if env not in envs:
        raise ExploreError(f"no environment {env!r}; environments: {', '.join(map(str, envs))}")
    if variables is None:
        variables = list(dict.fromkeys(map(str, analysis["variable"].values)))
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
        figs = _static(analysis, env, variables, n_static)
        if show:
            for fig in figs:
                _display(fig)
        return figs
    box = _widget(ipywidgets, analysis, envs, env, list(variables))
    if show:
        _display(box)
    return box


def _widget(ipywidgets, analysis, envs: list, env, variables: list[str]):
    env_w = ipywidgets.Dropdown(options=[(str(e), e) for e in envs], value=env,
                                description="env")
    var_w = ipywidgets.Dropdown(options=variables, value=variables[0], description="population")
    unit_w = ipywidgets.Dropdown(description="unit")
    out = ipywidgets.Output()

    state = {"busy": False}

    def options(keep: bool) -> None:
        key = RANK_SCORE.get(var_w.value, DEFAULT_RANK_SCORE)
        ranked = ranked_units(analysis, env_w.value, var_w.value)
        old = unit_w.value
        state["busy"] = True  # no redraw while the options change
        try:
            unit_w.options = [(f"{i}  ({key} {s:.2f})", i) for i, s in ranked]
            ids = [i for i, _ in ranked]
            unit_w.value = old if keep and old in ids else (ids[0] if ids else None)
        finally:
            state["busy"] = False

    def draw() -> None:
        if unit_w.value is None:
            return
        out.clear_output(wait=True)
        with out:
            _display(unit_figure(analysis, env_w.value, var_w.value, unit_w.value))

    options(keep=False)
    # a new environment keeps the unit (to compare environments); a new population starts
    # from its best unit
    env_w.observe(lambda _change: (options(keep=True), draw()), names="value")
    var_w.observe(lambda _change: (options(keep=False), draw()), names="value")
    unit_w.observe(lambda _change: None if state["busy"] else draw(), names="value")
    draw()
    return ipywidgets.VBox([ipywidgets.HBox([env_w, var_w, unit_w]), out])


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
                _display(Image(filename=str(p)))
                shown.append(p)
    return shown
