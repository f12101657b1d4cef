"""Fit the keep rule of ``fam_update = "keep"`` slots by a derivative-free search on the
training loss, where the straight-through gradient fails.

The rule has two numbers: the keep logit of an empty slot (uniform p) and of a filled one (a
copied conjunction). Starting from (0, 0), a cross-entropy search (population ``--population``,
the ``--elites`` best kept, ``--generations`` rounds) minimises an objective on ``--batches``
batches of ``--batch-size`` delay walks in the checkpoint's training worlds (D ~ U{0 ..
``--max-delay``}, fresh observations), every other weight fixed:

- ``--objective all`` (default): TEM-t's training loss
  (:func:`hippo_rep.models.temt_losses.losses`, every step) on the checkpoint's training walks
  (``world.walk = "delay"``: cut at the checkpoint's walk length, or ``--walk-steps``).
  Nothing in it knows the task's home or scores. It rewards recency: its two basins (filled
  slot's logit above 0: keep; below: replace now and then) are nearly equal in loss, and which
  one a search lands in varies with the model.
- ``--objective return``: the task's own loss, on training worlds: cross-entropy of the g_pi
  prediction on the scored steps (first return visits home) of whole delay walks. The held-out
  test (``hippo-rep delay``) uses other observations and walk seeds.

Writes a checkpoint whose model is ``memory = "fam"``, ``fam_update = "keep"`` with the
fitted rule (``--out``).

Usage::

    python benchmarks/fam_keep_search.py --out runs/keep_cem_s0/checkpoint.pt [--seed 0]
        [--checkpoint data/temt_paper.pt] [--slots 32] [--generations 6] [--population 8]
        [--objective all|return]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from hippo_rep.models.memory import set_keep_logits
from hippo_rep.models.temt_losses import losses
from hippo_rep.random_streams import batch_rng
from hippo_rep.tasks.delay import RUN_CHUNK, as_variant, pad_delay_walks
from hippo_rep.training.checkpoint import load_checkpoint, save_checkpoint
from hippo_rep.training.evaluate import run_model
from hippo_rep.worlds import delay_walk, parse_world, random_observations, sample_delay_episodes

#: Spread of the first generation, in logit units (the slots' attention scores are tens).
INITIAL_STD = 20.0
#: Floor of the spread, so that the search keeps exploring.
MIN_STD = 2.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default="data/temt_paper.pt")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0, help="seed of the search and its batches")
    p.add_argument("--slots", type=int, default=32)
    p.add_argument("--generations", type=int, default=6)
    p.add_argument("--population", type=int, default=8)
    p.add_argument("--elites", type=int, default=3)
    p.add_argument("--batches", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-delay", type=int, default=128)
    p.add_argument("--objective", choices=("all", "return"), default="all",
                   help="all: training loss on every step; return: loss on the first return "
                        "visits home")
    p.add_argument("--walk-steps", type=int,
                   help="steps per training walk (default: the checkpoint's world.walk_steps; "
                        "a walk is cut there, so long delays need longer walks)")
    args = p.parse_args()
    torch.set_num_threads(1)
    base, cfg, _ = load_checkpoint(args.checkpoint)
    model = as_variant(base, "fam", fam_slots=args.slots, fam_update="keep")
    worlds = [parse_world(w) for w in cfg.world.worlds]
    batches = []
    for i in range(args.batches):
        brng = batch_rng(args.seed, i)
        if args.objective == "all":
            ep = sample_delay_episodes(worlds, args.batch_size,
                                       args.walk_steps or cfg.world.walk_steps,
                                       cfg.world.n_obs, brng, args.max_delay)
            batches.append((torch.as_tensor(ep.observations), torch.as_tensor(ep.actions),
                            None))
            continue
        walks, env_obs = [], []
        for _ in range(args.batch_size):
            w = worlds[int(brng.integers(len(worlds)))]
            env_obs.append(random_observations(w, cfg.world.n_obs, brng))
            walks.append(delay_walk(w, int(brng.integers(args.max_delay + 1)), brng))
        batches.append(tuple(torch.as_tensor(a) for a in pad_delay_walks(walks, env_obs)))

    @torch.no_grad()
    def loss_at(theta) -> float:
        set_keep_logits(model, *theta)
        vals = []
        for obs, act, scored in batches:
            if scored is None:
                out, _ = model(obs, act)
                vals.append(losses(out, obs, cfg)["loss"].item())
                continue
            logits = torch.cat([o.logits_pi for o in run_model(model, obs, act, RUN_CHUNK)], 1)
            vals.append(F.cross_entropy(logits[scored], obs[scored]).item())
        return float(np.mean(vals))

    rng = np.random.default_rng(args.seed)
    mean, std = np.zeros(2), np.full(2, INITIAL_STD)
    t0 = time.perf_counter()
    print(f"start (0, 0): training loss {loss_at(mean):.4f}", flush=True)
    for gen in range(args.generations):
        pop = mean + std * rng.standard_normal((args.population, 2))
        scores = np.array([loss_at(th) for th in pop])
        elite = pop[np.argsort(scores)[:args.elites]]
        mean, std = elite.mean(0), np.maximum(elite.std(0), MIN_STD)
        print(f"generation {gen}: best {scores.min():.4f} at ({pop[scores.argmin()][0]:.1f}, "
              f"{pop[scores.argmin()][1]:.1f}); mean ({mean[0]:.1f}, {mean[1]:.1f}) "
              f"std ({std[0]:.1f}, {std[1]:.1f}); {time.perf_counter() - t0:.0f} s", flush=True)
    final = loss_at(mean)
    print(f"fitted keep logits: empty {mean[0]:.2f}, filled {mean[1]:.2f}; training loss "
          f"{final:.4f}", flush=True)
    set_keep_logits(model, *mean)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    out_cfg = replace(cfg, model=model.config)
    save_checkpoint(args.out, model, out_cfg, 0,
                    extra={"keep_search": {"checkpoint": args.checkpoint, "seed": args.seed,
                                           "objective": args.objective,
                                           "max_delay": args.max_delay,
                                           "empty": float(mean[0]), "filled": float(mean[1]),
                                           "training_loss": final}})


if __name__ == "__main__":
    main()
