"""Which constraints on read-out cells select hexagonal lattices from a trained model's g?

A no-training toy on a trained TEM-t (default: ``data/temt_waves_range.pt``, whose W_a holds
hexagonal triads of distinct spacing). Its positional encodings ``g`` are recorded along walks
in held-out hexagonal 16×16 environments; read-out cells r = A g + b (64 cells, A and b only,
the model untouched) are then fitted to each constraint set below on those ``g``, and the
cells' activity is analysed with the toolkit's lattice-aware classifier (20 shuffles), as a
model's recording would be:

- ``energy``: the TEM-t read-out's cost as trained (mean r² of ReLU cells): no term fixes the
  cells' scale, so the cost drives every cell to zero (the degenerate control).
- ``unit``: each cell reads a fixed amount of signal (the rows of A at unit norm: with g's
  planes at unit RMS each cell's spatial variance is fixed), non-negative (linear cells with a
  penalty on relu(-r)²) and pays for its mean r² (Dorrell, Latham, Behrens & Whittington,
  ICLR 2023: non-negativity, bounded firing and a fixed informativeness). The offset b a cell
  needs to stay non-negative is least for three waves of one triad in phase (ψ = 0, a lattice
  of peaks), so that is the cheapest cell.
- ``unit_relu``: the same with ReLU cells instead of the penalty (rectification is free, so
  the offset is not needed: expected to select less).
- ``white``: the same, with each cell's spatial variance fixed instead of its weights' norm:
  g is whitened first (its principal components of at least :data:`WHITE_FLOOR` × the
  largest variance, each scaled to unit variance) and the cells read unit-norm rows of the
  whitened g, so every cell's variance over the walk is 1. With unit-norm rows on g itself
  (``unit``) a cell can read g's nearly constant directions (waves longer than the arena,
  walk-constant planes) and pay next to nothing; fixing the variance removes that escape.
  Then the energy mean r² = 1 + b² is least for the cell whose minimum lies closest to its
  mean: the lattice of peaks (min = −1.22 σ against −1.41 σ for one wave and −2 σ for two).
- ``virtual``: ``white`` fitted on g over a virtual arena much larger than the recorded one
  (:data:`VIRTUAL_EXTENT` nodes a side): for ``model.transition_param = "waves"`` g at a
  displacement x from a recorded state turns each rotation plane p by k_p · x, so the cells'
  constraints can see whole periods of every module however small the environment is. In a
  16×16 arena the longest waves show less than a period and the cheapest cells mix modules
  into bumps at the arena's scale (synthetic triads: single-module lattices on 40×40, mixed
  cells on 16×16); the virtual arena restores the conditions of the theory (an unbounded
  plane).
- ``white_modular``: ``white`` with each cell reading one module (cell i on module i mod the
  module count, as ``model.cells_modular``): can each module's cells be lattices of its own
  spacing, given a recording that covers its period (``--world``, ``--steps``)?
- ``random``: unit-norm random rows, b at the smallest offset that keeps them non-negative
  (no fitting: the negative control).

    python benchmarks/cell_objective_toy.py [--checkpoint data/temt_waves_range.pt]

Prints per constraint set the fractions of (cell, environment) maps per class, the fraction
of cells hexagonal in every environment, the median |ψ| and the median largest module share
of the cells' weight power.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

#: The constraint sets (the module docstring says what each is).
KINDS = ("random", "energy", "unit_relu", "unit", "white", "white_modular", "virtual")
#: Cells fitted (the trained read-out's count).
N_CELLS = 64
#: Adam steps and learning rate of the fit (converged: the loss changes < 1e-4 at the end).
STEPS, LR = 3000, 0.02
#: Non-negativity penalty on relu(-r)² (linear cells).
NEG_WEIGHT = 100.0
#: Principal components of g kept by ``white``: variance at least this × the largest.
WHITE_FLOOR = 1e-2
#: Side (nodes) of ``virtual``'s square and the square root of its sample count.
VIRTUAL_EXTENT, VIRTUAL_SAMPLES = 80.0, 120
#: Recording: held-out hexagonal world, environments × steps, seed (the screen's).
WORLD, ENVS, RECORD_STEPS, SEED = "hex:16", 4, 1500, 2001
#: Shuffles of the analysis' nulls (the screen's).
SHUFFLES = 20


def fit(g: torch.Tensor, kind: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A (n_cells, n_g) and b (n_cells,) of constraint set ``kind`` fitted on ``g`` (N, n_g)."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(N_CELLS, g.shape[1], generator=gen) / g.shape[1] ** 0.5
    b = torch.full((N_CELLS,), 0.5)
    if kind == "white":  # fit unit-norm rows on whitened g, then map them back onto g
        mean = g.mean(0)
        var, vec = torch.linalg.eigh(torch.cov(g.T))
        keep = var >= WHITE_FLOOR * var.max()
        white = vec[:, keep] / var[keep].sqrt()  # (n_g, k): g → unit-variance components
        w, b = fit((g - mean) @ white, "unit", seed)
        a = w @ white.T
        return a, b - a @ mean
    if kind == "random":
        a = a / a.norm(dim=1, keepdim=True)
        return a, -(g @ a.T).min(0).values
    a.requires_grad_(True)
    b.requires_grad_(True)
    opt = torch.optim.Adam([a, b], lr=LR)
    for _ in range(STEPS):
        w = a / a.norm(dim=1, keepdim=True) if kind.startswith("unit") else a
        r = g @ w.T + b
        if kind in ("energy", "unit_relu"):
            r = torch.relu(r)
            loss = r.pow(2).mean()
        else:
            loss = r.pow(2).mean() + NEG_WEIGHT * torch.relu(-r).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        w = a / a.norm(dim=1, keepdim=True) if kind.startswith("unit") else a
    return w.detach(), b.detach()


def fit_modular(g: torch.Tensor, size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``white`` fitted module by module: A (n_cells, n_g) zero outside each cell's module
    (cell i on module i mod n_modules) and b (n_cells,)."""
    n_modules = g.shape[1] // size
    a, b = torch.zeros(N_CELLS, g.shape[1]), torch.zeros(N_CELLS)
    for m in range(n_modules):
        rows, units = torch.arange(m, N_CELLS, n_modules), slice(m * size, (m + 1) * size)
        a_m, b_m = fit(g[:, units], "white", seed + m)
        a[rows, units], b[rows] = a_m[:len(rows)], b_m[:len(rows)]
    return a, b


