"""FAM slots as cells: the ``fam_slots`` figure.

Rate maps of the most spatially informative FAM slots beside the memory neurons of the same
recording, the place metric and field counts of both, and the cell-class fractions and
remapping of slots, memory neurons and positional units. Panels:
:mod:`hippo_rep.plotting.maps`, :mod:`hippo_rep.plotting.place`.
"""

from __future__ import annotations

import numpy as np

from hippo_rep.figures._common import (
    MAPS_PER_ROW_SINGLE,
    _classes_and_remapping,
    _counted,
    _fewer_units_note,
    _top_units,
    _two_lines,
)
from hippo_rep.figures.inputs import FigureInputs, MissingInput
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import LEGEND_DROP_PT, figure_title, legend_below
from hippo_rep.plotting.maps import UNVISITED_GREY_NAME, map_caption, place_map
from hippo_rep.plotting.place import field_count_by_population, place_score_by_population
from hippo_rep.plotting.remapping import POPULATION_COLORS, POPULATION_LABELS
from hippo_rep.plotting.scores import axis_label
from hippo_rep.plotting.style import (
    DEFAULT_COLUMN,
    FULL_WIDTH,
    TINY_FONT_SIZE,
    column_width,
    new_figure,
)
from hippo_rep.schema import FAM_ACTIVITY, MEMORY_ACTIVITY, G

#: Rate maps per population in the ``fam_slots`` figure (most place-like first).
N_FAM_SHOWN = 6


@register("fam_slots")
def fam_slots_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """FAM slots as cells: rate maps of the most spatially informative FAM slots beside the
    most informative memory neurons of the same recording (first environment; ranked by
    spatial information, not the place metric, which is near 1 for any flat map), and the
    place metric and field-count distributions of both populations over every environment,
    and the cell-class fractions and remapping of slots, memory neurons and positional units."""
    full = inputs.need("analysis", "rate_map", "place_score", "n_fields", "spatial_info")
    pops = (FAM_ACTIVITY, MEMORY_ACTIVITY)
    for pop in pops:
        if pop not in full.hippo.populations:
            raise MissingInput(f"the analysis has no {pop!r} population" + (
                " (FAM slots are recorded from model.memory='fam' models only)"
                if pop == FAM_ACTIVITY else ""))
    both = full.isel(unit=np.isin(np.asarray(full["variable"].values).astype(str), pops))
    env = full["env"].values[0]
    single = width == "single"
    if single:  # three maps a population; the distributions side by side (legends below
        # them), the classes and remapping stacked
        n = MAPS_PER_ROW_SINGLE
        fig = new_figure(column_width(width), 9.5)
        grid = fig.add_gridspec(5, n, height_ratios=[1.0, 1.0, 1.9, 2.1, 1.4])
    else:
        n = N_FAM_SHOWN
        fig = new_figure(FULL_WIDTH, 8.4)
        grid = fig.add_gridspec(4, n, height_ratios=[1.0, 1.0, 1.6, 2.4])
    counts = {}
    for i, (pop, name) in enumerate(((FAM_ACTIVITY, "FAM slot"), (MEMORY_ACTIVITY, "memory"))):
        ds = full.hippo.population(pop)
        score, info = ds["place_score"].sel(env=env), ds["spatial_info"].sel(env=env)
        top = _top_units(ds, "spatial_info", env, n)
        counts[pop] = len(top)
        for j in range(n):
            ax = fig.add_subplot(grid[i, j])
            if j == len(top):
                _fewer_units_note(ax, len(top), n, "has a finite\nspatial information")
            if j >= len(top):
                ax.set_axis_off()
                continue
            u = top[j]
            place_map(ds["rate_map"].sel(env=env, unit=u), ax=ax,
                      title=f"{name} {int(ds['unit_index'].sel(unit=u))}\n"
                            f"SI {float(info.sel(unit=u)):.2f}, "
                            f"place {float(score.sel(unit=u)):.2f}")
    dist = grid[2, :].subgridspec(1, 2)
    dists = [place_score_by_population(both["place_score"], ax=fig.add_subplot(dist[0]))]
    # field counts of the (env, unit) pairs in which the unit exists (schema.DENOMINATOR)
    exists = both["rate_map"].notnull().any(("y", "x"))
    dists.append(field_count_by_population(both["n_fields"].where(exists),
                                           ax=fig.add_subplot(dist[1])))
    if single:  # half a column each: labels on two lines, the legend below the panel
        for ax in dists:
            ax.set_xlabel(_two_lines(ax.get_xlabel(), width))
            ax.set_ylabel(_two_lines(ax.get_ylabel(), width))
            handles, labels = ax.get_legend_handles_labels()
            legend_below(ax, LEGEND_DROP_PT + 8, handles=handles, ncol=1, frameon=False,
                         labels=[lab.replace(": ", ":\n", 1) for lab in labels],
                         fontsize=TINY_FONT_SIZE)
    shown = {POPULATION_LABELS[p].replace("\n", " "): p for p in (*pops, G)}
    _classes_and_remapping(fig, grid[3:, :] if single else grid[3, :],
                           {k: (full, p) for k, p in shown.items()},
                           {k: POPULATION_COLORS[p] for k, p in shown.items()}, width,
                           height_ratios=(2.4, 1.6))
    units = full["rate_map"].attrs.get("units", "")
    figure_title(fig, f"{_counted({0: counts[FAM_ACTIVITY]}, 'FAM slots')} (top row) beside "
                   f"{_counted({0: counts[MEMORY_ACTIVITY]}, 'memory neurons')} (second row) "
                   f"with the highest finite spatial information in env {env}, most "
                   "informative first; SI = spatial information "
                   f"({axis_label(full['spatial_info'], 'SI').split('(', 1)[1][:-1]}); "
                   f"{map_caption(units, outline=True, unvisited=UNVISITED_GREY_NAME)}")
    return fig
