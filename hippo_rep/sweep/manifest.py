"""The sweep's manifest (``sweep.json``): base config, grid, seeds, settings and runs; reading
it, and refusing a folder that holds another sweep."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from hippo_rep import __version__
from hippo_rep.config import Config, ConfigError
from hippo_rep.fileio import read_json, remove_path
from hippo_rep.sweep.grid import Run, SweepError, grid_dims
from hippo_rep.typed_config import flat_items

#: The manifest's file name, at the sweep's root.
MANIFEST = "sweep.json"
#: Folder (under the sweep's root) holding one folder per run.
RUNS_DIR = "runs"
#: The manifest's format tag and version.
FORMAT, FORMAT_VERSION = "hippo_rep.sweep", 1
#: Config keys that do not change what a run computes; they may differ between reruns.
NON_IDENTITY_KEYS = ("train.device", "train.threads")


def _identity_config(cfg: dict) -> dict:
    """``cfg`` as dotted keys under their current names (a manifest written before a key
    moved, e.g. ``model.tem_n_g`` → ``model.tem.n_g``, compares equal), without
    :data:`NON_IDENTITY_KEYS`."""
    try:
        cfg = Config.upgrade(cfg)
    except ConfigError:  # an old key beside its new name: compared as written
        pass
    flat = flat_items(cfg) if isinstance(cfg, dict) else {}
    return {k: v for k, v in flat.items() if k not in NON_IDENTITY_KEYS}


def build_manifest(runs: Sequence[Run], base: Config, keys: Sequence[str], n_seeds: int,
                   settings: Mapping, source: str, overrides: Sequence[str]) -> dict:
    """The sweep's manifest (JSON-able): base config, grid (each of the grid's ``keys`` → its
    value labels, in the order of :func:`~hippo_rep.sweep.grid.expand_grid`'s ``runs``),
    seeds, settings (the runs' stage settings as a mapping) and runs."""
    dims = grid_dims(list(keys))
    labels = {k: list(dict.fromkeys(r.labels[dims[k]] for r in runs)) for k in keys}
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "package_version": __version__,
        "config_source": str(source),
        "overrides": list(overrides),
        "base_config": base.to_dict(),
        "grid": labels,
        "dims": dims,
        "seeds": list(range(n_seeds)),
        "settings": dict(settings),
        "runs": [{"name": r.name, "labels": r.labels, "seed": r.seed} for r in runs],
    }
    return json.loads(json.dumps(manifest))  # as read back from sweep.json (tuples → lists)


def _identity(manifest: dict) -> dict:
    grid = manifest.get("grid")
    if isinstance(grid, dict):
        grid = {Config.new_key(str(k)): v for k, v in grid.items()}
    return {"base_config": _identity_config(manifest.get("base_config", {})),
            "grid": grid, "settings": manifest.get("settings")}


def _differences(old: dict, new: dict) -> list[str]:
    a, b = _identity(old), _identity(new)
    ca, cb = a["base_config"], b["base_config"]
    diffs = [f"{k}: {ca.get(k)!r} → {cb.get(k)!r}"
             for k in sorted(set(ca) | set(cb)) if ca.get(k) != cb.get(k)]
    if a["grid"] != b["grid"]:
        diffs.append(f"grid: {a['grid']} → {b['grid']}")
    if a["settings"] != b["settings"]:
        diffs.append(f"settings: {a['settings']} → {b['settings']}")
    return diffs


def read_manifest(path) -> dict:
    """The manifest of a sweep folder (or of ``sweep.json`` itself).

    Raises
    ------
    FileNotFoundError
        No manifest there.
    SweepError
        Not readable or not a hippo_rep sweep manifest.
    """
    path = Path(path)
    file = path / MANIFEST if path.is_dir() or path.suffix != ".json" else path
    if not file.is_file():
        raise FileNotFoundError(f"{str(file)!r} not found: not a sweep folder "
                                "(hippo-rep sweep writes it)")
    data = read_json(file, SweepError, "sweep manifest")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SweepError(f"{str(file)!r} is not a hippo_rep sweep manifest")
    if data.get("format_version", 0) > FORMAT_VERSION:
        raise SweepError(f"sweep manifest {str(file)!r} has format version "
                         f"{data['format_version']}; this hippo_rep reads ≤ {FORMAT_VERSION}")
    if isinstance(data.get("settings"), dict):
        # sweeps written before calibration existed evaluated the trained checkpoint
        data["settings"].setdefault("calibrate", False)
    return data


def check_out(out: Path, manifest: dict, overwrite: bool) -> bool:
    """Whether ``out`` holds another sweep that must be cleared (raises unless overwrite)."""
    mpath = out / MANIFEST
    runs_dir = out / RUNS_DIR
    if mpath.exists():
        try:
            old = read_manifest(out)
        except SweepError as err:
            if not overwrite:
                raise SweepError(f"{err}; pass --overwrite (overwrite=True) to replace "
                                 "it") from None
            return True
        diffs = _differences(old, manifest)
        if not diffs:
            return False
        if not overwrite:
            raise SweepError(f"{str(out)!r} holds another sweep ({'; '.join(diffs)}); pass "
                             "--overwrite (overwrite=True) to replace its runs, or choose "
                             "another --out")
        return True
    if runs_dir.exists() and any(runs_dir.iterdir()):
        if not overwrite:
            raise SweepError(f"{str(out)!r} holds runs but no {MANIFEST}; pass --overwrite "
                             "(overwrite=True) to replace them, or choose another --out")
        return True
    return False


def clear(out: Path) -> None:
    """Remove a previous sweep's runs and manifest (only what a sweep writes)."""
    remove_path(out / RUNS_DIR)
    (out / MANIFEST).unlink(missing_ok=True)

