"""Sessions (your own cells in a continuous arena) and NWB in, on simulated ground truth.

A smooth random trajectory (a velocity random walk reflected at the walls of a 100 cm box,
50 Hz) and cells of known rate maps, with Poisson spikes: hexagonal grid cells (three cosines
60 degrees apart, rectified; spacing 40 cm), place cells (one Gaussian field), a band cell
(one rectified cosine) and a flat cell. The analysis must recover the grid cells as grid
with their spacing, the place cells as place, and neither from the band and flat cells.
The simulator is the package's (:mod:`hippo_rep.analysis.synthetic_session`); its 10-minute
session (:func:`~hippo_rep.analysis.simulate_session`, with boundary cells) is checked too.
Notebook 04 simulates with RatInABox instead (``tests/test_ratinabox_session.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hippo_rep import cli
from hippo_rep.analysis import analyse, open_analysis, write_analysis
from hippo_rep.analysis.nwb import read_nwb, write_nwb
from hippo_rep.analysis.sessions import (
    SessionError,
    open_session,
    session_from_rates,
    session_from_spikes,
    session_rate_maps,
    session_speed,
    write_session,
)
from hippo_rep.analysis.synthetic_session import (
    band_cell_rate,
    grid_cell_rate,
    place_cell_rate,
    poisson_spike_times,
    simulate_session,
    simulate_trajectory,
)
from hippo_rep.schema import AnalysisError

BOX = 100.0  # cm
HZ = 50.0  # tracking rate
SPACING = 40.0  # grid spacing, cm
ORIENTATIONS = (0.0, 10.0, 20.0)  # grid orientations, degrees
PLACE_CENTRES = ((30.0, 30.0), (70.0, 60.0), (45.0, 80.0))
SHUFFLES = 50


# ------------------------------------------------------------------------------ simulation
# the package's simulator (hippo_rep.analysis.synthetic_session), under the names used here
trajectory = simulate_trajectory
grid_rate = grid_cell_rate
place_rate = place_cell_rate
band_rate = band_cell_rate
poisson_spikes = poisson_spike_times


@pytest.fixture(scope="module")
def truth():
    rng = np.random.default_rng(7)
    t, x, y = trajectory(15, rng)
    cells = {
        "grid": [poisson_spikes(t, grid_rate(x, y, orientation=o, phase=ph), rng)
                 for o, ph in zip(ORIENTATIONS, ((0, 0), (7, 3), (13, 21)), strict=True)],
        "place": [poisson_spikes(t, place_rate(x, y, c), rng) for c in PLACE_CENTRES],
        "control": [poisson_spikes(t, band_rate(x, y), rng),
                    poisson_spikes(t, np.full(t.size, 5.0), rng)],
    }
    session = session_from_spikes(x, y, t, cells, arena=(0, BOX, 0, BOX))
    return session, analyse(session, shuffles=SHUFFLES, seed=1)


def _pop(an, name):
    return an.hippo.population(name).isel(env=0)


# ------------------------------------------------------------------------------ ground truth
def test_grid_cells_are_hexagonal_grids_with_their_spacing(truth):
    grid = _pop(truth[1], "grid")
    assert grid["is_grid"].all() and grid["hexagonal"].all()
    assert (np.abs(grid["spacing_cm"] - SPACING) < 0.1 * SPACING).all(), grid["spacing_cm"]
    off = (grid["orientation"].values - np.array(ORIENTATIONS) + 30) % 60 - 30  # mod 60°
    assert (np.abs(off) < 5).all(), grid["orientation"].values
    assert not grid["is_place"].any()
    assert grid["spacing_cm"].attrs["units"] == "cm"


def test_place_cells_are_place_like_at_their_fields(truth):
    place = _pop(truth[1], "place")
    assert place["is_place"].all() and (place["n_fields"] == 1).all()
    assert not place["is_grid"].any()
    for k, (cx, cy) in enumerate(PLACE_CENTRES):
        m = place["rate_map"].isel(unit=k)
        peak = m.where(m == m.max(), drop=True)
        assert abs(float(peak["x"][0]) - cx) < 5 and abs(float(peak["y"][0]) - cy) < 5


def test_band_and_flat_cells_are_neither_grid_nor_place(truth):
    ctrl = _pop(truth[1], "control")
    assert not ctrl["is_grid"].any() and not ctrl["is_place"].any()
    assert bool(ctrl["is_band"].isel(unit=0))  # the band is found as a band
    assert not bool(ctrl["is_band"].isel(unit=1))


def test_simulator_stays_in_the_box_and_cells_fire_where_planted():
    from hippo_rep.analysis.synthetic_session import boundary_cell_rate

    t, x, y = trajectory(2, np.random.default_rng(0))
    assert t.size == 2 * 60 * HZ and np.allclose(np.diff(t), 1 / HZ)
    assert x.min() >= 0 and x.max() <= BOX and y.min() >= 0 and y.max() <= BOX
    assert x.max() - x.min() > 0.8 * BOX  # it explores the box
    xs = np.array([0.0, 10.0, 50.0, 100.0])
    west = boundary_cell_rate(xs, np.full(4, 50.0), "west")
    north = boundary_cell_rate(np.full(4, 50.0), xs, "north")
    assert west[0] == 10.0 and west[2] < 1e-6 and north[-1] == 10.0 and north[0] < 1e-6
    with pytest.raises(ValueError, match="wall must be one of"):
        boundary_cell_rate(xs, xs, "up")
    assert grid_rate(np.zeros(1), np.zeros(1))[0] == 10.0  # a field at its phase


# ---------------------------------------------------------------- simulate_session's defaults
#: A 10-minute session (notebook 04's parameters before it moved to RatInABox).
NB_MINUTES, NB_SEED, NB_SHUFFLES = 10, 0, 100


@pytest.fixture(scope="module")
def simulated():
    """simulate_session's cells, analysed as notebook 04 analyses a session."""
    session, cells = simulate_session(NB_MINUTES, seed=NB_SEED)
    return cells, analyse(session, shuffles=NB_SHUFFLES, seed=NB_SEED)


