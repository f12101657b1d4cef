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
#: |ψ| below this (degrees): a lattice of peaks.
PSI_TOL = 45.0


def module_states(wavelength: float) -> torch.Tensor:
    """(PATCH², 6) states of one triad module: cos of the three waves, then their sin."""
    i, j = np.meshgrid(np.arange(PATCH), np.arange(PATCH))
    xy = np.stack([i + 0.5 * j, j * math.sqrt(3) / 2], -1).reshape(-1, 2)
    ang = np.deg2rad([0.0, 60.0, 120.0])
    k = np.stack([np.cos(ang), np.sin(ang)], 1) * 2 * math.pi / wavelength
    th = xy @ k.T
    return torch.tensor(np.concatenate([np.cos(th), np.sin(th)], 1), dtype=torch.float32)


def fit(g: torch.Tensor, energy: float, n_cells: int, seed: int) -> dict:
    """Fit cells to ``g``; per active cell the waves' relative weights and ψ (degrees)."""
    torch.manual_seed(seed)
    A = torch.nn.Parameter(0.5 * torch.randn(n_cells, 6))
    b = torch.nn.Parameter(torch.full((n_cells,), 0.5))
    D = torch.nn.Parameter(0.1 * torch.randn(6, n_cells))
    opt = torch.optim.Adam([A, b, D], lr=1e-2)
    for _ in range(STEPS):
        r = torch.relu(g @ A.T + b)
        loss = ((r @ D.T - g) ** 2).mean() + energy * (r ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        r = torch.relu(g @ A.T + b)
        amp = torch.stack([torch.hypot(A[:, w], A[:, w + 3]) for w in range(3)], 1)
        ph = torch.stack([torch.atan2(-A[:, w + 3], A[:, w]) for w in range(3)], 1)
        psi = torch.rad2deg(torch.remainder(ph[:, 0] - ph[:, 1] + ph[:, 2] + math.pi,
                                            2 * math.pi) - math.pi)
        err = float(((r @ D.T - g) ** 2).mean())
    active = (r.max(0).values > 1e-3).numpy()
    rel = (amp / amp.max(1, keepdim=True).values).numpy()[active]
    psi = psi.numpy()[active]
    hexlike = int(((rel.min(1) > MIN_RELATIVE) & (np.abs(psi) < PSI_TOL)).sum())
    single = int((np.sort(rel, 1)[:, 1] < SINGLE).sum())
    return {"decoding_mse": err, "active": int(active.sum()), "hexagonal_like": hexlike,
            "single_wave": single}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--energy", type=float, nargs="+", default=[0.01, 0.1, 0.3])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--cells", type=int, default=12)
    p.add_argument("--wavelength", type=float, default=6.0)
    args = p.parse_args()
    torch.set_num_threads(1)
    g = module_states(args.wavelength)
    print(f"{'energy':>8}{'seed':>6}{'decoding MSE':>14}{'active':>8}{'hexagonal-like':>16}"
          f"{'single-wave':>13}")
    for energy in args.energy:
        for seed in args.seeds:
            res = fit(g, energy, args.cells, seed)
            print(f"{energy:8.2f}{seed:6d}{res['decoding_mse']:14.4f}{res['active']:8d}"
                  f"{res['hexagonal_like']:16d}{res['single_wave']:13d}", flush=True)


if __name__ == "__main__":
    main()
