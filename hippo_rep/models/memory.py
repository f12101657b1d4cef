"""The memory of TEM-t: the state a walk carries and the memory variants' strategies.

A TEM-t memory is a preallocated buffer per environment (:class:`MemoryState`) of detached
copies of past (g, z(g), x); the memory neurons attend over it (:func:`memory_activation`).

Memory variants (``model.memory``) are the strategy objects of :data:`MEMORY_VARIANTS`
(``TEMt.memory``); every one answers "which memories can step t see" with the same
:meth:`FullMemory.visible`: "full" keeps every memory; "window" lets the query at step t see
only memories written in its own block of ``memory_block`` steps or the ``memory_blocks``
blocks before (block sliding-window attention over the memory sequence); "fam" adds
``fam_slots`` feedback slots, each a (position, observation-distribution) pair that attends
once per block over [itself; the block's memories] (TransformerFAM's update with the model's
own keys) and is retrieved from together with the window (:func:`set_keep_logits`,
:func:`_distinct_copies`); "hebbian" replaces the memory neurons by TEM's outer-product
memory matrix (appendix A.1) read out linearly, see :func:`hebbian_matrix`.

:func:`load_across_memory` moves trained weights between variants (:data:`MEMORY_ONLY_WEIGHTS`
are the weights only some variants have). The model itself, and the forward passes that use
these strategies, are in :mod:`hippo_rep.models.temt`; this module imports nothing of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from hippo_rep.config import ModelConfig

#: Added to denominators of normalisations (g rescaling, relu/power activations).
_EPS = 1e-6
#: Probability floor of the "direct" readout (an empty memory predicts uniformly).
_DIRECT_FLOOR = 1e-3
#: The slot buffers of a :class:`MemoryState` and their value in an unused slot (float ones
#: hold a d-vector per slot).
_UNUSED_SLOT = {"G": 0.0, "ZG": 0.0, "X": -1, "C": 0, "T": -1}
#: Keep logits of ``fam_update = "keep"`` are this multiple of their parameters, so that Adam
#: (steps of about the learning rate per parameter) moves them at the scale of the slots'
#: attention scores (tens) within a fine-tune of a few hundred iterations.
_KEEP_LOGIT_SCALE = 100.0


class _SlotTrace(NamedTuple):
    """The FAM slots over one chunk: each distinct state once (they change only at block
    ends) and, per step, which state the step saw."""

    g: torch.Tensor  # (B, U, F, d) slot positions, U distinct states
    p: torch.Tensor  # (B, U, F, n_obs) slot observation distributions
    idx: torch.Tensor  # (L,) long, the state step t saw


@dataclass
class MemoryState:
    """What a walk carries from one chunk to the next (all detached).

    Attributes
    ----------
    g : (B, d) last corrected positional encoding
    G, ZG : (B, M, d) stored positional encodings and their z-scores
    X : (B, M) stored observations (-1 in unused slots)
    C : (B, M) stored contexts (0 when there is no context stream)
    T : (B, M) global step at which each memory was written (-1 unused)
    count : (B,) number of memories per environment
    t : global step of the next observation
    """

    g: torch.Tensor
    G: torch.Tensor
    ZG: torch.Tensor
    X: torch.Tensor
    C: torch.Tensor
    T: torch.Tensor
    count: torch.Tensor
    t: int = 0
    fam_g: torch.Tensor | None = None  # (B, F, d) FAM slot positions ("fam")
    fam_p: torch.Tensor | None = None  # (B, F, n_obs) FAM slot observation distributions
    hebb_V: torch.Tensor | None = None  # (B, n_obs, d) Hebbian prediction read-out ("hebbian")
    hebb_H: torch.Tensor | None = None  # (B, n_obs, d, d) Hebbian position memory

    @property
    def capacity(self) -> int:
        return self.G.shape[1]

    def detach(self) -> MemoryState:
        return replace(self, **{f.name: v.detach() for f in fields(self)
                                if isinstance(v := getattr(self, f.name), torch.Tensor)})

    def grow(self, needed: int) -> MemoryState:
        """A copy with room for ``needed`` slots (new tensors: autograd may hold the old)."""
        cap = self.capacity if needed <= self.capacity else max(needed, 2 * self.capacity)

        def pad(x, fill):
            return torch.cat([x, x.new_full((x.shape[0], cap - x.shape[1], *x.shape[2:]), fill)], 1)

        return replace(self, count=self.count.clone(),
                       **{k: pad(getattr(self, k), fill) for k, fill in _UNUSED_SLOT.items()})


def memory_activation(logits: torch.Tensor, valid: torch.Tensor, kind: str = "softmax",
                      power: float = 4.0) -> torch.Tensor:
    """Memory-neuron activity over the last dim; zero where ``valid`` is False and for rows
    with no valid memory. ``softmax`` (the transformer), or the normalised ``relu`` /
    ``power`` alternatives suggested in appendix A.2."""
    if kind == "softmax":
        # A large finite negative (not -inf) keeps rows with no valid memory free of NaN;
        # multiplying by the mask then zeroes them.
        x = torch.softmax(logits.masked_fill(~valid, -1e30), dim=-1)
        return x * valid
    r = torch.relu(logits).masked_fill(~valid, 0.0)
    if kind == "power":
        r = r**power
    elif kind != "relu":
        raise ValueError(f"memory_activation must be softmax, relu or power; got {kind!r}")
    return r / r.sum(-1, keepdim=True).clamp_min(1e-20)


class FullMemory:
    """``model.memory = "full"`` and the base of the memory-variant strategies
    (:data:`MEMORY_VARIANTS`): what a variant adds to the model, its state and each step, and
    :meth:`visible`, the one answer to "which memories can step t see" (retrieval, prediction,
    buffer trimming and the write-threshold calibration all ask it)."""

    n_slots = 0  # FAM feedback slots retrieved beside the memories

    def __init__(self, config: ModelConfig):
        self.block, self.blocks = config.memory_block, config.memory_blocks

    def window_start(self, t):
        """Earliest step whose memory the query at step(s) ``t`` sees: −1 (all) for each t."""
        return t * 0 - 1

    def visible(self, t, T):
        """Whether step(s) ``t`` see the memories written at steps ``T`` (broadcast; bool);
        that a memory exists and is older than t is checked apart."""
        return T >= self.window_start(t)

    def add_parameters(self, model) -> None:
        """Create the variant's own weights (after the shared ones, which then match a
        "full" model of the same seed)."""

    def initial_state(self, model, batch_size: int) -> dict:
        """The variant's fields of an empty :class:`MemoryState`."""
        return {}

    def end_of_step(self, model, state: MemoryState, t_next: int) -> None:
        """Update ``state`` in place once step ``t_next`` − 1 is written."""

    def run(self, model, *args):
        """One chunk: :meth:`~hippo_rep.models.temt.TEMt.forward` once the state is prepared."""
        return model._forward_attention(*args)


