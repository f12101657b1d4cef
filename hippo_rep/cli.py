"""The ``hippo-rep`` command line. Only this module prints; library errors become one line."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Each command imports the modules it runs, so that `hippo-rep --help` and light commands
# start without torch, xarray or dask.
from hippo_rep import TORCH_INSTALL, __version__
from hippo_rep import defaults as D
from hippo_rep import tasks as T  # the torch-free names (tasks.delay and .passkey need torch)
from hippo_rep.analysis.methods import DEFAULT_GRID_METHOD, GRID_METHODS, grid_methods_help
from hippo_rep.fileio import OutputError, check_output_path, write_json

#: Longest error line the CLI prints, in characters (values quoted from files are cut to
#: ``fileio.MAX_QUOTE`` already; this bounds the whole line).
MAX_ERROR_LINE = 1000


#: The one line of a command that needs torch where it is not installed (the analysis and
#: figure commands do not).
MISSING_TORCH = ("this command needs PyTorch (the \"train\" extra), which is not installed: "
                 f"{TORCH_INSTALL}; analyse, figures, export-nwb, remap-sessions and controls "
                 "run without it")


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, like every other error of the CLI."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())[:MAX_ERROR_LINE]}\n")


def _counts(args, *checks) -> None:
    """Each ``(dest, cap[, low])``: the integer option ``--dest`` of ``args`` within [low
    (default 1), cap] (None passes: the default applies), checked in order."""
    for dest, cap, *low in checks:
        value, low = getattr(args, dest), low[0] if low else 1
        if value is not None and (value < low or (cap is not None and value > cap)):
            top = f" and ≤ {cap}" if cap is not None else ""
            raise OutputError(f"--{dest.replace('_', '-')} must be ≥ {low}{top}; got {value}")


def _world_arg(world):
    if world is not None and not world.strip():
        raise OutputError("--world is empty; give a world spec such as square:8, or leave it "
                          "out for the training world")
    return world


def _report(stage: str, out, result, t0: float | None = None) -> None:
    """Print what ``stage`` says when done (:func:`~hippo_rep.pipeline.stages.stage_report`),
    timed from ``t0`` (:func:`time.perf_counter`)."""
    from hippo_rep.pipeline import stage_report

    print(stage_report(stage, out, result, None if t0 is None else time.perf_counter() - t0))


def _int_list(text: str, flag: str) -> list[int]:
    from hippo_rep.tasks.passkey import PassKeyError

    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise PassKeyError(f"{flag} must be comma-separated integers; got {text!r}") from None
    if not vals:
        raise PassKeyError(f"{flag} is empty")
    return vals


# ------------------------------------------------------------------ commands as data
#: name → (help, arguments, function), in the order ``hippo-rep --help`` lists them; a name
#: "GROUP SUB" is a subcommand of GROUP (:data:`GROUPS` gives the group's help).
COMMANDS: dict[str, tuple[str, tuple, object]] = {}
#: Commands that only hold subcommands: name → help.
GROUPS = {"passkey": "TransformerFAM PassKey retrieval: train, eval, sweep"}


def command(name: str, help: str, *arguments):
    """Register the decorated ``fn(args) -> exit status`` as the command ``name``, its
    ``arguments`` made by :func:`_arg` (or :class:`_Group`), added in order."""
    def register(fn):
        COMMANDS[name] = (help, arguments, fn)
        return fn
    return register


def _arg(*flags, **kw) -> tuple:
    """One ``add_argument(*flags, **kw)``, as data."""
    return flags, kw


@dataclass(frozen=True)
class _Group:
    """Arguments in an argument group titled ``title``, or mutually exclusive (no title)."""

    title: str | None
    arguments: tuple


def _flag(flag: str, help: str | None = None) -> tuple:
    return _arg(flag, action="store_true", help=help)


def _set(help: str | None = None) -> tuple:
    return _arg("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help=help)


def _out(help: str) -> tuple:
    return _arg("--out", required=True, help=help)


def _cluster(purpose: str) -> _Group:
    """``--scheduler ADDRESS | --workers N``, shared by analyse, sweep and passkey sweep."""
    return _Group(None, (
        _arg("--scheduler", metavar="ADDRESS",
             help=f"dask.distributed scheduler {purpose}, e.g. tcp://host:8786"),
        _arg("--workers", type=int, metavar="N",
             help="start a local dask cluster of N single-threaded workers")))


def _session_options(shifted: str) -> tuple:
    """The rate-map and shuffle options of sessions (``--bin-size`` ... ``--min-shift``);
    ``shifted`` names what the shuffles shift circularly."""
    return (_arg("--bin-size", type=float, default=None, metavar="CM",
                 help=f"rate-map bin side in cm (default: {D.SESSION_BIN_SIZE_CM:g})"),
            _arg("--smooth", type=float, default=None, metavar="CM",
                 help="Gaussian smoothing sigma in cm, BNT-style; 0 = none (default: "
                      f"{D.SESSION_SMOOTH_CM:g})"),
            _arg("--min-speed", type=float, default=None, metavar="CM_S",
                 help="drop tracking samples slower than this, cm/s (default: "
                      f"{D.SESSION_MIN_SPEED_CM_S:g})"),
            _arg("--min-shift", type=float, default=None, metavar="S",
                 help=f"smallest circular shift of {shifted}, s "
                      f"(default: {D.SESSION_MIN_SHIFT_S:g})"))


_CHECKPOINT = _arg("checkpoint")
_OVERWRITE = _flag("--overwrite", "replace an existing output")
_NO_PROGRESS = _flag("--no-progress", "no progress bar")
_THREADS = _arg("--threads", type=int, default=T.PASSKEY_DEFAULT_THREADS,
                help="torch CPU threads; a rerun with the same count is bit-identical "
                     f"(default: {T.PASSKEY_DEFAULT_THREADS})")
_FILLERS = ",".join(map(str, T.PASSKEY_DEFAULT_FILLERS))


def _checked_out(check, path, overwrite: bool, inputs=(), suffix: str | None = None) -> Path:
    """``--out`` of a command writing one file: its ``suffix`` (where one is required), the
    writer's own ``check(path, overwrite)`` if it has one (refused early, before loading
    anything), then as any output (:func:`check_output_path`)."""
    path = Path(path)
    if suffix is not None and path.suffix.lower() != suffix:
        raise OutputError(f"--out {str(path)!r} must end in {suffix}")
    if check is not None:
        check(path, overwrite)
    return check_output_path(path, "--out", inputs=inputs,
                             overwrite=None if check is not None else overwrite)


class _Interrupted(Exception):
    """Ctrl-C in a command that says what it leaves behind (:func:`main` prints it)."""


@contextlib.contextmanager
def _on_interrupt(say):
    """Turn Ctrl-C inside the block into :class:`_Interrupted` with the line ``say()``."""
    try:
        yield
    except KeyboardInterrupt:
        raise _Interrupted(say()) from None


@command("train", "train TEM-t (or the sinusoidal baseline)",
         _arg("--config", help="preset (tiny, small, paper) or a TOML file (default: small)"),
         _set("override a config value, e.g. --set train.lr=3e-4 (repeatable)"),
         _out("run folder (config.toml, metrics.csv, checkpoint.pt)"),
         _flag("--resume", "continue the run in --out"),
         _arg("--continue-from", metavar="CHECKPOINT",
              help="continue another run in a new --out from its checkpoint's weights, "
                   "config, iteration and schedules (also a weights-only copy such as "
                   "data/tem_8x8.pt; Adam's moments restart)"),
         _arg("--stop-at", type=int, metavar="N",
              help="stop after iteration N (the schedule still runs to train.iterations); "
                   "--resume continues"),
         _arg("--device", help="cpu, cuda or auto (overrides train.device)"),
         _NO_PROGRESS)
def cmd_train(args) -> int:
    from hippo_rep.config import load_config
    from hippo_rep.pipeline import train
    from hippo_rep.run_files import CHECKPOINT_FILE, CONFIG_FILE
    from hippo_rep.training.trainer import continue_config

    out = check_output_path(args.out, "--out", folder=True)
    _counts(args, ("stop_at", None, 0))
    if args.continue_from is not None and (args.resume or args.config is not None):
        raise OutputError("--continue-from takes the run's config from the checkpoint: give "
                          "it without --resume or --config")
    if args.resume:
        saved = out / CONFIG_FILE
        if not saved.is_file():
            raise FileNotFoundError(f"--resume: {str(saved)!r} not found")
        cfg = load_config(saved, args.set)
    elif args.continue_from is not None:
        cfg = continue_config(args.continue_from, args.set)
    else:
        cfg = load_config(args.config or "small", args.set)
    if args.device is not None:  # checked as train.device
        cfg = cfg.replace(train=cfg.train.replace(device=args.device))
    t0 = time.perf_counter()
    with _on_interrupt(lambda: f"interrupted: checkpoint saved in {out / CHECKPOINT_FILE}; "
                               f"continue with: hippo-rep train --out {out} --resume"):
        train(cfg, out, resume=args.resume, progress=not args.no_progress, stop_at=args.stop_at)
    _report("train", out / CHECKPOINT_FILE, None, t0)
    return 0


@command("evaluate", "accuracy on held-out environments vs ideal agents",
         _CHECKPOINT,
         _arg("--envs", type=int, default=D.EVAL_ENVS, help="held-out environments"),
         _arg("--world", help="world spec, e.g. square:8, square:12x9, hex:6, "
                              "square:8:holes=3,4;4,4 (default: the training world)"),
         _arg("--steps", type=int, help="steps per walk (default: the training walk)"),
         _arg("--seed", type=int, default=D.EVAL_SEED, help="seed of the held-out environments"),
         _arg("--json", help="write the results to this JSON file"),
         _flag("--overwrite", "replace an existing --json file"))
def cmd_evaluate(args) -> int:
    from hippo_rep.config import MAX_BATCH, MAX_WALK_STEPS
    from hippo_rep.pipeline import evaluate
    from hippo_rep.training.evaluate import evaluation_text

    _counts(args, ("envs", MAX_BATCH), ("steps", MAX_WALK_STEPS), ("seed", None, 0))
    _world_arg(args.world)
    if args.json:
        check_output_path(args.json, "--json", inputs=[args.checkpoint], overwrite=args.overwrite)
    result = evaluate(args.checkpoint, args.json or None, envs=args.envs, world=args.world,
                      steps=args.steps, seed=args.seed)
    print(evaluation_text(result))
    if args.json:
        print(f"wrote {args.json}")
    return 0


@command("calibrate", "copy a checkpoint with add-if-novel's write threshold calibrated "
                      "between revisits and new places",
         _CHECKPOINT,
         _out("the calibrated checkpoint (a new file)"),
         _arg("--envs", type=int, help="calibration environments of the training worlds "
                                       "(default: calibrate.CALIBRATION_ENVS, 16)"),
         _arg("--steps", type=int, help="steps per walk (default: "
                                        "calibrate.CALIBRATION_STEPS, 1,500)"),
         _arg("--seed", type=int, default=0, help="seed of the calibration walks"),
         _flag("--overwrite", "replace an existing --out"))
def cmd_calibrate(args) -> int:
    from hippo_rep.config import MAX_BATCH, MAX_WALK_STEPS
    from hippo_rep.training.calibrate import (
        CALIBRATION_ENVS,
        CALIBRATION_STEPS,
        calibrate_checkpoint,
    )

    args.envs = CALIBRATION_ENVS if args.envs is None else args.envs
    args.steps = CALIBRATION_STEPS if args.steps is None else args.steps
    _counts(args, ("envs", MAX_BATCH), ("steps", MAX_WALK_STEPS), ("seed", None, 0))
    check_output_path(args.out, "--out", inputs=[args.checkpoint], overwrite=args.overwrite)
    rep = calibrate_checkpoint(args.checkpoint, args.out, args.envs, args.steps, args.seed)
    _report("calibrate", args.out, rep)
    return 0


@command("record", "record g and memory-neuron activity (TEM: g and p) into .nc or .zarr",
         _CHECKPOINT,
         _out("output FILE.nc (netCDF, built in memory) or FILE.zarr (streamed)"),
         _arg("--envs", type=int, default=D.RECORD_ENVS,
              help=f"environments, one walk each (default: {D.RECORD_ENVS})"),
         _arg("--steps", type=int, help="steps per walk (default: the training walk)"),
         _arg("--world", help="world spec, e.g. square:11, hex:6 (default: the training "
                              "world); its action set must be the checkpoint's"),
         _arg("--seed", type=int, default=0, help="seed of the environments (default: 0)"),
         _flag("--same-observations", "every environment gets the same observations (one "
                                      "environment revisited, for stability); default: new "
                                      "ones each (remapping)"),
         _OVERWRITE,
         _arg("--chunk", type=int, default=D.RECORD_CHUNK,
              help="steps per forward chunk and per zarr chunk along time "
                   "(default: %(default)s)"))
def cmd_record(args) -> int:
    from hippo_rep.config import MAX_BATCH, MAX_WALK_STEPS
    from hippo_rep.recording import check_output, open_recording, record_to_file

    out = _checked_out(check_output, args.out, args.overwrite, [args.checkpoint])
    _counts(args, ("envs", MAX_BATCH), ("steps", MAX_WALK_STEPS), ("chunk", MAX_WALK_STEPS),
            ("seed", None, 0))
    _world_arg(args.world)

    def held() -> str:
        if out.suffix.lower() == ".zarr" and out.exists():
            try:
                with open_recording(out) as ds:
                    return f"interrupted: {str(out)!r} holds the first {ds.attrs['n_steps']} steps"
            except (ValueError, OSError):
                pass
        return "interrupted: no file was written"

    t0 = time.perf_counter()
    with _on_interrupt(held):
        record_to_file(args.checkpoint, out, overwrite=args.overwrite, n_envs=args.envs,
                       n_steps=args.steps, world=args.world, seed=args.seed,
                       same_observations=args.same_observations, chunk=args.chunk)
    _report("record", out, None, t0)
    return 0


@command("analyse", "rate maps, grid/place scores, shuffles, remapping and decoding of a "
                    "recording (or of your own session: NWB) → one analysis dataset",
         _arg("recording", help="a recording (.nc or .zarr) from hippo-rep record, or a "
                                "session: SESSION.nwb (Position + Units) or a session .nc"),
         _out("output ANALYSIS.nc or ANALYSIS.zarr"),
         _arg("--shuffles", type=int, default=D.N_SHUFFLES,
              help="circular-shift shuffles per environment for the nulls "
                   "(default: %(default)s)"),
         _arg("--seed", type=int, default=0, help="seed of the shuffles (default: 0)"),
         _arg("--populations", default=None, metavar="NAME[,NAME...]",
              help="populations to analyse, comma-separated, e.g. g,g_pi (default: g, "
                   "g_pi and memory_activity where recorded, or every population of a "
                   "session)"),
         _arg("--grid-method", choices=list(GRID_METHODS), default=DEFAULT_GRID_METHOD,
              help=f"grid-score family, one of the registered methods "
                   f"({grid_methods_help()}; default: %(default)s)"),
         _cluster("to spread units over"),
         _OVERWRITE,
         _NO_PROGRESS,
         _Group("sessions (.nwb or session .nc) only",
                _session_options("the spike trains in the shuffles")))
def cmd_analyse(args) -> int:
    from hippo_rep.analysis.analysis_files import check_output
    from hippo_rep.cluster import dask_client
    from hippo_rep.pipeline import analyse

    out = _checked_out(check_output, args.out, args.overwrite, [args.recording])
    _counts(args, ("shuffles", None), ("seed", None, 0))
    populations = None
    if args.populations is not None:
        populations = [p.strip() for p in args.populations.split(",") if p.strip()]
        if not populations:
            raise OutputError(f"--populations {args.populations!r} names no population")
    t0 = time.perf_counter()
    with dask_client(scheduler=args.scheduler, workers=args.workers):
        result = analyse(args.recording, out, shuffles=args.shuffles, seed=args.seed,
                         variables=populations, grid_method=args.grid_method,
                         overwrite=args.overwrite, bin_size_cm=args.bin_size,
                         smooth_cm=args.smooth, min_speed_cm_s=args.min_speed,
                         min_shift_s=args.min_shift, progress=not args.no_progress)
    _report("analyse", out, result, t0)
    return 0


@command("remap-sessions", "which of the same cells remapped between two sessions (NWB or "
                           "session .nc) → one .nc",
         _arg("a", help="session A: SESSION.nwb (Position + Units) or a session .nc"),
         _arg("b", help="session B, the same cells (matched by population and cell id)"),
         _out("output REMAPPING.nc"),
         _arg("--shuffles", type=int, default=D.N_SHUFFLES,
              help="circular shifts of B's spike trains in the null (default: %(default)s)"),
         _arg("--seed", type=int, default=0, help="seed of the shifts (default: 0)"),
         _flag("--common-cells", "compare the cells in both sessions (default: cells in only "
                                 "one session are an error)"),
         _OVERWRITE,
         *_session_options("B's spike trains"))
def cmd_remap_sessions(args) -> int:
    from hippo_rep.analysis.nwb import open_any_session
    from hippo_rep.analysis.session_remapping import (
        describe_session_remapping,
        session_remapping,
        write_session_remapping,
    )

    out = Path(args.out)
    if out.suffix.lower() != ".nc":
        raise OutputError(f"--out {str(out)!r} must end in .nc")
    check_output_path(out, "--out", inputs=[args.a, args.b], overwrite=args.overwrite)
    _counts(args, ("shuffles", None), ("seed", None, 0))
    options = {k: v for k, v in (("bin_size_cm", args.bin_size), ("smooth_cm", args.smooth),
                                 ("min_speed_cm_s", args.min_speed),
                                 ("min_shift_s", args.min_shift)) if v is not None}
    t0 = time.perf_counter()
    # each session read and checked once, by its reader (errors name the file)
    result = session_remapping(open_any_session(args.a), open_any_session(args.b),
                               shuffles=args.shuffles, rng=args.seed,
                               common_cells=args.common_cells, sessions_checked=True, **options)
    write_session_remapping(result, out, overwrite=args.overwrite)
    print(describe_session_remapping(result))
    print(f"session remapping → {out} ({time.perf_counter() - t0:.0f} s)")
    return 0


@command("export-nwb", "a session (.nc) or one environment of a model recording (.nc or "
                       ".zarr) → an NWB file",
         _arg("input", help="a session .nc (write_session) or a recording (.nc or .zarr) "
                            "from hippo-rep record"),
         _out("output FILE.nwb (written atomically)"),
         _arg("--env", type=int, default=None,
              help="recordings: which environment (position along env) to write (default: 0)"),
         _arg("--step-duration", type=float, default=None, metavar="S",
              help="recordings: seconds per step of the walk (default: "
                   f"{D.EXPORT_STEP_DURATION_S:g})"),
         _OVERWRITE)
def cmd_export_nwb(args) -> int:
    from hippo_rep.analysis.inputs import export_nwb

    out = _checked_out(None, args.out, args.overwrite, [args.input], ".nwb")
    t0 = time.perf_counter()
    what = export_nwb(args.input, out, env=args.env, step_duration=args.step_duration,
                      overwrite=args.overwrite)
    print(f"export-nwb: {what} → {out} ({time.perf_counter() - t0:.1f} s)")
    return 0


def _passkey_threads(args) -> None:
    """Pin torch's CPU threads (default 1): a rerun with the same count is bit-identical."""
    import torch

    _counts(args, ("threads", None))
    torch.set_num_threads(args.threads)


