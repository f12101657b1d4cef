"""Place cells: the ``place_cells`` figure.

Rate maps, fields outlined, of the most place-like memory neurons (or TEM p units) in each of
two environments, and the place metric of every population. Panels:
:mod:`hippo_rep.plotting.maps`, :mod:`hippo_rep.plotting.place`.
"""

from __future__ import annotations

import numpy as np

from hippo_rep.figures._common import (
    MIN_PEAK_FRACTION,
    N_UNITS_SHOWN,
    _counted,
    _fewer_units_note,
    _maps_per_row,
    _size,
    _top_units,
    _wrapped,
)
from hippo_rep.figures.inputs import FigureInputs
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import figure_title, legend_below
from hippo_rep.plotting.maps import UNVISITED_GREY_NAME, map_caption, place_map
from hippo_rep.plotting.place import place_score_by_population
from hippo_rep.plotting.style import (
    DEFAULT_COLUMN,
    MEDIUM_FONT_SIZE,
    TINY_FONT_SIZE,
    column_width,
    new_figure,
)
from hippo_rep.schema import MEMORY_ACTIVITY, P, place_population


@register("place_cells")
def place_cells_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Memory-neuron rate maps with their fields outlined (most place-like per environment),
    and the place metric of memory neurons against positional units."""
    full = inputs.need("analysis", "rate_map", "place_score", "n_fields")
    pop = place_population(full.hippo.populations) or MEMORY_ACTIVITY
    ds = full.hippo.population(pop)
    name = "TEM p unit" if pop == P else "memory"
    envs = ds["env"].values[:2]
    per_row = _maps_per_row(width)  # a single column: each environment's maps on two rows
    blocks = -(-N_UNITS_SHOWN // per_row)
    n_rows = len(envs) * blocks
    fig = new_figure(column_width(width), 1.3 * n_rows + (3.0 if width == "single" else 2.4))
    grid = fig.add_gridspec(n_rows + 1, per_row, height_ratios=[1.0] * n_rows + [1.5])
    slots = np.array([[fig.add_subplot(grid[i, j]) for j in range(per_row)]
                      for i in range(n_rows)]).reshape(n_rows, per_row)
    # axes[i, j]: the j-th map of environment i, wherever its row and column
    axes = np.array([[slots[i * blocks + r, c] for r, c in
                      (_wrapped(j, per_row, 1) for j in range(N_UNITS_SHOWN))]
                     for i in range(len(envs))])
    counts = {}
    for i, env in enumerate(envs):
        score = ds["place_score"].sel(env=env).fillna(-np.inf)
        # ties in place score (1 = all mass in one field) broken by spatial information
        top = _top_units(ds, "place_score", env, N_UNITS_SHOWN, "spatial_info",
                         MIN_PEAK_FRACTION)
        counts[f"env {env}"] = len(top)
        for j in range(N_UNITS_SHOWN):
            if j == len(top):
                _fewer_units_note(axes[i, j], len(top), N_UNITS_SHOWN,
                                  f"has a place score\nand a peak ≥ {MIN_PEAK_FRACTION:.0%}")
            if j >= len(top):
                axes[i, j].set_axis_off()
                continue
            u = top[j]
            place_map(ds["rate_map"].sel(env=env, unit=u), ax=axes[i, j],
                      title=f"{name} {int(ds['unit_index'].sel(unit=u))}, env {env}\n"
                            f"place score {float(score.sel(unit=u)):.2f}")
    dist = fig.add_subplot(grid[n_rows, :])
    place_score_by_population(full["place_score"], ax=dist)
    if width == "single":  # the legend below the panel: inside, it covers the bars
        legend_below(dist, fontsize=TINY_FONT_SIZE)
    ny, nx = full.sizes["y"], full.sizes["x"]
    dist.set_title(f"place metric, all units and environments ({ny} x {nx} bins:"
                   f"{chr(10) if width == 'single' else ' '}it needs maps large enough for a "
                   "grid unit to show several fields)", fontsize=_size(MEDIUM_FONT_SIZE, width))
    units = full["rate_map"].attrs.get("units", "")
    who = "TEM grounded locations p" if pop == P else "memory neurons (softmax units)"
    figure_title(fig, f"{_counted(counts, who)} with the highest place score (ties: spatial "
                   f"information; a finite score and a peak at least {MIN_PEAK_FRACTION:.0%} "
                   "of the population's largest in the environment); "
                   f"{map_caption(units, outline=True, unvisited=UNVISITED_GREY_NAME)}")
    return fig
