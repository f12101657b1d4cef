"""Model-grown controls: single-cell pattern formation grows hexagonal lattices that the
classifier recognises (periodic √3/2 box and square box with walls), its negatives (tanh,
no surround, linear eigenmodes) are never hexagonal, and rectified linear eigenmodes (patchy,
non-negative maps of the lattice's wavelength) rarely are; the controls as a recording go
through ``analyse``, the ``controls`` figure and the CLI; bad parameters are one-line
errors."""

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import analyse, plane_waves
from hippo_rep.analysis import controls as C
from hippo_rep.cli import main
from hippo_rep.figures import FigureInputs, build_figures
from hippo_rep.schema import IS_GRID, validate

#: The acceptance thresholds of issue 28: hexagonal fraction of the relu controls.
MIN_HEXAGONAL = {"relu_periodic": 0.9, "relu_square": 0.8}
#: Negatives the classifier never calls hexagonal (none of 32 maps, seed 0).
NEVER_HEXAGONAL = ("tanh", "no_surround", "linear")
#: Most of the rectified eigenmodes' maps called hexagonal: 3 of 32 at seed 0 (4-5% of 1,024
#: maps at seeds 0 and 1); about 2/3 of them have three waves, so a rule that took any three
#: waves for a grid would pass far more.
MAX_RECTIFIED_HEXAGONAL = 0.15


@pytest.fixture(scope="module")
def maps():
    return C.control_maps(32, seed=0)


@pytest.fixture(scope="module")
def waves(maps):
    return plane_waves(maps)


def test_relu_grows_lattices_and_negatives_do_not(waves):
    hexagonal = waves["hexagonal"].mean("unit")
    for name, low in MIN_HEXAGONAL.items():
        assert float(hexagonal.sel(control=name)) >= low, name
    for name in NEVER_HEXAGONAL:
        assert float(hexagonal.sel(control=name)) == 0.0, name
    assert float(hexagonal.sel(control="rectified_linear")) <= MAX_RECTIFIED_HEXAGONAL


def test_relu_lattices_are_lattices_of_peaks_at_the_predicted_wavelength(maps, waves):
    one = waves.sel(control="relu_periodic")
    hexa = one["hexagonal"].values
    assert (one["lattice"].values[hexa] == "peaks").all()
    assert (np.abs(one["triad_phase"].values[hexa]) < 10).all()
    assert (one["triad_closure"].values[hexa] < 0.05).all()
    # Σ's gain peaks at wave number 0.961 / σ (wavelength 6.54 σ = 6.5 bins): the periodic
    # box's allowed hexagonal triad of wavelength 26 / 4 = 6.5 bins, or triads near it
    lam = one["wave_length"].values[hexa]
    assert np.nanmedian(lam) == pytest.approx(2 * np.pi * C.PLACE_SIGMA / 0.961, rel=0.1)
    assert (maps.sel(control="relu_periodic").min() >= 0).all()


def test_negatives_fail_for_their_own_reasons(waves):
    ns = waves.sel(control="no_surround")
    assert ns["single_field"].all()  # one broad field in the middle of the box
    tanh = waves.sel(control="tanh")
    assert (tanh["n_waves"] < 3).mean() > 0.5  # stripes
    lin = waves.sel(control="linear")
    assert not lin["nonnegative"].any()
    # its three strongest waves are no lattice's: mostly no triad; where they are a triad
    # ~60 degrees apart (random superpositions of the hexagonal top modes), their phases
    # make no lattice
    from hippo_rep.analysis.planewaves import HEXAGONAL_ANGLE_TOL

    three = lin["n_waves"].values == 3
    assert (lin["triad_phase_reason"].values[three] == "not a triad").mean() > 0.5
    triad = three & (lin["triad_phase_reason"].values == "") & (
        lin["hexagonal_angle_deviation"].values <= HEXAGONAL_ANGLE_TOL)
    assert (lin["lattice"].values[triad] == "").all()
    # rectified: non-negative maps of the lattice's wavelength, but their waves mostly do
    # not close into a triad
    rect = waves.sel(control="rectified_linear")
    assert rect["nonnegative"].all()
    three = rect["n_waves"].values == 3
    assert three.mean() > 0.5
    assert np.nanmedian(rect["wave_length"].values[three]) == pytest.approx(
        2 * np.pi * C.PLACE_SIGMA / 0.961, rel=0.1)
    assert (rect["triad_phase_reason"].values[three] == "not a triad").mean() > 0.5


def test_rectified_linear_is_the_positive_part_of_linear():
    m = C.control_maps(3, seed=2, controls=["linear", "rectified_linear"])
    rect = m.sel(control="rectified_linear").values[:, :26, :30]
    assert (rect >= 0).all() and (rect == 0).any(axis=(1, 2)).all()
    np.testing.assert_allclose(np.sqrt((rect**2).mean(axis=(1, 2))), 1.0)
    # its own seed: the positive part of the linear maps that control_maps would give it
    lin = C.linear_eigenmodes(3, seed=np.random.default_rng(
        np.random.SeedSequence(2).spawn(len(C.CONTROLS))[C.CONTROL_NAMES.index(
            "rectified_linear")])).values
    pos = np.maximum(lin, 0)
    np.testing.assert_allclose(rect, pos / np.sqrt((pos**2).mean(axis=(1, 2), keepdims=True)))


