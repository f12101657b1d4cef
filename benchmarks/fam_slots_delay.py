"""Long-delay loop closure of FAM TEM-t against the number of slots and the slot update.

One trained checkpoint's weights run as ``model.memory = "fam"`` with ``fam_slots`` = F and
``fam_update`` = soft (TransformerFAM's attention-weighted mix) or hard (each slot copies the
(g, x) conjunction it attends to most) or keep (hard, plus a keep logit on each slot's score
for itself; ``--keep-logits E,F`` sets it by hand to E for an empty slot and F for a filled
one, else the checkpoint's or 0), beside ``full`` and ``window`` on the same walks
(:func:`hippo_rep.tasks.delay.delay_accuracy`; the slots are whatever the checkpoint has, or
freshly initialised for a ``full`` checkpoint). Printed: accuracy on the first return visits home
per excursion length D, one row per (variant, walk seed), and the memory state a step reads per
environment (window memories at most ``(memory_blocks + 1) * memory_block`` plus the slots).

Usage::

    python benchmarks/fam_slots_delay.py [--checkpoint data/temt_paper.pt]
        [--slots 8,32,128,256] [--updates soft,hard] [--delays 64,128,256,512] [--seeds 0]
        [--envs 32] [--world square:10] [--variants full,window] [--keep-logits E,F]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import time

import torch

from hippo_rep.fileio import write_json
from hippo_rep.models.memory import set_keep_logits
from hippo_rep.tasks.delay import DEFAULT_WORLD, as_variant, delay_accuracy
from hippo_rep.training.checkpoint import load_checkpoint

#: Bytes per stored float (the model runs in float32).
FLOAT_BYTES = 4


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default="data/temt_paper.pt")
    p.add_argument("--slots", default="8,32,128,256")
    p.add_argument("--updates", default="soft,hard")
    p.add_argument("--delays", default="64,128,256,512")
    p.add_argument("--seeds", default="0", help="walk seeds")
    p.add_argument("--envs", type=int, default=32)
    p.add_argument("--world", default=DEFAULT_WORLD, help="world of the walks")
    p.add_argument("--variants", default="full,window", help="baselines run beside fam")
    p.add_argument("--keep-logits", help="E,F: keep logit of an empty / a filled keep slot")
    p.add_argument("--json")
    args = p.parse_args()
    torch.set_num_threads(1)
    model, cfg, _ = load_checkpoint(args.checkpoint)
    delays = [int(d) for d in args.delays.split(",")]
    mc, n_obs = cfg.model, cfg.world.n_obs
    window_kb = (mc.memory_blocks + 1) * mc.memory_block * 2 * mc.n_g * FLOAT_BYTES / 1024
    variants = [(v, {}) for v in args.variants.split(",") if v] + [
        ("fam", {"fam_slots": int(f), "fam_update": u})
        for u in args.updates.split(",") for f in args.slots.split(",")]
    print(f"{args.checkpoint}, {args.world}, {args.envs} walks per D, 1 thread; window "
          f"{mc.memory_blocks * mc.memory_block}-{(mc.memory_blocks + 1) * mc.memory_block} "
          f"steps (≤ {window_kb:.0f} KB per env)")
    print(f"{'variant':<16} {'seed':>4} " + "".join(f"{'D=' + str(d):>8}" for d in delays)
          + f" {'KB/step':>8} {'s':>5}")
    rows = []
    for name, over in variants:
        m = model if name == mc.memory and not over else as_variant(model, name, **over)
        label = name + (f" {over['fam_update']} F={over['fam_slots']}" if over else "")
        if over.get("fam_update") == "keep" and args.keep_logits:
            set_keep_logits(m, *(float(x) for x in args.keep_logits.split(",")))
            over = {**over, "keep_logits": args.keep_logits}
        kb = ("grows" if name == "full" else
              f"{window_kb + over.get('fam_slots', 0) * (mc.n_g + n_obs) * FLOAT_BYTES / 1024:.0f}")
        for seed in (int(s) for s in args.seeds.split(",")):
            t0 = time.perf_counter()
            acc = delay_accuracy(m, delays, args.envs, args.world, n_obs, seed).accuracy
            rows.append({"variant": name, **over, "seed": seed, "delay": delays,
                         "accuracy": [float(a) for a in acc.values]})
            print(f"{label:<16} {seed:>4} " + "".join(f"{a:>8.3f}" for a in acc.values)
                  + f" {kb:>8} {time.perf_counter() - t0:>5.0f}", flush=True)
    if args.json:
        write_json(args.json, {"checkpoint": args.checkpoint, "envs": args.envs,
                               "world": args.world, "rows": rows})


if __name__ == "__main__":
    main()
