"""How often FAM slots that hold a conjunction are re-written over a random walk.

For each checkpoint (``model.memory = "fam"``), runs ``--envs`` held-out random walks of
``--steps`` steps (fresh observations, seed ``--seed``) block by block and counts, per slot,
the block ends at which a *filled* slot (largest observation probability > 0.5) took another
position (max |Δg| > :data:`MOVED`) and at which an empty slot was filled. Prints a table:
mean re-writes per filled slot, the share of slots never re-written, fills per slot.
Tells whether a slot's several place fields come from holding several places in turn or
from one stored position whose code recurs elsewhere (a periodic g).

    python benchmarks/fam_slot_rewrites.py runs/ret48/paper_s0/checkpoint.pt \
        runs/keep48_s0/checkpoint.pt
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from hippo_rep.training.checkpoint import load_checkpoint
from hippo_rep.worlds import parse_world, random_observations, random_walk

#: A slot whose position changed by more than this (any unit, rescaled g) at a block end moved.
MOVED = 1e-4
#: A slot whose largest observation probability exceeds this holds a conjunction.
FILLED = 0.5


@torch.no_grad()
def slot_changes(model, world, steps: int, n_obs: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Re-writes of filled slots and fills of empty ones, per slot, over one walk: two (F,)
    int arrays."""
    nodes, actions = random_walk(world, steps, rng)
    obs_map = random_observations(world, n_obs, rng)
    obs = torch.as_tensor(obs_map[nodes])[None]
    act = torch.as_tensor(actions)[None]
    block = model.config.memory_block
    state, prev = None, None
    rewrites = fills = 0
    for s in range(0, steps, block):
        _, state = model(obs[:, s:s + block], act[:, s:s + block], state)
        g = state.fam_g[0].numpy().copy()
        conf = state.fam_p[0].amax(-1).numpy().copy()
        if prev is not None:
            moved = np.abs(g - prev[0]).max(-1) > MOVED
            rewrites = rewrites + (moved & (prev[1] > FILLED))
            fills = fills + (moved & (prev[1] <= FILLED))
        prev = (g, conf)
    return np.asarray(rewrites), np.asarray(fills)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--world", default="square:10")
    p.add_argument("--envs", type=int, default=4)
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(1)
    world = parse_world(a.world)
    print(f"{a.envs} walks × {a.steps} steps of {a.world}, seed {a.seed}")
    print(f"{'checkpoint':45s} {'slots':>5s} {'re-writes/slot':>15s} {'never re-written':>17s} "
          f"{'fills/slot':>11s}")
    for ck in a.checkpoints:
        model, cfg, _ = load_checkpoint(ck)
        if model.config.memory != "fam":
            raise SystemExit(f"{ck}: model.memory is {model.config.memory!r}, not 'fam'")
        model.eval()
        rng = np.random.default_rng(a.seed)
        rw, fl = zip(*(slot_changes(model, world, a.steps, cfg.world.n_obs, rng)
                       for _ in range(a.envs)), strict=True)
        rw, fl = np.stack(rw), np.stack(fl)
        print(f"{ck[-45:]:45s} {rw.shape[1]:5d} {rw.mean():15.2f} {(rw == 0).mean():17.2f} "
              f"{fl.mean():11.2f}")


if __name__ == "__main__":
    main()
