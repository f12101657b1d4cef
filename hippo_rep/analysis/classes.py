"""Cell classes: their names (defined once here) and the one function that counts them.

Every reported fraction of classified units — in :func:`~hippo_rep.explore.classification_summary`,
the sweep summary, the ``scores`` figure, the ``analyse`` command's summary line, the README
and the notebooks — comes from :func:`class_fractions`, with one denominator (see there).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .recordings import UNIT_DIM, AnalysisError

#: Grid cell: a hexagonal plane-wave pattern (three waves of near-equal length ~60 degrees
#: apart) whose gridness-60 beats its own shuffle null (see ``shuffle.classify``).
IS_GRID = "is_grid"

#: The field's rule of thumb alone (gridness-60 > 0.3): NOT a grid classification (two
#: plane waves 55-75 degrees apart pass it); kept to show what the rule of thumb calls a grid.
IS_GRID_THRESHOLD = "is_grid_threshold"

#: Band cell: one plane wave, its plane-wave share above its own shuffle null.
IS_BAND = "is_band"

#: Two-wave ("oblique / plane-wave") pattern: two plane waves, not a square grid, its
#: plane-wave share above its own shuffle null.
IS_TWO_WAVE = "is_two_wave"

#: Square grid: two plane waves of near-equal length ~90 degrees apart, significant.
IS_SQUARE = "is_square"

#: Place cell: spatial information above its own shuffle null and one to three fields.
IS_PLACE = "is_place"

#: Every class, in reporting order.
CLASSES: tuple[str, ...] = (IS_GRID, IS_GRID_THRESHOLD, IS_BAND, IS_TWO_WAVE, IS_SQUARE,
                            IS_PLACE)

#: Short labels of the classes for tables and figures.
CLASS_LABELS: dict[str, str] = {
    IS_GRID: "grid (hexagonal, gridness > own null)",
    IS_GRID_THRESHOLD: "gridness-60 > 0.3 (rule of thumb)",
    IS_BAND: "band (one plane wave)",
    IS_TWO_WAVE: "two-wave (oblique plane waves)",
    IS_SQUARE: "square (two waves at 90°)",
    IS_PLACE: "place (spatial info > own null, 1–3 fields)",
}

#: The population and class dims of :func:`class_fractions`.
POPULATION_DIM, CLASS_DIM = "population", "cell_class"

#: What :func:`class_fractions` divides by (stored in its attrs).
DENOMINATOR = ("(env, unit) pairs of the population in which the unit exists: its rate map "
               "has at least one finite bin (a memory slot not written in an environment, "
               "whose map is all NaN there, is no neuron of that environment)")


def class_fractions(analysis: xr.Dataset, classes: tuple[str, ...] | None = None) -> xr.Dataset:
    """Fraction of units of each population in each class: the one definition.

    The denominator is the (env, unit) pairs in which the unit exists (:data:`DENOMINATOR`).
    Memory neurons are created anew in each environment, so the memory dim of a recording is
    as long as the most memories any environment wrote; the slots beyond an environment's own
    count have no activity and an all-NaN rate map there. Counting them (as "every slot" did)
    would report neurons that do not exist as unclassified; counting only pairs with a finite
    score of one kind (as "only slots with a score" did) would give each class its own
    denominator. Existence is one rule for every class and population; a unit that exists
    but whose score is undefined (e.g. a constant map) counts in the denominator and not in
    any class.

    Parameters
    ----------
    analysis : xarray.Dataset
        An analysis (:func:`~hippo_rep.analysis.analyse`): the ``is_*`` flags (env, unit),
        the ``variable`` coord of ``unit`` and ``rate_map`` (env, unit, y, x).
    classes : tuple of str, optional
        Class flags to count (default: those of :data:`CLASSES` present).

    Returns
    -------
    xarray.Dataset
        Dims (population, cell_class): ``numerator`` (int, pairs in the class),
        ``denominator`` (int, pairs that exist; the same for every class of a population),
        ``fraction`` (numerator / denominator, 0-1; NaN when no pair exists). Attrs:
        ``denominator`` (the rule), class ``labels``.

    Raises
    ------
    AnalysisError
        If the analysis lacks ``rate_map``, the ``variable`` coord, or every class flag.
    """
    if not isinstance(analysis, xr.Dataset):
        raise AnalysisError(f"analysis must be an xarray.Dataset; got {type(analysis).__name__}")
    for need in ("rate_map", "variable"):
        if need not in analysis.variables:
            raise AnalysisError(f"analysis lacks {need!r}, needed for class_fractions")
    if classes is None:
        classes = tuple(c for c in CLASSES if c in analysis.data_vars)
    missing = [c for c in classes if c not in analysis.data_vars]
    if not classes or missing:
        raise AnalysisError(f"analysis lacks the class flags {missing or list(CLASSES)}")
    exists = analysis["rate_map"].notnull().any(("y", "x")).transpose("env", UNIT_DIM)
    var = np.asarray(analysis["variable"].values).astype(str)
    pops = list(dict.fromkeys(var.tolist()))
    num = np.zeros((len(pops), len(classes)), dtype=np.int64)
    den = np.zeros((len(pops), len(classes)), dtype=np.int64)
    ex = exists.values
    for i, pop in enumerate(pops):
        cols = var == pop
        e = ex[:, cols]
        for j, c in enumerate(classes):
            flag = analysis[c].transpose("env", UNIT_DIM).values[:, cols].astype(bool)
            num[i, j] = int((flag & e).sum())
            den[i, j] = int(e.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(den > 0, num / np.maximum(den, 1), np.nan)
    dims = (POPULATION_DIM, CLASS_DIM)
    out = xr.Dataset(
        {"numerator": (dims, num), "denominator": (dims, den), "fraction": (dims, frac)},
        coords={POPULATION_DIM: pops, CLASS_DIM: list(classes)},
    )
    out["numerator"].attrs = {"long_name": "(env, unit) pairs in the class"}
    out["denominator"].attrs = {"long_name": DENOMINATOR}
    out["fraction"].attrs = {"long_name": "numerator / denominator", "units": "1"}
    out.attrs = {"denominator": DENOMINATOR,
                 "labels": "; ".join(f"{c}: {CLASS_LABELS.get(c, c)}" for c in classes)}
    return out


def fraction_text(fractions: xr.Dataset, population: str, cell_class: str) -> str:
    """``"k/n = p%"`` of one population and class of :func:`class_fractions`."""
    one = fractions.sel({POPULATION_DIM: population, CLASS_DIM: cell_class})
    k, n = int(one["numerator"]), int(one["denominator"])
    pct = 100.0 * float(one["fraction"]) if n else float("nan")
    return f"{k}/{n} = {pct:.0f}%"
