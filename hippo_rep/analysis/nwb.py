"""NWB in and out: a session (:mod:`~hippo_rep.analysis.sessions`) from the common DANDI layout.

:func:`read_nwb` reads a ``Position`` (its ``SpatialSeries``: x, y per tracking sample, their
timestamps, ``conversion``, ``offset`` and ``unit``) from ``processing["behavior"]`` or
``acquisition``, and the ``Units`` table's spike times, into a session of spike times.
:func:`write_nwb` writes a session the same way (for round trips and for sharing). pynwb is an
optional dependency (the ``dev`` extra), imported when these are called.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep.fileio import atomic_write_nwb, quote

from .arena import CIRCLE, RECTANGLE
from .sessions import (
    ARENA_ATTR,
    CELL_ID,
    CELL_POPULATION,
    CELLS_ATTR,
    DEFAULT_POPULATION,
    LENGTH_UNIT_ATTR,
    N_SPIKES,
    SPIKE_TIMES,
    TIME,
    SessionError,
    X,
    Y,
    open_session,
    parse_arena,
    session_arena_shape,
    session_from_spikes,
    tracking_clock,
    validate_session,
)

#: NWB ``unit`` strings of a SpatialSeries, by the session length unit they mean.
NWB_LENGTH_UNITS: dict[str, tuple[str, ...]] = {
    "m": ("m", "meter", "meters", "metre", "metres"),
    "cm": ("cm", "centimeter", "centimeters", "centimetre", "centimetres"),
}
#: The ``unit`` string :func:`write_nwb` writes per session length unit.
NWB_UNIT_NAMES = {"m": "meters", "cm": "centimeters"}
#: Processing module searched first for the ``Position`` (then ``acquisition``).
BEHAVIOR_MODULE = "behavior"
#: Units-table columns :func:`read_nwb` and :func:`write_nwb` use for each cell's population
#: and id (when present; NWB unit ids are integers, a session's cell ids are strings).
POPULATION_COLUMN, CELL_ID_COLUMN = "population", "cell_id"
#: :func:`write_nwb` stores the arena in the SpatialSeries' ``reference_frame`` as this prefix
#: followed by ``[x_min, x_max, y_min, y_max]``, which :func:`read_nwb` reads back.
ARENA_PREFIX = "hippo_rep arena (x_min, x_max, y_min, y_max):"
#: ... and, for a circular arena, this after the numbers (the disc inscribed in that square).
CIRCLE_SUFFIX = "; arena_shape: circle (the disc inscribed in that square)"
#: Session attrs that :func:`write_nwb` writes as the NWB ``Subject`` (and :func:`read_nwb`
#: reads back), by the ``Subject`` field they fill. NWB best practice (nwbinspector) asks for
#: ``subject_id``, ``species`` (Latin binomial or NCBI taxonomy link), ``sex`` (M, F, U, O)
#: and ``age`` (ISO 8601 duration, e.g. "P90D", or a range "P90D/P120D").
SUBJECT_ATTRS: dict[str, str] = {"subject_id": "subject_id", "subject_species": "species",
                                 "subject_sex": "sex", "subject_age": "age",
                                 "subject_description": "description"}
#: Session attr: the smallest possible difference between two spike times (s), the Units
#: table's ``resolution`` (1 / the acquisition system's sampling rate).
SPIKE_RESOLUTION_ATTR = "spike_time_resolution_s"
#: NWB species of simulated and model data: NCBI Taxonomy 32630, "synthetic construct".
SYNTHETIC_SPECIES = "http://purl.obolibrary.org/obo/NCBITaxon_32630"
#: :func:`write_nwb` writes tracking times as a starting time and rate (NWB best practice)
#: when every time is within this many seconds of that grid, else as timestamps.
REGULAR_ATOL_S = 1e-9
#: ``session_start_time`` of a file when none is given (the date is unknown).
UNKNOWN_START_TIME = datetime(1970, 1, 1, tzinfo=UTC)


def _pynwb():
    try:
        import pynwb
    except ImportError as err:
        raise SessionError(f"reading NWB files needs pynwb ({err}); install it with "
                           "`pip install pynwb`") from None
    return pynwb


def _spatial_series(nwbfile, name: str | None, where: str):
    """The SpatialSeries of the file's Position (behavior module first, then acquisition)."""
    from pynwb.behavior import Position, SpatialSeries

    places = []
    if BEHAVIOR_MODULE in nwbfile.processing:
        places.append(nwbfile.processing[BEHAVIOR_MODULE].data_interfaces)
    places.append(nwbfile.acquisition)
    found = []
    for place in places:
        for obj in place.values():
            if isinstance(obj, Position):
                found += list(obj.spatial_series.values())
            elif isinstance(obj, SpatialSeries):
                found.append(obj)
    if not found:
        raise SessionError(f"{where} has no Position (SpatialSeries) in "
                           f"processing[{BEHAVIOR_MODULE!r}] or acquisition")
    if name is None:
        return found[0]
    for series in found:
        if series.name == name:
            return series
    raise SessionError(f"{where} has no SpatialSeries {name!r} (found: "
                       f"{', '.join(s.name for s in found)})")