def test_same_seed_same_maps_and_another_differs():
    a = C.control_maps(2, seed=5, controls=["relu_square", "linear"], n_iterations=20)
    b = C.control_maps(2, seed=5, controls=["relu_square", "linear"], n_iterations=20)
    c = C.control_maps(2, seed=6, controls=["relu_square", "linear"], n_iterations=20)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.allclose(np.nan_to_num(a.values), np.nan_to_num(c.values))
    # a control's maps do not depend on which other controls are made
    d = C.control_maps(2, seed=5, controls=["linear"], n_iterations=20)
    np.testing.assert_array_equal(d.sel(control="linear").values[:, :26, :30],
                                  a.sel(control="linear").values[:, :26, :30])


def test_boxes_and_nan_outside():
    m = C.control_maps(1, seed=0, controls=["relu_periodic", "no_surround"], n_iterations=5)
    assert m.sizes["y"] == 30 and m.sizes["x"] == 30
    per = m.sel(control="relu_periodic").values[0]
    assert np.isfinite(per[:26]).all() and np.isnan(per[26:]).all()
    assert np.isfinite(m.sel(control="no_surround").values).all()
    assert m["box"].values.tolist() == ["periodic", "square"]


@pytest.mark.parametrize("kwargs, name", [
    (dict(place_sigma=0.0), "place_sigma"),
    (dict(place_sigma=-1.0), "place_sigma"),
    (dict(surround_scale=0.0), "surround_scale"),
    (dict(lr=-0.1), "lr"),
    (dict(shape=(4, 30)), "shape"),
    (dict(shape=(30, 3)), "shape"),
    (dict(place_sigma=4.0, surround_scale=2.0, shape=(6, 6)), "surround_scale"),
    (dict(n_iterations=0), "n_iterations"),
    (dict(nonlinearity="sigmoid"), "nonlinearity"),
    (dict(surround_weight=-1.0), "surround_weight"),
])
def test_bad_parameters_are_one_line_errors(kwargs, name):
    with pytest.raises(ValueError, match=name) as err:
        C.pattern_formation(2, **kwargs)
    assert "\n" not in str(err.value)


def test_bad_control_arguments():
    with pytest.raises(ValueError, match="controls"):
        C.control_maps(1, controls=["relu"])
    with pytest.raises(ValueError, match="periodic_box"):
        C.control_maps(1, periodic_box=(4, 4))
    with pytest.raises(ValueError, match="square_box"):
        C.control_maps(1, square_box=(30, 2))
    with pytest.raises(ValueError, match="n_modes"):
        C.linear_eigenmodes(1, n_modes=0)


def test_linear_modes_are_the_top_of_the_spectrum():
    # one mode pair: a single plane wave at the peak of Σ's gain
    m = C.linear_eigenmodes(4, n_modes=2, seed=0)
    pw = plane_waves(m)
    assert (pw["n_waves"] == 1).all()
    k = 2 * np.pi / pw["wave_length"].values[:, 0]
    ks = np.linspace(0.01, np.pi, 4000)
    k_star = ks[np.argmax(C.covariance_gain(ks))]
    assert np.allclose(k, k_star, rtol=0.08)


@pytest.fixture(scope="module")
def controls_analysis():
    m = C.control_maps(2, seed=0, n_iterations=C.N_ITERATIONS)
    rec = C.controls_recording(m, steps_per_node=6, seed=0)
    validate(rec)
    return analyse(rec, shuffles=4, seed=0, decode=False)


def test_controls_recording_through_analyse(controls_analysis):
    an = controls_analysis
    assert an["control"].values.tolist() == list(C.CONTROL_NAMES)
    g = an.hippo.population("g")
    grid = g[IS_GRID].values  # (env, unit)
    names = list(an["control"].values)
    for name in (*C.POSITIVE_CONTROLS, *NEVER_HEXAGONAL):
        row = grid[names.index(name)]
        assert row.all() if name in C.POSITIVE_CONTROLS else not row.any(), name
    fr = C.control_fractions(an)
    assert fr["fraction"].dims == ("control", "cell_class")
    assert float(fr["fraction"].sel(control="no_surround", cell_class="single_field")) == 1.0
    assert (fr["denominator"] == 2).all()


def test_controls_figure(tmp_path, controls_analysis):
    report = build_figures(FigureInputs(analysis=controls_analysis), tmp_path,
                           only=["controls"], formats=("png",))
    assert report["controls"][0].stat().st_size > 10_000
    other = controls_analysis.drop_vars("control")
    report = build_figures(FigureInputs(analysis=other), tmp_path, only=["controls"],
                           formats=("png",))
    assert "controls recording" in report["controls"]


