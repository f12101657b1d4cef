"""Model-grown controls: the ``controls`` figure.

Per control (``hippo-rep controls``, analysed), the first units' rate maps with their
autocorrelograms and plane-wave verdicts; the fraction of each control's units per class;
every unit's triad phase. Panels: :mod:`hippo_rep.plotting.maps`,
:mod:`hippo_rep.plotting.controls`.
"""

from __future__ import annotations

import numpy as np

from hippo_rep.analysis import autocorrelogram as sac_of
from hippo_rep.figures.inputs import FigureInputs, MissingInput
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.maps import autocorrelogram, map_caption, rate_map
from hippo_rep.plotting.scores import class_fraction_bars
from hippo_rep.plotting.style import DEFAULT_COLUMN, column_width, new_figure
from hippo_rep.schema import G

#: Maps (each with its autocorrelogram) shown per control in the ``controls`` figure; in a
#: single column (``width="single"``).
N_CONTROL_MAPS = 2
N_CONTROL_MAPS_SINGLE = 1
#: Controls side by side, at either width (six controls in three rows fit a page).
CONTROLS_PER_ROW = 2


def _control_title(name: str, unit: int, verdict: str, psi: float) -> str:
    """A control map's title, on three short lines (the maps are narrow): its control, its
    verdict, its unit and triad phase."""
    phase = "" if np.isnan(psi) else f"ψ {round(psi) + 0:d}°"
    return f"{name}\n{verdict}\nunit {unit}" + (f", {phase}" if phase else "")


@register("controls")
def controls_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """The model-grown controls (``hippo-rep controls``, analysed): per control, the first
    units' rate maps with their autocorrelograms and plane-wave verdicts; the fraction of
    each control's units per class; every unit's triad phase."""
    from hippo_rep.analysis.controls import CONTROL_DIM, control_fractions
    from hippo_rep.analysis.planewaves import LATTICE_PHASE_TOL
    from hippo_rep.plotting.controls import triad_phases

    full = inputs.need("analysis", "rate_map", "hexagonal", "triad_phase", "n_waves")
    if CONTROL_DIM not in full.coords:
        raise MissingInput("the analysis is not of a controls recording (no 'control' coord; "
                           "make one with hippo-rep controls)")
    ds = full.hippo.population(G)
    names = [str(c) for c in ds[CONTROL_DIM].values]
    single = width == "single"
    # two controls a row; a single column: one unit each
    n_show = min(N_CONTROL_MAPS_SINGLE if single else N_CONTROL_MAPS, ds.sizes["unit"])
    per_row = CONTROLS_PER_ROW
    n_rows = -(-len(names) // per_row)
    top_h, bottom_h = (1.1 * n_rows, 5.4) if single else (1.3 * n_rows, 3.2)
    fig = new_figure(column_width(width), top_h + bottom_h)
    rows = fig.subfigures(2, 1, height_ratios=[top_h, bottom_h])
    grid = rows[0].add_gridspec(n_rows, 2 * n_show * per_row)
    for i, env in enumerate(ds["env"].values):
        one = ds.sel(env=env)
        row, first = i // per_row, 2 * n_show * (i % per_row)
        for j, u in enumerate(one["unit"].values[:n_show]):
            m = one["rate_map"].sel(unit=u)
            m = m.isel(y=m.notnull().any("x").values, x=m.notnull().any("y").values)
            v = one.sel(unit=u)
            psi = float(v["triad_phase"])
            one_field = "single_field" in v and bool(v["single_field"])
            verdict = ("hexagonal" if bool(v["hexagonal"]) else "single field" if one_field
                       else f"{int(v['n_waves'])} waves")
            rate_map(m, ax=rows[0].add_subplot(grid[row, first + 2 * j]), colorbar=True,
                     units="", title=_control_title(names[i], int(v["unit_index"]), verdict,
                                                    psi))
            autocorrelogram(sac_of(m), ax=rows[0].add_subplot(grid[row, first + 2 * j + 1]),
                            title="autocorrelogram", colorbar=True)
    bottom = (rows[1].subplots(2, 1, height_ratios=[1.3, 1]) if single
              else rows[1].subplots(1, 2, width_ratios=[1.6, 1]))
    class_fraction_bars(control_fractions(full), ax=bottom[0],
                        title="fraction of each control's units (g)")
    triad_phases(ds["triad_phase"].swap_dims(env=CONTROL_DIM).drop_vars("env"),
                 ax=bottom[1], tol=LATTICE_PHASE_TOL,
                 title="triad phase\n(shaded: lattice of peaks / of troughs)")
    units = ds["rate_map"].attrs.get("units", "")
    figure_title(fig, "model-grown controls: pattern formation (relu, periodic √3/2 and "
                   "square box) and its negatives (tanh, no surround, linear eigenmodes and "
                   "their positive part); "
                   f"{map_caption(units, autocorrelograms=True)}")
    return fig