@command("passkey train", "train one PassKey model",
         _out("run folder (checkpoint.pt, metrics.csv)"),
         _arg("--variant", default="fam_f4",
              help=f"{', '.join(T.PASSKEY_VARIANTS)}, or a bare variant (default: fam_f4)"),
         _set("override (wins over the variant's presets; refused where it contradicts the "
              "variant's name or does nothing for it), e.g. --set train.steps=400 --set "
              "model.n_mem=2"),
         _THREADS,
         _flag("--overwrite", "replace a checkpoint in --out"),
         _flag("--no-progress", "no per-step log"))
def cmd_passkey_train(args) -> int:
    from hippo_rep.tasks.passkey import PassKeyConfig, train

    out = check_output_path(args.out, "--out", folder=True)
    cfg = PassKeyConfig().with_overrides(args.set, variant=args.variant)
    if (out / "checkpoint.pt").exists() and not args.overwrite:
        raise FileExistsError(f"{str(out / 'checkpoint.pt')!r} exists; pass --overwrite or "
                              "use another --out")
    _passkey_threads(args)

    def log(row):
        print(f"step {row['step']:5d}  loss {row['loss']:.3f}  accuracy {row['accuracy']:.3f}"
              f"  {row['seconds']:.0f} s", flush=True)

    t0 = time.perf_counter()
    train(cfg, out, log=None if args.no_progress else log)
    print(f"trained {cfg.model.label} in {time.perf_counter() - t0:.0f} s → "
          f"{out / 'checkpoint.pt'}")
    return 0