def _length_unit(unit: str, where: str) -> str:
    text = str(unit).strip().lower()
    for ours, names in NWB_LENGTH_UNITS.items():
        if text in names:
            return ours
    raise SessionError(f"{where}: the SpatialSeries unit is {quote(unit)}; pass "
                       "length_unit='cm' or 'm' to say what it is")


def _arena_of(series) -> tuple[list[float] | None, str]:
    """The arena and its shape written by :func:`write_nwb` (None, "rectangle": none)."""
    frame = getattr(series, "reference_frame", None) or ""
    if not frame.startswith(ARENA_PREFIX):
        return None, RECTANGLE
    rest = frame[len(ARENA_PREFIX):]
    shape = CIRCLE if rest.endswith(CIRCLE_SUFFIX) else RECTANGLE
    numbers = re.findall(r"[-+0-9.eE]+", rest.split(";")[0])
    return ([float(v) for v in numbers[:4]] if len(numbers) >= 4 else None), shape


def _subject_attrs(subject) -> dict[str, str]:
    """The session attrs (:data:`SUBJECT_ATTRS`) of an NWB ``Subject`` (None: none)."""
    if subject is None:
        return {}
    out = {}
    for attr, field in SUBJECT_ATTRS.items():
        value = getattr(subject, field, None)
        if value is not None and str(value) != "":
            out[attr] = str(value)
    return out


def nwb_subject(session_attrs: Mapping, subject: Mapping | None = None):
    """The NWB ``Subject`` of a file: ``subject`` (``Subject`` fields: ``subject_id``,
    ``species``, ``sex``, ``age``, ``description``) over the session attrs
    :data:`SUBJECT_ATTRS`; None when neither names any (nwbinspector then reports the missing
    subject, a critical problem for DANDI: pass it).
    """
    from pynwb.file import Subject

    fields = {field: str(session_attrs[attr]) for attr, field in SUBJECT_ATTRS.items()
              if attr in session_attrs and str(session_attrs[attr]) != ""}
    known = set(SUBJECT_ATTRS.values())
    for key, value in dict(subject or {}).items():
        if key not in known:
            raise SessionError(f"subject field {key!r} is not one of {sorted(known)}")
        fields[key] = str(value)
    return Subject(**fields) if fields else None


def time_axis(times: np.ndarray) -> dict:
    """A TimeSeries' time arguments for ``times`` (s): ``starting_time`` and ``rate`` (Hz)
    when every time is within :data:`REGULAR_ATOL_S` of that grid (NWB best practice), else
    ``timestamps``."""
    times = np.asarray(times, dtype=np.float64)
    if times.size >= 2 and times[-1] > times[0]:
        rate = (times.size - 1) / (times[-1] - times[0])
        rounded = float(np.round(rate, 6))  # 50.0, not 49.99999999999999
        for r in (rounded, float(rate)):
            grid = times[0] + np.arange(times.size) / r
            if np.max(np.abs(grid - times)) <= REGULAR_ATOL_S:
                return {"starting_time": float(times[0]), "rate": r}
    return {"timestamps": times}


