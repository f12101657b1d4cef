"""Time and peak memory per token of full attention vs BSWA vs TransformerFAM against length.

Each (variant, length) runs in a fresh subprocess (one torch thread by default) so that its
peak resident memory can be read from ``getrusage``: the reported memory is the peak RSS
during the timed passes minus the RSS just before them (model built, a short warm-up done).
Time is the median of ``--repeats`` passes after one warm-up pass at that length. Full
attention uses ``scaled_dot_product_attention(is_causal=True)`` (PyTorch's fused CPU kernel,
which does not materialise the L×L matrix), BSWA/FAM the efficient scheme of
``hippo_rep.models.fam``. Lengths whose estimated time exceeds ``--max-seconds`` are skipped.

    python benchmarks/bench_fam_scaling.py                       # inference, 1k–64k
    python benchmarks/bench_fam_scaling.py --mode train --lengths 1024,4096,16384
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker(args) -> None:
    import torch

    from hippo_rep.models.fam import FAMConfig, build_fam_model

    torch.set_num_threads(args.threads)
    kw = dict(vocab_size=256, d_model=args.d_model, n_heads=args.heads, n_layers=args.layers,
              d_ff=4 * args.d_model, block_size=args.block, n_mem=args.mem)
    cfg = FAMConfig(variant=args.variant, n_fam=args.fam, **kw)
    model = build_fam_model(cfg, seed=0)
    x = torch.randint(0, 256, (1, args.length), generator=torch.Generator().manual_seed(0))

    def run():
        if args.mode == "train":
            model.zero_grad(set_to_none=True)
            model(x).logits.float().mean().backward()
        else:
            with torch.no_grad():
                model(x)

    with torch.no_grad():
        model(x[:, :min(args.length, 2 * args.block)])  # warm-up on a short input
    base = _rss_mb()
    times = []
    for _ in range(1 + args.repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB → MiB (Linux)
    print(json.dumps({"seconds": statistics.median(times[1:]), "peak_mb": max(0.0, peak - base)}))


def measure(args, variant: str, length: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", "--variant", variant, "--length", str(length)]
    for k in ("mode", "d_model", "heads", "layers", "block", "mem", "fam", "threads",
              "repeats"):
        cmd += [f"--{k.replace('_', '-')}", str(getattr(args, k))]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode:
        raise RuntimeError(f"{variant} at {length}: {res.stderr.strip()[-500:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", default="1024,4096,16384,65536")
    p.add_argument("--variants", default="full,bswa,fam")
    p.add_argument("--mode", choices=("infer", "train"), default="infer",
                   help="infer: forward without gradients; train: forward + backward")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--block", type=int, default=256, help="block size B (BSWA, FAM)")
    p.add_argument("--mem", type=int, default=1, help="memory segments M (BSWA, FAM)")
    p.add_argument("--fam", type=int, default=16, help="FAM slots F")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=2, help="timed passes after a warm-up")
    p.add_argument("--max-seconds", type=float, default=240.0,
                   help="skip a length whose extrapolated time per pass exceeds this")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--length", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    lengths = [int(v) for v in args.lengths.split(",")]
    variants = args.variants.split(",")
    print(f"mode {args.mode}; d={args.d_model}, {args.heads} heads, {args.layers} layers, "
          f"B={args.block}, M={args.mem}, F={args.fam}; batch 1; {args.threads} thread(s); "
          f"median of {args.repeats} after a warm-up", flush=True)
    rows = {}
    for v in variants:
        prev = None
        for L in lengths:
            if prev is not None:
                # full grows ~L² in time; the others ~L
                est = prev[1] * (L / prev[0]) ** (2 if v == "full" else 1) * (1 + args.repeats)
                if est > args.max_seconds * (1 + args.repeats):
                    print(f"  {v:5s} L={L:6d}: skipped (estimated {est / (1 + args.repeats):.0f}"
                          " s per pass)", flush=True)
                    continue
            r = measure(args, v, L)
            rows[(v, L)] = r
            prev = (L, r["seconds"])
            print(f"  {v:5s} L={L:6d}: {r['seconds']:8.3f} s/pass, peak +{r['peak_mb']:8.1f} MB",
                  flush=True)
    print(f"\n{'variant':8s}{'length':>8s}{'µs/token':>10s}{'KB/token':>10s}"
          f"{'time vs BSWA':>14s}{'mem vs BSWA':>13s}")
    for v in variants:
        for L in lengths:
            if (v, L) not in rows:
                print(f"{v:8s}{L:8d}{'skipped':>10s}")
                continue
            r = rows[(v, L)]
            b = rows.get(("bswa", L))
            dt = f"{100 * (r['seconds'] / b['seconds'] - 1):+13.1f}%" if b and v != "bswa" \
                else f"{'':>14s}"
            dm = f"{100 * (r['peak_mb'] / b['peak_mb'] - 1):+12.1f}%" \
                if b and v != "bswa" and b["peak_mb"] > 0 else ""
            print(f"{v:8s}{L:8d}{1e6 * r['seconds'] / L:10.2f}{1024 * r['peak_mb'] / L:10.2f}"
                  f"{dt}{dm}")


if __name__ == "__main__":
    main()
