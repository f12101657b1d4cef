"""Eager and fused (``train.fast_step``) trainers in lockstep: is a difference between their
free-running training curves a bug of the fused backward, or chaos?

Two trainers of the same config differ only in ``train.fast_step``. Before every iteration
the fused one gets the eager one's weights and optimiser state, so both compute the gradient
of the same weights on the same batch; the largest relative difference over the weight
tensors is printed every ``--every`` iterations (and whenever it exceeds ``--flag``). A bug
in the hand-written backward would show as a large difference at some iteration; small ones
(float32 rounding, the add-if-novel similarity summed in another order) only grow apart
when each trainer follows its own weights, as free-running runs do.

    python benchmarks/fused_lockstep.py --iterations 220 [--preset small] [--set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import tempfile

import torch

from hippo_rep.config import load_config
from hippo_rep.training.trainer import Trainer


def _captured_step(trainer: Trainer, iteration: int) -> dict[str, torch.Tensor]:
    """One training step; returns the gradients as they reach the optimiser."""
    grads = {}
    update = trainer._update

    def capture(it):
        grads.update({k: p.grad.detach().clone()
                      for k, p in trainer.model.named_parameters() if p.grad is not None})
        update(it)

    trainer._update = capture
    try:
        trainer.step(iteration)
    finally:
        trainer._update = update
    return grads


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="small")
    p.add_argument("--iterations", type=int, default=220)
    p.add_argument("--every", type=int, default=20, help="print every N iterations")
    p.add_argument("--flag", type=float, default=1e-3,
                   help="also print an iteration whose difference exceeds this")
    p.add_argument("--set", action="append", default=[], help="config override")
    args = p.parse_args()
    torch.set_num_threads(1)
    trainers = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fast in (False, True):
            cfg = load_config(args.preset, ["train.eval_every=0", "train.threads=1",
                                            f"train.fast_step={str(fast).lower()}", *args.set])
            trainers[fast] = Trainer(cfg, f"{tmp}/{fast}", progress=False)
        worst = (0.0, -1, "")
        for it in range(args.iterations):
            trainers[True].model.load_state_dict(trainers[False].model.state_dict())
            trainers[True].optim.load_state_dict(trainers[False].optim.state_dict())
            eager, fast = (_captured_step(trainers[f], it) for f in (False, True))
            rel = {k: float((eager[k] - fast[k]).norm() / (eager[k].norm() + 1e-12))
                   for k in eager}
            name = max(rel, key=rel.get)
            if rel[name] > worst[0]:
                worst = (rel[name], it, name)
            if it % args.every == 0 or rel[name] > args.flag:
                print(f"iteration {it:5d}  largest relative gradient difference "
                      f"{rel[name]:.2e} ({name})", flush=True)
    print(f"largest over {args.iterations} iterations: {worst[0]:.2e} at iteration "
          f"{worst[1]} ({worst[2]})")


if __name__ == "__main__":
    main()
