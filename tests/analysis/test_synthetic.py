import numpy as np
import pytest

from hippo_rep.analysis import band_map, hex_grid_map, place_field_map, square_grid_map


@pytest.mark.parametrize("spacing", [4.0, 7.5, 12.0])
@pytest.mark.parametrize("orientation", [0.0, 17.0, 45.0])
def test_hex_grid_peaks_at_spacing_along_orientation(spacing, orientation):
    phase = (10.0, 12.0)
    m = hex_grid_map(40, spacing, orientation, phase=phase)
    assert m.dims == ("y", "x")
    assert float(m.min()) >= 0 and float(m.max()) <= 1
    # evaluate the generator on a fine grid around the six expected neighbouring peaks
    for k in range(6):
        t = np.deg2rad(orientation + 60 * k)
        px, py = phase[0] + spacing * np.cos(t), phase[1] + spacing * np.sin(t)
        big = hex_grid_map(
            (64, 64), spacing, orientation, phase=(phase[0] - px + 32, phase[1] - py + 32)
        )
        assert float(big[32, 32]) == pytest.approx(1.0)
    # and not at the midpoint between two peaks
    t = np.deg2rad(orientation)
    mid = hex_grid_map(
        (64, 64),
        spacing,
        orientation,
        phase=(32 - spacing / 2 * np.cos(t), 32 - spacing / 2 * np.sin(t)),
    )
    assert float(mid[32, 32]) < 0.5


def test_square_grid_and_band_peaks():
    sq = square_grid_map(30, 6, 0, phase=(3, 4))
    assert float(sq.sel(x=3, y=4)) == pytest.approx(1.0)
    assert float(sq.sel(x=9, y=10)) == pytest.approx(1.0)
    assert float(sq.sel(x=6, y=4)) == pytest.approx(0.5)
    band = band_map(30, 5, 90, phase=(0, 2))  # wave vector along +y: stripes along x
    assert float(band.sel(y=2).min()) == pytest.approx(1.0)
    assert float(band.sel(y=7).min()) == pytest.approx(1.0)
    assert np.ptp(band.sel(x=3).values) > 0.9  # varies along y (integer samples of a 5-bin period)


def test_place_field_map():
    m = place_field_map(
        (10, 12), [(3, 4), (9, 2)], sigma=[1.0, 2.0], amplitude=[2.0, 1.0], baseline=0.5
    )
    assert m.shape == (10, 12)
    assert float(m.sel(x=3, y=4)) == pytest.approx(2.5, abs=0.01)
    assert float(m.sel(x=9, y=2)) == pytest.approx(1.5, abs=0.01)
    with pytest.raises(ValueError, match="sigma"):
        place_field_map(10, [(1, 1)], sigma=0)
    with pytest.raises(ValueError, match="centres"):
        place_field_map(10, [(1, 1, 1)])


@pytest.mark.parametrize("fn", [hex_grid_map, square_grid_map, band_map])
def test_bad_spacing(fn):
    with pytest.raises(ValueError):
        fn(10, 0)


def test_simulated_session_cells_use_the_maps_plane_waves():
    """The session simulator's grid and band cells are the rectified maps of this module
    (one plane-wave formula, :func:`plane_wave_sum`), at every bin of a 30 x 30 map."""
    from hippo_rep.analysis.synthetic import plane_wave_sum
    from hippo_rep.analysis.synthetic_session import band_cell_rate, grid_cell_rate

    y, x = np.indices((30, 30), dtype=np.float64)
    hexmap = hex_grid_map(30, 12.0, orientation=7.0, phase=(3.0, 5.0)).values
    np.testing.assert_allclose(grid_cell_rate(x, y, 12.0, 7.0, (3.0, 5.0), peak=3.0),
                               np.maximum(4.5 * hexmap - 1.5, 0), atol=1e-12)
    band = band_map(30, 9.0, orientation=40.0).values
    np.testing.assert_allclose(band_cell_rate(x, y, 9.0, 40.0, peak=1.0),
                               np.maximum(2 * band - 1, 0), atol=1e-12)
    assert plane_wave_sum(np.zeros(1), np.zeros(1), 1.0, [0.0, 60.0, 120.0], (0, 0))[0] == 3
