"""Simulated sessions with known ground truth: a rat in a square box and cells of known rate
maps, with Poisson spike times, for tests, docs and the worked example of notebook 04.

The trajectory is a smooth random walk: an Ornstein-Uhlenbeck velocity per axis (time constant
``tau_s``, stationary SD ``speed_cm_s``), positions reflected at the walls. The cells are
hexagonal grid cells (rectified sum of three cosines 60 degrees apart, of a given spacing,
orientation and phase), place cells (one Gaussian field), band cells (one rectified cosine)
and boundary cells (a Gaussian band along one wall, BVC-like). Spikes are Poisson per tracking
sample, uniform within the sample. Lengths in cm, times in s, rates in Hz, angles in degrees
from +x towards +y.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from .arena import CIRCLE, RECTANGLE, check_arena_shape
from .nwb import SPIKE_RESOLUTION_ATTR, SYNTHETIC_SPECIES
from .sessions import session_from_spikes
from .synthetic import plane_wave_sum

#: Tracking rate of :func:`simulate_trajectory` (Hz).
TRACKING_HZ = 50.0

#: Side of the square box (cm).
BOX_CM = 100.0

#: Walls of the box, by name: (axis, position as a fraction of the side).
WALLS = {"west": (0, 0.0), "east": (0, 1.0), "south": (1, 0.0), "north": (1, 1.0)}


def simulate_trajectory(minutes: float, rng: np.random.Generator, *, box_cm: float = BOX_CM,
                        hz: float = TRACKING_HZ, speed_cm_s: float = 15.0, tau_s: float = 1.0,
                        arena_shape: str = RECTANGLE
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Times (s) and x, y (cm) of a smooth random walk in a ``box_cm`` square (or, with
    ``arena_shape="circle"``, in the disc of diameter ``box_cm`` inscribed in it), from its
    centre.

    Each axis' velocity is an Ornstein-Uhlenbeck process (time constant ``tau_s``, stationary
    SD ``speed_cm_s``); a step that crosses a wall is reflected and reverses that velocity
    (on a circle: the position is reflected radially at the rim and the velocity's radial
    component reversed).
    """
    check_arena_shape(arena_shape)
    if arena_shape == CIRCLE:
        return _trajectory_in_disc(minutes, rng, box_cm, hz, speed_cm_s, tau_s)
    n = int(minutes * 60 * hz)
    dt = 1 / hz
    a = np.exp(-dt / tau_s)
    kicks = speed_cm_s * np.sqrt(1 - a * a) * rng.standard_normal((n, 2))
    pos = np.empty((n, 2))
    v, p = np.zeros(2), np.full(2, box_cm / 2)
    for i in range(n):
        v = a * v + kicks[i]
        p = p + v * dt
        low, high = p < 0, p > box_cm
        p = np.where(low, -p, np.where(high, 2 * box_cm - p, p))
        v = np.where(low | high, -v, v)
        pos[i] = p
    return np.arange(n) * dt, pos[:, 0], pos[:, 1]


