"""One resumable stage runner: train → calibrate → evaluate → record → analyse → figures.

Each stage is a plain function with typed arguments that reads the previous stage's file and
writes its own atomically (a file that is there is whole): :func:`train` (``checkpoint.pt``),
:func:`calibrate` (TEM-t's write threshold: ``calibrated.pt``, then evaluated and recorded
instead), :func:`evaluate` (``eval.json``),
:func:`~hippo_rep.recording.record_to_file` (``recording.nc``), :func:`analyse`
(``analysis.nc``) and :func:`build_figures` (``figures/``). The single-stage commands
(``hippo-rep train``, ``evaluate``, ...) call them, and :func:`run_stages` chains them for
``hippo-rep demo`` (:func:`~hippo_rep.pipeline.demo.run_demo`), ``hippo-rep sweep``
(:func:`~hippo_rep.pipeline.sweep.run_sweep`) and scripts.

**Resuming.** :func:`run_stages` skips a stage whose output is complete: training when its
checkpoint has reached ``train.iterations`` (an earlier one is continued with the trainer's
resume, which gives the result of an uninterrupted run), any other stage when its file exists.
A stage that runs first removes the outputs made from its old output (the later stages of the
list that read it: :data:`INPUTS`), so a run killed at any point leaves nothing stale; figures
are always drawn again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import xarray as xr

from hippo_rep import run_files as F
from hippo_rep.analysis.analysis_files import write_analysis
from hippo_rep.analysis.inputs import open_input
from hippo_rep.analysis.pipeline import analyse as analyse_dataset
from hippo_rep.config import Config, size_rule
from hippo_rep.defaults import (
    EVAL_ENVS,
    EVAL_SEED,
    QUICK_SHUFFLES,
    RECORD_STEPS,
    STAGE_RECORD_ENVS,
)
from hippo_rep.fileio import remove_path, write_json
from hippo_rep.recording import open_recording, record_to_file
from hippo_rep.typed_config import Rule, TypedConfig, setting
from hippo_rep.worlds import WorldError, parse_world

#: The stages, in the order they run.
STAGES = ("train", "calibrate", "evaluate", "record", "analyse", "figures")
#: The stages whose outputs each stage reads, directly or through another.
INPUTS = {"train": (), "calibrate": ("train",), "evaluate": ("train", "calibrate"),
          "record": ("train", "calibrate"), "analyse": ("train", "calibrate", "record"),
          "figures": ("train", "calibrate", "evaluate", "record", "analyse")}
#: Output of each stage, relative to the run folder (:func:`run_stages`' ``outputs`` changes it).
OUTPUTS = {"train": F.CHECKPOINT_FILE, "calibrate": F.CALIBRATED_FILE, "evaluate": F.EVAL_FILE,
           "record": F.RECORDING_FILE, "analyse": F.ANALYSIS_FILE, "figures": F.FIGURES_DIR}

#: Calibrate TEM-t's write threshold after training (``hippo-rep calibrate``).
DEFAULT_CALIBRATE = True
#: Environments recorded (:data:`hippo_rep.defaults.STAGE_RECORD_ENVS`).
DEFAULT_RECORD_ENVS = STAGE_RECORD_ENVS
#: Seed of the recorded environments.
DEFAULT_RECORD_SEED = 0
#: Permutations of the TEM remapping test.
DEFAULT_REMAP_SHUFFLES = 200
#: Seed of the analysis' shuffles.
DEFAULT_ANALYSIS_SEED = 0
#: Run the population analyses (decoding, PCA).
DEFAULT_DECODE = True


class StageError(ValueError):
    """Stages or settings that cannot run (an unknown stage, a bad setting)."""


@dataclass(frozen=True)
class StageSettings(TypedConfig):
    """What a run evaluates, records and analyses after training.

    Attributes
    ----------
    eval_envs : int
        Held-out environments evaluated (:data:`~hippo_rep.defaults.EVAL_ENVS`).
    eval_steps : int or None
        Steps per evaluation walk (None: the training walk).
    eval_seed : int
        Seed of the held-out environments (:data:`~hippo_rep.defaults.EVAL_SEED`).
    record_envs : int
        Environments recorded (:data:`DEFAULT_RECORD_ENVS`); ≥ 2 for remapping.
    record_steps : int
        Steps per recorded walk (:data:`~hippo_rep.defaults.RECORD_STEPS`).
    record_seed : int
        Seed of the recorded environments (:data:`DEFAULT_RECORD_SEED`).
    shuffles : int
        Circular-shift shuffles of the analysis (:data:`~hippo_rep.defaults.QUICK_SHUFFLES`).
    remap_shuffles : int
        Permutations of the TEM remapping test (:data:`DEFAULT_REMAP_SHUFFLES`).
    analysis_seed : int
        Seed of the analysis (:data:`DEFAULT_ANALYSIS_SEED`).
    decode : bool
        Run the population analyses (:data:`DEFAULT_DECODE`).
    eval_world, record_world : str or None
        World spec evaluated / recorded (None: the run's first training world), e.g. held-out
        ``square:11`` for a model trained on 8×8, or ``square:20`` so a map holds several
        grid periods.
    calibrate : bool
        Calibrate a TEM-t's add-if-novel write threshold after training and evaluate and
        record that copy (``calibrated.pt``; :data:`DEFAULT_CALIBRATE`). Other model kinds
        are used as trained.

    Raises
    ------
    StageError
        (:attr:`error`) A value of the wrong type or out of range (walk sizes up to
        :data:`~hippo_rep.config.MAX_BATCH` environments and
        :data:`~hippo_rep.config.MAX_WALK_STEPS` steps, as a config's), naming
        ``settings.FIELD``.
    """

    section = "settings"
    error = StageError

    eval_envs: int = setting(EVAL_ENVS, size_rule("MAX_BATCH"))
    eval_steps: int | None = setting(None, size_rule("MAX_WALK_STEPS"))
    eval_seed: int = setting(EVAL_SEED, Rule(low=0))
    record_envs: int = setting(DEFAULT_RECORD_ENVS, size_rule("MAX_BATCH"))
    record_steps: int = setting(RECORD_STEPS, size_rule("MAX_WALK_STEPS"))
    record_seed: int = setting(DEFAULT_RECORD_SEED, Rule(low=0))
    shuffles: int = setting(QUICK_SHUFFLES, Rule(low=1))
    remap_shuffles: int = setting(DEFAULT_REMAP_SHUFFLES, Rule(low=1))
    analysis_seed: int = setting(DEFAULT_ANALYSIS_SEED, Rule(low=0))
    decode: bool = DEFAULT_DECODE
    eval_world: str | None = None
    record_world: str | None = None
    calibrate: bool = DEFAULT_CALIBRATE

    def check(self) -> None:
        for name in ("eval_world", "record_world"):
            if getattr(self, name) is not None:
                try:
                    parse_world(getattr(self, name))
                except WorldError as err:
                    raise self.error(f"settings.{name}: {err}") from None


# ------------------------------------------------------------------------------ the stages
def train(config: Config, run_dir, *, resume: bool | None = None, progress: bool = False,
          stop_at: int | None = None) -> Path:
    """Train ``config`` into the folder ``run_dir`` (``config.toml``, ``metrics.csv``,
    ``checkpoint.pt``) and return the checkpoint's path.

    ``resume`` True continues the checkpoint in ``run_dir`` (the trainer's resume, which gives
    the result of an uninterrupted run), False trains afresh (refusing a checkpoint there), None
    continues a checkpoint if there is one, else trains afresh, removing what a run killed
    before its first checkpoint left. ``stop_at`` stops after that iteration (the schedule still
    runs to ``train.iterations``); ``progress`` shows the trainer's progress bar.
    """
    # torch: imported by the stages that run a model, so that importing this package (the
    # CLI's parser, the analysis stage) does not import it
    from hippo_rep.training.trainer import Trainer

    run_dir = Path(run_dir)
    if resume is None:
        resume = (run_dir / F.CHECKPOINT_FILE).is_file()
        for name in () if resume else (F.CONFIG_FILE, F.METRICS_FILE):
            (run_dir / name).unlink(missing_ok=True)
    return Trainer(config, run_dir, resume=resume, progress=progress).run(stop_at)


def calibrate(checkpoint, out, **options) -> dict:
    """Copy TEM-t's ``checkpoint`` to ``out`` with add-if-novel's write threshold calibrated on
    its training worlds (:func:`~hippo_rep.training.calibrate.calibrate_checkpoint`, whose
    ``n_envs``, ``n_steps`` and ``seed`` are the ``options``); the weights are unchanged.
    Returns the calibration report."""
    from hippo_rep.training.calibrate import calibrate_checkpoint  # torch: see train

    return calibrate_checkpoint(checkpoint, out, **options)


def evaluate(checkpoint, out=None, *, envs: int = EVAL_ENVS, world: str | None = None,
             steps: int | None = None, seed: int = EVAL_SEED) -> dict:
    """Accuracy of ``checkpoint`` on held-out environments against the ideal agents
    (:func:`~hippo_rep.training.evaluate.evaluate_checkpoint`), with the checkpoint's SHA-256
    in ``meta``; written to ``out`` (JSON, atomically) when given.

    ``envs`` environments of ``world`` (None: the first training world), ``steps`` steps per
    walk (None: the training walk), seeded by ``seed``. Returns the result (a JSON-able dict).
    """
    from hippo_rep.training.checkpoint import file_sha256  # torch: see train
    from hippo_rep.training.evaluate import evaluate_checkpoint

    result = evaluate_checkpoint(checkpoint, n_envs=envs, world=world, n_steps=steps, seed=seed)
    result["meta"]["checkpoint_sha256"] = file_sha256(checkpoint)
    if out is not None:
        write_json(out, result)
    return result


def analyse(recording, out=None, *, scheduler: str | None = None, overwrite: bool = False,
            **options) -> xr.Dataset:
    """Analyse a recording or a session (:func:`~hippo_rep.analysis.pipeline.analyse`) and
    write the analysis to ``out`` (``.nc`` or ``.zarr``, atomically) when given.

    ``recording`` is a dataset, or a file (:func:`~hippo_rep.analysis.inputs.open_input`): a
    recording (``.nc`` or ``.zarr``, read into memory with ``scheduler``) or a session (an
    ``.nwb`` file, or a session ``.nc`` of :func:`~hippo_rep.analysis.sessions.write_session`).
    ``options`` are :func:`~hippo_rep.analysis.pipeline.analyse`'s (``shuffles``, ``seed``,
    ``remap_shuffles``, ``decode``, ``progress``, the session options ``bin_size_cm``,
    ``smooth_cm``, ``min_speed_cm_s``, ``min_shift_s``, ...), run on dask's ``scheduler`` (None:
    the active dask.distributed client, else synchronous). Returns the analysis dataset (dims
    ``env``, ``unit``, ``y``, ``x``, ...).
    """
    session = False
    if isinstance(recording, xr.Dataset):
        data = recording
    else:
        data, session = open_input(recording, scheduler)
    result = analyse_dataset(data, scheduler=scheduler, session_checked=session, **options)
    if out is not None:
        write_analysis(result, out, overwrite=overwrite)
    return result


def build_figures(out="figures", *, only: Sequence[str] | None = None,
                  formats: Sequence[str] | None = None, width: str = "double",
                  **inputs) -> dict:
    """Every figure whose inputs are given, into the folder ``out``
    (:func:`hippo_rep.figures.build_figures`): name → written paths, or the reason it was
    skipped. ``width``: "double" (a double column) or "single" (a single column, each figure
    laid out for it).

    ``inputs`` are those of :func:`~hippo_rep.figures.load_inputs` (analysis, recording, evals,
    passkey, sweep, delay, delay_cost, learning_speed, tem_analysis, missing_ok), each a path
    or the data itself.
    ``formats``: None is :data:`hippo_rep.figures.DEFAULT_FORMATS`.
    """
    from hippo_rep import figures  # matplotlib: imported on use

    return figures.build_figures(figures.load_inputs(**inputs), out, only=only,
                                 formats=figures.DEFAULT_FORMATS if formats is None else formats,
                                 width=width)


def stage_report(stage: str, out, result, seconds: float | None) -> str:
    """What a stage says when it is done (its command prints it; :func:`run_demo
    <hippo_rep.pipeline.demo.run_demo>` logs it): ``out`` its output, ``result`` the stage
    function's return value, ``seconds`` how long it took."""
    if stage == "train":
        return f"trained in {seconds:.0f} s → {out}"
    if stage == "calibrate":
        from hippo_rep.training.calibrate import calibration_text  # torch: see train

        return f"{calibration_text(result)}; wrote {out}"
    if stage == "evaluate":
        from hippo_rep.training.evaluate import evaluation_text

        return f"{evaluation_text(result)}\nwrote {out}"
    if stage == "record":
        with open_recording(out) as ds:
            return f"recorded {ds.hippo.describe()} in {seconds:.1f} s → {out}"
    if stage == "analyse":
        return f"analysed {result.hippo.describe()} ({seconds:.1f} s → {out})"
    return "\n".join(f"{name}: {res if isinstance(res, str) else ', '.join(map(str, res))}"
                     for name, res in result.items())  # figures


