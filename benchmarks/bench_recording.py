"""Benchmark: recording TEM-t activity to netCDF (in memory) and zarr (streamed).

Records ``--envs`` environments × ``--steps`` steps of ``--world`` and reports, for each
configuration measured in a fresh subprocess (so that peak RSS, ``ru_maxrss``, is its own):
wall-clock of the whole recording (checkpoint load, walks, forward pass, writing), walk steps
per second, peak RSS, the memory neurons recorded and the output size. Every process first
times a bare forward pass (no activity kept, nothing written) over the same walk, then the
recording, and prints the ratio. NetCDF and zarr run at ``--steps``, zarr also at each of
``--rss-steps`` to show how its peak RSS depends on the number of steps.

The model: the ``--preset`` model (default ``paper``) on ``--world``, with UNTRAINED weights
(seed 0), unless ``--model-checkpoint`` names a trained one. An untrained model writes more
memories than a trained one (its positional encodings do not come back to the same value at
a node), so the memory dim, and with it the model's own memory use, keeps growing with the
walk.

Usage::

    python benchmarks/bench_recording.py [--envs 16] [--steps 10000]
        [--rss-steps 2500 10000 40000] [--chunk 512] [--world square:11] [--threads 1]
        [--preset paper] [--model-checkpoint PATH]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def du_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def worker(args) -> None:
    """One configuration, in this (fresh) process; prints one JSON line.

    First the bare forward pass over the walk (timed; peak RSS read after it), then the
    recording of the same walk (timed end to end; peak RSS read again, which is then the
    peak of the whole process).
    """
    from hippo_rep.recording import Recorder, open_recording, record_to_file

    out = Path(args.out)
    kw = dict(n_envs=args.envs, n_steps=args.steps, world=args.world, seed=0,
              chunk=args.chunk, threads=args.threads)
    rec = Recorder(args.checkpoint, **kw)
    t0 = time.perf_counter()
    rec.forward_only()
    bare_s = time.perf_counter() - t0
    forward_rss = peak_rss_mb()
    del rec
    t0 = time.perf_counter()
    record_to_file(args.checkpoint, out, **kw)  # the same walk: same seed
    record_s = time.perf_counter() - t0
    result = {"format": out.suffix[1:], "steps": args.steps, "record_s": record_s,
              "bare_s": bare_s, "forward_rss_mb": forward_rss, "rss_mb": peak_rss_mb(),
              "file_mb": du_mb(out)}
    with open_recording(out) as ds:
        result["memory"] = ds.sizes["memory"]
        assert ds.attrs["n_steps"] == args.steps
    print(json.dumps(result), flush=True)


def run_worker(script: str, checkpoint: Path, out: Path, steps: int, args) -> dict:
    cmd = [sys.executable, script, "--worker", "--checkpoint", str(checkpoint), "--out",
           str(out), "--envs", str(args.envs), "--steps", str(steps), "--world", args.world,
           "--chunk", str(args.chunk), "--threads", str(args.threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"worker failed ({' '.join(cmd)}):\n{proc.stderr}")
    shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", type=int, default=16)
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--rss-steps", type=int, nargs="*", default=[2_500, 10_000, 40_000])
    p.add_argument("--chunk", type=int, default=512)
    p.add_argument("--world", default="square:11")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--preset", default="paper", help="config preset of the untrained model")
    p.add_argument("--model-checkpoint", help="record this checkpoint instead")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--checkpoint", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)

    from hippo_rep.config import load_config
    from hippo_rep.models.registry import build_model
    from hippo_rep.training.checkpoint import save_checkpoint
    from hippo_rep.worlds import parse_world

    w = parse_world(args.world)
    tmp = Path(tempfile.mkdtemp(prefix="bench_recording_"))
    if args.model_checkpoint:
        ckpt = Path(args.model_checkpoint)
        print(f"model: {ckpt}, recorded on {w.spec}")
    else:
        cfg = load_config(args.preset, [f"world.worlds={args.world}"])
        ckpt = tmp / "checkpoint.pt"
        save_checkpoint(ckpt, build_model(cfg.model, w.n_actions, cfg.world.n_obs, seed=0),
                        cfg, step=0)
        print(f"model: {args.preset!r} preset on {w.spec} (n_g={cfg.model.n_g}), UNTRAINED "
              "weights (seed 0)")
    print(f"recording: {args.envs} envs, chunk {args.chunk} steps, torch threads "
          f"{args.threads}; each row is a fresh process\n")
    script = str(Path(__file__).resolve())
    rows = []
    try:
        for fmt in ("nc", "zarr"):
            rows.append(run_worker(script, ckpt, tmp / f"rec.{fmt}", args.steps, args))
            _print_row(rows[-1], args.envs, header=len(rows) == 1)
        for steps in args.rss_steps:
            if steps == args.steps:
                continue
            rows.append(run_worker(script, ckpt, tmp / "rec.zarr", steps, args))
            _print_row(rows[-1], args.envs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\nrecording ÷ bare forward pass over the same walk, same process (goal ≤ 1.5):")
    for r in rows:
        print(f"  {r['format']:5s} {r['steps']:>7d} steps: record {r['record_s']:7.1f} s, "
              f"bare forward {r['bare_s']:7.1f} s, ratio {r['record_s'] / r['bare_s']:.2f}")
    zr = sorted((r for r in rows if r["format"] == "zarr"), key=lambda r: r["steps"])
    print("\nzarr peak RSS by steps (recording; bare forward pass alone; one chunk of "
          "memory_activity = envs × chunk × memory × 4 B):")
    for r in zr:
        act = args.envs * args.chunk * r["memory"] * 4 / 2**20
        print(f"  {r['steps']:>7d} steps: {r['rss_mb']:6.0f} MB; forward alone "
              f"{r['forward_rss_mb']:6.0f} MB; {r['memory']} memory neurons, "
              f"one chunk of activity {act:.0f} MB")


def _print_row(r: dict, envs: int, header: bool = False) -> None:
    if header:
        print(f"{'format':7s}{'steps':>8s}{'wall s':>9s}{'steps/s':>9s}{'env-steps/s':>13s}"
              f"{'peak RSS MB':>13s}{'memory':>8s}{'file MB':>9s}{'bare fwd s':>12s}"
              f"{'ratio':>7s}")
    print(f"{r['format']:7s}{r['steps']:8d}{r['record_s']:9.1f}{r['steps'] / r['record_s']:9.0f}"
          f"{envs * r['steps'] / r['record_s']:13.0f}{r['rss_mb']:13.0f}{r['memory']:8d}"
          f"{r['file_mb']:9.1f}{r['bare_s']:12.1f}{r['record_s'] / r['bare_s']:7.2f}",
          flush=True)


if __name__ == "__main__":
    main()
