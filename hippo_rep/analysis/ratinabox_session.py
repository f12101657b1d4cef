"""Sessions from RatInABox: an outside simulator's rat and cells as a session to analyse.

`RatInABox <https://github.com/RatInABox-Lab/RatInABox>`_ (George et al. 2024, eLife
13:RP85274) simulates an ``Agent`` moving in a continuous ``Environment`` (a random motion
model fitted to rats: Ornstein-Uhlenbeck speed and rotational velocity, lingering near the
walls) and the firing rates of its ``Neurons`` (``GridCells``, ``PlaceCells``,
``BoundaryVectorCells``, ...). :func:`session_from_ratinabox` turns an Agent's trajectory
and its Neurons' rates into a session (:mod:`~hippo_rep.analysis.sessions`): positions from
RatInABox's metres to cm, times in seconds, each cell's rate (Hz) turned into Poisson spike
times drawn from a seeded :class:`numpy.random.Generator`.
:func:`simulate_ratinabox_session` runs the simulation of notebook 04 (grid, place and
boundary-vector cells in a 1 m box) and returns its planted truth.

RatInABox is optional (``pip install ratinabox``; in hippo_rep's ``dev`` extra): it is
imported only when a simulation runs. :func:`session_from_ratinabox` reads the objects it is
given and does not import it.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from .nwb import SPIKE_RESOLUTION_ATTR, SYNTHETIC_SPECIES
from .sessions import SessionError, session_from_spikes
from .synthetic_session import poisson_spike_times

#: Centimetres per RatInABox length unit (its environments are in metres).
CM_PER_RATINABOX_UNIT = 100.0
#: Positions evaluated per call when rates are computed from a population's ``get_state``
#: (a boundary-vector cell's rate traces 180 rays per position: bounded memory).
RATE_CHUNK = 2000

#: :func:`simulate_ratinabox_session`'s cells. Grid cells: spacing (cm, the distance between
#: neighbouring fields) and lattice orientations (degrees, modulo 60).
RIB_GRID_SPACING_CM = 40.0
RIB_GRID_ORIENTATIONS = (0.0, 10.0, 20.0, 30.0)
#: Place cells: field centres (cm) and the Gaussian's SD (cm).
RIB_PLACE_CENTRES = ((30.0, 30.0), (70.0, 60.0), (45.0, 80.0), (20.0, 70.0))
RIB_PLACE_WIDTH_CM = 8.0
#: Boundary-vector cells (allocentric): preferred distance to a wall (cm) and direction
#: (degrees from +x towards +y: 0 east, 90 north, 180 west, 270 south).
RIB_BVC_DISTANCES_CM = (5.0, 10.0, 5.0, 15.0)
RIB_BVC_ANGLES = (0.0, 90.0, 180.0, 270.0)
#: Peak rates (Hz): RatInABox's ``max_fr`` of each population. A boundary-vector cell's
#: ``max_fr`` is its rate facing an infinite wall; along one wall of a box it fires less.
RIB_MAX_FR = {"grid": 10.0, "place": 15.0, "boundary": 20.0}
#: Tracking rate of the simulation (Hz): the Agent's ``dt`` is its inverse.
RIB_TRACKING_HZ = 50.0
#: Side of the square box (cm).
RIB_BOX_CM = 100.0

#: The subject of a RatInABox session (session attrs, NWB ``Subject``): no animal.
RATINABOX_SUBJECT = {"subject_id": "ratinabox-agent", "subject_species": SYNTHETIC_SPECIES,
                     "subject_sex": "U", "subject_age": "P0D/",
                     "subject_description": "a RatInABox Agent (simulated rat)"}


def _ratinabox():
    """The ratinabox package, or an ImportError of one line naming how to install it."""
    try:
        import ratinabox
    except ImportError as err:
        raise ImportError(f"simulating with RatInABox needs the ratinabox package ({err}); "
                          "install it with `pip install ratinabox` (it is in hippo_rep's "
                          "dev extra)") from None
    return ratinabox


@contextlib.contextmanager
def numpy_global_seed(seed: int) -> Iterator[None]:
    """Seed numpy's global random stream for the ``with`` block, then put it back.

    RatInABox draws from numpy's global stream (``np.random.*``) and takes no Generator:
    this makes one of its simulations reproducible without moving anyone else's stream.
    """
    state = np.random.get_state()  # noqa: NPY002 (RatInABox's stream, restored below)
    np.random.seed(seed)  # noqa: NPY002
    try:
        yield
    finally:
        np.random.set_state(state)  # noqa: NPY002


def _history(obj, key: str, what: str) -> np.ndarray:
    history = getattr(obj, "history", None)
    if not isinstance(history, Mapping) or key not in history:
        raise SessionError(f"{what} has no history[{key!r}]: pass a RatInABox Agent (or "
                           "Neurons) that saved its history (save_history=True)")
    return np.asarray(history[key], dtype=np.float64)


def _rates(neurons, name: str, pos: np.ndarray, n_time: int) -> np.ndarray:
    """(time, cell) rates of one population: its saved history when it was updated with the
    Agent at every step, else its ``get_state`` evaluated at the Agent's positions."""
    history = getattr(neurons, "history", None)
    saved = history.get("firingrate", []) if isinstance(history, Mapping) else []
    if len(saved):
        rates = np.asarray(saved, dtype=np.float64)
        if rates.ndim != 2 or rates.shape[0] != n_time:
            raise SessionError(f"population {name!r}: {rates.shape[0]} saved firing rates for "
                               f"{n_time} Agent positions; update the Neurons at every Agent "
                               "step, or not at all (their rates are then evaluated at the "
                               "Agent's positions)")
        return rates
    if getattr(neurons, "reference_frame", "allocentric") != "allocentric":
        raise SessionError(f"population {name!r} is egocentric: its rates depend on the head "
                           "direction, so update it with the Agent at every step")
    if not callable(getattr(neurons, "get_state", None)):
        raise SessionError(f"population {name!r} is not a RatInABox Neurons object "
                           f"(no get_state); got {type(neurons).__name__}")
    blocks = [np.asarray(neurons.get_state(evaluate_at=None, pos=pos[i:i + RATE_CHUNK]),
                         dtype=np.float64)
              for i in range(0, n_time, RATE_CHUNK)]
    return np.concatenate(blocks, axis=1).T


