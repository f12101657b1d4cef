"""Sessions: your own cells recorded in a continuous arena, as a data kind the analysis reads.

A *session* is an :class:`xarray.Dataset` (attr ``hippo_rep_kind = "session"``) of one
animal's tracking and cells:

- ``x(time)``, ``y(time)``: tracked positions, in the length unit of the attr ``length_unit``
  (``"cm"`` or ``"m"``, also each variable's ``units``); NaN = tracking lost at that sample
  (dropped from occupancy and maps, never an error).
- coord ``time(time)``: the tracking samples' times in seconds, strictly increasing.
- cells, along the dim ``cell``, each of a named population (coord ``cell_population``, e.g.
  ``"grid"``, ``"cells"``; the model populations ``g``, ``g_pi``, ``memory_activity``,
  ``fam_activity``, ``p`` are reserved) with an id (coord ``cell_id``, str), held either as
  spike times (attr ``cells = "spikes"``: ``spike_times(spike)`` in seconds, all cells
  concatenated in cell order, and ``n_spikes(cell)``; each cell's times sorted, no
  duplicates, inside the tracking clock) or as rates per tracking sample (attr
  ``cells = "rates"``: ``rate(time, cell)``, NaN = missing sample for that cell).
- optional attr ``arena = [x_min, x_max, y_min, y_max]`` (length unit): every finite
  position must lie inside it, and the rate maps span it (default: the positions' extent).
- optional attr ``arena_shape``: ``"rectangle"`` (the default: the arena is that box) or
  ``"circle"`` (a circular arena: the disc inscribed in ``arena``, which must then be a
  square; every finite position must lie in the disc).

The *tracking clock* is ``[t_0 - dt / 2, t_end + dt / 2]`` with ``dt`` the median interval
between tracking samples (:func:`sample_interval`); a spike counts in the sample whose
``[t_i - dt / 2, t_i + dt / 2)`` holds it (spikes in tracking gaps longer than ``dt`` count in
no sample). Build sessions with :func:`session_from_spikes` / :func:`session_from_rates`
(from numpy, xarray or pynapple objects), check them with :func:`validate_session`, store
them with :func:`write_session` / :func:`open_session` (netCDF) or read NWB files with
:func:`hippo_rep.analysis.nwb.read_nwb`.

Maps (:func:`session_rate_maps`, which :func:`~hippo_rep.analysis.analyse` uses): lengths
are converted to cm; samples slower than :data:`~hippo_rep.defaults.SESSION_MIN_SPEED_CM_S`
are dropped (speed from central differences of the unsmoothed positions,
:func:`session_speed`); positions are binned in square bins of
:data:`~hippo_rep.defaults.SESSION_BIN_SIZE_CM` from the arena's lower corner; each bin is a
"node" of the graph-world analysis (one bin per node), so the rate of a bin is its spikes
divided by its occupancy in seconds. Smoothing follows BNT (``analyses.map``): the spike map
and the time map are smoothed by the same Gaussian (σ
:data:`~hippo_rep.defaults.SESSION_SMOOTH_CM`, truncated at 4 σ, zero outside the arena and
in unvisited bins) and divided, and unvisited bins stay NaN. The shuffle nulls shift each
cell's spike train circularly by at least :data:`~hippo_rep.defaults.SESSION_MIN_SHIFT_S`.

A circular arena's maps span its bounding square; a bin belongs to the disc when its centre
lies in the disc (opexebo's ``circular_mask``, BNT's convention), and the bins outside it are
not part of the arena: their samples (within ~0.7 bin of the wall) are dropped like tracking
loss, so those bins are NaN in every map, real or shuffled, and count in no score (they are
never "unvisited bins of zero occupancy" inside the arena). The border score is not defined
there (:func:`~hippo_rep.analysis.border_score` with ``arena_shape="circle"``: NaN).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep.datasets import load_checked, missing_reader
from hippo_rep.defaults import SESSION_BIN_SIZE_CM, SESSION_MIN_SPEED_CM_S, SESSION_SMOOTH_CM
from hippo_rep.fileio import atomic_write, quote
from hippo_rep.schema import KIND_ATTR, POPULATIONS, AnalysisError

from ._checks import check_positive_number
from .arena import CIRCLE, RECTANGLE, check_arena_shape, disc_of_box, in_disc
from .ratemaps import node_maps_dataset
from .recordings import NODE_DIM, UNIT_DIM, node_rate_maps, smoothed_node_maps
from .sample_counts import SampleCounts, concat_counts, sample_counts

#: The kind attr (``hippo_rep_kind``) of a session.
SESSION_KIND = "session"
#: Dims of a session: tracking samples, cells, spikes (all cells' spike times, concatenated).
TIME, CELL, SPIKE = "time", "cell", "spike"
#: Variables and coords of a session.
X, Y, SPIKE_TIMES, N_SPIKES, RATE = "x", "y", "spike_times", "n_spikes", "rate"
CELL_POPULATION, CELL_ID = "cell_population", "cell_id"
#: Attrs of a session: the length unit of x, y and arena; "spikes" or "rates"; the arena.
LENGTH_UNIT_ATTR, CELLS_ATTR, ARENA_ATTR = "length_unit", "cells", "arena"
#: Attr of a session: the arena's shape, one of
#: :data:`~hippo_rep.analysis.arena.ARENA_SHAPES` (absent: a rectangle).
ARENA_SHAPE_ATTR = "arena_shape"
#: Accepted length units and their size in cm.
LENGTH_UNITS: dict[str, float] = {"cm": 1.0, "m": 100.0}
#: How a session holds its cells (attr ``cells``).
CELL_KINDS = ("spikes", "rates")
#: Population of cells given without a name.
DEFAULT_POPULATION = "cells"
#: Names a session population may not take: the model recordings' populations.
RESERVED_POPULATIONS: tuple[str, ...] = POPULATIONS

#: Smallest place field of a session map, cm²: BNT's 9 bins of 2.5 cm.
SESSION_MIN_FIELD_AREA_CM2 = 56.25
#: Positions may lie outside the arena by this fraction of its size (rounding at the walls).
ARENA_RTOL = 1e-6
#: Fewest bins a side of a session's maps: a bin size of the arena's size or more (or an
#: arena of zero width) leaves nothing to map.
SESSION_MIN_BINS = 2


class SessionError(AnalysisError):
    """A session (or its file) that is malformed; the message names the field at fault."""


# --------------------------------------------------------------------------------------------
# building
# --------------------------------------------------------------------------------------------


def _not_increasing(values: np.ndarray) -> tuple[int, str] | None:
    """The first index i where ``values[i + 1] <= values[i]`` and whether it is a
    "duplicate" or "unsorted" value; None when the values strictly increase."""
    step = np.diff(values)
    if not (step <= 0).any():
        return None
    i = int(np.argmax(step <= 0))
    return i, "duplicate" if step[i] == 0 else "unsorted"


def _vector(value, name: str) -> np.ndarray:
    """A 1-D float64 array from numpy / xarray / pandas / pynapple (its values)."""
    if hasattr(value, "values") and not isinstance(value, np.ndarray):
        value = value.values
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise SessionError(f"{name} must be numbers; got {type(value).__name__}") from None
    if arr.ndim != 1:
        raise SessionError(f"{name} must be 1-D (one value per sample); got shape {arr.shape}")
    return arr


def _times_of(value, name: str) -> np.ndarray:
    """Spike times of one cell: a pynapple Ts/Tsd (its ``t``) or a 1-D array, seconds."""
    if hasattr(value, "t") and not isinstance(value, np.ndarray):
        value = value.t
    return _vector(value, name)


def _populations(cells, kind: str) -> dict[str, object]:
    """``{population name: that population's cells}`` from a dict or one population."""
    if isinstance(cells, Mapping) and not _is_tsgroup(cells):
        if not cells:
            raise SessionError(f"{kind} names no population")
        return {str(k): v for k, v in cells.items()}
    return {DEFAULT_POPULATION: cells}


def _is_tsgroup(value) -> bool:
    return type(value).__name__ == "TsGroup"


def _spike_cells(cells, pop: str) -> tuple[list[str], list[np.ndarray]]:
    """Cell ids and spike-time arrays of one population."""
    if _is_tsgroup(cells):
        ids = list(cells.keys())
        return [str(i) for i in ids], [_times_of(cells[i], f"spikes of {pop!r} cell {i}")
                                       for i in ids]
    if isinstance(cells, np.ndarray) and cells.dtype != object:
        raise SessionError(f"spikes of population {pop!r} must be a list of per-cell spike-time "
                           f"arrays or a pynapple TsGroup; got one array of shape {cells.shape}")
    try:
        items = list(cells)
    except TypeError:
        raise SessionError(f"spikes of population {pop!r} must be a list of per-cell spike-time "
                           f"arrays or a pynapple TsGroup; got {type(cells).__name__}") from None
    return ([str(i) for i in range(len(items))],
            [_times_of(c, f"spikes of {pop!r} cell {i}") for i, c in enumerate(items)])


def _rate_cells(rates, pop: str, n_time: int) -> tuple[list[str], np.ndarray]:
    """Cell ids and the (time, cell) rates of one population."""
    ids = None
    if isinstance(rates, xr.DataArray):
        if TIME in rates.dims and rates.ndim == 2:
            rates = rates.transpose(TIME, ...)
            other = rates.dims[1]
            if other in rates.coords:
                ids = [str(v) for v in rates[other].values]
        values = rates.values
    elif hasattr(rates, "columns") and hasattr(rates, "values"):  # pynapple TsdFrame, pandas
        ids = [str(c) for c in rates.columns]
        values = rates.values
    else:
        values = rates
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise SessionError(f"rates of population {pop!r} must be numbers") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise SessionError(f"rates of population {pop!r} must be (time, cell); got shape "
                           f"{arr.shape}")
    if arr.shape[0] != n_time:
        raise SessionError(f"rates of population {pop!r} have {arr.shape[0]} samples but the "
                           f"positions have {n_time}")
    return ids or [str(i) for i in range(arr.shape[1])], arr


def parse_arena(value, what: str = f"attr {ARENA_ATTR}", where: str = "") -> np.ndarray:
    """An arena as 4 float64 ``[x_min, x_max, y_min, y_max]``: the one reader of the
    ``arena`` argument and attr (sessions, their files, NWB, the analysis).

    Parameters
    ----------
    value : sequence of 4 numbers
        The arena, in the session's length unit.
    what : str
        What it is, for the error ("attr arena", "arena").
    where : str
        The session or file it comes from, for the error ("" for an argument).

    Raises
    ------
    SessionError
        One line naming ``what`` and ``where``: not 4 numbers, not finite, or max <= min.
    """
    try:
        box = np.asarray(value, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        box = None
    if box is None or box.size != 4 or not np.isfinite(box).all() or box[1] <= box[0] \
            or box[3] <= box[2]:
        prefix = f"{where}: " if where else ""
        raise SessionError(f"{prefix}{what} must be 4 numbers (x_min, x_max, y_min, y_max), "
                           f"finite, with max > min; got {quote(value)}")
    return box


def session_arena_shape(session: xr.Dataset) -> str:
    """The arena shape of a session: its attr ``arena_shape``, else ``"rectangle"``."""
    return check_arena_shape(session.attrs.get(ARENA_SHAPE_ATTR, RECTANGLE),
                             f"attr {ARENA_SHAPE_ATTR}")


def _base(x, y, times, length_unit, arena, attrs, arena_shape=RECTANGLE) -> xr.Dataset:
    if times is None and hasattr(x, "t") and not isinstance(x, np.ndarray):
        times = x.t  # a pynapple Tsd of positions
    if times is None:
        raise SessionError("times (s) of the tracking samples are missing")
    xv, yv, tv = _vector(x, "x"), _vector(y, "y"), _vector(times, "times")
    if not (xv.size == yv.size == tv.size):
        raise SessionError(f"x, y and times must have one value per tracking sample; got "
                           f"{xv.size}, {yv.size} and {tv.size}")
    if length_unit not in LENGTH_UNITS:
        raise SessionError(f"length_unit must be one of {tuple(LENGTH_UNITS)}; got "
                           f"{quote(length_unit)}")
    out_attrs = {KIND_ATTR: SESSION_KIND, LENGTH_UNIT_ATTR: length_unit}
    if arena is not None:
        out_attrs[ARENA_ATTR] = parse_arena(arena, "arena")
    try:
        arena_shape = check_arena_shape(arena_shape, "arena_shape")
    except ValueError as err:
        raise SessionError(str(err)) from None
    if arena_shape != RECTANGLE:
        if arena is None:
            raise SessionError(f"arena_shape {arena_shape!r} needs the arena (x_min, x_max, "
                               "y_min, y_max): the square around the disc")
        out_attrs[ARENA_SHAPE_ATTR] = arena_shape
    out_attrs.update(attrs or {})
    pos = {"units": length_unit}
    return xr.Dataset(
        {X: (TIME, xv, {**pos, "long_name": "tracked x position (NaN = tracking lost)"}),
         Y: (TIME, yv, {**pos, "long_name": "tracked y position (NaN = tracking lost)"})},
        coords={TIME: (TIME, tv, {"units": "s", "long_name": "time of the tracking sample"})},
        attrs=out_attrs,
    )


def _cell_coords(pops: list[str], ids: list[str]) -> dict:
    return {CELL: (CELL, np.arange(len(ids), dtype=np.int64), {"long_name": "cell index"}),
            CELL_POPULATION: (CELL, np.array(pops, dtype=str),
                              {"long_name": "population of the cell"}),
            CELL_ID: (CELL, np.array(ids, dtype=str), {"long_name": "the cell's id in its "
                                                       "source (unit id, key or position)"})}


def session_from_spikes(x, y, times, spikes, *, length_unit: str = "cm", arena=None,
                        arena_shape: str = RECTANGLE,
                        attrs: Mapping | None = None) -> xr.Dataset:
    """A session of cells given as spike times.

    Parameters
    ----------
    x, y : array-like, (time,)
        Tracked positions in ``length_unit`` (numpy, xarray, pandas or pynapple Tsd); NaN =
        tracking lost.
    times : array-like, (time,), or None
        Times of the tracking samples, seconds, strictly increasing (None: ``x.t`` of a
        pynapple Tsd).
    spikes : list of arrays, pynapple TsGroup, or dict of them
        Per-cell spike times in seconds (arrays or pynapple Ts), one population
        (:data:`DEFAULT_POPULATION`), or ``{population name: cells}``.
    length_unit : {"cm", "m"}
        Unit of ``x``, ``y`` and ``arena``.
    arena : (x_min, x_max, y_min, y_max), optional
        The arena; every finite position must lie inside it.
    arena_shape : {"rectangle", "circle"}
        ``"circle"``: the arena is the disc inscribed in ``arena`` (then a square, and
        needed); every finite position must lie in the disc (module doc).
    attrs : mapping, optional
        Extra attrs (provenance: source file, animal, ...).

    Returns
    -------
    xarray.Dataset
        The session (see the module doc), checked by :func:`validate_session`.

    Raises
    ------
    SessionError
        Naming the field at fault: x, y and times of different lengths, unsorted or
        duplicate times, positions outside the arena, a reserved population name, unsorted or
        duplicate spike times, spike times outside the tracking clock.
    """
    ds = _base(x, y, times, length_unit, arena, attrs, arena_shape)
    pops, ids, trains = [], [], []
    for pop, cells in _populations(spikes, "spikes").items():
        cid, tr = _spike_cells(cells, pop)
        pops += [pop] * len(cid)
        ids += cid
        trains += tr
    ds = ds.assign_coords(_cell_coords(pops, ids))
    ds[SPIKE_TIMES] = (SPIKE, np.concatenate(trains) if trains else np.zeros(0),
                       {"units": "s", "long_name": "spike times of every cell, concatenated "
                        "in cell order (n_spikes per cell)"})
    ds[N_SPIKES] = (CELL, np.array([t.size for t in trains], dtype=np.int64),
                    {"units": "1", "long_name": "spikes of the cell"})
    ds.attrs[CELLS_ATTR] = "spikes"
    validate_session(ds)
    return ds


def session_from_rates(x, y, times, rates, *, length_unit: str = "cm", arena=None,
                       arena_shape: str = RECTANGLE, units: str = "Hz",
                       attrs: Mapping | None = None) -> xr.Dataset:
    """A session of cells given as rates per tracking sample.

    Parameters
    ----------
    x, y, times, length_unit, arena, arena_shape, attrs
        As in :func:`session_from_spikes`.
    rates : array-like (time, cell), xarray.DataArray, pynapple TsdFrame, or dict of them
        One population (:data:`DEFAULT_POPULATION`) or ``{population name: rates}``; a 1-D
        array is one cell; NaN = missing sample for that cell. Cell ids: a DataArray's coord
        of its non-time dim or a frame's columns, else positions.
    units : str
        Unit of the rates (default "Hz").

    Returns
    -------
    xarray.Dataset
        The session, checked by :func:`validate_session`.

    Raises
    ------
    SessionError
        As :func:`session_from_spikes`, and rates whose length differs from the positions'.
    """
    ds = _base(x, y, times, length_unit, arena, attrs, arena_shape)
    n = ds.sizes[TIME]
    pops, ids, blocks = [], [], []
    for pop, r in _populations(rates, "rates").items():
        cid, arr = _rate_cells(r, pop, n)
        pops += [pop] * len(cid)
        ids += cid
        blocks.append(arr)
    ds = ds.assign_coords(_cell_coords(pops, ids))
    ds[RATE] = ((TIME, CELL), np.concatenate(blocks, axis=1),
                {"units": units, "long_name": "rate of the cell per tracking sample"})
    ds.attrs[CELLS_ATTR] = "rates"
    validate_session(ds)
    return ds


# --------------------------------------------------------------------------------------------
# checking
# --------------------------------------------------------------------------------------------


def is_session(ds: object) -> bool:
    """Whether ``ds`` is a Dataset whose kind attr says session."""
    return isinstance(ds, xr.Dataset) and ds.attrs.get(KIND_ATTR) == SESSION_KIND


def sample_interval(session: xr.Dataset) -> float:
    """The median interval between tracking samples, seconds (the samples' duration)."""
    return float(np.median(np.diff(np.asarray(session[TIME].values, dtype=np.float64))))


def tracking_clock(times) -> tuple[float, float]:
    """``(t_0 - dt / 2, t_end + dt / 2)``, seconds, of a session or of its tracking times
    (``dt`` their median interval): when its spikes may occur (the end excluded)."""
    t = np.asarray(times[TIME].values if isinstance(times, xr.Dataset) else times,
                   dtype=np.float64)
    half = float(np.median(np.diff(t))) / 2
    return float(t[0] - half), float(t[-1] + half)


def _need(ds: xr.Dataset, name: str, dims: tuple[str, ...], where: str) -> np.ndarray:
    if name not in ds.variables:
        raise SessionError(f"{where} has no {name!r} {dims}")
    if tuple(ds[name].dims) != dims:
        raise SessionError(f"{where}: {name!r} must have dims {dims}; got {ds[name].dims}")
    return np.asarray(ds[name].values)


def _float(a: np.ndarray, name: str, where: str) -> np.ndarray:
    if a.dtype.kind not in "fiu":
        raise SessionError(f"{where}: {name!r} must be numbers; got dtype {a.dtype}")
    return a.astype(np.float64)


def validate_session(ds: object, source=None) -> xr.Dataset:
    """Check a session (see the module doc); returns it unchanged.

    Raises
    ------
    SessionError
        One line naming the first problem (and ``source``, the file, when given).
    """
    where = "session" if source is None else f"session {str(source)!r}"
    if not isinstance(ds, xr.Dataset):
        raise SessionError(f"a session must be an xarray.Dataset; got {type(ds).__name__}")
    if ds.attrs.get(KIND_ATTR) != SESSION_KIND:
        raise SessionError(f"{where} is not a hippo_rep session (attr {KIND_ATTR} is "
                           f"{quote(ds.attrs.get(KIND_ATTR))}, expected {SESSION_KIND!r})")
    unit = ds.attrs.get(LENGTH_UNIT_ATTR)
    if unit not in LENGTH_UNITS:
        raise SessionError(f"{where}: attr {LENGTH_UNIT_ATTR} is {quote(unit)}; expected one of "
                           f"{tuple(LENGTH_UNITS)}")
    t = _float(_need(ds, TIME, (TIME,), where), "time", where)
    if t.size < 2:
        raise SessionError(f"{where}: times hold {t.size} tracking sample(s); at least 2 needed")
    if not np.isfinite(t).all():
        raise SessionError(f"{where}: times (s) of the tracking samples must be finite")
    bad = _not_increasing(t)
    if bad is not None:
        i, what = bad
        raise SessionError(f"{where}: times must be strictly increasing; {what} at tracking "
                           f"sample {i + 1} ({t[i]:.6g} s, then {t[i + 1]:.6g} s)")
    pos = {}
    for name in (X, Y):
        v = _float(_need(ds, name, (TIME,), where), name, where)
        if np.isinf(v).any():
            raise SessionError(f"{where}: {name} holds infinite positions (use NaN for "
                               "tracking loss)")
        pos[name] = v
    if not (np.isfinite(pos[X]) & np.isfinite(pos[Y])).any():
        raise SessionError(f"{where}: x and y hold no finite position")
    if ARENA_ATTR in ds.attrs:
        _check_arena(ds.attrs[ARENA_ATTR], pos, unit, where)
    try:
        shape = session_arena_shape(ds)
    except ValueError as err:
        raise SessionError(f"{where}: {err}") from None
    if shape == CIRCLE:
        if ARENA_ATTR not in ds.attrs:
            raise SessionError(f"{where}: attr {ARENA_SHAPE_ATTR} is 'circle' without the attr "
                               f"{ARENA_ATTR} (the square around the disc)")
        _check_disc(ds.attrs[ARENA_ATTR], pos, unit, where)
    kind = ds.attrs.get(CELLS_ATTR)
    if kind not in CELL_KINDS:
        raise SessionError(f"{where}: attr {CELLS_ATTR} is {quote(kind)}; expected 'spikes' or "
                           "'rates'")
    pops = _need(ds, CELL_POPULATION, (CELL,), where).astype(str)
    _need(ds, CELL_ID, (CELL,), where)
    if pops.size == 0:
        raise SessionError(f"{where} holds no cell")
    for name in dict.fromkeys(pops.tolist()):
        if not name.strip():
            raise SessionError(f"{where}: a population name is empty")
        if name in RESERVED_POPULATIONS:
            raise SessionError(f"{where}: population name {name!r} is reserved for model "
                               f"recordings ({', '.join(RESERVED_POPULATIONS)}); rename it")
    if kind == "rates":
        r = _float(_need(ds, RATE, (TIME, CELL), where), RATE, where)
        if np.isinf(r).any():
            raise SessionError(f"{where}: rate holds infinite values (use NaN for missing)")
    else:
        _check_spikes(ds, t, pops, where)
    return ds


def _check_arena(arena, pos: dict, unit: str, where: str) -> None:
    box = parse_arena(arena, where=where)
    for name, (lo, hi) in ((X, box[:2]), (Y, box[2:])):
        tol = ARENA_RTOL * (hi - lo)
        v = pos[name]
        with np.errstate(invalid="ignore"):
            out = np.isfinite(v) & ((v < lo - tol) | (v > hi + tol))
        if out.any():
            i = int(np.argmax(out))
            raise SessionError(f"{where}: {name} has {int(out.sum())} position(s) outside the "
                               f"arena [{lo:g}, {hi:g}] {unit} (first at tracking sample {i}: "
                               f"{v[i]:.6g})")


def _check_disc(arena, pos: dict, unit: str, where: str) -> None:
    box = parse_arena(arena, where=where)
    try:
        cx, cy, r = disc_of_box(box, ARENA_RTOL)
    except ValueError as err:
        raise SessionError(f"{where}: attr {ARENA_ATTR} of a circular arena: {err}") from None
    x, y = pos[X], pos[Y]
    with np.errstate(invalid="ignore"):
        out = np.isfinite(x) & np.isfinite(y) & ~in_disc(x, y, cx, cy, r * (1 + ARENA_RTOL))
    if out.any():
        i = int(np.argmax(out))
        raise SessionError(f"{where}: x, y have {int(out.sum())} position(s) outside the "
                           f"circular arena (centre ({cx:g}, {cy:g}), radius {r:g} {unit}; first "
                           f"at tracking sample {i}: ({x[i]:.6g}, {y[i]:.6g}))")


def _check_spikes(ds: xr.Dataset, t: np.ndarray, pops: np.ndarray, where: str) -> None:
    spikes = _float(_need(ds, SPIKE_TIMES, (SPIKE,), where), SPIKE_TIMES, where)
    counts = _need(ds, N_SPIKES, (CELL,), where)
    if counts.dtype.kind not in "iu" or (counts < 0).any() or counts.sum() != spikes.size:
        raise SessionError(f"{where}: {N_SPIKES} must be non-negative integers summing to the "
                           f"{spikes.size} spike times")
    if not np.isfinite(spikes).all():
        raise SessionError(f"{where}: {SPIKE_TIMES} must be finite")
    lo, hi = tracking_clock(t)
    ids = np.asarray(ds[CELL_ID].values).astype(str)
    ends = np.cumsum(counts)
    for c, (start, end) in enumerate(zip(ends - counts, ends, strict=True)):
        s = spikes[start:end]
        name = f"cell {c} (population {pops[c]!r}, id {ids[c]!r})"
        bad = _not_increasing(s)
        if bad is not None:
            i, what = bad
            what = f"an {what}" if what == "unsorted" else f"a {what}"
            raise SessionError(f"{where}: spike times of {name} hold {what} time at spike "
                               f"{i + 1} ({s[i]:.6g} s, then {s[i + 1]:.6g} s)")
        if s.size and (s[0] < lo or s[-1] >= hi):
            bad = s[(s < lo) | (s >= hi)]
            raise SessionError(f"{where}: spike times of {name} lie outside the tracking clock "
                               f"[{lo:.6g}, {hi:.6g}) s ({bad.size} spike(s), first at "
                               f"{bad[0]:.6g} s)")


# --------------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------------


def write_session(session: xr.Dataset, path: str | os.PathLike, overwrite: bool = False
                  ) -> Path:
    """Write a session to netCDF (``.nc``, h5netcdf) atomically; returns the path.

    Raises
    ------
    SessionError
        For an invalid session or a path not ending in ``.nc``.
    FileExistsError
        If ``path`` exists and ``overwrite`` is False.
    """
    validate_session(session)
    path = Path(path)
    if path.suffix.lower() != ".nc":
        raise SessionError(f"session file {str(path)!r} must end in .nc")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{str(path)!r} exists; pass overwrite=True to replace it")
    data = session.copy()
    data.attrs = {k: (np.asarray(v) if isinstance(v, (list, tuple)) else v)
                  for k, v in data.attrs.items()}
    atomic_write(path, lambda tmp: data.to_netcdf(tmp, engine="h5netcdf"))
    return path


def _open_nc(path: Path) -> xr.Dataset:
    """``path`` opened lazily with h5netcdf; an unreadable file is a one-line SessionError."""
    try:
        return xr.open_dataset(path, engine="h5netcdf")
    except ImportError as err:
        raise SessionError(missing_reader(path, err)) from None
    except Exception as err:  # h5py raises many types for damaged files
        raise SessionError(f"session {str(path)!r} is not a readable netCDF file "
                           f"({type(err).__name__})") from None


def load_session(opened: xr.Dataset, path: str | os.PathLike) -> xr.Dataset:
    """An opened session file read into memory through :func:`~hippo_rep.datasets.load_checked`
    (a damaged variable is named with the file), closed, its string coords as ``str``, checked
    by :func:`validate_session` (naming the file): the second half of :func:`open_session`,
    for a caller that has opened the file already (to look at its kind attr).

    Raises
    ------
    SessionError
        Naming the file: a damaged variable, or not a valid session.
    """
    path = Path(path)
    try:
        ds = load_checked(opened, path, SessionError, "session")
    finally:
        opened.close()
    for k in (CELL_POPULATION, CELL_ID):
        if k in ds.variables and ds[k].dtype.kind in "OT":
            ds[k] = ds[k].copy(data=np.array(ds[k].values.tolist(), dtype=str))
    return validate_session(ds, path)


def open_session(path: str | os.PathLike) -> xr.Dataset:
    """Read a session written by :func:`write_session` (into memory) and check it.

    Raises
    ------
    FileNotFoundError
        A missing path.
    SessionError
        Naming the file: unreadable or damaged (naming the variable), or not a valid session.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"session {str(path)!r} not found")
    return load_session(_open_nc(path), path)


# --------------------------------------------------------------------------------------------
# activity and maps
# --------------------------------------------------------------------------------------------


def session_populations(session: xr.Dataset) -> list[str]:
    """The session's population names, in order of first appearance."""
    return list(dict.fromkeys(np.asarray(session[CELL_POPULATION].values).astype(str).tolist()))


def positions_cm(session: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of the tracking samples in cm (NaN = tracking lost)."""
    f = LENGTH_UNITS[session.attrs[LENGTH_UNIT_ATTR]]
    return (np.asarray(session[X].values, dtype=np.float64) * f,
            np.asarray(session[Y].values, dtype=np.float64) * f)


def session_speed(session: xr.Dataset) -> xr.DataArray:
    """Running speed per tracking sample, cm/s: the norm of the central differences of the
    (unsmoothed) positions over time (one-sided at the ends); NaN next to tracking loss."""
    x, y = positions_cm(session)
    t = np.asarray(session[TIME].values, dtype=np.float64)
    speed = np.hypot(np.gradient(x, t), np.gradient(y, t))
    return xr.DataArray(speed, dims=(TIME,), coords={TIME: session[TIME]}, name="speed",
                        attrs={"units": "cm/s", "long_name": "running speed"})


#: Spikes turned into sample counts at once (cells taken in groups up to about this many
#: spikes): bounds the ~10 temporary int64 arrays per spike to ~80 MB however long the session.
COUNT_BLOCK_SPIKES = 2**20


def spike_sample_counts(session: xr.Dataset, cells: np.ndarray) -> tuple[SampleCounts, int]:
    """Spikes per tracking sample of some cells of a checked session of spikes, held sparsely.

    A spike counts in the sample whose ``[t_i - dt/2, t_i + dt/2)`` holds it, none if it falls
    in a tracking gap. Cells are taken in groups of about :data:`COUNT_BLOCK_SPIKES` spikes.

    Parameters
    ----------
    session : xarray.Dataset
        A checked session whose cells are spike trains.
    cells : numpy.ndarray of int, shape (n,)
        Positions of the cells along ``cell`` (:func:`population_cells`).

    Returns
    -------
    (SampleCounts, int)
        The counts (:class:`~hippo_rep.analysis.sample_counts.SampleCounts`: n units x the
        session's samples; Hz = count / sample interval) and the number of spikes counted
        nowhere (in tracking gaps).
    """
    t = np.asarray(session[TIME].values, dtype=np.float64)
    dt = sample_interval(session)
    ends_of_sample = t + dt / 2
    counts = np.asarray(session[N_SPIKES].values)
    starts = np.cumsum(counts) - counts
    spikes = np.asarray(session[SPIKE_TIMES].values, dtype=np.float64)
    cells = np.asarray(cells, dtype=np.int64)
    # group boundaries: cumulative spikes of the selected cells cross multiples of the block
    total = np.cumsum(counts[cells])
    cuts = np.searchsorted(total, np.arange(COUNT_BLOCK_SPIKES, total[-1] if total.size else 0,
                                            COUNT_BLOCK_SPIKES), side="right")
    parts, gaps = [], 0
    for group in np.split(cells, np.unique(cuts)):
        idx = np.concatenate([np.arange(starts[c], starts[c] + counts[c]) for c in group]
                             ) if group.size else np.zeros(0, dtype=np.int64)
        col = np.repeat(np.arange(group.size), counts[group])
        s = spikes[idx]
        i = np.searchsorted(ends_of_sample, s, side="right")  # first sample ending after s
        ok = i < t.size
        i = np.minimum(i, t.size - 1)
        ok &= s >= t[i] - dt / 2
        gaps += int((~ok).sum())
        parts.append(sample_counts(i[ok], col[ok], group.size, t.size, dt))
    return concat_counts(parts, t.size, dt), gaps


def population_cells(session: xr.Dataset, population: str | None) -> np.ndarray:
    """Positions of a population's cells along a checked session's ``cell`` dim.

    Parameters
    ----------
    session : xarray.Dataset
        A checked session (:func:`validate_session`).
    population : str or None
        A population of the session; None: every cell.

    Returns
    -------
    numpy.ndarray of int64, shape (n_cells,)
        Indices into the session's cells, increasing.

    Raises
    ------
    SessionError
        If the session has no such population.
    """
    pops = np.asarray(session[CELL_POPULATION].values).astype(str)
    if population is None:
        return np.arange(pops.size)
    if population not in pops:
        raise SessionError(f"the session has no population {population!r} (populations: "
                           f"{', '.join(session_populations(session))})")
    return np.flatnonzero(pops == population)


def session_activity(session: xr.Dataset, population: str) -> xr.DataArray:
    """Rate per tracking sample of one population of a checked session, ``(env, time,
    unit)`` float64 with one ``env``: spikes per sample / :func:`sample_interval` (Hz) or the
    session's rates; coord ``unit`` = index within the population, ``cell_id`` the cells'
    ids. Dense: the analysis itself keeps a session's spikes sparse
    (:func:`session_rate_maps` without ``activity``)."""
    cells = population_cells(session, population)
    if session.attrs[CELLS_ATTR] == "spikes":
        counts, gaps = spike_sample_counts(session, cells)
        values, units = counts.dense(), "Hz"
    else:
        values = np.asarray(session[RATE].values, dtype=np.float64)[:, cells]
        units, gaps = session[RATE].attrs.get("units", "Hz"), 0
    return xr.DataArray(
        values[None], dims=("env", TIME, UNIT_DIM),
        coords={"env": [0], UNIT_DIM: np.arange(cells.size),
                CELL_ID: (UNIT_DIM, np.asarray(session[CELL_ID].values).astype(str)[cells])},
        name=population, attrs={"variable": population, "units": units,
                                "spikes_in_gaps": gaps})


def session_grid(session: xr.Dataset, bin_size_cm: float = SESSION_BIN_SIZE_CM
                 ) -> dict[str, np.ndarray | float]:
    """The square bins of a session's maps: ``x_edges``, ``y_edges`` (cm) starting at the
    arena's lower corner (default: the positions' extent), ``bin_size_cm``; the last bin of an
    axis may reach past the arena when its size is not a multiple of the bin size;
    ``arena_shape``; for a circular arena also ``disc_cm`` (centre x, y and radius, cm) and
    ``in_arena`` (ny, nx) bool: the bins whose centre lies in the disc.

    Raises
    ------
    SessionError
        A bin grid of fewer than :data:`SESSION_MIN_BINS` bins on a side (``bin_size_cm`` as
        large as the arena, or an arena of zero width), naming ``bin_size_cm`` and the arena.
    """
    bin_size_cm = check_positive_number(bin_size_cm, "bin_size_cm")
    f = LENGTH_UNITS[session.attrs[LENGTH_UNIT_ATTR]]
    if ARENA_ATTR in session.attrs:
        box = parse_arena(session.attrs[ARENA_ATTR], where="session") * f
        what = "the arena"
    else:
        x, y = positions_cm(session)
        box = np.array([np.nanmin(x), np.nanmax(x), np.nanmin(y), np.nanmax(y)])
        what = "the positions' extent (no arena attr)"
    n = [math.ceil((hi - lo) / bin_size_cm - 1e-9) for lo, hi in (box[:2], box[2:])]
    if min(n) < SESSION_MIN_BINS:
        raise SessionError(
            f"bin_size_cm {bin_size_cm:g} gives {max(n[0], 0)} x {max(n[1], 0)} bins on "
            f"{what}, x [{box[0]:g}, {box[1]:g}] y [{box[2]:g}, {box[3]:g}] cm; at least "
            f"{SESSION_MIN_BINS} bins a side are needed (a smaller bin_size_cm)")
    edges = [lo + bin_size_cm * np.arange(k + 1) for lo, k in zip(box[::2], n, strict=True)]
    grid = {"x_edges": edges[0], "y_edges": edges[1], "bin_size_cm": float(bin_size_cm),
            "arena_shape": RECTANGLE}
    if session_arena_shape(session) == CIRCLE:  # validate_session: the arena is a square
        cx, cy, r = disc_of_box(box, ARENA_RTOL)
        xc, yc = (edges[0][:-1] + edges[0][1:]) / 2, (edges[1][:-1] + edges[1][1:]) / 2
        grid.update(arena_shape=CIRCLE, disc_cm=np.array([cx, cy, r]),
                    in_arena=in_disc(xc[None, :], yc[:, None], cx, cy, r))
    return grid


def session_node(session: xr.Dataset, bin_size_cm: float = SESSION_BIN_SIZE_CM,
                 min_speed_cm_s: float = SESSION_MIN_SPEED_CM_S) -> xr.DataArray:
    """The bin of every tracking sample, ``(env, time)`` int64 (flat index ``iy * n_x +
    ix``), -1 where the sample is dropped: position NaN (tracking lost), speed below
    ``min_speed_cm_s`` (or NaN next to tracking loss, when ``min_speed_cm_s`` > 0), or, in a
    circular arena, a bin whose centre lies outside the disc (:func:`session_grid`)."""
    grid = session_grid(session, bin_size_cm)
    min_speed = check_positive_number(min_speed_cm_s, "min_speed_cm_s", allow_zero=True)
    x, y = positions_cm(session)
    xe, ye = grid["x_edges"], grid["y_edges"]
    nx, ny = xe.size - 1, ye.size - 1
    with np.errstate(invalid="ignore"):
        ix = np.clip(np.floor((x - xe[0]) / grid["bin_size_cm"]), 0, nx - 1)
        iy = np.clip(np.floor((y - ye[0]) / grid["bin_size_cm"]), 0, ny - 1)
        keep = np.isfinite(x) & np.isfinite(y)
        if min_speed > 0:
            keep &= session_speed(session).values >= min_speed
    node = np.where(keep, np.nan_to_num(iy) * nx + np.nan_to_num(ix), -1).astype(np.int64)
    if "in_arena" in grid:  # a circular arena: bins outside the disc are not in it
        inside = grid["in_arena"].ravel()
        node = np.where((node >= 0) & inside[np.maximum(node, 0)], node, -1)
    return xr.DataArray(node[None], dims=("env", TIME),
                        attrs={"long_name": "bin of the tracking sample (-1 = dropped)"})


def session_rate_maps(session: xr.Dataset, population: str | None = None,
                      bin_size_cm: float = SESSION_BIN_SIZE_CM,
                      smooth_cm: float | None = SESSION_SMOOTH_CM,
                      min_speed_cm_s: float = SESSION_MIN_SPEED_CM_S,
                      activity: xr.DataArray | None = None,
                      node: xr.DataArray | None = None, *,
                      session_checked: bool = False,
                      counts: SampleCounts | None = None) -> xr.Dataset:
    """Rate maps of one population of a session: spikes per bin / occupancy in seconds.

    Parameters
    ----------
    session : xarray.Dataset
        A session.
    population : str, optional
        The population (default: the first).
    bin_size_cm : float
        Side of the square bins, cm.
    smooth_cm : float or None
        Gaussian σ, cm (None or 0: no smoothing); BNT's convention (module doc).
    min_speed_cm_s : float
        Samples slower than this are dropped (0 keeps every tracked sample).
    activity, node : xarray.DataArray, optional
        :func:`session_activity` and :func:`session_node` when the caller has them. Without
        ``activity``, the maps of a session of spikes are formed from its spike counts per
        tracking sample held sparsely (no dense (time, cell) array; the same numbers).
    session_checked : bool
        The session has just passed :func:`validate_session`: not checked again.
    counts : SampleCounts, optional
        The population's sparse spike counts when the caller has them (a session of spikes,
        no ``activity``).

    Returns
    -------
    xarray.Dataset
        ``rate_map`` (env, unit, y, x) in Hz (the session's rate unit), NaN where unvisited;
        ``occupancy`` (env, y, x), seconds; ``node_rate`` (env, unit, world_node),
        ``node_occupancy`` (env, world_node, seconds), ``node_map`` (y, x): one "node" per
        bin, the node the analysis' shuffles and per-node scores use. Coords ``x``, ``y``:
        bin centres, cm. Attrs ``bin_size_cm``, ``smooth_cm``, ``smooth_sigma_bins``,
        ``min_speed_cm_s``, ``sample_interval_s``, ``x_edges``, ``y_edges``,
        ``arena_shape``; a circular arena's ``disc_cm`` (centre x, y, radius): its bins
        outside the disc are NaN in ``rate_map`` (0 in ``occupancy``: no sample counts
        there).
    """
    if not session_checked:
        validate_session(session)
    population = session_populations(session)[0] if population is None else population
    grid = session_grid(session, bin_size_cm)
    xe, ye, b = grid["x_edges"], grid["y_edges"], grid["bin_size_cm"]
    nx, ny = xe.size - 1, ye.size - 1
    sigma_cm = 0.0 if smooth_cm is None else check_positive_number(smooth_cm, "smooth_cm",
                                                                   allow_zero=True)
    node = session_node(session, b, min_speed_cm_s) if node is None else node
    iy, ix = np.divmod(np.arange(nx * ny), nx)
    if activity is None and session.attrs[CELLS_ATTR] == "spikes":
        cells = population_cells(session, population)
        if counts is None:
            counts, _ = spike_sample_counts(session, cells)
        ids = np.asarray(session[CELL_ID].values).astype(str)[cells]
        ds = count_rate_maps(counts, node, ix.astype(np.float64), iy.astype(np.float64),
                             sigma_cm / b, ids)
        units = "Hz"
    else:
        act = session_activity(session, population) if activity is None else activity
        ds = node_rate_maps(act, node, ix.astype(np.float64), iy.astype(np.float64),
                            smooth_sigma=sigma_cm / b)
        units = act.attrs.get("units", "Hz")
    dt = sample_interval(session)
    cm = {"units": "cm"}
    ds = ds.assign_coords(x=("x", (xe[:-1] + xe[1:]) / 2, {"long_name": "bin centre x", **cm}),
                          y=("y", (ye[:-1] + ye[1:]) / 2, {"long_name": "bin centre y", **cm}))
    for k in ("occupancy", "node_occupancy"):
        ds[k] = ds[k] * dt
        ds[k].attrs = {"long_name": "time spent in the bin (speed-filtered)", "units": "s"}
    ds["rate_map"].attrs.update(units=units,
                                long_name="spikes per second in the bin (NaN = unvisited)")
    ds.attrs.update(bin_size_cm=b, smooth_cm=sigma_cm, min_speed_cm_s=float(min_speed_cm_s),
                    sample_interval_s=dt, x_edges=xe, y_edges=ye, variable=population,
                    arena_shape=grid["arena_shape"])
    if "disc_cm" in grid:
        ds.attrs["disc_cm"] = grid["disc_cm"]
    return ds


def count_rate_maps(counts: SampleCounts, node: xr.DataArray, node_x: np.ndarray,
                    node_y: np.ndarray, smooth_sigma: float, cell_id: np.ndarray
                    ) -> xr.Dataset:
    """:func:`~hippo_rep.analysis.recordings.node_rate_maps` of sparse spike counts: the same
    Dataset, with the same numbers, as for their dense rates (:meth:`SampleCounts.dense`),
    without forming them.

    Parameters
    ----------
    counts : SampleCounts
        Spikes per tracking sample of the cells (Hz = count / sample interval).
    node : xarray.DataArray, (env, time) int
        Node (bin) of every tracking sample, one env (:func:`session_node`); -1 = dropped.
    node_x, node_y : numpy.ndarray, (world_node,)
        Node coordinates in bins.
    smooth_sigma : float
        Gaussian σ in bins (0: none).
    cell_id : numpy.ndarray, (unit,) str
        The cells' ids (coord ``cell_id`` on ``unit``).

    Returns
    -------
    xarray.Dataset
        ``rate_map`` (env, unit, y, x) Hz, ``occupancy`` (env, y, x) samples, ``node_rate``,
        ``node_occupancy``, ``node_map``, as :func:`node_rate_maps` returns.
    """
    nd = np.asarray(node.values, dtype=np.int64).reshape(-1)
    n_nodes = node_x.size
    occ = np.bincount(nd[nd >= 0], minlength=n_nodes).astype(np.float64)
    sums = counts.node_sums(nd, n_nodes)  # (unit, node)
    with np.errstate(invalid="ignore", divide="ignore"):  # no missing samples: occupancy
        node_rate = np.where(occ > 0, sums / occ, np.nan)
    coords = {"env": ("env", [0]),
              UNIT_DIM: (UNIT_DIM, np.arange(counts.n_units)),
              CELL_ID: (UNIT_DIM, np.asarray(cell_id).astype(str))}
    ds = node_maps_dataset(node_rate[None], occ[None], node_x, node_y, ["env"], [UNIT_DIM],
                            coords, node_dim=NODE_DIM, units_attr="Hz")
    return smoothed_node_maps(ds, smooth_sigma)
