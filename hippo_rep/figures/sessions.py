"""Recorded sessions: the ``session_cells`` figure.

Your own cells (the analysis of ``hippo-rep analyse SESSION.nwb``): per population, rate maps
in Hz with their classes, gridness-60 and spacing in cm, and their autocorrelograms. Panels:
:mod:`hippo_rep.plotting.maps`.
"""

from __future__ import annotations

import numpy as np

from hippo_rep.analysis import autocorrelogram as sac_of
from hippo_rep.figures._common import N_UNITS_SHOWN, _attr, _maps_per_row, _wrapped
from hippo_rep.figures.inputs import FigureInputs, MissingInput
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.maps import autocorrelogram, map_caption, rate_map
from hippo_rep.plotting.style import DEFAULT_COLUMN, column_width, new_figure
from hippo_rep.schema import IS_BAND, IS_BORDER, IS_GRID, IS_PLACE, IS_SQUARE, IS_TWO_WAVE

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
