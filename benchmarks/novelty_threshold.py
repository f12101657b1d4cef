"""What writes duplicate memories: add-if-novel's threshold and the landmark correction.

Evaluates trained checkpoints on held-out worlds with their own config, with the landmark
correction switched off (pure path integration), and with other ``model.write_threshold``
values, and prints held-out loop closure beside memories written per distinct node visited
(add-if-novel's ideal is 1; below 1, distinct nodes were merged).

    python benchmarks/novelty_threshold.py data/temt_paper.pt runs/a/checkpoint.pt \\
        --world square:11 --steps 1500 --envs 4 --thresholds 0.98,0.95,0.9
"""

from __future__ import annotations

import argparse
import dataclasses

import torch

from hippo_rep.training.checkpoint import load_checkpoint
from hippo_rep.training.evaluate import evaluate
from hippo_rep.worlds import parse_world


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--world", default="square:11")
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--envs", type=int, default=4)
    p.add_argument("--thresholds", default="0.98,0.95,0.9")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    world = parse_world(args.world)
    print(f"held-out {world.spec}, {args.envs} envs × {args.steps} steps (seed {args.seed})")
    print(f"{'checkpoint':45s}{'variant':>22s}{'loop closure':>14s}{'zero-shot':>11s}"
          f"{'mem/node':>10s}")
    for path in args.checkpoints:
        model, cfg, _ = load_checkpoint(path)
        variants = [("as trained", {}), ("landmark off", {"landmark": False})]
        variants += [(f"write_threshold {t}", {"write_threshold": float(t)})
                     for t in args.thresholds.split(",")]
        for label, change in variants:
            model.config = dataclasses.replace(cfg.model, **change)
            r = evaluate(model, world, args.envs, args.steps, cfg.world.n_obs, seed=args.seed,
                         keep_heading=cfg.world.keep_heading, stay_prob=cfg.world.stay_prob)
            print(f"{path[-45:]:45s}{label:>22s}{r['model']['revisit_new_edge']:14.3f}"
                  f"{r['model']['revisit_unseen_edge']:11.3f}"
                  f"{r['memory']['memories_per_node']:10.2f}", flush=True)


if __name__ == "__main__":
    main()