def test_simulated_session_truth_table_matches_the_session(simulated):
    cells, an = simulated
    assert an["variable"].values.tolist() == cells["population"].tolist()
    assert an["cell_id"].values.tolist() == cells["cell_id"].tolist()
    assert an.hippo.populations == ("grid", "place", "boundary", "band")


def test_simulated_grid_and_place_cells_are_recovered(simulated):
    cells, an = simulated
    grid, truth = _pop(an, "grid"), cells[cells["population"] == "grid"]
    assert grid["is_grid"].all() and grid["hexagonal"].all() and not grid["is_place"].any()
    spacing = truth["spacing_cm"].to_numpy()
    assert (np.abs(grid["spacing_cm"].values - spacing) < 0.1 * spacing).all()
    off = (grid["orientation"].values - truth["orientation"].to_numpy() + 30) % 60 - 30
    assert (np.abs(off) < 5).all(), grid["orientation"].values
    place, truth = _pop(an, "place"), cells[cells["population"] == "place"]
    assert place["is_place"].all() and (place["n_fields"] == 1).all()
    assert not place["is_grid"].any()
    for k, (cx, cy) in enumerate(truth[["centre_x", "centre_y"]].to_numpy()):
        m = place["rate_map"].isel(unit=k)
        peak = m.where(m == m.max(), drop=True)
        assert abs(float(peak["x"][0]) - cx) < 5 and abs(float(peak["y"][0]) - cy) < 5


def test_simulated_boundary_and_band_cells_are_not_grid(simulated):
    _, an = simulated
    for pop in ("boundary", "band"):
        cells = _pop(an, pop)
        assert not cells["is_grid"].any() and not cells["hexagonal"].any(), pop
    assert _pop(an, "band")["is_band"].all()


def test_recovered_cells_puts_truth_next_to_the_analysis(simulated):
    from hippo_rep.analysis.synthetic_session import recovered_cells

    cells, an = simulated
    t = recovered_cells(an, cells)
    assert t.index.names == ["population", "cell_id"] and len(t) == an.sizes["unit"]
    assert t.loc[("grid", "1"), "planted_orientation"] == 10.0
    np.testing.assert_array_equal(t["gridness_60"], an["gridness_60"].isel(env=0))
    place = t.loc["place"]  # peaks at the planted centres (cm)
    assert (np.abs(place["peak_x"] - place["planted_centre_x"]) < 5).all()
    assert (np.abs(place["peak_y"] - place["planted_centre_y"]) < 5).all()
    assert (np.abs(t.loc["grid", "spacing_cm"] - t.loc["grid", "planted_spacing_cm"])
            < 4).all()


def test_simulated_boundary_cells_are_not_place_cells(simulated):
    """A boundary cell's one field runs along its wall: spatially informative, one field, but
    long and thin, which the place rule's elongation limit keeps out; place cells stay in."""
    _, an = simulated
    boundary, place = _pop(an, "boundary"), _pop(an, "place")
    assert (boundary["field_elongation"].isel(field=0) > 4).all()
    assert not boundary["is_place"].any()
    assert place["is_place"].all()
    assert (place["field_elongation"].isel(field=0) < 2).all()


