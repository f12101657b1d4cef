"""The files of a run folder, as :mod:`hippo_rep.pipeline` writes them and
:mod:`hippo_rep.sweep` reads them (no hippo_rep imports: the sweep reader sits below the
pipeline)."""

#: Written by training (:mod:`hippo_rep.training.trainer`): the config, the metrics, the model.
CONFIG_FILE = "config.toml"
METRICS_FILE = "metrics.csv"
CHECKPOINT_FILE = "checkpoint.pt"
#: TEM-t's checkpoint with its write threshold calibrated; evaluated and recorded instead of
#: the trained one.
CALIBRATED_FILE = "calibrated.pt"
EVAL_FILE = "eval.json"
RECORDING_FILE = "recording.nc"
ANALYSIS_FILE = "analysis.nc"
FIGURES_DIR = "figures"
#: A failed run's traceback (:func:`hippo_rep.cluster.run_job`).
ERROR_FILE = "error.txt"
