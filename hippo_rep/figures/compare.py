"""TEM beside TEM-t: the ``tem_vs_temt`` figure.

Rate maps of the most grid-like g unit of each TEM module, the most place-like TEM p units,
the most grid-like TEM-t g units and place-like memory neurons; the score distributions of
every population, their cell-class fractions and remapping. Panels:
:mod:`hippo_rep.plotting.maps`, :mod:`hippo_rep.plotting.compare`.
"""

from __future__ import annotations

import numpy as np

from hippo_rep.figures._common import (
    MIN_PEAK_FRACTION,
    _classes_and_remapping,
    _fewer_units_note,
    _narrow_groups,
    _size,
    _top_units,
    _two_lines,
)
from hippo_rep.figures.inputs import FigureInputs, MissingInput
from hippo_rep.figures.registry import register
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.compare import score_distributions
from hippo_rep.plotting.maps import UNVISITED_GREY_NAME, map_caption, place_map, rate_map
from hippo_rep.plotting.style import (
    BLUE,
    DEFAULT_COLUMN,
    FIGURE_TITLE_FONT_SIZE,
    FULL_WIDTH,
    GREY,
    PLACE_CMAP,
    RATE_CMAP,
    REDDISH_PURPLE,
    VERMILLION,
    column_width,
    new_figure,
)
from hippo_rep.schema import MEMORY_ACTIVITY, G, P

#: Columns of rate maps per row of the ``tem_vs_temt`` figure.
N_COMPARE_SHOWN = 5
#: Rate maps per population of the ``tem_vs_temt`` figure in a single column, two
#: populations a row (four rows of maps above the four distribution panels are taller than a
#: page, :data:`~hippo_rep.plotting.style.MAX_HEIGHT`).
N_COMPARE_SHOWN_SINGLE = 2
#: Short names of the scores in map titles.
SCORE_SHORT = {"gridness_60": "g60", "place_score": "place"}
#: Colours of the populations in the ``tem_vs_temt`` score panels (Okabe-Ito).
COMPARE_COLORS = {"TEM g": GREY, "TEM p": VERMILLION, "TEM-t g": BLUE,
                  "TEM-t memory": REDDISH_PURPLE}


def _tem_modules(tem) -> np.ndarray:
    """Frequency module of each g unit of a TEM analysis (the ``module`` coord of its
    recording: contiguous blocks of ``model.tem.n_g`` units, 0 = highest frequency). A
    recording made before the key moved holds it as ``tem_n_g``
    (:data:`~hippo_rep.config.ModelConfig.moved`)."""
    import json

    from hippo_rep.config import ConfigError, ModelConfig

    try:
        model = ModelConfig.upgrade(json.loads(tem.attrs.get("model_config", "{}")))
    except ConfigError:
        model = {}
    tem_section = model.get("tem") if isinstance(model, dict) else None
    sizes = tem_section.get("n_g") if isinstance(tem_section, dict) else None
    if not sizes:
        raise MissingInput("the TEM analysis has no model_config with model.tem.n_g (not a "
                           "TEM?)")
    return np.repeat(np.arange(len(sizes)), sizes)


