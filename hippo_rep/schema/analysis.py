"""The analysis format: the dataset of :func:`hippo_rep.analysis.analyse`, checked by
:func:`validate_analysis`; its cell classes (:data:`CLASSES`) are counted by
:func:`class_fractions` over one denominator (:data:`DENOMINATOR`). Its names are part of the
file format, as the recording's are (:mod:`hippo_rep.schema.recording`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from hippo_rep.defaults import GRID_THRESHOLD
from hippo_rep.fileio import quote
from hippo_rep.schema.recording import (
    ENV,
    KIND_ATTR,
    WORLD_NODE,
    AnalysisError,
    X,
    Y,
)

#: The kind attr (:data:`KIND_ATTR`) of an analysis dataset (:func:`hippo_rep.analysis.analyse`).
ANALYSIS_KIND = "analysis"
#: The unit dim of analyses: every population's units concatenated, labelled by the coords
#: ``variable`` (the population) and ``unit_index`` (the unit's index in the recording).
UNIT, VARIABLE, UNIT_INDEX = "unit", "variable", "unit_index"
#: Rate maps (env, unit, y, x); a unit exists in an environment where its map has a finite bin.
RATE_MAP = "rate_map"

# ------------------------------------------------------------------ cell classes ((env, unit) bool)
#: Grid cell: a hexagonal plane-wave pattern (three waves of near-equal length ~60 degrees
#: apart forming a lattice: their triad phase near 0, or near 180 for a signed map) whose
#: gridness-60 beats its own shuffle null (see ``analysis.classify``).
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
#: Border cell: border score (Solstad et al. 2008) above 0.5 and spatial information above
#: its own shuffle null.
IS_BORDER = "is_border"
#: Place cell: spatial information above its own shuffle null and one to three fields (not a
#: band, two-wave, square or border pattern).
IS_PLACE = "is_place"
#: Every class, in reporting order.
CLASSES: tuple[str, ...] = (IS_GRID, IS_GRID_THRESHOLD, IS_BAND, IS_TWO_WAVE, IS_SQUARE,
                            IS_BORDER, IS_PLACE)
#: Short labels of the classes for tables and figures.
CLASS_LABELS: dict[str, str] = {
    IS_GRID: "grid (hexagonal, gridness > own null)",
    IS_GRID_THRESHOLD: f"gridness-60 > {GRID_THRESHOLD:g} (rule of thumb)",
    IS_BAND: "band (one plane wave)",
    IS_TWO_WAVE: "two-wave (oblique plane waves)",
    IS_SQUARE: "square (two waves at 90°)",
    IS_BORDER: "border (score > 0.5, > own null; SI > null)",
    IS_PLACE: "place (spatial info > own null, 1–3 fields)",
}
#: The population and class dims of :func:`class_fractions`.
POPULATION_DIM, CLASS_DIM = "population", "cell_class"
#: What every class fraction (:func:`class_fractions`) divides by, for every class and
#: population (stored in its attrs).
DENOMINATOR = ("(env, unit) pairs of the population in which the unit exists: its rate map "
               "has at least one finite bin (a memory slot not written in an environment, "
               "whose map is all NaN there, is no neuron of that environment)")

#: What :func:`validate_analysis` requires of an analysis dataset: variable → (dims, dtype kinds).
ANALYSIS_REQUIRED = {
    RATE_MAP: ((ENV, UNIT, Y, X), "f"),
    "occupancy": ((ENV, Y, X), "f"),
    "gridness_60": ((ENV, UNIT), "f"),
    "gridness_90": ((ENV, UNIT), "f"),
    "spacing": ((ENV, UNIT), "f"),
    "orientation": ((ENV, UNIT), "f"),
    "spatial_info": ((ENV, UNIT), "f"),
    "place_score": ((ENV, UNIT), "f"),
    "n_fields": ((ENV, UNIT), "iu"),
    IS_GRID: ((ENV, UNIT), "b"),
    IS_PLACE: ((ENV, UNIT), "b"),
    VARIABLE: ((UNIT,), "UOT"),
    UNIT_INDEX: ((UNIT,), "iu"),
}
#: Optional variables whose dims are checked when present (figures read them).
ANALYSIS_OPTIONAL = {
    IS_GRID_THRESHOLD: ((ENV, UNIT), "b"),
    # the border score and class (absent from analyses written before them)
    "border_score": ((ENV, UNIT), "f"),
    IS_BORDER: ((ENV, UNIT), "b"),
    "node_rate": ((ENV, UNIT, WORLD_NODE), "f"),
    "gridness_60_null_q": (("quantile", ENV, UNIT), "f"),
    "spatial_info_null_q": (("quantile", ENV, UNIT), "f"),
    "border_score_null_q": (("quantile", ENV, UNIT), "f"),
    "remap_corr": ((UNIT, "env_pair"), "f"),
    "pv_corr": ((POPULATION_DIM, "env_pair"), "f"),
    # plane_waves' lattice outputs (absent from analyses written before them)
    "triad_phase": ((ENV, UNIT), "f"),
    "lattice": ((ENV, UNIT), "UOT"),
    "triad_phase_reason": ((ENV, UNIT), "UOT"),
    "triad_closure": ((ENV, UNIT), "f"),
    "hexagonal_angle_deviation": ((ENV, UNIT), "f"),
    "wave_length_ratio": ((ENV, UNIT), "f"),
    "nonnegative": ((ENV, UNIT), "b"),
    "single_field": ((ENV, UNIT), "b"),
}


def validate_analysis(ds: xr.Dataset, source=None) -> None:
    """Check that ``ds`` is a hippo_rep analysis dataset (kind attr, the variables of
    :data:`ANALYSIS_REQUIRED` with their dims and dtypes, optional ones' dims).

    Raises
    ------
    AnalysisError
        Listing every problem in one message, naming ``source``.
    """
    where = f"{str(source)!r}" if source is not None else "dataset"
    kind = ds.attrs.get(KIND_ATTR)
    if kind != ANALYSIS_KIND:
        raise AnalysisError(f"{where} is not a hippo_rep analysis (attr {KIND_ATTR} is "
                            f"{quote(kind)}, expected {ANALYSIS_KIND!r})")
    problems = []
    missing = [n for n in ANALYSIS_REQUIRED if n not in ds.variables]
    if missing:
        problems.append(f"missing variable(s) {', '.join(missing)}")
    for name, (dims, kinds) in {**ANALYSIS_REQUIRED, **ANALYSIS_OPTIONAL}.items():
        if name not in ds.variables:
            continue
        var = ds.variables[name]
        if tuple(var.dims) != dims:
            problems.append(f"{name} has dims {quote(tuple(var.dims))}, expected {dims}")
        elif var.dtype.kind not in kinds:
            problems.append(f"{name} has dtype {var.dtype}")
    if problems:
        raise AnalysisError(f"{where} is not a valid hippo_rep analysis: "
                            + "; ".join(problems))


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
    for need in (RATE_MAP, VARIABLE):
        if need not in analysis.variables:
            raise AnalysisError(f"analysis lacks {need!r}, needed for class_fractions")
    if classes is None:
        classes = tuple(c for c in CLASSES if c in analysis.data_vars)
    missing = [c for c in classes if c not in analysis.data_vars]
    if not classes or missing:
        raise AnalysisError(f"analysis lacks the class flags {missing or list(CLASSES)}")
    exists = analysis[RATE_MAP].notnull().any((Y, X)).transpose(ENV, UNIT)
    var = np.asarray(analysis[VARIABLE].values).astype(str)
    pops = list(dict.fromkeys(var.tolist()))
    num = np.zeros((len(pops), len(classes)), dtype=np.int64)
    den = np.zeros((len(pops), len(classes)), dtype=np.int64)
    ex = exists.values
    for i, pop in enumerate(pops):
        cols = var == pop
        e = ex[:, cols]
        den[i] = int(e.sum())
        for j, c in enumerate(classes):
            flag = analysis[c].transpose(ENV, UNIT).values[:, cols].astype(bool)
            num[i, j] = int((flag & e).sum())
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


#: The classes :func:`describe_analysis` reports, with their short names.
DESCRIBED_CLASSES = ((IS_GRID, "grid"), (IS_TWO_WAVE, "two-wave"), (IS_BORDER, "border"),
                     (IS_PLACE, "place"))


def describe_analysis(ds: xr.Dataset) -> str:
    """One line on an analysis: environments × units, populations, shuffles, and per
    population the fractions (:func:`fraction_text`) of :data:`DESCRIBED_CLASSES`."""
    fr = class_fractions(ds)
    parts = [f"{pop}: " + ", ".join(f"{name} {fraction_text(fr, pop, c)}"
                                    for c, name in DESCRIBED_CLASSES if c in fr[CLASS_DIM])
             for pop in fr[POPULATION_DIM].values]
    return (f"{ds.sizes[ENV]} envs × {ds.sizes[UNIT]} units ({ds.attrs['variables']}) with "
            f"{ds.attrs['n_shuffles']} shuffles; of the (env, unit) pairs that exist: "
            + "; ".join(parts))
