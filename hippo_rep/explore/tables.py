"""Tables of an analysis dataset for the notebooks: one row per (environment, unit), class
fractions per population, remapping per environment pair, units ranked by score.

Pure functions of a labelled analysis dataset (:func:`hippo_rep.analysis.analyse`) that return
pandas DataFrames or plain values; nothing is drawn here (see :mod:`.figures`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hippo_rep.schema import (
    CLASS_DIM,
    CLASS_LABELS,
    CLASSES,
    G_PI,
    MEMORY_ACTIVITY,
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
