"""The tasks' results, without torch: the PassKey sweep table (its seed-averaged rows, their
accuracy intervals, its writer and reader) and the long-delay result, their errors and chance.
:mod:`hippo_rep.tasks.passkey` and :mod:`hippo_rep.tasks.delay` (which need torch to run the
tasks) take these from here, so that ``hippo-rep figures`` draws the results where torch is
not installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep.fileio import read_json, write_csv, write_json

#: Number of PassKey key values (:mod:`hippo_rep.tasks.passkey`'s vocabulary).
N_KEYS = 16
#: Chance accuracy (a guess among the key values).
CHANCE = 1 / N_KEYS
#: Confidence level of the accuracy intervals (Wilson score intervals of the prompts).
CONFIDENCE = 0.95
#: Interval half-width (fraction) above which more prompts are needed to read an accuracy.
TARGET_HALF_WIDTH = 0.03
#: Columns of a PassKey sweep's sweep.csv (the rows of :func:`summarise`).
SWEEP_COLUMNS = ("variant", "filler", "accuracy", "std", "n_seeds", "per_seed", "n_prompts",
                 "ci_low", "ci_high")


class PassKeyError(ValueError):
    """A PassKey setting, checkpoint or sweep that cannot be used."""


class DelayTaskError(ValueError):
    """An unknown variant, a world or n_obs the model does not fit, a bad argument or file (a
    world too small for the walks is a :class:`~hippo_rep.worlds.WorldError`)."""


def wilson_interval(accuracy: float, n: int, confidence: float = CONFIDENCE
                    ) -> tuple[float, float]:
    """Wilson score interval (fractions) of an accuracy measured on ``n`` prompts.

    ``accuracy × n`` must be a whole number of correct answers (as
    :func:`hippo_rep.tasks.passkey.evaluate` returns). Uses
    :meth:`scipy.stats.binomtest(...).proportion_ci <scipy.stats.binomtest>`.
    """
    from scipy.stats import binomtest

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise PassKeyError(f"n (prompts) must be a positive integer; got {n!r}")
    hits = round(float(accuracy) * int(n))
    if not 0 <= hits <= n or abs(hits - float(accuracy) * n) > 1e-6 * n:
        raise PassKeyError(f"accuracy {accuracy!r} is not a count of correct answers out of "
                           f"{n} prompts")
    ci = binomtest(hits, int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def prompts_needed(accuracy: float, half_width: float = TARGET_HALF_WIDTH,
                   confidence: float = CONFIDENCE) -> int:
    """The fewest prompts whose Wilson interval around ``accuracy`` is at most
    2 × ``half_width`` wide (e.g. 388 for 0.9 at ±0.03, 1,064 for 0.5)."""
    from scipy.stats import norm

    if not 0 <= accuracy <= 1 or not 0 < half_width < 0.5:
        raise PassKeyError(f"need 0 ≤ accuracy ≤ 1 and 0 < half_width < 0.5; got {accuracy}, "
                           f"{half_width}")
    z = float(norm.ppf(0.5 + confidence / 2))

    def half(n):  # Wilson half-width at a continuous accuracy
        return z / (1 + z * z / n) * np.sqrt(accuracy * (1 - accuracy) / n + z * z / (4 * n * n))

    n = 1
    while half(n) > half_width:
        n *= 2
    lo = n // 2
    while lo + 1 < n:  # half-width shrinks with n: bisect the first n that is narrow enough
        mid = (lo + n) // 2
        lo, n = (lo, mid) if half(mid) <= half_width else (mid, n)
    return n


def summarise(runs: list[dict]) -> list[dict]:
    """Seed-averaged rows ``{variant, filler, accuracy, std, n_seeds, per_seed, n_prompts,
    ci_low, ci_high}`` from per-run results ``{variant, seed, n_samples, accuracy: {filler:
    acc}}`` (order kept).

    ``ci_low``/``ci_high`` is the 95% Wilson interval of the prompts of all seeds pooled
    (``n_prompts`` of them): it covers the sampling of prompts, not seed-to-seed variation
    (``std``, the SD over seeds)."""
    order, acc = [], {}
    for r in runs:
        for filler, a in r["accuracy"].items():
            key = (r["variant"], int(filler))
            if key not in acc:
                order.append(key)
                acc[key] = []
            acc[key].append((r["seed"], a, int(r["n_samples"])))
    rows = []
    for key in order:
        vals = np.array([a for _, a, _ in acc[key]])
        n = sum(k for _, _, k in acc[key])
        hits = sum(round(a * k) for _, a, k in acc[key])
        lo, hi = wilson_interval(hits / n, n)
        rows.append({"variant": key[0], "filler": key[1], "accuracy": float(vals.mean()),
                     "std": float(vals.std()), "n_seeds": len(vals),
                     "per_seed": " ".join(f"{s}:{a:.3f}" for s, a, _ in acc[key]),
                     "n_prompts": n, "ci_low": lo, "ci_high": hi})
    return rows


def wide_intervals(rows: list[dict], half_width: float = TARGET_HALF_WIDTH) -> list[dict]:
    """The rows whose 95% interval is wider than ±``half_width`` (half its width; a Wilson
    interval is not centred on the accuracy), each with ``prompts_needed`` (pooled prompts
    for ±``half_width`` at its accuracy)."""
    out = []
    for r in rows:
        if (r["ci_high"] - r["ci_low"]) / 2 > half_width:
            out.append({**r, "prompts_needed": prompts_needed(r["accuracy"], half_width)})
    return out


def wide_text(rows: list[dict], what: str) -> str | None:
    """One line saying how many of ``rows`` have an interval wider than
    ±:data:`TARGET_HALF_WIDTH` and how many ``what`` (e.g. "prompts per length") the widest
    needs; None when none is wider."""
    wide = wide_intervals(rows)
    if not wide:
        return None
    worst = max(wide, key=lambda r: r["prompts_needed"])
    return (f"{len(wide)} of {len(rows)} accuracies have a 95% interval wider than "
            f"±{TARGET_HALF_WIDTH:.2f}; ±{TARGET_HALF_WIDTH:.2f} needs up to "
            f"{worst['prompts_needed']} {what} (at accuracy {worst['accuracy']:.2f})")


def accuracy_text(accuracy: dict, n_prompts: int) -> str:
    """Accuracy per filler length with its Wilson interval (:func:`wilson_interval`) on
    ``n_prompts`` prompts each, a row per length, then :func:`wide_text`'s line if any."""
    ci = {f: wilson_interval(a, n_prompts) for f, a in accuracy.items()}
    lines = [f"{'filler':>8s}{'accuracy':>10s}  {CONFIDENCE:.0%} interval (Wilson)"]
    lines += [f"{f:8d}{a:10.3f}  [{ci[f][0]:.3f}, {ci[f][1]:.3f}]" for f, a in accuracy.items()]
    wide = wide_text([{"accuracy": a, "ci_low": ci[f][0], "ci_high": ci[f][1]}
                      for f, a in accuracy.items()], "prompts per length (--samples)")
    return "\n".join([*lines, *([wide] if wide else [])])


