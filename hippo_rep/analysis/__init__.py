"""Analysis of recorded activity: pure functions, xarray in and out, numpy/scipy/scikit-learn.

Conventions: rate maps are indexed ``[row = y, col = x]`` with dims ``("y", "x")`` last (any
leading dims, e.g. ``("env", "unit", "y", "x")``); lengths are in bins; angles in degrees
from +x towards +y; unvisited bins are NaN, never 0.

Maps and scores: :func:`rate_maps_from_nodes`, :func:`rate_maps_from_positions`,
:func:`smooth`, :func:`autocorrelogram`, :func:`grid_scores`, :func:`band_scores`,
:func:`place_fields`, :func:`place_score`, :func:`spatial_information`, :func:`sparsity`,
:func:`selectivity`, :func:`plane_waves` (how many plane waves, their triad phase, hexagonal
lattice or not). Controls: :func:`control_maps` (lattices grown by pattern formation and
their negatives, :mod:`~hippo_rep.analysis.controls`) and :func:`controls_recording`.
Recordings: :func:`rate_maps`, :func:`shuffle_null`, :func:`classify`,
:func:`class_fractions` (the one definition of every reported fraction, from
:mod:`hippo_rep.schema`, which also names the cell classes and the analysis outputs),
:func:`remapping`, :func:`population`, and :func:`analyse` (everything, dask-parallel over
units) with :func:`write_analysis` / :func:`open_analysis`.
Your own recorded cells (:mod:`~hippo_rep.analysis.sessions`): :func:`session_from_spikes`,
:func:`session_from_rates`, :func:`validate_session`, :func:`write_session` /
:func:`open_session`, :func:`read_nwb` / :func:`write_nwb` (NWB, pynwb),
:func:`session_rate_maps`; :func:`analyse` takes a session as it takes a recording;
:func:`session_remapping` compares the same cells in two sessions
(:mod:`~hippo_rep.analysis.session_remapping`).
:func:`simulate_session` simulates one with known ground truth (grid, place, boundary and
band cells; :mod:`~hippo_rep.analysis.synthetic_session`); :func:`session_from_ratinabox`
makes one from an outside simulator's rat and cells (RatInABox, optional), and
:func:`simulate_ratinabox_session` runs notebook 04's
(:mod:`~hippo_rep.analysis.ratinabox_session`).
"""

from hippo_rep.schema import CLASSES, class_fractions

from .autocorr import autocorrelogram
from .bandscore import band_scores
from .classify import classify
from .controls import control_maps, controls_recording
from .fields import place_fields, place_score
from .gridscore import grid_scores
from .nwb import read_nwb, write_nwb
from .pipeline import analyse, open_analysis, write_analysis
from .planewaves import plane_waves
from .population import population
from .ratemaps import rate_maps_from_nodes, rate_maps_from_positions, smooth
from .ratinabox_session import session_from_ratinabox, simulate_ratinabox_session
from .recordings import AnalysisError, rate_maps, unit_activity
from .remapping import remapping
from .session_remapping import session_remapping
from .sessions import (
    SessionError,
    open_session,
    session_from_rates,
    session_from_spikes,
    session_rate_maps,
    validate_session,
    write_session,
)
from .shuffle import shuffle_null
from .spatial import selectivity, sparsity, spatial_information
from .synthetic import band_map, hex_grid_map, place_field_map, square_grid_map, two_wave_map
from .synthetic_recording import synthetic_recording
from .synthetic_session import simulate_session

__all__ = [
    "AnalysisError",
    "CLASSES",
    "SessionError",
    "analyse",
    "autocorrelogram",
    "band_map",
    "band_scores",
    "class_fractions",
    "classify",
    "control_maps",
    "controls_recording",
    "grid_scores",
    "hex_grid_map",
    "open_analysis",
    "open_session",
    "place_field_map",
    "place_fields",
    "place_score",
    "plane_waves",
    "population",
    "rate_maps",
    "rate_maps_from_nodes",
    "rate_maps_from_positions",
    "read_nwb",
    "remapping",
    "selectivity",
    "session_from_ratinabox",
    "session_from_rates",
    "session_from_spikes",
    "session_rate_maps",
    "session_remapping",
    "shuffle_null",
    "simulate_ratinabox_session",
    "simulate_session",
    "smooth",
    "sparsity",
    "spatial_information",
    "square_grid_map",
    "synthetic_recording",
    "two_wave_map",
    "unit_activity",
    "validate_session",
    "write_analysis",
    "write_nwb",
    "write_session",
]
