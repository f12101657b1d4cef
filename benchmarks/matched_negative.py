"""Hexagonal fractions of analyses beside a negative matched to their maps.

For each analysis (``hippo-rep analyse``), the fraction of one population's maps that
``plane_waves`` calls hexagonal (and ``is_grid``), beside the fraction of
:func:`~hippo_rep.analysis.matched_negative` maps called hexagonal: rectified random
superpositions of plane waves at the wavelength of the analysis' hexagonal maps (of all its
waves where none is hexagonal), cut to the bins its maps cover. Those are no lattice, so
their hexagonal fraction is the lattice rule's false-positive rate at that map size and
wavelength. With ``--modules N`` the units are also grouped by ``unit_index mod N`` (the
module a read-out cell reads with ``model.cells_modular``), each group against a negative at
its own wavelength. Intervals: Wilson 95%.

Usage::

    python benchmarks/matched_negative.py ANALYSIS.nc [...] [--population g] [--units 1024]
        [--seeds 0,1] [--modules N]
"""

from __future__ import annotations

import argparse

import numpy as np
import xarray as xr
from scipy.stats import binomtest

from hippo_rep.analysis import matched_negative, open_analysis
from hippo_rep.analysis.controls import N_MATCHED_MAPS


def rate(hits: int, n: int) -> str:
    """``hits/n = p [low, high]`` (Wilson 95%)."""
    if n == 0:
        return "-"
    ci = binomtest(int(hits), int(n)).proportion_ci(method="wilson")
    return f"{hits}/{n} = {hits / n:.3f} [{ci.low:.3f}, {ci.high:.3f}]"


def compare(label: str, an: xr.Dataset, units: int, seeds: list[int]) -> None:
    """Print one row: ``an``'s hexagonal and is_grid fractions, the negative's per seed."""
    exists = an["rate_map"].notnull().any(("y", "x")).values
    hexa = an["hexagonal"].values.astype(bool) & exists
    grid = an["is_grid"].values.astype(bool) & exists
    waves = an["wave_length"].where(an["hexagonal"]) if hexa.any() else an["wave_length"]
    lam = float(waves.median(skipna=True))
    negs = [matched_negative(an["rate_map"], lam, units, seed=s)["hexagonal"].values
            for s in seeds]
    print(f"{label:42s} {rate(hexa.sum(), exists.sum()):30s} {rate(grid.sum(), exists.sum()):30s}"
          f" {lam:6.1f}  " + "; ".join(rate(n.sum(), n.size) for n in negs))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("analyses", nargs="+")
    p.add_argument("--population", default="g")
    p.add_argument("--units", type=int, default=N_MATCHED_MAPS, help="negative maps per seed")
    p.add_argument("--seeds", default="0,1", help="seeds of the negative, comma-separated")
    p.add_argument("--modules", type=int, default=0,
                   help="also group units by unit_index mod N (0: no groups)")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"{'analysis':42s} {'hexagonal':30s} {'is_grid':30s} {'λ bins':>6s}  "
          f"negative hexagonal (seeds {args.seeds})")
    for path in args.analyses:
        with open_analysis(path) as ds:
            an = ds.hippo.population(args.population).load()
        compare(f"{path} ({args.population})", an, args.units, seeds)
        if args.modules:
            module = an["unit_index"].values % args.modules
            for m in range(args.modules):
                compare(f"  module {m}", an.isel(unit=np.flatnonzero(module == m)), args.units,
                        seeds)


if __name__ == "__main__":
    main()
