"""What a hexagonal world's rasterisation (a NaN border) does to grid and place scores.

A hex world's nodes rasterised on a square bin grid leave a zig-zag border of unvisited
(NaN) bins. On a synthetic hexagonal recording with planted grids (spacing 4-6 node
spacings), place fields and random units, the scores are compared with the known answer and
with the same maps whose border bins are filled in (nearest finite bin): the NaN border
must change them little.
"""

import numpy as np
import pytest
from scipy import ndimage

from hippo_rep.analysis import grid_scores, place_fields, rate_maps, synthetic_recording
from hippo_rep.analysis.synthetic_recording import GRID_SPACING_RANGE


@pytest.fixture(scope="module")
def hex_maps():
    rec = synthetic_recording(world="hex:12", n_env=2, n_steps=4000, n_grid=6, n_place=4,
                              n_random=2, n_memory=20, seed=2)
    m = rate_maps(rec, "g")
    return m["rate_map"], float(m.attrs["resolution"]), rec["planted"].values


def _filled(rm):
    vals = rm.values.copy()
    for idx in np.ndindex(vals.shape[:-2]):
        a = vals[idx]
        nan = np.isnan(a)
        _, (iy, ix) = ndimage.distance_transform_edt(nan, return_indices=True)
        vals[idx] = a[iy, ix]
    return rm.copy(data=vals)


def test_hex_raster_has_a_nan_border(hex_maps):
    rm, _, _ = hex_maps
    nan = np.isnan(rm.values[0, 0])
    assert 0.03 < nan.mean() < 0.2
    inner = nan[2:-2, 2:-2]
    assert not inner.any()  # only the border is unvisited


@pytest.mark.parametrize("method", ["deepmind", "bnt"])
def test_planted_grids_keep_their_score_and_spacing(hex_maps, method):
    rm, res, planted = hex_maps
    grid = rm.isel(unit=np.flatnonzero(planted == "grid"))
    ds = grid_scores(grid, method=method)
    filled = grid_scores(_filled(grid), method=method)
    assert (ds.gridness_60 > 1.0).all()
    spacing_nodes = ds.spacing * res
    lo, hi = GRID_SPACING_RANGE
    assert ((spacing_nodes > 0.95 * lo) & (spacing_nodes < 1.05 * hi)).all()
    # what the border does: little, against the same maps without it
    assert float(np.abs(ds.gridness_60 - filled.gridness_60).max()) < 0.15
    assert float(np.abs(ds.spacing - filled.spacing).max()) < 0.3
    # random units are not grids
    rand = grid_scores(rm.isel(unit=np.flatnonzero(planted == "random")), method=method)
    assert float(rand.gridness_60.max()) < 0.5


def test_place_units_have_one_field_despite_the_border(hex_maps):
    rm, _, planted = hex_maps
    place = rm.isel(unit=np.flatnonzero(planted == "place"))
    f = place_fields(place)
    assert (f.n_fields == 1).all()
    ff = place_fields(_filled(place))
    np.testing.assert_array_equal(f.n_fields.values, ff.n_fields.values)
    np.testing.assert_allclose(f.field_centroid_x.isel(field=0), ff.field_centroid_x.isel(
        field=0), atol=0.5)
    np.testing.assert_allclose(f.field_centroid_y.isel(field=0), ff.field_centroid_y.isel(
        field=0), atol=0.5)
