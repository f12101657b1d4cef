"""Training speed of TEM (``model.kind = "tem"``) and TEM-t at TEM's default sizes.

Both are trained by the same :class:`~hippo_rep.training.trainer.Trainer` on the same
batches (the ``tem`` preset's worlds, walks, batch size 16 and truncated BPTT of 20 steps;
TEM at torch_tem's default sizes, TEM-t at its own defaults with ``model.kind = "temt"``).
One trainer iteration walks ``walk_steps`` steps in chunks of ``chunk_len`` with the memory
carried; torch_tem's "iteration" is one 20-step chunk, so the table gives both
iterations/s and 20-step chunks/s (forward + backward; the optimiser step is once per
trainer iteration here, once per chunk in torch_tem, and costs little beside them).
Prints a table with TEM-t/TEM ratios and the torch_tem figure measured on this machine
(0.25 iterations/s, measured earlier by the project; ``--torch-tem``) for reference.

    python benchmarks/bench_tem_vs_temt.py --iterations 3
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from hippo_rep.config import load_config
from hippo_rep.training.trainer import Trainer

#: torch_tem (github jbakermans/torch_tem) at default settings on a 5x5 world, measured on
#: this 2-core machine by the project before this benchmark existed, iterations/s.
TORCH_TEM_IT_PER_S = 0.25


def measure(kind: str, iterations: int, overrides: list[str]) -> dict:
    cfg = load_config("tem", [f"model.kind={kind}", "train.eval_every=0", *overrides])
    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(cfg, tmp, progress=False)
        tr.step(0)  # warm-up (allocations, first-call overheads)
        t0 = time.perf_counter()
        for it in range(1, iterations + 1):
            tr.step(it)
        dt = time.perf_counter() - t0
    chunks = -(-cfg.world.walk_steps // cfg.train.chunk_len) * iterations
    return {"kind": kind, "it_per_s": iterations / dt, "chunk_per_s": chunks / dt,
            "params": sum(p.numel() for p in tr.model.parameters())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=3, help="timed iterations per model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--torch-tem", type=float, default=TORCH_TEM_IT_PER_S,
                   help="torch_tem's 20-step iterations/s on this machine")
    p.add_argument("--set", action="append", default=[], help="extra config overrides")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    rows = [measure(k, a.iterations, [f"train.threads={a.threads}", *a.set])
            for k in ("tem", "temt")]
    tem = rows[0]
    cfg = load_config("tem")
    print(f"worlds {cfg.world.worlds}, walk {cfg.world.walk_steps}, chunk "
          f"{cfg.train.chunk_len}, batch {cfg.train.batch_size}, threads {a.threads}")
    print(f"{'model':10s} {'it/s':>8s} {'20-step chunks/s':>17s} {'x TEM':>7s} "
          f"{'x torch_tem':>12s}")
    for r in rows:
        print(f"{r['kind']:10s} {r['it_per_s']:8.3f} {r['chunk_per_s']:17.2f} "
              f"{r['chunk_per_s'] / tem['chunk_per_s']:7.2f} "
              f"{r['chunk_per_s'] / a.torch_tem:12.1f}")
    print(f"{'torch_tem':10s} {'':8s} {a.torch_tem:17.2f} {a.torch_tem / tem['chunk_per_s']:7.2f}"
          f" {1.0:12.1f}   (measured earlier on this machine; not run here)")


if __name__ == "__main__":
    main()