@command("passkey eval", "accuracy against filler length of a checkpoint",
         _CHECKPOINT,
         _arg("--fillers", default=_FILLERS, help=f"filler lengths (default: {_FILLERS})"),
         _arg("--samples", type=int, default=T.PASSKEY_DEFAULT_PROMPTS,
              help=f"prompts per length (default: {T.PASSKEY_DEFAULT_PROMPTS}: 95%% interval "
                   "±0.03 at accuracy 0.9)"),
         _arg("--seed", type=int, default=0, help="seed of the prompts"),
         _THREADS,
         _arg("--json", help="write the results to this JSON file"),
         _flag("--overwrite", "replace an existing --json file"))
def cmd_passkey_eval(args) -> int:
    from hippo_rep.tasks.passkey import CHANCE, accuracy_text, evaluate_checkpoint

    fillers = _int_list(args.fillers, "--fillers")
    _counts(args, ("samples", None))
    if args.json:
        check_output_path(args.json, "--json", inputs=[args.checkpoint], overwrite=args.overwrite)
    _passkey_threads(args)
    res = evaluate_checkpoint(args.checkpoint, fillers, n_samples=args.samples, seed=args.seed)
    print(f"{args.checkpoint}: {res['label']}, {args.samples} prompts per length (seed "
          f"{args.seed}), chance {CHANCE:.3f}")
    print(accuracy_text({int(f): a for f, a in res["accuracy"].items()}, args.samples))
    if args.json:
        write_json(args.json, res)
        print(f"wrote {args.json}")
    return 0


