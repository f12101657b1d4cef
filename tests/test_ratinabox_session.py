"""Sessions from RatInABox (:mod:`hippo_rep.analysis.ratinabox_session`), notebook 04's
worked example: the conversion (units, rates, seeded spikes, errors) and the ground truth of a
seeded RatInABox rat analysed: grid cells grid and hexagonal at the planted spacing and
orientation, place cells place-like at their centres, boundary-vector cells border cells
along their planted wall, neither grid nor place.

Boundary-vector cells and the place rule: RatInABox's BVCs (Hartley et al. 2000's model,
angular tuning widths 10-30 degrees) fire along their wall and, less, along the two walls
beside it near the corners, a U-shaped field that covers a fifth to a half of the box. Such a
field is one field, spatially informative, and often not elongated enough
(``field_elongation`` 3-5 here) for the place rule's limit of 4, which called some of them
place-like; their border score (Solstad et al. 2008; 0.59-0.73 here, each wall fully
covered) makes them border cells, which the place rule excludes
(``classify.PLACE_NOT_BORDER``).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ratinabox")

from hippo_rep.analysis import analyse, session_from_ratinabox  # noqa: E402
from hippo_rep.analysis.ratinabox_session import (  # noqa: E402
    CM_PER_RATINABOX_UNIT,
    grid_scale,
    numpy_global_seed,
    simulate_ratinabox_session,
)
from hippo_rep.analysis.sessions import SessionError  # noqa: E402

#: The ground-truth session: 6 minutes (coverage of the 1 m box by RatInABox's rat, which
#: lingers near the walls), tracked at 20 Hz (RatInABox's default dt, 0.05 s) to keep it short.
MINUTES, HZ, SEED, SHUFFLES = 6, 20.0, 1, 20


def small_agent(steps: int = 200, seed: int = 0):
    """A RatInABox Agent in the default 1 m box that moved ``steps`` steps of 0.05 s, and its
    grid and place cells (not updated: their rates are evaluated at the positions)."""
    from ratinabox.Agent import Agent
    from ratinabox.Environment import Environment
    from ratinabox.Neurons import GridCells, PlaceCells

    with numpy_global_seed(seed):
        env = Environment()
        agent = Agent(env, {"dt": 0.05})
        grid = GridCells(agent, {"n": 3, "max_fr": 10.0})
        place = PlaceCells(agent, {"n": 2, "max_fr": 20.0, "widths": 0.1})
        for _ in range(steps):
            agent.update()
    return agent, grid, place


def test_conversion_units_times_and_populations():
    agent, grid, place = small_agent()
    s = session_from_ratinabox(agent, {"grid": grid, "place": place}, seed=3)
    pos = np.asarray(agent.history["pos"])
    np.testing.assert_allclose(s["x"].values, pos[:, 0] * CM_PER_RATINABOX_UNIT)
    np.testing.assert_allclose(s["y"].values, pos[:, 1] * CM_PER_RATINABOX_UNIT)
    np.testing.assert_allclose(s["time"].values, agent.history["t"])
    assert s.attrs["length_unit"] == "cm" and list(s.attrs["arena"]) == [0, 100, 0, 100]
    assert s["cell_population"].values.tolist() == ["grid"] * 3 + ["place"] * 2
    assert s["cell_id"].values.tolist() == ["0", "1", "2", "0", "1"]
    again = session_from_ratinabox(agent, {"grid": grid, "place": place}, seed=3)
    np.testing.assert_array_equal(s["spike_times"].values, again["spike_times"].values)
    other = session_from_ratinabox(agent, {"grid": grid, "place": place}, seed=4)
    assert not np.array_equal(s["spike_times"].values, other["spike_times"].values)


def test_spike_counts_follow_the_rates():
    """Poisson counts: summed over a long path, near the rates' integral."""
    agent, grid, place = small_agent(steps=2000)
    s = session_from_ratinabox(agent, {"grid": grid}, seed=0)
    pos = np.asarray(agent.history["pos"])
    expected = grid.get_state(evaluate_at=None, pos=pos).sum(axis=1) * 0.05
    got = s["n_spikes"].values
    assert (np.abs(got - expected) < 5 * np.sqrt(expected) + 5).all(), (got, expected)


def test_saved_history_is_used_when_the_neurons_were_updated():
    from ratinabox.Agent import Agent
    from ratinabox.Environment import Environment
    from ratinabox.Neurons import PlaceCells

    with numpy_global_seed(0):
        agent = Agent(Environment(), {"dt": 0.05})
        place = PlaceCells(agent, {"n": 2, "max_fr": 20.0, "noise_std": 0.5})
        for _ in range(100):
            agent.update()
            place.update()
    rates = np.asarray(place.history["firingrate"])
    assert (rates < 0).any()  # noise: negative rates count as 0
    s = session_from_ratinabox(agent, {"place": place}, seed=0)
    assert s.sizes["cell"] == 2
    place.history["firingrate"] = place.history["firingrate"][:-1]
    with pytest.raises(SessionError, match="99 saved firing rates for 100 Agent positions"):
        session_from_ratinabox(agent, {"place": place})


