"""Opening and checking the project's dataset files: netCDF files and zarr stores.

Shared by recordings (:mod:`hippo_rep.recording`), their schema (:mod:`hippo_rep.schema`) and
analysis datasets (:mod:`hippo_rep.analysis.pipeline`): :func:`open_raw` opens a file without
checking what it holds; :func:`check_chunks` refuses a zarr store with a missing or empty chunk
file; :func:`load_checked` loads variable by variable, naming the one a damaged file breaks.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import warnings
from pathlib import Path

import xarray as xr

#: Attr of zarr stores whose every chunk was written (missing chunks are then damage).
CHUNKS_COMPLETE_ATTR = "zarr_all_chunks_written"


class RecordingError(ValueError):
    """A recording that cannot be made or read (bad output path, world, or file); raised here
    for files that cannot be opened, and by :mod:`hippo_rep.recording`."""


def is_zarr_store(path: Path) -> bool:
    """Whether folder ``path`` is a zarr store (format 3 or 2)."""
    return (path / "zarr.json").is_file() or (path / ".zgroup").is_file()


@contextlib.contextmanager
def _quiet_fallback():
    """Read a zarr store without consolidated metadata (not written by hippo_rep) quietly."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to open Zarr store with consolidated")
        yield


def missing_reader(path, err: ImportError) -> str:
    """The one-line error for a file whose reader package is not installed (h5py, netCDF4,
    zarr): the import failure itself, not the file, is what the user must fix."""
    return (f"{str(Path(path))!r} cannot be opened: {err} (a package hippo_rep reads files "
            "with is missing; reinstall it with `pip install -e .`)")


def open_raw(path, chunks=None) -> xr.Dataset:
    """Open a netCDF file or zarr store without checking it (zarr: dask-backed)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"recording {str(path)!r} not found")
    if path.is_dir():
        if not is_zarr_store(path):
            raise RecordingError(f"{str(path)!r} is a folder but not a zarr store")
        try:
            with _quiet_fallback():
                return xr.open_zarr(path, consolidated=None, chunks=chunks)
        except (ValueError, OSError, KeyError, TypeError) as err:
            raise RecordingError(f"{str(path)!r} is not a readable zarr store "
                                 f"({type(err).__name__}: {err})") from None
    try:
        return xr.open_dataset(path, chunks=chunks)
    except ImportError as err:
        raise RecordingError(missing_reader(path, err)) from None
    except (ValueError, OSError, KeyError, TypeError) as err:
        raise RecordingError(f"{str(path)!r} is not a netCDF file or zarr store "
                             f"({type(err).__name__})") from None


def check_chunks(path, error: type[Exception] = RecordingError, what: str = "recording"
                 ) -> None:
    """Check that a zarr store marked complete (attr :data:`CHUNKS_COMPLETE_ATTR`) holds a
    non-empty file for every chunk of every array in its committed (consolidated) shape.

    Raises
    ------
    error
        Naming the store, the variable and how many chunk files are missing or empty (zarr
        would read them as the fill value: zeros).
    """
    import zarr  # only zarr stores need it; netCDF readers do not pay for the import

    path = Path(path)
    try:
        with _quiet_fallback(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            group = zarr.open_group(path, mode="r", use_consolidated=None)
            if not group.attrs.get(CHUNKS_COMPLETE_ATTR):
                return  # written before every chunk was (no way to tell damage from fill)
            arrays = list(group.arrays())
    except (ValueError, OSError, KeyError, TypeError) as err:
        raise error(f"{what} {str(path)!r} is not a readable zarr store "
                    f"({type(err).__name__})") from None
    for name, arr in arrays:
        folder = path / arr.path
        sizes = {}
        for root, _, files in os.walk(folder):
            for f in files:
                full = os.path.join(root, f)
                sizes[os.path.relpath(full, folder)] = os.path.getsize(full)
        bad = 0
        for coords in itertools.product(*(range(n) for n in arr.cdata_shape)):
            key = arr.metadata.encode_chunk_key(coords).replace("/", os.sep)
            if not sizes.get(key):
                bad += 1
        if bad:
            raise error(f"{what} {str(path)!r}: variable {name!r} has {bad} missing or empty "
                        f"chunk file(s) of {arr.nchunks}; the store is damaged (its data would "
                        "read as zeros)")


def load_checked(ds: xr.Dataset, path, error: type[Exception] = RecordingError,
                 what: str = "recording") -> xr.Dataset:
    """``ds.load()`` variable by variable: a chunk that cannot be decoded (a truncated or
    corrupt file) raises ``error`` naming the file and the variable."""
    for name in list(ds.variables):
        try:
            ds.variables[name].load()
        except MemoryError:
            raise
        except Exception as err:
            raise error(f"{what} {str(path)!r}: variable {name!r} cannot be read, the file "
                        f"is damaged ({type(err).__name__})") from None
    return ds
