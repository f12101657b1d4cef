"""What non-negativity and an energy cost select from one hexagonal triad of waves, with no model.

One grid module's states g(r) on a hexagonal patch of 24 × 24 nodes are three plane waves of
equal length (``--wavelength`` nodes) 60° apart (cos and sin of each: six units). Cells
r = relu(A g + b) must keep g linearly decodable (mean squared error of D r against g) at an
energy cost (``--energy`` · mean r²), fitted with Adam from random starts. Each cell's weight
on each wave is the norm of its two weights in that wave's plane; a cell is counted
hexagonal-like when all three are within 0.7 of its strongest and its triad phase
ψ = φ₀ − φ₆₀ + φ₁₂₀ (the waves at 0°, 60°, 120° close as k₀ − k₆₀ + k₁₂₀ = 0) is within 45° of 0
(a lattice of peaks), single-wave when its second-strongest wave is under 0.3 of the first.

    python benchmarks/triad_energy_toy.py --energy 0.01 0.1 0.3 --seeds 0 1
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch

#: Nodes per side of the hexagonal patch.
PATCH = 24
#: Adam steps per fit.
STEPS = 4000
#: A wave takes part in a hexagonal-like cell with at least this fraction of the strongest.
MIN_RELATIVE = 0.7
#: A cell is single-wave when its second wave is below this fraction of the first.
SINGLE = 0.3
#: A cell is module-pure when one module holds more than this share of its weights' power
#: (with ``--modules`` > 1; hexagonal-like and single-wave cells must be pure).
PURE = 0.8
#: Non-negativity penalty of signed cells (``--activation none``).
NEG = 10.0
#: |ψ| below this (degrees): a lattice of peaks.
PSI_TOL = 45.0


def module_states(wavelength: float, rotation: float = 0.0) -> torch.Tensor:
    """(PATCH², 6) states of one triad module: cos of the three waves, then their sin;
    the waves at ``rotation`` + 0°, 60°, 120° (degrees)."""
    i, j = np.meshgrid(np.arange(PATCH), np.arange(PATCH))
    xy = np.stack([i + 0.5 * j, j * math.sqrt(3) / 2], -1).reshape(-1, 2)
    ang = np.deg2rad(rotation + np.array([0.0, 60.0, 120.0]))
    k = np.stack([np.cos(ang), np.sin(ang)], 1) * 2 * math.pi / wavelength
    th = xy @ k.T
    return torch.tensor(np.concatenate([np.cos(th), np.sin(th)], 1), dtype=torch.float32)


def fit(g: torch.Tensor, energy: float, n_cells: int, seed: int, activation: str = "relu",
        neg: float = NEG, weight: float = 0.0) -> dict:
    """Fit cells to ``g``; per active cell the waves' relative weights and ψ (degrees).

    ``activation`` "relu": r = relu(A g + b); "none": r = A g + b with ``neg`` · mean
    relu(−r)² (non-negative rates by penalty, as TEM-t's ``model.cells_activation=none``);
    ``weight`` · mean A² is a cost on the read-out weights (Dorrell et al., ICLR 2023).
    """
    act = torch.relu if activation == "relu" else (lambda x: x)
    torch.manual_seed(seed)
    A = torch.nn.Parameter(0.5 * torch.randn(n_cells, g.shape[1]))
    b = torch.nn.Parameter(torch.full((n_cells,), 0.5))
    D = torch.nn.Parameter(0.1 * torch.randn(g.shape[1], n_cells))
    opt = torch.optim.Adam([A, b, D], lr=1e-2)
    for _ in range(STEPS):
        r = act(g @ A.T + b)
        loss = (((r @ D.T - g) ** 2).mean() + energy * (r ** 2).mean()
                + neg * (torch.relu(-r) ** 2).mean() + weight * (A ** 2).mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        r = torch.relu(act(g @ A.T + b))
        # each cell's strongest module (by the norm of its six weights), then its waves there
        power = A.reshape(n_cells, -1, 6).pow(2).sum(-1)
        purity = (power.max(1).values / power.sum(1)).numpy()
        Am = A.reshape(n_cells, -1, 6)[torch.arange(n_cells), power.argmax(1)]
        amp = torch.stack([torch.hypot(Am[:, w], Am[:, w + 3]) for w in range(3)], 1)
        ph = torch.stack([torch.atan2(-Am[:, w + 3], Am[:, w]) for w in range(3)], 1)
        psi = torch.rad2deg(torch.remainder(ph[:, 0] - ph[:, 1] + ph[:, 2] + math.pi,
                                            2 * math.pi) - math.pi)
        err = float(((r @ D.T - g) ** 2).mean())
    active = (r.max(0).values > 1e-3).numpy()
    rel = (amp / amp.max(1, keepdim=True).values).numpy()[active]
    psi = psi.numpy()[active]
    pure = purity[active] > PURE
    hexlike = int(((rel.min(1) > MIN_RELATIVE) & (np.abs(psi) < PSI_TOL) & pure).sum())
    single = int(((np.sort(rel, 1)[:, 1] < SINGLE) & pure).sum())
    return {"decoding_mse": err, "active": int(active.sum()), "hexagonal_like": hexlike,
            "single_wave": single, "module_pure": int(pure.sum()),
            "purity_median": float(np.median(purity[active])) if active.any() else np.nan}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--energy", type=float, nargs="+", default=[0.01, 0.1, 0.3])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--cells", type=int, default=12)
    p.add_argument("--wavelength", type=float, default=6.0)
    p.add_argument("--activation", choices=("relu", "none"), default="relu")
    p.add_argument("--neg", type=float, default=NEG)
    p.add_argument("--weight", type=float, default=0.0)
    p.add_argument("--modules", type=int, default=1,
                   help="modules of wavelength × ratio^m at seeded random orientations")
    p.add_argument("--ratio", type=float, default=1.15)
    args = p.parse_args()
    torch.set_num_threads(1)
    rots = np.random.default_rng(0).uniform(0, 60, args.modules)
    rots[0] = 0.0
    g = torch.cat([module_states(args.wavelength * args.ratio ** m, rots[m])
                   for m in range(args.modules)], 1)
    print(f"{'energy':>8}{'seed':>6}{'decoding MSE':>14}{'active':>8}{'hexagonal-like':>16}"
          f"{'single-wave':>13}{'module-pure':>13}{'purity median':>15}")
    for energy in args.energy:
        for seed in args.seeds:
            res = fit(g, energy, args.cells, seed, args.activation, args.neg, args.weight)
            print(f"{energy:8.2f}{seed:6d}{res['decoding_mse']:14.4f}{res['active']:8d}"
                  f"{res['hexagonal_like']:16d}{res['single_wave']:13d}"
                  f"{res['module_pure']:13d}{res['purity_median']:15.2f}", flush=True)


if __name__ == "__main__":
    main()
