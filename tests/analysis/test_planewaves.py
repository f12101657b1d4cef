"""plane_waves: wave count, lengths, angles and the hexagonal/square flags on synthetic maps
with known plane-wave content (clean, noisy, with NaN bins; 11x11 to 40x40; rasterised
hexagonal worlds), and NaN/0 with a reason on maps that cannot be decomposed."""

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import (
    band_map,
    hex_grid_map,
    plane_waves,
    rate_maps,
    square_grid_map,
    synthetic_recording,
    two_wave_map,
)
from hippo_rep.analysis import planewaves as P
from hippo_rep.analysis.synthetic_recording import GRID_SPACING_RANGE

#: Recovered wavelengths are within this relative error of the truth ...
WAVELENGTH_RTOL = 0.05
#: ... and wave-vector angles within this many degrees (mod 180).
ANGLE_TOL = 3.0
#: Noise (standard deviation relative to the clean map's) and fraction of NaN bins of the
#: noisy case. (At 0.1 absolute, about 0.6 of a rectified grid's standard deviation, its
#: three waves on 11 x 11 with NaN bins are at the chance floor of a wave's share and one
#: is missed at some orientations.)
NOISE_STD, NAN_FRACTION = 0.3, 0.1

#: Map size -> plane-wave wavelength of the test patterns (bins): 2.4 to 3.6 periods per map.
WAVELENGTH = {11: 4.5, 20: 6.5, 40: 11.0}


def _hex(size, lam, o):
    # hex_grid_map takes the peak spacing; its waves point at orientation + 30 + 60 i
    return hex_grid_map(size, lam * 2 / np.sqrt(3), o - 30.0), [o, o + 60, o + 120]


def _rectified_hex(size, lam, o):
    m, truth = _hex(size, lam, o)
    return np.maximum(m - 1 / 3, 0.0), truth  # max(0, sum of the three cosines) / 4.5


#: kind -> (maker(size, wavelength, orientation) -> (map, true angles), n_waves, hexagonal,
#: square)
KINDS = {
    "band": (lambda s, lam, o: (band_map(s, lam, o), [o]), 1, False, False),
    "two waves 55": (lambda s, lam, o: (two_wave_map(s, lam, 55, o), [o, o + 55]), 2, False,
                     False),
    "two waves 65": (lambda s, lam, o: (two_wave_map(s, lam, 65, o), [o, o + 65]), 2, False,
                     False),
    "two waves 75": (lambda s, lam, o: (two_wave_map(s, lam, 75, o), [o, o + 75]), 2, False,
                     False),
    "square": (lambda s, lam, o: (square_grid_map(s, lam, o), [o, o + 90]), 2, False, True),
    "hexagonal linear": (_hex, 3, True, False),
    "hexagonal rectified": (_rectified_hex, 3, True, False),
}


def _angle_diff(a, b):
    d = np.mod(np.asarray(a) - np.asarray(b), 180.0)
    return np.minimum(d, 180.0 - d)


def _noisy(m, seed):
    rng = np.random.default_rng(seed)
    v = m.values + NOISE_STD * float(m.std()) * rng.standard_normal(m.shape)
    v[rng.random(m.shape) < NAN_FRACTION] = np.nan
    return m.copy(data=v)


@pytest.mark.parametrize("noisy", [False, True], ids=["clean", "noise+NaN"])
@pytest.mark.parametrize("size", sorted(WAVELENGTH))
@pytest.mark.parametrize("kind", list(KINDS))
def test_recovers_plane_waves(kind, size, noisy):
    maker, n_true, hexagonal, square = KINDS[kind]
    lam = WAVELENGTH[size]
    orientation = 17.0 + 7.0 * size % 40  # not aligned with the bins
    m, angles = maker(size, lam, orientation)
    if noisy:
        m = _noisy(m, seed=size)
    pw = plane_waves(m)
    assert int(pw.n_waves) == n_true
    assert bool(pw.hexagonal) is hexagonal
    assert bool(pw.square) is square
    assert pw.plane_wave_reason.item() == ""
    found_len = pw.wave_length.values[:n_true]
    found_ang = pw.wave_angle.values[:n_true]
    assert np.isnan(pw.wave_length.values[n_true:]).all()
    np.testing.assert_allclose(found_len, lam, rtol=WAVELENGTH_RTOL)
    assert ((found_ang >= 0) & (found_ang < 180)).all()
    for a in angles:  # every true wave is found
        assert _angle_diff(found_ang, a).min() <= ANGLE_TOL, (a, found_ang)
    shares = pw.wave_share.values[:n_true]
    assert (shares >= P.MIN_WAVE_SHARE).all()
    assert 0 < float(pw.plane_wave_share) <= float(pw.plane_wave_explained) + 1e-3
    # the counted waves explain most of a clean map, and the equal-amplitude waves share it
    # about equally (on 11 x 11 the waves are far from orthogonal over the map, and the
    # variance they explain together cannot be split exactly: within a factor 1.5 there)
    if not noisy:
        assert float(pw.plane_wave_share) > 0.8
        assert shares.max() / shares.min() < (1.5 if size == 11 else 1.15)


