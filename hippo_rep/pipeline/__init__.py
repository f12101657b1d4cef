"""The backbone: the stages (train → calibrate → evaluate → record → analyse → figures), the
resumable runner that chains them, sweeps of runs and the demo. The CLI's commands and the
package root's verbs (``hippo_rep.train``, ``hippo_rep.run_demo``, ...) call these.

Modules: ``stages`` (the stage functions and :func:`run_stages`), ``sweep`` (running a
sweep's runs in order or on dask: :func:`run_sweep`; reading them is :mod:`hippo_rep.sweep`'s)
and ``demo`` (:func:`run_demo`). Importing this package imports no torch: the stages that run
a model import it on use.
"""

from hippo_rep.pipeline.demo import DemoReport, run_demo
from hippo_rep.pipeline.stages import (
    DEFAULT_DECODE,
    DEFAULT_REMAP_SHUFFLES,
    INPUTS,
    OUTPUTS,
    STAGES,
    StageError,
    StageSettings,
    StagesReport,
    analyse,
    build_figures,
    calibrate,
    evaluate,
    run_stages,
    stage_report,
    train,
)
from hippo_rep.pipeline.sweep import (
    ANALYSIS_SCHEDULER,
    RESULT_FILES,
    SWEEP_STAGES,
    SweepReport,
    SweepSettings,
    run_one,
    run_sweep,
)

__all__ = [
    "ANALYSIS_SCHEDULER", "DEFAULT_DECODE", "DEFAULT_REMAP_SHUFFLES", "INPUTS", "OUTPUTS",
    "RESULT_FILES", "STAGES", "SWEEP_STAGES", "DemoReport", "StageError", "StageSettings",
    "StagesReport", "SweepReport", "SweepSettings", "analyse", "build_figures", "calibrate",
    "evaluate", "run_demo", "run_one", "run_stages", "run_sweep", "stage_report", "train",
]
