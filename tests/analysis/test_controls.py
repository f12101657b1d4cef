"""Model-grown controls: single-cell pattern formation grows hexagonal lattices that the
classifier recognises (periodic √3/2 box and square box with walls), and its negatives (tanh,
no surround, linear eigenmodes) are never hexagonal; the controls as a recording go through
``analyse``, the ``controls`` figure and the CLI; bad parameters are one-line errors."""

import numpy as np
import pytest

from hippo_rep.analysis import analyse, plane_waves
from hippo_rep.analysis import controls as C
from hippo_rep.cli import main
from hippo_rep.figures import FigureInputs, build_figures
from hippo_rep.schema import IS_GRID, validate

#: The acceptance thresholds of issue 28: hexagonal fraction of the relu controls.
MIN_HEXAGONAL = {"relu_periodic": 0.9, "relu_square": 0.8}


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
    for name in ("tanh", "no_surround", "linear"):
        assert float(hexagonal.sel(control=name)) == 0.0, name


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
    for name in C.CONTROL_NAMES:
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
