"""The grid-cell comparison of TEM-t settings, one ``hippo-rep sweep`` per setting.

Each setting × seed is trained on the ``small`` preset (8×8 worlds), evaluated on held-out
11×11 worlds (1,500-step walks: loop closure, zero-shot, memories per node), recorded on
20×20 worlds (so a map holds several grid periods) and analysed. ``--table`` prints the
comparison from finished sweeps (per seed, and the mean over seeds).

    python benchmarks/grid_settings.py run OUT [--seeds 3] [--only NAME ...]
    python benchmarks/grid_settings.py reanalyse OUT   # finished runs, with this version
    python benchmarks/grid_settings.py calibrate OUT   # calibrated write threshold, evaluated
    python benchmarks/grid_settings.py table OUT

Rerunning ``run`` on the same OUT skips finished runs (the sweep's manifest must match).
``reanalyse`` re-runs only the analysis stage of finished runs from their recordings (same
shuffles and seed) with the installed hippo_rep, e.g. after the analysis gained a statistic.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

#: Setting name → config overrides on the ``small`` preset.
SETTINGS = {
    # today's default: orthogonal W_a = exp(S − Sᵀ), linear σ, g rescaled to unit RMS
    "orth_linear": [],
    # the default plus the inverse-action loss: opposite moves pulled to undo each other, so
    # that add-if-novel recognises revisited nodes
    "orth_linear_inv": ["train.loss_inverse=1.0"],
    # the paper's free W_a, linear σ (g still rescaled)
    "free_linear": ["model.transition_param=free"],
    # free W_a, ReLU σ (g still rescaled)
    "free_relu": ["model.transition_param=free", "model.transition_activation=relu"],
    # the paper's setting in full: free W_a, ReLU σ, no rescaling (e = σ(e W_a)), values X·W_x
    # with a learned readout, L2 on g live (loss 5), and opposite moves pulled to inverses
    "paper_relu": ["model.transition_param=free", "model.transition_activation=relu",
                   "model.g_norm=none", "model.readout=mlp", "train.loss_l2_g=0.01",
                   "train.loss_inverse=0.1"],
    # the two ReLU settings trained 5x longer (2,000 iterations): whether they only needed time
    "free_relu_long": ["model.transition_param=free", "model.transition_activation=relu",
                       "train.iterations=2000"],
    # orthogonal W_a (cannot contract, unlike the free ones) with a non-negative σ: the
    # non-negativity that favours hexagonal over square lattices (Sorscher et al. 2019, 2023)
    "orth_relu": ["model.transition_activation=relu"],
    # today's default on hexagonal (6-connected) worlds, the paper's Fig. 10: a lattice with
    # three axes 60 deg apart (evaluated on hex:11, recorded on hex:20)
    "orth_linear_hexworld": ["world.worlds=hex:8"],
    "paper_relu_long": ["model.transition_param=free", "model.transition_activation=relu",
                        "model.g_norm=none", "model.readout=mlp", "train.loss_l2_g=0.01",
                        "train.loss_inverse=0.1", "train.iterations=2000"],
}
#: Settings evaluated and recorded on other worlds than :data:`SWEEP_SETTINGS` says.
SETTING_SWEEP = {"orth_linear_hexworld": dict(eval_world="hex:11", record_world="hex:20")}
#: Base preset of every setting.
PRESET = "small"
#: What each run evaluates and records (see hippo_rep.pipeline.SweepSettings).
#: ``calibrate=False``: eval.json and the recording use the trained write threshold; the
#: ``calibrate`` command adds the calibrated evaluation beside it (the table shows both).
SWEEP_SETTINGS = dict(eval_world="square:11", eval_steps=1500, eval_envs=16,
                      record_world="square:20", record_steps=2000, record_envs=8, shuffles=20,
                      calibrate=False)


def run(out: Path, seeds: int, names: list[str]) -> None:
    from hippo_rep.pipeline import SweepSettings, run_sweep

    for name in names:
        rep = run_sweep(PRESET, [], seeds, out / name, overrides=SETTINGS[name],
                        settings=SweepSettings(**{**SWEEP_SETTINGS,
                                                  **SETTING_SWEEP.get(name, {})}),
                        progress=False)
        print(f"{name}: {len(rep.done)} done, {len(rep.skipped)} already done, "
              f"{len(rep.failed)} failed ({rep.wall_s:.0f} s)", flush=True)


def _finished_runs(out: Path):
    """(run folder, stage settings) of every finished run of every setting's sweep."""
    from hippo_rep.pipeline import SweepSettings
    from hippo_rep.sweep import DONE_FILE, RUNS_DIR, read_manifest

    for name in SETTINGS:
        if (out / name / "sweep.json").is_file():
            settings = SweepSettings(**read_manifest(out / name)["settings"])
            for run_dir in sorted((out / name / RUNS_DIR).iterdir()):
                if (run_dir / DONE_FILE).is_file():
                    yield run_dir, settings


