"""Calibration of plane_waves' hexagonal tolerances on model-grown lattices.

For each control of :mod:`hippo_rep.analysis.controls` (and, as sheared lattices, relu pattern
formation in a periodic *square* box, which cannot hold an unsheared hexagonal lattice), prints
how many maps have three waves, how many of those form a lattice of peaks, the largest angle
deviation from 60 degrees, wavelength ratio and triad closure among them, and the hexagonal
count with the module's tolerances (:data:`~hippo_rep.analysis.planewaves.HEXAGONAL_ANGLE_TOL`,
:data:`~hippo_rep.analysis.planewaves.HEXAGONAL_WAVELENGTH_RATIO`) and with the earlier ones
(10 degrees, 1.2), and the median plane-wave share of the maps called hexagonal. Then the
fraction of random-phase superpositions of an exact hexagonal triad
called hexagonal (signed, and shifted to be non-negative).

Usage::

    python benchmarks/calibrate_hexagonal.py [--units 32] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np
import xarray as xr

from hippo_rep.analysis import plane_waves
from hippo_rep.analysis import planewaves as P
from hippo_rep.analysis.controls import control_maps, pattern_formation

#: The tolerances before the triad-phase rule (angle degrees, wavelength ratio).
OLD_TOLERANCES = (10.0, 1.2)

#: Sheared lattices: relu in a periodic 30 x 30 box, place sigma (bins) of each run.
SHEARED_SIGMAS = (0.99, 1.2)


def row(name: str, pw: xr.Dataset) -> str:
    n3 = pw["n_waves"].values == 3
    peaks = n3 & (pw["lattice"].values == "peaks")
    dev = pw["hexagonal_angle_deviation"].values[peaks]
    ratio = pw["wave_length_ratio"].values[peaks]
    closure = pw["triad_closure"].values[peaks]
    old = peaks & (pw["hexagonal_angle_deviation"].values <= OLD_TOLERANCES[0]) & (
        pw["wave_length_ratio"].values <= OLD_TOLERANCES[1])
    n = pw["n_waves"].size

    def fmt(a, f):
        return f"{np.max(a):{f}}" if a.size else "-"

    share = pw["plane_wave_share"].values[pw["hexagonal"].values]
    med = f"{np.median(share):.2f}" if share.size else "-"
    return (f"{name:26s}{n:5d}{n3.sum():7d}{peaks.sum():7d}{fmt(dev, '8.1f'):>8s}"
            f"{fmt(ratio, '7.2f'):>7s}{fmt(closure, '8.3f'):>8s}"
            f"{int(pw['hexagonal'].sum()):6d}{int(old.sum()):6d}{med:>7s}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"tolerances: {P.HEXAGONAL_ANGLE_TOL:g} degrees, ratio "
          f"{P.HEXAGONAL_WAVELENGTH_RATIO:g} (old: {OLD_TOLERANCES[0]:g}, {OLD_TOLERANCES[1]:g})")
    print(f"{'maps':26s}{'n':>5s}{'3 waves':>7s}{'peaks':>7s}{'dev max':>8s}{'ratio':>7s}"
          f"{'closure':>8s}{'hex':>6s}{'old':>6s}{'share':>7s}")
    maps = control_maps(args.units, seed=args.seed)
    pw = plane_waves(maps)
    for c in maps["control"].values:
        print(row(str(c), pw.sel(control=c)))
    for sigma in SHEARED_SIGMAS:
        m = pattern_formation(args.units, (30, 30), periodic=True, place_sigma=sigma,
                              seed=args.seed)
        print(row(f"relu periodic 30x30 s={sigma:g}", plane_waves(m)))
    rng = np.random.default_rng(args.seed)
    y, x = np.indices((40, 40), dtype=np.float64)
    triads = []
    for _ in range(10 * args.units):
        k, o = 2 * np.pi / rng.uniform(7, 12), rng.uniform(0, 120)
        t = np.deg2rad(o + np.array([0.0, 120.0, 240.0]))
        triads.append(sum(a * np.cos(k * (x * np.cos(tt) + y * np.sin(tt)) - ph) for tt, ph, a
                          in zip(t, rng.uniform(0, 2 * np.pi, 3), rng.uniform(0.5, 1.0, 3),
                                 strict=True)))
    tri = xr.DataArray(np.stack(triads), dims=("unit", "y", "x"))
    for label, d in (("signed", tri), ("non-negative", tri - tri.min(("y", "x")))):
        h = plane_waves(d)["hexagonal"]
        print(f"random-phase triads, {label}: hexagonal {int(h.sum())}/{h.size} "
              f"= {float(h.mean()):.2f}")


if __name__ == "__main__":
    main()
