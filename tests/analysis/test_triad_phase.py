"""plane_waves' lattice rules on synthetic maps with known phases, spacing, orientation and
shear: the triad phase psi, lattice of peaks / troughs, the non-negative and signed rules of
``hexagonal``, NaN psi with a reason, the reported angle deviation and length ratio, and the
single-field rule (here and in ``classify``)."""

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import classify, hex_grid_map, place_field_map, plane_waves
from hippo_rep.analysis import planewaves as P
from hippo_rep.analysis.synthetic import band_map
from hippo_rep.schema import IS_BAND, IS_SQUARE, IS_TWO_WAVE

#: Map size and plane-wave wavelength of the test patterns, bins.
SIZE, WAVELENGTH = 40, 9.0


def _waves(k_vectors, phases, amplitudes=(1.0, 1.0, 1.0), size=SIZE):
    """sum_i a_i cos(k_i . (p - c) - phi_i) about the map's centre c."""
    y, x = np.indices((size, size), dtype=np.float64)
    c = (size - 1) / 2
    return sum(a * np.cos(kx * (x - c) + ky * (y - c) - ph)
               for (kx, ky), ph, a in zip(k_vectors, phases, amplitudes, strict=True))


def _triad(orientation, wavelength=WAVELENGTH, shear=None):
    """Three wave vectors summing to 0 (at orientation + 0, 120, 240 degrees), optionally
    transformed as the waves of a lattice sheared by the 2x2 matrix ``shear``: k -> A^-T k."""
    t = np.deg2rad(orientation + np.array([0.0, 120.0, 240.0]))
    k = 2 * np.pi / wavelength * np.stack([np.cos(t), np.sin(t)], 1)
    if shear is not None:
        k = k @ np.linalg.inv(np.asarray(shear, dtype=np.float64))  # rows: A^-T k
    return k


def _da(values):
    return xr.DataArray(values, dims=("y", "x"))


def _wrap(d):
    return (np.asarray(d) + 180.0) % 360.0 - 180.0


@pytest.mark.parametrize("orientation", [7.0, 23.0, 41.0])
@pytest.mark.parametrize("phases", [(0.3, 1.1, -0.2), (2.0, -1.0, 0.9), (3.0, 2.5, 1.0)])
def test_triad_phase_is_the_sum_of_the_phases(orientation, phases):
    m = _waves(_triad(orientation), phases)
    pw = plane_waves(_da(m))
    assert int(pw.n_waves) == 3 and pw.triad_phase_reason.item() == ""
    truth = np.rad2deg(np.sum(phases))
    # psi's sign follows the order and [0, 180) direction of the reported waves
    assert min(abs(_wrap(float(pw.triad_phase) - truth)),
               abs(_wrap(float(pw.triad_phase) + truth))) < 2.0
    assert float(pw.triad_closure) < 0.01
    np.testing.assert_allclose(pw.wave_length.values, WAVELENGTH, rtol=0.02)


@pytest.mark.parametrize("phase", [(0.0, 0.0), (3.3, 1.7), (10.1, 4.2)])
def test_rectified_grid_is_a_lattice_of_peaks_wherever_it_sits(phase):
    spacing = WAVELENGTH * 2 / np.sqrt(3)
    m = hex_grid_map(SIZE, spacing, 12.0, phase)
    for grid in (m, np.maximum(m - 1 / 3, 0.0)):  # linear and rectified
        pw = plane_waves(grid)
        assert abs(float(pw.triad_phase)) < 3.0
        assert pw.lattice.item() == "peaks" and bool(pw.nonnegative)
        assert bool(pw.hexagonal)


def test_lattice_of_troughs_is_hexagonal_only_when_signed():
    m = hex_grid_map(SIZE, WAVELENGTH * 2 / np.sqrt(3), 5.0, (2.0, 1.0))
    holes = 1.0 - m  # non-negative: a lattice of holes, not of fields
    pw = plane_waves(holes)
    assert abs(abs(float(pw.triad_phase)) - 180.0) < 3.0
    assert pw.lattice.item() == "troughs" and bool(pw.nonnegative)
    assert not bool(pw.hexagonal)
    signed = plane_waves(0.5 - m)  # the same pattern, signed
    assert signed.lattice.item() == "troughs" and not bool(signed.nonnegative)
    assert bool(signed.hexagonal)


