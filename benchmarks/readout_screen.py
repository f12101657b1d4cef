"""The grid-cell screen of read-out cells (``model.cells=readout``), rerunnable and resumable.

For each world family × seed a base run learns path integration first (the ``small`` preset
with read-out cells, 400 iterations on 8×8); each screened setting then continues from that
base (``train.init_from``) for 2,000 iterations on 10×10 worlds with 300-step walks, the cell
constraints ramped in over iterations 200–500. Every run is evaluated on held-out worlds
(loop closure, zero-shot, memories per node, the W_a triad, walk-constant power), recorded on
held-out 16×16 worlds of its family and analysed with the lattice-aware classifier.

The SCRATCH settings (grid modules with the isometry loss) train from scratch instead, for
3,000 iterations on 10×10 and 12×12 worlds of the family (``--only isometry``).

    python benchmarks/readout_screen.py run OUT [--seeds 0 1] [--only NAME ...] [--worlds ...]
        [--populations g,g_pi]
    python benchmarks/readout_screen.py table OUT

A finished stage (its output file exists) is skipped, so ``run`` continues after an
interruption. Each command is printed before it runs; every stage is a ``hippo-rep`` command.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: Base run (path integration learned before the constraints), on the ``small`` preset.
BASE = ["model.cells=readout"]
#: Base training world per family (the small preset's size).
BASE_WORLD = {"square": "square:8", "hex": "hex:8"}
#: Screened training world per family (at least 10×10).
SCREEN_WORLD = {"square": "square:10", "hex": "hex:10"}
#: Held-out evaluation and recording worlds per family (recordings at least 16×16).
EVAL_WORLD = {"square": "square:11", "hex": "hex:11"}
RECORD_WORLD = {"square": "square:16", "hex": "hex:16"}
#: Held-out evaluation: environments × steps.
EVAL_ENVS, EVAL_STEPS = 8, 1500
#: Recording: environments × steps (each environment's maps are (unit, environment) pairs).
RECORD_ENVS, RECORD_STEPS = 4, 1500
#: Shuffles of the analysis' nulls.
SHUFFLES = 20
#: Every screened run: longer walks, a smaller learning rate, clipped gradients, 2,000
#: iterations, the cell constraints ramped in from iteration 200 over 300 iterations.
COMMON = ["model.cells=readout", "world.walk_steps=300", "train.lr=5e-4",
          "train.grad_clip=1.0", "train.iterations=2000",
          "train.cells_ramp_start=200", "train.cells_ramp=300", "train.threads=1"]
#: Setting name → overrides on top of COMMON.
SETTINGS = {
    # no cell constraints, W_a at a tenth of the learning rate (the control)
    "plain": ["train.transition_lr_scale=0.1"],
    # energy on the cells and walk-constant power of g penalised, W_a at a tenth
    "constrained": ["train.transition_lr_scale=0.1", "train.loss_cells_energy=0.3",
                    "train.loss_g_const=1.0"],
    # the same constraints with W_a at the full learning rate, so that the pressure on the
    # cells can reshape W_a's spectrum (the 0.1× runs kept their arena-scale waves)
    "constrained_wa": ["train.transition_lr_scale=1.0", "train.loss_cells_energy=0.3",
                       "train.loss_g_const=1.0"],
}

#: Settings trained from scratch (their n_g differs from the base run's): grid modules of six
#: units (three rotation planes) with the conformal-isometry loss under W_a (Xu et al., ICLR
#: 2025) and the loop and inverse losses (commuting moves: g a function of the node), on the
#: small preset's walks and learning rate, 3,000 iterations on 10×10 and 12×12 worlds.
#: W_a starts at random rotations of ~1 rad per step (init std 0.25): from near identity
#: every wave starts arena-long, where the loss's gradient on its length and amplitude
#: vanishes, and one wave per module took all the power (1,140 iterations, no triad).
SCRATCH_COMMON = ["model.n_g=60", "model.g_module_size=6", "train.loss_isometry=1.0",
                  "train.loss_loop=1.0", "train.loss_inverse=1.0",
                  "model.transition_init_std=0.25", "train.iterations=3000",
                  "train.checkpoint_every=250", "train.eval_every=250", "train.threads=1"]
#: Isometry scale per family: on a square lattice waves of ~5 nodes (s = 0.7) alias onto the
#: lattice's axes, so its modules get s = 0.5 (~8 nodes); a hexagonal lattice holds a triad
#: of any length.
SCRATCH_SCALE = {"square": 0.5, "hex": 0.7}
#: Extra screen worlds of the from-scratch settings (beside SCREEN_WORLD).
SCRATCH_WORLD = {"square": "square:12", "hex": "hex:12"}
SCRATCH = {
    # g itself is the recorded population
    "isometry": [],
    # the control: the same modules, start and loop losses, without the isometry loss
    "modules": ["train.loss_isometry=0"],
    # non-negative read-out cells with an energy cost on top of the modules
    "isometry_readout": ["model.cells=readout", "train.loss_cells_energy=0.3",
                         "train.cells_ramp_start=300", "train.cells_ramp=300"],
    # Known-weights controls: every module an exact hexagonal triad of waves, frozen (no
    # isometry, loop or inverse loss: W_a does not train). g itself, whose units lie in the
    # triad's planes (expected: bands) ...
    "triad": ["model.transition_init=triad", "train.transition_lr_scale=0",
              "train.loss_isometry=0", "train.loss_loop=0", "train.loss_inverse=0"],
    # ... and non-negative read-out cells with an energy cost on top: does the cost select
    # a hexagonal mixing of the triad (Dorrell et al., ICLR 2023)?
    "triad_readout": ["model.transition_init=triad", "train.transition_lr_scale=0",
                      "train.loss_isometry=0", "train.loss_loop=0", "train.loss_inverse=0",
                      "model.cells=readout", "train.loss_cells_energy=0.3",
                      "train.cells_ramp_start=300", "train.cells_ramp=300"],
}
#: The energy cost's strength on the frozen triad (1,500 iterations: 3,000 added nothing
#: at 0.3): does a stronger cost select more hexagonal mixings?
for _energy in (1.0, 3.0):
    SCRATCH[f"triad_readout_e{_energy:g}"] = [
        *SCRATCH["triad_readout"], f"train.loss_cells_energy={_energy}",
        "train.iterations=1500"]
SCRATCH["triad_readout_1500"] = [*SCRATCH["triad_readout"], "train.iterations=1500"]
#: ... with cells that each read one module (a structural assumption; see the config):
#: 60 cells, six a module.
#: W_a learned from the triad start: does training keep (or leave) the triad once W_a is
#: free? At a tenth of the learning rate with no structural loss, and at the full rate with
#: the isometry, loop and inverse losses of the from-scratch settings.
SCRATCH["triad_readout_learn"] = [*SCRATCH["triad_readout_1500"],
                                  "train.transition_lr_scale=0.1"]
SCRATCH["triad_readout_learn_iso"] = [*SCRATCH["triad_readout_1500"],
                                      "train.transition_lr_scale=1.0",
                                      "train.loss_isometry=1.0", "train.loss_loop=1.0",
                                      "train.loss_inverse=1.0"]
#: The learned route: W_a a representation of the 2D moves whose every rotation plane's wave
#: vector is learned from a random start (``model.transition_param=waves``: independent
#: directions, wavelengths 5-18 nodes; no triad, no module structure), read-out cells with
#: the energy cost on top; with the isometry loss (whose optimum on a hexagonal lattice is
#: a triad per module) and without it (the task and the energy cost alone).
SCRATCH["waves_readout"] = ["model.transition_param=waves", "train.loss_isometry=0",
                            "model.cells=readout", "train.loss_cells_energy=0.3",
                            "train.cells_ramp_start=300", "train.cells_ramp=300",
                            "train.iterations=1500"]
SCRATCH["waves_iso_readout"] = [*SCRATCH["waves_readout"], "train.loss_isometry=1.0"]
#: The same two with W_a's wave vectors at 10× the learning rate (1e-2): in the no-model toy
#: (benchmarks/isometry_waves_toy.py) the isometry loss alone turns random waves into exact
#: triads within 1,500 steps at 1e-2 but not at 1e-3, where these runs' waves turned < 10°.
SCRATCH["waves_readout_fast"] = [*SCRATCH["waves_readout"], "train.transition_lr_scale=10"]
SCRATCH["waves_iso_readout_fast"] = [*SCRATCH["waves_iso_readout"],
                                     "train.transition_lr_scale=10"]
#: ... and with every rotation plane of g at unit RMS (``model.g_norm=plane``: each wave an
#: equal share of g's power, the toy's condition for a triad to be the isometry's optimum;
#: the fast runs' planes held shares of 0.01-0.84 of their modules).
SCRATCH["waves_plane_readout_fast"] = [*SCRATCH["waves_readout_fast"], "model.g_norm=plane"]
SCRATCH["waves_iso_plane_readout_fast"] = [*SCRATCH["waves_iso_readout_fast"],
                                           "model.g_norm=plane"]
#: ... with the isometry loss ten times stronger (at 1 the task kept the waves at 2.5-4
#: nodes, shorter than the isometry's 6.3, and no module a triad by iteration 250).
SCRATCH["waves_iso10_plane_readout_fast"] = [*SCRATCH["waves_iso_plane_readout_fast"],
                                             "train.loss_isometry=10"]
#: ... a hundred times stronger (at 10 the modules' waves came within 7-37° of a triad and
#: stayed: the loss is flat near the optimum, and the task's gradients on W_a outweigh it),
#: and that for 5,000 iterations.
SCRATCH["waves_iso100_plane_readout_fast"] = [*SCRATCH["waves_iso_plane_readout_fast"],
                                              "train.loss_isometry=100"]
SCRATCH["waves_iso100_plane_readout_fast_5k"] = [*SCRATCH["waves_iso100_plane_readout_fast"],
                                                 "train.iterations=5000"]
#: ... with the modules' isometry scales 1.15 apart (s_m = 0.7 / 1.15^m: at the optimum
#: triads of 5.6 × 1.15^m nodes, 5.6-20, the triad control's span): modules of distinct
#: spacing?
SCRATCH["waves_iso100_plane_ratio_5k"] = [*SCRATCH["waves_iso100_plane_readout_fast_5k"],
                                          "train.isometry_scale_ratio=1.15"]
#: The 5,000-iteration learned-triad setting with other cells on top. Its ReLU cells mix
#: modules (median largest module share 0.24) whose triads share one spacing at random
#: orientations, an interference rather than one lattice. Signed linear cells r = A g + b with
#: a non-negativity penalty (Dorrell et al., ICLR 2023: a cell mixing waves needs a larger
#: offset b to stay non-negative, and the energy cost pays for it) ...
SCRATCH["waves_iso100_plane_signed_5k"] = [*SCRATCH["waves_iso100_plane_readout_fast_5k"],
                                           "model.cells_activation=none",
                                           "train.loss_cells_neg=10"]
#: ... and ReLU cells that each read one module (60 cells, six a module; on the frozen triad
#: they became bands).
SCRATCH["waves_iso100_plane_modular_5k"] = [*SCRATCH["waves_iso100_plane_readout_fast_5k"],
                                            "model.cells_modular=true", "model.n_cells=60"]
#: ... and with each module's isometry pairs reaching 2.3 × 1.15^m nodes, the same range
#: relative to its wavelength (``train.isometry_range_per_module``): at one range of 2.3
#: the longer modules saw only displacements far below their wavelength, and none became a
#: triad. Module 9's range holds 120 displacements (against 9 at 2.3), so every 96th
#: state starts the pairs, not every 8th: with every plane at unit RMS (g_norm=plane) and W_a
#: rotations, a module's distance after a move is the same from every state.
SCRATCH["waves_iso100_plane_ratio_range_5k"] = [*SCRATCH["waves_iso100_plane_ratio_5k"],
                                                "train.isometry_range_per_module=true",
                                                "train.isometry_stride=96"]
#: Modular cells on modules of distinct spacing (each cell one module, one lattice) ...
SCRATCH["waves_iso100_plane_range_modular_5k"] = [
    *SCRATCH["waves_iso100_plane_ratio_range_5k"], "model.cells_modular=true",
    "model.n_cells=60"]
#: ... and modular cells, three a module (30 cells): fewer cells to carry each module's
#: three waves (six modular cells a module mostly became bands).
SCRATCH["waves_iso100_plane_modular3_5k"] = [*SCRATCH["waves_iso100_plane_readout_fast_5k"],
                                             "model.cells_modular=true", "model.n_cells=30"]
#: Modular cells at a stronger energy cost (1): sparser cells, spots rather than stripes?
SCRATCH["waves_iso100_plane_modular_e1_5k"] = [*SCRATCH["waves_iso100_plane_modular_5k"],
                                               "train.loss_cells_energy=1.0"]
#: Cells with a fixed firing budget (each reads a unit-norm row of A: with every plane of g
#: at unit RMS its variance over the plane is 1), signed with a non-negativity penalty, whose
#: energy and non-negativity are taken over a virtual square of 60 nodes a side (g moved by
#: W_a; ``train.cells_virtual``): Dorrell et al.'s constraints on an unbounded plane. On the
#: shipped ``temt_waves_plane`` g the same constraints, fitted without training, made 88% of
#: the maps hexagonal (benchmarks/cell_objective_toy.py) ...
SCRATCH["waves_iso100_plane_unit_virtual_5k"] = [
    *SCRATCH["waves_iso100_plane_readout_fast_5k"], "model.cells_activation=none",
    "model.cells_unit_norm=true", "train.loss_cells_neg=10", "train.cells_virtual=512"]
#: ... and on modules of distinct spacing (a square of 100 nodes: five periods of the
#: longest, ~20-node, module).
SCRATCH["waves_iso100_plane_range_unit_virtual_5k"] = [
    *SCRATCH["waves_iso100_plane_ratio_range_5k"], "model.cells_activation=none",
    "model.cells_unit_norm=true", "train.loss_cells_neg=10", "train.cells_virtual=512",
    "train.cells_virtual_extent=100"]
#: The same cells on a g grown already: continuing the shipped ``temt_waves_plane`` run (the
#: 5,000-iteration setting above, seed 1: 7 of 10 modules triads) for 1,500 iterations with
#: the new cell rules (``train.init_from`` may change them), W_a frozen (a cell curriculum on a
#: fixed learned g: from scratch the new cells kept 3 of 10 triads and became bands) or
#: learning as before.
_FROM_PLANE = [*SCRATCH["waves_iso100_plane_unit_virtual_5k"],
               "train.init_from=data/temt_waves_plane.pt", "train.iterations=1500"]
SCRATCH["plane_then_unit_virtual_frozen"] = [*_FROM_PLANE, "train.transition_lr_scale=0",
                                             "train.loss_isometry=0", "train.loss_loop=0",
                                             "train.loss_inverse=0"]
SCRATCH["plane_then_unit_virtual"] = _FROM_PLANE
#: ... with each cell's variance over the virtual square held at 1 (free A: where two
#: modules share their waves, unit-norm rows met the budget by reading them in antiphase;
#: the energy fell to 0.58), W_a frozen, the energy cost at 0.3 and at 3.
_VAR = ["model.cells_unit_norm=false", "train.loss_cells_var=10"]
SCRATCH["plane_then_var_virtual_frozen"] = [*SCRATCH["plane_then_unit_virtual_frozen"], *_VAR]
SCRATCH["plane_then_var_virtual_frozen_e3"] = [*SCRATCH["plane_then_var_virtual_frozen"],
                                               "train.loss_cells_energy=3"]
#: ... the same with W_a learning as in its first 5,000 iterations (isometry, loop and
#: inverse losses) ...
SCRATCH["plane_then_var_virtual_e3"] = [*_FROM_PLANE, *_VAR, "train.loss_cells_energy=3"]
#: ... and from the seed-2 run of the 5,000-iteration setting (``run OUT --seeds 2 --only
#: waves_iso100_plane_readout_fast_5k`` makes it; the path is that run's).
SEED2_PLANE = ("runs/screen6_waves_iso100_plane_readout_fast_5k/"
               "waves_iso100_plane_readout_fast_5k_hex_s2/checkpoint.pt")
SCRATCH["plane_s2_then_var_virtual_frozen_e3"] = [
    *SCRATCH["plane_then_var_virtual_frozen_e3"], f"train.init_from={SEED2_PLANE}"]
SCRATCH["plane_s2_then_var_virtual_frozen_e10"] = [
    *SCRATCH["plane_s2_then_var_virtual_frozen_e3"], "train.loss_cells_energy=10"]
#: ... and with the constraints on the walk's own states instead of a virtual square (the toy's
#: ``white``: 98% hexagonal on seed 2's g, where the virtual square gave bands).
SCRATCH["plane_then_var_walk_frozen_e3"] = [*SCRATCH["plane_then_var_virtual_frozen_e3"],
                                            "train.cells_virtual=0"]
SCRATCH["plane_s2_then_var_walk_frozen_e3"] = [
    *SCRATCH["plane_s2_then_var_virtual_frozen_e3"], "train.cells_virtual=0"]
SCRATCH["plane_then_var_walk_e3"] = [*SCRATCH["plane_then_var_virtual_e3"],
                                     "train.cells_virtual=0"]
SCRATCH["plane_s2_then_var_walk_e3"] = [*SCRATCH["plane_then_var_walk_e3"],
                                        f"train.init_from={SEED2_PLANE}"]
#: The walk budget from scratch, one stage (the cells' constraints come in with the cell ramp
#: at iterations 300-600, while W_a learns its waves): is the 5,000-iteration first stage
#: with ReLU cells needed?
_WALK_BUDGET = ["model.cells_activation=none", "model.cells_unit_norm=false",
                "train.loss_cells_neg=10", "train.loss_cells_var=10",
                "train.loss_cells_energy=3"]
SCRATCH["plane_var_walk_5k"] = [*SCRATCH["waves_iso100_plane_readout_fast_5k"], *_WALK_BUDGET]
#: ... and on modules of distinct spacing: the shipped ``temt_waves_range`` run (7 of 10
#: modules triads of 7.3-19.5 nodes) continued for 1,500 iterations with the walk budget,
#: W_a learning as in its first 5,000 iterations.
SCRATCH["range_then_var_walk_e3"] = [*SCRATCH["waves_iso100_plane_ratio_range_5k"],
                                     *_WALK_BUDGET, "train.init_from=data/temt_waves_range.pt",
                                     "train.iterations=1500"]
#: ... with each cell reading one module (``model.cells_modular``): continued with the walk
#: budget, the free cells all read the shortest module (a 5.7-node triad); can cells held to
#: one module each make lattices of distinct spacing?
SCRATCH["range_then_var_walk_modular"] = [*SCRATCH["range_then_var_walk_e3"],
                                          "model.cells_modular=true"]
#: ... and on larger worlds with longer walks: on hex:10 and hex:12 the modular cells of the
#: 6.7-9.7-node triads became lattices and those of the 11-19.5-node triads did not (bands or
#: no pattern); do the longer modules' cells become lattices where the walks cover more of
#: their period (hex:20 and hex:24, 600-step walks)?
SCRATCH["range_then_var_walk_modular_wide"] = [*SCRATCH["range_then_var_walk_modular"],
                                               "world.walk_steps=600"]
#: Training worlds of the settings that do not train on :data:`SCRATCH_WORLD`.
SETTING_WORLDS = {"range_then_var_walk_modular_wide": ("hex:20", "hex:24")}
#: ... and the two-stage route for a third seed (``run OUT --seeds 3 --only
#: waves_iso100_plane_readout_fast_5k`` in runs/screen9_s3 makes its first stage).
SEED3_PLANE = "runs/screen9_s3/waves_iso100_plane_readout_fast_5k_hex_s3/checkpoint.pt"
SCRATCH["plane_s3_then_var_walk_e3"] = [*SCRATCH["plane_then_var_walk_e3"],
                                        f"train.init_from={SEED3_PLANE}"]
SCRATCH["triad_readout_modular"] = [*SCRATCH["triad_readout_1500"], "model.cells_modular=true",
                                    "model.n_cells=60"]


def _hippo(args: list[str], log: Path) -> None:
    cmd = ["hippo-rep", *args]
    print("$", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    with open(log, "a") as fh:
        subprocess.run(cmd, check=True, stdout=fh, stderr=subprocess.STDOUT)
    print(f"  ({time.perf_counter() - t0:.0f} s)", flush=True)


def _sets(overrides: list[str]) -> list[str]:
    return [a for o in overrides for a in ("--set", o)]


def _train(run: Path, overrides: list[str], log: Path) -> None:
    if (run / "trained").is_file():
        return
    # a run folder with a checkpoint but no marker was interrupted: resume it
    resume = ["--resume"] if (run / "checkpoint.pt").is_file() else []
    _hippo(["train", "--config", "small", *_sets(overrides), "--out", str(run),
            "--no-progress", *resume], log)
    (run / "trained").touch()


def _stages(run: Path, family: str, seed: int, log: Path,
            populations: str | None = None) -> None:
    ckpt = str(run / "checkpoint.pt")
    if not (run / "eval.json").is_file():
        _hippo(["evaluate", ckpt, "--world", EVAL_WORLD[family], "--envs", str(EVAL_ENVS),
                "--steps", str(EVAL_STEPS), "--seed", str(1000 + seed), "--json",
                str(run / "eval.json")], log)
    if not (run / "recording.nc").is_file():
        _hippo(["record", ckpt, "--out", str(run / "recording.nc"), "--world",
                RECORD_WORLD[family], "--envs", str(RECORD_ENVS), "--steps",
                str(RECORD_STEPS), "--seed", str(2000 + seed)], log)
    if not (run / "analysis.nc").is_file():
        _hippo(["analyse", str(run / "recording.nc"), "--out", str(run / "analysis.nc"),
                "--shuffles", str(SHUFFLES), "--seed", str(seed),
                *(["--populations", populations] if populations else [])], log)


def run(out: Path, seeds: list[int], names: list[str], families: list[str],
        populations: str | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    log = out / "screen.log"
    for seed in seeds:
        for family in families:
            base = out / f"base_{family}_s{seed}"
            if not all(name in SCRATCH for name in names):  # the scratch runs need no base
                _train(base, [*BASE, f"world.worlds=[\"{BASE_WORLD[family]}\"]",
                              f"train.seed={seed}", "train.threads=1"], log)
            for name in names:
                run_dir = out / f"{name}_{family}_s{seed}"
                if name in SCRATCH:
                    worlds = json.dumps(list(SETTING_WORLDS.get(
                        name, (SCREEN_WORLD[family], SCRATCH_WORLD[family]))))
                    _train(run_dir, [*SCRATCH_COMMON, *SCRATCH[name], f"train.seed={seed}",
                                     f"train.isometry_scale={SCRATCH_SCALE[family]}",
                                     f"world.worlds={worlds}"], log)
                    _stages(run_dir, family, seed, log, populations)
                    continue
                _train(run_dir, [*COMMON, *SETTINGS[name], f"train.seed={seed}",
                                 f"world.worlds=[\"{SCREEN_WORLD[family]}\"]",
                                 f"train.init_from={base / 'checkpoint.pt'}"], log)
                _stages(run_dir, family, seed, log, populations)


#: A read-out cell is module-pure when one grid module holds more than this share of the
#: power of its weights on g (the same rule as benchmarks/triad_energy_toy.py).
PURE = 0.8


def _cell_modules(ckpt: Path) -> dict:
    """How the read-out cells draw on g's grid modules: the median over cells of the largest
    module's share of a cell's weight power, and the fraction of module-pure cells (NaN
    without read-out cells or grid modules). Mixing modules of different spacing gives
    interference patterns, not one lattice."""
    from hippo_rep.training.checkpoint import load_checkpoint

    model, config, _ = load_checkpoint(ckpt)
    size = config.model.g_module_size
    if model.cell_readout is None or not size:
        return {"cell_purity": np.nan, "cells_pure": np.nan}
    w = model.cell_readout.weight.detach()
    if config.model.cells_modular:  # the weights the cells use
        w = w * model.cell_mask
    w = w.numpy()
    power = (w.reshape(w.shape[0], -1, size) ** 2).sum(-1)
    share = power.max(1) / power.sum(1)
    return {"cell_purity": float(np.median(share)), "cells_pure": float(np.mean(share > PURE))}


def _hex_spacings(cells) -> dict:
    """The lattices of the cells hexagonal in every environment: their median wavelength
    (nodes; the mean of the three waves' lengths over environments) and how many spacing
    modules they form (:func:`hippo_rep.analysis.grid_modules`). Does the model make grid
    modules of distinct spacing?"""
    from hippo_rep.analysis import grid_modules

    every = cells["is_grid"].all("env").values
    if not every.any():
        return {"hex_wavelength": np.nan, "hex_spacing_modules": 0}
    bin_size = float(np.diff(cells["x"].values[:2])[0])  # map bin in nodes
    wl = cells["wave_length"].mean(("wave", "env")).values[every] * bin_size
    return {"hex_wavelength": float(np.median(wl)),
            "hex_spacing_modules": grid_modules(cells).attrs["n_modules"]}


#: Module triads whose orientations (mod 60°) lie within this many degrees count as one.
SAME_ORIENTATION = 10.0


def _triad_mixing(cells, modules) -> dict:
    """Do the cells' three-wave maps take their waves from one orientation of W_a's triads?
    The orientations (mod 60°) of the modules that are triads, grouped within
    :data:`SAME_ORIENTATION`; each wave of a map with three waves goes to the nearest group;
    ``triad_orientations`` counts the groups and ``mixed_3wave`` is the fraction of
    three-wave maps whose waves come from more than one group (an interference of two
    lattices turned apart, not one lattice), ``mixed_hex`` the same among the hexagonal
    ones."""
    from hippo_rep.analysis.modules import circular_mean_60

    triads = [m["hexagonal_triad"] for m in modules or [] if m["hexagonal_triad"]["found"]]
    if not triads:
        return {"triad_orientations": 0, "mixed_3wave": np.nan}

    def gap(a, b):
        return np.abs((a - b + 30) % 60 - 30)

    groups: list[float] = []
    for o in sorted(circular_mean_60(np.asarray(t["angles"])) for t in triads):
        if not groups or gap(o, groups[-1]) > SAME_ORIENTATION:
            groups.append(o)
    if len(groups) > 1 and gap(groups[0], groups[-1]) <= SAME_ORIENTATION:
        groups.pop()  # the first and last wrap around 60°
    three = cells["n_waves"].values == 3
    angles = cells["wave_angle"].transpose("env", "unit", "wave").values[three] % 60
    nearest = np.argmin(gap(angles[..., None], np.asarray(groups)), -1)
    mixed = (nearest != nearest[:, :1]).any(-1)
    grid = cells["is_grid"].transpose("env", "unit").values[three]
    return {"triad_orientations": len(groups),
            "mixed_3wave": float(mixed.mean()) if len(mixed) else np.nan,
            "mixed_hex": float(mixed[grid].mean()) if grid.any() else np.nan}


def _row(run_dir: Path) -> dict:
    """One run's line: held-out accuracy, memories per node, W_a's best triad, walk-constant
    power, and the fractions of (environment, unit) maps of the recorded cells (population
    ``g``) per class, with the median |ψ| of the maps holding three waves."""
    import xarray as xr

    import hippo_rep.schema  # noqa: F401  (registers the ds.hippo accessor)

    ev = json.loads((run_dir / "eval.json").read_text())
    row = {"run": run_dir.name,
           "loop_closure": ev["model"]["revisit_new_edge"],
           "zero_shot": ev["model"]["revisit_unseen_edge"],
           "mem_per_node": ev["memory"]["memories_per_node"]}
    triad = (ev["transitions"] or {}).get("hexagonal_triad") or {}
    row["triad_found"] = float(triad.get("found", np.nan))
    row["triad_angle_dev"] = triad.get("max_angle_deviation", np.nan)
    row["triad_len_ratio"] = triad.get("length_ratio", np.nan)
    row["wcp_g"] = (ev.get("walk_constant_power") or {}).get("g", np.nan)
    modules = (ev["transitions"] or {}).get("modules")
    # grid modules: the fraction whose own waves are a hexagonal triad
    row["module_triads"] = (float(np.mean([m["hexagonal_triad"]["found"] for m in modules]))
                            if modules else np.nan)
    with xr.open_dataset(run_dir / "analysis.nc") as an:
        cells = an.hippo.population("g")  # the recorded cells of a read-out model
        for head, var in (("hexagonal", "is_grid"), ("two_wave", "is_two_wave"),
                          ("band", "is_band"), ("square", "is_square")):
            row[head] = float(cells[var].mean())
        # the same units across environments: hexagonal in every recorded environment
        row["hex_every_env"] = float(cells["is_grid"].all("env").mean())
        psi = np.abs(cells["triad_phase"].values.ravel())
        row["psi_median"] = float(np.nanmedian(psi)) if np.isfinite(psi).any() else np.nan
        if "memory_activity" in an.hippo.populations:
            row["place"] = float(an.hippo.population("memory_activity")["is_place"].mean())
        row.update(_hex_spacings(cells))
        row.update(_triad_mixing(cells, modules))
    row.update(_cell_modules(run_dir / "checkpoint.pt"))
    with open(run_dir / "metrics.csv") as f:  # the trainer's own clock (resumes included)
        last = list(csv.DictReader(f))[-1]
    row["it_per_s"] = int(last["iteration"]) / float(last["elapsed_s"])
    return row


def table(out: Path) -> None:
    rows = [_row(d) for d in sorted(out.iterdir())
            if d.is_dir() and (d / "analysis.nc").is_file()]
    if not rows:
        sys.exit(f"{out}: no finished run (analysis.nc) yet")
    keys = list(dict.fromkeys(k for r in rows for k in r))
    print("  ".join(f"{k:>16}" for k in keys))
    for r in rows:
        print("  ".join(f"{r.get(k, np.nan):>16.3f}" if not isinstance(r.get(k), str)
                        else f"{r[k]:>16}" for k in keys))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    r.add_argument("--only", nargs="+", choices=sorted({**SETTINGS, **SCRATCH}),
                   default=list(SETTINGS))
    r.add_argument("--worlds", nargs="+", choices=sorted(BASE_WORLD), default=["square", "hex"])
    r.add_argument("--populations", default=None,
                   help="analyse only these populations (e.g. g,g_pi: minutes faster)")
    t = sub.add_parser("table")
    t.add_argument("out", type=Path)
    a = p.parse_args()
    if a.cmd == "run":
        run(a.out, a.seeds, a.only, a.worlds, a.populations)
    else:
        table(a.out)


if __name__ == "__main__":
    main()
