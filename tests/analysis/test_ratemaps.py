import numpy as np
import pytest
import xarray as xr
from scipy import ndimage

from hippo_rep.analysis import rate_maps_from_nodes, rate_maps_from_positions, smooth

from .helpers import as_map, with_holes

# ------------------------------------------------------------------ continuous positions


def grid_walk(ny, nx, repeats, rng):
    """Positions at random points inside every bin of a [0, nx) x [0, ny) arena, shuffled."""
    iy, ix = np.divmod(np.arange(ny * nx).repeat(repeats), nx)
    order = rng.permutation(iy.size)
    iy, ix = iy[order], ix[order]
    return ix + rng.random(ix.size), iy + rng.random(iy.size), iy, ix


@pytest.mark.parametrize(("ny", "nx"), [(4, 4), (3, 6), (7, 5)])
def test_known_field_recovered_exactly(ny, nx):
    rng = np.random.default_rng(0)
    x, y, iy, ix = grid_walk(ny, nx, 3, rng)
    truth = rng.random((2, ny, nx))  # two units, one value per bin
    act = xr.DataArray(truth[:, iy, ix].T, dims=("time", "unit"), coords={"unit": ["a", "b"]})
    ds = rate_maps_from_positions(
        act,
        xr.DataArray(x, dims="time"),
        xr.DataArray(y, dims="time"),
        (ny, nx),
        range=((0, ny), (0, nx)),
    )
    assert ds.rate_map.dims == ("unit", "y", "x")
    assert ds.occupancy.dims == ("y", "x")
    np.testing.assert_allclose(ds.rate_map.values, truth)
    np.testing.assert_array_equal(ds.occupancy.values, np.full((ny, nx), 3.0))
    np.testing.assert_allclose(ds.x.values, np.arange(nx) + 0.5)
    np.testing.assert_allclose(ds.y.values, np.arange(ny) + 0.5)
    assert list(ds.unit.values) == ["a", "b"]
    np.testing.assert_allclose(ds.attrs["x_edges"], np.arange(nx + 1))


def test_unvisited_bins_are_nan_not_zero():
    x = xr.DataArray([0.1, 0.2, 2.5], dims="time")
    y = xr.DataArray([0.1, 0.3, 2.5], dims="time")
    act = xr.DataArray([[1.0], [3.0], [5.0]], dims=("time", "unit"))
    ds = rate_maps_from_positions(act, x, y, 3, range=((0, 3), (0, 3)))
    expected = np.full((3, 3), np.nan)
    expected[0, 0], expected[2, 2] = 2.0, 5.0
    np.testing.assert_array_equal(ds.rate_map.values[0], expected)
    assert ds.occupancy.values.sum() == 3
    assert ds.occupancy.values[1, 1] == 0


def test_rows_are_y_and_edges_included():
    # one sample at x = x_max (goes to the last column), y in the first row
    x = xr.DataArray([4.0, 0.0, 5.0], dims="time")
    y = xr.DataArray([0.0, 1.9, -1.0], dims="time")  # the third sample is outside the range
    act = xr.DataArray([[1.0], [2.0], [9.0]], dims=("time", "unit"))
    ds = rate_maps_from_positions(act, x, y, (2, 4), range=((0, 2), (0, 4)))
    assert ds.rate_map.shape == (1, 2, 4)
    assert ds.rate_map.values[0, 0, 3] == 1.0
    assert ds.rate_map.values[0, 1, 0] == 2.0
    assert ds.occupancy.values.sum() == 2


def test_leading_dims_and_nan_handling():
    rng = np.random.default_rng(1)
    t = 400
    x = xr.DataArray(rng.random((3, t)) * 4, dims=("env", "time"), coords={"env": [7, 8, 9]})
    y = xr.DataArray(rng.random((3, t)) * 4, dims=("env", "time"), coords={"env": [7, 8, 9]})
    x[1, :10] = np.nan  # dropped samples
    vals = rng.random((3, t, 2))
    vals[2, :50, 1] = np.nan  # NaN activity: skipped for that unit only
    act = xr.DataArray(vals, dims=("env", "time", "g_unit"), coords={"env": [7, 8, 9]})
    ds = rate_maps_from_positions(act, x, y, 4, range=((0, 4), (0, 4)))
    assert ds.rate_map.dims == ("env", "g_unit", "y", "x")
    assert ds.occupancy.dims == ("env", "y", "x")
    np.testing.assert_array_equal(ds.env, [7, 8, 9])
    for e in range(3):
        single = rate_maps_from_positions(act[e], x[e], y[e], 4, range=((0, 4), (0, 4)))
        xr.testing.assert_allclose(ds.rate_map[e], single.rate_map)
        xr.testing.assert_allclose(ds.occupancy[e], single.occupancy)
    assert ds.occupancy[1].sum() == t - 10
    # unit 1 of env 2: mean over the finite samples per bin only
    xs, ys = x[2].values, y[2].values
    col, row = np.floor(xs).astype(int), np.floor(ys).astype(int)
    sel = (row == 1) & (col == 2) & np.isfinite(vals[2, :, 1])
    assert float(ds.rate_map[2, 1, 1, 2]) == pytest.approx(vals[2, sel, 1].mean())


