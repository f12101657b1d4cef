"""A session (your own cells, :mod:`~hippo_rep.analysis.sessions`) as the inputs of
:func:`~hippo_rep.analysis.analyse`: read once (:func:`read_session`), mapped
(:func:`session_maps`), and the variables and attrs in which its analysis differs from a
recording's (:func:`session_variables`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from hippo_rep.defaults import (
    SESSION_BIN_SIZE_CM,
    SESSION_MIN_SHIFT_S,
    SESSION_MIN_SPEED_CM_S,
    SESSION_SMOOTH_CM,
)
from hippo_rep.schema import KIND_ATTR

from ._checks import check_positive_number
from .arena import RECTANGLE
from .recordings import UNIT_DIM, AnalysisError
from .sample_counts import SampleCounts
from .sessions import (
    ARENA_ATTR,
    ARENA_SHAPE_ATTR,
    CELL_ID,
    CELLS_ATTR,
    RATE,
    SESSION_KIND,
    SESSION_MIN_FIELD_AREA_CM2,
    parse_arena,
    population_cells,
    sample_interval,
    session_arena_shape,
    session_node,
    session_rate_maps,
    spike_sample_counts,
)


@dataclass(frozen=True)
class SessionInput:
    """What :func:`~hippo_rep.analysis.analyse` reads from a checked session (:func:`read_session`).

    Attributes
    ----------
    node : xarray.DataArray of int, dims (env, time)
        The speed-filtered bin of every tracking sample (one env; negative = skip).
    activity : xarray.DataArray
        A session of spikes: dims (unit,), each cell's position in ``counts``; of rates: the
        selected cells' rates, dims (env, time, unit), Hz.
    counts : SampleCounts or None
        A session of spikes: spikes per tracking sample, held sparsely.
    min_shift_fraction : float
        ``min_shift_s`` as a fraction of the session's duration.
    bounds : numpy.ndarray of int, shape (n_populations + 1,)
        Each population's cells are ``[bounds[i], bounds[i + 1])`` along ``unit``.
    cell_id : numpy.ndarray of str, shape (unit,)
        The cells' ids.
    bin_size_cm, smooth_cm, min_speed_cm_s, min_shift_s : float
        The rate-map and shuffle options, defaults filled in (cm, cm, cm/s, s).
    field_min_area : int
        Smallest place field, bins
        (:data:`~hippo_rep.analysis.sessions.SESSION_MIN_FIELD_AREA_CM2`).
    arena_shape : str
        "rectangle" or "circle" (:func:`~hippo_rep.analysis.sessions.session_arena_shape`).
    attrs : dict
        The session's attrs for the analysis (``session_*``) and the spike bookkeeping.
    """

    node: xr.DataArray
    activity: xr.DataArray
    counts: SampleCounts | None
    min_shift_fraction: float
    bounds: np.ndarray
    cell_id: np.ndarray
    bin_size_cm: float
    smooth_cm: float
    min_speed_cm_s: float
    min_shift_s: float
    field_min_area: int
    attrs: dict
    arena_shape: str = RECTANGLE


def read_session(session: xr.Dataset, variables: Sequence[str], *,
                 bin_size_cm: float | None = None, smooth_cm: float | None = None,
                 min_speed_cm_s: float | None = None,
                 min_shift_s: float | None = None) -> SessionInput:
    """A checked session as :func:`~hippo_rep.analysis.analyse`'s inputs: bins as nodes; as
    activity, a session of spikes' counts per tracking sample held sparsely (``counts``;
    ``activity`` the cells' positions in them) or one dense (env, time, unit) copy of a
    session's rates.

    Parameters
    ----------
    session : xarray.Dataset
        A checked session (:func:`~hippo_rep.analysis.validate_session`).
    variables : sequence of str
        Its populations to analyse, in order.
    bin_size_cm, smooth_cm, min_speed_cm_s, min_shift_s : float, optional
        Bin side (cm), smoothing σ (cm), speed filter (cm/s), smallest circular shift (s);
        None: :data:`~hippo_rep.defaults.SESSION_BIN_SIZE_CM`, ``SESSION_SMOOTH_CM``,
        ``SESSION_MIN_SPEED_CM_S``, ``SESSION_MIN_SHIFT_S``.

    Returns
    -------
    SessionInput

    Raises
    ------
    AnalysisError
        No tracking sample as fast as ``min_speed_cm_s``, or ``min_shift_s`` not under half
        the session's duration.
    ValueError
        A bin size that is not > 0 or a negative ``min_shift_s``.
    """
    bin_cm = SESSION_BIN_SIZE_CM if bin_size_cm is None else bin_size_cm
    bin_cm = check_positive_number(bin_cm, "bin_size_cm")
    speed = SESSION_MIN_SPEED_CM_S if min_speed_cm_s is None else min_speed_cm_s
    smooth_cm = SESSION_SMOOTH_CM if smooth_cm is None else smooth_cm
    shift_s = SESSION_MIN_SHIFT_S if min_shift_s is None else min_shift_s
    shift_s = check_positive_number(shift_s, "min_shift_s", allow_zero=True)
    node = session_node(session, bin_cm, speed)
    if not (node.values >= 0).any():
        raise AnalysisError(f"the session has no tracking sample at {speed:g} cm/s or faster "
                            "(lower min_speed_cm_s)")
    cells = {v: population_cells(session, v) for v in variables}
    every = np.concatenate(list(cells.values()))
    ids = np.asarray(session[CELL_ID].values).astype(str)[every]
    bounds = np.cumsum([0] + [c.size for c in cells.values()])
    gaps = 0
    if session.attrs[CELLS_ATTR] == "spikes":
        counts, gaps = spike_sample_counts(session, every)
        activity = xr.DataArray(np.arange(every.size), dims=(UNIT_DIM,))  # positions in counts
    else:  # one copy of the selected rates
        counts = None
        rate = session[RATE]
        values = np.asarray(rate.values, dtype=np.float64)[:, every]
        activity = xr.DataArray(values[None], dims=("env", "time", UNIT_DIM),
                                coords={"env": [0], UNIT_DIM: np.arange(every.size)},
                                attrs={"units": rate.attrs.get("units", "Hz")})
    dt = sample_interval(session)
    duration = session.sizes["time"] * dt
    fraction = shift_s / duration
    if fraction >= 0.5:
        raise AnalysisError(f"min_shift_s {shift_s:g} s must be under half the session's "
                            f"{duration:.6g} s")
    attrs = {k: session.attrs[k] for k in session.attrs
             if k not in (KIND_ATTR, CELLS_ATTR, ARENA_ATTR, ARENA_SHAPE_ATTR)}
    attrs = {f"session_{k}": v for k, v in attrs.items()}
    attrs.update(session_cells=session.attrs[CELLS_ATTR], spikes_in_tracking_gaps=gaps,
                 speed_filtered_fraction=float((node.values < 0).mean()))
    if ARENA_ATTR in session.attrs:
        attrs["session_arena"] = parse_arena(session.attrs[ARENA_ATTR], where="session")
    shape = session_arena_shape(session)
    attrs["session_arena_shape"] = shape
    return SessionInput(node=node, activity=activity, counts=counts,
                        min_shift_fraction=fraction, bounds=bounds, cell_id=ids,
                        bin_size_cm=bin_cm, smooth_cm=smooth_cm,
                        min_speed_cm_s=speed, min_shift_s=float(shift_s),
                        field_min_area=max(1, math.ceil(
                            SESSION_MIN_FIELD_AREA_CM2 / bin_cm**2 - 1e-9)),
                        attrs=attrs, arena_shape=shape)


def session_maps(session: xr.Dataset, sess: SessionInput, variables: Sequence[str],
                 chunk_units: int | None) -> dict[str, xr.Dataset]:
    """The rate maps of every population of a session
    (:func:`~hippo_rep.analysis.session_rate_maps`, from ``sess``'s sparse counts, or from its
    rates ``chunk_units`` cells at a time).

    Returns
    -------
    dict of str -> xarray.Dataset
        Per population: ``rate_map`` (env, unit, y, x) Hz, ``occupancy`` (env, y, x) s,
        ``node_rate`` (env, unit, world_node), ``node_occupancy``, ``node_map`` (y, x).
    """
    src = session
    opts = (sess.bin_size_cm, sess.smooth_cm, sess.min_speed_cm_s)
    bounds = zip(variables, sess.bounds[:-1], sess.bounds[1:], strict=True)
    if sess.counts is not None:
        return {v: session_rate_maps(src, v, *opts, node=sess.node, session_checked=True,
                                     counts=sess.counts.take(np.arange(lo, hi)))
                for v, lo, hi in bounds}
    maps = {}  # a session's rates: maps by chunks of cells (bounded temporaries)
    step = sess.activity.sizes[UNIT_DIM] if chunk_units is None else int(chunk_units)
    for v, lo, hi in bounds:
        parts = []
        for a in range(lo, hi, max(step, 1)):
            act = sess.activity.isel({UNIT_DIM: slice(a, min(a + step, hi))})
            act = act.assign_coords({UNIT_DIM: act[UNIT_DIM].values - lo})
            parts.append(session_rate_maps(src, v, *opts, act, sess.node, session_checked=True))
        maps[v] = (parts[0] if len(parts) == 1 else
                   xr.concat(parts, UNIT_DIM, data_vars="minimal", coords="minimal",
                             compat="override", join="override", combine_attrs="override"))
    return maps


def session_variables(out: xr.Dataset, sess: SessionInput, first: xr.Dataset) -> xr.Dataset:
    """``out``, a session's analysis, with what differs from a recording's: lengths in cm
    (``spacing_cm``, ``wave_length_cm``), each unit's ``cell_id`` and the attrs (``first``:
    the first population's maps)."""
    cm = first.attrs["bin_size_cm"]
    out["spacing_cm"] = out["spacing"] * cm
    out["spacing_cm"].attrs = {"long_name": "grid spacing in cm (spacing x bin size)",
                               "units": "cm"}
    out["wave_length_cm"] = out["wave_length"] * cm
    out["wave_length_cm"].attrs = {"long_name": "plane-wave length in cm (wave_length x bin "
                                   "size)", "units": "cm"}
    out = out.assign_coords({CELL_ID: (UNIT_DIM, sess.cell_id)})
    dt = float(first.attrs["sample_interval_s"])
    for k in ("memory_masking", "map_resolution"):
        out.attrs.pop(k, None)
    out.attrs.update(sess.attrs)
    out.attrs.update(
        input_kind=SESSION_KIND,
        map_convention="rate maps indexed [row=y, col=x], row 0 at the smallest y; x, y in "
                       "cm (bin centres); spacing, wave_length, field sizes in bins of "
                       "map_bin_size_cm (spacing_cm, wave_length_cm in cm); angles in degrees "
                       "from +x towards +y; unvisited bins NaN",
        map_bin_size_cm=float(first.attrs["bin_size_cm"]),
        smooth_cm=float(first.attrs["smooth_cm"]),
        smoothing="BNT: spike map and time map smoothed by the same Gaussian (sigma smooth_cm, "
                  "truncated at 4 sigma, zero outside the arena and in unvisited bins), then "
                  "divided; unvisited bins NaN",
        min_speed_cm_s=float(first.attrs["min_speed_cm_s"]),
        sample_interval_s=dt,
        min_field_area_bins=sess.field_min_area,
        min_shift_s=sess.min_shift_s,
        per_node_scores="spatial_info, sparsity, selectivity use the per-bin rate weighted by "
                        "the occupancy in seconds (Skaggs; bits per spike for rates in Hz)",
        null_method="circular time shift of each cell's spike train (its spikes per tracking "
                    "sample) against the trajectory, by whole tracking samples, at least "
                    "min_shift_s; the same shifts for every cell; scores gridness_60, "
                    "plane_wave_share, spatial_info and border_score",
    )
    if first["rate_map"].attrs.get("units") == "Hz":  # spikes per second
        for k in ("spatial_info", "spatial_info_null_q"):
            out[k].attrs["units"] = "bits per spike"
    out["rate_map"].attrs.update(long_name="spikes per second in the bin (NaN = unvisited)",
                                 units=first["rate_map"].attrs.get("units", "Hz"))
    out["shuffle_shift"].attrs = {"long_name": "circular shift of the spike trains per "
                                  "shuffle (tracking samples of sample_interval_s)",
                                  "units": "samples"}
    return out
