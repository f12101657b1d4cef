"""The per-run summary of an analysis dataset: fractions of cell classes, median scores,
remapping correlations (one number each, as :func:`hippo_rep.sweep.open_sweep` tabulates)."""

from __future__ import annotations

import math

import numpy as np

from hippo_rep.defaults import GRID_THRESHOLD
from hippo_rep.schema import (
    IS_BAND,
    IS_GRID,
    IS_GRID_THRESHOLD,
    IS_PLACE,
    IS_SQUARE,
    IS_TWO_WAVE,
    MEMORY_ACTIVITY,
    G,
)

#: Summary statistics :func:`summarise_analysis` takes from an analysis: name → description.
SUMMARY = {
    "grid_fraction": "fraction of positional units (g) grid-like (is_grid: hexagonal plane-wave "
                     "pattern and gridness-60 above its shuffle null's 95th percentile), over "
                     "the (env, unit) pairs that exist (analysis.class_fractions)",
    "grid_fraction_threshold": "fraction of positional units (g) with gridness-60 > "
                               f"{GRID_THRESHOLD:g} (the "
                               "rule of thumb alone)",
    "two_wave_fraction": "fraction of positional units (g) that are two plane waves, not "
                         "square (is_two_wave)",
    "band_fraction": "fraction of positional units (g) that are one plane wave (is_band)",
    "square_fraction": "fraction of positional units (g) that are square grids (is_square)",
    "gridness_median": "median gridness-60 of the positional units (g) over (env, unit)",
    "hexagonal_fraction": "fraction of positional units (g) whose map is a hexagonal plane-wave "
                          "pattern (three near-equal waves ~60° apart; pattern alone, no null), "
                          "over the (env, unit) pairs that exist",
    "wavelength_median": "median wavelength (bins) of the strongest plane wave of the "
                         "positional units (g) with at least one wave",
    "place_fraction": "fraction of memory neurons place-like (is_place), over the (env, unit) "
                      "pairs that exist (analysis.class_fractions)",
    "remap_corr_g": "mean rate-map correlation of positional units between environments",
    "remap_corr_memory": "mean rate-map correlation of memory neurons between environments",
    "pv_corr_g": "population-vector correlation of g between environments (mean over pairs)",
    "pv_corr_memory": "population-vector correlation of memory neurons between environments",
    "tem_corr": "TEM test: correlation of grid rates at memory peaks across environments "
                "(mean over pairs)",
    "tem_p": "TEM test p-value of the mean over pairs",
}


def summarise_analysis(analysis) -> dict[str, float]:
    """The :data:`SUMMARY` statistics of one analysis dataset (NaN where not computable).

    Fractions are :func:`~hippo_rep.analysis.class_fractions` (over the (env, unit) pairs
    of the population that exist: memory slots unused in an environment are left out);
    correlations are means over environment pairs (and units) of the analysis' remapping
    variables.
    """
    a = analysis
    out = dict.fromkeys(SUMMARY, math.nan)
    if "variable" not in a.coords:
        return out
    g, mem = (a.hippo.population(p) if p in a.hippo.populations else a.isel(unit=[])
              for p in (G, MEMORY_ACTIVITY))
    fr = a.hippo.summary() if "rate_map" in a else None
    for name, pop, flag in (("grid_fraction", G, IS_GRID), ("two_wave_fraction", G, IS_TWO_WAVE),
                            ("grid_fraction_threshold", G, IS_GRID_THRESHOLD),
                            ("band_fraction", G, IS_BAND), ("square_fraction", G, IS_SQUARE),
                            ("place_fraction", MEMORY_ACTIVITY, IS_PLACE)):
        if fr is not None and flag in fr["cell_class"] and pop in fr["population"]:
            out[name] = float(fr["fraction"].sel(population=pop, cell_class=flag))
    if "gridness_60" in g:
        out["gridness_median"] = _finite(g["gridness_60"], np.median)
    if "hexagonal" in g and "rate_map" in g and g.sizes.get("unit", 0):
        exists = g["rate_map"].notnull().any(("y", "x")).values
        out["hexagonal_fraction"] = (float(g["hexagonal"].values[exists].mean())
                                     if exists.any() else math.nan)
    if "wave_length" in g:
        out["wavelength_median"] = _finite(g["wave_length"].isel(wave=0), np.median)
    if "remap_corr" in a:
        out["remap_corr_g"] = _finite(g["remap_corr"], np.mean)
        out["remap_corr_memory"] = _finite(mem["remap_corr"], np.mean)
    if "pv_corr" in a and "population" in a["pv_corr"].dims:
        for pop, name in ((G, "pv_corr_g"), (MEMORY_ACTIVITY, "pv_corr_memory")):
            if pop in a["population"].values:
                out[name] = _finite(a["pv_corr"].sel(population=pop), np.mean)
    for name in ("tem_corr", "tem_p"):
        if f"{name}_mean" in a:
            out[name] = float(a[f"{name}_mean"])
    return out


def _finite(values, fn) -> float:
    """``fn`` of the finite values (NaN when there are none)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    return float(fn(x)) if x.size else math.nan