def test_simulated_boundary_cells_are_border_cells(simulated):
    """Each boundary cell is a border cell along its planted wall (border score, Solstad et
    al. 2008); no place, grid or band cell is one."""
    cells, an = simulated
    boundary = _pop(an, "boundary")
    walls = {"west": "x_min", "east": "x_max", "south": "y_min", "north": "y_max"}
    planted = cells[cells["population"] == "boundary"]["wall"].map(walls).tolist()
    assert boundary["is_border"].all(), boundary["border_score"].values
    assert boundary["border_wall"].values.ravel().tolist() == planted
    for pop in ("grid", "place", "band"):
        assert not _pop(an, pop)["is_border"].any(), pop


def test_simulated_band_cells_are_not_place_cells(simulated):
    """The 100 degree band cell's stripes, smoothed and cut at a fifth of the peak, merge into
    two compact blobs (the largest over half the box, elongation ~1.4) that pass the field
    count and the elongation limit: the place rule keeps it out because it is a band."""
    _, an = simulated
    band = _pop(an, "band")
    assert band["is_band"].all()
    assert (band["field_area"].isel(field=0) > 0.25 * band["rate_map"].isel(unit=0).size).all()
    assert not band["is_place"].any()


def test_session_analysis_is_labelled_in_cm_seconds_and_hz(truth, tmp_path):
    session, an = truth
    assert np.asarray(an["variable"].values).tolist() == ["grid"] * 3 + ["place"] * 3 + [
        "control"] * 2
    assert an["cell_id"].values.tolist() == ["0", "1", "2"] * 2 + ["0", "1"]
    assert an.attrs["input_kind"] == "session" and an.attrs["map_bin_size_cm"] == 2.5
    np.testing.assert_allclose(an["x"].values, np.arange(40) * 2.5 + 1.25)
    assert an["occupancy"].attrs["units"] == "s" and an["rate_map"].attrs["units"] == "Hz"
    # occupancy: every kept (tracked, fast enough) sample once, in seconds
    speed = session_speed(session).values
    kept = np.isfinite(speed) & (speed >= 2.5)
    np.testing.assert_allclose(float(an["occupancy"].sum()), kept.sum() / HZ)
    assert an.attrs["min_shift_s"] == 20.0 and an.attrs["min_shift_steps"] >= 20 * HZ
    assert "decode_node_accuracy" not in an  # one environment: no decoding
    path = write_analysis(an, tmp_path / "an.nc")
    back = open_analysis(path)  # a valid analysis dataset
    xr.testing.assert_allclose(back["spacing_cm"], an["spacing_cm"])


# ------------------------------------------------------------------------------ maps
def _line(n=3000, speed=10.0):
    """A back-and-forth walk along x at y = 50 cm, ``speed`` cm/s, 50 Hz."""
    t = np.arange(n) / HZ
    phase = (speed * t) % 160
    x = 10 + np.where(phase < 80, phase, 160 - phase)
    return t, x, np.full(n, 50.0)


def test_constant_rate_gives_its_rate_in_every_visited_bin():
    t, x, y = _line()
    rates = session_from_rates(x, y, t, np.full((t.size, 1), 5.0), arena=(0, BOX, 0, BOX))
    m = session_rate_maps(rates, smooth_cm=5.0)
    visited = m["occupancy"] > 0
    np.testing.assert_allclose(m["rate_map"].where(visited).values[..., visited.values[0]], 5.0)
    assert m["rate_map"].where(~visited).isnull().all()
    # a regular 5 Hz spike train: spikes per bin / seconds per bin (no smoothing)
    spikes = session_from_spikes(x, y, t, [np.arange(0.1, t[-1], 0.2)], arena=(0, BOX, 0, BOX))
    m = session_rate_maps(spikes, smooth_cm=0, min_speed_cm_s=0)
    occ = m["occupancy"].values[0]
    assert abs(float(np.nansum(m["rate_map"].values[0, 0] * occ) / occ.sum()) - 5.0) < 0.05
    np.testing.assert_allclose(occ.sum(), t.size / HZ, rtol=1e-9)  # every sample, seconds


