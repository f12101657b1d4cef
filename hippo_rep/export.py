"""Exports of recordings to tools that neuroscientists use.

:func:`to_pynapple` turns one environment of a recording (see :mod:`hippo_rep.schema`) into
pynapple objects (https://pynapple.org), which need the optional ``pynapple`` package.
"""

from __future__ import annotations

import numpy as np

from hippo_rep import schema as S

#: Per-step coordinates exported as ``Tsd``.
PYNAPPLE_TSD = (S.X, S.Y, S.NODE, S.ACTION, S.OBSERVATION, S.PREDICTION, S.CORRECT,
                S.STEP_TYPE)


def _check_env(ds, env: int) -> None:
    """``ds`` is a recording and ``env`` one of its environments (negative from the end)."""
    S.validate(ds)
    n_env = ds.sizes[S.ENV]
    if not -n_env <= env < n_env:
        raise IndexError(f"env {env} out of range: the recording has {n_env} environments")

def to_pynapple(ds, env: int = 0, step_duration: float = 1.0) -> dict:
    """One environment of a recording as pynapple objects.

    Parameters
    ----------
    ds : xarray.Dataset
        A recording (validated first).
    env : int
        Which environment (position along ``env``); each is one session.
    step_duration : float
        Seconds per step of the walk: step ``t`` is at time ``t * step_duration`` s
        (pynapple counts time in seconds; the walk has no clock of its own).

    Returns
    -------
    dict
        ``g``, ``g_pi``: ``TsdFrame`` (time × g_unit, columns = unit index);
        ``memory_activity``: ``TsdFrame`` (time × the memory neurons this environment
        wrote, columns = memory index, metadata ``memory_node``, ``memory_time``,
        ``memory_observation``); ``x``, ``y`` (positions, lattice units), ``node``,
        ``action``, ``observation``, ``prediction``, ``correct`` (0/1), ``step_type``:
        ``Tsd``.

    Raises
    ------
    ImportError
        pynapple is not installed (with how to install it).
    SchemaError
        ``ds`` is not a recording.
    IndexError
        ``env`` is out of range.
    """
    try:
        import pynapple as nap
    except ImportError:
        raise ImportError("to_pynapple needs the optional package pynapple: "
                          "pip install pynapple") from None
    _check_env(ds, env)
    one = ds.isel({S.ENV: env})
    t = np.asarray(one[S.TIME].values, dtype=np.float64) * float(step_duration)
    out = {}
    for name in (S.G, S.G_PI):
        out[name] = nap.TsdFrame(t=t, d=np.asarray(one[name].values),
                                 columns=np.asarray(one[S.G_UNIT].values))
    mem_time = np.asarray(one[S.MEMORY_TIME].values)
    used = mem_time >= 0
    metadata = {name: np.asarray(one[name].values)[used] for name in S.MEMORY_COORDS}
    out[S.MEMORY_ACTIVITY] = nap.TsdFrame(
        t=t, d=np.asarray(one[S.MEMORY_ACTIVITY].values)[:, used],
        columns=np.asarray(one[S.MEMORY].values)[used], metadata=metadata)
    for name in PYNAPPLE_TSD:
        d = np.asarray(one[name].values)
        if d.dtype == bool:
            d = d.astype(np.int8)
        out[name] = nap.Tsd(t=t, d=d)
    return out


#: Processing module of :func:`write_recording_nwb` holding the model's populations.
MODEL_MODULE = "model"
#: The NWB ``Subject`` of a model recording: no animal, so NCBI's "synthetic construct"
#: species, sex unknown, age any ("P0D/": 0 days or older).
MODEL_SUBJECT = {"species": "http://purl.obolibrary.org/obo/NCBITaxon_32630", "sex": "U",
                 "age": "P0D/"}
#: Unit of the activity TimeSeries: model activity has no physical unit.
ACTIVITY_UNIT = "a.u."
#: ``session_start_time`` of a model recording's NWB file (a model has no date).
MODEL_START_TIME = "1970-01-01T00:00:00+00:00"


