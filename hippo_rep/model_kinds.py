"""What each world-model kind (``model.kind``) accepts, without torch.

Config validation (:mod:`hippo_rep.config`) sits below the models, which import torch, so it
cannot ask :func:`hippo_rep.models.registry.model_spec`. It asks a kind's :class:`KindTraits`
here instead of naming kinds: a new kind is one entry in :data:`MODEL_KINDS` (what its config
may hold) and one in :data:`hippo_rep.models.registry.MODELS` (how it is built and trained);
``tests/test_registry.py`` checks that both name the same kinds.

>>> MODEL_KINDS["temt"].readout_cells
True
>>> kinds_with("memory_variants")
('temt',)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from types import MappingProxyType


@dataclass(frozen=True)
class KindTraits:
    """One model kind: its name in messages and the config options it can take."""

    # its name in messages, checkpoints and figures
    label: str
    # g moves by a learned per-action recurrence W_a on g itself (TEM-t): grid modules
    # (model.g_module_size), wave vectors (model.transition_param = "waves") and the losses
    # on W_a's structure (train.loss_isometry)
    action_transitions: bool = False
    # a linear read-out of g as its recorded cells (model.cells = "readout")
    readout_cells: bool = False
    # memories other than the full attention memory (model.memory: window, fam, hebbian)
    memory_variants: bool = False
    # (config) → what is wrong with a whole config for this kind, or None: checks no trait
    # covers (the message is raised as a ConfigError by hippo_rep.config)
    check: Callable[[object], str | None] | None = None


def _tem_check(config) -> str | None:
    """TEM codes each observation with two of model.tem.n_x_c units (a two-hot code)."""
    codes = math.comb(config.model.tem.n_x_c, 2)
    if codes < config.world.n_obs:
        return (f"model.tem.n_x_c = {config.model.tem.n_x_c} has {codes} two-hot codes, "
                f"fewer than world.n_obs = {config.world.n_obs}")
    return None


#: ``model.kind`` → its traits; the first is the default kind.
MODEL_KINDS: MappingProxyType[str, KindTraits] = MappingProxyType({
    # recurrent positional encodings moved by W_a (Whittington et al. 2022)
    "temt": KindTraits("TEM-t", action_transitions=True, readout_cells=True,
                       memory_variants=True),
    # fixed time-index (sinusoidal) encodings: TEM-t's baseline
    "sinusoidal": KindTraits("sinusoidal-baseline"),
    # the Tolman-Eichenbaum Machine (Whittington et al. 2020): its own [model.tem] section
    "tem": KindTraits("TEM", check=_tem_check),
})

TRAITS = tuple(f.name for f in fields(KindTraits) if f.type == "bool")


def kinds_with(trait: str) -> tuple[str, ...]:
    """The kinds whose :class:`KindTraits` has ``trait`` (a boolean field) set, in order."""
    if trait not in TRAITS:
        raise ValueError(f"unknown kind trait {trait!r}; known: {', '.join(TRAITS)}")
    return tuple(k for k, t in MODEL_KINDS.items() if getattr(t, trait))


def needs(trait: str, kind: str) -> str | None:
    """None where kind ``kind`` has ``trait``; else the message's tail naming the kinds that
    have it, e.g. ``model.kind = "temt" (got 'tem')``."""
    if getattr(MODEL_KINDS[kind], trait):
        return None
    return " or ".join(f"model.kind = \"{k}\"" for k in kinds_with(trait)) + f" (got {kind!r})"
