"""Circular arenas (:mod:`hippo_rep.analysis.arena`) on maps of known truth: a disc's mask
agrees with opexebo's ``circular_mask``; a hexagonal grid, a place field and their spatial
information survive the bins outside the disc being NaN; the border score is NaN there, with
its reason, as opexebo has no circular border score either."""

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import (
    border_map,
    border_score,
    grid_scores,
    hex_grid_map,
    mask_outside_disc,
    place_field_map,
    place_fields,
    plane_waves,
    rate_maps_from_positions,
    spatial_information,
)
from hippo_rep.analysis.arena import (
    CIRCLE,
    CIRCLE_BORDER_REASON,
    check_arena_shape,
    disc_of_box,
    in_disc,
)
from hippo_rep.analysis.classify import GRID_MIN_SCORE
from hippo_rep.defaults import GRID_THRESHOLD

N = 40  # bins a side of the maps


def _with_coords(m: xr.DataArray) -> xr.DataArray:
    """A map of N x N unit bins over [0, N]^2 (bin centres as coords)."""
    c = np.arange(m.sizes["x"]) + 0.5
    return m.assign_coords(x=c, y=np.arange(m.sizes["y"]) + 0.5)


def _disc(m: xr.DataArray) -> xr.DataArray:
    return mask_outside_disc(_with_coords(m), (N / 2, N / 2), N / 2)


def test_the_disc_is_opexebos_centre_in_disc_rule():
    opexebo = pytest.importorskip("opexebo")
    edges = np.arange(N + 1, dtype=float)
    want, _, _ = opexebo.general.circular_mask([edges, edges], N, origin=(N / 2, N / 2))
    got = _disc(xr.DataArray(np.ones((N, N)), dims=("y", "x")))
    np.testing.assert_array_equal(np.isfinite(got.values), want)
    assert got.attrs["arena_shape"] == CIRCLE and got.attrs["disc"].tolist() == [20, 20, 20]
    # about pi/4 of the square
    assert abs(np.isfinite(got.values).mean() - np.pi / 4) < 0.01


def test_disc_helpers_and_bad_input():
    assert disc_of_box([0, 100, -50, 50]) == (50.0, 0.0, 50.0)
    with pytest.raises(ValueError, match="square"):
        disc_of_box([0, 100, 0, 80])
    assert in_disc([0, 1, np.nan], [0, 0, 0], 0, 0, 1).tolist() == [True, True, False]
    with pytest.raises(ValueError, match="arena_shape"):
        check_arena_shape("ellipse")
    m = xr.DataArray(np.ones((N, N)), dims=("y", "x"))
    with pytest.raises(ValueError, match="maps need coord"):
        mask_outside_disc(m, (0, 0), 1)
    with pytest.raises(ValueError, match="radius"):
        mask_outside_disc(_with_coords(m), (0, 0), 0)


@pytest.mark.parametrize(("spacing", "orientation"), [(12.0, 7.0), (16.0, 23.0)])
def test_a_hexagonal_grid_in_a_disc_is_still_hexagonal(spacing, orientation):
    """The autocorrelogram excludes NaN bins from every lag's overlap, so the ~21% of the
    square outside the disc changes the gridness by little; the plane waves still count a
    hexagonal triad."""
    square = hex_grid_map(N, spacing, orientation)
    disc = _disc(square)
    for method in ("deepmind", "bnt"):
        a, b = grid_scores(square, method=method), grid_scores(disc, method=method)
        assert float(b.gridness_60) > max(GRID_THRESHOLD, GRID_MIN_SCORE) + 0.5, method
        assert abs(float(b.gridness_60) - float(a.gridness_60)) < 0.05, method
        assert float(b.spacing) == pytest.approx(spacing, rel=0.02)
        assert abs((float(b.orientation) - orientation + 30) % 60 - 30) < 1
        assert str(b.nan_reason.values) == ""
    w = plane_waves(disc)
    assert bool(w.hexagonal) and int(w.n_waves) == 3


def test_a_place_field_in_a_disc_is_found_and_informative():
    disc = _disc(place_field_map(N, [(14, 26)], 3.0))  # centre (x, y), bins
    f = place_fields(disc)
    assert int(f.n_fields) == 1
    assert float(f.field_centroid_y[0]) == pytest.approx(26, abs=0.5)
    assert float(f.field_centroid_x[0]) == pytest.approx(14, abs=0.5)
    # spatial information over the disc's bins (uniform occupancy there, none outside)
    occ = xr.where(np.isfinite(disc), 1.0, 0.0)
    si = float(spatial_information(disc, occ))
    flat = float(spatial_information(xr.where(np.isfinite(disc), 1.0, np.nan), occ))
    assert si > 3 and flat == pytest.approx(0.0, abs=1e-12)


def test_rate_maps_of_positions_in_a_disc_masked_outside_it():
    """rate_maps_from_positions of a walk in a disc, masked: NaN exactly outside the disc,
    the rates inside untouched."""
    rng = np.random.default_rng(0)
    r = N / 2 * np.sqrt(rng.random(200_000))
    a = rng.uniform(0, 2 * np.pi, r.size)
    x = xr.DataArray(N / 2 + r * np.cos(a), dims="time")
    y = xr.DataArray(N / 2 + r * np.sin(a), dims="time")
    act = xr.DataArray(np.ones((r.size, 1)), dims=("time", "unit"))
    maps = rate_maps_from_positions(act, x, y, N, range=((0, N), (0, N)))
    masked = mask_outside_disc(maps.rate_map, (N / 2, N / 2), N / 2)
    inside = np.isfinite(_disc(xr.DataArray(np.ones((N, N)), dims=("y", "x"))).values)
    assert (np.isfinite(masked.values[0]) == inside).all()  # visited corners of the
    assert np.isfinite(maps.rate_map.values[0][~inside]).any()  # edge bins are masked
    np.testing.assert_array_equal(masked.values[0][inside], maps.rate_map.values[0][inside])


def test_the_border_score_is_nan_on_a_circle_with_its_reason():
    b = border_score(border_map(N, "x_min"), arena_shape=CIRCLE)
    assert np.isnan(float(b.border_score)) and np.isnan(float(b.border_coverage))
    assert str(b.border_wall.values) == ""
    assert b.attrs["border_nan_reason"] == CIRCLE_BORDER_REASON
    assert b.attrs["border_arena_shape"] == CIRCLE
    with pytest.raises(ValueError, match="arena_shape"):
        border_score(border_map(N, "x_min"), arena_shape="disc")


def test_opexebo_has_no_circular_border_coverage_either():
    """The reason given: opexebo 0.7.2 raises for a circle (its code says so)."""
    opexebo = pytest.importorskip("opexebo")
    field = {"field_map": np.zeros((N, N))}
    field["field_map"][:, :2] = 1
    with pytest.raises(NotImplementedError):
        opexebo.analysis.border_coverage([field], "circle")