@command("passkey sweep", "train variants × seeds, table of accuracy vs filler",
         _out("folder for runs/, sweep.csv, sweep.json"),
         _arg("--variants", default=",".join(T.PASSKEY_DEFAULT_SWEEP),
              help=f"comma-separated (default: {','.join(T.PASSKEY_DEFAULT_SWEEP)})"),
         _arg("--seeds", default="0,1", help="comma-separated seeds (default: 0,1)"),
         _arg("--fillers", default=_FILLERS, help=f"filler lengths (default: {_FILLERS})"),
         _arg("--samples", type=int, default=T.PASSKEY_DEFAULT_PROMPTS,
              help=f"prompts per length and seed (default: {T.PASSKEY_DEFAULT_PROMPTS})"),
         _set("override for every run: wins over the variants' presets; refused where it "
              "contradicts a variant's name or does nothing for it"),
         _arg("--figure", help="also save the passkey figure (as hippo-rep figures --passkey "
                               "draws it) to this .pdf, .svg or .png"),
         _THREADS,
         _flag("--no-reuse", "retrain runs whose eval.json already matches"),
         _cluster("to run the runs on (its workers must see --out)"))
def cmd_passkey_sweep(args) -> int:
    from hippo_rep.tasks.passkey import PassKeyConfig, format_table, sweep, wide_text

    check_output_path(args.out, "--out", folder=True)
    if args.figure:
        from hippo_rep.figures import figure_format

        figure_format(check_output_path(args.figure, "--figure"))  # refused before training
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    seeds = _int_list(args.seeds, "--seeds")
    fillers = _int_list(args.fillers, "--fillers")
    _counts(args, ("samples", None))
    _passkey_threads(args)
    rows = sweep(args.out, variants, seeds, PassKeyConfig(), fillers, n_samples=args.samples,
                 log=lambda m: print(m, flush=True), reuse=not args.no_reuse,
                 overrides=args.set, scheduler=args.scheduler, workers=args.workers)
    print(f"\nPassKey accuracy, mean over seeds {seeds} ({args.samples} prompts per length):")
    print(format_table(rows))
    print("95% intervals (Wilson, prompts of all seeds pooled): ci_low/ci_high in sweep.csv")
    wide = wide_text(rows, "prompts pooled over seeds")
    if wide:
        print(wide)
    print(f"tables: {Path(args.out) / 'sweep.csv'}, {Path(args.out) / 'sweep.json'}")
    if args.figure:
        from hippo_rep.figures import load_inputs, passkey_figure, save_figure

        print(f"figure: {save_figure(passkey_figure(load_inputs(passkey=args.out)), args.figure)}")
    return 0


