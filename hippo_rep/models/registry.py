"""The model kinds (``model.kind``) and what each can do: one :class:`ModelSpec` per kind.

Code outside :mod:`hippo_rep.models` asks a kind's spec a question (a capability:
"can its write threshold be calibrated?", "which extra metrics does it log?") or calls what
the spec holds (its training losses and annealing: the trainer's only way to a model's
losses) instead of testing the kind by name, so that a new kind is one entry here (and one
in :data:`hippo_rep.model_kinds.MODEL_KINDS`, the torch-free traits config validation asks).
:func:`build_model` builds every kind through :data:`MODELS`.

>>> model_spec("temt").calibrates_write_threshold
True
>>> model_spec("tem").recorded_units
'p'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from hippo_rep.config import Config, ConfigError, ModelConfig
from hippo_rep.models import temt_losses
from hippo_rep.models.tem import LOSS_NAMES, TEM
from hippo_rep.models.temt import TEMt


@dataclass(frozen=True)
class Chunk:
    """What a kind's losses take from one chunk of a training walk besides the model's output
    (:attr:`ModelSpec.losses`)."""

    obs: torch.Tensor  # (batch, steps) observations
    revisit: torch.Tensor  # (batch, steps) bool: the step's node was visited before
    # (batch, steps, 2) node positions, lattice units (only with train.isometry_pairs = "walk"
    # and train.loss_isometry > 0; else None)
    pos: torch.Tensor | None
    iteration: int  # the walk's iteration (the learning-rate and cell-constraint schedules)
    update: int  # optimiser steps taken before this chunk's (TEM's annealing counts these)


def _tem_losses(model: TEM, out, chunk: Chunk, cfg: Config) -> dict[str, torch.Tensor]:
    return model.training_losses(out, chunk.update, cfg.train, revisit=chunk.revisit)


@dataclass(frozen=True)
class ModelSpec:
    """One model kind: how to build it and what it can do."""

    # (config, n_actions, n_obs) → a fresh model; draws its weights from torch's global RNG
    # (build_model seeds it)
    builder: Callable[[ModelConfig, int, int], nn.Module]
    # (model, output, chunk, config) → the chunk's training losses: "loss", the weighted total
    # the trainer backpropagates, and each term as logged to metrics.csv
    losses: Callable[[nn.Module, object, Chunk, Config], dict[str, torch.Tensor]]
    # (model, config) → losses taken once per walk after its chunks, name → (weight, value),
    # or None (hippo_rep.models.temt_losses.walk_losses: W_a's inverse and loop errors)
    walk_losses: Callable[[nn.Module, Config], dict] | None = None
    # (model, update, train config): set the annealed values of optimiser step ``update``
    # before the step's first chunk, or None (no annealing)
    anneal: Callable[[nn.Module, int, object], object] | None = None
    # add-if-novel memory writes, so model.write_threshold can be calibrated on revisits
    # (hippo_rep.training.calibrate; the "calibrate" stage runs only then)
    calibrates_write_threshold: bool = False
    # metrics.csv columns this kind logs beyond the trainer's common ones (see also
    # metric_columns)
    metric_fields: tuple[str, ...] = ()
    # what a recording takes from the model besides g and g_pi: "memory" (memory-neuron
    # activity over memory slots, with their write times and observations) or "p" (TEM's
    # grounded-location units; no memory slots)
    recorded_units: str = "memory"
    # the long-delay task can run it: its weights load under TEM-t's memory variants
    # (hippo_rep.tasks.delay.as_variant)
    delay_task: bool = True

    def metric_columns(self, config: Config) -> tuple[str, ...]:
        """The metrics.csv columns a run of this kind under ``config`` logs beyond the
        trainer's common ones: :attr:`metric_fields`, then those of the optional loss terms
        the config asks for (:func:`~hippo_rep.models.temt_losses.optional_metric_fields`)."""
        return self.metric_fields + temt_losses.optional_metric_fields(config)


#: ``model.kind`` → its spec.
MODELS: dict[str, ModelSpec] = {
    # TEM-t's losses add loss 2 (x_t from the corrected g), loss 3 (g_pi towards the corrected
    # g) and the L2 of g to loss 1
    "temt": ModelSpec(builder=TEMt, losses=temt_losses.chunk_losses,
                      walk_losses=temt_losses.walk_losses, calibrates_write_threshold=True),
    # TEM-t's fixed sinusoidal baseline: every step writes a memory, g has no landmark path
    # (its losses: loss 1 only)
    "sinusoidal": ModelSpec(builder=TEMt,
                            losses=partial(temt_losses.chunk_losses, corrected_g=False),
                            walk_losses=temt_losses.walk_losses),
    # TEM's losses and annealing are its own, counted in optimiser steps
    "tem": ModelSpec(builder=TEM, losses=_tem_losses, anneal=TEM.anneal,
                     metric_fields=tuple(f"tem_{k}" for k in LOSS_NAMES),
                     recorded_units="p", delay_task=False),
}


def model_spec(kind: str) -> ModelSpec:
    """The spec of model kind ``kind`` (``config.model.kind``).

    Raises
    ------
    ConfigError
        ``kind`` is not in :data:`MODELS`.
    """
    try:
        return MODELS[kind]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown model.kind {kind!r}; known kinds: "
                          f"{', '.join(MODELS)}") from None


def build_model(config: ModelConfig, n_actions: int, n_obs: int, seed: int = 0) -> nn.Module:
    """A freshly initialised model of kind ``config.kind`` (:data:`MODELS`) with weights drawn
    from ``seed``: :class:`~hippo_rep.models.temt.TEMt`, or
    :class:`~hippo_rep.models.tem.TEM` when ``config.kind == "tem"``. Torch's global RNG is
    left as it was."""
    spec = model_spec(config.kind)
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return spec.builder(config, n_actions, n_obs)
    finally:
        torch.random.set_rng_state(gen_state)