def test_default_range_and_smoothing_keeps_nan():
    rng = np.random.default_rng(2)
    x = xr.DataArray(rng.random(500) * 10 + 5, dims="time")
    y = xr.DataArray(rng.random(500) * 10 - 5, dims="time")
    x[x > 12] = np.nan
    act = xr.DataArray(np.ones((500, 1)), dims=("time", "unit"))
    raw = rate_maps_from_positions(act, x, y, 8)
    sm = rate_maps_from_positions(act, x, y, 8, smooth_sigma=1.5)
    assert raw.attrs["x_edges"][0] == pytest.approx(float(x.min()))
    np.testing.assert_array_equal(np.isnan(raw.rate_map), np.isnan(sm.rate_map))
    np.testing.assert_allclose(sm.rate_map.values[np.isfinite(sm.rate_map.values)], 1.0)
    assert sm.rate_map.attrs["smooth_sigma_bins"] == 1.5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bins": 0}, "bins"),
        ({"bins": (2, 3, 4)}, "bins"),
        ({"range": ((0, 1),)}, "range"),
        ({"range": ((1, 0), (0, 1))}, "range"),
        ({"smooth_sigma": -1.0}, "smooth_sigma"),
        ({"time_dim": "t"}, "'t' dim"),
    ],
)
def test_positions_bad_arguments(kwargs, match):
    act = xr.DataArray(np.ones((5, 2)), dims=("time", "unit"))
    pos = xr.DataArray(np.arange(5.0), dims="time")
    args = {"bins": 3, **kwargs}
    with pytest.raises(ValueError, match=match):
        rate_maps_from_positions(act, pos, pos, **args)


def test_positions_bad_dims():
    act = xr.DataArray(np.ones((5, 2)), dims=("time", "unit"))
    with pytest.raises(ValueError, match="that activity lacks"):
        rate_maps_from_positions(
            act,
            xr.DataArray(np.ones((2, 5)), dims=("env", "time")),
            xr.DataArray(np.ones(5), dims="time"),
            3,
        )
    with pytest.raises(ValueError, match="disagree on 'time'"):
        short = xr.DataArray(np.ones(4), dims="time")
        rate_maps_from_positions(act.isel(time=slice(0, 5)), short, short, 3)
    with pytest.raises(TypeError, match="activity must be an xarray.DataArray"):
        rate_maps_from_positions(np.ones((5, 2)), act, act, 3)


# ------------------------------------------------------------------ smoothing


def direct_normalised_smooth(a, sigma, w=None):
    valid = np.isfinite(a)
    w = valid.astype(float) if w is None else np.where(valid, w, 0.0)
    num = ndimage.gaussian_filter(np.where(valid, a, 0) * w, sigma, mode="constant")
    den = ndimage.gaussian_filter(w, sigma, mode="constant")
    out = num / den
    out[~valid | (w == 0)] = np.nan
    return out


@pytest.mark.parametrize("sigma", [0.7, 1.5, 3.0])
@pytest.mark.parametrize("holes", ["none", "random10", "circle"])
def test_smooth_matches_direct_normalised_convolution(sigma, holes):
    rng = np.random.default_rng(3)
    base = as_map(rng.random((3, 12, 14)))
    maps = xr.concat([with_holes(base[i], holes, rng) for i in range(3)], dim="d0")
    out = smooth(maps, sigma)
    assert out.dims == maps.dims
    for i in range(3):
        np.testing.assert_allclose(
            out.values[i], direct_normalised_smooth(maps.values[i], sigma), equal_nan=True
        )