@command("controls", "model-grown controls (pattern-formation lattices and their negatives) "
                     "as a recording to analyse",
         _out("output RECORDING.nc"),
         _arg("--units", type=int, default=32,
              help="maps per control, at most 1024 (default: %(default)s)"),
         _arg("--seed", type=int, default=0, help="seed of the maps and walks (default: 0)"),
         _OVERWRITE)
def cmd_controls(args) -> int:
    from hippo_rep.analysis import plane_waves
    from hippo_rep.analysis.controls import (
        MAX_UNITS,
        control_maps,
        controls_recording,
        describe_controls,
    )
    from hippo_rep.recording import check_output, write_netcdf

    out = _checked_out(check_output, args.out, args.overwrite, suffix=".nc")
    _counts(args, ("units", MAX_UNITS), ("seed", None, 0))
    t0 = time.perf_counter()
    maps = control_maps(args.units, seed=args.seed)
    seconds = time.perf_counter() - t0
    pw = plane_waves(maps)
    write_netcdf(controls_recording(maps, seed=args.seed), out, overwrite=args.overwrite)
    print(f"grew {args.units} maps per control in {seconds:.1f} s (seed {args.seed}); "
          "plane_waves on the maps:")
    print(describe_controls(pw))
    print(f"wrote {out} (one environment per control); next: hippo-rep analyse {out} "
          "--out ANALYSIS.nc, then hippo-rep figures ANALYSIS.nc --only controls")
    return 0


