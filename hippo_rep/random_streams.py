"""The random streams of training, evaluation and recording environments.

Every stream is a ``numpy.random.SeedSequence(seed, spawn_key=(STREAM, ...))``, so training
batches, held-out evaluation environments and recorded environments never share random
numbers, whatever the seeds, and each is reproducible from its seed alone.
"""

from __future__ import annotations

import numpy as np

#: Spawn-key streams: training batches and evaluation environments never share random numbers.
TRAIN_STREAM, EVAL_STREAM, RECORD_STREAM = 0, 1, 2
#: Stream of the walks that calibrate add-if-novel's write threshold (training worlds).
CALIBRATION_STREAM = 3


def batch_rng(seed: int, iteration: int) -> np.random.Generator:
    """Batch ``iteration`` depends only on (seed, iteration): resuming replays the same data."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(TRAIN_STREAM, iteration)))


def eval_rng(seed: int) -> np.random.Generator:
    """The random stream of held-out environments for ``seed`` (disjoint from training's)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(EVAL_STREAM,)))


def record_rng(seed: int) -> np.random.Generator:
    """The random stream of recording environments for ``seed`` (never a training or
    evaluation environment)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(RECORD_STREAM,)))


def calibration_rng(seed: int) -> np.random.Generator:
    """The random stream of calibration walks for ``seed`` (never a training, evaluation or
    recording environment)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(CALIBRATION_STREAM,)))
