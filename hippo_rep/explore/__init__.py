"""Helpers of the notebooks: tables of an analysis dataset, statistics figures and an
interactive rate-map explorer.

Everything the notebooks in ``notebooks/`` compute lives here, so the notebooks stay thin and
the logic is tested. Figures are built as :class:`matplotlib.figure.Figure` objects outside
pyplot (no global state, nothing shown twice) in the paper style and shown in Jupyter as
images by :mod:`hippo_rep.plotting.display` (PNG at 2× resolution, or SVG).

The explorer (:func:`explore_rate_maps`) uses ipywidgets when it can be imported (pick an
environment, a population and a unit — from a list or a slider ordered by score — and see its
rate map, autocorrelogram and scores with their null percentiles, or its maps in every
environment side by side) and otherwise shows static panels of the top units of each
population. A map that cannot be drawn shows its one-line reason instead.
"""

from __future__ import annotations

# Split by concern: tables (pure, pandas out), figures (bare matplotlib Figures) and the
# widget; this module is the one import path the notebooks and users know.
from hippo_rep.explore.figures import (
    COMPARE_COLUMNS,
    COMPARE_PANEL_INCHES,
    SCORE_EXTRA_LINES,
    SCORE_LINE_INCHES,
    SHORT_NAMES,
    UNIT_FIGSIZE,
    class_fraction_figure,
    compare_figure,
    field_figure,
    registry_figure,
    show_figures,
    unit_figure,
)
from hippo_rep.explore.tables import (
    DEFAULT_RANK_SCORE,
    RANK_SCORE,
    UNIT_ONLY_COLUMNS,
    UNIT_SCORES,
    UNIT_TABLE_COLUMNS,
    ExploreError,
    classification_summary,
    map_problem,
    rank_key,
    ranked_units,
    remapping_table,
    unit_scores,
    unit_table,
)
from hippo_rep.explore.widget import EXPLORER_CACHE, STATIC_UNITS, Explorer, explore_rate_maps

__all__ = [
    "COMPARE_COLUMNS", "COMPARE_PANEL_INCHES", "DEFAULT_RANK_SCORE", "EXPLORER_CACHE",
    "RANK_SCORE", "SCORE_EXTRA_LINES", "SCORE_LINE_INCHES", "SHORT_NAMES", "STATIC_UNITS",
    "UNIT_FIGSIZE", "UNIT_ONLY_COLUMNS", "UNIT_SCORES", "UNIT_TABLE_COLUMNS", "ExploreError",
    "Explorer", "class_fraction_figure", "classification_summary", "compare_figure",
    "explore_rate_maps", "field_figure", "map_problem", "rank_key", "ranked_units",
    "registry_figure", "remapping_table", "show_figures", "unit_figure", "unit_scores",
    "unit_table",
]