def reanalyse(out: Path) -> None:
    """The stage runner's analyse stage again on each finished run's recording (the new
    analysis replaces the old one atomically)."""
    from hippo_rep.pipeline import ANALYSIS_SCHEDULER, analyse
    from hippo_rep.run_files import ANALYSIS_FILE, RECORDING_FILE

    for run_dir, st in _finished_runs(out):
        analyse(run_dir / RECORDING_FILE, run_dir / ANALYSIS_FILE, shuffles=st.shuffles,
                seed=st.analysis_seed, remap_shuffles=st.remap_shuffles, decode=st.decode,
                scheduler=ANALYSIS_SCHEDULER, overwrite=True)
        print(f"reanalysed {run_dir.parent.parent.name}/{run_dir.name}", flush=True)


#: What ``calibrate`` writes into each finished run's folder.
CALIBRATED_CHECKPOINT, CALIBRATED_EVAL = "calibrated.pt", "eval_calibrated.json"


def calibrate(out: Path) -> None:
    """The stage runner's calibrate and evaluate stages on every finished run: its write
    threshold calibrated (hippo_rep.training.calibrate) and the calibrated copy evaluated on
    the same held-out walks as the run's own evaluation."""
    import dataclasses
    import json

    from hippo_rep.config import load_config
    from hippo_rep.fileio import write_json
    from hippo_rep.pipeline import run_stages
    from hippo_rep.training.checkpoint import read_checkpoint

    for run_dir, st in _finished_runs(out):
        path = run_dir / CALIBRATED_EVAL
        if path.is_file():
            continue
        tmp = run_dir / "eval_calibrated.partial.json"  # complete; lacks the calibration
        run_stages(run_dir, load_config(run_dir / "config.toml"), ("calibrate", "evaluate"),
                   dataclasses.replace(st, calibrate=True),
                   outputs={"calibrate": run_dir / CALIBRATED_CHECKPOINT, "evaluate": tmp})
        res = json.loads(tmp.read_text())
        rep = read_checkpoint(run_dir / CALIBRATED_CHECKPOINT)["extra"]["calibration"]
        res["calibration"] = rep
        write_json(path, res, indent=1)
        tmp.unlink(missing_ok=True)
        print(f"calibrated {run_dir.parent.parent.name}/{run_dir.name}: threshold "
              f"{rep['threshold']:.3f}, {res['memory']['memories_per_node']:.2f} memories/node",
              flush=True)


def calibrated_columns(run_dir: Path) -> list[float]:
    """Threshold, loop closure, zero-shot and memories/node of the calibrated copy (NaN when
    ``calibrate`` has not run)."""
    import json

    path = run_dir / CALIBRATED_EVAL
    if not path.is_file():
        return [math.nan] * len(CALIBRATED_COLUMNS)
    res = json.loads(path.read_text())
    return [res["calibration"]["threshold"], res["model"]["revisit_new_edge"],
            res["model"]["revisit_unseen_edge"], res["memory"]["memories_per_node"]]


#: Columns from :func:`calibrated_columns`.
CALIBRATED_COLUMNS = ["cal thr", "cal loop", "cal 0-shot", "cal mem/node"]

#: Columns of the table: (header, sweep variable, step type for accuracy).
COLUMNS = [("loop closure", "accuracy", "revisit_new_edge"),
           ("zero-shot", "accuracy", "revisit_unseen_edge"),
           ("mem/node", "memories_per_node", None), ("loop cos", "loop_cosine", None)]
#: Columns computed from each run's recording of g (:func:`g_patterns`).
PATTERN_COLUMNS = ["hexagonal", "two-wave", "band", "square", "hex 6/8", "g60 median",
                   "wavelength"]
