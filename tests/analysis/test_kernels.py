"""Kernels: one numpy function with declared outputs, run eagerly, on dask and on numpy."""

import numpy as np
import xarray as xr

from hippo_rep.analysis.kernels import Kernel, Output


def _fn(m):  # (B, ny, nx) -> peak, "empty" code, first row's first two bins
    empty = np.isnan(m).all(axis=(1, 2)).astype(np.int64)
    return np.nan_to_num(m, nan=-1.0).max(axis=(1, 2)), empty, m[:, 0, :2]


KERNEL = Kernel(
    _fn,
    (Output("peak", attrs={"units": "1"}), Output("code", dtype=np.int64, labels=("", "empty")),
     Output("first", ("pair",))),
    {"method": "test"},
    sizes={"pair": 2},
)


def test_apply_declares_outputs_and_equals_the_numpy_run():
    maps = np.arange(2 * 3 * 4 * 5, dtype=float).reshape(2, 3, 4, 5)
    maps[1, 2] = np.nan
    da = xr.DataArray(maps, dims=("env", "unit", "y", "x"), coords={"env": [10, 20]},
                      attrs={"units": "Hz", "smooth_sigma_bins": 2.0})  # not the outputs'
    ds = KERNEL.apply(da)
    assert ds.peak.dims == ("env", "unit") and ds.first.dims == ("env", "unit", "pair")
    np.testing.assert_array_equal(ds.peak.values[0], maps[0].max(axis=(1, 2)))
    assert ds.peak.values[1, 2] == -1.0
    assert ds.code.values.tolist() == [["", "", ""], ["", "", "empty"]]
    np.testing.assert_array_equal(ds.first.values[0, 1], maps[0, 1, 0, :2])
    assert ds.pair.values.tolist() == [0, 1] and ds.env.values.tolist() == [10, 20]
    assert ds.attrs == {"method": "test"} and ds.peak.attrs == {"units": "1"}
    assert ds.code.attrs == {} and ds.first.attrs == {}
    arr = KERNEL.array(maps)
    assert arr["code"].tolist() == [[0, 0, 0], [0, 0, 1]]
    np.testing.assert_array_equal(arr["first"], ds.first.values)
    lazy = KERNEL.apply(da.chunk({"unit": 1}))
    assert lazy.peak.chunks is not None  # stays lazy
    xr.testing.assert_identical(lazy.compute(), ds)