def test_control_fractions_needs_a_controls_analysis(controls_analysis):
    with pytest.raises(ValueError, match="control"):
        C.control_fractions(controls_analysis.drop_vars("control"))
    with pytest.raises(ValueError, match="population"):
        C.control_fractions(controls_analysis, population="p")


def test_cli_controls(tmp_path, capsys):
    out = tmp_path / "controls.nc"
    assert main(["controls", "--out", str(out), "--units", "2", "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert "relu_periodic" in text and "linear" in text and out.exists()
    validate(out)
    assert main(["controls", "--out", str(out), "--units", "2"]) == 2  # exists
    assert "exists" in capsys.readouterr().err
    assert main(["controls", "--out", str(tmp_path / "c.zarr")]) == 2
    assert main(["controls", "--out", str(tmp_path / "d.nc"), "--units", "0"]) == 2
    assert main(["controls", "--out", str(tmp_path / "d.nc"), "--units", "100000"]) == 2
    assert main(["controls", "--out", str(tmp_path / "d.nc"), "--seed", "-1"]) == 2
    (tmp_path / "folder.nc").mkdir()
    assert main(["controls", "--out", str(tmp_path / "folder.nc")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 5 and "Traceback" not in err
    assert "--units" in err and "--seed" in err
    assert not (tmp_path / "d.nc").exists()


# ------------------------------------------------------------------ the matched negative
def test_random_wave_maps_are_rectified_waves_of_the_wavelength():
    m = C.random_wave_maps(64, (24, 30), 8.0, seed=3)
    assert m.dims == ("unit", "y", "x") and m.shape == (64, 24, 30)
    v = m.values
    assert (v >= 0).all() and (v == 0).any(axis=(1, 2)).all()  # rectified
    np.testing.assert_allclose(np.sqrt((v**2).mean(axis=(1, 2))), 1.0)
    pw = plane_waves(m)
    assert np.nanmedian(pw["wave_length"].values) == pytest.approx(8.0, rel=0.1)
    np.testing.assert_array_equal(C.random_wave_maps(64, (24, 30), 8.0, seed=3).values, v)
    assert not np.array_equal(C.random_wave_maps(64, (24, 30), 8.0, seed=4).values, v)


@pytest.mark.parametrize("kwargs, name", [
    (dict(shape=(3, 30)), "shape"), (dict(wavelength=2.0), "wavelength"),
    (dict(wavelength="long"), "wavelength"), (dict(wavelength=float("nan")), "wavelength"),
    (dict(n_waves=0), "n_waves"), (dict(n_units=0), "n_units"),
])
def test_random_wave_maps_bad_arguments(kwargs, name):
    args = dict(n_units=2, shape=(16, 16), wavelength=6.0) | kwargs
    with pytest.raises(ValueError, match=name):
        C.random_wave_maps(**args)


def test_matched_negative_matches_the_maps_and_is_rarely_hexagonal():
    from hippo_rep.analysis.synthetic import hex_grid_map

    rng = np.random.default_rng(0)
    grids = [hex_grid_map((28, 34), 12.0, rng.uniform(0, 60), rng.uniform(0, 12, 2))
             for _ in range(8)]
    maps = xr.concat(grids, "unit").assign_coords(y=np.arange(28) * 0.5, x=np.arange(34) * 0.5)
    maps[:, :4, :6] = np.nan  # a corner never visited
    assert plane_waves(maps)["hexagonal"].all()
    neg = C.matched_negative(maps, n_units=256, seed=0)
    # the grids' wavelength: spacing x sqrt(3) / 2
    assert neg.attrs["wavelength_bins"] == pytest.approx(12.0 * np.sqrt(3) / 2, rel=0.05)
    assert np.isnan(neg["rate_map"].values[:, :4, :6]).all()
    assert np.isfinite(neg["rate_map"].values[:, 4:, :]).all()
    np.testing.assert_array_equal(neg["y"].values, maps["y"].values)
    # patchy maps of the grids' wavelength, no lattice: some pass by chance, far fewer
    # than the grids (all of them)
    assert 0 < float(neg["hexagonal"].mean()) < 0.3
    again = C.matched_negative(maps, wavelength=neg.attrs["wavelength_bins"], n_units=256,
                               seed=0)
    np.testing.assert_array_equal(again["hexagonal"].values, neg["hexagonal"].values)


def test_matched_negative_bad_input():
    with pytest.raises(ValueError, match="dims"):
        C.matched_negative(xr.DataArray(np.ones((4, 4)), dims=("a", "b")))
    with pytest.raises(ValueError, match="finite"):
        C.matched_negative(xr.DataArray(np.full((2, 8, 8), np.nan), dims=("unit", "y", "x")))
    with pytest.raises(ValueError, match="no wave"):
        C.matched_negative(xr.DataArray(np.ones((2, 8, 8)), dims=("unit", "y", "x")))