def test_speed_filter_drops_the_rest():
    t, x, y = _line(6000)
    rest = (t >= 30) & (t < 90)  # a minute sitting at (10, 50), a cell firing only then
    x = np.where(rest, 10.0, x)
    spikes = [t[rest][::2]]  # 25 Hz while resting
    s = session_from_spikes(x, y, t, spikes, arena=(0, BOX, 0, BOX))
    np.testing.assert_allclose(session_speed(s).values[t < 7][1:], 10.0, rtol=1e-6)
    filtered = session_rate_maps(s, smooth_cm=0)
    kept = session_rate_maps(s, smooth_cm=0, min_speed_cm_s=0)
    corner = {"env": 0, "x": 11.25, "y": 51.25}
    assert float(kept["occupancy"].sel(corner)) > 60
    assert float(filtered["occupancy"].sel(corner)) < 2
    assert float(kept["rate_map"].sel(corner).isel(unit=0)) > 20
    assert float(filtered["rate_map"].sel(corner).isel(unit=0).fillna(0)) < 5


def test_tracking_loss_is_dropped_not_an_error():
    t, x, y = _line()
    x = x.copy()
    x[500:700] = np.nan
    s = session_from_spikes(x, y, t, [np.arange(0.1, t[-1], 0.5)], arena=(0, BOX, 0, BOX))
    m = session_rate_maps(s, min_speed_cm_s=0)
    np.testing.assert_allclose(float(m["occupancy"].sum()), (t.size - 200) / HZ)


def test_rates_pynapple_and_metres_give_the_same_maps():
    nap = pytest.importorskip("pynapple")
    rng = np.random.default_rng(3)
    t, x, y = trajectory(2, rng)
    trains = [poisson_spikes(t, place_rate(x, y, c), rng) for c in PLACE_CENTRES[:2]]
    ref = session_rate_maps(session_from_spikes(x, y, t, trains))
    group = nap.TsGroup({5: nap.Ts(trains[0]), 9: nap.Ts(trains[1])})
    from_nap = session_from_spikes(nap.Tsd(t=t, d=x / 100), y / 100, None, {"cells": group},
                                   length_unit="m")
    assert from_nap["cell_id"].values.tolist() == ["5", "9"]
    xr.testing.assert_allclose(session_rate_maps(from_nap)["rate_map"].drop_vars("cell_id"),
                               ref["rate_map"].drop_vars("cell_id"))
    counts = np.stack([np.bincount(np.searchsorted(t + 0.01, s, side="right"),
                                   minlength=t.size) for s in trains], axis=1) * HZ
    frame = nap.TsdFrame(t=t, d=counts, columns=["a", "b"])
    rates = session_from_rates(x, y, t, frame)
    assert rates["cell_id"].values.tolist() == ["a", "b"]
    xr.testing.assert_allclose(session_rate_maps(rates)["rate_map"].drop_vars("cell_id"),
                               ref["rate_map"].drop_vars("cell_id"))


# ------------------------------------------------------------------------------ files
def _small(rng=None, minutes=2):
    rng = rng or np.random.default_rng(5)
    t, x, y = trajectory(minutes, rng)
    cells = {"grid": [poisson_spikes(t, grid_rate(x, y), rng)],
             "place": [poisson_spikes(t, place_rate(x, y, c), rng) for c in PLACE_CENTRES]}
    x = x.copy()
    x[100:110] = np.nan  # tracking lost
    return session_from_spikes(x, y, t, cells, arena=(0, BOX, 0, BOX),
                               attrs={"animal": "sim"})


def test_a_malformed_arena_attr_names_the_attr_and_the_file(tmp_path):
    """A session file edited by hand (arena as one string) must give a one-line error
    naming the attr and the file, not numpy's conversion error."""
    s = _small()
    s.attrs["arena"] = "0,100,0,100"
    s.to_netcdf(tmp_path / "s.nc")
    with pytest.raises(SessionError, match=r"s\.nc.*attr arena must be 4 numbers") as err:
        open_session(tmp_path / "s.nc")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("arena", [(0, 100, 0), (0, 100, 50, 50), (0, np.nan, 0, 100),
                                   ("a", "b", "c", "d")])