@pytest.mark.parametrize("psi_deg, lattice, hex_signed, hex_nonneg", [
    (0.0, "peaks", True, True),
    (30.0, "peaks", True, True),
    (60.0, "", False, False),
    (90.0, "", False, False),
    (120.0, "", False, False),
    (150.0, "troughs", True, False),
    (180.0, "troughs", True, False),
])
def test_hexagonal_needs_a_lattice(psi_deg, lattice, hex_signed, hex_nonneg):
    phases = np.deg2rad([psi_deg, 0.0, 0.0]) + np.array([0.4, -1.3, 0.9])  # sum: psi
    m = _waves(_triad(17.0), phases)
    signed = plane_waves(_da(m))
    assert signed.lattice.item() == lattice
    assert bool(signed.hexagonal) is hex_signed
    nonneg = plane_waves(_da(m - m.min()))
    assert bool(nonneg.nonnegative) and nonneg.lattice.item() == lattice
    assert bool(nonneg.hexagonal) is hex_nonneg


def test_random_phase_triads_mostly_fail():
    # exact hexagonal triads with random phases and amplitudes: the waves' geometry passes,
    # the lattice rule rejects about 3/4 (non-negative) and 1/2 (signed) of them
    rng = np.random.default_rng(0)
    maps = np.stack([_waves(_triad(rng.uniform(0, 120), rng.uniform(7, 12)),
                            rng.uniform(0, 2 * np.pi, 3), rng.uniform(0.5, 1.0, 3))
                     for _ in range(200)])
    signed = plane_waves(xr.DataArray(maps, dims=("unit", "y", "x")))
    geometry = ((signed.n_waves == 3) & (signed.hexagonal_angle_deviation < 1.0)
                & (signed.wave_length_ratio < 1.05))
    assert float(geometry.mean()) > 0.95
    nonneg = plane_waves(xr.DataArray(maps - maps.min(axis=(1, 2), keepdims=True),
                                      dims=("unit", "y", "x")))
    assert 0.1 < float(nonneg.hexagonal.mean()) < 0.4
    assert 0.35 < float(signed.hexagonal.mean()) < 0.65
    # psi is uniform: as often near 0 as near 180
    psi = np.abs(signed.triad_phase.values)
    assert abs((psi < 45).mean() - (psi > 135).mean()) < 0.1


@pytest.mark.parametrize("maker, reason", [
    (lambda: band_map(SIZE, WAVELENGTH, 20.0), "fewer than three waves"),
    (lambda: _da(_waves(_triad(10.0)[:2], (0.0, 0.0), (1.0, 1.0))), "fewer than three waves"),
    # three equal waves 0, 45 and 90 degrees apart: no signs make them sum to 0
    (lambda: _da(_waves(2 * np.pi / WAVELENGTH * np.array(
        [[1.0, 0.0], [np.sqrt(0.5), np.sqrt(0.5)], [0.0, 1.0]]), (0.0, 0.0, 0.0))),
     "not a triad"),
    (lambda: _da(np.ones((SIZE, SIZE))), "decomposition failed"),
])
def test_psi_is_nan_with_a_reason(maker, reason):
    pw = plane_waves(maker())
    assert np.isnan(float(pw.triad_phase))
    assert pw.triad_phase_reason.item() == reason
    assert pw.lattice.item() == "" and not bool(pw.hexagonal)