@register("tem_vs_temt")
def tem_vs_temt_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """TEM beside TEM-t: the most grid-like g unit of each TEM module, the most place-like
    TEM p units, the most grid-like TEM-t g units and place-like memory neurons (rate maps
    in the first environment), the gridness-60 and place-metric distributions of every
    population (every unit × environment), the fractions classified grid, two-wave, band,
    square and place (:func:`~hippo_rep.schema.class_fractions`) and the spatial correlation
    of each unit across environments (remapping)."""
    need = ("rate_map", "gridness_60", "place_score")
    temt = inputs.need("analysis", *need)
    if inputs.tem_analysis is None:
        raise MissingInput("needs a TEM analysis (--tem-analysis FILE) beside the TEM-t one")
    tem = inputs.need("tem_analysis", *need)
    if P not in tem.hippo.populations:
        raise MissingInput("--tem-analysis is not the analysis of a TEM recording (no p)")
    if MEMORY_ACTIVITY not in temt.hippo.populations:
        raise MissingInput("the analysis is not of a TEM-t recording (no memory neurons)")
    tem_g, tem_p = tem.hippo.population(G), tem.hippo.population(P)
    temt_g, temt_m = temt.hippo.population(G), temt.hippo.population(MEMORY_ACTIVITY)
    module = _tem_modules(tem)[tem_g["unit_index"].values]
    single = width == "single"
    if single:  # two populations a row of maps, N_COMPARE_SHOWN_SINGLE maps each (a page
        # high); the grid and place panels, classes and remapping stacked
        n = N_COMPARE_SHOWN_SINGLE
        map_rows = 2
        fig = new_figure(column_width(width), 9.6)
        grid = fig.add_gridspec(map_rows + 4, 2 * n,
                                height_ratios=[0.8, 0.8, 1.3, 1.3, 1.9, 1.2])
    else:
        n = N_COMPARE_SHOWN
        map_rows = 4
        fig = new_figure(FULL_WIDTH, 9.6)
        grid = fig.add_gridspec(map_rows + 2, n, height_ratios=[1, 1, 1, 1, 1.6, 1.9])
    rows = []
    env = tem_g["env"].values[0]
    best = []  # one unit per module: its best by gridness, else its first (saying so)
    for m in np.unique(module)[:N_COMPARE_SHOWN]:
        in_m = tem_g.isel(unit=module == m)
        top = _top_units(in_m, "gridness_60", env, 1)
        best.append((top[0], f"module {m}") if len(top) else
                    (in_m["unit"].values[0], f"module {m}, no gridness"))
    if len(best) > n:  # the modules whose best unit is the most grid-like, in module order
        g = np.nan_to_num([float(tem_g["gridness_60"].sel(env=env, unit=u)) for u, _ in best],
                          nan=-np.inf)
        best = [best[k] for k in sorted(np.argsort(-g, kind="stable")[:n])]
    rows.append(("TEM g", tem_g, env, best, "gridness_60", RATE_CMAP, False))
    rows.append(("TEM p", tem_p, env,
                 [(u, "") for u in _top_units(tem_p, "place_score", env, n, "spatial_info",
                                              MIN_PEAK_FRACTION)],
                 "place_score", PLACE_CMAP, True))
    env_t = temt_g["env"].values[0]
    rows.append(("TEM-t g", temt_g, env_t,
                 [(u, "") for u in _top_units(temt_g, "gridness_60", env_t, n)],
                 "gridness_60", RATE_CMAP, False))
    rows.append(("TEM-t memory", temt_m, env_t,
                 [(u, "") for u in _top_units(temt_m, "place_score", env_t, n,
                                              "spatial_info", MIN_PEAK_FRACTION)],
                 "place_score", PLACE_CMAP, True))
    for i, (name, ds, e, units, score, cmap, outline) in enumerate(rows):
        r, c0 = divmod(i, 2) if single else (i, 0)
        for j in range(n):
            ax = fig.add_subplot(grid[r, c0 * n + j])
            if j >= len(units):
                if j == len(units):
                    _fewer_units_note(ax, len(units), n, f"has a finite {SCORE_SHORT[score]}"
                                      + (f"\nand a peak ≥ {MIN_PEAK_FRACTION:.0%}" if outline
                                         else ""))
                else:
                    ax.set_axis_off()
                continue
            u, extra = units[j]
            idx = int(ds["unit_index"].sel(unit=u))
            value = f"{SCORE_SHORT[score]} {float(ds[score].sel(env=e, unit=u)):.2f}"
            # in a single column no line wider than the small map (its first would run past
            # the figure's left edge): the unit on its own line, or beside a short name
            title = ((f"{name} {idx}\n{extra.replace(', ', chr(10))}" if extra
                      else f"{name}\n{idx}") + f"\n{value}" if single
                     else f"{name} {idx}{', ' + extra if extra else ''}\n{value}")
            if outline:
                place_map(ds["rate_map"].sel(env=e, unit=u), ax=ax, title=title)
            else:
                rate_map(ds["rate_map"].sel(env=e, unit=u), ax=ax, cmap=cmap, colorbar=True,
                         units="", title=title)
    g60 = {f"TEM g m{m}": tem_g["gridness_60"].isel(unit=module == m).values
           for m in np.unique(module)}
    g60["TEM-t g"] = temt_g["gridness_60"].values
    bottom = (grid[map_rows:map_rows + 2, :].subgridspec(2, 1) if single
              else grid[map_rows, :].subgridspec(1, 2, width_ratios=[1.6, 1]))
    score_distributions(g60, ax=fig.add_subplot(bottom[0]), colors=COMPARE_COLORS,
                        ylabel=_two_lines("gridness-60 (unitless)", width), title="grid scores")
    place = {"TEM g": tem_g["place_score"].values, "TEM p": tem_p["place_score"].values,
             "TEM-t g": temt_g["place_score"].values,
             "TEM-t memory": temt_m["place_score"].values}
    place, colors = _narrow_groups(place, COMPARE_COLORS, width)
    score_distributions(place, ax=fig.add_subplot(bottom[1]), colors=colors,
                        ylabel=_two_lines("place metric (largest-field share)", "single"),
                        title="place metric")
    named = {"TEM g": (tem, G), "TEM p": (tem, P), "TEM-t g": (temt, G),
             "TEM-t memory": (temt, MEMORY_ACTIVITY)}
    _classes_and_remapping(fig, grid[map_rows + 2:, :] if single else grid[map_rows + 1, :],
                           named, COMPARE_COLORS,
                           width, height_ratios=(2.4, 1.5))
    units = temt["rate_map"].attrs.get("units", "")
    modules = (f"; TEM g: the {n} of {len(np.unique(module))} modules with the most grid-like "
               "best unit" if len(np.unique(module)) > n else "")
    figure_title(fig, f"TEM ({tem.sizes['env']} envs) beside TEM-t ({temt.sizes['env']} "
                   "envs): rate maps in the first environment, the most grid-like g units "
                   f"(g60 = gridness-60; white = unvisited{modules}) and the most place-like "
                   "p units and memory neurons (place = place metric; ties by spatial information; "
                   f"peak at least {MIN_PEAK_FRACTION:.0%} of the population's largest); "
                   f"{map_caption(units, outline=True, unvisited=UNVISITED_GREY_NAME)}; every "
                   "unit x environment in the distributions", _size(FIGURE_TITLE_FONT_SIZE, width))
    return fig
