"""Fixtures shared by several test modules."""

import pytest
import torch

from hippo_rep.config import load_config
from hippo_rep.models.registry import build_model
from hippo_rep.training.checkpoint import save_checkpoint
from hippo_rep.worlds import n_actions_for

# One torch thread, as in the whole suite, where importing tests/test_fam.py and
# tests/test_passkey.py sets it during collection: a file run on its own otherwise uses every
# core's thread and, on a busy 2-core machine, oversubscription made a calibration test take
# 95 s instead of 0.5 s.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_ckpt(tmp_path_factory):
    """A checkpoint of an untrained ``tiny`` TEM-t (seed 0, square worlds), step 0."""
    cfg = load_config("tiny")
    model = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=0)
    path = tmp_path_factory.mktemp("tiny_ckpt") / "checkpoint.pt"
    save_checkpoint(path, model, cfg, 0)
    return path