def test_a_bad_arena_argument_is_one_line_naming_it(arena):
    with pytest.raises(SessionError, match=r"^arena must be 4 numbers \(x_min, x_max, y_min, "
                                           r"y_max\), finite, with max > min; got") as err:
        _bad(arena=arena)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("arena, bin_size, where", [
    ((0, 10, 0, 10), 10.0, "gives 1 x 1 bins on the arena, x \\[0, 10\\] y \\[0, 10\\] cm"),
    ((0, 10, 0, 10), 25.0, "gives 1 x 1 bins on the arena, x \\[0, 10\\]"),
    (None, 2.5, "gives 4 x 0 bins on the positions' extent \\(no arena attr\\), x \\[1, 9\\] "
                "y \\[5, 5\\] cm"),
])
def test_a_degenerate_bin_grid_is_refused_naming_bin_size_and_the_arena(arena, bin_size,
                                                                        where):
    """Fewer than 2 bins a side (a bin as large as the arena, an arena of zero height: every
    y equal and no arena attr) would give empty or NaN maps: refused, in maps and analyse."""
    s = _bad(arena=arena)
    for run in (lambda: session_rate_maps(s, bin_size_cm=bin_size),
                lambda: analyse(s, bin_size_cm=bin_size, shuffles=1, min_shift_s=0)):
        with pytest.raises(SessionError, match=f"^bin_size_cm {bin_size:g} {where}.*; at least "
                                               "2 bins a side are needed") as err:
            run()
        assert "\n" not in str(err.value)
    if arena is not None:  # 2 bins a side are enough
        assert session_rate_maps(s, bin_size_cm=5.0)["rate_map"].sizes["x"] == 2


def test_a_session_file_is_opened_once_and_checked_once(tmp_path, monkeypatch):
    """``hippo-rep analyse`` of a session reads the file once and validates it once (by its
    reader, whose errors name the file), for a session netCDF and for NWB."""
    import hippo_rep.analysis.pipeline as pipeline
    import hippo_rep.analysis.sessions as sessions
    from hippo_rep.pipeline.stages import analyse as analyse_stage

    checks, opens = [], []
    validate, open_dataset = sessions.validate_session, xr.open_dataset

    def counted_validate(ds, source=None):
        checks.append(source)
        return validate(ds, source)

    def counted_open(path, *args, **kwargs):
        opens.append(str(path))
        return open_dataset(path, *args, **kwargs)

    s = _small(minutes=1)
    nc = write_session(s, tmp_path / "s.nc")
    monkeypatch.setattr(sessions, "validate_session", counted_validate)
    monkeypatch.setattr(pipeline, "validate_session", counted_validate)
    monkeypatch.setattr(xr, "open_dataset", counted_open)
    analyse_stage(nc, tmp_path / "a.nc", shuffles=1, decode=False, min_shift_s=5)
    assert checks == [nc] and opens.count(str(nc)) == 1
    analyse(s, shuffles=1, min_shift_s=5)  # a session given to analyse is checked there
    assert len(checks) == 2
    pytest.importorskip("pynwb")
    nwb = write_nwb(s, tmp_path / "s.nwb")
    checks.clear()
    analyse_stage(nwb, tmp_path / "b.nc", shuffles=1, decode=False, min_shift_s=5)
    assert len(checks) == 1  # read_nwb's (session_from_spikes), not analyse's again


