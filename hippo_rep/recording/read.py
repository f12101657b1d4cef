"""Opening recordings: :func:`open_recording` opens either format lazily (dask-backed for
zarr), validates it and trims it (:func:`trim`) to the steps it holds. Needs no torch and, for
netCDF files, no zarr.

By default it hands dask chunks that hold whole walks of a block of units
(:data:`~hippo_rep.recording.store.G_UNIT_CHUNK` / :data:`~hippo_rep.recording.store.MEMORY_CHUNK`
units, the blocks the writer stores), the cut that ``xr.apply_ufunc(...,
dask="parallelized")`` over ``time`` wants.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep import schema as S
from hippo_rep.datasets import CHUNKS_COMPLETE_ATTR, check_chunks, is_zarr_store, open_raw
from hippo_rep.recording.store import G_UNIT_CHUNK, MEMORY_CHUNK

#: ``open_recording(chunks=UNIT_CHUNKS)``: dask chunks of whole walks × blocks of units.
UNIT_CHUNKS = "unit"


def open_recording(path, chunks=UNIT_CHUNKS) -> xr.Dataset:
    """Open a recording (``.nc`` or ``.zarr``) lazily, validate it, trim it to ``n_steps``.

    Parameters
    ----------
    path : path
        A netCDF file or zarr store written by :func:`record_to_file`.
    chunks : "unit", dict, {} or None
        ``"unit"`` (default): zarr stores come dask-backed in chunks of whole walks
        (``env``, ``time``) × blocks of :data:`G_UNIT_CHUNK` / :data:`MEMORY_CHUNK` units;
        netCDF files open lazily without dask. Anything else is passed to xarray (``{}``:
        the on-disk chunks; ``None``: no dask).

    Returns
    -------
    xarray.Dataset
        Holding exactly the ``n_steps`` steps the file says are final (memories written
        later are dropped).

    Raises
    ------
    FileNotFoundError, RecordingError
        A missing path, or a file that is neither netCDF nor zarr.
    SchemaError
        Not a recording, or missing variables/coords/dims/attrs (all named, with the file).
    """
    path = Path(path)
    unit = isinstance(chunks, str) and chunks == UNIT_CHUNKS
    is_zarr = path.is_dir()
    if is_zarr and is_zarr_store(path):
        check_chunks(path)
    return checked_recording(open_raw(path, ({} if is_zarr else None) if unit else chunks),
                             path, chunks)


def checked_recording(ds: xr.Dataset, path, chunks=UNIT_CHUNKS) -> xr.Dataset:
    """A recording opened by :func:`~hippo_rep.datasets.open_raw` (with the chunks that
    :func:`open_recording` gives it), validated, trimmed to ``n_steps`` and, for zarr stores
    with ``chunks="unit"``, rechunked: the second half of :func:`open_recording`, for a
    caller that has opened the file already (to look at its kind). Closes ``ds`` on error.

    Raises
    ------
    SchemaError
        Not a recording, or missing variables/coords/dims/attrs (all named, with the file).
    """
    path = Path(path)
    unit = isinstance(chunks, str) and chunks == UNIT_CHUNKS
    is_zarr = path.is_dir()
    ds.attrs.pop(CHUNKS_COMPLETE_ATTR, None)
    try:
        S.validate(ds, path)
        n, held = int(ds.attrs[S.N_STEPS]), ds.sizes[S.TIME]
        if n > held:
            raise S.SchemaError(f"{str(path)!r}: attr {S.N_STEPS} = {n} but only {held} "
                                "steps are stored; the file is damaged")
    except BaseException:
        ds.close()
        raise
    # Always: an append caught before its commit may have filled slots of the committed
    # memory range (environments with fewer memories) with memories written later.
    raw = ds
    ds = trim(ds, n)
    if unit and is_zarr:
        chunks = {S.ENV: -1, S.TIME: -1, S.G_UNIT: G_UNIT_CHUNK, S.MEMORY: MEMORY_CHUNK,
                  S.P_UNIT: MEMORY_CHUNK, S.WORLD_NODE: -1}
        ds = ds.chunk({k: v for k, v in chunks.items() if k in ds.dims})
    ds.set_close(raw.close)  # ``with open_recording(...)`` / ``.close()`` close the file
    return ds


def trim(ds: xr.Dataset, n_steps: int) -> xr.Dataset:
    """The first ``n_steps`` steps of a recording, without memories written later (their
    ``memory_*`` coordinates become −1 and memory neurons no environment had are dropped)."""
    ds = ds.isel({S.TIME: slice(0, n_steps)})
    if S.MEMORY_TIME not in ds.variables:  # TEM: no memory slots
        ds.attrs[S.N_STEPS] = int(n_steps)
        return ds
    mt = np.asarray(ds[S.MEMORY_TIME].values)
    used = (mt >= 0) & (mt < n_steps)
    n_memory = int(used.sum(1).max()) if used.size else 0
    ds = ds.isel({S.MEMORY: slice(0, n_memory)})
    used = used[:, :n_memory]
    new = {}
    for name in S.MEMORY_COORDS:
        v = ds[name]
        new[name] = (v.dims, np.where(used, np.asarray(v.values), S.UNUSED).astype(v.dtype),
                     v.attrs)
    ds = ds.assign_coords(new)
    ds.attrs[S.N_STEPS] = int(n_steps)
    return ds