def test_smooth_keeps_constants_nan_and_coords():
    m = xr.DataArray(
        np.full((6, 7), 2.5), dims=("y", "x"), coords={"y": np.arange(6) * 2.0, "x": np.arange(7)}
    )
    m[2, 3] = np.nan
    out = smooth(m, 2.0)
    assert np.isnan(out[2, 3])
    np.testing.assert_allclose(out.values[np.isfinite(out.values)], 2.5)
    xr.testing.assert_identical(out.y, m.y)
    xr.testing.assert_allclose(smooth(m, 0), m)


def test_smooth_with_weights_is_weighted_normalised_convolution():
    rng = np.random.default_rng(4)
    rates = xr.DataArray(rng.random((2, 8, 8)), dims=("unit", "y", "x"))
    occ = xr.DataArray(rng.integers(0, 5, (8, 8)).astype(float), dims=("y", "x"))
    out = smooth(rates, 1.2, weights=occ)
    for u in range(2):
        ref = direct_normalised_smooth(rates.values[u], 1.2, occ.values)
        np.testing.assert_allclose(out.values[u], ref, equal_nan=True)
    assert np.isnan(out.values[:, occ.values == 0]).all()


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((as_map(np.ones((4, 4))), -1.0), "sigma"),
        ((xr.DataArray(np.ones((4, 4)), dims=("y", "z")), 1.0), "last two dims"),
    ],
)
def test_smooth_bad_inputs(args, match):
    with pytest.raises(ValueError, match=match):
        smooth(*args)


def test_smooth_bad_weights():
    m = as_map(np.ones((4, 4)))
    with pytest.raises(ValueError, match="non-negative"):
        smooth(m, 1.0, weights=as_map(-np.ones((4, 4))))


# ------------------------------------------------------------------ graph nodes


def hex_nodes(rows, cols):
    r, c = np.divmod(np.arange(rows * cols), cols)
    return c + 0.5 * (r % 2), r * np.sqrt(3) / 2


def node_activity(n_node, t, rng, leading=(), never=()):
    node = rng.integers(0, n_node, leading + (t,))
    for n in never:  # nodes never visited
        node[node == n] = (n + 1) % n_node
    truth = rng.random((2, n_node))
    act = np.moveaxis(truth[:, node], 0, -1)  # (..., time, unit)
    dims = tuple(f"l{i}" for i in range(len(leading)))
    return (
        xr.DataArray(act, dims=dims + ("time", "unit")),
        xr.DataArray(node, dims=dims + ("time",)),
        truth,
    )


def test_square_lattice_one_bin_per_node():
    rng = np.random.default_rng(5)
    side = 5
    nx_, ny_ = np.tile(np.arange(side), side), np.repeat(np.arange(side), side)
    act, node, truth = node_activity(side * side, 600, rng, never=(7,))
    ds = rate_maps_from_nodes(act, node, nx_, ny_)
    assert ds.attrs["one_bin_per_node"] == 1
    assert ds.rate_map.shape == (2, side, side)
    expected = truth.reshape(2, side, side).copy()
    expected[:, 1, 2] = np.nan  # node 7 = (x 2, y 1)
    np.testing.assert_allclose(ds.rate_map.values, expected)
    assert ds.occupancy.values[1, 2] == 0
    np.testing.assert_array_equal(ds.node_map.values.ravel(), np.arange(side * side))


def test_square_lattice_with_a_hole_and_offset():
    nx_ = np.array([2, 3, 4, 2, 4, 2, 3, 4], dtype=float)  # a 3 x 3 ring, centre missing
    ny_ = np.array([1, 1, 1, 2, 2, 3, 3, 3], dtype=float)
    act = xr.DataArray(np.arange(8.0)[:, None], dims=("time", "unit"))
    node = xr.DataArray(np.arange(8), dims="time")
    ds = rate_maps_from_nodes(act, node, nx_, ny_)
    np.testing.assert_array_equal(ds.x.values, [2, 3, 4])
    np.testing.assert_array_equal(ds.y.values, [1, 2, 3])
    assert np.isnan(ds.rate_map.values[0, 1, 1])
    assert ds.node_map.values[1, 1] == -1


