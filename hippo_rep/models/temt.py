"""TEM-t: a transformer whose positional encodings come from an action-driven recurrent network.

Per environment, at step t with action a_t (taken from the previous node) and observation x_t:

1. path integration   g_pi_t = norm(f(g_{t-1} W_{a_t}))            (recurrent positional encoding;
                      norm = unit RMS, per plane, or none: ``config.g_norm``)
2. prediction         softmax(β_t z(g_pi_t) W_e (z(G) W_e)^T) X W_x → MLP → logits over x_t,
                      β_t = β · log(#memories)                      (the memory neurons)
3. landmark           g_ret = MLP(softmax(β'_t (x_t X^T ⊙ z(g_pi) z(G)^T)) G)     (app. A.2)
                      g_t = g_pi + gate(g_ret, g_pi) ⊙ (g_ret − g_pi)
4. memory write       (g_t, x_t) is stored only if no stored memory holds that conjunction.

Memory variants (``config.memory``: "full", "window", "fam", "hebbian") are the strategy
objects of :mod:`hippo_rep.models.memory` (``TEMt.memory``), which also holds the carried
:class:`~hippo_rep.models.memory.MemoryState`.

Appendix and equation numbers are those of Whittington, Warren & Behrens 2022 (TEM-t, ICLR).

Shapes: B environments, L steps in the chunk, d = n_g, M memory slots. The time loop holds only
what must be sequential (path integration, landmark retrieval, the gate, the write decision);
both predictions are computed afterwards for all steps at once with a causal validity mask.

The memory is a preallocated buffer per environment (``MemoryState``) holding detached
copies of past (g, z(g), x); the prediction attention over the current chunk uses the
time-indexed g_t themselves, so gradients reach past positional encodings within a chunk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from hippo_rep.config import ModelConfig
from hippo_rep.models import fused, transitions
from hippo_rep.models.memory import (
    _DIRECT_FLOOR,
    _KEEP_LOGIT_SCALE,
    _UNUSED_SLOT,
    MEMORY_VARIANTS,
    MemoryState,
    _distinct_copies,
    _hebbian_logits,
    _inv_softplus,
    _rescale,
    _SlotTrace,
    memory_activation,
)

#: Scalar features appended to the gate's input (agreement, confidence).
_N_GATE_FEATURES = 2
#: Range of the random initial wavelengths (nodes) of ``transition_param = "waves"``: the
#: triad control's span (5 to 17.6 nodes), every wave visible in a 16×16 recording and none
#: aliased on the lattice.
WAVE_INIT_WAVELENGTHS = (5.0, 18.0)
#: Initial capacity of the memory buffer, in slots; it grows by doubling.
_INITIAL_CAPACITY = 64


@dataclass
class Output:
    """Model outputs for one chunk; (B, L, ...) unless noted."""

    logits_pi: torch.Tensor  # prediction of x_t from g_pi_t (the real next-step prediction)
    logits_g: torch.Tensor  # prediction of x_t from the corrected g_t (loss 2)
    g: torch.Tensor  # corrected positional encoding
    g_pi: torch.Tensor  # path-integrated positional encoding
    written: torch.Tensor  # bool: step t wrote a new memory
    slot: torch.Tensor  # long: memory slot written at t (-1 if none)
    gate: torch.Tensor | None = None  # (B, L, d) landmark gate
    activity: torch.Tensor | None = None  # (B, L, M) memory-neuron activity in slot order
    fam_activity: torch.Tensor | None = None  # (B, L, F) prediction attention on FAM slots
    cells: torch.Tensor | None = None  # (B, L, n_cells) read-out cells r(g) (cells="readout")
    cells_pi: torch.Tensor | None = None  # (B, L, n_cells) read-out cells of g_pi


class _ConstBmm(torch.autograd.Function):
    """``bmm(a, m)`` where ``m`` is a constant slice of an append-only buffer.

    Autograd would save ``m`` with a version check, and later appends to the buffer would then
    fail the check. Appends only touch slots that were masked out when ``m`` was read, so the
    gradient ``grad @ m^T`` is unchanged by them (masked weights get zero gradient).
    """

    @staticmethod
    def forward(ctx, a, m):
        ctx.m = m
        return torch.bmm(a, m)

    @staticmethod
    def backward(ctx, grad):
        return torch.bmm(grad, ctx.m.transpose(1, 2)), None


def _z(g: torch.Tensor) -> torch.Tensor:
    """Layer norm with fixed weights: the z-score of g over units (appendix A.2)."""
    return F.layer_norm(g, g.shape[-1:])


def _mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))


def sinusoidal_encoding(t: torch.Tensor, d: int) -> torch.Tensor:
    """Fixed transformer positional encodings of time indices ``t`` → (..., d), unit RMS."""
    i = torch.arange(d // 2, device=t.device, dtype=torch.float32)
    freq = torch.exp(-math.log(10_000.0) * 2 * i / d)
    ang = t.to(torch.float32)[..., None] * freq
    pe = torch.zeros(*t.shape, d, device=t.device)
    pe[..., 0 : 2 * (d // 2) : 2] = torch.sin(ang)
    pe[..., 1 : 2 * (d // 2) : 2] = torch.cos(ang)
    return pe * math.sqrt(2.0)


class TEMt(nn.Module):
    """TEM-t (``config.kind == "temt"``) or its sinusoidal baseline (``"sinusoidal"``).

    Parameters
    ----------
    config : ModelConfig
    n_actions : int
        Size of the action set (stay + moves); action 0 is stay.
    n_obs : int
        Number of sensory categories.

    Attributes
    ----------
    fast_step : bool
        Run the time loop fused (:mod:`hippo_rep.models.fused`: same outputs, hand-written
        backward) where it covers the model (:func:`fused.unsupported`; elsewhere the eager
        loop runs, the same numbers); the trainer sets it from ``train.fast_step``. False:
        the eager loop, the oracle.
    """

    #: Default for models built outside the trainer (evaluation, recording, calibration).
    fast_step = True
    #: The fused loop's per-step work in C++ where :mod:`hippo_rep.models.fused_cpp` covers
    #: the model and builds (the same numbers as its Python loop); False: the Python loop.
    cpp_loop = True

    def __init__(self, config: ModelConfig, n_actions: int, n_obs: int):
        super().__init__()
        self.config, self.n_actions, self.n_obs = config, n_actions, n_obs
        d = config.n_g
        self.recurrent = config.kind == "temt"
        # Action-dependent transitions W_a, near identity so repeated products stay bounded.
        # "orthogonal" stores a generator S with W_a = exp(S - S^T) (identity at S = 0).
        w = config.transition_init_std * torch.randn(n_actions, d, d)
        if config.transition_param == "free":
            w += torch.eye(d)
        if config.transition_init == "triad":  # drawn after the random start: seeds agree
            n_mod = d // 6
            w = transitions.triad_generators(
                n_actions, d, [config.triad_wavelength * config.triad_scale_ratio ** m
                               for m in range(n_mod)],
                (torch.rand(n_mod) * math.pi / 3).tolist())
        if config.transition_param == "waves":  # W_a holds each rotation plane's wave vector
            w = self._initial_waves(n_actions, d, w)
            self.register_buffer("move_disp", transitions.move_displacements(n_actions),
                                 persistent=False)
        self.W_a = nn.Parameter(w)
        g_init = torch.randn(d)
        if config.transition_init == "triad":  # each wave of a triad equally strong
            phase = 2 * math.pi * torch.rand(d // 2)
            g_init = torch.stack([phase.cos(), phase.sin()], 1).reshape(d)
        self.g_init = nn.Parameter(g_init)
        # keys = queries = z(g) W_e, or r W_e for read-out cells r (model.cells = "readout")
        n_key_in = config.n_cells if config.cells == "readout" else d
        self.W_e = nn.Linear(n_key_in, config.d_key, bias=False)
        self.W_x = nn.Embedding(n_obs, config.d_value)  # values = x W_x (x one-hot)
        self.readout = _mlp(config.d_value, config.hidden, n_obs)
        self.beta_raw = nn.Parameter(torch.tensor(_inv_softplus(config.beta_init)))
        self.retrieval_beta_raw = nn.Parameter(
            torch.tensor(_inv_softplus(config.retrieval_beta_init)))
        # Residual retrieval MLP whose last layer starts at zero: retrieval starts as identity.
        self.retrieval_mlp = _mlp(d, config.hidden, d)
        nn.init.zeros_(self.retrieval_mlp[-1].weight)
        nn.init.zeros_(self.retrieval_mlp[-1].bias)
        # The gate sees g_ret, g_pi and two scalars an MLP computes poorly itself: the cosine
        # similarity of the retrieved and path-integrated positions, and the largest retrieval
        # weight (how confident the retrieval is).
        self.gate_mlp = _mlp(2 * d + _N_GATE_FEATURES, config.hidden, d)
        with torch.no_grad():
            self.gate_mlp[-1].weight.mul_(0.1)
            self.gate_mlp[-1].bias.fill_(config.gate_bias_init)
        self.memory = MEMORY_VARIANTS[config.memory](config)  # the memory variant's strategy
        self.memory.add_parameters(self)
        # Created last, so that every other weight matches a cells = "g" model of the same seed.
        self.cell_readout = None
        if config.cells == "readout":
            self.cell_readout = nn.Linear(d, config.n_cells)
            if config.cells_modular:  # cell c reads grid module c mod M only (not saved:
                # it follows from the config, so older checkpoints load unchanged)
                size = config.g_module_size
                module = torch.arange(d) // size
                mask = (module[None, :] == (torch.arange(config.n_cells) % (d // size))[:, None])
                self.register_buffer("cell_mask", mask.float(), persistent=False)
            with torch.no_grad():
                self.cell_readout.bias.fill_(config.cells_bias_init)

    def _initial_waves(self, n_actions: int, d: int, generators: torch.Tensor) -> torch.Tensor:
        """(d / 2, 2) wave vectors of ``transition_param = "waves"``: the triad's (read off the
        triad generators, ``transition_init = "triad"``) or, at random, a direction uniform
        on the circle and a wavelength log-uniform in :data:`WAVE_INIT_WAVELENGTHS` nodes for
        each plane independently (no triad, no module structure assumed)."""
        if self.config.transition_init == "triad":
            u = transitions.move_displacements(n_actions)[1:3]  # two independent moves
            theta = generators[1:3, 0::2, 1::2].diagonal(dim1=1, dim2=2)  # (2, d / 2)
            return torch.linalg.solve(u, theta).T.contiguous()
        lo, hi = (math.log(v) for v in WAVE_INIT_WAVELENGTHS)
        lam = torch.exp(lo + (hi - lo) * torch.rand(d // 2))
        ang = 2 * math.pi * torch.rand(d // 2)
        return (2 * math.pi / lam)[:, None] * torch.stack([ang.cos(), ang.sin()], 1)

    # ------------------------------------------------------------------ cells
    def cell_activity(self, g: torch.Tensor) -> torch.Tensor:
        """Read-out cells r = σ_c(A g + b) of positional encodings ``g`` (..., n_g) →
        (..., n_cells); ``model.cells = "readout"`` only."""
        if self.cell_readout is None:
            raise ValueError("cell_activity needs model.cells = \"readout\"")
        w = self.cell_readout.weight
        if self.config.cells_modular:
            w = w * self.cell_mask
        if self.config.cells_unit_norm:  # a fixed variance per cell (see the config)
            w = w / w.norm(dim=1, keepdim=True).clamp_min(1e-12)
        r = F.linear(g, w, self.cell_readout.bias)
        return torch.relu(r) if self.config.cells_activation == "relu" else r

    def displace(self, g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """States ``g`` (N, n_g) moved by W_a to displacements ``x`` (N, 2) in nodes, any real
        x (``transition_param = "waves"``, linear): rotation plane p turns by k_p · x, as
        ``g W_a`` does for one move's displacement. W_a is detached: for the cells' virtual
        constraints (``train.cells_virtual``)."""
        k = self.W_a.detach().to(g.dtype)  # (planes, 2): wave vectors, rad per node
        theta = x @ k.T  # (N, planes)
        c, s = theta.cos(), theta.sin()
        g0, g1 = g[:, 0::2], g[:, 1::2]  # row g times [[c, s], [-s, c]], plane by plane
        return torch.stack([g0 * c - g1 * s, g0 * s + g1 * c], -1).reshape(g.shape)

    def _keys(self, g: torch.Tensor) -> torch.Tensor:
        """Prediction keys (= queries) of positional encodings g: z(g) W_e, or r(g) W_e for
        read-out cells (not z-scored: their scale is theirs to pay for)."""
        if self.cell_readout is None:
            return self.W_e(_z(g))
        return self.W_e(self.cell_activity(g))

    # ------------------------------------------------------------------ state
    def initial_state(self, batch_size: int, capacity: int = _INITIAL_CAPACITY) -> MemoryState:
        """An empty memory for ``batch_size`` fresh environments."""
        d, dev = self.config.n_g, self.W_a.device
        return MemoryState(
            g=self._g0(batch_size).detach(),
            **{k: torch.full((batch_size, capacity, *((d,) if isinstance(fill, float) else ())),
                             fill, device=dev) for k, fill in _UNUSED_SLOT.items()},
            count=torch.zeros(batch_size, dtype=torch.long, device=dev),
            **self.memory.initial_state(self, batch_size),
        )

    def window_start(self, t: int) -> int:
        """Earliest global step whose memory the query at step ``t`` sees (negative = all):
        :meth:`FullMemory.window_start` of this model's memory variant."""
        return self.memory.window_start(t)

    @staticmethod
    def _first_slot(state: MemoryState, t_min: int) -> int:
        """First buffer slot any environment may still need: memories are appended in time
        order, so slots written before ``t_min`` by every environment form a prefix."""
        if t_min <= 0:
            return 0
        old = ((state.T >= 0) & (state.T < t_min)).sum(1)
        return int(old.min()) if old.numel() else 0

    def _g0(self, batch_size: int) -> torch.Tensor:
        return self._norm(self._activation(self.g_init)).expand(batch_size, -1)

    def _norm(self, g: torch.Tensor) -> torch.Tensor:
        """``config.g_norm``: unit RMS after every step ("rms"), unit RMS per rotation plane
        ("plane": every wave an equal share of the power), or as is ("none", the paper)."""
        if self.config.g_norm == "plane":
            return _rescale(g.unflatten(-1, (-1, 2))).flatten(-2)
        return _rescale(g) if self.config.g_norm == "rms" else g

    def _activation(self, g: torch.Tensor) -> torch.Tensor:
        act = self.config.transition_activation
        if act == "relu":
            return torch.relu(g)
        if act == "tanh":
            return torch.tanh(g)
        if act == "leaky_relu":
            return F.leaky_relu(g, 0.1)
        return g

    def transition_matrices(self) -> torch.Tensor:
        """The action matrices W_a, (n_actions, d, d); g_next = f(g @ W_a[a]). Block-diagonal
        with ``model.g_module_size`` (each module's units move among themselves only)."""
        if self.config.transition_param == "waves":
            return transitions.wave_rotations(self.W_a, self.move_disp)
        W = self.W_a
        if self.config.g_module_size:
            W = W * module_mask(self.config.n_g, self.config.g_module_size).to(W)
        if self.config.transition_param == "orthogonal":
            return torch.linalg.matrix_exp(W - W.transpose(1, 2))
        return W

    def transition(self, g: torch.Tensor, action: torch.Tensor,
                   W: torch.Tensor | None = None) -> torch.Tensor:
        """Path integration: norm(f(g W_a)) for each environment's action. g (B, d), action (B,).
        ``W`` is :meth:`transition_matrices`, passed in to compute it once per chunk."""
        d = g.shape[-1]
        W = self.transition_matrices() if W is None else W
        # One matmul against all actions, then pick: faster than gathering (B, d, d) matrices.
        all_next = (g @ W.transpose(0, 1).reshape(d, -1)).view(-1, self.n_actions, d)
        nxt = all_next.gather(1, action.view(-1, 1, 1).expand(-1, 1, d)).squeeze(1)
        return self._norm(self._activation(nxt))

    def move(self, g: torch.Tensor, action: int, W: torch.Tensor) -> torch.Tensor:
        """:meth:`transition` of every row of g (B, d) by one action: norm(f(g W_a)), one
        matmul instead of one against every action."""
        return self._norm(self._activation(g @ W[action]))

    def move_pairs(self) -> list[tuple[int, int]]:
        """Opposite move actions (a, ā), a < ā: moves k and k + n_moves/2 point opposite ways
        (action 0 is stay; see :data:`hippo_rep.worlds.DIRECTIONS`)."""
        half = (self.n_actions - 1) // 2
        return [(a, a + half) for a in range(1, half + 1)]

    def inverse_error(self) -> torch.Tensor:
        """Mean over opposite move pairs of ||W_a W_ā − I||²_F / n_g (0 when every move is
        undone by its opposite in the linear part of the transition); ``train.loss_inverse``."""
        W = self.transition_matrices()
        eye = torch.eye(W.shape[-1], device=W.device)
        errs = [(W[a] @ W[b] - eye).pow(2).sum() / W.shape[-1] for a, b in self.move_pairs()]
        return torch.stack(errs).mean()

    def smallest_loops(self) -> list[list[int]]:
        """Move actions of the smallest closed loops of the lattice: right-up-left-down on a
        square one (4 moves), the two triangles (0°, 120°, 240° and 60°, 180°, 300°) on a
        hexagonal one (6 moves)."""
        n_moves = self.n_actions - 1
        return [[1, 2, 3, 4]] if n_moves == 4 else [[1, 3, 5], [2, 4, 6]]

    def loop_error(self) -> torch.Tensor:
        """Mean over the smallest loops of ||Π_loop W_a − I||²_F / n_g; ``train.loss_loop``.
        With :meth:`inverse_error` also 0, the moves commute: g is then a function of the
        node, whatever the path there (a torus of waves), not of the path."""
        W = self.transition_matrices()
        eye = torch.eye(W.shape[-1], device=W.device)
        errs = []
        for loop in self.smallest_loops():
            prod = W[loop[0]]
            for a in loop[1:]:
                prod = prod @ W[a]
            errs.append((prod - eye).pow(2).sum() / W.shape[-1])
        return torch.stack(errs).mean()

    # ---------------------------------------------------------------- forward
    def forward(self, obs: torch.Tensor, actions: torch.Tensor, state: MemoryState | None = None,
                context: torch.Tensor | None = None,
                return_activity: bool = False) -> tuple[Output, MemoryState]:
        """Run one chunk of walks.

        Parameters
        ----------
        obs, actions : (B, L) long
            Observation at each step and the action that led there (``actions[:, 0]`` of a
            fresh walk is ignored).
        state : MemoryState, optional
            Carried from the previous chunk of the same walks; None starts fresh walks.
        context : (B, L) long, optional
            A third input stream (the option of section 7): integer context labels; a memory then
            stores (g, x, context) and the conjunction needs the context to match too.
        return_activity : bool
            Also return the memory-neuron activity in slot order (for recording).
        """
        B, L = obs.shape
        fresh = state is None
        if fresh:
            state = self.initial_state(B, max(_INITIAL_CAPACITY, L))
        state = state.grow(int(state.count.max()) + L)
        if context is None:
            context = torch.zeros_like(obs)
        return self.memory.run(self, obs, actions, state, context, fresh, return_activity)

    def _forward_attention(self, obs, actions, state: MemoryState, context, fresh: bool,
                           return_activity: bool) -> tuple[Output, MemoryState]:
        """:meth:`forward` with memory neurons (every variant but "hebbian")."""
        B, L = obs.shape
        cfg = self.config
        count0 = state.count.clone()
        fam = None
        # First buffer slot any query of this chunk can see (0 unless window/fam).
        s0 = self._first_slot(state, self.window_start(state.t))
        if self.recurrent:
            g, g_pi, gate, written, fam = self._loop(obs, actions, state, context, fresh, s0)
        else:
            tt = torch.arange(state.t, state.t + L, device=obs.device)
            g = g_pi = sinusoidal_encoding(tt, cfg.n_g).expand(B, L, -1)
            gate = None
            written = torch.ones(B, L, dtype=torch.bool, device=obs.device)
            self._write_all(state, g, obs, context, written)
        slot = torch.where(written, count0[:, None] + written.long().cumsum(1) - 1, -1)
        logits_pi, act, act_fam = self._predict(g_pi, g, obs, state, count0, written, s0, fam)
        if self.recurrent:
            # Loss 2's query: detached by default, because its gradient through the landmark
            # path opens the gate on any retrieval (the retrieved memory always holds x_t) and
            # collapsed training in every run measured here.
            q = g if cfg.loss2_through_landmark else g.detach()
            logits_g, _, _ = self._predict(q, q, obs, state, count0, written, s0, fam)
        else:
            logits_g = logits_pi
        activity = None
        if return_activity:
            activity = self._to_slots(act, count0, slot, state.capacity, s0)
        out = Output(logits_pi, logits_g, g, g_pi, written, slot, gate, activity, act_fam)
        if self.cell_readout is not None:
            out.cells, out.cells_pi = self.cell_activity(g), self.cell_activity(g_pi)
        new_state = replace(state, g=g[:, -1].detach(), t=state.t + L)
        return out, new_state

    def _loop(self, obs, actions, state: MemoryState, context, fresh: bool, s0: int):
        """Sequential part: path integration, landmark correction, memory writes.

        Writes into ``state``'s buffers in place (they are fresh copies, see ``grow``).
        With :attr:`fast_step` on, the covered variants run :func:`fused.fused_loop`.
        """
        if self.fast_step and fused.unsupported(self) is None:
            return fused.fused_loop(self, obs, actions, state, context, fresh, s0)
        cfg = self.config
        B, L = obs.shape
        d = cfg.n_g
        ar = torch.arange(B, device=obs.device)
        rbeta = F.softplus(self.retrieval_beta_raw)
        g_prev = state.g
        W = self.transition_matrices()
        gs, gpis, gates, fgs, fps, fidx = [], [], [], [], [], []
        written = torch.zeros(B, L, dtype=torch.bool, device=obs.device)
        n_slots = self.memory.n_slots
        for t in range(L):
            tg = state.t + t
            if fresh and t == 0:
                g_pi = self._g0(B)
            else:
                g_pi = self.transition(g_prev, actions[:, t], W)
            n = state.count  # memories so far, (B,)
            m = int(n.max())
            X, T = state.X[:, s0:m], state.T[:, s0:m]
            same_x = (X == obs[:, t, None]) & (state.C[:, s0:m] == context[:, t, None])
            valid = (torch.arange(s0, m, device=obs.device) < n[:, None]) & \
                self.memory.visible(tg, T)
            n_vis = valid.sum(1) + n_slots
            if n_slots:
                # The slots change only at block ends: keep each state once, and per step
                # the index of the state it saw.
                if not fgs or fgs[-1] is not state.fam_g:
                    fgs.append(state.fam_g)
                    fps.append(state.fam_p)
                fidx.append(len(fgs) - 1)
            if cfg.landmark and (m > s0 or n_slots):
                zq = _z(g_pi)
                sim = _ConstBmm.apply(zq[:, None], state.ZG[:, s0:m].transpose(1, 2))[:, 0] / d
                sx = same_x.float()
                keys_valid = valid
                if n_slots:
                    sim = torch.cat([sim, (_z(state.fam_g) * zq[:, None]).mean(-1)], 1)
                    sx = torch.cat([sx, state.fam_p[ar, :, obs[:, t]]], 1)
                    keys_valid = torch.cat([valid, valid.new_ones(B, n_slots)], 1)
                conj = sim * sx if cfg.conjunction == "multiplicative" else sim + sx
                beta = rbeta * torch.log(n_vis.clamp(min=1).float())[:, None]
                w = memory_activation(beta * conj, keys_valid, "softmax")
                g_ret_raw = _ConstBmm.apply(w[:, None, :m - s0], state.G[:, s0:m])[:, 0]
                if n_slots:
                    g_ret_raw = g_ret_raw + torch.bmm(w[:, None, m - s0:], state.fam_g)[:, 0]
                g_t, gate = self._correct(g_pi, zq, g_ret_raw, w.max(-1, keepdim=True)[0],
                                          (n_vis > 0).float()[:, None])
            else:
                g_t, gate = g_pi, torch.zeros_like(g_pi)
            # Add-if-novel: skip the write when a memory of this observation already sits at
            # (nearly) this position.
            zt = _z(g_t.detach())
            if m > s0:
                sim_t = torch.bmm(state.ZG[:, s0:m], zt[:, :, None])[..., 0] / d
                dup = ((sim_t > cfg.write_threshold) & same_x & valid).any(1)
                new = ~dup
            else:
                new = torch.ones(B, dtype=torch.bool, device=obs.device)
            written[:, t] = new
            idx = state.count
            keep = new[:, None]
            state.G[ar, idx] = torch.where(keep, g_t.detach(), state.G[ar, idx])
            state.ZG[ar, idx] = torch.where(keep, zt, state.ZG[ar, idx])
            state.X[ar, idx] = torch.where(new, obs[:, t], state.X[ar, idx])
            state.C[ar, idx] = torch.where(new, context[:, t], state.C[ar, idx])
            state.T[ar, idx] = torch.where(new, state.t + t, state.T[ar, idx])
            state.count = state.count + new.long()
            gs.append(g_t)
            gpis.append(g_pi)
            gates.append(gate)
            g_prev = g_t
            self.memory.end_of_step(self, state, tg + 1)
        fam = _SlotTrace(torch.stack(fgs, 1), torch.stack(fps, 1),
                         torch.tensor(fidx, device=obs.device)) if n_slots else None
        return torch.stack(gs, 1), torch.stack(gpis, 1), torch.stack(gates, 1), written, fam

    def _correct(self, g_pi, zq, g_ret_raw, confidence, has_memory):
        """Landmark correction: g_t = g_pi + gate ⊙ (g_ret − g_pi), for every memory variant.

        ``zq`` = z(g_pi); ``confidence`` (B, 1) how sure the retrieval is (largest retrieval
        weight, or the Hebbian read-out's probability of x_t); ``has_memory`` (B, 1) zeroes
        the gate while there is nothing to correct with. Returns (g_t, gate).
        """
        # Normalised like every position, so that the MLP cannot inflate g (it did).
        g_ret = self._norm(g_ret_raw + self.retrieval_mlp(g_ret_raw))
        agree = (_z(g_ret_raw) * zq).mean(-1, keepdim=True)
        feats = torch.cat([g_ret, g_pi, agree, confidence], -1)
        gate = torch.sigmoid(self.gate_mlp(feats)) * has_memory
        return g_pi + gate * (g_ret - g_pi), gate

    def _fam_update(self, state: MemoryState, block_start: int) -> None:
        """TransformerFAM's feedback update at the end of a block, in place on ``state``.

        Each slot's query z(g_f) W_e attends over [all slots; the memories written in the
        block] with the model's own keys; the slot becomes the attention-weighted position
        (rescaled) and observation distribution (``fam_update = "hard"``: a copy of the one
        it attends to most). Attending to itself is the "FAM copy". ``"keep"`` adds the learned
        keep logit ``fam_keep[f] + fam_keep_conf * max_o p_f(o)`` to slot f's score for itself
        and copies like "hard" with a straight-through gradient (the softmax's).
        """
        cfg = self.config
        B, F_ = state.fam_g.shape[:2]
        m = int(state.count.max())
        sb = self._first_slot(state, block_start)
        in_block = (state.T[:, sb:m] >= block_start) & \
            (torch.arange(sb, m, device=state.T.device) < state.count[:, None])
        keys_g = torch.cat([state.fam_g, state.G[:, sb:m]], 1)
        keys_z = torch.cat([_z(state.fam_g), state.ZG[:, sb:m]], 1)
        vals_p = torch.cat([state.fam_p,
                            F.one_hot(state.X[:, sb:m].clamp(min=0), self.n_obs).float()], 1)
        q = self.W_e(_z(state.fam_g))
        k = self.W_e(keys_z)
        sim = q @ k.transpose(1, 2) / math.sqrt(cfg.d_key)
        valid = torch.cat([in_block.new_ones(B, F_), in_block], 1)[:, None, :]
        score = F.softplus(self.fam_beta_raw) * sim
        valid = valid.expand(-1, F_, -1)
        if cfg.fam_update == "keep":
            score, valid = self._keep_scores(state, score, valid, sb, m)
        w = memory_activation(score, valid)
        if cfg.fam_update == "keep":
            w = _distinct_copies(score, valid, F_) + (w - w.detach())  # straight through
        elif cfg.fam_update == "hard":
            w = F.one_hot(w.argmax(-1), w.shape[-1]).to(w.dtype)
        state.fam_g = _rescale(w @ keys_g)
        state.fam_p = w @ vals_p

    def _keep_scores(self, state: MemoryState, score, valid, sb: int, m: int):
        """``fam_update = "keep"``: add slot f's keep logit ``fam_keep[f] + fam_keep_conf *
        max_o p_f(o)`` (times :data:`_KEEP_LOGIT_SCALE`) to its score for itself, and narrow
        the candidates to itself and the block's memories no slot holds yet (the model's
        add-if-novel rule: same x, correlation of z(g) above ``write_threshold``)."""
        F_ = score.shape[1]
        conf = state.fam_p.amax(-1)  # (B, F)
        keep = _KEEP_LOGIT_SCALE * (self.fam_keep + self.fam_keep_conf * conf)
        score = score + F.pad(torch.diag_embed(keep), (0, score.shape[-1] - F_))
        corr = (_z(state.fam_g) @ state.ZG[:, sb:m].transpose(1, 2)) / self.config.n_g
        held = ((corr > self.config.write_threshold) & (conf[:, :, None] > 0.5)
                & (state.fam_p.argmax(-1)[:, :, None] == state.X[:, None, sb:m])).any(1)
        eye = torch.eye(F_, dtype=torch.bool, device=valid.device).expand(valid.shape[0], -1, -1)
        return score, torch.cat([eye, valid[:, :, F_:] & ~held[:, None, :]], -1)

    def _forward_hebbian(self, obs, actions, state: MemoryState, fresh: bool,
                         return_activity: bool) -> tuple[Output, MemoryState]:
        """TEM's Hebbian memory (appendix A.1) in place of the memory neurons.

        The memory matrix ``M = sum_tau p_tau p_tau^T`` with ``p = phi(g) (x) x`` is kept in
        the two contractions the model reads (exact for one-hot x, see
        :func:`hebbian_matrix`): ``V[l] = sum_{tau: x_tau = l} phi_tau sum_k phi_tau,k`` for
        the prediction (eq. 14, query phi(g_pi) (x) 1) and ``H[j] = sum_{tau: x_tau = j}
        g_tau phi_tau^T`` for the landmark retrieval (eq. 16, query phi(g_pi) (x) x_t,
        hetero-associating the stored position). ``phi = relu(z(g))``: non-negative, so the
        linear read-out is a mixture. Every step is written, decayed by ``hebbian_decay``.
        """
        cfg = self.config
        B, L = obs.shape
        ar = torch.arange(B, device=obs.device)
        lam = cfg.hebbian_decay
        W = self.transition_matrices()
        # H is updated in place (its rows are read through indexing, i.e. copies, so autograd
        # never holds it); a copy per chunk leaves the caller's state untouched. V is read
        # whole by the prediction, so it is replaced, not modified.
        V, H = state.hebb_V, state.hebb_H.clone()
        g_prev = state.g
        gs, gpis, gates, lp, lg = [], [], [], [], []
        for t in range(L):
            g_pi = self._g0(B) if fresh and t == 0 else self.transition(g_prev, actions[:, t], W)
            phi_q = torch.relu(_z(g_pi))
            lp.append(_hebbian_logits(phi_q, V))
            any_mem = (V.abs().sum((1, 2)) > 0).float()[:, None]
            if cfg.landmark:
                g_ret_raw = (H[ar, obs[:, t]] @ phi_q[:, :, None])[..., 0]
                g_ret_raw = torch.where(any_mem > 0, g_ret_raw, g_pi)
                conf = lp[-1].softmax(-1).gather(1, obs[:, t, None])
                g_t, gate = self._correct(g_pi, _z(g_pi), g_ret_raw, conf, any_mem)
            else:
                g_t, gate = g_pi, torch.zeros_like(g_pi)
            q2 = g_t if cfg.loss2_through_landmark else g_t.detach()
            lg.append(_hebbian_logits(torch.relu(_z(q2)), V))
            # Hebbian write of p_t = phi(g_t) (x) x_t (detached: the memory is not trained).
            gw = g_t.detach()
            phi = torch.relu(_z(gw))
            onehot = F.one_hot(obs[:, t], self.n_obs).float()
            V = lam * V + onehot[:, :, None] * (phi * phi.sum(-1, keepdim=True))[:, None, :]
            if lam != 1.0:
                H.mul_(lam)
            H[ar, obs[:, t]] += gw[:, :, None] * phi[:, None, :]
            gs.append(g_t)
            gpis.append(g_pi)
            gates.append(gate)
            g_prev = g_t
        g = torch.stack(gs, 1)
        written = torch.zeros(B, L, dtype=torch.bool, device=obs.device)
        slot = torch.full((B, L), -1, dtype=torch.long, device=obs.device)
        activity = obs.new_zeros(B, L, state.capacity, dtype=torch.float32) \
            if return_activity else None
        out = Output(torch.stack(lp, 1), torch.stack(lg, 1), g, torch.stack(gpis, 1), written,
                     slot, torch.stack(gates, 1), activity)
        new_state = replace(state, g=g[:, -1].detach(), t=state.t + L, hebb_V=V, hebb_H=H)
        return out, new_state

    def _write_all(self, state: MemoryState, g, obs, context, written):
        """Baseline: every step writes a memory (its positional encoding is always new)."""
        B, L = obs.shape
        ar = torch.arange(B, device=obs.device)[:, None]
        idx = state.count[:, None] + torch.arange(L, device=obs.device)
        state.G[ar, idx] = g.detach()
        state.ZG[ar, idx] = _z(g.detach())
        state.X[ar, idx] = obs
        state.C[ar, idx] = context
        state.T[ar, idx] = state.t + torch.arange(L, device=obs.device)
        state.count = state.count + L

    def _predict(self, query_g, chunk_g, obs, state: MemoryState, count0, written, s0: int,
                 fam: _SlotTrace | None = None):
        """Predict x_t for every step from memories written before t.

        Memory = the slots ``s0:`` filled before this chunk (detached) followed by this
        chunk's steps (time-indexed, with gradient), valid where written, strictly earlier
        than t and (window/fam) inside t's window; with FAM, then the F slots as they were at
        t (``fam``, see :class:`_SlotTrace`). Returns logits (B, L, n_obs),
        the activity over [old slots s0: | chunk steps] and the activity on the FAM slots.
        """
        cfg = self.config
        B, L = obs.shape
        m0 = int(count0.max())
        dev = obs.device
        if self.cell_readout is None:
            K = self.W_e(torch.cat([state.ZG[:, s0:m0], _z(chunk_g)], 1))  # (B, m0-s0+L, d_key)
        else:  # the stored (detached) g through today's read-out: A and b learn from them too
            K = self._keys(torch.cat([state.G[:, s0:m0], chunk_g], 1))
        Q = self._keys(query_g)  # (B, L, d_key)
        x_mem = torch.cat([state.X[:, s0:m0].clamp(min=0), obs], 1)
        V = self.W_x(x_mem)
        old_valid = (torch.arange(s0, m0, device=dev) < count0[:, None])[:, None, :]
        old_valid = old_valid.expand(B, L, m0 - s0)
        steps = torch.arange(state.t, state.t + L, device=dev)
        old_valid = old_valid & self.memory.visible(steps[None, :, None], state.T[:, None, s0:m0])
        causal = torch.ones(L, L, dtype=torch.bool, device=dev).tril(-1) & \
            self.memory.visible(steps[:, None], steps[None, :])
        new_valid = causal[None] & written[:, None, :]
        valid = torch.cat([old_valid, new_valid], -1)
        sim = Q @ K.transpose(1, 2) / math.sqrt(cfg.d_key)
        if fam is not None:
            # keys once per slot state, then each step's state: (B, L, F, d_key)
            K_fam = self._keys(fam.g)[:, fam.idx]
            sim = torch.cat([sim, (Q[:, :, None, :] * K_fam).sum(-1) / math.sqrt(cfg.d_key)],
                            -1)
            n_slots = fam.g.shape[2]
            valid = torch.cat([valid, valid.new_ones(B, L, n_slots)], -1)
        n = valid.sum(-1, keepdim=True)  # memories (and slots) the query at t sees
        beta = F.softplus(self.beta_raw) * torch.log(n.clamp(min=1).float())
        act = memory_activation(beta * sim, valid, cfg.memory_activation, cfg.memory_power)
        act_fam = None
        if fam is not None:
            act, act_fam = act[..., :-n_slots], act[..., -n_slots:]
        for _ in range(cfg.retrieval_iterations - 1):
            # Hopfield-style refinement (appendix A.2): the retrieved sensory distribution gates a
            # second pass, multiplicatively, like the landmark query.
            x_hat = act @ F.one_hot(x_mem, self.n_obs).float()  # (B, L, n_obs)
            sx = x_hat.gather(-1, x_mem[:, None, :].expand(B, L, -1))
            act = memory_activation(beta * sim * sx, valid, cfg.memory_activation,
                                    cfg.memory_power)
        if cfg.readout == "direct":
            # Values are the one-hot observations themselves: the prediction is the
            # activity-weighted vote of the memories (floored so that log stays finite).
            p = act @ F.one_hot(x_mem, self.n_obs).float()
            if act_fam is not None:
                p = p + (act_fam[..., None] * fam.p[:, fam.idx]).sum(-2)
            return torch.log(p + _DIRECT_FLOOR), act, act_fam
        r = act @ V
        if act_fam is not None:
            r = r + (act_fam[..., None] * (fam.p @ self.W_x.weight)[:, fam.idx]).sum(-2)
        return self.readout(r), act, act_fam

    @staticmethod
    def _to_slots(act, count0, slot, capacity, s0: int = 0):
        """Reorder activity over [old slots s0: | chunk steps] into slot order (B, L, capacity)."""
        B, L, _ = act.shape
        m0 = int(count0.max())
        out = act.new_zeros(B, L, capacity)
        out[:, :, s0:m0] = act[:, :, :m0 - s0]
        chunk = act[:, :, m0 - s0:]
        tgt = slot.clamp(min=0)[:, None, :].expand(B, L, L)
        # Unwritten steps carry zero activity (masked), so scattering them to slot 0 adds 0.
        out.scatter_add_(2, tgt, chunk * (slot >= 0)[:, None, :])
        return out


def module_mask(n_g: int, size: int) -> torch.Tensor:
    """(n_g, n_g) block-diagonal 0/1 mask of grid modules of ``size`` units (all ones for
    ``size`` 0: one module)."""
    if not size:
        return torch.ones(n_g, n_g)
    m = torch.arange(n_g) // size
    return (m[:, None] == m[None, :]).float()
