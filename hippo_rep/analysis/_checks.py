"""Input checks and small array helpers shared by the analysis modules (private)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np
import xarray as xr

#: Dims every rate map ends with: rows are y, columns are x (see the package conventions).
MAP_DIMS: tuple[str, str] = ("y", "x")

#: Maps are processed in blocks of this many maps, to bound temporary memory (a block of
#: 256 maps of 40 x 40 bins needs roughly 100 MB of temporaries in the grid-score code).
BLOCK_MAPS = 256


def check_dataarray(obj: object, name: str) -> xr.DataArray:
    """Raise ``TypeError`` unless ``obj`` is an :class:`xarray.DataArray`."""
    if not isinstance(obj, xr.DataArray):
        raise TypeError(f"{name} must be an xarray.DataArray; got {type(obj).__name__}")
    return obj


def check_maps(maps: object, name: str = "maps", min_size: int = 1) -> xr.DataArray:
    """``maps`` as float64 (a copy only when converted) if it is a real numeric DataArray
    whose last two dims are ("y", "x") with at least ``min_size`` bins each; else a
    ``TypeError`` (not a DataArray) or ``ValueError`` naming ``name``."""
    maps = check_dataarray(maps, name)
    if maps.ndim < 2 or tuple(maps.dims[-2:]) != MAP_DIMS:
        raise ValueError(
            f"{name} must have dims {MAP_DIMS!r} as its last two dims; got {tuple(maps.dims)!r}"
            " (use .transpose(..., 'y', 'x'))"
        )
    if not (np.issubdtype(maps.dtype, np.number) or maps.dtype == bool):
        raise ValueError(f"{name} must hold numbers; got dtype {maps.dtype}")
    if np.issubdtype(maps.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real-valued; got dtype {maps.dtype}")
    ny, nx = maps.sizes["y"], maps.sizes["x"]
    if ny < min_size or nx < min_size:
        raise ValueError(
            f"{name} must have at least {min_size} bins along 'y' and 'x'; got y={ny}, x={nx}"
        )
    if maps.dtype != np.float64:
        maps = maps.astype(np.float64)
    return maps


def check_positive_number(value: object, name: str, allow_zero: bool = False) -> float:
    """Return ``value`` as float, raising ``ValueError`` unless it is finite and > 0 (or >= 0)."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number; got {value!r}") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}; got {value!r}")
    return v


def check_choice(value: object, name: str, choices: Sequence[str]) -> str:
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)!r}; got {value!r}")
    return str(value)


def blockwise(
    func: Callable[..., tuple[np.ndarray, ...]],
    arr: np.ndarray,
    n_core: int,
    block: int = BLOCK_MAPS,
) -> tuple[np.ndarray, ...]:
    """Apply ``func`` to blocks of maps.

    ``arr`` has shape ``lead + core`` with ``len(core) == n_core``; ``func`` takes an array of
    shape ``(B,) + core`` and returns a tuple of arrays whose first axis has length B. The
    results are concatenated and reshaped to ``lead + rest``.
    """
    lead = arr.shape[: arr.ndim - n_core]
    core = arr.shape[arr.ndim - n_core :]
    flat = arr.reshape((-1,) + core)
    n = flat.shape[0]
    if n == 0:
        parts = func(np.zeros((1,) + core))
        return tuple(np.zeros(lead + p.shape[1:], dtype=p.dtype) for p in parts)
    outs: list[tuple[np.ndarray, ...]] = [
        func(flat[start : start + block]) for start in range(0, n, block)
    ]
    return tuple(
        np.concatenate([o[i] for o in outs], axis=0).reshape(lead + outs[0][i].shape[1:])
        for i in range(len(outs[0]))
    )


def leading_coords(da: xr.DataArray, drop_dims: Sequence[Hashable]) -> dict[Hashable, xr.Variable]:
    """Coords of ``da`` that do not depend on any of ``drop_dims``."""
    drop = set(drop_dims)
    return {k: v.variable for k, v in da.coords.items() if not drop.intersection(v.dims)}
