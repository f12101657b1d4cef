"""Writing an analysis dataset atomically (``.nc``, ``.zarr``) and reading it back checked."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep.datasets import CHUNKS_COMPLETE_ATTR, check_chunks, load_checked, missing_reader
from hippo_rep.defaults import NETCDF_COMPLEVEL
from hippo_rep.fileio import atomic_folder, atomic_write
from hippo_rep.schema import AnalysisError, validate_analysis

#: Output suffixes :func:`write_analysis` understands.
SUFFIXES = (".nc", ".zarr")

def _clean_attr(v: object) -> object:
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if v is None:
        return ""
    if isinstance(v, dict):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        arr = np.asarray(v)
        if arr.dtype.kind in "biuf" and arr.ndim == 1:
            return arr.astype(np.float64 if arr.dtype.kind == "f" else np.int64)
        return ", ".join(map(str, v))
    if isinstance(v, np.ndarray) and v.dtype.kind == "b":
        return v.astype(np.int8)
    return v


def _storable(ds: xr.Dataset) -> xr.Dataset:
    """A copy whose attrs (dataset, variables, coords) netCDF and zarr can store."""
    ds = ds.copy()
    ds.attrs = {k: _clean_attr(v) for k, v in ds.attrs.items()}
    for name in ds.variables:
        ds[name].attrs = {k: _clean_attr(v) for k, v in ds[name].attrs.items()}
    return ds


def _check_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise AnalysisError(f"analysis output {str(path)!r} must end in .nc or .zarr")
    return suffix


def check_output(path: str | os.PathLike, overwrite: bool = False) -> Path:
    """Refuse an output path before any work: a wrong suffix, or an existing output.

    Raises
    ------
    AnalysisError
        If ``path`` does not end in ``.nc`` or ``.zarr``.
    FileExistsError
        If ``path`` exists and ``overwrite`` is False.
    """
    path = Path(path)
    _check_suffix(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{str(path)!r} exists; pass --overwrite to replace it")
    return path


def write_analysis(ds: xr.Dataset, path: str | os.PathLike, overwrite: bool = False) -> Path:
    """Write an analysis dataset atomically to ``.nc`` (netCDF4) or ``.zarr``.

    The data are written to a temporary sibling (``.<name>.<random>.tmp``) that is renamed
    into place only when complete, so a failed write never leaves a partial file at
    ``path``.

    Parameters
    ----------
    ds : xarray.Dataset
        The analysis (computed, not lazy).
    path : str or path-like
        Output path ending in ``.nc`` or ``.zarr``.
    overwrite : bool
        Replace an existing output.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    FileExistsError
        If ``path`` exists and ``overwrite`` is False.
    AnalysisError
        For another suffix.
    """
    path = check_output(path, overwrite)
    data = _storable(ds)
    if path.suffix.lower() == ".nc":
        # lossless: rate maps and node rates are most of the file and gzip to about half
        encoding = {k: {"compression": "gzip", "compression_opts": NETCDF_COMPLEVEL}
                    for k, v in data.data_vars.items() if v.ndim and v.dtype.kind in "fiub"}
        atomic_write(path, lambda tmp: data.to_netcdf(tmp, engine="h5netcdf",
                                                      encoding=encoding))
        return path
    for k in data.variables:  # variable-length strings: zarr v3 has no spec for fixed-width
        if data[k].dtype.kind in "UT":
            data[k] = data[k].astype(object)
    data.attrs[CHUNKS_COMPLETE_ATTR] = 1  # every chunk written: see open_analysis

    def write(tmp: Path) -> None:
        with warnings.catch_warnings():
            # zarr v3: "consolidated metadata is not part of the specification" notice
            warnings.simplefilter("ignore", UserWarning)
            data.to_zarr(tmp, mode="w", consolidated=True, write_empty_chunks=True)

    atomic_folder(path, write)
    return path


def open_analysis(path: str | os.PathLike) -> xr.Dataset:
    """Open an analysis dataset written by :func:`write_analysis` (loaded into memory) and
    check it (:func:`validate_analysis`).

    Raises
    ------
    FileNotFoundError
        A missing path.
    AnalysisError
        Naming the file: not netCDF/zarr, unreadable or damaged (a missing, empty or corrupt
        zarr chunk names its variable), or not an analysis dataset.
    """
    path = Path(path)
    suffix = _check_suffix(path)
    if not path.exists():
        raise FileNotFoundError(f"analysis {str(path)!r} not found")
    if suffix == ".nc" and not path.is_file():
        raise AnalysisError(f"analysis {str(path)!r} is not a file")
    if suffix == ".zarr" and not path.is_dir():
        raise AnalysisError(f"analysis {str(path)!r} is not a zarr store (a folder)")
    try:
        if suffix == ".nc":
            opened = xr.open_dataset(path, engine="h5netcdf")
        else:
            check_chunks(path, AnalysisError, "analysis")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                opened = xr.open_zarr(path)
    except AnalysisError:
        raise
    except ImportError as err:
        raise AnalysisError(missing_reader(path, err)) from None
    except Exception as err:  # h5py/zarr raise many types for damaged files
        raise AnalysisError(f"analysis {str(path)!r} is not a readable netCDF file or zarr "
                            f"store ({type(err).__name__})") from None
    with opened as ds:
        ds = load_checked(ds, path, AnalysisError, "analysis")
    ds.attrs.pop(CHUNKS_COMPLETE_ATTR, None)
    for k in list(ds.variables):
        if ds[k].dtype.kind in "OT":  # variable-length strings back to numpy str
            ds[k] = ds[k].copy(data=np.array(ds[k].values.tolist(), dtype=str))
    validate_analysis(ds, path)
    return ds
