"""Analysis of recorded activity: pure functions, xarray in and out, numpy/scipy only.

Conventions: rate maps are indexed ``[row = y, col = x]`` with dims ``("y", "x")`` last (any
leading dims, e.g. ``("env", "unit", "y", "x")``); lengths are in bins; angles in degrees
from +x towards +y; unvisited bins are NaN, never 0.
"""

from .autocorr import autocorrelogram
from .fields import place_fields, place_score
from .gridscore import band_scores, grid_scores
from .ratemaps import rate_maps_from_nodes, rate_maps_from_positions, smooth
from .spatial import selectivity, sparsity, spatial_information
from .synthetic import band_map, hex_grid_map, place_field_map, square_grid_map

__all__ = [
    "autocorrelogram",
    "band_map",
    "band_scores",
    "grid_scores",
    "hex_grid_map",
    "place_field_map",
    "place_fields",
    "place_score",
    "rate_maps_from_nodes",
    "rate_maps_from_positions",
    "selectivity",
    "smooth",
    "sparsity",
    "spatial_information",
    "square_grid_map",
]
