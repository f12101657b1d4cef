"""Benchmark: grid scores of many rate maps against the references, and the pair structure.

Scores N maps of 20 x 20 and of 40 x 40 bins (noisy hexagonal grids of random spacing and
orientation, plus pure-noise maps) with ``hippo_rep.analysis.grid_scores`` ("deepmind" and
"bnt"); a smaller number, on the same maps, with the DeepMind scorer re-stated as its code
does it (six ``scipy.signal.convolve2d`` calls per autocorrelogram, NaN -> 0, no overlap
limit, ``scipy.ndimage.rotate`` per angle, one ring at a time) and with opexebo 0.7
(``autocorrelation`` + ``grid_score``, the "bnt" reference), each extrapolated to 1,000
maps. Then the cell-pair structure statistic (``pair_structure``: unit x unit correlation
matrices and the shift-tolerant offsets, 1,000 permutations each) on 8 environments x 512
units of 11 x 11 maps, against a direct loop (``np.corrcoef`` per permutation) timed on
fewer permutations. Single process; BLAS/OpenMP limited to one thread (override by setting
OPENBLAS_NUM_THREADS etc. yourself). Prints a table and the largest differences between
implementations on the maps both scored.

Usage::

    python benchmarks/bench_grid_scores.py [--n-maps 1000] [--n-direct 50] [--sizes 20 40]
        [--units 512] [--envs 8] [--perms 1000]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
from scipy import ndimage, signal  # noqa: E402

from hippo_rep.analysis import grid_scores, hex_grid_map  # noqa: E402
from hippo_rep.analysis.remapping import pair_structure  # noqa: E402

ANGLES = (30, 45, 60, 90, 120, 135, 150)


def direct_sac(a: np.ndarray) -> np.ndarray:
    """The DeepMind scorer's SAC: six direct 2-D convolutions, NaN -> 0, no overlap limit."""
    mask = np.isfinite(a).astype(np.float64)
    a0 = np.where(mask > 0, a, 0.0)

    def filter2(b: np.ndarray, x: np.ndarray) -> np.ndarray:
        return signal.convolve2d(x, np.rot90(b, 2), mode="full")

    s_ab = filter2(a0, a0)
    s_a = filter2(a0, mask)
    s_b = filter2(mask, a0)
    s_aa = filter2(a0 * a0, mask)
    s_bb = filter2(mask, a0 * a0)
    n = filter2(mask, mask)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = s_ab / n - s_a * s_b / n**2
        std_a = np.power(s_aa / n - s_a**2 / n**2, 0.5)
        std_b = np.power(s_bb / n - s_b**2 / n**2, 0.5)
        r = cov / (std_a * std_b)
    return np.nan_to_num(r)


def opexebo_score(a: np.ndarray) -> float:
    """opexebo 0.7's gridness of one map (its central radius passed on as a scalar: opexebo
    0.7.2 calls ``int()`` on a one-element array, which numpy 2 refuses)."""
    import importlib

    from opexebo.analysis import autocorrelation

    mod = importlib.import_module("opexebo.analysis.grid_score")
    if not getattr(mod, "_bench_scalar_radius", False):
        orig = mod._findCentreRadius
        mod._findCentreRadius = lambda acorr, **kw: float(np.ravel(orig(acorr, **kw))[0])
        mod._bench_scalar_radius = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(mod.grid_score(autocorrelation(a))[0])


