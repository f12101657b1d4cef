"""Does the conformal-isometry loss alone turn a module's random waves into a hexagonal triad?

No model, no task: one grid module of ``transition_param = "waves"`` (three rotation planes,
six units), each plane p a wave vector k_p (rad per node) holding a share w_p of the module's
power. On a unit-length module state, a move by a lattice displacement d changes the state by

    ||Δu||² = Σ_p w_p · 2 (1 − cos(k_p · d)),

whatever the state (rotations keep each plane's power), so the loss of
:func:`hippo_rep.models.temt_losses.transition_isometry_loss` for one module is the mean over the
displacements of ``lattice_displacements(kind, range)`` of (||Δu|| − s |d|)². Its optimum on a
hexagonal lattice with equal powers is an exact triad of wavelength 2π / (s √2) (for small d,
Σ_p (k_p · d)² / 3 = |k|² |d|² / 2 for any d only when the three k_p are 60° apart).

The waves start as the model starts them (direction uniform, wavelength log-uniform in
``WAVE_INIT_WAVELENGTHS``) and are fitted with Adam at each ``--lr``; the powers are equal
(``--power equal``), fixed unequal (``fixed``: 0.5, 0.3, 0.2) or learned (``free``: a softmax,
at the same learning rate). Printed per seed and checkpoint: the largest angle deviation of
the three waves from 60° spacing, their length ratio, whether ``hexagonal_triad`` finds a
triad, and the powers.

    python benchmarks/isometry_waves_toy.py --lr 1e-3 1e-2 --power equal fixed free \
        --seeds 0 1 2 3 4 5
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch

from hippo_rep.models.temt import WAVE_INIT_WAVELENGTHS
from hippo_rep.models.temt_losses import lattice_displacements
from hippo_rep.models.transitions import hexagonal_triad, move_displacements

#: Isometry scale s (the hexagonal screen's ``train.isometry_scale``).
SCALE = 0.7
#: Longest displacement in the loss (nodes; the config's ``train.isometry_range`` default).
RANGE = 2.3
#: Adam steps at which the waves are reported.
CHECKPOINTS = (500, 1500, 5000)
#: The fixed unequal powers of ``--power fixed``.
FIXED_POWERS = (0.5, 0.3, 0.2)


def displacements(kind: str = "hex",
                  max_distance: float = RANGE) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, 2) lattice displacements (nodes) of length ≤ ``max_distance`` and their (n,) lengths,
    one of each ± pair, as the model's isometry loss moves its states."""
    u = move_displacements(7 if kind == "hex" else 5)  # row 0: stay
    disp, dist = [], []
    for path, length in lattice_displacements(kind, max_distance):
        disp.append(sum(u[a] for a in path))
        dist.append(length)
    return torch.stack(disp), torch.tensor(dist)


def isometry_error(k: torch.Tensor, power: torch.Tensor, disp: torch.Tensor,
                   dist: torch.Tensor, scale: float = SCALE) -> torch.Tensor:
    """Mean over displacements of (||Δu|| − s |d|)² for one module of plane waves ``k`` (P, 2)
    with power shares ``power`` (P,) summing to 1."""
    du2 = (power * 2 * (1 - torch.cos(disp @ k.T))).sum(-1)
    return ((du2 + 1e-12).sqrt() - scale * dist).pow(2).mean()


def initial_waves(rng: torch.Generator, n: int = 3) -> torch.Tensor:
    """(n, 2) wave vectors drawn as ``TEMt`` draws them for ``transition_param = "waves"``."""
    lo, hi = (math.log(v) for v in WAVE_INIT_WAVELENGTHS)
    lam = torch.exp(lo + (hi - lo) * torch.rand(n, generator=rng))
    ang = 2 * math.pi * torch.rand(n, generator=rng)
    return (2 * math.pi / lam)[:, None] * torch.stack([ang.cos(), ang.sin()], 1)


def triad(k: np.ndarray) -> dict:
    """``hexagonal_triad`` of the three waves (wavelength in nodes, axial angle in degrees)."""
    waves = [{"wavelength": float(2 * math.pi / np.linalg.norm(v)),
              "angle": float(np.degrees(np.arctan2(v[1], v[0])) % 180.0)} for v in k]
    return hexagonal_triad(waves)


def fit(seed: int, lr: float, power: str, steps: int) -> list[dict]:
    """Fit one module from the seed's random start; one row per checkpoint ≤ ``steps``."""
    rng = torch.Generator().manual_seed(seed)
    k = initial_waves(rng).requires_grad_(True)
    logits = torch.zeros(3, requires_grad=power == "free")
    fixed = torch.tensor(FIXED_POWERS)
    params = [k, logits] if power == "free" else [k]
    opt = torch.optim.Adam(params, lr=lr)
    disp, dist = displacements()
    rows = []
    for step in range(1, steps + 1):
        w = fixed if power == "fixed" else torch.softmax(logits, 0)
        loss = isometry_error(k, w, disp, dist)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step in CHECKPOINTS or step == steps:
            t = triad(k.detach().numpy())
            rows.append({"seed": seed, "lr": lr, "power": power, "step": step,
                         "loss": float(loss.detach()), "angle_off": t["max_angle_deviation"],
                         "length_ratio": t["length_ratio"], "triad": t["found"],
                         "wavelength": float(np.mean(t["wavelengths"])),
                         "powers": w.detach().numpy().round(3).tolist()})
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lr", nargs="+", type=float, default=[1e-3, 1e-2])
    p.add_argument("--power", nargs="+", choices=["equal", "fixed", "free"], default=["equal"])
    p.add_argument("--seeds", nargs="+", type=int, default=list(range(6)))
    p.add_argument("--steps", type=int, default=max(CHECKPOINTS))
    a = p.parse_args(argv)
    print(f"{'power':>6} {'lr':>7} {'step':>5} {'triads':>7} {'angle off (deg), per seed':<40}"
          f" {'length ratio, per seed'}")
    for power in a.power:
        for lr in a.lr:
            runs = [fit(s, lr, power, a.steps) for s in a.seeds]
            for i, step in enumerate(r["step"] for r in runs[0]):
                rows = [run[i] for run in runs]
                n = sum(r["triad"] for r in rows)
                off = " ".join(f"{r['angle_off']:5.1f}" for r in rows)
                ratio = " ".join(f"{r['length_ratio']:.2f}" for r in rows)
                print(f"{power:>6} {lr:7.0e} {step:5d} {n:3d}/{len(rows):<3d} {off:<40} {ratio}")
            if power == "free":
                print("        learned powers:", "; ".join(
                    " ".join(f"{v:.2f}" for v in run[-1]["powers"]) for run in runs))
    print(f"(exact triad wavelength at s = {SCALE}: {2 * math.pi / (SCALE * math.sqrt(2)):.2f} "
          "nodes)")


if __name__ == "__main__":
    main()
