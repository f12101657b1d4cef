"""The files the analysis reads, whatever their format: :func:`open_input` opens a recording
(``.nc`` or ``.zarr``) or a session (``.nwb``, or a session ``.nc``) into memory, checked once
by its reader; :func:`export_nwb` writes a session or one environment of a recording as NWB.
"""

from __future__ import annotations

import os
from pathlib import Path

import dask
import xarray as xr

from hippo_rep.datasets import load_checked, open_raw
from hippo_rep.defaults import EXPORT_STEP_DURATION_S
from hippo_rep.export import write_recording_nwb
from hippo_rep.fileio import quote
from hippo_rep.recording.read import checked_recording, open_recording
from hippo_rep.schema import KIND_ATTR

from .nwb import read_nwb, write_nwb
from .sessions import SESSION_KIND, SessionError, load_session

#: Dask scheduler that reads a recording into memory when :func:`open_input` is given none:
#: this process' threads, also under a dask.distributed client (whose workers may not see
#: the file).
LOAD_SCHEDULER = "threads"


def open_input(path: str | os.PathLike, scheduler: str | None = None
               ) -> tuple[xr.Dataset, bool]:
    """The file :func:`~hippo_rep.analysis.analyse` reads, in memory, and whether it is a
    session. Each file is opened once and checked once, by its reader (naming the file): an
    ``.nwb`` file by :func:`~hippo_rep.analysis.nwb.read_nwb`; a netCDF file as the session or
    the recording its kind attr says it is; a zarr store as a recording (read with dask's
    ``scheduler``; None: :data:`LOAD_SCHEDULER`)."""
    path = Path(path)
    if path.suffix.lower() == ".nwb":
        return read_nwb(path), True
    if path.is_file():
        opened = open_raw(path)
        if opened.attrs.get(KIND_ATTR) == SESSION_KIND:
            return load_session(opened, path), True
        ds = checked_recording(opened, path)
    else:
        ds = open_recording(path)
    with dask.config.set(scheduler=scheduler or LOAD_SCHEDULER), ds:
        return load_checked(ds, path), False


def export_nwb(source: str | os.PathLike, out: str | os.PathLike, *, env: int | None = None,
               step_duration: float | None = None, overwrite: bool = False) -> str:
    """Write a session (``.nc``) or one environment of a recording (``.nc`` or ``.zarr``) as
    the NWB file ``out``, atomically (:func:`~hippo_rep.analysis.nwb.write_nwb`,
    :func:`~hippo_rep.export.write_recording_nwb`).

    ``env`` (default 0) and ``step_duration`` (seconds per step, default
    :data:`~hippo_rep.defaults.EXPORT_STEP_DURATION_S`) are for recordings only. Returns what
    was written, e.g. ``"environment 1 of a recording"``.

    Raises
    ------
    SessionError
        ``source`` is an NWB file already or missing, an option of recordings given with a
        session, or an ``env`` out of range (each naming the file).
    FileExistsError
        ``out`` exists and not ``overwrite``.
    """
    source = Path(source)
    if source.suffix.lower() == ".nwb":
        raise SessionError(f"{quote(str(source))} is an NWB file already; export takes a "
                           "session .nc or a recording")
    if not source.exists():
        raise FileNotFoundError(f"input {quote(str(source))} not found")
    data, session = open_input(source)
    if session:
        given = [k for k, v in (("env", env), ("step_duration", step_duration)) if v is not None]
        if given:
            raise SessionError(f"{given[0]} is for recordings; {quote(str(source))} is a "
                               "session")
        write_nwb(data, out, overwrite=overwrite)
        return f"session of {data.sizes['cell']} cells"
    env = 0 if env is None else env
    n_env = data.sizes["env"]
    if not 0 <= env < n_env:
        raise SessionError(f"env {env} is out of range: {quote(str(source))} has {n_env} "
                           f"environment(s) (0..{n_env - 1})")
    write_recording_nwb(data, out, env=env, overwrite=overwrite, step_duration=(
        EXPORT_STEP_DURATION_S if step_duration is None else step_duration))
    return f"environment {env} of a recording"