def write_recording_nwb(ds, path, env: int = 0, step_duration: float = 1.0,
                        overwrite: bool = False, identifier: str | None = None):
    """Write one environment of a model recording as an NWB file (atomically).

    The file holds, at ``starting_time`` 0 and ``rate`` 1 / ``step_duration`` (Hz): a
    ``Position`` with one SpatialSeries ``position`` (x, y in lattice units, NWB unit "n.a.")
    in ``processing["behavior"]``, and in ``processing["model"]`` one TimeSeries per
    population of the recording (``g``, ``g_pi``, ``memory_activity`` or ``p``; data
    (time, unit), unit :data:`ACTIVITY_UNIT`; for memory neurons only the slots this
    environment wrote, activity as recorded: 0 before a memory exists) and ``node`` (the
    world node per step). The subject is the model (:data:`MODEL_SUBJECT`, ``subject_id``
    from the checkpoint's hash). It passes nwbinspector without critical problems or
    best-practice violations, as long as the walk has more steps than the largest population
    has units (nwbinspector takes the longest axis for time).

    Parameters
    ----------
    ds : xarray.Dataset
        A recording (validated first).
    path : path-like
        The file (``.nwb``).
    env : int
        Which environment (position along ``env``); each is one session.
    step_duration : float
        Seconds per step of the walk (the walk has no clock of its own).
    overwrite : bool
        Replace an existing file.
    identifier : str, optional
        The file's identifier (default: ``hippo_rep-recording-env<env>``).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ImportError
        pynwb is not installed (with how to install it).
    SchemaError
        ``ds`` is not a recording.
    IndexError
        ``env`` is out of range.
    ValueError
        ``path`` does not end in ``.nwb`` or ``step_duration`` is not positive.
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    """
    from datetime import datetime
    from pathlib import Path

    try:
        import pynwb
        from pynwb.behavior import Position, SpatialSeries
        from pynwb.file import Subject
    except ImportError:
        raise ImportError("write_recording_nwb needs the optional package pynwb: "
                          "pip install pynwb") from None
    from hippo_rep.fileio import atomic_write_nwb

    _check_env(ds, env)
    if not (np.isfinite(step_duration) and step_duration > 0):
        raise ValueError(f"step_duration must be a positive number of seconds; "
                         f"got {step_duration!r}")
    path = Path(path)
    if path.suffix.lower() != ".nwb":
        raise ValueError(f"NWB file {str(path)!r} must end in .nwb")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{str(path)!r} exists; pass overwrite=True to replace it")
    one = ds.isel({S.ENV: env})
    env_label = int(np.asarray(ds[S.ENV].values)[env])
    world = str(ds.attrs.get(S.WORLD, "?"))
    sha = str(ds.attrs.get(S.CHECKPOINT_SHA256, "unknown"))
    timing = {"starting_time": 0.0, "rate": 1.0 / float(step_duration)}
    nwbfile = pynwb.NWBFile(
        session_description=f"hippo_rep model recording: environment {env_label} of world "
                            f"{world}, one step every {step_duration:g} s",
        identifier=identifier or f"hippo_rep-recording-env{env_label}",
        session_start_time=datetime.fromisoformat(MODEL_START_TIME),
        subject=Subject(subject_id=f"model {sha[:12]}",
                        description=f"a hippo_rep model (checkpoint sha256 {sha}), not an "
                                    "animal", **MODEL_SUBJECT),
    )
    xy = np.stack([one[S.X].values, one[S.Y].values], axis=1).astype(np.float64)
    behavior = nwbfile.create_processing_module(name="behavior",
                                                description="the model's walk")
    behavior.add(Position(spatial_series=SpatialSeries(
        name="position", data=xy, unit="n.a.", reference_frame="lattice of the world graph",
        description="x, y (columns) of the walk's node, in lattice units (the distance "
                    "between neighbouring nodes)", **timing)))
    model = nwbfile.create_processing_module(name=MODEL_MODULE,
                                             description="activity of the model's populations")
    for name in S.POPULATIONS:
        if name not in one.data_vars:
            continue
        data = np.asarray(one[name].values)
        what = f"{name} activity (time, unit)"
        if name in S.MEMORY_POPULATIONS:
            used = np.asarray(one[S.MEMORY_TIME].values) >= 0
            data = data[:, used]
            what += ("; only the memory slots this environment wrote, in order of writing; "
                     "0 before a memory exists")
        model.add(pynwb.TimeSeries(name=name, data=data, unit=ACTIVITY_UNIT,
                                   description=what, **timing))
    model.add(pynwb.TimeSeries(name=S.NODE, data=np.asarray(one[S.NODE].values),
                               unit="n.a.", description="world node of each step", **timing))

    atomic_write_nwb(path, nwbfile)
    return path
