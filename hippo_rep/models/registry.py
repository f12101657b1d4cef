"""The model kinds (``model.kind``) and what each can do: one :class:`ModelSpec` per kind.

Code outside :mod:`hippo_rep.models` asks a kind's spec a question (a capability:
"can its write threshold be calibrated?", "which extra metrics does it log?") instead of
testing the kind by name, so that a new kind is one entry here. :func:`build_model` builds
every kind through :data:`MODELS`. Config validation (``hippo_rep.config``, a layer below)
still names kinds itself.

>>> model_spec("temt").calibrates_write_threshold
True
>>> model_spec("tem").recorded_units
'p'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from hippo_rep.config import ConfigError, ModelConfig
from hippo_rep.models.tem import LOSS_NAMES, TEM
from hippo_rep.models.temt import TEMt


@dataclass(frozen=True)
class ModelSpec:
    """One model kind: how to build it and what it can do."""

    # (config, n_actions, n_obs) → a fresh model; draws its weights from torch's global RNG
    # (build_model seeds it)
    builder: Callable[[ModelConfig, int, int], nn.Module]
    # add-if-novel memory writes, so model.write_threshold can be calibrated on revisits
    # (hippo_rep.training.calibrate; the "calibrate" stage runs only then)
    calibrates_write_threshold: bool = False
    # the trainer's losses() adds TEM-t's loss 2 (x_t from the corrected g), loss 3 (g_pi
    # towards the corrected g) and the L2 of g to the total, not only loss 1
    corrected_g_losses: bool = False
    # the model computes its own training losses and annealing (its ``training_losses`` and
    # ``anneal`` methods, counted in optimiser steps) instead of the trainer's losses()
    own_losses: bool = False
    # metrics.csv columns this kind logs beyond the trainer's common ones
    metric_fields: tuple[str, ...] = ()
    # what a recording takes from the model besides g and g_pi: "memory" (memory-neuron
    # activity over memory slots, with their write times and observations) or "p" (TEM's
    # grounded-location units; no memory slots)
    recorded_units: str = "memory"
    # the long-delay task can run it: its weights load under TEM-t's memory variants
    # (hippo_rep.tasks.delay.as_variant)
    delay_task: bool = True


#: ``model.kind`` → its spec.
MODELS: dict[str, ModelSpec] = {
    "temt": ModelSpec(builder=TEMt, calibrates_write_threshold=True, corrected_g_losses=True),
    # TEM-t's fixed sinusoidal baseline: every step writes a memory, g has no landmark path
    "sinusoidal": ModelSpec(builder=TEMt),
    "tem": ModelSpec(builder=TEM, own_losses=True,
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