def session_from_ratinabox(agent, populations: Mapping[str, object], *, seed: int = 0,
                           attrs: Mapping | None = None) -> xr.Dataset:
    """A session from a RatInABox Agent's trajectory and its Neurons' rates.

    Parameters
    ----------
    agent : ratinabox.Agent.Agent
        An Agent of a 2D Environment that has moved (``agent.update()``) with its history
        saved: ``agent.history["t"]`` (s, evenly spaced: a constant ``dt``) and
        ``agent.history["pos"]`` (the Environment's unit, metres) become the tracking.
    populations : mapping of str to ratinabox.Neurons.Neurons
        ``{population name: Neurons}`` (``GridCells``, ``PlaceCells``,
        ``BoundaryVectorCells``, ...), each of ``n`` cells with ids ``"0"`` … ``"n-1"``.
        Rates (Hz) come from a population's saved ``history["firingrate"]`` when it was
        updated at every Agent step (noise and egocentric cells included), else from its
        ``get_state`` at the Agent's positions (allocentric cells only); negative rates
        (RatInABox's noise) count as 0.
    seed : int
        Seed of the :class:`numpy.random.Generator` that draws the spike times.
    attrs : mapping, optional
        Extra session attrs (default: :data:`RATINABOX_SUBJECT` and the source).

    Returns
    -------
    xarray.Dataset
        The session (:func:`~hippo_rep.analysis.session_from_spikes`, lengths in cm, the
        arena the Environment's extent); each cell's spikes are Poisson in each tracking
        sample of its rate, placed uniformly within the sample
        (:func:`~hippo_rep.analysis.synthetic_session.poisson_spike_times`).

    Raises
    ------
    SessionError
        An Agent without a saved history or of a 1D Environment, unevenly spaced times, no
        populations, or a population whose saved rates do not match the Agent's steps.
    """
    t = _history(agent, "t", "the agent")
    pos = _history(agent, "pos", "the agent")
    if pos.ndim != 2 or pos.shape[1] != 2:
        raise SessionError("the agent's positions are not 2-D (x, y): a session is a 2D arena; "
                           f"got positions of shape {pos.shape}")
    if t.size < 2 or t.size != pos.shape[0]:
        raise SessionError(f"the agent's history holds {t.size} times and {pos.shape[0]} "
                           "positions; move it (agent.update()) for at least 2 steps")
    dt = np.diff(t)
    if not np.allclose(dt, dt[0], rtol=1e-6, atol=1e-9) or dt[0] <= 0:
        raise SessionError("the agent's times are not evenly spaced; update it with a "
                           "constant dt")
    if not populations:
        raise SessionError("no populations given: pass {name: Neurons}")
    rng = np.random.default_rng(seed)
    cells = {}
    for name, neurons in populations.items():
        rates = np.maximum(_rates(neurons, str(name), pos, t.size), 0.0)
        cells[str(name)] = [poisson_spike_times(t, r, rng) for r in rates.T]
    env = getattr(agent, "Environment", None)
    extent = getattr(env, "extent", None)
    arena = None if extent is None else np.asarray(extent, dtype=np.float64)
    if arena is not None:
        arena = arena * CM_PER_RATINABOX_UNIT
    source = f"RatInABox Agent, {t.size} steps of {dt[0]:g} s; spikes seed {seed}"
    return session_from_spikes(
        pos[:, 0] * CM_PER_RATINABOX_UNIT, pos[:, 1] * CM_PER_RATINABOX_UNIT, t, cells,
        arena=arena, attrs={"source": source, **RATINABOX_SUBJECT,
                            SPIKE_RESOLUTION_ATTR: float(np.spacing(t[-1])), **(attrs or {})})


