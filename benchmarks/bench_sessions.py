"""Benchmark: a session from NWB to classes, hippo_rep beside pynapple + opexebo.

Simulates a session (a smooth random walk in a 100 cm box at 50 Hz, ``--cells`` cells with
Poisson spikes: 40% hexagonal grid cells, 30% place cells, 15% band cells, 15% boundary
cells, fields drawn at random; the rate functions of ``hippo_rep.analysis.synthetic_session``)
and writes it as NWB (``write_nwb``). Then, each in a fresh process, from the same file:

- ``hippo_rep analyse``: ``read_nwb`` then ``analyse(session, shuffles=--shuffles)``: rate
  maps (2.5 cm bins, 5 cm smoothing, speed > 2.5 cm/s), grid (deepmind), band, plane-wave,
  place and spatial-information scores, each against ``--shuffles`` circular shifts of the
  spike trains, and the classes;
- ``hippo_rep maps + grid``: ``read_nwb``, ``session_rate_maps`` (same maps) and
  ``grid_scores(method="bnt")``: the same work as the next row;
- ``pynapple + opexebo``: ``pynapple.load_file``, ``compute_tuning_curves`` (2.5 cm bins over
  the box, samples with speed > 2.5 cm/s; pynapple does not smooth) and, per cell,
  ``opexebo.analysis.autocorrelation`` and ``opexebo.analysis.grid_score``.

Time is the wall time of the pipeline in its process, imports (and the compilation of
pynapple's numba kernels, on a toy group) excluded. Memory is the
process's peak resident set at the end (Linux: ``VmHWM`` of ``/proc/self/status``) and its
growth over the resident set after the imports (``VmRSS``): the pipeline's own peak.
(``ru_maxrss`` is not used on Linux: it keeps, across ``exec``, the resident set of the
benchmark's parent at the fork, which hid every peak below it once the parent held a large
simulated session.) Prints a
table with the ratios to ``pynapple + opexebo``, the load average (other processes sharing
the machine change times a lot) and, per pipeline, the median grid score of the planted grid
cells and of the other cells (and, for ``analyse``, the classes found per planted kind).

Usage::

    python benchmarks/bench_sessions.py [--minutes 10] [--cells 50] [--shuffles 20]
    python benchmarks/bench_sessions.py --minutes 60 --cells 200 --shuffles 100  # 1 h, 200 cells
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

#: Shares of the simulated cells per kind (the rest of the cells after rounding: grid).
KIND_SHARES = {"place": 0.30, "band": 0.15, "boundary": 0.15}
#: Side of the box (cm), tracking rate (Hz), bin side (cm) and speed filter (cm/s).
BOX_CM, HZ, BIN_CM, MIN_SPEED_CM_S = 100.0, 50.0, 2.5, 2.5
#: Rows of the table, in order; the ratios are to the last.
PIPELINES = ("hippo_rep analyse", "hippo_rep maps + grid", "pynapple + opexebo")


def _status_mb(field: str) -> float | None:
    """A ``kB`` field of ``/proc/self/status`` in MB (None where there is none: not Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _rss_mb() -> float:
    """Peak resident set of this process so far, MB: ``VmHWM`` (per process image, reset by
    ``exec``), else ``ru_maxrss`` (KiB on Linux, bytes on macOS)."""
    hwm = _status_mb("VmHWM")
    if hwm is not None:
        return hwm
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def _current_rss_mb() -> float:
    """Resident set of this process now, MB (``VmRSS``; else the peak so far)."""
    rss = _status_mb("VmRSS")
    return _rss_mb() if rss is None else rss


def simulate(minutes: float, n_cells: int, seed: int = 0):
    """A session of ``n_cells`` cells (populations by kind) and each cell's kind."""
    from hippo_rep.analysis.sessions import session_from_spikes
    from hippo_rep.analysis.synthetic_session import (
        SIMULATED_SUBJECT,
        band_cell_rate,
        boundary_cell_rate,
        grid_cell_rate,
        place_cell_rate,
        poisson_spike_times,
        simulate_trajectory,
    )

    rng = np.random.default_rng(seed)
    t, x, y = simulate_trajectory(minutes, rng, box_cm=BOX_CM, hz=HZ)
    counts = {k: int(round(v * n_cells)) for k, v in KIND_SHARES.items()}
    counts = {"grid": n_cells - sum(counts.values()), **counts}
    cells: dict[str, list] = {}
    for kind, n in counts.items():
        for _ in range(n):
            if kind == "grid":
                rate = grid_cell_rate(x, y, rng.uniform(30, 60), rng.uniform(0, 60),
                                      rng.uniform(0, BOX_CM, 2))
            elif kind == "place":
                rate = place_cell_rate(x, y, rng.uniform(15, BOX_CM - 15, 2))
            elif kind == "band":
                rate = band_cell_rate(x, y, angle=rng.uniform(0, 180))
            else:
                rate = boundary_cell_rate(x, y, str(rng.choice(["west", "east", "south",
                                                                "north"])), box_cm=BOX_CM)
            cells.setdefault(kind, []).append(poisson_spike_times(t, rate, rng))
    attrs = {**SIMULATED_SUBJECT, "spike_time_resolution_s": float(np.spacing(t[-1]))}
    session = session_from_spikes(x, y, t, cells, arena=(0, BOX_CM, 0, BOX_CM), attrs=attrs)
    return session, [k for k, n in counts.items() for _ in range(n)]


def _grid_summary(scores, kinds) -> dict:
    scores, kinds = np.asarray(scores, dtype=float), np.asarray(kinds)
    return {"grid_median_grid": float(np.nanmedian(scores[kinds == "grid"])),
            "grid_median_other": float(np.nanmedian(scores[kinds != "grid"]))}


def run_hippo_rep(path: str, shuffles: int, kinds) -> dict:
    from hippo_rep.analysis import analyse, read_nwb

    session = read_nwb(path)
    a = analyse(session, shuffles=shuffles, seed=0, session_checked=True)
    out = _grid_summary(a["gridness_60"].isel(env=0).values, kinds)
    classes = {}
    for kind in dict.fromkeys(kinds):
        sel = np.asarray(kinds) == kind
        classes[kind] = {c: int(np.asarray(a[c].isel(env=0).values)[sel].sum())
                         for c in ("is_grid", "is_band", "is_place")}
    out["classes"] = classes
    return out


def run_hippo_rep_maps(path: str, shuffles: int, kinds) -> dict:
    import xarray as xr

    from hippo_rep.analysis import grid_scores, read_nwb, session_rate_maps
    from hippo_rep.analysis.sessions import session_populations

    session = read_nwb(path)
    maps = xr.concat([session_rate_maps(session, pop)["rate_map"]
                      for pop in session_populations(session)], dim="unit")
    return _grid_summary(grid_scores(maps, method="bnt")["gridness_60"].values.ravel(), kinds)


def _opexebo_numpy2() -> None:
    """opexebo 0.7.2 calls ``int()`` on a one-element array, which numpy 2 refuses: pass its
    central radius on as a scalar (as ``bench_grid_scores.py`` does)."""
    import importlib

    mod = importlib.import_module("opexebo.analysis.grid_score")
    orig = mod._findCentreRadius
    mod._findCentreRadius = lambda acorr, **kw: float(np.ravel(orig(acorr, **kw))[0])


def run_pynapple_opexebo(path: str, shuffles: int, kinds) -> dict:
    import opexebo
    import pynapple as nap

    _opexebo_numpy2()

    data = nap.load_file(path)
    units, pos = data["units"], data["position"]
    xy = pos.values
    dt = np.diff(pos.t)
    speed = np.hypot(*np.diff(xy, axis=0).T) / dt
    moving = nap.Tsd(t=pos.t[1:], d=np.nan_to_num(speed)).threshold(MIN_SPEED_CM_S)
    n_bins = int(round(BOX_CM / BIN_CM))
    tc = nap.compute_tuning_curves(units, pos, bins=n_bins, range=[(0, BOX_CM), (0, BOX_CM)],
                                   epochs=moving.time_support)
    scores = []
    for rate_map in np.asarray(tc.values):
        score, _ = opexebo.analysis.grid_score(opexebo.analysis.autocorrelation(rate_map))
        scores.append(float(score))
    # the Units table is in the session's order (population by population)
    return _grid_summary(scores, kinds)


RUNNERS = dict(zip(PIPELINES, (run_hippo_rep, run_hippo_rep_maps, run_pynapple_opexebo),
                   strict=True))


def child(name: str, path: str, shuffles: int, kinds_json: str) -> None:
    """Run one pipeline in this (fresh) process; print one JSON line."""
    import warnings

    warnings.filterwarnings("ignore")
    runner = RUNNERS[name]
    # imports first, so that they are neither timed nor in the memory growth
    if name == "pynapple + opexebo":
        import opexebo  # noqa: F401
        import pynapple as nap

        # compile pynapple's numba kernels on a toy group (a one-time cost per process)
        toy_t = np.linspace(0, 10, 501)
        toy_xy = np.random.default_rng(0).random((501, 2))
        nap.compute_tuning_curves(nap.TsGroup({0: nap.Ts(t=toy_t[::7])}),
                                  nap.TsdFrame(t=toy_t, d=toy_xy), bins=4)
    else:
        import pynwb  # noqa: F401

        import hippo_rep.analysis  # noqa: F401
    base = _current_rss_mb()
    t0 = time.perf_counter()
    out = runner(path, shuffles, json.loads(kinds_json))
    peak = _rss_mb()
    out.update(seconds=time.perf_counter() - t0, rss_mb=peak, rss_growth_mb=peak - base)
    print("RESULT " + json.dumps(out))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0, help="session length (default 10)")
    p.add_argument("--cells", type=int, default=50, help="cells (default 50)")
    p.add_argument("--shuffles", type=int, default=20,
                   help="circular shifts per cell in analyse (default 20; the CLI's is 100)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--nwb", help=argparse.SUPPRESS)
    p.add_argument("--kinds", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.nwb, args.shuffles, args.kinds)
        return

    from hippo_rep.analysis import write_nwb

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        session, kinds = simulate(args.minutes, args.cells)
        path = write_nwb(session, Path(tmp) / "session.nwb")
        n_spikes = int(session["n_spikes"].sum())
        by_kind = ", ".join(f"{k} {kinds.count(k)}" for k in dict.fromkeys(kinds))
        print(f"session: {args.minutes:g} min at {HZ:g} Hz ({session.sizes['time']:,} samples), "
              f"{args.cells} cells ({by_kind}), "
              f"{n_spikes:,} spikes; NWB {path.stat().st_size / 1e6:.1f} MB; simulated and "
              f"written in {time.perf_counter() - t0:.1f} s")
        del session
        results = {}
        for name in PIPELINES:
            cmd = [sys.executable, __file__, "--child", name, "--nwb", str(path),
                   "--shuffles", str(args.shuffles), "--kinds", json.dumps(kinds)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
            if done.returncode or not line:
                sys.exit(f"{name} failed:\n{done.stderr[-3000:]}")
            results[name] = json.loads(line[-1][len("RESULT "):])
    ref = results[PIPELINES[-1]]
    print(f"load average {os.getloadavg()[0]:.1f}; analyse with {args.shuffles} shuffles; "
          "memory: VmHWM of a fresh process per pipeline, growth over VmRSS after imports")
    head = (f"| {'pipeline':<24}| {'time (s)':>9} | {'× time':>7} | {'peak RSS (MB)':>13} | "
            f"{'growth (MB)':>11} | {'× growth':>8} | {'grid score: grid / other':>24} |")
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    for name, r in results.items():
        scores = f"{r['grid_median_grid']:.2f} / {r['grid_median_other']:.2f}"
        print(f"| {name:<24}| {r['seconds']:>9.1f} | {r['seconds'] / ref['seconds']:>7.2f} | "
              f"{r['rss_mb']:>13.0f} | {r['rss_growth_mb']:>11.0f} | "
              f"{r['rss_growth_mb'] / max(ref['rss_growth_mb'], 1e-9):>8.2f} | {scores:>24} |")
    classes = results[PIPELINES[0]]["classes"]
    print("analyse's classes per planted kind (is_grid / is_band / is_place of n): "
          + "; ".join(f"{k} {c['is_grid']}/{c['is_band']}/{c['is_place']} of {kinds.count(k)}"
                      for k, c in classes.items()))


if __name__ == "__main__":
    main()
