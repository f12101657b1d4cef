"""Remapping across sessions (hippo_rep.analysis.session_remapping), on simulated ground truth.

The package's session simulator (:func:`~hippo_rep.analysis.simulate_session`: 4 grid, 4
place, 2 boundary and 2 band cells in a 100 cm box) gives two sessions of the same cells:
the same fields on another trajectory (cells keep their maps), fields redrawn
(``field_seed``: global remapping) or rates doubled (``rate_scale=2``: rate remapping).

A redrawn field may land where it was: a boundary cell redrawn onto its old wall, a place
field redrawn within 3 field widths (24 cm) of its old centre has not *moved*; every other
redrawn cell has (grid phases and orientations, band angles, place fields farther away).

Measured with these settings (3-minute sessions, 100 shuffles, 99th percentile), over 8
pairs of seeds (trajectory seeds 10 + 2k and 11 + 2k, field seed 100 + k): the same fields,
96 of 96 cells stable; fields redrawn, 1 of the 86 cells whose field moved stable (a band
cell), 7 of the 10 that did not move. On the fixture's 2 pairs (k = 0, 1): 24 of 24 stable;
0 of the 20 moved cells stable (their map correlations at most 0.23), the 2 boundary cells
on their old wall stable.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hippo_rep import cli
from hippo_rep.analysis.session_remapping import (
    score_map_correlation,
    session_remapping,
    write_session_remapping,
)
from hippo_rep.analysis.sessions import (
    SessionError,
    session_activity,
    session_from_rates,
    session_from_spikes,
    session_node,
    session_rate_maps,
    write_session,
)
from hippo_rep.analysis.shuffle import null_scores
from hippo_rep.analysis.synthetic_session import (
    place_cell_rate,
    poisson_spike_times,
    simulate_session,
    simulate_trajectory,
)

MINUTES = 3
#: (trajectory seed of A, of B, field seed of the remapped B) of the fixture's pairs.
PAIRS = ((10, 11, 100), (12, 13, 101))


def _moved(truth_a, truth_g) -> np.ndarray:
    """Which cells' fields moved (module doc), per cell."""
    pop = truth_a["population"].to_numpy()
    shift = np.hypot(truth_a["centre_x"] - truth_g["centre_x"],
                     truth_a["centre_y"] - truth_g["centre_y"]).to_numpy()
    same_wall = (pop == "boundary") & (truth_a["wall"] == truth_g["wall"]).to_numpy()
    return ~(same_wall | ((pop == "place") & (shift < 24)))


@pytest.fixture(scope="module")
def sessions():
    """Per pair: session A, B (A's fields), B' (fields redrawn), and which cells' fields
    moved in B' (all but boundary cells redrawn onto their old wall)."""
    out = []
    for sa, sb, fs in PAIRS:
        a, truth_a = simulate_session(MINUTES, seed=sa)
        b, _ = simulate_session(MINUTES, seed=sb)
        g, truth_g = simulate_session(MINUTES, seed=sb, field_seed=fs)
        out.append((a, b, g, _moved(truth_a, truth_g)))
    return out


@pytest.fixture(scope="module")
def same(sessions):
    return [session_remapping(a, b, rng=k) for k, (a, b, _, _) in enumerate(sessions)]


@pytest.fixture(scope="module")
def remapped(sessions):
    return [session_remapping(a, g, rng=k) for k, (a, _, g, _) in enumerate(sessions)]


def test_cells_that_keep_their_fields_are_stable(same):
    stable = np.concatenate([r["stable"].values for r in same])
    assert stable.mean() >= 0.9, stable  # measured 24 of 24 (96 of 96 over 8 pairs)
    for r in same:
        assert (r["map_corr"] > 0.6).all(), r["map_corr"].values
        assert (r["pv_corr_mean"].sel(population=["grid", "place"]) > 0.7).all()
        assert r["stable"].dtype == bool and r["map_corr"].dims == ("cell",)
        assert r["pv_corr"].dims == ("population", "y", "x")


def test_cells_with_redrawn_fields_are_not_stable(sessions, same, remapped):
    moved = np.concatenate([r["stable"].values[s[3]] for r, s in zip(remapped, sessions,
                                                                      strict=True)])
    assert moved.mean() <= 0.1, moved  # measured 0 of 20 (1 of 86 over 8 pairs)
    for r, kept, (_, _, _, m) in zip(remapped, same, sessions, strict=True):
        # a boundary cell redrawn onto its old wall kept its field: stable, as it should be
        on_old_wall = ~m & (r["cell_population"].values == "boundary")
        assert r["stable"].values[on_old_wall].all()
        assert (r["map_corr"].values[m] < 0.4).all(), r["map_corr"].values
        # population vectors decorrelate (4 cells a population: a noisy statistic)
        pops = ["grid", "place"]
        assert (r["pv_corr_mean"].sel(population=pops)
                < kept["pv_corr_mean"].sel(population=pops) - 0.3).all()


def test_doubled_rates_give_a_rate_ratio_of_two_and_keep_the_maps():
    a, _ = simulate_session(MINUTES, seed=10)
    d, _ = simulate_session(MINUTES, seed=10, rate_scale=2.0)  # same trajectory, new spikes
    r = session_remapping(a, d, shuffles=20)
    ratio = r["rate_ratio"].values
    assert abs(np.median(ratio) - 2) < 0.1 and ((ratio > 1.5) & (ratio < 2.7)).all(), ratio
    assert r["stable"].all()
    assert r["rate_ratio"].attrs["units"] == "1" and r["mean_rate_a"].attrs["units"] == "Hz"


