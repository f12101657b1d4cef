"""Analysis of recorded activity: pure functions, xarray in and out, numpy/scipy/scikit-learn.

Conventions: rate maps are indexed ``[row = y, col = x]`` with dims ``("y", "x")`` last (any
leading dims, e.g. ``("env", "unit", "y", "x")``); lengths are in bins; angles in degrees
from +x towards +y; unvisited bins are NaN, never 0.

Maps and scores: :func:`rate_maps_from_nodes`, :func:`rate_maps_from_positions`,
:func:`smooth`, :func:`autocorrelogram`, :func:`grid_scores`, :func:`band_scores`,
:func:`place_fields`, :func:`place_score`, :func:`border_score`, :func:`spatial_information`,
:func:`sparsity`, :func:`selectivity`, :func:`plane_waves` (how many plane waves, their triad
phase, hexagonal lattice or not). Controls: :func:`control_maps` (lattices grown by pattern
formation and their negatives, :mod:`~hippo_rep.analysis.controls`), :func:`controls_recording`
and :func:`random_wave_maps` / :func:`matched_negative` (a negative matched to your maps' size
and wavelength: the lattice rule's false-positive rate there).
Recordings: :func:`rate_maps`, :func:`shuffle_null`, :func:`classify`,
:func:`class_fractions` (the one definition of every reported fraction, from
:mod:`hippo_rep.schema`, which also names the cell classes and the analysis outputs),
:func:`remapping`, :func:`population`, and :func:`analyse` (everything, dask-parallel over
units) with :func:`write_analysis` / :func:`open_analysis`.
Your own recorded cells (:mod:`~hippo_rep.analysis.sessions`): :func:`session_from_spikes`,
:func:`session_from_rates`, :func:`validate_session`, :func:`write_session` /
:func:`open_session`, :func:`read_nwb` / :func:`write_nwb` (NWB, pynwb),
:func:`session_rate_maps`; :func:`analyse` takes a session as it takes a recording; a
circular arena (``arena_shape="circle"``, :mod:`~hippo_rep.analysis.arena`) maps the disc,
NaN outside it (:func:`mask_outside_disc` does it for any maps with x, y coords);
:func:`session_remapping` compares the same cells in two sessions
(:mod:`~hippo_rep.analysis.session_remapping`).
:func:`simulate_session` simulates one with known ground truth (grid, place, boundary and
band cells; :mod:`~hippo_rep.analysis.synthetic_session`); :func:`session_from_ratinabox`
makes one from an outside simulator's rat and cells (RatInABox, optional), and
:func:`simulate_ratinabox_session` runs notebook 04's
(:mod:`~hippo_rep.analysis.ratinabox_session`).
"""

import importlib
import sys
import types

#: Public names imported on first use, so that importing a light module of the package
#: (e.g. :mod:`~hippo_rep.analysis.methods`, the grid-method registry the command line
#: reads for its help) does not import xarray and scipy: name → module.
_LAZY = {
    "AnalysisError": "hippo_rep.analysis.recordings",
    "CLASSES": "hippo_rep.schema",
    "SessionError": "hippo_rep.analysis.sessions",
    "analyse": "hippo_rep.analysis.pipeline",
    "autocorrelogram": "hippo_rep.analysis.autocorr",
    "band_map": "hippo_rep.analysis.synthetic",
    "border_map": "hippo_rep.analysis.synthetic",
    "band_scores": "hippo_rep.analysis.bandscore",
    "border_score": "hippo_rep.analysis.border",
    "mask_outside_disc": "hippo_rep.analysis.arena",
    "class_fractions": "hippo_rep.schema",
    "classify": "hippo_rep.analysis.classify",
    "control_maps": "hippo_rep.analysis.controls",
    "export_nwb": "hippo_rep.analysis.inputs",
    "controls_recording": "hippo_rep.analysis.controls",
    "random_wave_maps": "hippo_rep.analysis.controls",
    "matched_negative": "hippo_rep.analysis.controls",
    "grid_modules": "hippo_rep.analysis.modules",
    "grid_scores": "hippo_rep.analysis.gridscore",
    "hex_grid_map": "hippo_rep.analysis.synthetic",
    "open_analysis": "hippo_rep.analysis.analysis_files",
    "open_input": "hippo_rep.analysis.inputs",
    "open_session": "hippo_rep.analysis.sessions",
    "place_field_map": "hippo_rep.analysis.synthetic",
    "place_fields": "hippo_rep.analysis.fields",
    "place_score": "hippo_rep.analysis.fields",
    "plane_waves": "hippo_rep.analysis.planewaves",
    "population": "hippo_rep.analysis.population",
    "rate_maps": "hippo_rep.analysis.recordings",
    "rate_maps_from_nodes": "hippo_rep.analysis.ratemaps",
    "rate_maps_from_positions": "hippo_rep.analysis.ratemaps",
    "read_nwb": "hippo_rep.analysis.nwb",
    "remapping": "hippo_rep.analysis.remapping",
    "selectivity": "hippo_rep.analysis.spatial",
    "session_from_ratinabox": "hippo_rep.analysis.ratinabox_session",
    "session_from_rates": "hippo_rep.analysis.sessions",
    "session_from_spikes": "hippo_rep.analysis.sessions",
    "session_rate_maps": "hippo_rep.analysis.sessions",
    "session_remapping": "hippo_rep.analysis.session_remapping",
    "shuffle_null": "hippo_rep.analysis.shuffle",
    "simulate_ratinabox_session": "hippo_rep.analysis.ratinabox_session",
    "simulate_session": "hippo_rep.analysis.synthetic_session",
    "smooth": "hippo_rep.analysis.ratemaps",
    "sparsity": "hippo_rep.analysis.spatial",
    "spatial_information": "hippo_rep.analysis.spatial",
    "square_grid_map": "hippo_rep.analysis.synthetic",
    "synthetic_recording": "hippo_rep.analysis.synthetic_recording",
    "two_wave_map": "hippo_rep.analysis.synthetic",
    "unit_activity": "hippo_rep.analysis.recordings",
    "validate_session": "hippo_rep.analysis.sessions",
    "write_analysis": "hippo_rep.analysis.analysis_files",
    "write_nwb": "hippo_rep.analysis.nwb",
    "write_session": "hippo_rep.analysis.sessions",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    try:  # a submodule not imported yet (hippo_rep.analysis.pipeline, ...)
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


#: Public functions named as the submodule that defines them (``remapping``, ...): the
#: function, as ``from .remapping import remapping`` in an eager ``__init__`` would leave it.
_SHADOWED = frozenset(k for k, v in _LAZY.items() if v == f"{__name__}.{k}")


class _Package(types.ModuleType):
    """This package, whose functions in :data:`_SHADOWED` are not replaced by their
    submodules when those are imported (the import system sets a submodule as an attribute
    of its package)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