@pytest.mark.parametrize("shear, hexagonal", [
    (None, True),
    ([[1.0, 0.15], [0.0, 1.0]], True),  # a lattice sheared as in a box with walls
    ([[1.0, 0.0], [0.0, 1.12]], True),  # stretched along y
    ([[1.0, 0.6], [0.0, 1.0]], False),  # too far from hexagonal
])
def test_sheared_lattice_deviation_and_ratio_are_reported(shear, hexagonal):
    k = _triad(11.0, shear=shear)
    m = _waves(k, (0.0, 0.0, 0.0))
    pw = plane_waves(_da(m))
    assert pw.lattice.item() == "peaks" and float(pw.triad_closure) < 0.02
    ang = np.rad2deg(np.arctan2(k[:, 1], k[:, 0]))
    d = [abs(_wrap(2 * (ang[i] - ang[j])) / 2) for i, j in ((0, 1), (0, 2), (1, 2))]
    true_dev = max(abs(min(x, 180 - x) - 60) for x in d)
    lam = 2 * np.pi / np.hypot(k[:, 0], k[:, 1])
    assert float(pw.hexagonal_angle_deviation) == pytest.approx(true_dev, abs=0.5)
    assert float(pw.wave_length_ratio) == pytest.approx(lam.max() / lam.min(), rel=0.01)
    assert bool(pw.hexagonal) is hexagonal
    assert bool(true_dev <= P.HEXAGONAL_ANGLE_TOL
                and lam.max() / lam.min() <= P.HEXAGONAL_WAVELENGTH_RATIO) is hexagonal


@pytest.mark.parametrize("noise", [0.0, 0.05])
@pytest.mark.parametrize("sigma", [3.0, 5.0])
def test_single_field_is_not_a_wave_pattern(sigma, noise):
    rng = np.random.default_rng(int(sigma))
    m = place_field_map(24, [(9.5, 13.0)], sigma=sigma).values
    m = m + noise * rng.standard_normal(m.shape)
    m[rng.random(m.shape) < 0.05] = np.nan  # unvisited bins make no hole
    pw = plane_waves(_da(m))
    assert bool(pw.single_field)
    assert not bool(pw.hexagonal) and not bool(pw.square)


def test_wave_patterns_are_not_single_fields():
    for m in (hex_grid_map(SIZE, 10.0, 3.0), band_map(SIZE, WAVELENGTH, 30.0),
              place_field_map(30, [(7, 7), (22, 20)], sigma=2.5)):
        assert not bool(plane_waves(m).single_field)
    # a honeycomb of ridges (a lattice of troughs) is one connected region, with holes
    honeycomb = 1.0 - hex_grid_map(SIZE, 10.0, 3.0)
    assert not bool(plane_waves(honeycomb).single_field)


def test_classify_gives_a_single_field_no_wave_class():
    quantile = xr.DataArray([0.95], dims="quantile")
    scores = xr.Dataset({
        "n_waves": ("unit", [1, 2, 2, 1]),
        "square": ("unit", [False, False, True, False]),
        "single_field": ("unit", [True, True, True, False]),
        "plane_wave_share": ("unit", [0.9, 0.9, 0.9, 0.9]),
        "plane_wave_share_null_q": (("quantile", "unit"), np.full((1, 4), 0.2)),
    }, coords={"quantile": quantile.values})
    cls = classify(scores)
    assert cls[IS_BAND].values.tolist() == [False, False, False, True]
    assert not cls[IS_TWO_WAVE].any() and not cls[IS_SQUARE].any()
    # without single_field (older analyses) the classes are as before
    old = classify(scores.drop_vars("single_field"))
    assert old[IS_BAND].values.tolist() == [True, False, False, True]
    assert old[IS_TWO_WAVE].values.tolist() == [False, True, False, False]


def test_new_outputs_declared_with_attrs():
    pw = plane_waves(hex_grid_map(20, 8.0))
    for name in ("triad_phase", "lattice", "triad_phase_reason", "triad_closure",
                 "hexagonal_angle_deviation", "wave_length_ratio", "nonnegative",
                 "single_field"):
        assert name in pw and pw[name].attrs.get("long_name")
    assert pw.attrs["plane_wave_lattice_phase_tol_deg"] == P.LATTICE_PHASE_TOL
    assert pw.attrs["plane_wave_hexagonal_wavelength_ratio"] == P.HEXAGONAL_WAVELENGTH_RATIO