def test_rates_exactly_doubled_give_exactly_two_and_correlation_one():
    rng = np.random.default_rng(0)
    t, x, y = simulate_trajectory(2, rng)
    rates = np.stack([place_cell_rate(x, y, c) + 0.5 for c in ((30, 30), (70, 60), (50, 50))],
                     axis=1)
    a = session_from_rates(x, y, t, {"place": rates}, arena=(0, 100, 0, 100))
    b = session_from_rates(x, y, t, {"place": 2 * rates}, arena=(0, 100, 0, 100))
    r = session_remapping(a, b, shuffles=10, min_shift_s=10)
    np.testing.assert_allclose(r["rate_ratio"], 2.0, rtol=1e-12)
    np.testing.assert_allclose(r["map_corr"], 1.0, rtol=1e-12)
    np.testing.assert_allclose(r["pv_corr"].where(np.isfinite(r["pv_corr"]), 1), 1.0,
                               rtol=1e-9)


def test_the_null_is_the_observed_score_at_shift_zero():
    """The shuffled maps are made as the real ones (same bins, smoothing, rates): at a shift
    of 0 the null's map correlation is the observed one."""
    a, _ = simulate_session(2, seed=1)
    b, _ = simulate_session(2, seed=2)
    ma = session_rate_maps(a, "place")
    mb = session_rate_maps(b, "place")
    observed = score_map_correlation(xr.Dataset({"rate_map": mb["rate_map"].isel(env=0),
                                                 "reference_map": ma["rate_map"].isel(env=0)}))
    act = session_activity(b, "place").drop_vars("cell_id")
    ref = ma["rate_map"].isel(env=0).drop_vars(["x", "y", "cell_id", "variable", "unit_index"],
                                               errors="ignore")
    null = null_scores(act, session_node(b), xr.DataArray([[0, 3000]], dims=("env", "shuffle")),
                       mb["node_map"].values, mb.sizes["world_node"], [score_map_correlation],
                       ["map_corr"], smooth_sigma=mb.attrs["smooth_sigma_bins"],
                       reference=ref)["map_corr"].isel(env=0)
    np.testing.assert_allclose(null.isel(shuffle=0), observed, rtol=1e-9)
    assert (null.isel(shuffle=1) < observed - 0.3).all()  # a real shift breaks the maps


def _two_cells(ids, seed=0):
    rng = np.random.default_rng(seed)
    t, x, y = simulate_trajectory(2, rng)
    trains = {str(i): poisson_spike_times(t, place_cell_rate(x, y, (20 + 10 * k, 50)), rng)
              for k, i in enumerate(ids)}
    s = session_from_spikes(x, y, t, {"place": list(trains.values())}, arena=(0, 100, 0, 100))
    return s.assign_coords(cell_id=("cell", np.array(list(trains), dtype=str)))


def test_cells_in_only_one_session_are_an_error_or_left_out_on_request():
    a = _two_cells(["u1", "u2", "u3", "u4"], 0)
    b = _two_cells(["u2", "u3", "u4", "u9"], 1)
    with pytest.raises(SessionError, match=r"^sessions A and B hold different cells: 1 only in "
                                           r"A \(place/u1\), 1 only in B \(place/u9\); pass "
                                           r"common_cells=True") as err:
        session_remapping(a, b, shuffles=2, min_shift_s=5)
    assert "\n" not in str(err.value)
    r = session_remapping(a, b, shuffles=2, min_shift_s=5, common_cells=True)
    assert r["cell_id"].values.tolist() == ["u2", "u3", "u4"]
    assert r.attrs["cells_only_a"] == ["place/u1"] and r.attrs["n_cells_only_b"] == 1
    with pytest.raises(SessionError, match="no cell in common"):
        session_remapping(a, _two_cells(["x"], 2), shuffles=2, min_shift_s=5,
                          common_cells=True)


def test_cli_writes_the_remapping_netcdf(tmp_path, capsys):
    a, _ = simulate_session(2, seed=1)
    b, _ = simulate_session(2, seed=2, field_seed=7)
    pa, pb = write_session(a, tmp_path / "a.nc"), write_session(b, tmp_path / "b.nc")
    out = tmp_path / "remap.nc"
    assert cli.main(["remap-sessions", str(pa), str(pb), "--out", str(out),
                     "--shuffles", "20", "--bin-size", "5"]) == 0
    text = capsys.readouterr().out
    assert "cells stable" in text and str(out) in text
    back = xr.open_dataset(out, engine="h5netcdf").load()
    expected = session_remapping(a, b, shuffles=20, bin_size_cm=5.0)
    np.testing.assert_array_equal(back["map_corr"], expected["map_corr"])
    assert back["stable"].values.tolist() == expected["stable"].values.astype(int).tolist()
    assert back.attrs["bin_size_cm"] == 5.0 and back.sizes["x"] == 20
    assert cli.main(["remap-sessions", str(pa), str(pb), "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    with pytest.raises(SessionError, match="must end in .nc"):
        write_session_remapping(expected, tmp_path / "r.zarr")
