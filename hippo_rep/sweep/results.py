"""Reading a sweep: whether a run is finished, :func:`open_sweep`, the folder as one labelled
``xr.Dataset``, and :func:`sweep_table`, a row per run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep.analysis.analysis_files import open_analysis
from hippo_rep.analysis.summary import SUMMARY, summarise_analysis
from hippo_rep.run_files import ANALYSIS_FILE, ERROR_FILE, EVAL_FILE
from hippo_rep.sweep.manifest import RUNS_DIR, read_manifest
from hippo_rep.worlds import AGENTS, REPORTED

#: Written atomically and last: the run is finished (with the files it names).
DONE_FILE = "done.json"
#: Statistics :func:`open_sweep` takes from each run's eval.json: name → description.
EVAL_SUMMARY = {
    "memories_per_node": "memories written per distinct node visited on the held-out walks "
                         "(add-if-novel's ideal is 1)",
    "loop_cosine": "z-scored cosine between g before and after the smallest closed loop of "
                   "moves (add-if-novel writes a duplicate below model.write_threshold)",
}


def _eval_summary(ev: dict) -> dict[str, float]:
    """The :data:`EVAL_SUMMARY` statistics of one eval.json (NaN where absent)."""
    lr = (ev.get("transitions") or {}).get("loop_returns") or {}
    return {"memories_per_node": (ev.get("memory") or {}).get("memories_per_node", math.nan),
            "loop_cosine": lr.get("loop_cosine", math.nan)}


def is_finished(run_dir) -> bool:
    """A run is finished when ``done.json`` is readable and every file it names is there with
    the size it records (decided from the files alone)."""
    run_dir = Path(run_dir)
    try:
        done = json.loads((run_dir / DONE_FILE).read_text())
        files = done["files"]
        return all((run_dir / name).stat().st_size == size for name, size in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _run_summary(run_dir: Path) -> dict[str, float]:
    """The run's :data:`SUMMARY`, as ``done.json`` keeps it (computed from the analysis when
    the run was finished; opening ``analysis.nc`` again only if it lacks a statistic)."""
    try:
        kept = json.loads((run_dir / DONE_FILE).read_text())["summary"]
        if set(SUMMARY) <= set(kept):
            return {k: (math.nan if kept[k] is None else float(kept[k])) for k in SUMMARY}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return summarise_analysis(open_analysis(run_dir / ANALYSIS_FILE))


def _status(run_dir: Path) -> str:
    if is_finished(run_dir):
        return "done"
    if (run_dir / ERROR_FILE).is_file():
        return "failed"
    if run_dir.is_dir():
        return "unfinished"
    return "not started"


def open_sweep(path):
    """A sweep folder as one ``xr.Dataset``: a dim per grid key plus ``seed``.

    Parameters
    ----------
    path : path
        The sweep folder (``hippo-rep sweep --out``) or its ``sweep.json``.

    Returns
    -------
    xarray.Dataset
        Dims: one per grid key (named by the key without its section, e.g.
        ``transition_activation``, unless ambiguous; ``attrs["dims"]`` maps dims to keys;
        coords are the config values, tuples joined by ","), ``seed``, and for ``accuracy``
        also ``agent`` (:data:`AGENTS`) and ``step_type`` (:data:`REPORTED`). Variables:
        ``accuracy`` (fraction correct on the held-out environments of ``eval.json``), the
        :data:`SUMMARY` statistics of ``analysis.nc``, ``status`` ("done", "failed",
        "unfinished", "not started") and ``run`` (folder name). Values of runs that are
        not finished are NaN. Attrs: ``manifest`` (the manifest as JSON), ``dims``,
        ``sweep_path``.

    Raises
    ------
    FileNotFoundError, SweepError
        No or unreadable manifest.
    """
    man = read_manifest(path)
    root = Path(path)
    root = root.parent if root.suffix == ".json" and root.is_file() else root
    keys = list(man["grid"])
    dims = [man["dims"][k] for k in keys]
    coords = {d: list(man["grid"][k]) for d, k in zip(dims, keys, strict=True)}
    coords["seed"] = list(man["seeds"])
    shape = tuple(len(v) for v in coords.values())
    acc = np.full((*shape, len(AGENTS), len(REPORTED)), np.nan)
    summ = {k: np.full(shape, np.nan) for k in (*SUMMARY, *EVAL_SUMMARY)}
    status = np.full(shape, "not started", dtype=object)
    names = np.full(shape, "", dtype=object)
    for r in man["runs"]:
        if r["seed"] not in coords["seed"]:
            continue
        idx = tuple(coords[d].index(r["labels"][d]) for d in dims) + \
            (coords["seed"].index(r["seed"]),)
        run_dir = root / RUNS_DIR / r["name"]
        names[idx] = r["name"]
        status[idx] = _status(run_dir)
        if status[idx] != "done":
            continue
        ev = json.loads((run_dir / EVAL_FILE).read_text())
        for k, v in _eval_summary(ev).items():
            summ[k][idx] = v
        for i, agent in enumerate(AGENTS):
            for j, st in enumerate(REPORTED):
                v = ev.get(agent, {}).get(st)
                acc[idx + (i, j)] = np.nan if v is None else v
        for k, v in _run_summary(run_dir).items():
            summ[k][idx] = v
    rdims = (*dims, "seed")
    ds = xr.Dataset(coords={**coords, "agent": list(AGENTS), "step_type": list(REPORTED)})
    ds["accuracy"] = xr.DataArray(acc, dims=(*rdims, "agent", "step_type"), attrs={
        "long_name": "held-out accuracy", "units": "1",
        "description": "fraction of steps predicted correctly on held-out environments, by "
                       "agent and step type (eval.json)"})
    for k, v in summ.items():
        ds[k] = xr.DataArray(v, dims=rdims, attrs={
            "long_name": {**SUMMARY, **EVAL_SUMMARY}[k], "units": "1"})
    ds["status"] = xr.DataArray(status.astype(str), dims=rdims)
    ds["run"] = xr.DataArray(names.astype(str), dims=rdims)
    ds.attrs.update(manifest=json.dumps(man), dims=json.dumps(dict(zip(dims, keys, strict=True))),
                    sweep_path=str(root))
    return ds


def sweep_table(ds: xr.Dataset, step_types=None):
    """One row per run of :func:`open_sweep`'s dataset: its status, the model's held-out
    accuracy on ``step_types`` (default every reported step type) and the grid and place
    fractions of its analysis.

    Returns
    -------
    pandas.DataFrame
        Indexed by run folder name, in grid order (seeds innermost).
    """
    import pandas as pd

    step_types = list(REPORTED if step_types is None else step_types)
    grid = [*json.loads(ds.attrs["dims"]), "seed"]
    flat = ds.stack(run_=grid)
    acc = flat["accuracy"].sel(agent="model", step_type=step_types).transpose("run_", ...)
    table = pd.DataFrame(acc.values, columns=step_types,
                         index=pd.Index(flat["run"].values.astype(str), name="run"))
    table.insert(0, "status", flat["status"].values.astype(str))
    for k in ("grid_fraction", "place_fraction"):
        table[k] = flat[k].values
    return table