def direct_pair_structure(rates: np.ndarray, a: int, b: int, n_perms: int,
                          rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """Pair-structure r and null for one env pair, the obvious way: np.corrcoef per perm."""
    ca, cb = np.corrcoef(rates[a]), np.corrcoef(rates[b])
    iu = np.triu_indices(ca.shape[0], 1)
    obs = float(np.corrcoef(ca[iu], cb[iu])[0, 1])
    null = np.empty(n_perms)
    for k in range(n_perms):
        p = rng.permutation(ca.shape[0])
        null[k] = np.corrcoef(ca[iu], cb[np.ix_(p, p)][iu])[0, 1]
    return obs, null


def bench_pair_structure(n_units: int, n_envs: int, n_perms: int, n_direct: int,
                         rng: np.random.Generator) -> list[str]:
    """Time ``pair_structure`` (both statistics) on a translated grid module."""
    side = 11
    y, x = np.mgrid[0:side, 0:side].astype(float)
    phases = rng.uniform(0, 6, (n_units, 2))
    maps = np.empty((n_envs, n_units, side, side))
    for e in range(n_envs):
        shift = rng.uniform(0, 6, 2)
        for u in range(n_units):
            maps[e, u] = hex_grid_map(side, 6.0, 10.0, phase=phases[u] + shift).values
    maps += 0.05 * rng.standard_normal(maps.shape)
    rate_map = xr.DataArray(maps, dims=("env", "unit", "y", "x"))
    node_rate = xr.DataArray(maps.reshape(n_envs, n_units, -1),
                             dims=("env", "unit", "world_node"))
    t0 = time.perf_counter()
    ds = pair_structure(node_rate, None, n_shuffles=n_perms, rng=0)
    t_r = time.perf_counter() - t0
    t0 = time.perf_counter()
    ds_s = pair_structure(node_rate, rate_map, n_shuffles=n_perms, rng=0)
    t_both = time.perf_counter() - t0
    n_pairs = ds.sizes["env_pair"]
    t0 = time.perf_counter()
    ref, _ = direct_pair_structure(node_rate.values, 0, 1, n_direct, rng)
    t_direct = (time.perf_counter() - t0) / n_direct * n_perms * n_pairs
    lines = [
        f"pair structure, {n_envs} envs ({n_pairs} pairs) x {n_units} units, {n_perms} "
        "permutations each:",
        f"  direct loop (np.corrcoef per permutation; {n_direct} timed, extrapolated): "
        f"{t_direct:8.1f} s",
        f"  pair_structure_r + null:                 {t_r:8.1f} s  "
        f"({t_direct / t_r:.1f}x the direct loop)",
        f"  + shift-tolerant pair_shift_match + null: {t_both:8.1f} s (both statistics)",
        f"  r (env pair 0-1): {float(ds.pair_structure_r[0]):.4f} vs direct {ref:.4f}; "
        f"pair_shift_match {float(ds_s.pair_shift_match[0]):.3f} "
        f"(null mean {float(ds_s.pair_shift_null_mean[0]):.3f})",
    ]
    return lines


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
    parser.add_argument("--units", type=int, default=512, help="pair structure: units")
    parser.add_argument("--envs", type=int, default=8, help="pair structure: environments")
    parser.add_argument("--perms", type=int, default=1000, help="pair structure: permutations")
    parser.add_argument("--n-direct-perms", type=int, default=20,
                        help="pair structure: permutations of the direct loop")
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
        rows.append(("DeepMind scorer", "deepmind", size, args.n_direct, t_direct))
        t0 = time.perf_counter()
        ref_bnt = np.array([opexebo_score(m) for m in direct_maps.values])
        t_opx = (time.perf_counter() - t0) / args.n_direct * 1000
        rows.append(("opexebo 0.7", "bnt", size, args.n_direct, t_opx))

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
                fin = np.isfinite(ref).all(axis=1)
                diff = float(np.max(np.abs(ours - ref)[fin]))
                notes.append(
                    f"{size}x{size}: max |deepmind - DeepMind scorer| over {int(fin.sum())} "
                    f"maps it scores (of {args.n_direct}) = {diff:.1e}"
                )
            else:
                g = ds.gridness_60.values[: args.n_direct]
                both = np.isfinite(ref_bnt)
                notes.append(
                    f"{size}x{size}: bnt vs opexebo on {args.n_direct} maps: opexebo finite on "
                    f"{int(both.sum())}, ours finite there on {int(np.isfinite(g[both]).sum())}"
                    f", mean |diff| {np.nanmean(np.abs(g[both] - ref_bnt[both])):.1e}"
                )

    direct_time = {(size, m): t for impl, m, size, _, t in rows
                   if not impl.startswith("hippo_rep")}
    header = f"{'implementation':<20} {'method':<9} {'size':>6} {'maps':>6} "
    header += f"{'s / 1000 maps':>14} {'speed-up vs reference':>22}"
    print(header)
    print("-" * len(header))
    for impl, method, size, n, t in rows:
        speed = direct_time[(size, method)] / t
        print(f"{impl:<20} {method:<9} {f'{size}x{size}':>6} {n:>6} {t:>14.2f} {speed:>21.1f}x")
    print()
    for note in notes:
        print(note)
    print("(references timed on their maps, the first of ours, and extrapolated to 1000;")
    print(" each method's speed-up is against its own reference)")
    print()
    for line in bench_pair_structure(args.units, args.envs, args.perms, args.n_direct_perms,
                                     rng):
        print(line)


if __name__ == "__main__":
    main()
