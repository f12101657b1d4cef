"""The main job (``hippo-rep demo``): train TEM-t and the sinusoidal baseline, evaluate both on
the same held-out worlds, then record, analyse and draw TEM-t, all through
:func:`~hippo_rep.pipeline.stages.run_stages`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hippo_rep.analysis.remapping import TEM_SHUFFLES
from hippo_rep.config import load_config
from hippo_rep.defaults import DEMO_RECORD_ENVS, EVAL_ENVS, QUICK_SHUFFLES, RECORD_STEPS
from hippo_rep.fileio import remove_path
from hippo_rep.pipeline.stages import StageSettings, run_stages, stage_report
from hippo_rep.run_files import CALIBRATED_FILE, CHECKPOINT_FILE

#: Model kind → (run folder, evaluation JSON) in the demo's folder; TEM-t is recorded.
RUNS = {"temt": ("run", "eval.json"), "sinusoidal": ("baseline", "eval_baseline.json")}
#: TEM-t's recording and analysis in the demo's folder.
RECORDING, ANALYSIS = "recording.nc", "analysis.nc"
#: Step types of the printed comparison.
COMPARED = ("revisit", "revisit_new_edge", "revisit_unseen_edge", "first_visit")


@dataclass
class DemoReport:
    """What :func:`run_demo` wrote: the run folders and evaluations by model kind, TEM-t's
    recording and analysis, and the figures (name → written paths, or why it was skipped)."""

    runs: dict[str, Path]
    evals: dict[str, dict]
    recording: Path
    analysis: Path
    figures: dict = field(default_factory=dict)


def comparison(evals: dict[str, dict]) -> str:
    """The held-out accuracy of TEM-t beside the baseline and the ideal agents (a table)."""
    t, b = evals["temt"], evals["sinusoidal"]
    rows = [f"{k:20s}{t['model'][k]:7.3f}{b['model'][k]:12.3f}{t['node_agent'][k]:12.3f}"
            f"{t['edge_agent'][k]:12.3f}" for k in COMPARED]
    return "\n".join(["held-out accuracy    TEM-t  sinusoidal  node agent  edge agent", *rows])


def run_demo(out="demo", figures="figures", *, config: str | Path = "small",
             overrides: Sequence[str] = (), envs: int = EVAL_ENVS,
             record_envs: int = DEMO_RECORD_ENVS, record_steps: int = RECORD_STEPS,
             shuffles: int = QUICK_SHUFFLES, overwrite: bool = False, progress: bool = False,
             log: Callable[[str], None] | None = None,
             after: Callable[[str, Path, object, float], None] | None = None) -> DemoReport:
    """Train TEM-t and the sinusoidal baseline on ``config`` (a preset or TOML file, with
    ``overrides``), calibrate TEM-t's write threshold, evaluate both on ``envs`` held-out
    environments, record TEM-t (``record_envs`` walks of ``record_steps`` steps), analyse the
    recording with ``shuffles`` shuffles and draw the figures into ``figures``.

    ``out`` receives ``run/`` (TEM-t: ``checkpoint.pt``, ``calibrated.pt``), ``baseline/``,
    ``eval.json``, ``eval_baseline.json``, ``recording.nc`` and ``analysis.nc``. ``log(line)``
    is given a heading before each stage, what it says when done
    (:func:`~hippo_rep.pipeline.stages.stage_report`), the comparison table and the list of
    artefacts (``log=print`` prints what ``hippo-rep demo`` does); ``after`` is
    :func:`~hippo_rep.pipeline.stages.run_stages`' hook after each stage; ``progress`` shows
    training's progress bar.

    Raises
    ------
    FileExistsError
        A checkpoint of an earlier demo is in ``out`` and not ``overwrite`` (nothing is
        touched).
    """
    out = Path(out)
    say = log or (lambda line: None)
    runs = {kind: out / folder for kind, (folder, _) in RUNS.items()}
    existing = [r / CHECKPOINT_FILE for r in runs.values() if (r / CHECKPOINT_FILE).exists()]
    if existing and not overwrite:
        raise FileExistsError(f"{str(existing[0])!r} exists; pass --overwrite to train again, "
                              "or use another --out")
    configs = {kind: load_config(config, [*overrides, f"model.kind={kind}"]) for kind in runs}
    settings = StageSettings(eval_envs=envs, record_envs=record_envs, record_steps=record_steps,
                             shuffles=shuffles, remap_shuffles=TEM_SHUFFLES)
    evals = {kind: out / name for kind, (_, name) in RUNS.items()}
    rec, ana = out / RECORDING, out / ANALYSIS
    heads = {"calibrate": "== calibrating the write threshold → "
                          f"{runs['temt'] / CALIBRATED_FILE}",
             "record": f"\n== recording {record_envs} envs × {record_steps} steps → {rec}",
             "analyse": f"== analysing with {shuffles} shuffles → {ana}",
             "figures": f"== figures → {figures}"}

    def head(stage, _):
        if stage in heads:  # the evaluation's table follows the training's output
            say(heads[stage])

    def done(stage, path, result, seconds):
        if log is not None:
            say(stage_report(stage, path, result, seconds))
        if after is not None:
            after(stage, path, result, seconds)

    results = {}
    for kind, run in runs.items():
        remove_path(run)  # overwrite was given (or no checkpoint was there)
        heads["train"] = f"== training {kind} ({config} preset) → {run}"
        run_stages(run, configs[kind], ("train", "calibrate", "evaluate"), settings,
                   outputs={"evaluate": evals[kind]}, progress=progress, before=head,
                   after=done)
        results[kind] = json.loads(evals[kind].read_text())
    say("\n" + comparison(results))
    for path in (rec, ana):
        path.unlink(missing_ok=True)  # overwrite was given (or the checkpoints were absent)
    drawn = run_stages(runs["temt"], configs["temt"], ("record", "analyse", "figures"),
                       settings, outputs={"record": rec, "analyse": ana, "figures": figures},
                       evals=list(evals.values()), before=head, after=done).results
    say(f"\nartefacts: {out}/run and {out}/baseline (config.toml, metrics.csv, "
        f"checkpoint.pt; run/calibrated.pt), {out}/eval.json, {out}/eval_baseline.json, "
        f"{rec}, {ana}, figures in {figures}/")
    return DemoReport(runs, results, rec, ana, drawn["figures"])
