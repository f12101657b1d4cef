"""The tasks' results, read without torch: the PassKey sweep table and the long-delay result,
their errors, chance and the accuracy intervals. :mod:`hippo_rep.tasks.passkey` and
:mod:`hippo_rep.tasks.delay` (which need torch to run the tasks) take these from here, so that
``hippo-rep figures`` draws the results where torch is not installed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep.fileio import read_json

#: Number of PassKey key values (:mod:`hippo_rep.tasks.passkey`'s vocabulary).
N_KEYS = 16
#: Chance accuracy (a guess among the key values).
CHANCE = 1 / N_KEYS
#: Confidence level of the accuracy intervals (Wilson score intervals of the prompts).
CONFIDENCE = 0.95


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
