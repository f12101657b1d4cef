"""Benchmark: how long the rate-map explorer takes to respond to one change.

Builds the explorer of ``hippo_rep.explore.explore_rate_maps`` on an analysis dataset (default
the shipped ``data/analysis.nc``) without a front end, then times each kind of change — a new
unit from the list, a step of the rank slider, a new environment, a new population, switching
to and within the "compare environments" view — from setting the widget's value to the new
PNG being in the ``Output`` widget (ranking, figure, rendering at 2×, base64), with the
explorer's cache of drawn panels cleared first (and once, going back and forth, cached).
The time to send
it to the browser and draw it there is not included. Two baselines measured in the same run:
rendering an empty figure of the same size to a 2× PNG (the floor of any redraw) and building
the unit figure without rendering it. Wall and CPU time of the process are both shown (on
busy shared cores the CPU time is closer to what a change costs on an idle one). Single
thread (BLAS/OpenMP limited to one).

Usage::

    python benchmarks/bench_explorer.py [--analysis data/analysis.nc] [--repeats 10]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def timed(fn, repeats: int) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each call: on shared cores the process's CPU time is what the
    change costs on an idle core, the wall time what a user waits now."""
    out = []
    for i in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn(i)
        out.append((time.perf_counter() - t0, time.process_time() - c0))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--analysis", default=str(ROOT / "data" / "analysis.nc"))
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)

    from matplotlib.figure import Figure

    from hippo_rep.analysis import open_analysis
    from hippo_rep.explore import UNIT_FIGSIZE, explore_rate_maps, ranked_units, unit_figure
    from hippo_rep.plotting.display import figure_bundle

    t0 = time.perf_counter()
    ds = open_analysis(args.analysis)
    t_open = time.perf_counter() - t0
    t0 = time.perf_counter()
    ex = explore_rate_maps(ds, show=False)
    t_init = time.perf_counter() - t0
    envs = list(ds["env"].values)
    pops = list(ex.population.options)
    n = args.repeats

    def has_png() -> None:
        assert "image/png" in ex.output.outputs[0]["data"], ex.output.outputs

    rows = []

    def row(name, times):
        rows.append((name, times))

    # baselines
    row("baseline: empty figure -> 2x PNG", timed(
        lambda i: figure_bundle(Figure(figsize=UNIT_FIGSIZE)), n))
    env0 = envs[0]
    ranked = ranked_units(ds, env0, pops[0])
    row("baseline: unit figure built, not rendered", timed(
        lambda i: unit_figure(ds, env0, pops[0], ranked[i % len(ranked)][0]), n))

    def step(widget, values, cached=False):
        def go(i):
            if not cached:
                ex.cache.clear()  # outside the timing would be fairer; it is ~µs
            widget.value = values[(i + 1) % len(values)]
            has_png()
        return go

    ids = [u for _, u in ex.unit.options]
    row("unit from the list", timed(step(ex.unit, ids[: max(n + 1, 2)]), n))
    row("rank slider step", timed(step(ex.rank, list(range(min(ex.rank.max + 1, n + 1)))), n))
    row("environment", timed(step(ex.env, envs), n))
    row("population", timed(step(ex.population, pops), n))
    ex.view.value = "compare"
    row("compare view: rank slider step",
        timed(step(ex.rank, list(range(min(ex.rank.max + 1, n + 1)))), n))
    row("view: unit <-> compare", timed(step(ex.view, ["unit", "compare"]), n))
    row("view: unit <-> compare, panels cached",
        timed(step(ex.view, ["unit", "compare"], cached=True), n))

    base = statistics.median(w for w, _ in rows[0][1])
    print(f"analysis {args.analysis}: {dict(ds.sizes)}")
    print(f"open_analysis {t_open:.2f} s; explorer built (first figure drawn) {t_init:.2f} s; "
          f"{n} repeats per row; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    print(f"{'change':44s} {'wall med s':>10s} {'wall max s':>10s} {'CPU med s':>9s} "
          f"{'x empty':>8s}")
    for name, times in rows:
        wall = statistics.median(w for w, _ in times)
        cpu = statistics.median(c for _, c in times)
        print(f"{name:44s} {wall:10.3f} {max(w for w, _ in times):10.3f} {cpu:9.3f} "
              f"{wall / base:8.1f}")


if __name__ == "__main__":
    main()