def virtual_g(model, states: torch.Tensor, seed: int) -> torch.Tensor:
    """g (N, n_g) at N = :data:`VIRTUAL_SAMPLES` ² random displacements in a square of
    :data:`VIRTUAL_EXTENT` nodes, each from a random recorded state of ``states`` (n, n_g),
    moved by W_a (``temt_losses.virtual_states``, as ``train.cells_virtual`` does in
    training). States of several environments: where two modules share their waves, their
    relative phase differs between environments, and one state alone would let a cell mix
    them."""
    from hippo_rep.models.temt_losses import virtual_states

    if model.config.transition_param != "waves":
        raise SystemExit("--kinds virtual needs a model with model.transition_param = waves")
    with torch.no_grad():
        return virtual_states(model, states.float(), VIRTUAL_SAMPLES ** 2, VIRTUAL_EXTENT, seed)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default="data/temt_waves_range.pt")
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", default="", help="write each analysis to SAVE_KIND.nc")
    p.add_argument("--world", default=WORLD, help=f"recorded world (default {WORLD})")
    p.add_argument("--steps", type=int, default=RECORD_STEPS,
                   help=f"steps per recorded walk (default {RECORD_STEPS})")
    args = p.parse_args()

    kinds = args.kinds.split(",")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        p.error(f"--kinds: unknown {', '.join(unknown)}; choose from {', '.join(KINDS)}")

    import hippo_rep.schema  # noqa: F401  (the ds.hippo accessor)
    from hippo_rep.analysis.pipeline import analyse
    from hippo_rep.recording.record import Recorder
    from hippo_rep.training.evaluate import model_chunks

    rec = Recorder(args.checkpoint, n_envs=ENVS, n_steps=args.steps, world=args.world,
                   seed=SEED)
    ds = rec.record()
    outs = [out for _, _, out, _ in model_chunks(rec.model, rec.observations, rec.actions,
                                                 rec.chunk, threads=rec.threads)]
    g = torch.cat([o.g.float() for o in outs], 1)  # (env, time, n_g), before the read-out
    g_pi = torch.cat([o.g_pi.float() for o in outs], 1)
    size = rec.config.model.g_module_size or g.shape[-1]
    flat = g.reshape(-1, g.shape[-1])
    print(f"{args.checkpoint}: g {tuple(g.shape)}, modules of {size}; {args.world} × {ENVS} "
          f"envs × {args.steps} steps, {SHUFFLES} shuffles")
    print(f"{'cells':>10s} {'hexagonal':>10s} {'two-wave':>9s} {'band':>6s} {'every env':>10s}"
          f" {'|psi| med':>10s} {'module share':>13s} {'mean r²':>8s} {'min r':>7s}")
    for kind in kinds:
        if kind == "virtual":
            a, b = fit(virtual_g(rec.model, flat, args.seed), "white", args.seed)
        elif kind == "white_modular":
            a, b = fit_modular(flat, size, args.seed)
        else:
            a, b = fit(flat, kind, args.seed)
        relu = kind in ("energy", "unit_relu")
        cells = {}
        for name, src in (("g", g), ("g_pi", g_pi)):
            r = src @ a.T + b
            cells[name] = (torch.relu(r) if relu else r).numpy()
        out = ds.copy()
        for name in ("g", "g_pi"):
            out[name] = (("env", "time", "g_unit"), cells[name].astype(np.float32))
        out = out.assign_coords(g_unit=np.arange(N_CELLS))
        an = analyse(out, shuffles=SHUFFLES, seed=1, variables=("g",))
        c = an.hippo.population("g")
        psi = np.abs(c["triad_phase"].values.ravel())
        power = (a.numpy().reshape(N_CELLS, -1, size) ** 2).sum(-1)
        share = np.median(power.max(1) / power.sum(1))
        best = power.argmax(1)
        per_module = " ".join(
            f"{m}:{int((best == m).sum())}/{float(c['is_grid'].isel(unit=best == m).mean()):.2f}"
            for m in range(power.shape[1]) if (best == m).any())
        r = cells["g"]
        if args.save:
            an.to_netcdf(f"{args.save}_{kind}.nc")
        print(f"{kind:>10s} {float(c['is_grid'].mean()):10.3f}"
              f" {float(c['is_two_wave'].mean()):9.3f}"
              f" {float(c['is_band'].mean()):6.3f} {float(c['is_grid'].all('env').mean()):10.3f}"
              f" {np.nanmedian(psi) if np.isfinite(psi).any() else np.nan:10.1f}"
              f" {share:13.2f} {float((r ** 2).mean()):8.3f} {float(r.min()):7.3f}", flush=True)
        print(f"{'':>10s} module: cells / hexagonal fraction  {per_module}", flush=True)


if __name__ == "__main__":
    main()
