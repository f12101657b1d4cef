"""Benchmark: grid scores of many rate maps, hippo_rep vs a direct-convolution reference.

Scores N maps of 20 x 20 and of 40 x 40 bins (noisy hexagonal grids of random spacing and
orientation, plus pure-noise maps) with ``hippo_rep.analysis.grid_scores`` ("deepmind" and
"bnt"), and a smaller number with a direct implementation of the "deepmind" score written
the way the reference code does it (six ``scipy.signal.convolve2d`` calls per
autocorrelogram, ``scipy.ndimage.rotate`` per angle, one ring at a time), extrapolated to
1,000 maps. Single process; BLAS/OpenMP limited to one thread (override by setting
OPENBLAS_NUM_THREADS etc. yourself). Prints a table and the largest difference between the
two "deepmind" implementations on the maps both scored.

Usage::

    python benchmarks/bench_grid_scores.py [--n-maps 1000] [--n-direct 50] [--sizes 20 40]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
from scipy import ndimage, signal  # noqa: E402

from hippo_rep.analysis import grid_scores, hex_grid_map  # noqa: E402
from hippo_rep.analysis.autocorr import MIN_OVERLAP  # noqa: E402

ANGLES = (30, 45, 60, 90, 120, 135, 150)


def direct_sac(a: np.ndarray, min_overlap: int = MIN_OVERLAP) -> np.ndarray:
    """Masked Pearson SAC by six direct 2-D convolutions (the reference's way)."""
    mask = np.isfinite(a).astype(np.float64)
    a0 = np.where(mask > 0, a, 0.0)

    def filter2(b: np.ndarray, x: np.ndarray) -> np.ndarray:
        return signal.convolve2d(x, np.rot90(b, 2), mode="full")

    s_ab = filter2(a0, a0)
    s_a = filter2(a0, mask)
    s_b = filter2(mask, a0)
    s_aa = filter2(a0 * a0, mask)
    s_bb = filter2(mask, a0 * a0)
    n = np.rint(filter2(mask, mask))
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = s_ab / n - s_a * s_b / n**2
        std_a = np.sqrt(s_aa / n - s_a**2 / n**2)
        std_b = np.sqrt(s_bb / n - s_b**2 / n**2)
        r = cov / (std_a * std_b)
    r[(n < min_overlap) | ~np.isfinite(r)] = 0.0
    return r


def direct_deepmind(a: np.ndarray) -> tuple[float, float]:
    """'deepmind' gridness-60 and -90 of one square map, written out directly."""
    n = a.shape[0]
    sac = direct_sac(a)
    rotated = [ndimage.rotate(sac, angle, reshape=False) for angle in ANGLES]
    lag = np.arange(-(n - 1), n)
    d = np.sqrt(lag[:, None] ** 2 + lag[None, :] ** 2)
    g60s, g90s = [], []
    for outer in np.linspace(0.4, 1.0, 10) * n:
        ring = (d > 0.2 * n) & (d <= outer)
        m = sac[ring].mean()
        v = ((sac[ring] - m) ** 2).mean() + 1e-5
        r = {
            ang: ((sac[ring] - m) * (rot[ring] - m)).mean() / v
            for ang, rot in zip(ANGLES, rotated, strict=True)
        }
        g60s.append((r[60] + r[120]) / 2 - (r[30] + r[90] + r[150]) / 3)
        g90s.append(r[90] - (r[45] + r[135]) / 2)
    return max(g60s), max(g90s)


def make_maps(n_maps: int, size: int, rng: np.random.Generator) -> xr.DataArray:
    """Noisy hexagonal grids (3 in 4) and pure noise (1 in 4), dims (unit, y, x)."""
    maps = np.empty((n_maps, size, size))
    for i in range(n_maps):
        if i % 4 == 3:
            maps[i] = rng.random((size, size))
            continue
        spacing = rng.uniform(4, size / 2.5)
        grid = hex_grid_map(size, spacing, rng.uniform(0, 60), phase=rng.uniform(0, size, 2))
        maps[i] = grid.values + 0.3 * rng.standard_normal((size, size))
    return xr.DataArray(maps, dims=("unit", "y", "x"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-maps", type=int, default=1000, help="maps per size (hippo_rep)")
    parser.add_argument("--n-direct", type=int, default=50, help="maps per size (direct)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 40], help="map sizes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    rows = []
    notes = []
    for size in args.sizes:
        maps = make_maps(args.n_maps, size, rng)
        direct_maps = maps[: args.n_direct]

        t0 = time.perf_counter()
        ref = np.array([direct_deepmind(m) for m in direct_maps.values])
        t_direct = (time.perf_counter() - t0) / args.n_direct * 1000
        rows.append(("direct (convolve2d)", "deepmind", size, args.n_direct, t_direct))

        for method in ("deepmind", "bnt"):
            t0 = time.perf_counter()
            grid_scores(maps[:2], method=method)  # one-off: builds the cached rotation operator
            warm = time.perf_counter() - t0
            t0 = time.perf_counter()
            ds = grid_scores(maps, method=method)
            t_ours = (time.perf_counter() - t0) / args.n_maps * 1000
            rows.append(("hippo_rep (FFT)", method, size, args.n_maps, t_ours))
            notes.append(f"{method} {size}x{size}: first call (operator build) {warm:.2f} s")
            if method == "deepmind":
                ours = np.stack(
                    [
                        ds.gridness_60.values[: args.n_direct],
                        ds.gridness_90.values[: args.n_direct],
                    ],
                    axis=1,
                )
                diff = float(np.max(np.abs(ours - ref)))
                notes.append(
                    f"{size}x{size}: max |deepmind - direct| over {args.n_direct} maps = {diff:.1e}"
                )

    direct_time = {size: t for impl, _, size, _, t in rows if impl.startswith("direct")}
    header = f"{'implementation':<20} {'method':<9} {'size':>6} {'maps':>6} "
    header += f"{'s / 1000 maps':>14} {'speed-up vs direct':>19}"
    print(header)
    print("-" * len(header))
    for impl, method, size, n, t in rows:
        speed = direct_time[size] / t
        print(f"{impl:<20} {method:<9} {f'{size}x{size}':>6} {n:>6} {t:>14.2f} {speed:>18.1f}x")
    print()
    for note in notes:
        print(note)
    print("(direct timed on its maps and extrapolated to 1000; 'bnt' compared with direct")
    print(" 'deepmind' for scale only: the direct code implements 'deepmind')")


if __name__ == "__main__":
    main()