def _trajectory_in_disc(minutes: float, rng: np.random.Generator, box_cm: float, hz: float,
                        speed_cm_s: float, tau_s: float
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = int(minutes * 60 * hz)
    dt = 1 / hz
    a = np.exp(-dt / tau_s)
    kicks = speed_cm_s * np.sqrt(1 - a * a) * rng.standard_normal((n, 2))
    pos = np.empty((n, 2))
    r = box_cm / 2
    c = np.full(2, r)
    v, p = np.zeros(2), c.copy()
    for i in range(n):
        v = a * v + kicks[i]
        p = p + v * dt
        d = float(np.hypot(*(p - c)))
        if d > r:
            u = (p - c) / d
            p = c + u * max(2 * r - d, 0.0)  # reflected radially at the rim
            v = v - 2 * float(v @ u) * u
        pos[i] = p
    return np.arange(n) * dt, pos[:, 0], pos[:, 1]


def grid_cell_rate(x, y, spacing: float = 40.0, orientation: float = 0.0,
                   phase: Sequence[float] = (0.0, 0.0), peak: float = 10.0) -> np.ndarray:
    """Rectified sum of three cosines 60 degrees apart: a hexagonal grid of ``spacing`` cm
    (distance between neighbouring fields) and ``orientation`` (degrees, modulo 60), with a
    field at ``phase`` (x, y); at most ``peak`` Hz."""
    k = 4 * np.pi / (np.sqrt(3) * spacing)
    total = plane_wave_sum(x, y, k, [orientation + 60 * j + 30 for j in range(3)], phase)
    return peak * np.maximum(total, 0) / 3


def place_cell_rate(x, y, centre: Sequence[float], width: float = 8.0,
                    peak: float = 15.0) -> np.ndarray:
    """One Gaussian field at ``centre`` (x, y), SD ``width`` cm, ``peak`` Hz."""
    return peak * np.exp(-((x - centre[0]) ** 2 + (y - centre[1]) ** 2) / (2 * width**2))


def band_cell_rate(x, y, wavelength: float = 25.0, angle: float = 30.0,
                   peak: float = 10.0) -> np.ndarray:
    """One rectified cosine of ``wavelength`` cm along ``angle``: parallel bands."""
    return peak * np.maximum(plane_wave_sum(x, y, 2 * np.pi / wavelength, [angle], (0.0, 0.0)), 0)


def boundary_cell_rate(x, y, wall: str = "west", distance: float = 0.0, width: float = 8.0,
                       peak: float = 10.0, box_cm: float = BOX_CM) -> np.ndarray:
    """A boundary-vector-like cell: a Gaussian band (SD ``width`` cm) at ``distance`` cm from
    one wall of the box (``"west"``: x = 0, ``"east"``, ``"south"``: y = 0, ``"north"``),
    all along it."""
    if wall not in WALLS:
        raise ValueError(f"wall must be one of {', '.join(WALLS)}; got {wall!r}")
    axis, at = WALLS[wall]
    d = np.abs((x, y)[axis] - at * box_cm)
    return peak * np.exp(-((d - distance) ** 2) / (2 * width**2))


def poisson_spike_times(t: np.ndarray, rate: np.ndarray, rng: np.random.Generator
                        ) -> np.ndarray:
    """Poisson spikes of ``rate`` (Hz) per tracking sample at times ``t`` (s, evenly spaced),
    placed uniformly within each sample; sorted and unique."""
    dt = t[1] - t[0]
    idx = np.repeat(np.arange(t.size), rng.poisson(rate * dt))
    return np.unique(t[idx] + rng.uniform(-dt / 2, dt / 2, idx.size))


#: The subject of a :func:`simulate_session` session (session attrs, written to NWB as its
#: ``Subject``): no animal, so the species is NCBI's "synthetic construct", sex unknown, age
#: any ("P0D/": 0 days or older, open-ended).
SIMULATED_SUBJECT = {"subject_id": "simulated", "subject_species": SYNTHETIC_SPECIES,
                     "subject_sex": "U", "subject_age": "P0D/",
                     "subject_description": "simulated by hippo_rep's simulate_session"}


#: :func:`simulate_session`'s cells: grid orientations (deg) and phases (cm), place-field
#: centres (cm), the walls of the boundary cells and the angles of the band cells (deg).
GRID_ORIENTATIONS = (0.0, 10.0, 20.0, 30.0)
GRID_PHASES = ((0.0, 0.0), (7.0, 3.0), (13.0, 21.0), (30.0, 10.0))
PLACE_CENTRES = ((30.0, 30.0), (70.0, 60.0), (45.0, 80.0), (20.0, 70.0))
BOUNDARY_WALLS = ("west", "north")
BAND_ANGLES = (30.0, 100.0)


def redrawn_fields(field_seed: int, box_cm: float = BOX_CM) -> dict[str, tuple]:
    """New fields for :func:`simulate_session`'s cells (global remapping), drawn from
    ``numpy.random.default_rng(field_seed)``: grid orientations uniform in [0, 60) degrees
    and phases uniform in the box, place-field centres uniform in the box's inner 80%,
    boundary walls among :data:`WALLS`, band angles uniform in [0, 180) degrees. Keys
    ``grid_orientations``, ``grid_phases``, ``place_centres``, ``boundary_walls``,
    ``band_angles``, one entry per cell."""
    r = np.random.default_rng(field_seed)
    lo, hi = 0.1 * box_cm, 0.9 * box_cm
    return {
        "grid_orientations": tuple(float(v) for v in r.uniform(0, 60, len(GRID_ORIENTATIONS))),
        "grid_phases": tuple((float(a), float(b)) for a, b in
                             r.uniform(0, box_cm, (len(GRID_PHASES), 2))),
        "place_centres": tuple((float(a), float(b)) for a, b in
                               r.uniform(lo, hi, (len(PLACE_CENTRES), 2))),
        "boundary_walls": tuple(str(w) for w in r.choice(list(WALLS), len(BOUNDARY_WALLS))),
        "band_angles": tuple(float(v) for v in r.uniform(0, 180, len(BAND_ANGLES))),
    }


def simulate_session(minutes: float = 10.0, seed: int = 0, *, spacing: float = 40.0,
                     box_cm: float = BOX_CM, hz: float = TRACKING_HZ,
                     field_seed: int | None = None, rate_scale: float = 1.0
                     ) -> tuple[xr.Dataset, pd.DataFrame]:
    """A simulated session in a ``box_cm`` square: populations ``grid`` (hexagonal,
    ``spacing`` cm, orientations :data:`GRID_ORIENTATIONS`), ``place`` (one field at each of
    :data:`PLACE_CENTRES`), ``boundary`` (along each of :data:`BOUNDARY_WALLS`) and ``band``
    (:data:`BAND_ANGLES`), spike times from :func:`poisson_spike_times`.

    ``seed`` draws the trajectory and the spikes; the fields are the planted constants above
    (the same cells in every session), or, with ``field_seed``, those of
    :func:`redrawn_fields` (the same cells globally remapped). ``rate_scale`` multiplies
    every cell's rate (rate remapping).

    Returns
    -------
    (xarray.Dataset, pandas.DataFrame)
        The session (:func:`~hippo_rep.analysis.session_from_spikes`, arena the box; attrs
        :data:`SIMULATED_SUBJECT` and the spike times' resolution, the float64 spacing at the
        session's end, :data:`~hippo_rep.analysis.nwb.SPIKE_RESOLUTION_ATTR`) and its
        ground truth, one row per cell in the session's order: ``population``, ``cell_id``,
        ``spacing_cm`` and ``orientation`` (grid cells), ``centre_x``, ``centre_y`` (place
        cells), ``wall`` (boundary cells), ``angle`` (band cells); NaN or "" elsewhere.
    """
    rng = np.random.default_rng(seed)
    t, x, y = simulate_trajectory(minutes, rng, box_cm=box_cm, hz=hz)
    rows, cells = [], {}
    fields = {"grid_orientations": GRID_ORIENTATIONS, "grid_phases": GRID_PHASES,
              "place_centres": PLACE_CENTRES, "boundary_walls": BOUNDARY_WALLS,
              "band_angles": BAND_ANGLES}
    if field_seed is not None:
        fields = redrawn_fields(field_seed, box_cm)

    def add(pop, rate, **truth):
        if rate_scale != 1.0:
            rate = rate * rate_scale
        cells.setdefault(pop, []).append(poisson_spike_times(t, rate, rng))
        rows.append({"population": pop, "cell_id": str(len(cells[pop]) - 1), **truth})

    for o, ph in zip(fields["grid_orientations"], fields["grid_phases"], strict=True):
        add("grid", grid_cell_rate(x, y, spacing, o, ph), spacing_cm=spacing, orientation=o)
    for c in fields["place_centres"]:
        add("place", place_cell_rate(x, y, c), centre_x=c[0], centre_y=c[1])
    for w in fields["boundary_walls"]:
        add("boundary", boundary_cell_rate(x, y, w, box_cm=box_cm), wall=w)
    for a in fields["band_angles"]:
        add("band", band_cell_rate(x, y, angle=a), angle=a)
    source = f"simulate_session(minutes={minutes:g}, seed={seed}"
    source += (f", field_seed={field_seed}" if field_seed is not None else "")
    source += (f", rate_scale={rate_scale:g}" if rate_scale != 1.0 else "") + ")"
    session = session_from_spikes(x, y, t, cells, arena=(0, box_cm, 0, box_cm),
                                  attrs={"source": source, **SIMULATED_SUBJECT,
                                         SPIKE_RESOLUTION_ATTR: float(np.spacing(t[-1]))})
    truth = pd.DataFrame(rows, columns=["population", "cell_id", "spacing_cm", "orientation",
                                        "centre_x", "centre_y", "wall", "angle"])
    truth["wall"] = truth["wall"].fillna("")
    return session, truth


#: What :func:`recovered_cells` reads from the analysis, per cell.
RECOVERED_COLUMNS = ("is_grid", "hexagonal", "is_band", "is_border", "is_place", "gridness_60",
                     "spacing_cm", "orientation", "n_fields", "spatial_info", "border_score")


def recovered_cells(analysis: xr.Dataset, truth: pd.DataFrame) -> pd.DataFrame:
    """The ground truth of :func:`simulate_session` next to what the analysis of its session
    found, one row per cell.

    Parameters
    ----------
    analysis : xarray.Dataset
        :func:`~hippo_rep.analysis.analyse` of the session (or of its NWB file), one
        environment.
    truth : pandas.DataFrame
        The second result of :func:`simulate_session`.

    Returns
    -------
    pandas.DataFrame
        Index (``population``, ``cell_id``); the planted values prefixed ``planted_``
        (``planted_spacing_cm``, ``planted_orientation``, ``planted_centre_x``, ...), then
        :data:`RECOVERED_COLUMNS` of the analysis (``spacing_cm`` in cm, ``orientation`` in
        degrees, modulo 60 for a grid) and ``peak_x``, ``peak_y``: where the rate map peaks
        (cm).
    """
    one = analysis.isel(env=0)
    maps = np.nan_to_num(one["rate_map"].transpose("unit", "y", "x").values, nan=-np.inf)
    iy, ix = np.unravel_index(maps.reshape(maps.shape[0], -1).argmax(1), maps.shape[1:])
    found = pd.DataFrame({
        "population": one["variable"].values.astype(str),
        "cell_id": one["cell_id"].values.astype(str),
        **{c: one[c].values for c in RECOVERED_COLUMNS if c in one},
        "peak_x": one["x"].values[ix],
        "peak_y": one["y"].values[iy],
    })
    planted = truth.rename(columns={c: f"planted_{c}" for c in truth.columns
                                    if c not in ("population", "cell_id")})
    return planted.merge(found, on=["population", "cell_id"], how="left").set_index(
        ["population", "cell_id"])
