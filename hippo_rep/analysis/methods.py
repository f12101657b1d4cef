"""The registry of grid-score methods: the one list of their names, each with a one-line
summary, its documented defaults and where its numpy scorer lives.

Light on purpose (the standard library only, the scorer imported on first use), so that the
command line can offer the names as ``--grid-method`` choices and describe them in its help
without importing numpy, scipy or xarray. :func:`~hippo_rep.analysis.grid_scores`,
:func:`~hippo_rep.analysis.analyse`, the shuffle nulls and the CLI all read
:data:`GRID_METHODS`; a name that is not in it gets one line listing those that are
(:func:`grid_method`). Never compare scores across methods.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

#: "deepmind": default minimum overlap (finite bins) per SAC lag. 1, as the reference code
#: (which computes every lag; a one-bin overlap has zero variance and gives 0).
DEEPMIND_MIN_OVERLAP = 1

#: "deepmind": default Gaussian smoothing of the rate map before the autocorrelogram, in bins
#: (none, as the reference code).
DEEPMIND_SMOOTH_SIGMA = 0.0

#: "bnt": default minimum overlap per SAC lag: 1, as opexebo (``REQUIRED_OVERLAP_PIXELS = 0``).
BNT_MIN_OVERLAP = 1

#: "bnt": default Gaussian smoothing of the rate map before the autocorrelogram, in bins. 0, as
#: opexebo's ``grid_score`` takes the map as given (opexebo and BNT smooth, by 2 bins by
#: default, when they make the rate map: do that with ``rate_maps(..., smooth_sigma=2)``).
BNT_SMOOTH_SIGMA = 0.0


@dataclass(frozen=True)
class GridMethod:
    """One registered grid-score family.

    Attributes
    ----------
    name : str
        What callers pass (``method=``, ``grid_method=``, ``--grid-method``).
    summary : str
        One line: what it computes and whose code it follows (the CLI's help).
    min_max : bool
        Default form of the gridness: min/max (True) or mean (False).
    min_overlap : int
        Default fewest overlapping finite bins per autocorrelogram lag.
    smooth_sigma : float
        Default Gaussian smoothing of the maps before the autocorrelogram, in bins.
    implementation : str
        ``"module:attribute"`` of its :class:`~hippo_rep.analysis.gridscore.GridScorer` (the
        numpy scorer, its rings' description, a faster gridness-60 kernel if any).
    """

    name: str
    summary: str
    min_max: bool
    min_overlap: int
    smooth_sigma: float
    implementation: str

    def scorer(self):
        """The method's :class:`~hippo_rep.analysis.gridscore.GridScorer` (imported here)."""
        module, attribute = self.implementation.split(":")
        return getattr(importlib.import_module(module), attribute)


#: The registered grid-score families, by name.
GRID_METHODS: dict[str, GridMethod] = {
    m.name: m for m in (
        GridMethod(
            name="deepmind",
            summary="ring correlations of the autocorrelogram, mean form (Banino et al. "
                    "2018; the scores ML papers report)",
            min_max=False,
            min_overlap=DEEPMIND_MIN_OVERLAP,
            smooth_sigma=DEEPMIND_SMOOTH_SIGMA,
            implementation="hippo_rep.analysis.gridscore:DEEPMIND_SCORER",
        ),
        GridMethod(
            name="bnt",
            summary="BNT's gridnessScore as opexebo 0.7 computes it, min/max form (as "
                    "experimental labs report)",
            min_max=True,
            min_overlap=BNT_MIN_OVERLAP,
            smooth_sigma=BNT_SMOOTH_SIGMA,
            implementation="hippo_rep.analysis.gridscore:BNT_SCORER",
        ),
    )
}

#: The grid method of :func:`~hippo_rep.analysis.grid_scores` and
#: :func:`~hippo_rep.analysis.analyse` by default: the one ML papers report (Banino et al.
#: 2018, Nature; Sorscher et al. 2019, NeurIPS).
DEFAULT_GRID_METHOD = "deepmind"


def grid_method(name: object, what: str = "method") -> GridMethod:
    """The registered grid method ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`GRID_METHODS`.
    what : str
        What the caller's argument is called, for the error.

    Returns
    -------
    GridMethod

    Raises
    ------
    ValueError
        One line naming the registered methods, if ``name`` is not one of them.
    """
    if not isinstance(name, str) or name not in GRID_METHODS:
        raise ValueError(f"{what} must be a registered grid method "
                         f"({', '.join(GRID_METHODS)}); got {name!r}")
    return GRID_METHODS[name]


def grid_methods_help() -> str:
    """The registered methods as one line each: ``name: summary``, joined by "; " (the CLI's
    help)."""
    return "; ".join(f"{m.name}: {m.summary}" for m in GRID_METHODS.values())
