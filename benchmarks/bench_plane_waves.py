"""Benchmark: plane_waves on many rate maps beside grid_scores ("deepmind") in the same run,
and the generation of the model-grown controls.

Decomposes N maps (default 1,000 of 40 x 40 bins: noisy bands, two-wave patterns 55-75
degrees apart, square grids, linear and rectified hexagonal grids, and random-phase
superpositions of an exact hexagonal triad of waves (no lattice: mostly not hexagonal), with
10% NaN bins) with
``hippo_rep.analysis.plane_waves`` and scores the same maps with
``hippo_rep.analysis.grid_scores(method="deepmind")``; prints the seconds, maps per second
and the ratio to grid_scores (the aim: plane_waves costs at most 3x grid_scores), and, as a
check that the timed work is the real one, how often the wave count and the hexagonal flag
match the planted pattern (plane_waves includes the triad phase, lattice and single-field
tests). Then times ``hippo_rep.analysis.controls.control_maps`` for ``--control-units``
units per control (default 32; 0 skips it) and prints each control's hexagonal fraction.
Single process; BLAS/OpenMP limited to one thread (override by
setting OPENBLAS_NUM_THREADS etc. yourself). Each timing is the best of ``--repeats`` runs.

Usage::

    python benchmarks/bench_plane_waves.py [--n-maps 1000] [--size 40] [--repeats 2]
        [--control-units 32]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from hippo_rep.analysis import (  # noqa: E402
    band_map,
    grid_scores,
    hex_grid_map,
    plane_waves,
    square_grid_map,
    two_wave_map,
)

#: Planted kinds: name -> (expected n_waves, expected hexagonal). A random-phase triad is
#: three waves of a hexagonal grid with random phases (and amplitudes 0.5-1): a lattice only
#: by chance (about a quarter to a half of them, by the triad-phase rule).
KINDS = {"band": (1, False), "two-wave": (2, False), "square": (2, False),
         "hexagonal": (3, True), "hexagonal rectified": (3, True),
         "random-phase triad": (3, False)}


def make_maps(n: int, size: int, seed: int = 0) -> tuple[xr.DataArray, np.ndarray]:
    """n noisy maps of the planted kinds (in turn), wavelengths size/6-size/3, 10% NaN."""
    rng = np.random.default_rng(seed)
    names = list(KINDS)
    maps, kinds = [], []
    for i in range(n):
        kind = names[i % len(names)]
        lam = rng.uniform(size / 6, size / 3)
        o = rng.uniform(0, 180)
        if kind == "band":
            m = band_map(size, lam, o)
        elif kind == "two-wave":
            m = two_wave_map(size, lam, rng.uniform(55, 75), o)
        elif kind == "square":
            m = square_grid_map(size, lam, o)
        elif kind == "random-phase triad":
            y, x = np.indices((size, size), dtype=np.float64)
            k = 2 * np.pi / lam
            v = sum(a * np.cos(k * (x * np.cos(t) + y * np.sin(t)) - ph) for t, ph, a in zip(
                np.deg2rad(o + np.array([0.0, 120.0, 240.0])), rng.uniform(0, 2 * np.pi, 3),
                rng.uniform(0.5, 1.0, 3), strict=True))
            m = xr.DataArray(v, dims=("y", "x"))
        else:
            m = hex_grid_map(size, lam * 2 / np.sqrt(3), o, phase=rng.uniform(0, size, 2))
            if kind == "hexagonal rectified":
                m = np.maximum(m - 1 / 3, 0.0)
        v = m.values + 0.3 * float(m.std()) * rng.standard_normal(m.shape)
        v[rng.random(m.shape) < 0.1] = np.nan
        maps.append(v)
        kinds.append(kind)
    return xr.DataArray(np.stack(maps), dims=("unit", "y", "x")), np.array(kinds)


def best_of(fn, repeats: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-maps", type=int, default=1000)
    ap.add_argument("--size", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--control-units", type=int, default=32)
    args = ap.parse_args(argv)
    maps, kinds = make_maps(args.n_maps, args.size)
    t_gs, _ = best_of(lambda: grid_scores(maps, method="deepmind"), args.repeats)
    t_pw, pw = best_of(lambda: plane_waves(maps), args.repeats)
    n = args.n_maps
    print(f"{n} maps of {args.size} x {args.size} bins (10% NaN, noise 0.3 x map std), "
          f"best of {args.repeats}, {os.environ['OMP_NUM_THREADS']} thread(s)")
    print(f"{'method':32s}{'seconds':>10s}{'maps/s':>10s}{'ratio':>8s}")
    for name, t in (("grid_scores (deepmind)", t_gs), ("plane_waves", t_pw)):
        print(f"{name:32s}{t:10.2f}{n / t:10.0f}{t / t_gs:8.2f}")
    print("\nplanted pattern recovered (n_waves and hexagonal flag as planted):")
    for kind, (n_true, hexa) in KINDS.items():
        sel = kinds == kind
        ok = (pw.n_waves.values[sel] == n_true) & (pw.hexagonal.values[sel] == hexa)
        print(f"  {kind:22s}{ok.mean():7.1%} of {sel.sum()}")
    three = pw.n_waves.values == 3
    print(f"maps with three waves: {three.sum()}, of which triads (finite psi) "
          f"{np.isfinite(pw.triad_phase.values[three]).sum()}")
    if args.control_units > 0:
        from hippo_rep.analysis.controls import control_maps

        t_c, cm = best_of(lambda: control_maps(args.control_units, seed=0), 1)
        print(f"\ncontrol_maps: {args.control_units} units per control x "
              f"{cm.sizes['control']} controls in {t_c:.1f} s; hexagonal per control:")
        cpw = plane_waves(cm)
        for c in cm["control"].values:
            h = cpw["hexagonal"].sel(control=c)
            print(f"  {c:22s}{int(h.sum())}/{h.size}")


if __name__ == "__main__":
    main()