# ------------------------------------------------------------------------------ the runner
@dataclass
class StagesReport:
    """What :func:`run_stages` did: each stage's ``outputs`` (path), the stages that ``ran``
    and were ``skipped`` (complete), the training iteration ``resumed_from`` (or None), and the
    ``results`` (return values) of the stage functions that ran."""

    outputs: dict[str, Path]
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    resumed_from: int | None = None
    results: dict[str, object] = field(default_factory=dict)


def run_stages(run_dir, config: Config, stages: Sequence[str] = STAGES,
               settings: StageSettings | None = None, *,
               outputs: Mapping[str, str | Path] | None = None, evals: Sequence | None = None,
               figure_formats: Sequence[str] | None = None, scheduler: str | None = None,
               progress: bool = False,
               before: Callable[[str, Path], None] | None = None,
               after: Callable[[str, Path, object, float], None] | None = None) -> StagesReport:
    """Run ``stages`` of one run into ``run_dir``, skipping those already complete.

    Parameters
    ----------
    run_dir : path
        The run folder: training's files and, by default, every stage's output (:data:`OUTPUTS`).
    config : Config
        The run's config.
    stages : sequence of str
        Any of :data:`STAGES`, run in that order. The calibrate stage applies to TEM-t with
        ``settings.calibrate`` only; its ``calibrated.pt`` is then what the evaluate and record
        stages use (also when the list leaves calibrate out), else ``checkpoint.pt``.
    settings : StageSettings, optional
        Evaluation, recording and analysis settings (default :class:`StageSettings`).
    outputs : mapping, optional
        Stage → output path (as given) instead of :data:`OUTPUTS` in ``run_dir`` (training
        always writes ``run_dir``).
    evals : sequence of path, optional
        Evaluation JSONs the figures stage draws (default: the evaluate stage's output).
    figure_formats : sequence of str, optional
        Formats of the figures stage (None: :data:`hippo_rep.figures.DEFAULT_FORMATS`).
    scheduler : str, optional
        Dask scheduler of the analysis (:func:`analyse`).
    progress : bool
        Show training's progress bar.
    before, after : callable, optional
        ``before(stage, output)`` and ``after(stage, output, result, seconds)`` around each
        stage that runs (result: the stage function's return value).

    Returns
    -------
    StagesReport

    Raises
    ------
    StageError
        An unknown stage, before anything runs. A stage's error propagates; the outputs of
        the stages completed before it stay.

    Examples
    --------
    >>> cfg = load_config("tiny", ["world.worlds=square:6"])  # doctest: +SKIP
    >>> run_stages("runs/a", cfg, STAGES[:5], StageSettings(record_envs=2)).ran  # doctest: +SKIP
    ['train', 'calibrate', 'evaluate', 'record', 'analyse']
    """
    from hippo_rep.models.registry import model_spec  # torch: see train
    from hippo_rep.training.checkpoint import read_checkpoint

    s = StageSettings() if settings is None else settings
    unknown = [st for st in stages if st not in STAGES]
    if unknown:
        raise StageError(f"unknown stage(s) {', '.join(map(repr, unknown))}; stages are "
                         f"{', '.join(STAGES)}")
    run_dir = Path(run_dir)
    outputs = {k: Path(v) for k, v in (outputs or {}).items() if k != "train"}
    paths = {st: outputs.get(st, run_dir / OUTPUTS[st]) for st in STAGES}
    calibrated = s.calibrate and model_spec(config.model.kind).calibrates_write_threshold
    model = paths["calibrate"] if calibrated else paths["train"]
    run = {
        "train": lambda out: train(config, run_dir, progress=progress),
        "calibrate": lambda out: calibrate(paths["train"], out),
        "evaluate": lambda out: evaluate(model, out, envs=s.eval_envs, world=s.eval_world,
                                         steps=s.eval_steps, seed=s.eval_seed),
        "record": lambda out: record_to_file(model, out, n_envs=s.record_envs,
                                             n_steps=s.record_steps, world=s.record_world,
                                             seed=s.record_seed),
        "analyse": lambda out: analyse(paths["record"], out, shuffles=s.shuffles,
                                       seed=s.analysis_seed, remap_shuffles=s.remap_shuffles,
                                       decode=s.decode, scheduler=scheduler),
        "figures": lambda out: build_figures(
            out, analysis=paths["analyse"], recording=paths["record"],
            evals=[paths["evaluate"]] if evals is None else evals, formats=figure_formats),
    }
    order = [st for st in STAGES if st in stages and (st != "calibrate" or calibrated)]
    report = StagesReport(outputs={st: paths[st] for st in order})
    for i, stage in enumerate(order):
        out = paths[stage]
        if stage == "train":  # a checkpoint there is continued from its iteration
            step = read_checkpoint(out)["step"] if out.is_file() else None
            done = step is not None and step >= config.train.iterations
        else:
            done = stage != "figures" and out.exists()
        if done:
            report.skipped.append(stage)
            continue
        for later in order[i + 1:]:
            if stage in INPUTS[later] and later != "figures":  # may hold other figures
                remove_path(paths[later])
        if before is not None:
            before(stage, out)
        t0 = time.perf_counter()
        result = report.results[stage] = run[stage](out)
        report.ran.append(stage)
        if stage == "train":
            report.resumed_from = step
        if after is not None:
            after(stage, out, result, time.perf_counter() - t0)
    return report
