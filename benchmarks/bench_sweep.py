"""Benchmark: wall-clock of a 4-run sweep (2 configs × 2 seeds) on 1 vs 2 local dask workers.

Runs ``hippo_rep.pipeline.run_sweep`` — train, evaluate, record and analyse every run — on the
``tiny`` preset with ``model.transition_activation=linear,relu`` × 2 seeds, each time into a
fresh folder:

- on a ``LocalCluster`` of 1 worker process (``--workers 1``);
- on a ``LocalCluster`` of 2 worker processes (``--workers 2``);
- optionally (``--sequential``) in this process, one run after the other.

The wall time includes starting the cluster and the workers' imports (spawned processes,
the default); the sum of the runs' own times (``done.json``) is printed beside it. Prints
a table with the ratio, the load average (other processes sharing the machine change the
result a lot), and checks that every variant gives the same table.

Usage::

    python benchmarks/bench_sweep.py [--iterations 40] [--record-steps 300] [--sequential]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import xarray as xr  # noqa: E402

from hippo_rep.pipeline import SweepSettings, run_sweep  # noqa: E402
from hippo_rep.sweep import DONE_FILE, RUNS_DIR, open_sweep  # noqa: E402

#: The sweep measured: 2 configs × 2 seeds.
GRID = ["model.transition_activation=linear,relu"]
SEEDS = 2


def _run(out: Path, args, workers: int | None) -> tuple[float, float, xr.Dataset]:
    settings = SweepSettings(eval_envs=args.eval_envs, record_envs=args.record_envs,
                             record_steps=args.record_steps, shuffles=args.shuffles)
    t0 = time.perf_counter()
    rep = run_sweep(args.preset, GRID, SEEDS, out, settings=settings, workers=workers,
                    overrides=[f"train.iterations={args.iterations}", *args.set],
                    progress=False)
    wall = time.perf_counter() - t0
    if rep.failed:
        raise SystemExit(f"runs failed: {rep.failed}")
    runs = sum(json.loads((out / RUNS_DIR / n / DONE_FILE).read_text())["wall_s"]
               for n in rep.runs)
    return wall, runs, open_sweep(out).drop_attrs()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="tiny")
    p.add_argument("--iterations", type=int, default=40, help="training iterations per run")
    p.add_argument("--eval-envs", type=int, default=8)
    p.add_argument("--record-envs", type=int, default=2)
    p.add_argument("--record-steps", type=int, default=300)
    p.add_argument("--shuffles", type=int, default=5)
    p.add_argument("--set", action="append", default=["world.worlds=square:6"],
                   help="extra override of every run (repeatable)")
    p.add_argument("--sequential", action="store_true", help="also run in this process")
    args = p.parse_args(argv)
    variants = ([("in-process", None)] if args.sequential else []) + \
        [("1 worker", 1), ("2 workers", 2)]
    print(f"4-run sweep ({args.preset}, {GRID[0]} × {SEEDS} seeds, {args.iterations} "
          f"iterations, {args.record_envs} envs × {args.record_steps} steps recorded, "
          f"{args.shuffles} shuffles); load average before: {os.getloadavg()[0]:.2f}, "
          f"{os.cpu_count()} CPUs")
    rows, tables = [], []
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        for i, (label, workers) in enumerate(variants):
            wall, runs, table = _run(Path(tmp) / f"s{i}", args, workers)
            rows.append((label, wall, runs))
            tables.append(table)
            print(f"  {label}: {wall:.1f} s (load average {os.getloadavg()[0]:.2f})",
                  flush=True)
    ref = dict((label, wall) for label, wall, _ in rows)["1 worker"]
    print(f"\n{'where':12s}{'wall s':>9s}{'sum of runs s':>15s}{'1 worker / this':>17s}")
    for label, wall, runs in rows:
        print(f"{label:12s}{wall:9.1f}{runs:15.1f}{ref / wall:17.2f}")
    same = all(t.identical(tables[0]) for t in tables[1:])
    print(f"tables identical across variants: {same}")


if __name__ == "__main__":
    main()