@command("figures", "publication figures (PDF, SVG, 300-dpi PNG)",
         _arg("analysis", nargs="?", help="analysis dataset from hippo-rep analyse"),
         _arg("--recording", help="recording dataset"),
         _arg("--eval", action="append", default=[], metavar="EVAL.json",
              help="evaluation JSON from hippo-rep evaluate (repeatable: TEM-t, baseline)"),
         _arg("--passkey", metavar="SWEEP_DIR_OR_FILE",
              help="PassKey sweep folder or its sweep.json (hippo-rep passkey sweep)"),
         _arg("--out", default="figures", help="output folder (default: figures)"),
         _arg("--only", action="append", metavar="NAME", help="build only this figure"),
         _arg("--format", default="pdf,svg,png", help="comma-separated formats"),
         _arg("--width", choices=("single", "double"), default="double",
              help="journal column width: double (7 in, the default) or single (3.5 in; "
                   "each figure laid out for it: fewer panels per row, maps wrapped, "
                   "smaller fonts)"),
         _arg("--sweep", metavar="DIR", help="training sweep folder (hippo-rep sweep)"),
         _arg("--delay", metavar="RESULT", action="append",
              help="hippo-rep delay result (.nc or .json); repeatable, e.g. one per seed"),
         _arg("--delay-cost", metavar="JSON",
              help="benchmarks/bench_memory_variants.py --json output (cost panels)"),
         _arg("--learning-speed", metavar="FILE",
              help="learning-speed JSON (benchmarks/bench_tem_vs_temt.py --learning)"),
         _arg("--tem-analysis", metavar="FILE",
              help="analysis of a TEM recording, shown beside the TEM-t one (tem_vs_temt)"))
def cmd_figures(args) -> int:
    from hippo_rep.pipeline import build_figures

    check_output_path(args.out, "--out", folder=True)
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    inputs = {k: getattr(args, k) for k in ("analysis", "recording", "passkey", "sweep",
                                            "delay", "delay_cost", "learning_speed",
                                            "tem_analysis")}
    report = build_figures(args.out, evals=args.eval, only=args.only or None, formats=formats,
                           width=args.width, **inputs)
    _report("figures", args.out, report)
    return 0


@command("sweep", "grid of configs × seeds: train, evaluate, record and analyse each run "
                  "(dask), one labelled table",
         _arg("config", help="preset (tiny, small, paper) or a TOML file"),
         _arg("--grid", action="append", default=[], metavar="SECTION.KEY=V1,V2",
              help="values of one config key, read like --set values (repeatable; the runs "
                   "are the cartesian product), e.g. "
                   "--grid model.transition_activation=linear,relu"),
         _arg("--seeds", type=int, default=D.SWEEP_SEEDS,
              help=f"seeds per combination: train.seed = 0..N-1 (default: {D.SWEEP_SEEDS})"),
         _out("sweep folder (sweep.json, runs/NAME/)"),
         _cluster("to run the runs on (its workers must see --out)"),
         _flag("--overwrite", "replace another sweep's runs in --out (a matching sweep "
                              "resumes)"),
         _set("override of the base config for every run (repeatable)"),
         _arg("--eval-envs", type=int, default=D.EVAL_ENVS,
              help=f"held-out environments per run (default: {D.EVAL_ENVS})"),
         _arg("--eval-steps", type=int, default=None,
              help="steps per held-out walk (default: the training walk)"),
         _arg("--eval-world", default=None, metavar="SPEC",
              help="world evaluated, e.g. square:11 (default: the first training world)"),
         _arg("--record-world", default=None, metavar="SPEC",
              help="world recorded, e.g. square:20 (default: the first training world)"),
         _arg("--record-envs", type=int, default=D.STAGE_RECORD_ENVS,
              help=f"environments recorded per run (default: {D.STAGE_RECORD_ENVS})"),
         _arg("--record-steps", type=int, default=D.RECORD_STEPS,
              help=f"steps per recorded walk (default: {D.RECORD_STEPS})"),
         _arg("--shuffles", type=int, default=D.QUICK_SHUFFLES,
              help=f"shuffles of the analysis' nulls (default: {D.QUICK_SHUFFLES})"),
         _flag("--no-calibrate", "evaluate and record TEM-t with its trained write threshold "
                                 "(default: calibrated after training, as hippo-rep "
                                 "calibrate does)"),
         _NO_PROGRESS)
