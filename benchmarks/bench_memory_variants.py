"""Benchmark: per-step time and memory of TEM-t's memory variants against walk length D.

One trained checkpoint's weights run under ``model.memory`` = full, window, fam and hebbian
(:func:`hippo_rep.tasks.delay.as_variant`), each in a fresh subprocess so that its peak RSS
(``ru_maxrss``) is its own, over the same random walks of ``--envs`` environments up to the
largest D, in chunks of ``--chunk`` steps (no gradients, memory carried across chunks). A large
world (default 64×64) keeps the walk finding new places, so the full memory keeps growing, as
it does over the delay task's excursion of D steps.

At every D (the end of the chunk that ends at step D) it reports:

- ``ms/step``: wall time of that chunk per step, the fastest of ``--repeats`` runs of it from
  the same state (the machine is shared; the minimum is the least disturbed);
- ``keys/step``: what the query of step D attends over — the memories the variant's
  :meth:`~hippo_rep.models.memory.FullMemory.visible` lets it see plus the FAM slots (hebbian:
  0, it reads a fixed matrix instead);
- ``KB/step``: the memory state that step reads, per environment (float32: z(g) and g of every
  visible memory and the FAM slots' position and observation distribution; hebbian: its
  n_obs × d read-out and n_obs × d × d position memory);
- ``peak RSS``: of the whole subprocess (the window variants read only their window, but the
  buffer keeps every memory written, so their RSS still grows slowly).

Ratios are to ``full`` at the same D, in the same run. ``--json`` writes the rows, the input of
the ``memory_delay`` figure's cost panel (``hippo-rep figures --delay-cost``).

Usage::

    python benchmarks/bench_memory_variants.py [--checkpoint data/temt_paper.pt]
        [--envs 8] [--delays 256,512,1024,2048,4096] [--chunk 128] [--repeats 3]
        [--world square:64] [--fam-slots 256 --fam-update hard]
        [--json bench_memory_variants.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time

VARIANTS = ("full", "window", "fam", "hebbian")
#: Bytes per stored float (the model runs in float32).
FLOAT_BYTES = 4


def worker(args) -> None:
    import numpy as np
    import torch

    from hippo_rep.tasks.delay import as_variant
    from hippo_rep.training.checkpoint import load_checkpoint
    from hippo_rep.worlds import parse_world, sample_episodes

    torch.set_num_threads(1)
    delays = [int(d) for d in args.delays.split(",")]
    model, cfg, _ = load_checkpoint(args.checkpoint)
    if args.variant != cfg.model.memory:
        over = {"fam_slots": args.fam_slots, "fam_update": args.fam_update} \
            if args.variant == "fam" else {}
        model = as_variant(model, args.variant, **{k: v for k, v in over.items() if v})
    d, n_obs = cfg.model.n_g, cfg.world.n_obs
    ep = sample_episodes([parse_world(args.world)], args.envs, max(delays), n_obs,
                         np.random.default_rng(0))
    obs, act = torch.as_tensor(ep.observations), torch.as_tensor(ep.actions)
    state, row = None, {"variant": args.variant, "delay": [], "ms_per_step": [],
                        "keys_per_step": [], "kb_per_step": [], "memories_written": []}
    with torch.no_grad():
        for s in range(0, max(delays), args.chunk):
            times = []  # forward leaves its input state untouched: a chunk can be rerun
            for _ in range(args.repeats if s + args.chunk in delays else 1):
                t0 = time.perf_counter()
                _, new = model(obs[:, s:s + args.chunk], act[:, s:s + args.chunk], state)
                times.append(time.perf_counter() - t0)
            state = new
            if state.t not in delays:
                continue
            ms = 1e3 * min(times) / args.chunk
            if state.hebb_H is not None:
                keys, floats = 0, n_obs * d + n_obs * d * d
            else:  # what the query of step D (the next one) sees: all memories are older
                slots = torch.arange(state.capacity) < state.count[:, None]
                seen = slots & model.memory.visible(state.t, state.T)
                mem, n_slots = float(seen.sum(1).float().mean()), model.memory.n_slots
                keys, floats = mem + n_slots, mem * 2 * d + n_slots * (d + n_obs)
            row["delay"].append(state.t)
            row["ms_per_step"].append(ms)
            row["keys_per_step"].append(keys)
            row["kb_per_step"].append(floats * FLOAT_BYTES / 1024)
            row["memories_written"].append(float(state.count.float().mean()))
    row["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(row))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default="data/temt_paper.pt")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--delays", default="256,512,1024,2048,4096",
                   help="walk lengths D at which to report (multiples of --chunk)")
    p.add_argument("--chunk", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3, help="timed runs of each reported chunk")
    p.add_argument("--world", default="square:64")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--fam-slots", type=int, help="fam: slots (default: the checkpoint's)")
    p.add_argument("--fam-update", choices=("soft", "hard", "keep"),
                   help="fam: slot update (default: the checkpoint's)")
    p.add_argument("--json", help="also write the rows to this JSON file")
    p.add_argument("--variant", help=argparse.SUPPRESS)
    args = p.parse_args()
    delays = [int(d) for d in args.delays.split(",")]
    if any(d % args.chunk for d in delays):
        raise SystemExit(f"--delays {args.delays}: every D must be a multiple of --chunk "
                         f"{args.chunk}")
    if args.variant:
        worker(args)
        return
    rows = []
    for v in args.variants.split(","):
        cmd = [sys.executable, __file__, "--variant", v, "--checkpoint", args.checkpoint,
               "--envs", str(args.envs), "--delays", args.delays, "--chunk",
               str(args.chunk), "--world", args.world, "--repeats", str(args.repeats)] + \
            [f"--{k.replace('_', '-')}={getattr(args, k)}" for k in ("fam_slots", "fam_update")
             if getattr(args, k)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"{v} failed:\n{proc.stderr}")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(f"{v}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    full = next((r for r in rows if r["variant"] == "full"), rows[0])
    print(f"{args.envs} envs, walks of up to {max(delays)} steps on {args.world}, chunks of "
          f"{args.chunk} (best of {args.repeats}), 1 thread, checkpoint {args.checkpoint}; "
          f"ratios to "
          f"{full['variant']} at the same D")
    for key, what, fmt in (("ms_per_step", "ms per step", "{:>7.2f}"),
                           ("keys_per_step", "keys attended per step", "{:>7.0f}"),
                           ("kb_per_step", "KB of state read per step per env", "{:>7.1f}")):
        print(f"\n{what}" + "".join(f"{'D=' + str(d):>16}" for d in delays))
        for r in rows:
            cells = [fmt.format(x) + (f" ({x / f:4.2f}×)" if f else " (  - )")
                     for x, f in zip(r[key], full[key], strict=True)]
            print(f"{r['variant']:<{len(what)}}" + "".join(f"{c:>16}" for c in cells))
    print("\npeak RSS MB: " + ", ".join(f"{r['variant']} {r['rss_mb']:.0f}" for r in rows))
    if args.json:
        from hippo_rep.fileio import write_json

        write_json(args.json, {"meta": {**{k: getattr(args, k) for k in (
            "checkpoint", "envs", "chunk", "world", "repeats", "fam_slots", "fam_update")},
            "threads": 1,
            "machine": platform.processor() or platform.machine()}, "rows": rows})


if __name__ == "__main__":
    main()
