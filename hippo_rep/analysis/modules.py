"""Grid modules: the grid cells of a population grouped by the spacing of their lattices.

Grid cells come in modules of discrete spacing (Stensola et al., Nature 2012): within a module
the cells share a spacing and orientation, and consecutive modules' spacings differ by a
factor of ~1.4 in rodents. :func:`grid_modules` groups the cells that are grid cells in every
environment by their median spacing: sorted, the spacings are split wherever two consecutive
ones differ by more than :data:`MODULE_GAP` (a one-dimensional gap rule, no number of modules
to choose; k-means on spacing and orientation, as Stensola et al. used, needs that number).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

#: Two consecutive grid cells (sorted by spacing) fall in different modules when their
#: spacings differ by more than this fraction of the smaller. A module's spacing scatters by a
#: few % between cells on maps of 16-40 bins; rodent modules step by ~1.4 (Stensola et al.
#: 2012) and the triad control's (``model.triad_scale_ratio``) by 1.15, so 0.07 separates
#: modules without splitting one.
MODULE_GAP = 0.07

#: A cell joins a module when it is a grid cell in at least this fraction of the environments
#: where it has a map (1: in every one; the same units hexagonal across environments).
MODULE_MIN_ENV_FRACTION = 1.0

#: Variables :func:`grid_modules` reads, all (env, unit).
NEEDED = ("spacing", "orientation", "is_grid")


class ModulesError(ValueError):
    """An analysis dataset :func:`grid_modules` cannot read (a missing variable, a bad
    argument)."""


def circular_mean_60(deg: np.ndarray) -> float:
    """Circular mean of orientations in degrees modulo 60 (a hexagonal lattice's period)."""
    z = np.exp(1j * np.deg2rad(deg) * 6).mean()
    return float(np.rad2deg(np.angle(z)) / 6 % 60)


def grid_modules(analysis: xr.Dataset, gap: float = MODULE_GAP,
                 min_env_fraction: float = MODULE_MIN_ENV_FRACTION) -> xr.Dataset:
    """Group a population's grid cells into modules of distinct spacing.

    Parameters
    ----------
    analysis : xarray.Dataset
        An analysis dataset (or one population of it, ``ds.hippo.population(name)``) holding
        ``spacing`` (bins), ``orientation`` (degrees) and the class ``is_grid``, each
        (env, unit). With several populations, select one first: cells of different
        populations are grouped together otherwise.
    gap : float
        Relative spacing difference that separates two modules (:data:`MODULE_GAP`).
    min_env_fraction : float
        Fraction of a unit's environments (those with a finite spacing) in which it must be a
        grid cell (:data:`MODULE_MIN_ENV_FRACTION`).

    Returns
    -------
    xarray.Dataset
        Per unit (dim ``unit``, the input's coords): ``grid_module`` (int, 0 for the module
        of smallest spacing, -1 for a unit that is not a grid cell often enough) and
        ``unit_spacing`` (median spacing over the environments where it is a grid cell,
        bins; NaN for -1). Per module (dim ``module``): ``module_spacing`` (median of its
        cells' spacings, bins), ``module_orientation`` (circular mean mod 60 of its cells'
        median orientations, degrees), ``module_size`` (cells) and
        ``module_spacing_ratio`` (its spacing over the previous module's; NaN for the
        first). ``attrs["n_modules"]``, ``attrs["rule"]``.

    Raises
    ------
    ModulesError
        A missing variable (named), ``gap`` not positive or ``min_env_fraction`` outside
        (0, 1].
    """
    missing = [v for v in NEEDED if v not in analysis.data_vars]
    if missing:
        raise ModulesError(f"grid_modules needs variable(s) {', '.join(missing)} (env, unit) "
                           "in the analysis dataset")
    if not np.isfinite(gap) or gap <= 0:
        raise ModulesError(f"gap must be a positive fraction; got {gap!r}")
    if not 0 < min_env_fraction <= 1:
        raise ModulesError(f"min_env_fraction must lie in (0, 1]; got {min_env_fraction!r}")
    spacing = analysis["spacing"].transpose("unit", "env").values.astype(float)
    orient = analysis["orientation"].transpose("unit", "env").values.astype(float)
    grid = analysis["is_grid"].transpose("unit", "env").values.astype(bool)
    grid &= np.isfinite(spacing)
    has_map = np.isfinite(spacing).sum(1)
    member = (has_map > 0) & (grid.sum(1) >= np.ceil(min_env_fraction * has_map - 1e-9))
    member &= grid.any(1)
    unit_sp = np.full(spacing.shape[0], np.nan)
    unit_or = np.full(spacing.shape[0], np.nan)
    for i in np.flatnonzero(member):
        unit_sp[i] = np.median(spacing[i, grid[i]])
        unit_or[i] = circular_mean_60(orient[i, grid[i]])
    order = np.flatnonzero(member)[np.argsort(unit_sp[member], kind="stable")]
    labels = np.full(spacing.shape[0], -1, dtype=np.int64)
    if order.size:
        s = unit_sp[order]
        labels[order] = np.concatenate([[0], np.cumsum(s[1:] > s[:-1] * (1 + gap))])
    n = int(labels.max()) + 1 if order.size else 0
    mod_sp = np.array([np.median(unit_sp[labels == m]) for m in range(n)])
    mod_or = np.array([circular_mean_60(unit_or[labels == m]) for m in range(n)])
    size = np.array([int((labels == m).sum()) for m in range(n)], dtype=np.int64)
    ratio = np.concatenate([[np.nan], mod_sp[1:] / mod_sp[:-1]]) if n else np.zeros(0)
    unit_coords = {k: c for k, c in analysis.coords.items() if c.dims == ("unit",)}
    rule = (f"grid cells in >= {min_env_fraction:g} of their environments, grouped by median "
            f"spacing: a new module where consecutive spacings differ by > {gap:g}")
    return xr.Dataset(
        {"grid_module": ("unit", labels, {"long_name": "grid module (-1: not a grid cell)"}),
         "unit_spacing": ("unit", unit_sp, {"units": analysis["spacing"].attrs.get("units",
                                                                                "bins"),
                                            "long_name": "median grid spacing"}),
         "module_spacing": ("module", mod_sp, {"units": analysis["spacing"].attrs.get(
             "units", "bins"), "long_name": "median spacing of the module's cells"}),
         "module_orientation": ("module", mod_or, {"units": "degrees",
                                                   "long_name": "circular mean mod 60"}),
         "module_size": ("module", size, {"long_name": "cells in the module"}),
         "module_spacing_ratio": ("module", ratio,
                                  {"long_name": "spacing over the previous module's"})},
        coords={**unit_coords, "module": np.arange(n)},
        attrs={"n_modules": n, "rule": rule},
    )
