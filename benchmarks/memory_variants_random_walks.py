"""Ordinary random walks (the paper's, not the delay task) for memory variants of trained weights.

For each checkpoint: the model as trained, then its weights as each ``--variants`` entry
(``full``, ``window``, or ``fam:F:update`` for F slots with that update), on the same held-out
environments (:func:`hippo_rep.training.evaluate.evaluate`, fresh observations, seed
``--seed``). Printed per world: accuracy on revisits, on revisits by an edge not taken before
(loop closure) and on all steps.

Usage::

    python benchmarks/memory_variants_random_walks.py CKPT [CKPT ...]
        [--variants full,window,fam:32:hard] [--worlds square:10,square:11] [--envs 32]
        [--steps 360] [--seed 0]
"""

from __future__ import annotations

import argparse

import torch

from hippo_rep.tasks.delay import as_variant
from hippo_rep.training.checkpoint import load_checkpoint
from hippo_rep.training.evaluate import evaluate
from hippo_rep.worlds import parse_world

#: Step types printed (keys of :func:`evaluate`'s accuracies).
COLUMNS = ("revisit", "revisit_new_edge", "all")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--variants", default="full,window,fam:32:hard")
    p.add_argument("--worlds", default="square:10,square:11")
    p.add_argument("--envs", type=int, default=32)
    p.add_argument("--steps", type=int, default=360)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    print(f"{args.envs} held-out envs × {args.steps} steps per world, seed {args.seed}")
    print(f"{'model':<44} {'world':<10} " + " ".join(f"{c:>16}" for c in COLUMNS))
    for path in args.checkpoints:
        model, cfg, _ = load_checkpoint(path)
        runs = [(f"{path} (as trained)", model)]
        for v in (v for v in args.variants.split(",") if v):
            name, *rest = v.split(":")
            over = {"fam_slots": int(rest[0]), "fam_update": rest[1]} if rest else {}
            runs.append((f"  as {v}", as_variant(model, name, **over)))
        for label, m in runs:
            for w in args.worlds.split(","):
                res = evaluate(m, parse_world(w), args.envs, args.steps, cfg.world.n_obs,
                               args.seed)
                print(f"{label[-44:]:<44} {w:<10} "
                      + " ".join(f"{res['model'][c]:>16.3f}" for c in COLUMNS), flush=True)


if __name__ == "__main__":
    main()