def grid_scale(spacing_cm: float) -> float:
    """RatInABox's ``gridscale`` (m, the wavelength of its three cosines) of a grid whose
    neighbouring fields lie ``spacing_cm`` apart: spacing = 2 / √3 × wavelength."""
    return spacing_cm / CM_PER_RATINABOX_UNIT * math.sqrt(3) / 2


def simulate_ratinabox_session(minutes: float = 10.0, seed: int = 0, *,
                               hz: float = RIB_TRACKING_HZ,
                               grid_orientations: Sequence[float] = RIB_GRID_ORIENTATIONS,
                               spacing_cm: float = RIB_GRID_SPACING_CM,
                               place_centres: Sequence[Sequence[float]] = RIB_PLACE_CENTRES,
                               bvc_distances_cm: Sequence[float] = RIB_BVC_DISTANCES_CM,
                               bvc_angles: Sequence[float] = RIB_BVC_ANGLES,
                               ) -> tuple[xr.Dataset, pd.DataFrame]:
    """A RatInABox rat in a 1 m box for ``minutes``, with grid, place and boundary-vector
    cells, as a session and its planted truth (notebook 04's worked example).

    The Agent moves with RatInABox's default motion model (``dt`` = 1 / ``hz``) from a random
    start; ``GridCells`` (rectified cosines, ``spacing_cm`` apart, lattice orientations
    ``grid_orientations`` degrees, random phases), ``PlaceCells`` (Gaussian, σ
    :data:`RIB_PLACE_WIDTH_CM`, at ``place_centres`` cm) and allocentric
    ``BoundaryVectorCells`` (preferred wall distances ``bvc_distances_cm`` and directions
    ``bvc_angles``, RatInABox's random angular and distance tuning widths), peak rates
    :data:`RIB_MAX_FR`. ``seed`` seeds RatInABox (numpy's global stream, restored after:
    :func:`numpy_global_seed`) and the spike times (:func:`session_from_ratinabox`).

    Returns
    -------
    (xarray.Dataset, pandas.DataFrame)
        The session (populations ``grid``, ``place``, ``boundary``) and its truth, one row
        per cell in the session's order: ``population``, ``cell_id``, ``spacing_cm`` and
        ``orientation`` (grid cells, degrees modulo 60 as the analysis reports them),
        ``centre_x``, ``centre_y`` (place cells), ``wall_distance_cm``, ``wall_angle`` and
        the tuning widths RatInABox drew, ``wall_sigma_cm`` (distance) and
        ``wall_sigma_angle`` (degrees) (boundary cells); NaN elsewhere.

    Raises
    ------
    ImportError
        RatInABox is not installed (one line: how to install it).
    """
    _ratinabox()
    from importlib.metadata import version as installed

    from ratinabox.Agent import Agent
    from ratinabox.Environment import Environment
    from ratinabox.Neurons import BoundaryVectorCells, GridCells, PlaceCells

    m = CM_PER_RATINABOX_UNIT
    n_steps = int(round(minutes * 60 * hz))
    orientations = np.asarray(grid_orientations, dtype=np.float64)
    centres = np.asarray(place_centres, dtype=np.float64).reshape(-1, 2)
    with numpy_global_seed(seed), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # RatInABox's notes on its parameters
        env = Environment({"scale": RIB_BOX_CM / m})
        agent = Agent(env, {"dt": 1.0 / hz})
        # RatInABox's three cosines point along the orientation and 60°, 120° from it; the
        # field lattice they make lies 30° from them
        grid = GridCells(agent, {
            "gridscale": [grid_scale(spacing_cm)] * orientations.size,
            "orientation": list(np.deg2rad(orientations - 30.0)),
            "max_fr": RIB_MAX_FR["grid"]})
        place = PlaceCells(agent, {"place_cell_centres": centres / m,
                                   "widths": RIB_PLACE_WIDTH_CM / m,
                                   "max_fr": RIB_MAX_FR["place"]})
        bvc = BoundaryVectorCells(agent, {
            "tuning_distance": [d / m for d in bvc_distances_cm],
            "tuning_angle": [float(a) for a in bvc_angles],
            "max_fr": RIB_MAX_FR["boundary"]})
        for _ in range(n_steps):
            agent.update()
    populations = {"grid": grid, "place": place, "boundary": bvc}
    session = session_from_ratinabox(agent, populations, seed=seed, attrs={
        "source": f"simulate_ratinabox_session(minutes={minutes:g}, seed={seed}), "
                  f"RatInABox {installed('ratinabox')}"})
    rows = [{"population": "grid", "cell_id": str(i), "spacing_cm": spacing_cm,
             "orientation": float(o % 60)} for i, o in enumerate(orientations)]
    rows += [{"population": "place", "cell_id": str(i), "centre_x": float(c[0]),
              "centre_y": float(c[1])} for i, c in enumerate(centres)]
    rows += [{"population": "boundary", "cell_id": str(i), "wall_distance_cm": float(d),
              "wall_angle": float(a), "wall_sigma_cm": float(sd * m),
              "wall_sigma_angle": float(np.rad2deg(sa))}
             for i, (d, a, sd, sa) in enumerate(zip(bvc_distances_cm, bvc_angles,
                                                    bvc.sigma_distances, bvc.sigma_angles,
                                                    strict=True))]
    truth = pd.DataFrame(rows, columns=["population", "cell_id", "spacing_cm", "orientation",
                                        "centre_x", "centre_y", "wall_distance_cm",
                                        "wall_angle", "wall_sigma_cm", "wall_sigma_angle"])
    return session, truth