def test_hexagonal_lattice_rasterised_at_true_geometry():
    rng = np.random.default_rng(6)
    rows, cols = 6, 7
    nx_, ny_ = hex_nodes(rows, cols)
    act, node, truth = node_activity(rows * cols, 2000, rng, leading=(2,))
    ds = rate_maps_from_nodes(act, node, nx_, ny_)
    assert ds.attrs["one_bin_per_node"] == 0 and ds.attrs["resolution"] == 0.5
    assert ds.rate_map.dims == ("l0", "unit", "y", "x")
    gx, gy = np.meshgrid(ds.x.values, ds.y.values)
    d = np.hypot(gx[..., None] - nx_, gy[..., None] - ny_)
    dmin = d.min(-1)
    shown = ds.node_map.values >= 0
    np.testing.assert_array_equal(shown, dmin <= 0.6 + 1e-9)
    expected_map = ds.node_map.values
    # each bin shows a nearest node (ties between equidistant nodes broken either way)
    assigned = np.take_along_axis(d, np.where(shown, expected_map, 0)[..., None], -1)[..., 0]
    np.testing.assert_allclose(assigned[shown], dmin[shown], atol=1e-9)
    for e in range(2):
        np.testing.assert_allclose(ds.rate_map.values[e][:, shown], truth[:, expected_map[shown]])
    assert np.isnan(ds.rate_map.values[:, :, ~shown]).all()
    # every node shows up in ~3.5 bins (1 / (0.5^2) x hexagon area sqrt(3)/2), interior ones
    counts = np.bincount(expected_map[shown], minlength=rows * cols)
    assert counts.min() >= 2 and np.median(counts) in (3, 4)
    np.testing.assert_allclose(ds.node_rate.values[0], truth)


def test_hexagonal_hole_leaves_nan_at_the_missing_node():
    nx_, ny_ = hex_nodes(5, 5)
    keep = np.ones(25, dtype=bool)
    keep[12] = False  # remove the centre node
    hole_x, hole_y = nx_[12], ny_[12]
    act = xr.DataArray(np.ones((24, 1)), dims=("time", "unit"))
    node = xr.DataArray(np.arange(24), dims="time")
    ds = rate_maps_from_nodes(act, node, nx_[keep], ny_[keep])
    at = ds.rate_map.sel(x=hole_x, y=hole_y, method="nearest")
    assert np.isnan(at.values).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"node_x": [0.0, 1.0]}, "same length"),
        ({"node": xr.DataArray([0, 9], dims="time")}, "only 3 nodes"),
        ({"node_x": [0.0, 0.0, 1.0], "node_y": [0.0, 0.0, 1.0]}, "share the same"),
        ({"node_x": [0.0, 0.5, 1.0], "node_y": [0.0, 0.0, 0.0]}, None),
        ({"resolution": 0}, "resolution"),
        ({"radius": -1}, "radius"),
        ({"node": xr.DataArray([0.5, 1.0], dims="time")}, "integer"),
    ],
)
def test_nodes_bad_arguments(kwargs, match):
    args = {
        "activity": xr.DataArray(np.ones((2, 1)), dims=("time", "unit")),
        "node": xr.DataArray([0, 1], dims="time"),
        "node_x": [0.0, 1.0, 2.0],
        "node_y": [0.0, 0.0, 0.0],
        **kwargs,
    }
    if match is None:  # valid: non-integer coordinates are rasterised
        assert rate_maps_from_nodes(**args).attrs["one_bin_per_node"] == 0
        return
    with pytest.raises(ValueError, match=match):
        rate_maps_from_nodes(**args)


def test_negative_or_nan_node_index_is_skipped():
    act = xr.DataArray([[1.0], [5.0], [3.0]], dims=("time", "unit"))
    node = xr.DataArray([0.0, np.nan, -1.0], dims="time")
    ds = rate_maps_from_nodes(act, node, [0.0, 1.0], [0.0, 0.0])
    np.testing.assert_array_equal(ds.node_occupancy.values, [1, 0])
    assert float(ds.rate_map[0, 0, 0]) == 1.0
    assert np.isnan(ds.rate_map[0, 0, 1])


def test_activity_without_unit_dim():
    x = xr.DataArray([0.5, 1.5, 1.6], dims="time")
    act = xr.DataArray([1.0, 2.0, 4.0], dims="time")
    ds = rate_maps_from_positions(act, x, x, 2, range=((0, 2), (0, 2)))
    assert ds.rate_map.dims == ("y", "x")
    np.testing.assert_array_equal(ds.rate_map.values, [[1.0, np.nan], [np.nan, 3.0]])
    dn = rate_maps_from_nodes(act, xr.DataArray([0, 1, 1], dims="time"), [0, 1], [0, 0])
    np.testing.assert_array_equal(dn.rate_map.values, [[1.0, 3.0]])