def cmd_sweep(args) -> int:
    """Grid × seeds of train → evaluate → record → analyse, one dask task per run."""
    from hippo_rep.pipeline import SweepSettings, run_sweep
    from hippo_rep.pipeline.demo import COMPARED as cols  # the step types the demo compares
    from hippo_rep.sweep import open_sweep, sweep_table

    check_output_path(args.out, "--out", folder=True)
    settings = SweepSettings(calibrate=not args.no_calibrate, **{k: getattr(args, k) for k in (
        "eval_envs", "record_envs", "record_steps", "shuffles", "eval_steps", "eval_world",
        "record_world")})
    with _on_interrupt(lambda: "interrupted: finished runs are kept and interrupted ones "
                               "continue from their checkpoints; rerun the same command to go "
                               f"on ({args.out})"):
        rep = run_sweep(args.config, args.grid, args.seeds, args.out, overrides=args.set,
                        settings=settings, scheduler=args.scheduler, workers=args.workers,
                        overwrite=args.overwrite, progress=not args.no_progress)
    print(f"{len(rep.runs)} runs: {len(rep.done)} finished now, {len(rep.skipped)} already "
          f"finished, {len(rep.failed)} failed, {len(rep.resumed)} resumed from a checkpoint "
          f"({rep.wall_s:.0f} s) → {rep.out}")
    table = sweep_table(open_sweep(rep.out), cols)
    print(table.to_string(float_format=lambda v: f"{v:.3f}"))
    for name, err in rep.failed.items():
        print(f"failed: {name}: {err} (traceback: {rep.out / 'runs' / name / 'error.txt'})",
              file=sys.stderr)
    return 1 if rep.failed else 0


@command("delay", "long-delay loop closure: accuracy on returning home after an excursion of "
                  "D steps, per memory variant",
         _arg("checkpoint", help="a TEM-t checkpoint (its weights run under each variant)"),
         _out("result file (.nc or .json)"),
         _arg("--variants", default=",".join(T.DELAY_DEFAULT_VARIANTS),
              help="comma-separated memory variants (default: all)"),
         _arg("--delays", default=",".join(map(str, T.DELAY_DEFAULT_DELAYS)),
              help="comma-separated excursion lengths, in steps"),
         _arg("--envs", type=int, default=T.DELAY_DEFAULT_ENVS, help="walks per delay"),
         _arg("--world", default=T.DELAY_DEFAULT_WORLD, help="world spec (default square:10)"),
         _arg("--seed", type=int, default=0, help="seed of the walks and observations"),
         _arg("--memory-block", type=int, default=None,
              help="block length B of window/fam (default: the checkpoint's)"),
         _arg("--memory-blocks", type=int, default=None,
              help="previous blocks M of window/fam (default: the checkpoint's)"),
         _flag("--overwrite"))
def cmd_delay(args) -> int:
    from hippo_rep.tasks.delay import delay_experiment, write_delay

    out = check_output_path(args.out, "--out", inputs=[args.checkpoint], overwrite=args.overwrite)
    _world_arg(args.world)
    _counts(args, ("envs", None))
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    t0 = time.perf_counter()
    ds = delay_experiment(args.checkpoint, variants, _int_list(args.delays, "--delays"),
                          args.envs, args.world, args.seed, args.memory_block,
                          args.memory_blocks)
    write_delay(ds, out, overwrite=True)
    print(ds.accuracy.to_pandas().round(3).to_string())
    print(f"chance {float(ds.chance):.3f}; window {ds.attrs['window_steps']} steps; "
          f"{time.perf_counter() - t0:.0f} s → {out}")
    return 0