def test_a_damaged_session_file_names_the_file_and_the_variable(tmp_path, capsys):
    """A chunk that cannot be decoded (a compressed variable overwritten on disk) is found
    by the package's checked loader, one line naming the file and the variable."""
    import h5py

    path = tmp_path / "s.nc"
    _small(minutes=1).to_netcdf(path, engine="h5netcdf",
                                encoding={"spike_times": {"zlib": True, "chunksizes": (64,)}})
    with h5py.File(path, "r") as f:
        info = f["spike_times"].id.get_chunk_info(0)
    with open(path, "r+b") as f:
        f.seek(info.byte_offset)
        f.write(b"\xff" * info.size)
    with pytest.raises(SessionError, match=r"^session '.*s\.nc': variable 'spike_times' cannot "
                                           r"be read, the file is damaged") as err:
        open_session(path)
    assert "\n" not in str(err.value)
    capsys.readouterr()
    assert cli.main(["analyse", str(path), "--out", str(tmp_path / "a.nc")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "variable 'spike_times' cannot be read" in err[0], err


def test_session_netcdf_round_trip(tmp_path):
    s = _small()
    xr.testing.assert_identical(open_session(write_session(s, tmp_path / "s.nc")), s)
    t, x, y = _line(200)
    r = session_from_rates(x, y, t, {"model": np.ones((200, 2))})
    xr.testing.assert_identical(open_session(write_session(r, tmp_path / "r.nc")), r)
    with pytest.raises(FileExistsError):
        write_session(s, tmp_path / "s.nc")
    with pytest.raises(SessionError, match="is not a hippo_rep session"):
        open_session(write_analysis(_small_analysis(), tmp_path / "a.nc"))


def _small_analysis():
    return analyse(_small(minutes=1), shuffles=2, min_shift_s=5)


def test_nwb_round_trip(tmp_path):
    pytest.importorskip("pynwb")
    s = _small()
    del s.attrs["animal"]  # NWB keeps positions, spikes, populations, ids and the arena
    back = read_nwb(write_nwb(s, tmp_path / "s.nwb"))
    assert back.attrs.pop("spikes_outside_tracking") == 0
    for k in ("source", "nwb_identifier", "nwb_session_description", "nwb_position_series"):
        back.attrs.pop(k)
    # regular tracking is written as a starting time and rate (NWB best practice): the times
    # come back as start + i / rate, within round-off of the originals
    np.testing.assert_allclose(back["time"].values, s["time"].values, rtol=0, atol=1e-9)
    xr.testing.assert_identical(back.assign_coords(time=s["time"]), s)


#: Spike times (s) of the one unit of :func:`_nwbfile`; 50 s is after its tracking ends.
NWB_SPIKES = (0.5, 1.0, 50.0)


def _nwbfile(position=True, units=True):
    from datetime import UTC, datetime

    import pynwb
    from pynwb.behavior import Position, SpatialSeries

    f = pynwb.NWBFile(session_description="test", identifier="x",
                      session_start_time=datetime(2020, 1, 1, tzinfo=UTC))
    if position:  # in acquisition, metres, at a starting time and rate
        xy = np.stack([np.linspace(0.1, 0.9, 1000), np.full(1000, 0.5)], axis=1)
        f.add_acquisition(Position(spatial_series=SpatialSeries(
            name="pos", data=xy, reference_frame="corner", starting_time=0.0, rate=50.0)))
    if units:
        f.add_unit(spike_times=np.array(NWB_SPIKES))
    return f


def _write(f, path):
    import pynwb

    with pynwb.NWBHDF5IO(str(path), "w") as io:
        io.write(f)
    return path


def test_nwb_acquisition_position_metres_and_spikes_outside_tracking(tmp_path):
    pytest.importorskip("pynwb")
    path = _write(_nwbfile(), tmp_path / "a.nwb")
    s = read_nwb(path)
    assert s.attrs["length_unit"] == "m" and s.attrs["spikes_outside_tracking"] == 1
    assert s["spike_times"].values.tolist() == [0.5, 1.0]
    np.testing.assert_allclose(s["time"].values[-1], 999 / 50)
    with pytest.raises(SessionError, match="outside the tracking clock"):
        read_nwb(path, drop_outside=False)


@pytest.mark.parametrize("missing, message", [("position", "has no Position"),
                                              ("units", "has no Units table")])
def test_nwb_without_position_or_units_is_one_line(tmp_path, missing, message):
    pytest.importorskip("pynwb")
    path = _write(_nwbfile(**{missing: False}), tmp_path / "a.nwb")
    with pytest.raises(SessionError, match=message) as err:
        read_nwb(path)
    assert "\n" not in str(err.value) and "a.nwb" in str(err.value)


def test_cli_analyses_an_nwb_file_then_draws_it(tmp_path, capsys):
    pytest.importorskip("pynwb")
    nwb = write_nwb(_small(minutes=2), tmp_path / "x.nwb")
    out = tmp_path / "a.nc"
    assert cli.main(["analyse", str(nwb), "--out", str(out), "--shuffles", "5",
                     "--bin-size", "5", "--smooth", "5"]) == 0
    an = open_analysis(out)
    assert an.attrs["map_bin_size_cm"] == 5 and an.sizes["x"] == 20
    assert an.hippo.populations == ("grid", "place")
    figs = tmp_path / "figs"
    assert cli.main(["figures", str(out), "--out", str(figs), "--format", "png",
                     "--only", "session_cells", "--only", "scores"]) == 0
    assert (figs / "session_cells.png").is_file() and (figs / "scores.png").is_file()
    session_nc = write_session(_small(minutes=1), tmp_path / "s.nc")  # a session netCDF too
    assert cli.main(["analyse", str(session_nc), "--out", str(tmp_path / "s_an.nc"),
                     "--shuffles", "2", "--min-shift", "5", "--min-speed", "0"]) == 0
    assert open_analysis(tmp_path / "s_an.nc").attrs["min_speed_cm_s"] == 0
    capsys.readouterr()
    bad = _write(_nwbfile(units=False), tmp_path / "bad.nwb")
    assert cli.main(["analyse", str(bad), "--out", str(tmp_path / "b.nc")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no Units table" in err[0]


# ------------------------------------------------------------------------------ bad inputs
def _bad(**change):
    t = np.arange(10) * 0.02
    args = {"x": np.linspace(1, 9, 10), "y": np.full(10, 5.0), "times": t,
            "spikes": [np.array([0.01, 0.05])], "arena": (0, 10, 0, 10)}
    args.update(change)
    spikes = args.pop("spikes")
    x, y, times = args.pop("x"), args.pop("y"), args.pop("times")
    return session_from_spikes(x, y, times, spikes, **args)


@pytest.mark.parametrize("change, message", [
    ({"y": np.zeros(9)}, "x, y and times must have one value per tracking sample"),
    ({"times": np.arange(10)[::-1] * 0.02}, "times must be strictly increasing; unsorted"),
    ({"times": np.r_[0, 0, np.arange(2, 10)] * 0.02}, "times must be strictly increasing; "
                                                      "duplicate"),
    ({"x": np.linspace(1, 11, 10)}, "x has 1 position.* outside the arena"),
    ({"y": np.full(10, np.inf)}, "y holds infinite positions"),
    ({"spikes": [np.array([0.05, 0.01])]}, "spike times of cell 0 .* unsorted time"),
    ({"spikes": [np.array([0.05, 0.05])]}, "spike times of cell 0 .* duplicate time"),
    ({"spikes": [np.array([0.05, 0.5])]}, "spike times of cell 0 .* outside the tracking "
                                          "clock"),
    ({"spikes": {"g": [np.array([0.05])]}}, "population name 'g' is reserved"),
    ({"spikes": np.array([0.01, 0.05])}, "must be a list of per-cell spike-time arrays"),
    ({"length_unit": "mm"}, "length_unit must be one of"),
    ({"arena_shape": "oval"}, "arena_shape must be one of"),
    ({"arena_shape": "circle", "arena": None}, "arena_shape 'circle' needs the arena"),
    ({"arena_shape": "circle", "arena": (0, 10, 0, 8), "y": np.full(10, 4.0)},
     "attr arena of a circular arena: .* must be a square"),
    ({"arena_shape": "circle", "y": np.linspace(1, 9, 10)},
     r"x, y have 2 position\(s\) outside the circular arena \(centre \(5, 5\), radius 5 cm"),
])
def test_bad_sessions_raise_one_line_naming_the_field(change, message):
    with pytest.raises(SessionError, match=message) as err:
        _bad(**change)
    assert "\n" not in str(err.value)


def test_bad_rates_and_options():
    t = np.arange(10) * 0.02
    with pytest.raises(SessionError, match="rates of population 'cells' have 9 samples but "
                                           "the positions have 10"):
        session_from_rates(t, t, t, np.ones((9, 2)))
    s = session_from_rates(t * 100, t * 100, t, np.ones((10, 2)))
    with pytest.raises(AnalysisError, match="smooth_sigma is for recordings"):
        analyse(s, smooth_sigma=1.0)
    with pytest.raises(AnalysisError, match="no population 'grid'"):
        analyse(s, variables=["grid"])
    with pytest.raises(AnalysisError, match="bin_size_cm is for sessions"):
        analyse(xr.Dataset(attrs={"hippo_rep_kind": "recording"}), bin_size_cm=2.0)
    with pytest.raises(AnalysisError, match="min_shift_s 20 s must be under half"):
        analyse(s, shuffles=2)


def test_bad_files(tmp_path):
    t = np.arange(10) * 0.02
    rates = session_from_rates(t, t, t, np.ones((10, 1)))
    with pytest.raises(SessionError, match="must end in .nc"):
        write_session(rates, tmp_path / "s.zarr")
    with pytest.raises(FileNotFoundError, match="not found"):
        open_session(tmp_path / "none.nc")
    (tmp_path / "junk.nc").write_bytes(b"not netcdf")
    with pytest.raises(SessionError, match="is not a readable netCDF file"):
        open_session(tmp_path / "junk.nc")
    pytest.importorskip("pynwb")
    with pytest.raises(SessionError, match="needs a session of spike times"):
        write_nwb(rates, tmp_path / "r.nwb")
    with pytest.raises(SessionError, match="is not a readable NWB file"):
        read_nwb(tmp_path / "junk.nc")


def test_cli_progress_on_stderr_unless_no_progress_and_the_same_result(tmp_path, capsys):
    pytest.importorskip("pynwb")
    nwb = write_nwb(_small(minutes=1), tmp_path / "x.nwb")
    args = ["analyse", str(nwb), "--shuffles", "4", "--min-shift", "5"]
    assert cli.main([*args, "--out", str(tmp_path / "on.nc")]) == 0
    err = capsys.readouterr().err
    assert "analyse: shuffled maps scored" in err and "100%" in err, err
    assert cli.main([*args, "--out", str(tmp_path / "off.nc"), "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    xr.testing.assert_identical(open_analysis(tmp_path / "on.nc"),
                                open_analysis(tmp_path / "off.nc"))
    # the library is quiet by default
    analyse(_small(minutes=1), shuffles=2, min_shift_s=5)
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------------- circular arenas
#: The disc session: minutes, shuffles.
DISC_MINUTES, DISC_SHUFFLES = 15, 50


@pytest.fixture(scope="module")
def disc():
    """A rat in a disc of 100 cm diameter (the one inscribed in the 100 cm box): two grid
    cells, a place cell at the centre and one off-centre, a cell firing along the rim."""
    rng = np.random.default_rng(5)
    t, x, y = trajectory(DISC_MINUTES, rng, arena_shape="circle")
    rim = 10 * np.exp(-((BOX / 2 - np.hypot(x - BOX / 2, y - BOX / 2)) ** 2) / (2 * 8**2))
    cells = {"grid": [poisson_spikes(t, grid_rate(x, y, SPACING, o, ph), rng)
                      for o, ph in ((0.0, (0, 0)), (20.0, (13, 21)))],
             "place": [poisson_spikes(t, place_rate(x, y, c), rng)
                       for c in ((50.0, 50.0), (30.0, 60.0))],
             "rim": [poisson_spikes(t, rim, rng)]}
    session = session_from_spikes(x, y, t, cells, arena=(0, BOX, 0, BOX), arena_shape="circle")
    return session, analyse(session, shuffles=DISC_SHUFFLES, seed=0)


def test_a_disc_sessions_maps_are_nan_outside_the_disc(disc):
    session, an = disc
    assert session.attrs["arena_shape"] == "circle"
    xc, yc = an["x"].values, an["y"].values
    inside = np.hypot(xc[None, :] - 50, yc[:, None] - 50) <= 50  # bin centres in the disc
    occ = an["occupancy"].isel(env=0).values
    assert (occ[~inside] == 0).all() and (occ[inside] > 0).mean() > 0.97  # a few rim bins
    maps = an["rate_map"].isel(env=0).values
    assert np.isnan(maps[:, ~inside]).all() and np.isfinite(maps[:, occ > 0]).all()
    m = session_rate_maps(session, "grid")
    assert m.attrs["arena_shape"] == "circle" and m.attrs["disc_cm"].tolist() == [50, 50, 50]
    assert an.attrs["session_arena_shape"] == "circle"


def test_a_disc_sessions_grid_and_place_cells_are_recovered(disc):
    _, an = disc
    grid, place = _pop(an, "grid"), _pop(an, "place")
    assert grid["is_grid"].all() and grid["hexagonal"].all()
    assert (grid["gridness_60"] > 1).all()
    assert (np.abs(grid["spacing_cm"] - SPACING) < 0.1 * SPACING).all()
    assert place["is_place"].all() and (place["n_fields"] == 1).all()
    for k, (cx, cy) in enumerate(((50.0, 50.0), (30.0, 60.0))):
        m = place["rate_map"].isel(unit=k)
        peak = m.where(m == m.max(), drop=True)
        assert abs(float(peak["x"][0]) - cx) < 5 and abs(float(peak["y"][0]) - cy) < 5
    assert not _pop(an, "rim")["is_place"].any() and not _pop(an, "rim")["is_grid"].any()


def test_a_disc_sessions_border_score_is_nan_with_its_reason(disc):
    _, an = disc
    assert an["border_score"].isnull().all() and an["border_score_null_q"].isnull().all()
    assert not an["is_border"].any()
    assert an.attrs["border_arena_shape"] == "circle"
    assert "rectangular box" in an.attrs["border_nan_reason"]


def test_a_disc_session_keeps_its_shape_through_nwb(disc, tmp_path):
    pytest.importorskip("pynwb")
    session, _ = disc
    back = read_nwb(write_nwb(session, tmp_path / "d.nwb"))
    assert back.attrs["arena_shape"] == "circle"
    assert back.attrs["arena"].tolist() == [0, BOX, 0, BOX]
    rect = read_nwb(tmp_path / "d.nwb", arena_shape="rectangle")
    assert "arena_shape" not in rect.attrs
