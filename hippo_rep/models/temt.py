"""TEM-t: a transformer whose positional encodings come from an action-driven recurrent network.

Per environment, at step t with action a_t (taken from the previous node) and observation x_t:

1. path integration   g_pi_t = norm(f(g_{t-1} W_{a_t}))            (recurrent positional encoding)
2. prediction         softmax(β_t z(g_pi_t) W_e (z(G) W_e)^T) X W_x → MLP → logits over x_t,
                      β_t = β · log(#memories)                      (the memory neurons)
3. landmark           g_ret = MLP(softmax(β'_t (x_t X^T ⊙ z(g_pi) z(G)^T)) G)     (seed A.2)
                      g_t = g_pi + gate(g_ret, g_pi) ⊙ (g_ret − g_pi)
4. memory write       (g_t, x_t) is stored only if no stored memory holds that conjunction.

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

#: Added to denominators of normalisations (g rescaling, relu/power activations).
_EPS = 1e-6
#: Probability floor of the "direct" readout (an empty memory predicts uniformly).
_DIRECT_FLOOR = 1e-3
#: Scalar features appended to the gate's input (agreement, confidence).
_N_GATE_FEATURES = 2
#: Initial capacity of the memory buffer, in slots; it grows by doubling.
_INITIAL_CAPACITY = 64


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

    @property
    def capacity(self) -> int:
        return self.G.shape[1]

    def detach(self) -> MemoryState:
        return replace(self, g=self.g.detach())

    def grow(self, needed: int) -> MemoryState:
        """A copy with room for ``needed`` slots (new tensors: autograd may hold the old)."""
        if needed <= self.capacity:
            return replace(self, G=self.G.clone(), ZG=self.ZG.clone(), X=self.X.clone(),
                           C=self.C.clone(), T=self.T.clone(), count=self.count.clone())
        cap = max(needed, 2 * self.capacity)

        def pad(x, value):
            extra = x.new_full((x.shape[0], cap - x.shape[1], *x.shape[2:]), value)
            return torch.cat([x, extra], dim=1)

        return replace(self, G=pad(self.G, 0.0), ZG=pad(self.ZG, 0.0), X=pad(self.X, -1),
                       C=pad(self.C, 0), T=pad(self.T, -1), count=self.count.clone())


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
    """Layer norm with fixed weights: the z-score of g over units (seed A.2)."""
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


def memory_activation(logits: torch.Tensor, valid: torch.Tensor, kind: str = "softmax",
                      power: float = 4.0) -> torch.Tensor:
    """Memory-neuron activity over the last dim; zero where ``valid`` is False and for rows
    with no valid memory. ``softmax`` (the transformer), or the normalised ``relu`` /
    ``power`` alternatives suggested in seed A.2."""
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


class TEMt(nn.Module):
    """TEM-t (``config.kind == "temt"``) or its sinusoidal baseline (``"sinusoidal"``).

    Parameters
    ----------
    config : ModelConfig
    n_actions : int
        Size of the action set (stay + moves); action 0 is stay.
    n_obs : int
        Number of sensory categories.
    """

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
        self.W_a = nn.Parameter(w)
        self.g_init = nn.Parameter(torch.randn(d))
        self.W_e = nn.Linear(d, config.d_key, bias=False)  # keys = queries = z(g) W_e
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

    # ------------------------------------------------------------------ state
    def initial_state(self, batch_size: int, capacity: int = _INITIAL_CAPACITY) -> MemoryState:
        """An empty memory for ``batch_size`` fresh environments."""
        d, dev = self.config.n_g, self.W_a.device
        return MemoryState(
            g=self._g0(batch_size).detach(),
            G=torch.zeros(batch_size, capacity, d, device=dev),
            ZG=torch.zeros(batch_size, capacity, d, device=dev),
            X=torch.full((batch_size, capacity), -1, dtype=torch.long, device=dev),
            C=torch.zeros(batch_size, capacity, dtype=torch.long, device=dev),
            T=torch.full((batch_size, capacity), -1, dtype=torch.long, device=dev),
            count=torch.zeros(batch_size, dtype=torch.long, device=dev),
            t=0,
        )

    def _g0(self, batch_size: int) -> torch.Tensor:
        return _rescale(self._activation(self.g_init)).expand(batch_size, -1)

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
        """The action matrices W_a, (n_actions, d, d); g_next = f(g @ W_a[a])."""
        if self.config.transition_param == "orthogonal":
            return torch.linalg.matrix_exp(self.W_a - self.W_a.transpose(1, 2))
        return self.W_a

    def transition(self, g: torch.Tensor, action: torch.Tensor,
                   W: torch.Tensor | None = None) -> torch.Tensor:
        """Path integration: norm(f(g W_a)) for each environment's action. g (B, d), action (B,).
        ``W`` is :meth:`transition_matrices`, passed in to compute it once per chunk."""
        d = g.shape[-1]
        W = self.transition_matrices() if W is None else W
        # One matmul against all actions, then pick: faster than gathering (B, d, d) matrices.
        all_next = (g @ W.transpose(0, 1).reshape(d, -1)).view(-1, self.n_actions, d)
        nxt = all_next.gather(1, action.view(-1, 1, 1).expand(-1, 1, d)).squeeze(1)
        return _rescale(self._activation(nxt))

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
            Third input stream (``config.n_context > 0``).
        return_activity : bool
            Also return the memory-neuron activity in slot order (for recording).
        """
        B, L = obs.shape
        cfg = self.config
        fresh = state is None
        if fresh:
            state = self.initial_state(B, max(_INITIAL_CAPACITY, L))
        state = state.grow(int(state.count.max()) + L)
        if context is None:
            context = torch.zeros_like(obs)
        count0 = state.count.clone()
        if self.recurrent:
            g, g_pi, gate, written = self._loop(obs, actions, state, context, fresh)
        else:
            tt = torch.arange(state.t, state.t + L, device=obs.device)
            g = g_pi = sinusoidal_encoding(tt, cfg.n_g).expand(B, L, -1)
            gate = None
            written = torch.ones(B, L, dtype=torch.bool, device=obs.device)
            self._write_all(state, g, obs, context, written)
        slot = torch.where(written, count0[:, None] + written.long().cumsum(1) - 1, -1)
        logits_pi, act = self._predict(g_pi, g, obs, state, count0, written, return_activity)
        if self.recurrent:
            # Loss 2's query: detached by default, because its gradient through the landmark
            # path opens the gate on any retrieval (the retrieved memory always holds x_t) and
            # collapsed training in every run measured here.
            q = g if cfg.loss2_through_landmark else g.detach()
            logits_g, _ = self._predict(q, q, obs, state, count0, written, False)
        else:
            logits_g = logits_pi
        activity = None
        if return_activity:
            activity = self._to_slots(act, count0, slot, state.capacity)
        out = Output(logits_pi, logits_g, g, g_pi, written, slot, gate, activity)
        new_state = replace(state, g=g[:, -1].detach(), t=state.t + L)
        return out, new_state

    def _loop(self, obs, actions, state: MemoryState, context, fresh: bool):
        """Sequential part: path integration, landmark correction, memory writes.

        Writes into ``state``'s buffers in place (they are fresh copies, see ``grow``).
        """
        cfg = self.config
        B, L = obs.shape
        d = cfg.n_g
        ar = torch.arange(B, device=obs.device)
        rbeta = F.softplus(self.retrieval_beta_raw)
        g_prev = state.g
        W = self.transition_matrices()
        gs, gpis, gates = [], [], []
        written = torch.zeros(B, L, dtype=torch.bool, device=obs.device)
        for t in range(L):
            if fresh and t == 0:
                g_pi = self._g0(B)
            else:
                g_pi = self.transition(g_prev, actions[:, t], W)
            n = state.count  # memories so far, (B,)
            m = int(n.max())
            same_x = (state.X[:, :m] == obs[:, t, None]) & (state.C[:, :m] == context[:, t, None])
            valid = torch.arange(m, device=obs.device) < n[:, None]
            if cfg.landmark and m > 0:
                zq = _z(g_pi)
                sim = _ConstBmm.apply(zq[:, None], state.ZG[:, :m].transpose(1, 2))[:, 0] / d
                sx = same_x.float()
                conj = sim * sx if cfg.conjunction == "multiplicative" else sim + sx
                beta = rbeta * torch.log(n.clamp(min=1).float())[:, None]
                w = memory_activation(beta * conj, valid, "softmax")
                g_ret_raw = _ConstBmm.apply(w[:, None], state.G[:, :m])[:, 0]
                # Rescaled like every position, so that the MLP cannot inflate g (it did).
                g_ret = _rescale(g_ret_raw + self.retrieval_mlp(g_ret_raw))
                agree = (_z(g_ret_raw) * zq).mean(-1, keepdim=True)
                feats = torch.cat([g_ret, g_pi, agree, w.max(-1, keepdim=True)[0]], -1)
                gate = torch.sigmoid(self.gate_mlp(feats))
                gate = gate * (n > 0).float()[:, None]  # nothing to correct with yet
                g_t = g_pi + gate * (g_ret - g_pi)
            else:
                g_t, gate = g_pi, torch.zeros_like(g_pi)
            # Add-if-novel: skip the write when a memory of this observation already sits at
            # (nearly) this position.
            zt = _z(g_t.detach())
            if m > 0:
                sim_t = torch.bmm(state.ZG[:, :m], zt[:, :, None])[..., 0] / d
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
        return torch.stack(gs, 1), torch.stack(gpis, 1), torch.stack(gates, 1), written

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

    def _predict(self, query_g, chunk_g, obs, state: MemoryState, count0, written,
                 return_activity: bool):
        """Predict x_t for every step from memories written before t.

        Memory = the slots filled before this chunk (detached) followed by this chunk's steps
        (time-indexed, with gradient), valid where written and strictly earlier than t.
        Returns logits (B, L, n_obs) and the activity over [old slots | chunk steps].
        """
        cfg = self.config
        B, L = obs.shape
        m0 = int(count0.max())
        dev = obs.device
        zk = torch.cat([state.ZG[:, :m0], _z(chunk_g)], 1)
        K = self.W_e(zk)  # (B, m0 + L, d_key)
        Q = self.W_e(_z(query_g))  # (B, L, d_key)
        x_mem = torch.cat([state.X[:, :m0].clamp(min=0), obs], 1)
        V = self.W_x(x_mem)
        old_valid = (torch.arange(m0, device=dev) < count0[:, None])[:, None, :].expand(B, L, m0)
        causal = torch.ones(L, L, dtype=torch.bool, device=dev).tril(-1)
        new_valid = causal[None] & written[:, None, :]
        valid = torch.cat([old_valid, new_valid], -1)
        n = count0[:, None] + (written.long().cumsum(1) - written.long())  # memories before t
        beta = F.softplus(self.beta_raw) * torch.log(n.clamp(min=1).float())[..., None]
        sim = Q @ K.transpose(1, 2) / math.sqrt(cfg.d_key)
        act = memory_activation(beta * sim, valid, cfg.memory_activation, cfg.memory_power)
        for _ in range(cfg.retrieval_iterations - 1):
            # Hopfield-style refinement (seed A.2): the retrieved sensory distribution gates a
            # second pass, multiplicatively, like the landmark query.
            x_hat = act @ F.one_hot(x_mem, self.n_obs).float()  # (B, L, n_obs)
            sx = x_hat.gather(-1, x_mem[:, None, :].expand(B, L, -1))
            act = memory_activation(beta * sim * sx, valid, cfg.memory_activation,
                                    cfg.memory_power)
        if cfg.readout == "direct":
            # Values are the one-hot observations themselves: the prediction is the
            # activity-weighted vote of the memories (floored so that log stays finite).
            p = act @ F.one_hot(x_mem, self.n_obs).float()
            return torch.log(p + _DIRECT_FLOOR), act
        logits = self.readout(act @ V)
        return logits, act

    @staticmethod
    def _to_slots(act, count0, slot, capacity):
        """Reorder activity over [old slots | chunk steps] into slot order (B, L, capacity)."""
        B, L, _ = act.shape
        m0 = int(count0.max())
        out = act.new_zeros(B, L, capacity)
        out[:, :, :m0] = act[:, :, :m0]
        chunk = act[:, :, m0:]
        tgt = slot.clamp(min=0)[:, None, :].expand(B, L, L)
        # Unwritten steps carry zero activity (masked), so scattering them to slot 0 adds 0.
        out.scatter_add_(2, tgt, chunk * (slot >= 0)[:, None, :])
        return out


def _rescale(g: torch.Tensor) -> torch.Tensor:
    """Rescale to unit RMS (norm √d): repeated products with W_a neither explode nor vanish."""
    return g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + _EPS)


def _inv_softplus(y: float) -> float:
    return math.log(math.expm1(y))


def build_model(config: ModelConfig, n_actions: int, n_obs: int, seed: int = 0) -> TEMt:
    """A freshly initialised model with weights drawn from ``seed``."""
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return TEMt(config, n_actions, n_obs)
    finally:
        torch.random.set_rng_state(gen_state)