def read_nwb(path: str | os.PathLike, *, position: str | None = None,
             length_unit: str | None = None, arena=None, arena_shape: str | None = None,
             population_column: str | None = POPULATION_COLUMN,
             drop_outside: bool = True) -> xr.Dataset:
    """A session of spike times from an NWB file (the common DANDI layout).

    Parameters
    ----------
    path : path-like
        The ``.nwb`` file (HDF5).
    position : str, optional
        Name of the SpatialSeries to read (default: the first of the ``Position`` in
        ``processing["behavior"]``, else in ``acquisition``). Its first two columns are x, y.
    length_unit : {"cm", "m"}, optional
        The unit of the positions after NWB's ``conversion`` and ``offset`` (default: read
        from the series' ``unit``, :data:`NWB_LENGTH_UNITS`; another unit is an error).
    arena : (x_min, x_max, y_min, y_max), optional
        The arena in ``length_unit`` (default: one written by :func:`write_nwb`, else none).
    arena_shape : {"rectangle", "circle"}, optional
        The arena's shape (default: the one written by :func:`write_nwb` with the arena,
        else "rectangle"); "circle": the disc inscribed in ``arena``.
    population_column : str or None
        Units-table column naming each cell's population, used when present (default
        "population"); without it every cell is in :data:`~.sessions.DEFAULT_POPULATION`.
    drop_outside : bool
        Drop spikes outside the tracking clock (recordings usually run longer than the
        tracking; their number is kept in the attr ``spikes_outside_tracking``). False: they
        are an error, as in :func:`~.sessions.session_from_spikes`.

    Returns
    -------
    xarray.Dataset
        A session (cells as spike times; ``cell_id``: the Units table's ``cell_id`` column,
        else its ids). Attrs ``source`` (the file), ``nwb_identifier``,
        ``nwb_session_description``, ``nwb_position_series``, ``spikes_outside_tracking``;
        the file's subject (:data:`SUBJECT_ATTRS`, those it has) and the Units table's
        resolution (:data:`SPIKE_RESOLUTION_ATTR`, when set).

    Raises
    ------
    FileNotFoundError
        A missing file.
    SessionError
        One line naming the file and what is missing or wrong: not an NWB file, no Position,
        no Units table (or no spike times), an unknown length unit, a bad session.
    """
    path = Path(path)
    where = f"NWB file {str(path)!r}"
    if not path.is_file():
        raise FileNotFoundError(f"{where} not found")
    pynwb = _pynwb()
    io = None
    try:
        io = pynwb.NWBHDF5IO(str(path), "r", load_namespaces=True)
        nwbfile = io.read()
    except Exception as err:  # h5py / hdmf raise many types for non-NWB files
        if io is not None:
            io.close()
        raise SessionError(f"{where} is not a readable NWB file ({type(err).__name__})"
                           ) from None
    try:
        series = _spatial_series(nwbfile, position, where)
        data = np.asarray(series.get_data_in_units(), dtype=np.float64)
        if data.ndim != 2 or data.shape[1] < 2:
            raise SessionError(f"{where}: SpatialSeries {series.name!r} must hold x and y "
                               f"columns; got shape {data.shape}")
        times = np.asarray(series.get_timestamps(), dtype=np.float64)
        unit = length_unit or _length_unit(series.unit, where)
        written, written_shape = _arena_of(series)
        if arena is None:
            arena = written
        if arena_shape is None:
            arena_shape = written_shape
        units = nwbfile.units
        if units is None or len(units) == 0:
            raise SessionError(f"{where} has no Units table (spike times of the cells)")
        if "spike_times" not in units.colnames:
            raise SessionError(f"{where}: the Units table has no spike_times column")
        n = len(units)
        ids = [str(i) for i in units.id[:]]
        if CELL_ID_COLUMN in units.colnames:
            ids = [str(v) for v in units[CELL_ID_COLUMN][:]]
        pops = [DEFAULT_POPULATION] * n
        if population_column is not None and population_column in units.colnames:
            pops = [str(v) for v in units[population_column][:]]
        trains = [np.asarray(units["spike_times"][i], dtype=np.float64) for i in range(n)]
        attrs = {"source": str(path), "nwb_identifier": str(nwbfile.identifier),
                 "nwb_session_description": str(nwbfile.session_description),
                 "nwb_position_series": series.name}
        attrs.update(_subject_attrs(nwbfile.subject))
        resolution = getattr(units, "resolution", None)
        if resolution is not None and np.isfinite(resolution) and resolution > 0:
            attrs[SPIKE_RESOLUTION_ATTR] = float(resolution)
    finally:
        io.close()
    dropped = 0
    if drop_outside and times.size >= 2:
        lo, hi = tracking_clock(times)
        kept = [s[(s >= lo) & (s < hi)] for s in trains]
        dropped = sum(s.size - k.size for s, k in zip(trains, kept, strict=True))
        trains = kept
    attrs["spikes_outside_tracking"] = dropped
    by_pop: dict[str, list] = {}
    id_of: dict[str, list] = {}
    for p, i, s in zip(pops, ids, trains, strict=True):
        by_pop.setdefault(p, []).append(s)
        id_of.setdefault(p, []).append(i)  # the cells' ids in the session's (population) order
    try:
        ds = session_from_spikes(data[:, 0], data[:, 1], times, by_pop, length_unit=unit,
                                 arena=arena, arena_shape=arena_shape, attrs=attrs)
    except SessionError as err:
        raise SessionError(f"{where}: {err}") from None
    ordered = np.array([i for p in by_pop for i in id_of[p]], dtype=str)
    return ds.assign_coords({CELL_ID: (ds[CELL_ID].dims, ordered, ds[CELL_ID].attrs)})


