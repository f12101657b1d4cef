"""Check: are simulated band cells (and grid cells) called place cells?

Analyses ``--sessions`` simulated sessions (``simulate_session(10 minutes)``: the planted
cells, then sessions with redrawn fields, ``field_seed`` 0, 1, ...: new grid phases and
orientations, band angles, ...; 50 shuffles each) and counts, per planted kind, the cells
that are place cells by the place rule without (``place_not_wave=False``) and with the
exclusion of plane-wave patterns (the default), with the largest field's area (% of the box),
count and elongation of the band cells that pass the rule without the exclusion.

Usage::

    python benchmarks/band_cells_place_rule.py [--sessions 8] [--shuffles 50]
"""

from __future__ import annotations

import argparse

import numpy as np

from hippo_rep.analysis import analyse, simulate_session
from hippo_rep.analysis.classify import classify


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=8)
    p.add_argument("--shuffles", type=int, default=50)
    args = p.parse_args(argv)
    counts: dict[str, np.ndarray] = {}
    passed = []
    for k in range(args.sessions):
        field_seed = None if k == 0 else k - 1
        session, truth = simulate_session(10, seed=k, field_seed=field_seed)
        a = analyse(session, shuffles=args.shuffles, seed=0).isel(env=0)
        old = classify(a, place_not_wave=False)["is_place"].values
        for i, row in truth.iterrows():
            u = a.isel(unit=i)
            c = counts.setdefault(row.population, np.zeros(5, dtype=int))
            c += [1, old[i], bool(u.is_place), bool(u.is_band), bool(u.is_grid)]
            if row.population == "band" and old[i]:
                passed.append((row.angle, 100 * float(u.field_area.isel(field=0))
                               / u.rate_map.size, int(u.n_fields),
                               float(u.field_elongation.isel(field=0))))
    print(f"{args.sessions} sessions of 10 min, {args.shuffles} shuffles")
    print("kind      | cells | place (no exclusion) | place | band | grid")
    for kind, (n, old_n, new_n, band, grid) in counts.items():
        print(f"{kind:<9} | {n:>5} | {old_n:>20} | {new_n:>5} | {band:>4} | {grid:>4}")
    if passed:
        print("band cells passing without the exclusion: angle (deg), largest field "
              "(% of box), fields, elongation:")
        for angle, area, n, e in passed:
            print(f"  {angle:6.1f}  {area:5.1f}%  {n}  {e:.2f}")


if __name__ == "__main__":
    main()
