"""Grid cells: the ``grid_cells`` figure.

Rate maps of the most grid-like positional units (or read-out cells) with their
autocorrelograms, gridness and spacing, in two environments. Panels:
:mod:`hippo_rep.plotting.maps`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from hippo_rep.analysis import autocorrelogram as sac_of
from hippo_rep.analysis.methods import DEFAULT_GRID_METHOD
from hippo_rep.figures._common import N_UNITS_SHOWN, _maps_per_row, _wrapped
from hippo_rep.figures.inputs import FigureInputs
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.maps import autocorrelogram, map_caption, rate_map
from hippo_rep.plotting.style import DEFAULT_COLUMN, column_width, new_figure
from hippo_rep.schema import G


def _g_name(ds: xr.Dataset) -> str:
    """What the recording's population ``g`` is: TEM-t's positional units, or the read-out
    cells r of a ``model.cells = "readout"`` model (its model config, kept in the analysis)."""
    import json

    try:
        cells = json.loads(ds.attrs.get("model_config", "{}")).get("cells", "g")
    except (TypeError, ValueError):
        cells = "g"
    return "read-out cells r" if cells == "readout" else "positional units g"


@register("grid_cells")
def grid_cells_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Rate maps of the most grid-like positional units (ranked in the first environment) with
    their autocorrelograms, gridness and spacing, in two environments."""
    ds = inputs.need("analysis", "rate_map", "gridness_60", "spacing").hippo.population(G)
    # spacing in the recording's own unit where the analysis holds it (cm for a session, node
    # spacings for a model's world), else in bins
    spacing, unit = next(((k, u) for k, u in (("spacing_cm", "cm"),
                                              ("spacing_nodes", "node spacings"))
                          if k in ds), ("spacing", "bins"))
    envs = ds["env"].values[:2]
    score = ds["gridness_60"].sel(env=envs[0]).fillna(-np.inf)
    top = ds["unit"].values[np.argsort(-score.values)[:N_UNITS_SHOWN]]
    rows = [("map", envs[0]), ("sac", envs[0])] + [("map", e) for e in envs[1:]]
    per_row = _maps_per_row(width, max(len(top), 1))  # a single column: the units wrapped
    blocks = -(-len(top) // per_row)
    fig = new_figure(column_width(width), 1.2 * len(rows) * blocks + 0.4
                     + (0.6 if width == "single" else 0))
    axes = fig.subplots(len(rows) * blocks, per_row, squeeze=False)
    for j, u in enumerate(top):
        r0, c = _wrapped(j, per_row, len(rows))
        for i, (what, env) in enumerate(rows):
            m = ds["rate_map"].sel(env=env, unit=u)
            g60 = float(ds["gridness_60"].sel(env=env, unit=u))
            sp = float(ds[spacing].sel(env=env, unit=u))
            if what == "map":
                idx = int(ds["unit_index"].sel(unit=u))
                rate_map(m, ax=axes[r0 + i, c], colorbar=True, units="",
                         title=f"unit {idx}, env {env}\ng60 {g60:.2f}, sp. {sp:.1f}")
            else:
                autocorrelogram(sac_of(m), ax=axes[r0 + i, c], title="autocorrelogram",
                                colorbar=True)
    for j in range(len(top), blocks * per_row):  # the slots a last, shorter row leaves
        r0, c = _wrapped(j, per_row, len(rows))
        for i in range(len(rows)):
            axes[r0 + i, c].set_axis_off()
    units = ds["rate_map"].attrs.get("units", "")
    method = ds.attrs.get("grid_score_method", DEFAULT_GRID_METHOD)
    figure_title(fig, f"most grid-like {_g_name(ds)} (ranked by gridness-60, g60, in env "
                   f"{envs[0]}; method {method}; sp. = "
                   f"spacing in {unit})\n{map_caption(units, autocorrelograms=True)}")
    return fig