class WindowMemory(FullMemory):
    """``"window"``: step t sees the memories of its own block of ``memory_block`` steps and
    of the ``memory_blocks`` blocks before (block sliding-window attention)."""

    def window_start(self, t):
        return (t // self.block - self.blocks) * self.block


class FAMMemory(WindowMemory):
    """``"fam"``: the window plus ``fam_slots`` feedback slots, updated after every block
    (:meth:`~hippo_rep.models.temt.TEMt._fam_update`)."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.n_slots, self.beta_init = config.fam_slots, config.fam_beta_init

    def add_parameters(self, model):
        model.fam_init = nn.Parameter(torch.randn(self.n_slots, model.config.n_g))
        model.fam_beta_raw = nn.Parameter(torch.tensor(_inv_softplus(self.beta_init)))
        if model.config.fam_update == "keep":
            # Keep logit of slot f: fam_keep[f] + fam_keep_conf * max_o p_f(o) (0 at init).
            model.fam_keep = nn.Parameter(torch.zeros(self.n_slots))
            model.fam_keep_conf = nn.Parameter(torch.zeros(()))

    def initial_state(self, model, batch_size):
        return {"fam_g": _rescale(model.fam_init).expand(batch_size, -1, -1),
                "fam_p": torch.full((batch_size, self.n_slots, model.n_obs), 1 / model.n_obs,
                                    device=model.W_a.device)}

    def end_of_step(self, model, state, t_next):
        if t_next % self.block == 0:
            model._fam_update(state, t_next - self.block)


class HebbianMemory(FullMemory):
    """``"hebbian"``: TEM's memory matrix in place of the memory neurons
    (:meth:`~hippo_rep.models.temt.TEMt._forward_hebbian`)."""

    def initial_state(self, model, batch_size):
        d, n, dev = model.config.n_g, model.n_obs, model.W_a.device
        return {"hebb_V": torch.zeros(batch_size, n, d, device=dev),
                "hebb_H": torch.zeros(batch_size, n, d, d, device=dev)}

    def run(self, model, obs, actions, state, context, fresh, return_activity):
        return model._forward_hebbian(obs, actions, state, fresh, return_activity)


#: ``model.memory`` → its strategy (``TEMt.memory``).
MEMORY_VARIANTS = {"full": FullMemory, "window": WindowMemory, "fam": FAMMemory,
                   "hebbian": HebbianMemory}


@torch.no_grad()
def set_keep_logits(model: nn.Module, empty: float, filled: float) -> None:
    """Set the keep rule of ``fam_update = "keep"`` slots: keep logit ``empty`` for a slot at
    uniform p (largest probability 1/n_obs) and ``filled`` for one holding a whole
    conjunction (largest probability 1), the same for every slot."""
    conf = (filled - empty) / (1 - 1 / model.n_obs)
    model.fam_keep.fill_((empty - conf / model.n_obs) / _KEEP_LOGIT_SCALE)
    model.fam_keep_conf.fill_(conf / _KEEP_LOGIT_SCALE)


def _distinct_copies(score, valid, n_slots: int) -> torch.Tensor:
    """One-hot choices (B, F, F + m): slot by slot, the best valid candidate that no earlier
    slot took (columns ≥ ``n_slots`` are memories; a slot's own column is never taken).

    The greedy is sequential in the slots, but most slots keep themselves, so it runs in
    rounds: every slot not yet settled picks at once; the picks before the first slot that
    collides with an earlier one's memory (in any batch element) are what the slot-by-slot
    greedy picks too, so they are settled, and the next round starts at that slot. Rounds =
    collisions + 1, not ``n_slots`` (the tests check it against the plain loop).
    """
    B, _, C = score.shape
    taken = torch.zeros(B, C, dtype=torch.bool, device=score.device)
    picks = torch.empty(B, n_slots, dtype=torch.long, device=score.device)
    f0 = 0
    while f0 < n_slots:
        s = score[:, f0:n_slots].masked_fill(~valid[:, f0:n_slots] | taken[:, None], -1e30)
        i = s.argmax(-1)  # (B, R)
        mem = i >= n_slots
        R = i.shape[1]
        earlier = torch.ones(R, R, dtype=torch.bool, device=score.device).tril(-1)
        clash = ((i[:, :, None] == i[:, None, :]) & mem[:, :, None] & earlier).any(-1).any(0)
        r = int(clash.nonzero()[0, 0]) if clash.any() else R  # ≥ 1: slot 0 clashes with none
        picks[:, f0:f0 + r] = i[:, :r]
        hit = F.one_hot(i[:, :r], C).bool() & mem[:, :r, None]
        taken = taken | hit.any(1)
        f0 += r
    return F.one_hot(picks, C).to(score.dtype)


def _hebbian_logits(phi_q: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """Log of the linear Hebbian read-out (eq. 14) normalised over observations; uniform
    before anything is stored. phi_q (B, d), V (B, n_obs, d) → (B, n_obs)."""
    score = (V @ phi_q[:, :, None])[..., 0].clamp_min(0.0)
    total = score.sum(-1, keepdim=True)
    p = torch.where(total > 0, score / total.clamp_min(1e-20), 1.0 / V.shape[1])
    return torch.log(p + _DIRECT_FLOOR)


def hebbian_matrix(G: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """TEM's memory matrix (eq. 13, appendix A.1): ``M[i, j, k, l] = sum_tau G[tau, i] X[tau, j]
    G[tau, k] X[tau, l]``, the sum of outer products of ``p_tau = g_tau (x) x_tau``.

    Parameters
    ----------
    G : (T, d) positional encodings; X : (T, n) sensory vectors (one-hot or not).

    Returns
    -------
    (d, n, d, n) tensor.
    """
    p = G[:, :, None] * X[:, None, :]
    return torch.einsum("tij,tkl->ijkl", p, p)


def hebbian_retrieve(M: torch.Tensor, q: torch.Tensor, out: str) -> torch.Tensor:
    """Linear retrieval ``sum q_ij M_ijkl`` from :func:`hebbian_matrix`.

    ``q`` is (d, n) (e.g. ``outer(g, ones)`` for eq. 14, ``outer(ones, x)`` for eq. 15,
    ``outer(g, x)`` for eq. 16); ``out="x"`` sums over k and returns the n-vector over l;
    ``out="g"`` sums over l and returns the d-vector over k.
    """
    r = torch.einsum("ij,ijkl->kl", q, M)
    if out == "x":
        return r.sum(0)
    if out == "g":
        return r.sum(1)
    raise ValueError(f"out must be 'x' or 'g'; got {out!r}")


#: Weights only some memory variants have; loading across variants skips them.
MEMORY_ONLY_WEIGHTS = frozenset({"fam_init", "fam_beta_raw", "fam_keep", "fam_keep_conf"})


def load_across_memory(model: nn.Module, state_dict: dict) -> list[str]:
    """Load weights trained under another ``model.memory`` variant into ``model``.

    Weights only one side has (:data:`MEMORY_ONLY_WEIGHTS`) are skipped: dropped from the
    source, or left at ``model``'s fresh initialisation. Returns the problems (missing or
    unexpected other weights, or weights of another shape, e.g. FAM slots of another
    ``model.fam_slots``); empty when everything else loaded. Nothing loads when a shape
    differs.
    """
    own = model.state_dict()
    shapes = [f"{k} is {tuple(v.shape)} in the weights but {tuple(own[k].shape)} here"
              for k, v in state_dict.items() if k in own and v.shape != own[k].shape]
    if shapes:
        return shapes
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    return [f"missing {k}" for k in missing if k not in MEMORY_ONLY_WEIGHTS] + \
        [f"unexpected {k}" for k in unexpected if k not in MEMORY_ONLY_WEIGHTS]


def _rescale(g: torch.Tensor) -> torch.Tensor:
    """Rescale to unit RMS (norm √d): repeated products with W_a neither explode nor vanish."""
    return g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + _EPS)


def _inv_softplus(y: float) -> float:
    return math.log(math.expm1(y))
