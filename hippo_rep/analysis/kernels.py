"""Analysis kernels: numpy functions over stacks of maps with their outputs declared.

A :class:`Kernel` is a pure function of a ``(B, ny, nx)`` block of maps returning one
``(B, ...)`` array per declared :class:`Output` (name, per-map dims, dtype, attrs, and the
labels of an int code), plus the method's attrs. The public score functions
(:func:`~hippo_rep.analysis.grid_scores`, :func:`~hippo_rep.analysis.band_scores`,
:func:`~hippo_rep.analysis.place_fields`, :func:`~hippo_rep.analysis.place_score`,
:func:`~hippo_rep.analysis.plane_waves`) are :meth:`Kernel.apply` of their kernel, and
:func:`~hippo_rep.analysis.analyse` runs the same kernels on numpy (:meth:`Kernel.array`)
inside its dask tasks and reads their declarations for its variables and attrs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ._checks import MAP_DIMS, blockwise, check_maps


@dataclass(frozen=True)
class Output:
    """One output of a kernel: ``name``, per-map ``dims`` (after the maps' leading dims),
    ``dtype``, ``attrs``; ``labels``: the output is an int code, shown as ``labels[code]``."""

    name: str
    dims: tuple[str, ...] = ()
    dtype: type = np.float64
    attrs: dict = field(default_factory=dict)
    labels: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Kernel:
    """``fn``: ``(B, ny, nx)`` float64 maps -> one ``(B, *output.dims)`` array per output.

    ``sizes``: the lengths of the outputs' dims other than ``y``/``x`` (coords 0..n-1);
    ``attrs``: the method and its settings.
    """

    fn: Callable[[np.ndarray], tuple[np.ndarray, ...]]
    outputs: tuple[Output, ...]
    attrs: dict = field(default_factory=dict)
    sizes: dict = field(default_factory=dict)

    def array(self, maps: np.ndarray) -> dict[str, np.ndarray]:
        """The outputs of ``(..., ny, nx)`` maps as ``{name: (..., *dims)}`` (codes as ints)."""
        res = blockwise(self.fn, np.asarray(maps, dtype=np.float64), 2)
        return dict(zip((o.name for o in self.outputs), res, strict=True))

    def apply(self, maps: xr.DataArray) -> xr.Dataset:
        """The outputs of ``maps`` (..., y, x) as a Dataset with the leading dims and coords;
        dask-backed maps stay lazy (the map dims must be one chunk)."""
        maps = check_maps(maps)
        one = len(self.outputs) == 1  # apply_ufunc wants a bare array for one output
        outs = xr.apply_ufunc(
            lambda a: blockwise(self.fn, a, 2)[0] if one else blockwise(self.fn, a, 2),
            maps,
            input_core_dims=[list(MAP_DIMS)],
            output_core_dims=[list(o.dims) for o in self.outputs],
            dask="parallelized",
            output_dtypes=[o.dtype for o in self.outputs],
            dask_gufunc_kwargs={"output_sizes": dict(self.sizes)},
        )
        outs = (outs,) if one else outs
        ds = xr.Dataset()
        for o, da in zip(self.outputs, outs, strict=True):
            if o.labels is not None:
                labels = np.asarray(o.labels)
                da = xr.apply_ufunc(lambda c, lab=labels: lab[c], da, dask="parallelized",
                                    output_dtypes=[labels.dtype])
            da.attrs = dict(o.attrs)  # the declared attrs only, none of the maps'
            ds[o.name] = da
        return ds.assign_coords({d: np.arange(n) for d, n in self.sizes.items()}).assign_attrs(
            self.attrs)
