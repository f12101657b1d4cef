"""Training loop, checkpoints and evaluation against the ideal agents."""

from hippo_rep.training.checkpoint import (
    CheckpointError,
    file_sha256,
    load_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from hippo_rep.training.evaluate import evaluate
from hippo_rep.training.trainer import Trainer, TrainingError, train

__all__ = ["CheckpointError", "Trainer", "TrainingError", "evaluate", "file_sha256",
           "load_checkpoint", "read_checkpoint", "save_checkpoint", "train"]