def format_table(rows: list[dict]) -> str:
    """Variants as rows, filler lengths as columns, seed-averaged accuracy."""
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    fillers = sorted({r["filler"] for r in rows})
    cell = {(r["variant"], r["filler"]): r["accuracy"] for r in rows}
    lines = [f"{'variant':10s}" + "".join(f"{f:>7d}" for f in fillers)]
    for v in variants:
        lines.append(f"{v:10s}" + "".join(f"{cell[(v, f)]:7.2f}" if (v, f) in cell
                                          else f"{'-':>7s}" for f in fillers))
    return "\n".join(lines)


def write_sweep(out: Path, runs, overrides, seeds, n_samples) -> None:
    """Write a PassKey sweep's tables into ``out``: ``sweep.csv`` and ``sweep.json`` (the
    seed-averaged rows of :func:`summarise`, with each variant's config as it ran) and
    ``runs.json`` (the per-run results, as :func:`hippo_rep.tasks.passkey.sweep` made them)."""
    rows = summarise(runs)
    write_csv(out / "sweep.csv", SWEEP_COLUMNS, rows, extrasaction="ignore", lineterminator="\n")
    configs = {}
    for r in runs:  # as read back from the runs' checkpoints; seeds differ only in train.seed
        cfg = json.loads(json.dumps(r["config"]))
        cfg["train"].pop("seed", None)
        configs.setdefault(r["variant"], cfg)
    meta = {"overrides": list(overrides), "configs": configs,
            "variants": {v: c["model"] for v, c in configs.items()},
            "seeds": [int(s) for s in seeds], "n_samples": n_samples,
            "threads": sorted({r.get("threads") for r in runs if r.get("threads")}),
            "confidence": CONFIDENCE, "chance": CHANCE, "rows": rows}
    write_json(out / "sweep.json", meta)
    write_json(out / "runs.json", runs)


def read_sweep(path: str | Path) -> list[dict]:
    """The seed-averaged rows of a PassKey ``sweep.json`` (or of the folder holding it).

    Rows of sweeps written before the intervals were recorded get ``n_prompts``, ``ci_low`` and
    ``ci_high`` from the file's ``n_samples`` (prompts per seed) and each row's ``n_seeds``.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "sweep.json"
    data = read_json(path, PassKeyError, "sweep table")
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(
            isinstance(r, dict) and {"variant", "filler", "accuracy", "std"} <= set(r)
            for r in rows):
        raise PassKeyError(f"{str(path)!r} is not a PassKey sweep table (needs rows of "
                           "variant, filler, accuracy, std)")
    n_samples = data.get("n_samples")
    for r in rows:
        if "ci_low" in r or not isinstance(n_samples, int):
            continue
        n = n_samples * int(r.get("n_seeds", 1))
        try:
            r["ci_low"], r["ci_high"] = wilson_interval(r["accuracy"], n)
        except PassKeyError as err:
            raise PassKeyError(f"{str(path)!r}: {err}") from None
        r["n_prompts"] = n
    return rows


def read_delay(path) -> xr.Dataset:
    """Read what :func:`hippo_rep.tasks.delay.write_delay` wrote; checks for the
    ``accuracy`` variable."""
    path = Path(path)
    if not path.is_file():
        raise DelayTaskError(f"delay result {str(path)!r} not found" if not path.exists()
                             else f"delay result {str(path)!r} is not a file")
    try:
        if path.suffix == ".json":
            ds = xr.Dataset.from_dict(read_json(path, DelayTaskError, "delay result"))
        else:
            ds = xr.load_dataset(path)
    except DelayTaskError:
        raise
    except Exception as err:  # xarray/netCDF raise many types for damaged files
        raise DelayTaskError(f"cannot read delay result {str(path)!r} "
                             f"({type(err).__name__})") from None
    if "accuracy" not in ds or "delay" not in ds.dims:
        raise DelayTaskError(f"{str(path)!r} is not a delay result (needs accuracy(delay))")
    return ds
