"""Remapping across sessions: which of the same cells, recorded in two sessions, remapped.

Two sessions (:mod:`~hippo_rep.analysis.sessions`) of the same cells, e.g. arena A then arena
B, or A then A again, are compared cell by cell. A cell is the pair (population, ``cell_id``):
it must be in both sessions (or, with ``common_cells=True``, only the cells in both are
compared and the others are counted in the attrs).

What is computed (exactly):

- Rate maps of both sessions by the session rate-map code
  (:func:`~hippo_rep.analysis.session_rate_maps`: speed filter, square bins, BNT smoothing,
  Hz), on one bin grid: both sessions' maps start at the lower corner of the smallest box
  holding both arenas (each session's attr ``arena``, else its positions' extent), so that
  bin ``(y, x)`` is the same place in both.
- ``map_corr(cell)``: Pearson r between the cell's two rate maps over the bins visited in
  both (finite in both maps; at least :data:`~hippo_rep.analysis.remapping.REMAP_MIN_NODES`
  bins, else NaN; NaN for a constant map).
- Its null, per cell: the cell's spike train (its spikes per tracking sample, or its rates)
  in session B shifted circularly against B's trajectory (the package's shuffle machinery,
  :func:`~hippo_rep.analysis.shuffle.circular_shifts` and
  :func:`~hippo_rep.analysis.shuffle.null_scores`: the same shifts for every cell, at least
  ``min_shift_s``), each shuffled B map scored against the cell's A map the same way.
  ``map_corr_null_q(cell)`` is its ``null_quantile`` (default the 99th percentile) and
  ``map_corr_percentile(cell)`` the percent of finite null values below ``map_corr``.
- ``stable(cell)``: ``map_corr > map_corr_null_q`` (False where either is NaN). A cell
  that keeps its field is stable; a cell that remapped (its field moved, or it fell silent)
  is not. A grid cell whose grid shifted by a near lattice vector can still correlate.
- ``mean_rate_a``, ``mean_rate_b(cell)``: the speed-filtered mean rate (unsmoothed: spikes
  in the kept samples over their duration, Hz) and ``rate_ratio(cell)`` = B / A (inf where
  A is silent and B not, NaN where both are): rate remapping.
- ``pv_corr(population, y, x)``: population-vector correlation per bin: the Pearson r,
  across the population's cells finite in both maps at that bin (at least
  :data:`~hippo_rep.analysis.remapping.PV_MIN_UNITS`), of their A and B rates; NaN
  elsewhere. ``pv_corr_mean(population)``: its mean over the bins where it is defined.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep.defaults import (
    N_SHUFFLES,
    SESSION_BIN_SIZE_CM,
    SESSION_MIN_SHIFT_S,
    SESSION_MIN_SPEED_CM_S,
    SESSION_SMOOTH_CM,
)
from hippo_rep.fileio import atomic_write
from hippo_rep.schema import KIND_ATTR

from ._checks import MAP_DIMS, check_positive_number
from .core import pearson_rows
from .recordings import NODE_DIM, UNIT_DIM
from .remapping import PV_MIN_UNITS, REMAP_MIN_NODES
from .sessions import (
    ARENA_ATTR,
    CELL,
    CELL_ID,
    CELL_POPULATION,
    LENGTH_UNIT_ATTR,
    LENGTH_UNITS,
    SessionError,
    parse_arena,
    positions_cm,
    sample_interval,
    session_activity,
    session_node,
    session_populations,
    session_rate_maps,
    validate_session,
)
from .shuffle import (
    SHUFFLE_DIM,
    as_rng,
    check_n_shuffles,
    circular_shifts,
    null_scores,
    null_summary,
)

#: The kind attr (``hippo_rep_kind``) of :func:`session_remapping`'s result.
SESSION_REMAPPING_KIND = "session_remapping"

#: A cell is ``stable`` when its map correlation exceeds this quantile of its shuffle null.
REMAP_NULL_QUANTILE = 0.99

#: Cells named by the error for cells in only one session (the rest are counted).
MAX_LISTED_CELLS = 5

#: The population dim of the per-population results.
POPULATION_DIM = "population"


def score_map_correlation(maps: xr.Dataset) -> xr.DataArray:
    """Pearson r of each ``rate_map`` with its unit's ``reference_map``, over the bins
    finite in both (at least :data:`~hippo_rep.analysis.remapping.REMAP_MIN_NODES`, else
    NaN; NaN for a constant map): a score for :func:`~hippo_rep.analysis.shuffle.null_scores`
    with ``reference``.

    Parameters
    ----------
    maps : xarray.Dataset
        ``rate_map`` (..., y, x) and ``reference_map`` (..., y, x), broadcast together.

    Returns
    -------
    xarray.DataArray, dims (...)
        Named ``map_corr``, unitless.
    """
    def core(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(a, b)
        flat = a.shape[:-2] + (-1,)
        return pearson_rows(a.reshape(flat), b.reshape(flat), REMAP_MIN_NODES)

    out = xr.apply_ufunc(core, maps["rate_map"], maps["reference_map"],
                         input_core_dims=[list(MAP_DIMS)] * 2)
    out.name = "map_corr"
    return out


def _cell_keys(session: xr.Dataset, name: str) -> list[tuple[str, str]]:
    keys = list(zip(np.asarray(session[CELL_POPULATION].values).astype(str).tolist(),
                    np.asarray(session[CELL_ID].values).astype(str).tolist(), strict=True))
    seen: set = set()
    for k in keys:
        if k in seen:
            raise SessionError(f"session {name}: cell id {k[1]!r} appears twice in population "
                               f"{k[0]!r}; cells are matched across sessions by (population, "
                               "cell_id)")
        seen.add(k)
    return keys


def _listed(keys: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{p}/{i}" for p, i in keys[:MAX_LISTED_CELLS])
    return shown + (f" and {len(keys) - MAX_LISTED_CELLS} more"
                    if len(keys) > MAX_LISTED_CELLS else "")


def _box_cm(session: xr.Dataset) -> np.ndarray:
    """The session's arena (attr, else its positions' extent), cm."""
    if ARENA_ATTR in session.attrs:
        f = LENGTH_UNITS[session.attrs[LENGTH_UNIT_ATTR]]
        return parse_arena(session.attrs[ARENA_ATTR], where="session") * f
    x, y = positions_cm(session)
    return np.array([np.nanmin(x), np.nanmax(x), np.nanmin(y), np.nanmax(y)])


def _in_box(session: xr.Dataset, box_cm: np.ndarray) -> xr.Dataset:
    """A shallow copy of the session whose arena is ``box_cm`` (in its own length unit)."""
    out = session.copy()
    out.attrs = {**session.attrs,
                 ARENA_ATTR: box_cm / LENGTH_UNITS[session.attrs[LENGTH_UNIT_ATTR]]}
    return out


def _mean_rate(maps: xr.Dataset) -> np.ndarray:
    """Occupancy-weighted mean of the unsmoothed per-bin rates, per unit (Hz)."""
    rate = maps["node_rate"].isel(env=0).transpose(UNIT_DIM, NODE_DIM).values
    occ = maps["node_occupancy"].isel(env=0).values
    ok = np.isfinite(rate) & (occ > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, rate * occ, 0).sum(1) / np.where(ok, occ, 0).sum(1)


def session_remapping(session_a: xr.Dataset, session_b: xr.Dataset, *,
                      shuffles: int = N_SHUFFLES, rng: int | np.random.Generator = 0,
                      bin_size_cm: float = SESSION_BIN_SIZE_CM,
                      smooth_cm: float | None = SESSION_SMOOTH_CM,
                      min_speed_cm_s: float = SESSION_MIN_SPEED_CM_S,
                      min_shift_s: float = SESSION_MIN_SHIFT_S,
                      null_quantile: float = REMAP_NULL_QUANTILE,
                      common_cells: bool = False,
                      sessions_checked: bool = False) -> xr.Dataset:
    """Which cells remapped between two sessions of the same cells (see the module doc).

    Takes the sessions, not their rate maps: the null shifts each cell's spike train in
    time against session B's trajectory, which a rate map no longer holds. Both sessions'
    maps are made by the session rate-map code with the same options.

    Parameters
    ----------
    session_a, session_b : xarray.Dataset
        Two sessions (:func:`~hippo_rep.analysis.session_from_spikes`, ``read_nwb``,
        ``open_session``); cells matched by (population, ``cell_id``).
    shuffles : int
        Circular shifts of session B's spike trains in the null (>= 1).
    rng : int or numpy.random.Generator
        Seed (or generator) of the shifts.
    bin_size_cm, smooth_cm, min_speed_cm_s : float
        Bin side (cm), Gaussian σ of BNT smoothing (cm; 0 or None: none) and speed filter
        (cm/s) of both sessions' maps; defaults as ``hippo-rep analyse``
        (:data:`~hippo_rep.defaults.SESSION_BIN_SIZE_CM`, ...).
    min_shift_s : float
        Smallest circular shift, s (under half of session B's duration).
    null_quantile : float
        Quantile of the null a cell's correlation must exceed to be ``stable``, in (0, 1).
    common_cells : bool
        False (default): cells in only one session are an error that lists a few of them.
        True: only the cells in both are compared (attrs ``n_cells_only_a``,
        ``n_cells_only_b``, ``cells_only_a``, ``cells_only_b``).
    sessions_checked : bool
        Both sessions have just passed :func:`~hippo_rep.analysis.validate_session` (what
        ``open_session`` and ``read_nwb`` return): not checked again.

    Returns
    -------
    xarray.Dataset
        Dim ``cell`` (coords ``cell_population``, ``cell_id``; in session A's order):
        ``map_corr``, ``map_corr_null_q``, ``map_corr_percentile`` (percent), ``stable``
        (bool), ``mean_rate_a``, ``mean_rate_b`` (Hz), ``rate_ratio``; ``rate_map_a``,
        ``rate_map_b`` (cell, y, x) in Hz (NaN = unvisited), ``occupancy_a``,
        ``occupancy_b`` (y, x) in s; ``pv_corr`` (population, y, x), ``pv_corr_mean``
        (population); ``shuffle_shift`` (shuffle), in tracking samples of session B. Coords
        ``x``, ``y``: bin centres, cm. Attrs: every option, the seed, ``arena_cm`` (the
        common box), ``min_shift_steps``, the sessions' ``source`` attrs, the methods.

    Raises
    ------
    SessionError
        Invalid sessions, cells in only one session (unless ``common_cells``; always when
        no cell is in both), a cell id twice in a population, a degenerate bin grid.
    AnalysisError
        Bad ``shuffles``, ``rng``, ``null_quantile`` or ``min_shift_s`` (naming it).
    """
    if not sessions_checked:
        validate_session(session_a, "A")
        validate_session(session_b, "B")
    shuffles = check_n_shuffles(shuffles, "shuffles")
    gen, seed_attr = as_rng(rng)
    if not 0 < float(null_quantile) < 1:
        raise SessionError(f"null_quantile must be in (0, 1); got {null_quantile!r}")
    shift_s = check_positive_number(min_shift_s, "min_shift_s", allow_zero=True)
    keys_a, keys_b = _cell_keys(session_a, "A"), _cell_keys(session_b, "B")
    set_a, set_b = set(keys_a), set(keys_b)
    only_a = [k for k in keys_a if k not in set_b]
    only_b = [k for k in keys_b if k not in set_a]
    common = [k for k in keys_a if k in set_b]
    if not common:
        raise SessionError(f"sessions A and B have no cell in common (cells are matched by "
                           f"population/cell_id; A: {_listed(keys_a)}; B: {_listed(keys_b)})")
    if (only_a or only_b) and not common_cells:
        raise SessionError(f"sessions A and B hold different cells: {len(only_a)} only in A"
                           + (f" ({_listed(only_a)})" if only_a else "")
                           + f", {len(only_b)} only in B"
                           + (f" ({_listed(only_b)})" if only_b else "")
                           + f"; pass common_cells=True (--common-cells) to compare the "
                             f"{len(common)} cells in both")

    # one bin grid: both sessions binned from the corner of the box holding both arenas
    ba, bb = _box_cm(session_a), _box_cm(session_b)
    box = np.r_[min(ba[0], bb[0]), max(ba[1], bb[1]), min(ba[2], bb[2]), max(ba[3], bb[3])]
    sa, sb = _in_box(session_a, box), _in_box(session_b, box)
    node_a = session_node(sa, bin_size_cm, min_speed_cm_s)
    node_b = session_node(sb, bin_size_cm, min_speed_cm_s)
    for name, node in (("A", node_a), ("B", node_b)):
        if not (node.values >= 0).any():
            raise SessionError(f"session {name} has no tracking sample at {min_speed_cm_s:g} "
                               "cm/s or faster (lower min_speed_cm_s)")
    duration = sb.sizes["time"] * sample_interval(sb)
    if shift_s / duration >= 0.5:
        raise SessionError(f"min_shift_s {shift_s:g} s must be under half session B's "
                           f"{duration:.6g} s")
    shifts = xr.DataArray(circular_shifts(sb.sizes["time"], 1, shuffles, gen,
                                          shift_s / duration), dims=("env", SHUFFLE_DIM))

    pops = [p for p in session_populations(session_a) if any(k[0] == p for k in common)]
    parts, pv = [], []
    for pop in pops:
        cells = [k for k in common if k[0] == pop]
        # positions within the population (the unit index of its activity and maps)
        in_a = {k: i for i, k in enumerate(k2 for k2 in keys_a if k2[0] == pop)}
        in_b = {k: i for i, k in enumerate(k2 for k2 in keys_b if k2[0] == pop)}
        maps = []
        for s, node, where in ((sa, node_a, in_a), (sb, node_b, in_b)):
            act = session_activity(s, pop).isel({UNIT_DIM: [where[k] for k in cells]})
            act = act.drop_vars(CELL_ID).assign_coords({UNIT_DIM: np.arange(len(cells))})
            maps.append((act, session_rate_maps(s, pop, bin_size_cm, smooth_cm,
                                                min_speed_cm_s, act, node,
                                                session_checked=True)))
        (_, ma), (act_b, mb) = maps
        if not (np.allclose(ma["x"], mb["x"]) and np.allclose(ma["y"], mb["y"])):
            raise SessionError("the sessions' bin grids differ")  # by construction they don't
        mb = mb.assign_coords(x=ma["x"], y=ma["y"])
        ref = ma["rate_map"].isel(env=0).drop_vars(["variable", "unit_index", CELL_ID],
                                                   errors="ignore")
        real = mb["rate_map"].isel(env=0).drop_vars(["variable", "unit_index", CELL_ID],
                                                    errors="ignore")
        observed = score_map_correlation(xr.Dataset({"rate_map": real,
                                                     "reference_map": ref}))
        null = null_scores(act_b.transpose("env", "time", UNIT_DIM), node_b, shifts,
                           mb["node_map"].values, mb.sizes[NODE_DIM],
                           [score_map_correlation], ["map_corr"],
                           smooth_sigma=mb.attrs["smooth_sigma_bins"],
                           reference=ref.drop_vars(["x", "y"]))["map_corr"].isel(env=0)
        q, pct = null_summary(observed, null, [float(null_quantile)])
        parts.append(xr.Dataset({
            "map_corr": observed, "map_corr_null_q": q.isel(quantile=0, drop=True),
            "map_corr_percentile": pct, "mean_rate_a": ((UNIT_DIM,), _mean_rate(ma)),
            "mean_rate_b": ((UNIT_DIM,), _mean_rate(mb)), "rate_map_a": ref,
            "rate_map_b": real,
        }).assign_coords({CELL_POPULATION: (UNIT_DIM, [pop] * len(cells)),
                          CELL_ID: (UNIT_DIM, [k[1] for k in cells])}))
        a = ref.transpose(*MAP_DIMS, UNIT_DIM).values
        b = real.transpose(*MAP_DIMS, UNIT_DIM).values
        pv.append(pearson_rows(a, b, PV_MIN_UNITS))
        occ = (ma["occupancy"].isel(env=0), mb["occupancy"].isel(env=0))

    out = xr.concat(parts, UNIT_DIM, coords="minimal").drop_vars(UNIT_DIM, errors="ignore")
    out = out.rename({UNIT_DIM: CELL}).assign_coords({CELL: np.arange(len(common))})
    with np.errstate(invalid="ignore", divide="ignore"):
        out["rate_ratio"] = out["mean_rate_b"] / out["mean_rate_a"]
    out["stable"] = out["map_corr"] > out["map_corr_null_q"]  # False where either is NaN
    out["occupancy_a"], out["occupancy_b"] = (o.drop_vars(["env"], errors="ignore")
                                              for o in occ)
    out["pv_corr"] = ((POPULATION_DIM, *MAP_DIMS), np.stack(pv))
    out = out.assign_coords({POPULATION_DIM: pops})
    with warnings.catch_warnings():  # a population without a defined bin: NaN, quietly
        warnings.simplefilter("ignore", RuntimeWarning)
        out["pv_corr_mean"] = out["pv_corr"].mean(MAP_DIMS, skipna=True)
    out["shuffle_shift"] = shifts.isel(env=0, drop=True)
    out = out.drop_vars("env", errors="ignore")  # the sessions' one environment
    _label(out)
    out.attrs = {
        KIND_ATTR: SESSION_REMAPPING_KIND,
        "n_shuffles": shuffles, "seed": seed_attr, "null_quantile": float(null_quantile),
        "bin_size_cm": float(mb.attrs["bin_size_cm"]), "smooth_cm": float(mb.attrs["smooth_cm"]),
        "min_speed_cm_s": float(min_speed_cm_s), "min_shift_s": float(shift_s),
        "min_shift_steps": int(shifts.min()), "arena_cm": box,
        "min_common_bins": REMAP_MIN_NODES, "pv_min_cells": PV_MIN_UNITS,
        "source_a": str(session_a.attrs.get("source", "")),
        "source_b": str(session_b.attrs.get("source", "")),
        "n_cells_only_a": len(only_a), "n_cells_only_b": len(only_b),
        "cells_only_a": [f"{p}/{i}" for p, i in only_a],
        "cells_only_b": [f"{p}/{i}" for p, i in only_b],
        "cell_identity": "a cell is (population, cell_id), the same in both sessions",
        "bins": "both sessions binned from the lower corner of arena_cm, the smallest box "
                "holding both arenas (attr arena, else the positions' extent)",
        "null_method": "each cell's spike train (spikes or rates per tracking sample) in "
                       "session B shifted circularly against B's trajectory, the same shifts "
                       "for every cell, at least min_shift_s; each shuffled B map correlated "
                       "with the cell's A map",
        "stable_rule": "map_corr > map_corr_null_q (the null_quantile of the null); False "
                       "where either is NaN",
    }
    return out


def _label(out: xr.Dataset) -> None:
    hz = {"units": "Hz"}
    labels = {
        "map_corr": {"long_name": "Pearson r of the cell's rate maps in A and B over the bins "
                     "visited in both", "units": "1"},
        "map_corr_null_q": {"long_name": "null_quantile of map_corr with B's spike train "
                            "circularly shifted", "units": "1"},
        "map_corr_percentile": {"long_name": "percent of finite null map_corr values below "
                                "map_corr", "units": "percent"},
        "stable": {"long_name": "map_corr above its null quantile (the cell kept its map)"},
        "mean_rate_a": {"long_name": "speed-filtered mean rate in session A", **hz},
        "mean_rate_b": {"long_name": "speed-filtered mean rate in session B", **hz},
        "rate_ratio": {"long_name": "mean_rate_b / mean_rate_a", "units": "1"},
        "rate_map_a": {"long_name": "rate map in session A (NaN = unvisited)", **hz},
        "rate_map_b": {"long_name": "rate map in session B (NaN = unvisited)", **hz},
        "occupancy_a": {"long_name": "time spent in the bin in A (speed-filtered)",
                        "units": "s"},
        "occupancy_b": {"long_name": "time spent in the bin in B (speed-filtered)",
                        "units": "s"},
        "pv_corr": {"long_name": "population-vector correlation per bin: Pearson r across "
                    "the population's cells of their A and B rates", "units": "1"},
        "pv_corr_mean": {"long_name": "pv_corr averaged over the bins where it is defined",
                         "units": "1"},
        "shuffle_shift": {"long_name": "circular shift of B's spike trains per shuffle",
                          "units": "tracking samples"},
    }
    for k, a in labels.items():
        out[k].attrs = a
    out[CELL].attrs = {"long_name": "cell index (session A's order)"}


def describe_session_remapping(ds: xr.Dataset) -> str:
    """What :func:`session_remapping` found, in lines: the cells stable over all, then per
    population the stable cells, the median rate ratio and the mean PV correlation, and the
    cells of one session left out."""
    stable, attrs = ds["stable"], ds.attrs
    lines = [f"{int(stable.sum())} of {stable.size} cells stable (map correlation above the "
             f"null's {attrs['null_quantile']:g} quantile, {attrs['n_shuffles']} shuffles)"]
    for pop in ds[POPULATION_DIM].values:
        cells = ds["cell_population"] == pop
        pv = float(ds["pv_corr_mean"].sel({POPULATION_DIM: pop}))
        lines.append(f"  {pop}: {int(stable.where(cells, False).sum())} of {int(cells.sum())} "
                     f"stable; median rate ratio B/A "
                     f"{float(ds['rate_ratio'].where(cells).median()):.3g}; mean PV "
                     f"correlation {pv:.3g}")
    if attrs["n_cells_only_a"] or attrs["n_cells_only_b"]:
        lines.append(f"  compared the cells in both: {attrs['n_cells_only_a']} only in A, "
                     f"{attrs['n_cells_only_b']} only in B left out")
    return "\n".join(lines)


def write_session_remapping(ds: xr.Dataset, path: str | os.PathLike,
                            overwrite: bool = False) -> Path:
    """Write :func:`session_remapping`'s result to netCDF (``.nc``, h5netcdf) atomically.

    Raises
    ------
    SessionError
        A path not ending in ``.nc``.
    FileExistsError
        If ``path`` exists and ``overwrite`` is False.
    """
    path = Path(path)
    if path.suffix.lower() != ".nc":
        raise SessionError(f"remapping output {str(path)!r} must end in .nc")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{str(path)!r} exists; pass overwrite=True (--overwrite) to "
                              "replace it")
    data = ds.copy()
    data["stable"] = data["stable"].astype(np.int8)  # netCDF has no bool; 1 = stable
    data["stable"].attrs = {**ds["stable"].attrs, "flag_values": [0, 1],
                            "flag_meanings": "remapped stable"}
    data.attrs = {k: (np.asarray(v) if isinstance(v, (list, tuple)) else v)
                  for k, v in ds.attrs.items()}
    for k in ("cells_only_a", "cells_only_b"):
        data.attrs[k] = ", ".join(ds.attrs[k])
    atomic_write(path, lambda tmp: data.to_netcdf(tmp, engine="h5netcdf"))
    return path