def test_refused_inputs_are_named():
    agent, grid, _ = small_agent(steps=5)
    with pytest.raises(SessionError, match="no populations"):
        session_from_ratinabox(agent, {})
    with pytest.raises(SessionError, match="history"):
        session_from_ratinabox(object(), {"grid": grid})
    with pytest.raises(SessionError, match="not a RatInABox Neurons"):
        session_from_ratinabox(agent, {"grid": object()})
    agent.history["t"][2] += 0.01
    with pytest.raises(SessionError, match="not evenly spaced"):
        session_from_ratinabox(agent, {"grid": grid})


def test_numpy_global_stream_is_put_back():
    state = np.random.get_state()  # noqa: NPY002 (the global stream RatInABox draws from)
    with numpy_global_seed(5):
        a = np.random.random()  # noqa: NPY002
    with numpy_global_seed(5):
        b = np.random.random()  # noqa: NPY002
    after = np.random.get_state()  # noqa: NPY002
    assert a == b and after[0] == state[0] and np.array_equal(after[1], state[1])


def test_missing_ratinabox_is_one_line(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ratinabox", None)
    with pytest.raises(ImportError, match=r"^simulating with RatInABox needs the ratinabox "
                       r"package .*`pip install ratinabox`") as info:
        simulate_ratinabox_session(0.1)
    assert "\n" not in str(info.value)


def test_grid_scale_is_the_cosines_wavelength():
    # fields of three cosines of wavelength λ lie 2λ/√3 apart
    assert grid_scale(40.0) == pytest.approx(0.4 * np.sqrt(3) / 2)


# ------------------------------------------------------------------------------ ground truth
@pytest.fixture(scope="module")
def simulated():
    session, truth = simulate_ratinabox_session(MINUTES, seed=SEED, hz=HZ)
    return session, truth, analyse(session, shuffles=SHUFFLES, seed=SEED).isel(env=0)


def _pop(an, name):
    return an.sel(unit=an["variable"] == name)


def test_ratinabox_session_matches_its_truth(simulated):
    session, truth, an = simulated
    assert an["variable"].values.tolist() == truth["population"].tolist()
    assert an["cell_id"].values.tolist() == truth["cell_id"].tolist()
    assert session.sizes["time"] == MINUTES * 60 * HZ
    assert "RatInABox" in session.attrs["source"]
    bvc = truth[truth["population"] == "boundary"]
    assert bvc["wall_sigma_angle"].between(10, 30).all()  # RatInABox's default widths


def test_ratinabox_grid_cells_are_hexagonal_grid_cells(simulated):
    _, truth, an = simulated
    grid, planted = _pop(an, "grid"), truth[truth["population"] == "grid"]
    assert grid["is_grid"].all() and grid["hexagonal"].all()
    assert not grid["is_place"].any() and not grid["is_band"].any()
    spacing = planted["spacing_cm"].to_numpy()
    assert (np.abs(grid["spacing_cm"].values - spacing) < 0.1 * spacing).all()
    off = (grid["orientation"].values - planted["orientation"].to_numpy() + 30) % 60 - 30
    assert (np.abs(off) < 5).all(), grid["orientation"].values


def test_ratinabox_place_cells_are_place_cells(simulated):
    _, truth, an = simulated
    place, planted = _pop(an, "place"), truth[truth["population"] == "place"]
    assert place["is_place"].all() and not place["is_grid"].any()
    for k, (cx, cy) in enumerate(planted[["centre_x", "centre_y"]].to_numpy()):
        m = place["rate_map"].isel(unit=k)
        peak = m.where(m == m.max(), drop=True)
        assert abs(float(peak["x"][0]) - cx) < 6 and abs(float(peak["y"][0]) - cy) < 6


def test_ratinabox_boundary_cells_are_not_grid_cells(simulated):
    _, _, an = simulated
    bvc = _pop(an, "boundary")
    assert not bvc["is_grid"].any() and not bvc["hexagonal"].any()
    assert not bvc["is_band"].any()


#: The wall a BVC of preferred allocentric direction (degrees, 0 east, 90 north) fires along:
#: the map's edge in that direction.
WALL_OF_ANGLE = {0.0: "x_max", 90.0: "y_max", 180.0: "x_min", 270.0: "y_min"}


def test_ratinabox_boundary_cells_are_border_cells_not_place_cells(simulated):
    """The issue's "boundary cells neither (grid nor place)": every BVC is a border cell
    along its planted wall, none is place-like; no grid or place cell is a border cell."""
    _, truth, an = simulated
    bvc, planted = _pop(an, "boundary"), truth[truth["population"] == "boundary"]
    assert not bvc["is_place"].any()
    assert bvc["is_border"].all(), bvc["border_score"].values
    assert (bvc["border_score"] > 0.5).all()
    walls = [WALL_OF_ANGLE[a] for a in planted["wall_angle"]]
    assert bvc["border_wall"].values.tolist() == walls
    for pop in ("grid", "place"):
        cells = _pop(an, pop)
        assert not cells["is_border"].any() and (cells["border_score"] < 0.1).all(), pop
