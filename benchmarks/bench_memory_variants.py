"""Benchmark: per-step time and memory of TEM-t's memory variants as walks lengthen.

One trained checkpoint's weights run under ``model.memory`` = full, window, fam and hebbian
(:func:`hippo_rep.tasks.delay.as_variant`), each in a fresh subprocess so that its peak RSS
(``ru_maxrss``) is its own, over the same random walks of ``--envs`` environments ×
``--steps`` steps in chunks of ``--chunk`` (no gradients, memory carried across chunks). A
large world (default 40×40) keeps the walk finding new places, so the full memory keeps
growing. Printed: milliseconds per step in the first, middle and last chunk, the memories
written over the walk (the window variants read only those inside their window, but their
buffer keeps every one, so their RSS still grows slowly), and peak RSS; the last column is
the last chunk's time per step against the full memory's, in the same run.

Usage::

    python benchmarks/bench_memory_variants.py [--checkpoint data/temt_paper.pt]
        [--envs 8] [--steps 12000] [--chunk 500] [--world square:40]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

VARIANTS = ("full", "window", "fam", "hebbian")


def worker(args) -> None:
    import numpy as np
    import torch

    from hippo_rep.tasks.delay import as_variant
    from hippo_rep.training.checkpoint import load_checkpoint
    from hippo_rep.worlds import parse_world, sample_episodes

    torch.set_num_threads(1)
    model, cfg, _ = load_checkpoint(args.checkpoint)
    if args.variant != cfg.model.memory:
        model = as_variant(model, args.variant)
    ep = sample_episodes([parse_world(args.world)], args.envs, args.steps, cfg.world.n_obs,
                         np.random.default_rng(0))
    obs, act = torch.as_tensor(ep.observations), torch.as_tensor(ep.actions)
    state, times = None, []
    with torch.no_grad():
        for s in range(0, args.steps, args.chunk):
            t0 = time.perf_counter()
            _, state = model(obs[:, s:s + args.chunk], act[:, s:s + args.chunk], state)
            times.append((time.perf_counter() - t0) / obs[:, s:s + args.chunk].shape[1])
    print(json.dumps({"variant": args.variant, "ms_first": 1e3 * times[0],
                      "ms_mid": 1e3 * times[len(times) // 2], "ms_last": 1e3 * times[-1],
                      "memories": int(state.count.max()),
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default="data/temt_paper.pt")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=12_000)
    p.add_argument("--chunk", type=int, default=500)
    p.add_argument("--world", default="square:40")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--variant", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.variant:
        worker(args)
        return
    rows = []
    for v in args.variants.split(","):
        cmd = [sys.executable, __file__, "--variant", v, "--checkpoint", args.checkpoint,
               "--envs", str(args.envs), "--steps", str(args.steps), "--chunk",
               str(args.chunk), "--world", args.world]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"{v} failed:\n{proc.stderr}")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    full = next((r for r in rows if r["variant"] == "full"), rows[0])
    print(f"{args.envs} envs × {args.steps} steps of {args.world}, chunks of {args.chunk}, "
          f"1 thread, checkpoint {args.checkpoint}")
    print(f"{'variant':<8} {'ms/step first':>13} {'mid':>7} {'last':>7} {'last/first':>10} "
          f"{'written':>8} {'peak RSS MB':>11} {'last vs full':>12}")
    for r in rows:
        print(f"{r['variant']:<8} {r['ms_first']:>13.2f} {r['ms_mid']:>7.2f} "
              f"{r['ms_last']:>7.2f} {r['ms_last'] / r['ms_first']:>10.2f} "
              f"{r['memories']:>8d} {r['rss_mb']:>11.0f} "
              f"{r['ms_last'] / full['ms_last']:>12.2f}")


if __name__ == "__main__":
    main()