#: Environments a unit must be hexagonal in to count as consistently hexagonal ("hex 6/8").
CONSISTENT_ENVS = 6


def g_patterns(recording_path: Path) -> list[float]:
    """Plane-wave patterns of the positional units g of one recording (pattern alone, no
    shuffle null): fractions of (env, unit) maps that are hexagonal, two-wave (not square),
    one wave (band) and square; the fraction of units hexagonal in ≥ CONSISTENT_ENVS
    environments; median gridness-60 (deepmind) and median wavelength of the strongest wave.
    """
    from hippo_rep.analysis import grid_scores, plane_waves, rate_maps
    from hippo_rep.recording import open_recording

    with open_recording(recording_path) as ds:
        maps = rate_maps(ds.load(), "g")["rate_map"]
    pw = plane_waves(maps)
    exists = maps.notnull().any(("y", "x"))
    n = float(exists.sum())
    hexa = pw["hexagonal"] & exists
    two = (pw["n_waves"] == 2) & ~pw["square"] & exists
    band = (pw["n_waves"] == 1) & exists
    square = pw["square"] & exists
    consistent = float((hexa.sum("env") >= CONSISTENT_ENVS).mean())
    g60 = grid_scores(maps)["gridness_60"].values
    wl = pw["wave_length"].isel(wave=0).values
    return [float(hexa.sum()) / n, float(two.sum()) / n, float(band.sum()) / n,
            float(square.sum()) / n, consistent, float(np.nanmedian(g60)),
            float(np.nanmedian(wl))]


def table(out: Path) -> None:
    from hippo_rep.sweep import open_sweep

    rows = []
    for name in SETTINGS:
        if not (out / name / "sweep.json").is_file():
            continue
        ds = open_sweep(out / name)
        cols = []
        for head, var, st in COLUMNS:
            v = ds[var].sel(agent="model", step_type=st) if st else ds[var]
            cols.append((head, v.values.ravel()))
        pats = np.full((ds.sizes["seed"], len(PATTERN_COLUMNS)), np.nan)
        cal = np.full((ds.sizes["seed"], len(CALIBRATED_COLUMNS)), np.nan)
        for i, (run, status) in enumerate(zip(ds["run"].values.ravel(),
                                              ds["status"].values.ravel(), strict=True)):
            if status == "done":
                pats[i] = g_patterns(out / name / "runs" / str(run) / "recording.nc")
                cal[i] = calibrated_columns(out / name / "runs" / str(run))
        cols += [(h, cal[:, j]) for j, h in enumerate(CALIBRATED_COLUMNS)]
        cols += [(h, pats[:, j]) for j, h in enumerate(PATTERN_COLUMNS)]
        cols.append(("place", ds["place_fraction"].values.ravel()))
        rows.append((name, cols, ds["status"].values.ravel()))
    if not rows:
        raise SystemExit(f"no finished sweeps under {out}")
    heads = [h for h, _ in rows[0][1]]
    w = max(16, *(len(name) + 2 for name, _, _ in rows))
    print(f"{'setting':{w}s}{'seed':>6s}" + "".join(f"{h:>13s}" for h in heads), flush=True)
    for name, cols, status in rows:
        for s in range(len(status)):
            vals = "".join(f"{c[s]:13.3f}" if math.isfinite(c[s]) else f"{'-':>13s}"
                           for _, c in cols)
            print(f"{name:{w}s}{s:6d}{vals}  {status[s]}")
        mean = "".join(f"{np.nanmean(c):13.3f}" if np.isfinite(c).any() else f"{'-':>13s}"
                       for _, c in cols)
        print(f"{name:{w}s}{'mean':>6s}{mean}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--seeds", type=int, default=3)
    r.add_argument("--only", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    for cmd in ("reanalyse", "calibrate", "table"):
        sub.add_parser(cmd).add_argument("out", type=Path)
    args = p.parse_args()
    if args.cmd == "run":
        run(args.out, args.seeds, args.only)
    elif args.cmd == "reanalyse":
        reanalyse(args.out)
    elif args.cmd == "calibrate":
        calibrate(args.out)
    else:
        table(args.out)


if __name__ == "__main__":
    main()