@command("demo", "the main job on a small default: train TEM-t and the baseline, evaluate "
                 "both, record, analyse, figures",
         _arg("--out", default="demo", help="output folder (default: demo)"),
         _arg("--config", default="small", help="preset or TOML file (default: small)"),
         _set(),
         _arg("--envs", type=int, default=D.EVAL_ENVS),
         _flag("--overwrite", "replace an earlier demo run"),
         _arg("--record-envs", type=int, default=D.DEMO_RECORD_ENVS, help="environments recorded"),
         _arg("--record-steps", type=int, default=D.RECORD_STEPS,
              help="steps per recorded walk"),
         _arg("--shuffles", type=int, default=D.QUICK_SHUFFLES,
              help="shuffles for the significance nulls"),
         _arg("--figures", default="figures", help="figure folder (default: figures)"),
         _flag("--no-progress"))
def cmd_demo(args) -> int:
    """The main job (:func:`hippo_rep.pipeline.run_demo`), printing each stage."""
    from hippo_rep.config import MAX_BATCH, MAX_WALK_STEPS
    from hippo_rep.pipeline import run_demo

    out = check_output_path(args.out, "--out", folder=True)
    check_output_path(args.figures, "--figures", folder=True)
    _counts(args, ("envs", MAX_BATCH), ("shuffles", None), ("record_envs", MAX_BATCH),
            ("record_steps", MAX_WALK_STEPS))
    run_demo(out, args.figures, config=args.config, overrides=args.set, envs=args.envs,
             record_envs=args.record_envs, record_steps=args.record_steps,
             shuffles=args.shuffles, overwrite=args.overwrite, progress=not args.no_progress,
             log=print)
    return 0


# ------------------------------------------------------------------- the parser and main
def build_parser() -> argparse.ArgumentParser:
    """The ``hippo-rep`` parser, built from :data:`COMMANDS`; ``--debug`` is accepted after
    every command too (SUPPRESS: a subparser must not reset the top one)."""
    p = _Parser(prog="hippo-rep", description=__doc__)
    p.add_argument("--version", action="version", version=f"hippo_rep {__version__}")
    p.add_argument("--debug", action="store_true",
                   help="on an error, show the Python traceback (also accepted after the "
                        "command)")
    subs = {(): p.add_subparsers(dest="command", required=True, parser_class=_Parser)}

    def debug(parser):
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                            help="on an error, show the Python traceback")

    for name, (help_, arguments, fn) in COMMANDS.items():
        *group, leaf = name.split()
        if tuple(group) not in subs:  # a group of subcommands, at its first subcommand
            parent = subs[()].add_parser(group[0], help=GROUPS[group[0]])
            subs[tuple(group)] = parent.add_subparsers(dest=f"{group[0]}_command",
                                                       required=True, parser_class=_Parser)
            debug(parent)
        parser = subs[tuple(group)].add_parser(leaf, help=help_)
        _add_arguments(parser, arguments)
        parser.set_defaults(func=fn)
        debug(parser)
    return p


def _add_arguments(parser, arguments) -> None:
    for item in arguments:
        if isinstance(item, _Group):
            _add_arguments(parser.add_mutually_exclusive_group() if item.title is None
                           else parser.add_argument_group(item.title), item.arguments)
        else:
            parser.add_argument(*item[0], **item[1])


def main(argv=None) -> int:
    """Run one command. Every error that reaches here becomes one line on stderr,
    ``hippo-rep COMMAND: error: CAUSE``, and exit status 2 (``--debug``: the traceback too);
    Ctrl-C is 130 (with what the command leaves behind, where it says)."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except _Interrupted as err:
        print(err, file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(f"hippo-rep {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        torch = isinstance(err, ImportError) and _is_torch(err)
        if not torch and isinstance(err, ImportError):
            raise
        if getattr(args, "debug", False):
            import traceback

            traceback.print_exc()
        print(f"hippo-rep {args.command}: error: {MISSING_TORCH if torch else _cause(err)}",
              file=sys.stderr)
        return 2


def _is_torch(err: ImportError) -> bool:
    """Whether ``err`` is torch (or one of its modules) failing to import."""
    name = err.name or ""
    return name == "torch" or name.startswith("torch.")


def _cause(err: BaseException) -> str:
    """One line saying what went wrong, naming the file where the error knows it."""
    # TrainingError only where the trainer (and torch) was imported: the analysis and figure
    # commands run without torch, and their errors must not import it
    trainer = sys.modules.get("hippo_rep.training.trainer")
    training_error = getattr(trainer, "TrainingError", ValueError)

    # the library's errors (ValueErrors: ConfigError, CheckpointError, ..., and bad argument
    # values reaching library checks) and these say what went wrong, naming the file
    if isinstance(err, (ValueError, training_error, FileExistsError, FileNotFoundError)):
        text = str(err)
    elif isinstance(err, MemoryError):
        text = "out of memory; use smaller sizes (envs, steps, world, model)"
    elif isinstance(err, OSError) and err.filename is not None:
        text = f"{err.filename!r}: {err.strerror or type(err).__name__}"
    elif isinstance(err, OSError):
        text = f"{err.strerror or err} ({type(err).__name__})"
    else:
        text = f"{type(err).__name__}: {err} (an unexpected error; --debug shows where)"
    text = " ".join(text.split())
    if len(text) > MAX_ERROR_LINE:
        text = text[:MAX_ERROR_LINE] + " …"
    return text


if __name__ == "__main__":
    sys.exit(main())