def test_rectified_band_and_square_harmonics_not_counted():
    band = np.maximum(band_map(30, 8.0, 25.0) - 0.5, 0)  # max(0, cos)
    pw = plane_waves(band)
    assert int(pw.n_waves) == 1
    assert float(pw.plane_wave_explained) > float(pw.plane_wave_share) + 0.02  # a harmonic
    sq = np.maximum(square_grid_map(30, 8.0, 10.0) - 0.5, 0)  # max(0, cos + cos)
    pw = plane_waves(sq)
    assert int(pw.n_waves) == 2 and bool(pw.square)
    np.testing.assert_allclose(pw.wave_length.values[:2], 8.0, rtol=WAVELENGTH_RTOL)


@pytest.mark.parametrize("size", [11, 20, 40])
def test_noise_has_no_waves(size):
    rng = np.random.default_rng(size)
    maps = xr.DataArray(rng.standard_normal((40, size, size)), dims=("unit", "y", "x"))
    pw = plane_waves(maps)
    assert float((pw.n_waves == 0).mean()) >= 0.9
    assert not pw.hexagonal.any()


def test_rasterised_hexagonal_world():
    # hexagonal world rasterised at 0.5 node spacings per bin: a NaN border around the nodes
    rec = synthetic_recording(world="hex:12", n_env=1, n_steps=3000, n_grid=6, n_place=2,
                              n_random=2, n_memory=4, seed=1)
    maps = rate_maps(rec, "g")
    assert float(maps.rate_map.isnull().mean()) > 0.05
    pw = plane_waves(maps.rate_map).isel(env=0)
    grid = rec.planted.values == "grid"
    assert pw.hexagonal.values[grid].all() and not pw.hexagonal.values[~grid].any()
    lo, hi = (s * np.sqrt(3) / 2 / maps.attrs["resolution"] for s in GRID_SPACING_RANGE)
    lam = pw.wave_length.values[grid]
    assert ((lam > lo * (1 - WAVELENGTH_RTOL)) & (lam < hi * (1 + WAVELENGTH_RTOL))).all()


def test_dims_coords_and_attrs():
    maps = xr.concat([band_map(15, 5.0, 10.0), hex_grid_map(15, 6.0, 0.0)], "unit")
    maps = xr.concat([maps, maps], "env").assign_coords(env=["a", "b"])
    pw = plane_waves(maps)
    assert pw.n_waves.dims == ("env", "unit") and pw.wave_length.dims == ("env", "unit", "wave")
    assert pw.sizes["wave"] == P.MAX_WAVES
    assert list(pw.env.values) == ["a", "b"]
    assert pw.n_waves.values.tolist() == [[1, 3], [1, 3]]
    assert pw.attrs["plane_wave_min_share"] == P.MIN_WAVE_SHARE
    assert pw.wave_length.attrs["units"] == "bins"


def _const(v):
    return xr.DataArray(np.full((12, 12), v), dims=("y", "x"))


@pytest.mark.parametrize(("make", "reason"), [
    (lambda: _const(3.0), "constant"),
    (lambda: _const(0.0), "constant"),
    (lambda: _const(np.nan), "all NaN"),
    (lambda: band_map(4, 2.0).copy(), "too small"),
    (lambda: band_map((4, 30), 3.0), "too small"),
    (lambda: band_map(12, 4.0).where(np.eye(12, dtype=bool)), "too few finite bins"),
])
def test_bad_maps_give_nan_with_reason(make, reason):
    pw = plane_waves(make())
    assert int(pw.n_waves) == 0 and not bool(pw.hexagonal) and not bool(pw.square)
    assert np.isnan(float(pw.plane_wave_share)) and np.isnan(pw.wave_length.values).all()
    assert pw.plane_wave_reason.item() == reason


def test_bad_maps_do_not_affect_good_ones():
    good = band_map(12, 4.0, 30.0)
    maps = xr.concat([good, _const(1.0), _const(np.nan), good], "unit")
    pw = plane_waves(maps)
    assert pw.n_waves.values.tolist() == [1, 0, 0, 1]
    assert pw.plane_wave_reason.values.tolist() == ["", "constant", "all NaN", ""]
    assert pw.wave_length.values[0, 0] == pytest.approx(4.0, rel=1e-3)


def test_not_a_map_raises():
    with pytest.raises(ValueError, match="dims"):
        plane_waves(xr.DataArray(np.zeros((5, 5)), dims=("a", "b")))
    with pytest.raises(TypeError, match="DataArray"):
        plane_waves(np.zeros((5, 5)))
