"""Benchmark: ``analyse`` of a 16-environment recording, single process vs a local dask cluster.

Builds a synthetic recording (``hippo_rep.analysis.synthetic_recording``: an 11 x 11 square
world, 16 environments, 3,000 steps each, 64 positional units of which 24 planted grids, 20
place fields and 20 random, 150 memory slots) and times
``hippo_rep.analysis.analyse(recording, shuffles=100)`` — 278 units x 16 environments, each
scored on the real maps and on 100 circularly shifted ones, plus remapping and decoding —

- in one process: dask's synchronous scheduler (one thread), the default without a Client;
- on a ``LocalCluster`` of 2 single-threaded worker processes (``dask_client(workers=2)``,
  what ``hippo-rep analyse --workers 2`` does); the cluster's start-up is timed separately.

Prints a table with wall and CPU time and the ratio, the load average (other processes
sharing the machine change the result a lot), checks that both results are identical, and how
many planted units were classified. BLAS is limited to one thread everywhere.

Usage::

    python benchmarks/bench_analyse.py [--envs 16] [--steps 3000] [--shuffles 100]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from hippo_rep.analysis import analyse, synthetic_recording  # noqa: E402
from hippo_rep.cluster import dask_client  # noqa: E402


def _cpu() -> float:
    """User + system CPU seconds of the calling process (runs on workers too)."""
    t = os.times()
    return t.user + t.system


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="square:11")
    p.add_argument("--envs", type=int, default=16)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--shuffles", type=int, default=100)
    p.add_argument("--memories", type=int, default=150)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    rec = synthetic_recording(args.world, n_env=args.envs, n_steps=args.steps, n_grid=24,
                              n_place=20, n_random=20, n_memory=args.memories, seed=0)
    n_units = rec.sizes["g_unit"] * 2 + rec.sizes["memory"]
    print(f"recording: {args.world}, {args.envs} envs x {args.steps} steps, "
          f"{rec.sizes['g_unit']} g units (+ g_pi), {rec.sizes['memory']} memories "
          f"= {n_units} units; built in {time.perf_counter() - t0:.1f} s")
    print(f"analyse(shuffles={args.shuffles}): {n_units * args.envs:,} maps, "
          f"{n_units * args.envs * args.shuffles:,} shuffled maps")

    load0 = os.getloadavg()[0]
    c0 = _cpu()
    t0 = time.perf_counter()
    single = analyse(rec, shuffles=args.shuffles, scheduler="synchronous")
    t_single = time.perf_counter() - t0
    cpu_single = _cpu() - c0

    t0 = time.perf_counter()
    with dask_client(workers=args.workers) as client:
        t_start = time.perf_counter() - t0
        client.wait_for_workers(args.workers)
        w0, c0 = sum(client.run(_cpu).values()), _cpu()
        t0 = time.perf_counter()
        multi = analyse(rec, shuffles=args.shuffles)
        t_multi = time.perf_counter() - t0
        cpu_multi = sum(client.run(_cpu).values()) - w0 + _cpu() - c0
    load1 = os.getloadavg()[0]

    rows = [
        ("single process (synchronous)", t_single, cpu_single, "-"),
        (f"LocalCluster {args.workers} workers x 1 thread", t_multi, cpu_multi,
         f"+ {t_start:.1f} s start"),
    ]
    print()
    print(f"{'run':38s}{'analyse (s)':>13s}{'CPU (s)':>9s}{'speed-up':>10s}   note")
    for name, t, cpu, note in rows:
        print(f"{name:38s}{t:13.1f}{cpu:9.1f}{t_single / t:9.2f}x   {note}")
    print(f"(CPU: user + system seconds of this process and the workers; load average "
          f"{load0:.1f} before, {load1:.1f} after, on {os.cpu_count()} CPUs)")
    try:
        xr.testing.assert_identical(single, multi)
        same = "identical"
    except AssertionError:
        diff = max(
            float(np.nanmax(np.abs(single[k].values - multi[k].values)))
            for k in single.data_vars
            if single[k].dtype.kind == "f" and single[k].size
        )
        same = f"NOT identical (max |diff| {diff:.2e})"
    print(f"\nresults single vs cluster: {same}")
    planted = rec["planted"].values
    g = single.sel(unit=single["variable"] == "g")
    for kind, var in (("grid", "is_grid"), ("place", "is_place")):
        hit = g[var].values[:, planted == kind].mean()
        rnd = g[var].values[:, planted == "random"].mean()
        print(f"planted {kind} units classified {kind}: {hit:.0%} of (env, unit); "
              f"random units: {rnd:.0%}")


if __name__ == "__main__":
    main()