def open_any_session(path: str | os.PathLike) -> xr.Dataset:
    """A session from an ``.nwb`` file (:func:`read_nwb`) or a session netCDF file
    (:func:`~hippo_rep.analysis.sessions.open_session`)."""
    if Path(path).suffix.lower() == ".nwb":
        return read_nwb(path)
    return open_session(path)


def write_nwb(session: xr.Dataset, path: str | os.PathLike, overwrite: bool = False,
              identifier: str | None = None, *, subject: Mapping | None = None,
              spike_time_resolution_s: float | None = None,
              session_start_time: datetime | None = None) -> Path:
    """Write a session of spike times as NWB (atomically): a ``Position`` with one
    SpatialSeries ``position`` (x, y; a starting time and rate when the tracking is regular,
    else timestamps, :func:`time_axis`; unit :data:`NWB_UNIT_NAMES`; the arena in
    ``reference_frame``) in ``processing["behavior"]``, a Units table with the spike times
    and the columns ``population`` and ``cell_id``, and the subject.

    Parameters
    ----------
    session : xarray.Dataset
        A session of spike times.
    path : path-like
        The file (``.nwb``).
    overwrite : bool
        Replace an existing file.
    identifier : str, optional
        The file's identifier (default: the session's attr ``nwb_identifier``, else
        "hippo_rep-session").
    subject : mapping, optional
        NWB ``Subject`` fields (``subject_id``, ``species``, ``sex``, ``age``,
        ``description``), over the session's attrs :data:`SUBJECT_ATTRS`
        (:func:`nwb_subject`). Without any, the file has no subject.
    spike_time_resolution_s : float, optional
        The Units table's ``resolution`` (s; default: the session's attr
        :data:`SPIKE_RESOLUTION_ATTR`, else unset).
    session_start_time : datetime, optional
        Timezone-aware start of the session (default: the session's attr
        ``session_start_time``, ISO 8601, else :data:`UNKNOWN_START_TIME`).

    Raises
    ------
    SessionError
        A session of rates, an invalid session or a path not ending in ``.nwb``.
    FileExistsError
        If ``path`` exists and ``overwrite`` is False.

    Notes
    -----
    The files of :func:`~hippo_rep.analysis.simulate_session` sessions pass nwbinspector
    without critical problems or best-practice violations; for recorded sessions pass the
    subject and the resolution.
    """
    pynwb = _pynwb()
    from pynwb.behavior import Position, SpatialSeries
    from pynwb.misc import Units

    validate_session(session)
    if session.attrs[CELLS_ATTR] != "spikes":
        raise SessionError("write_nwb needs a session of spike times (attr cells = 'spikes')")
    path = Path(path)
    if path.suffix.lower() != ".nwb":
        raise SessionError(f"NWB file {str(path)!r} must end in .nwb")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{str(path)!r} exists; pass overwrite=True to replace it")
    unit = session.attrs[LENGTH_UNIT_ATTR]
    start = session_start_time
    if start is None and "session_start_time" in session.attrs:
        try:
            start = datetime.fromisoformat(str(session.attrs["session_start_time"]))
        except ValueError:
            raise SessionError("session attr session_start_time is not ISO 8601: "
                               f"{quote(session.attrs['session_start_time'])}") from None
    start = UNKNOWN_START_TIME if start is None else start
    if start.tzinfo is None:
        raise SessionError("session_start_time needs a timezone (e.g. "
                           "datetime(2026, 1, 1, tzinfo=UTC))")
    resolution = spike_time_resolution_s
    if resolution is None and SPIKE_RESOLUTION_ATTR in session.attrs:
        resolution = float(session.attrs[SPIKE_RESOLUTION_ATTR])
    if resolution is not None and not (np.isfinite(resolution) and resolution > 0):
        raise SessionError(f"spike_time_resolution_s must be a positive number of seconds; "
                           f"got {resolution!r}")
    nwbfile = pynwb.NWBFile(
        session_description=str(session.attrs.get("nwb_session_description",
                                                  "hippo_rep session")),
        identifier=identifier or str(session.attrs.get("nwb_identifier", "hippo_rep-session")),
        session_start_time=start,
        subject=nwb_subject(session.attrs, subject),
        units=Units(name="units", description="spike times (s) of the cells",
                    resolution=None if resolution is None else float(resolution)),
    )
    frame = "origin of the tracking camera"
    if ARENA_ATTR in session.attrs:
        box = parse_arena(session.attrs[ARENA_ATTR], where="session")
        frame = f"{ARENA_PREFIX} [{', '.join(repr(float(v)) for v in box)}]"
        if session_arena_shape(session) == CIRCLE:
            frame += CIRCLE_SUFFIX
    xy = np.stack([session[X].values, session[Y].values], axis=1).astype(np.float64)
    series = SpatialSeries(name="position", data=xy, reference_frame=frame,
                           unit=NWB_UNIT_NAMES[unit],
                           description=f"tracked x, y (columns) in {NWB_UNIT_NAMES[unit]}; "
                                       "NaN where the tracking was lost",
                           **time_axis(session[TIME].values))
    behavior = nwbfile.create_processing_module(name=BEHAVIOR_MODULE,
                                                description="tracked position")
    behavior.add(Position(spatial_series=series))
    nwbfile.add_unit_column(name=POPULATION_COLUMN, description="population of the cell")
    nwbfile.add_unit_column(name=CELL_ID_COLUMN, description="the cell's id in the session")
    counts = np.asarray(session[N_SPIKES].values)
    ends = np.cumsum(counts)
    spikes = np.asarray(session[SPIKE_TIMES].values, dtype=np.float64)
    pops = np.asarray(session[CELL_POPULATION].values).astype(str)
    ids = np.asarray(session[CELL_ID].values).astype(str)
    for c in range(counts.size):
        nwbfile.add_unit(spike_times=spikes[ends[c] - counts[c]: ends[c]], id=c,
                         **{POPULATION_COLUMN: str(pops[c]), CELL_ID_COLUMN: str(ids[c])})

    atomic_write_nwb(path, nwbfile)
    return path
