"""The ``hippo-rep`` command line. Only this module prints; library errors become one line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hippo_rep import __version__

#: Default held-out environments and steps of ``hippo-rep evaluate``.
DEFAULT_EVAL_ENVS = 32
#: Seed of the held-out environments (a stream no training batch uses; see evaluate.eval_rng).
DEFAULT_EVAL_SEED = 0


def _errors():
    from hippo_rep.config import ConfigError
    from hippo_rep.training.checkpoint import CheckpointError
    from hippo_rep.training.trainer import TrainingError
    from hippo_rep.worlds import WorldError

    return (ConfigError, CheckpointError, TrainingError, WorldError, FileExistsError,
            FileNotFoundError)


def cmd_train(args) -> int:
    from hippo_rep.config import load_config, read_raw
    from hippo_rep.training.trainer import train

    out = Path(args.out)
    if args.resume:
        saved = out / "config.toml"
        if not saved.is_file():
            raise FileNotFoundError(f"--resume: {str(saved)!r} not found")
        cfg = load_config(saved, args.set)
    else:
        read_raw(args.config)  # a clear error for a missing file before anything is written
        cfg = load_config(args.config, args.set)
    if args.device:
        cfg = cfg.replace(train=_replace(cfg.train, device=args.device))
    t0 = time.perf_counter()
    try:
        ckpt = train(cfg, out, resume=args.resume, progress=not args.no_progress)
    except KeyboardInterrupt:
        print(f"interrupted: checkpoint saved in {out / 'checkpoint.pt'}; "
              f"continue with: hippo-rep train --out {out} --resume", file=sys.stderr)
        return 130
    print(f"trained in {time.perf_counter() - t0:.0f} s → {ckpt}")
    return 0


def _replace(dc, **kw):
    import dataclasses

    return dataclasses.replace(dc, **kw)


def cmd_evaluate(args) -> int:
    from hippo_rep.training.checkpoint import file_sha256
    from hippo_rep.training.evaluate import evaluate_checkpoint

    result = evaluate_checkpoint(args.checkpoint, n_envs=args.envs, world=args.world,
                                 n_steps=args.steps, seed=args.seed)
    result["meta"]["checkpoint_sha256"] = file_sha256(args.checkpoint)
    _print_eval(result)
    if args.json:
        _write_json(args.json, result)
        print(f"wrote {args.json}")
    return 0


def _write_json(path, data) -> None:
    from hippo_rep.training.checkpoint import atomic_write

    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(data, indent=2)))


def _print_eval(result: dict) -> None:
    from hippo_rep.training.evaluate import AGENTS, REPORTED

    meta = result["meta"]
    print(f"held-out: {meta['envs']} envs × {meta['steps']} steps of {meta['world']} "
          f"(seed {meta['seed']})")
    print(f"{'step type':22s}" + "".join(f"{a:>12s}" for a in AGENTS) + f"{'steps':>9s}")
    for k in REPORTED:
        vals = "".join(f"{result[a][k]:12.3f}" if result[a][k] is not None else f"{'-':>12s}"
                       for a in AGENTS)
        print(f"{k:22s}{vals}{result['counts'][k]:9d}")


def cmd_demo(args) -> int:
    """The main job: train the small preset, then evaluate it on held-out worlds."""
    out = Path(args.out)
    run = out / "run"
    targs = argparse.Namespace(config=args.config, set=args.set, out=str(run), resume=False,
                               device=None, no_progress=args.no_progress)
    if (run / "checkpoint.pt").exists():
        if not args.overwrite:
            raise FileExistsError(f"{str(run / 'checkpoint.pt')!r} exists; pass --overwrite "
                                  "to train again, or use another --out")
        import shutil

        shutil.rmtree(run)
    rc = cmd_train(targs)
    if rc:
        return rc
    eargs = argparse.Namespace(checkpoint=str(run / "checkpoint.pt"), envs=args.envs,
                               world=None, steps=None, seed=DEFAULT_EVAL_SEED,
                               json=str(out / "eval.json"))
    cmd_evaluate(eargs)
    print(f"artefacts: config {run / 'config.toml'}, metrics {run / 'metrics.csv'}, "
          f"checkpoint {run / 'checkpoint.pt'}, evaluation {out / 'eval.json'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hippo-rep", description=__doc__)
    p.add_argument("--version", action="version", version=f"hippo_rep {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train TEM-t (or the sinusoidal baseline)")
    t.add_argument("--config", default="small",
                   help="preset (tiny, small, paper) or a TOML file (default: small)")
    t.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value, e.g. --set train.lr=3e-4 (repeatable)")
    t.add_argument("--out", required=True, help="run folder (config.toml, metrics.csv, "
                                                "checkpoint.pt)")
    t.add_argument("--resume", action="store_true", help="continue the run in --out")
    t.add_argument("--device", help="cpu, cuda or auto (overrides train.device)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("evaluate", help="accuracy on held-out environments vs ideal agents")
    e.add_argument("checkpoint")
    e.add_argument("--envs", type=int, default=DEFAULT_EVAL_ENVS, help="held-out environments")
    e.add_argument("--world", help="world spec, e.g. square:8, square:12x9, hex:6, "
                                   "square:8:holes=3,4;4,4 (default: the training world)")
    e.add_argument("--steps", type=int, help="steps per walk (default: the training walk)")
    e.add_argument("--seed", type=int, default=DEFAULT_EVAL_SEED,
                   help="seed of the held-out environments")
    e.add_argument("--json", help="write the results to this JSON file")
    e.set_defaults(func=cmd_evaluate)

    d = sub.add_parser("demo", help="the main job on a small default: train → evaluate")
    d.add_argument("--out", default="demo", help="output folder (default: demo)")
    d.add_argument("--config", default="small", help="preset or TOML file (default: small)")
    d.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    d.add_argument("--envs", type=int, default=DEFAULT_EVAL_ENVS)
    d.add_argument("--overwrite", action="store_true", help="replace an earlier demo run")
    d.add_argument("--no-progress", action="store_true")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except _errors() as err:
        print(f"hippo-rep {args.command}: error: {err}", file=sys.stderr)
        return 2
    except ValueError as err:  # bad argument values reaching library checks
        print(f"hippo-rep {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
