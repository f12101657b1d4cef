"""TEM: the Tolman-Eichenbaum Machine (Whittington et al. 2020, Cell), ``model.kind = "tem"``.

Written from the paper's equations; the defaults are those of torch_tem (the public PyTorch
port), whose source was read only to check the reading. Per environment, at step t
with the action a_t that led to the current node and observation x_t (one-hot, n_obs):

Abstract location g (n_f frequency modules, module 0 the highest frequency)::

    g_gen_t = clamp(g_{t-1} + g_{t-1} D_{a_t}, -1, 1)                     (path integration)

Sizes, rates and iteration counts are the ``[model.tem]`` section's
(:class:`~hippo_rep.config.TEMModelConfig`), the loss weights and annealing the
``[train.tem]`` section's (:class:`~hippo_rep.config.TEMTrainConfig`).

D_a is a block matrix produced from the action by a small MLP (hidden
``model.tem.transition_hidden`` per module); module f receives input only from modules of
lower or equal frequency (hierarchical, low → high). A new walk starts at the learned g_init.

Sensory input: x_c = two-hot compression of x (``model.tem.n_x_c`` units); per module
x_f ← (1 − α_f) x_f + α_f x_c, α_f = sigmoid(learned), initially ``model.tem.freqs``; the
memory sees x̃_f = sigmoid(w_f) · normalise(relu(x_f − mean x_f)).

Grounded location p (per module, flattened, n_p = Σ_f n_sub_f · n_x_c)::

    p_f = f_p(flatten(g_down_f ⊗ x̃_f)),   f_p(z) = leaky_relu(clamp(z, −1, 1))

g_down_f = the first ``model.tem.n_g_sub[f]`` units of module f.

Hebbian memory (two of them: generative M_gen, hierarchically masked, and inference M_inf)::

    M_t = λ M_{t−1} + η (p_t + p̂_t)ᵀ (p_t − p̂_t)         (row = from, column = to)

with p̂ the memory retrieved at t (only the unpredicted part is added). Retrieval is the
attractor h ← f_p(κ h + h M) from a query, iterated ``model.tem.iters_gen`` /
``model.tem.iters_inf`` times per module (low frequencies stop early in the generative
memory). torch_tem also clamps M to [−1, 1] after each update; the paper does not, and
neither does this module, which lets M be kept exactly as its rank-one terms
(``TEMState.U``, ``V``): a retrieval then costs O(steps · n_p) instead of O(n_p²) while the
walk is shorter than n_p / 2 steps, and the terms are folded into a dense matrix beyond
that.

Inference pass: p_x = attractor(x̃ tiled over g units; M_inf); g_mem = MLP(p_x summed over
sensory units), clamped; g_inf = the precision-weighted mean of g_gen (σ from an MLP of
g_{t−1}) and g_mem (σ from an MLP of ‖g_mem‖² and the error of the x predicted from p_x,
offset early in training, see :func:`tem_schedule`); p_inf = f_p(g_inf_down ⊗ x̃).

Generative pass: p_gen = attractor(g_down tiled over sensory units; M_gen) for g = g_gen
(the real next-step prediction, before x_t is seen) and g = g_inf; x predicted from the
highest-frequency module of p: logits = MLP(w_x · Σ_g p_0 + b_x).

Losses (unweighted, means over environments and steps, in torch_tem's order): ``p_g``
½‖p_inf − p_gen(g_inf)‖², ``p_x`` ½‖p_inf − p_x‖², ``x_gen`` CE of x from p_gen(g_gen),
``x_g`` CE of x from p_gen(g_inf), ``x_p`` CE of x from p_inf, ``g`` ½‖g_inf − g_gen‖²,
``reg_g`` ‖g_inf‖², ``reg_p`` ‖p_inf‖₁ (torch_tem's L1). Their weights and annealing are in
:func:`tem_schedule`.

Shapes: B environments, L steps in the chunk, n_g = Σ model.tem.n_g, n_p as above. The only
Python loops are over time steps and attractor iterations; modules are handled with block
masks.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from hippo_rep.config import ModelConfig, TrainConfig

#: Slope of f_p's leaky ReLU (torch_tem's utils.leaky_relu).
LEAKY_SLOPE = 0.01
#: Standard deviation of the truncated-normal initial g and its log σ (torch_tem g_init_std).
G_INIT_STD = 0.5
#: Standard deviation of the last layer of the memory → g MLP (torch_tem g_mem_std).
G_MEM_STD = 0.1
#: Hidden width of the x decompression MLP per compressed unit (torch_tem: 20 · n_x_c).
C_STAR_HIDDEN_PER_UNIT = 20
#: σ added to the memory-inferred g early in training, times the p2g offset (torch_tem
#: p2g_sig_val): inference then trusts path integration until the memory is useful.
P2G_SIGMA = 10_000.0
#: Steps per internal sub-chunk when no gradient is needed (bounds the per-step cost).
NOGRAD_CHUNK = 64
#: Names of TEM's loss terms, in torch_tem's order (logged to metrics.csv as ``tem_<name>``).
LOSS_NAMES = ("p_g", "p_x", "x_gen", "x_g", "x_p", "g", "reg_g", "reg_p")
_EPS = 1e-8


@dataclass
class TEMOutput:
    """Model outputs for one chunk, (B, L, ...): the fields of TEM-t's
    :class:`hippo_rep.models.temt.Output` that apply (same names and meanings, so that
    evaluation and training read either), plus TEM's own ``p`` and ``terms``.

    ``logits_pi`` is x predicted from g_gen (before x_t is seen), ``logits_g`` from g_inf;
    ``g`` is g_inf and ``g_pi`` g_gen. ``written`` is all False and ``slot`` all −1: TEM has
    no memory slots (its Hebbian matrices change at every step). ``p`` (B, L, n_p) is the
    inferred grounded location, ``activity`` the same when asked for, ``terms`` the unweighted
    loss terms of the chunk (:data:`LOSS_NAMES`, means over environments and steps) and
    ``step_terms`` the same per environment and step, (B, L). ``p_hat_gen`` and
    ``p_hat_inf`` (B, L, n_p) are the memories retrieved at each step against which ``p``
    is written (from g_inf in the generative memory, from x̃ in the inference memory):
    step t adds η (p + p̂)ᵀ(p − p̂) to each.
    """

    logits_pi: torch.Tensor
    logits_g: torch.Tensor
    g: torch.Tensor
    g_pi: torch.Tensor
    written: torch.Tensor
    slot: torch.Tensor
    p: torch.Tensor
    terms: dict
    p_hat_gen: torch.Tensor | None = None
    p_hat_inf: torch.Tensor | None = None
    step_terms: dict | None = None
    activity: torch.Tensor | None = None
    gate: None = None  # TEM has no landmark gate
    fam_activity: None = None  # nor FAM slots


@dataclass
class TEMState:
    """What a walk carries from one chunk to the next (all detached).

    Attributes
    ----------
    g : (B, n_g) last inferred abstract location
    x_f : (B, n_f, n_x_c) temporally filtered sensory input per module
    U, V : (2, B, n_f, K, P) rank-one terms of [M_gen, M_inf] written at steps t − K … t − 1
        (V already multiplied by η), p in TEM's padded layout (see :class:`TEM`); memory i
        is M_i = λ^K D_i + Σ_k λ^(K−1−k) U_ikᵀ V_ik (M_gen masked low → high frequency)
    D : (2, B, n_f P, n_f P) or None; the dense part (terms folded in before step t − K)
    t : global step of the next observation
    """

    g: torch.Tensor
    x_f: torch.Tensor
    U: torch.Tensor
    V: torch.Tensor
    D: torch.Tensor | None
    t: int = 0

    @property
    def n_terms(self) -> int:
        return self.U.shape[3]

    @property
    def count(self) -> torch.Tensor:
        """Hebbian writes so far per environment (one per step), (B,)."""
        return torch.full((self.g.shape[0],), self.t, dtype=torch.long, device=self.g.device)

    def detach(self) -> TEMState:
        return replace(self, g=self.g.detach(), x_f=self.x_f.detach(), U=self.U.detach(),
                       V=self.V.detach(), D=None if self.D is None else self.D.detach())


class _BlockLinear(nn.Module):
    """One linear layer per module, as one block-diagonal matmul (no loop over modules).

    ``n_in``/``n_out``: sizes per module. Weights Xavier-normal per block, biases 0.
    """

    def __init__(self, n_in, n_out, bias: bool = True):
        super().__init__()
        mask = torch.block_diag(*[torch.ones(o, i) for i, o in zip(n_in, n_out, strict=True)])
        std = torch.block_diag(*[torch.full((o, i), math.sqrt(2.0 / (i + o)))
                                 for i, o in zip(n_in, n_out, strict=True)])
        self.register_buffer("mask", mask, persistent=False)
        self.weight = nn.Parameter(torch.randn(mask.shape) * std)
        self.bias = nn.Parameter(torch.zeros(mask.shape[0])) if bias else None
        self.n_in, self.n_out = list(n_in), list(n_out)

    def forward(self, x):
        return F.linear(x, self.weight * self.mask, self.bias)


class _BlockMLP(nn.Module):
    """Per-module two-layer MLPs: hidden activation ``act``, optional output ``out_act``."""

    def __init__(self, n_in, n_hidden, n_out, act=F.elu, out_act=None):
        super().__init__()
        self.l1 = _BlockLinear(n_in, n_hidden)
        self.l2 = _BlockLinear(n_hidden, n_out)
        self.act, self.out_act = act, out_act

    def forward(self, x):
        y = self.l2(self.act(self.l1(x)))
        return y if self.out_act is None else self.out_act(y)


def f_p(z: torch.Tensor) -> torch.Tensor:
    """TEM's activation of grounded locations: leaky_relu(clamp(z, −1, 1))."""
    return F.leaky_relu(z.clamp(-1.0, 1.0), LEAKY_SLOPE)


def two_hot_codes(n_obs: int, n_x_c: int) -> torch.Tensor:
    """Distinct two-hot codes of ``n_x_c`` units for ``n_obs`` observations, (n_obs, n_x_c)."""
    pairs = list(itertools.islice(itertools.combinations(range(n_x_c), 2), n_obs))
    if len(pairs) < n_obs:
        raise ValueError(f"model.tem.n_x_c = {n_x_c} gives {len(pairs)} two-hot codes; "
                         f"world.n_obs = {n_obs} needs more")
    codes = torch.zeros(n_obs, n_x_c)
    idx = torch.tensor(pairs)
    codes[torch.arange(n_obs)[:, None], idx] = 1.0
    return codes


def attractor(q: torch.Tensor, read, kappa: float, iters: torch.Tensor) -> torch.Tensor:
    """TEM's retrieval: h = f_p(q), then h ← f_p(κ h + read(h)) for the units whose module
    still iterates.

    ``read(h)`` is h M; ``iters`` (n_p,) long, the iteration count of each unit's module.
    """
    h = f_p(q)
    for k in range(int(iters.max()) if iters.numel() else 0):
        h = torch.where(iters > k, f_p(kappa * h + read(h)), h)
    return h


def tem_schedule(model_cfg: ModelConfig, train_cfg: TrainConfig, iteration: int) -> dict:
    """TEM's annealing at gradient step ``iteration`` (torch_tem's parameter_iteration).

    Returns ``eta`` and ``lambda`` (Hebbian learning and forgetting, ramped linearly over
    ``train.tem.eta_ramp`` / ``train.tem.lambda_ramp`` iterations), ``p2g_offset`` (a
    logistic fall from 1 to 0 centred at ``train.tem.p2g_half``, width
    ``train.tem.p2g_width``: how much inference ignores memory-inferred g), and ``weights``
    of :data:`LOSS_NAMES`: the latent-consistency losses (``p_g``, ``p_x``, ``g``) ramp in over
    ``train.tem.latent_ramp`` (``p_x`` also × (1 − p2g_offset)); ``reg_p`` decays to 0 over
    ``train.tem.reg_p_decay``; the x losses and ``reg_g`` stay constant.
    """
    mc, tc = model_cfg, train_cfg

    def ramp(n: int) -> float:
        return min((iteration + 1) / n, 1.0)

    z = (iteration - tc.tem.p2g_half) / tc.tem.p2g_width
    p2g = 0.5 * (1.0 - math.tanh(z / 2))  # 1 / (1 + e^z), overflow-free
    latent = ramp(tc.tem.latent_ramp)
    weights = {"p_g": latent * tc.tem.loss_p, "p_x": latent * tc.tem.loss_p * (1 - p2g),
               "x_gen": tc.tem.loss_x, "x_g": tc.tem.loss_x, "x_p": tc.tem.loss_x,
               "g": latent * tc.tem.loss_g, "reg_g": tc.tem.loss_reg_g,
               "reg_p": (1 - min(iteration / tc.tem.reg_p_decay, 1.0)) * tc.tem.loss_reg_p}
    return {"eta": ramp(tc.tem.eta_ramp) * mc.tem.eta,
            "lambda": ramp(tc.tem.lambda_ramp) * mc.tem.lambda_,
            "p2g_offset": p2g, "weights": weights}


class TEM(nn.Module):
    """The Tolman-Eichenbaum Machine (see the module docstring).

    Parameters
    ----------
    config : ModelConfig
        ``kind = "tem"``; sizes from its ``tem`` section (``[model.tem]``).
    n_actions : int
        Size of the action set; action 0 is stay (a zero action vector).
    n_obs : int
        Number of sensory categories.
    """

    #: No W_a matrices: TEM-t's transition diagnostics and inverse loss do not apply.
    recurrent = False

    def __init__(self, config: ModelConfig, n_actions: int, n_obs: int):
        super().__init__()
        self.config, self.n_actions, self.n_obs = config, n_actions, n_obs
        n_g, n_sub = list(config.tem.n_g), list(config.tem.n_g_sub)
        n_f, n_x = len(n_g), config.tem.n_x_c
        self.n_f, self.n_x = n_f, n_x
        self.n_g, self.n_sub = sum(n_g), sum(n_sub)
        self.n_p = self.n_sub * n_x
        freqs = torch.tensor(config.tem.freqs, dtype=torch.float32)
        # conn[m, f]: module m may send to module f (lower or equal frequency → higher).
        conn = freqs[:, None] <= freqs[None, :]
        g_mod = torch.repeat_interleave(torch.arange(n_f), torch.tensor(n_g))
        starts = torch.tensor([0, *itertools.accumulate(n_g)])[:-1]
        # p is held padded, (B, n_f, P) with P = max(n_sub) * n_x_c: module f's block is
        # flatten(g_down_f ⊗ x̃_f) with g_down_f zero-padded to max(n_sub) units, so that
        # every per-module product is one batched matmul.
        g_max = max(n_sub)
        self.g_max, self.P = g_max, g_max * n_x
        pad_idx = torch.zeros(n_f, g_max, dtype=torch.long)
        pad_mask = torch.zeros(n_f, g_max)
        for f in range(n_f):  # init only
            pad_idx[f, :n_sub[f]] = starts[f] + torch.arange(n_sub[f])
            pad_mask[f, :n_sub[f]] = 1.0
        sub_pos = pad_mask.flatten().nonzero()[:, 0]  # padded position of each g_down unit
        p_pos = (pad_mask[:, :, None].expand(-1, -1, n_x).flatten()).nonzero()[:, 0]
        self.register_buffer("g_mod", g_mod, persistent=False)
        self.register_buffer("pad_idx", pad_idx, persistent=False)
        self.register_buffer("pad_mask", pad_mask, persistent=False)
        self.register_buffer("sub_pos", sub_pos, persistent=False)
        self.register_buffer("p_pos", p_pos, persistent=False)
        self.register_buffer("conn_gen", conn.float(), persistent=False)
        # Frequencies falling with the module index (the default): conn is "from m ≥ f".
        self.conn_suffix = bool(torch.equal(conn, torch.ones(n_f, n_f).triu().bool().T))
        self.register_buffer("conn_inf", torch.ones(n_f, n_f), persistent=False)
        self.register_buffer("iters_gen", torch.tensor(config.tem.iters_gen)[:, None],
                             persistent=False)
        self.register_buffer("iters_inf", torch.tensor(config.tem.iters_inf)[:, None],
                             persistent=False)
        self.register_buffer("two_hot", two_hot_codes(n_obs, n_x), persistent=False)
        # Transition D_a: entries (row = from unit, col = to unit) allowed by conn.
        allowed = conn[g_mod][:, g_mod]
        n_entries = [int(allowed[:, g_mod == f].sum()) for f in range(n_f)]
        rows, cols = [], []
        for f in range(n_f):  # per module (init only): its inputs, row-major (from, to)
            r, c = allowed[:, g_mod == f].nonzero(as_tuple=True)
            rows.append(r)
            cols.append(torch.nonzero(g_mod == f)[:, 0][c])
        self.register_buffer("D_rows", torch.cat(rows), persistent=False)
        self.register_buffer("D_cols", torch.cat(cols), persistent=False)
        h = config.tem.transition_hidden
        self.D_hidden = nn.Linear(n_actions - 1, h * n_f)
        nn.init.xavier_normal_(self.D_hidden.weight)
        nn.init.zeros_(self.D_hidden.bias)
        self.D_out = _BlockLinear([h] * n_f, n_entries, bias=False)
        nn.init.zeros_(self.D_out.weight)  # starts as "stay where you are"
        self.sigma_path = _BlockMLP(n_g, [2 * g for g in n_g], n_g, torch.tanh, torch.exp)
        self.g_mem = _BlockMLP(n_sub, [2 * g for g in n_g], n_g)
        with torch.no_grad():
            w = self.g_mem.l2.weight
            w.copy_(nn.init.trunc_normal_(torch.empty_like(w), 0.0, G_MEM_STD,
                                          -2 * G_MEM_STD, 2 * G_MEM_STD))
        self.sigma_mem = _BlockMLP([2] * n_f, [2 * g for g in n_g], n_g, torch.tanh,
                                   torch.exp)
        self.c_star = nn.Sequential(nn.Linear(n_x, C_STAR_HIDDEN_PER_UNIT * n_x), nn.ELU(),
                                    nn.Linear(C_STAR_HIDDEN_PER_UNIT * n_x, n_obs))
        for layer in (self.c_star[0], self.c_star[2]):
            nn.init.xavier_normal_(layer.weight)
            nn.init.zeros_(layer.bias)
        self.alpha_raw = nn.Parameter(torch.logit(freqs))
        self.w_p = nn.Parameter(torch.ones(n_f))
        self.w_x = nn.Parameter(torch.tensor(1.0))
        self.b_x = nn.Parameter(torch.zeros(n_x))
        tn = nn.init.trunc_normal_
        self.g_init = nn.Parameter(tn(torch.empty(self.n_g), 0.0, G_INIT_STD,
                                      -2 * G_INIT_STD, 2 * G_INIT_STD))
        self.logsig_g_init = nn.Parameter(tn(torch.empty(self.n_g), 0.0, G_INIT_STD,
                                             -2 * G_INIT_STD, 2 * G_INIT_STD))
        # Annealed values (set by the trainer each iteration; saved with the weights so that
        # a checkpoint runs as it was trained). A fresh model has the final values.
        self.register_buffer("eta", torch.tensor(float(config.tem.eta)))
        self.register_buffer("lam", torch.tensor(float(config.tem.lambda_)))
        self.register_buffer("p2g_offset", torch.tensor(0.0))

    # ------------------------------------------------------------------ schedule
    def anneal(self, iteration: int, train_cfg: TrainConfig) -> dict:
        """Set η, λ and the p2g offset for ``iteration``; return :func:`tem_schedule`."""
        s = tem_schedule(self.config, train_cfg, iteration)
        self.eta.fill_(s["eta"])
        self.lam.fill_(s["lambda"])
        self.p2g_offset.fill_(s["p2g_offset"])
        return s

    def training_losses(self, out: TEMOutput, iteration: int, train_cfg: TrainConfig,
                        revisit: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """The weighted sum ``loss`` of the chunk's terms, and each term as ``tem_<name>``.

        With ``train.tem.loss_on = "revisits"`` a term counts only at steps whose node the
        walk has visited before (``revisit``, (B, L) bool), as torch_tem trains: each step's
        terms are averaged over the environments revisiting there, then averaged over the
        chunk's L steps (a step with no revisit adds 0). With ``"all"``: means over all steps.
        """
        terms = out.terms
        if train_cfg.tem.loss_on == "revisits":
            if revisit is None:
                raise ValueError('train.tem.loss_on = "revisits" needs the revisit mask')
            m = revisit.to(out.g.dtype)
            w = m / m.sum(0, keepdim=True).clamp(min=1.0) / m.shape[1]  # (B, L)
            terms = {k: (v * w).sum() for k, v in out.step_terms.items()}
        weights = tem_schedule(self.config, train_cfg, iteration)["weights"]
        total = sum(weights[k] * terms[k] for k in LOSS_NAMES)
        parts = {"loss": total, "loss_pi": terms["x_gen"], "loss_g": terms["x_g"]}
        parts.update({f"tem_{k}": terms[k] for k in LOSS_NAMES})
        return parts

    # ------------------------------------------------------------------ state
    def initial_state(self, batch_size: int) -> TEMState:
        """An empty memory for ``batch_size`` fresh environments."""
        dev = self.g_init.device
        empty = torch.zeros(2, batch_size, self.n_f, 0, self.P, device=dev)
        return TEMState(g=self.g_init.detach().expand(batch_size, -1),
                        x_f=torch.zeros(batch_size, self.n_f, self.n_x, device=dev),
                        U=empty, V=empty.clone(), D=None, t=0)

    def fold(self, state: TEMState) -> TEMState:
        """The same memories with every rank-one term folded into the dense part."""
        K, lam = state.n_terms, float(self.lam)
        if K == 0:
            return state
        w = lam ** torch.arange(K - 1, -1, -1, device=state.U.device, dtype=torch.float32)
        U = (state.U * w[:, None]).permute(0, 1, 3, 2, 4).flatten(-2)  # (2, B, K, n_f P)
        V = state.V.permute(0, 1, 3, 2, 4).flatten(-2)
        D = U.transpose(-1, -2) @ V
        mask = self.conn_gen.repeat_interleave(self.P, 0).repeat_interleave(self.P, 1)
        D = torch.stack([D[0] * mask, D[1]])
        if state.D is not None:
            D = D + lam**K * state.D
        return replace(state, U=state.U[..., :0, :], V=state.V[..., :0, :], D=D)

    def p_units(self, p: torch.Tensor) -> torch.Tensor:
        """Padded p (..., n_f, P) → its n_p units (module-major, then g_down, then x_c)."""
        return p.flatten(-2)[..., self.p_pos]

    def unit_coords(self) -> dict[str, torch.Tensor]:
        """Where each unit comes from, as long tensors: ``module`` (n_g,), the frequency
        module of each g unit; ``p_module``, ``p_g_unit``, ``p_sensory_unit`` (n_p,), the
        module, g unit and compressed sensory unit of each p unit (order of :meth:`p_units`)."""
        shape = (self.n_f, self.g_max, self.n_x)
        dev = self.pad_idx.device
        module = torch.arange(self.n_f, device=dev)[:, None, None].expand(shape)
        sensory = torch.arange(self.n_x, device=dev).expand(shape)
        g_unit = self.pad_idx[:, :, None].expand(shape)
        return {"module": self.g_mod.clone(),
                **{k: v.flatten()[self.p_pos] for k, v in
                   (("p_module", module), ("p_g_unit", g_unit), ("p_sensory_unit", sensory))}}

    # ------------------------------------------------------------------ pieces
    def transition_deltas(self) -> torch.Tensor:
        """D_a for every action, (n_actions, n_g, n_g); action 0 (stay) has a zero input."""
        a = torch.eye(self.n_actions, device=self.g_init.device)[:, 1:]
        vals = self.D_out(torch.tanh(self.D_hidden(a)))
        D = vals.new_zeros(self.n_actions, self.n_g, self.n_g)
        D[:, self.D_rows, self.D_cols] = vals
        return D

    def read(self, h, U, V, w, conn) -> torch.Tensor:
        """h M for queries h (B, Q, n_f, P) of a memory given as rank-one terms U, V
        (B, n_f, K, P) weighted by w (K,): module f receives from modules m with
        ``conn[m, f]`` (one batched matmul per product, no loop over modules)."""
        hT = h.transpose(1, 2)  # (B, n_f, Q, P)
        s = hT @ U.transpose(-1, -2)  # (B, n_f, Q, K): per-module overlaps
        if conn is self.conn_inf:  # every module from every module: one total overlap
            s = s.sum(1, keepdim=True)
        elif self.conn_suffix:  # modules in falling frequency: module f from m ≥ f
            s = s.flip(1).cumsum(1).flip(1)
        else:
            s = torch.einsum("bmqk,mf->bfqk", s, conn)
        return ((s * w) @ V).transpose(1, 2)

    def _read_all(self, h, old, new, D, d_scale, conn):
        """Read the memory visible at a step: old terms, this chunk's, the dense part."""
        out = 0
        for U, V, w in (old, new):
            if w.numel():
                out = out + self.read(h, U, V, w, conn)
        if D is not None:
            out = out + d_scale * (h.flatten(-2) @ D).view_as(h)
        if isinstance(out, int):
            out = torch.zeros_like(h)
        return out

    def _x_logits(self, p: torch.Tensor) -> torch.Tensor:
        """Logits of x from the highest-frequency module of padded p (..., n_f, P)."""
        x = self.w_x * p[..., 0, :].unflatten(-1, (self.g_max, self.n_x)).sum(-2) + self.b_x
        return self.c_star(x)

    def _g_pad(self, g: torch.Tensor) -> torch.Tensor:
        """g_down per module, zero-padded: (..., n_g) → (..., n_f, max n_sub)."""
        return g[..., self.pad_idx] * self.pad_mask

    # ------------------------------------------------------------------ forward
    def forward(self, obs: torch.Tensor, actions: torch.Tensor, state: TEMState | None = None,
                context=None, return_activity: bool = False) -> tuple[TEMOutput, TEMState]:
        """Run one chunk of walks.

        Parameters
        ----------
        obs, actions : (B, L) long
            Observation at each step and the action that led there (``actions[:, 0]`` of a
            fresh walk is ignored).
        state : TEMState, optional
            Carried from the previous chunk of the same walks; None starts fresh walks.
        context : unused (TEM has no third stream); must be None.
        return_activity : bool
            Also return p (B, L, n_p) as ``activity`` (the conjunctive population).
        """
        if context is not None:
            raise ValueError("TEM has no context stream; context must be None")
        L = obs.shape[1]
        if not torch.is_grad_enabled() and L > NOGRAD_CHUNK:
            outs = []
            for s in range(0, L, NOGRAD_CHUNK):
                out, state = self._chunk(obs[:, s:s + NOGRAD_CHUNK],
                                         actions[:, s:s + NOGRAD_CHUNK], state)
                outs.append(out)
            return _cat_outputs(outs, return_activity), state
        out, state = self._chunk(obs, actions, state)
        if return_activity:
            out.activity = out.p
        return out, state

    def _chunk(self, obs, actions, state):
        B, L = obs.shape
        fresh = state is None
        if fresh:
            state = self.initial_state(B)
        if state.n_terms + L > self.n_p // 2:
            state = self.fold(state)
        lam, eta, kappa = float(self.lam), float(self.eta), self.config.tem.kappa
        K0, dev = state.n_terms, obs.device
        D_flat = self.transition_deltas().transpose(0, 1).reshape(self.n_g, -1)
        alpha = torch.sigmoid(self.alpha_raw)[None, :, None]
        w_p = torch.sigmoid(self.w_p)[None, :, None]
        onehot = F.one_hot(obs, self.n_obs).float()
        tile = self.pad_mask[None, :, :, None]  # (1, n_f, g_max, 1)
        Dg = Di = None
        if state.D is not None:
            Dg, Di = state.D[0], state.D[1]
        new = ([], [], [], [])  # this chunk's U_gen, V_gen, U_inf, V_inf, each (B, n_f, P)
        g_prev, x_f = state.g, state.x_f
        gs, ggens, ps, pgens, pgis, pxs = [], [], [], [], [], []
        for t in range(L):
            if fresh and t == 0:
                g_gen = self.g_init.expand(B, -1)
                sig_path = torch.exp(self.logsig_g_init).expand(B, -1)
            else:
                nxt = (g_prev @ D_flat).view(B, self.n_actions, self.n_g)
                delta = nxt.gather(1, actions[:, t].view(-1, 1, 1).expand(-1, 1, self.n_g))
                g_gen = (g_prev + delta[:, 0]).clamp(-1.0, 1.0)
                sig_path = self.sigma_path(g_prev)
            # Terms visible at step t (written before t) and their decays λ^(age).
            w_old = lam ** torch.arange(K0 + t - 1, t - 1, -1, dtype=torch.float32,
                                        device=dev)
            w_new = lam ** torch.arange(t - 1, -1, -1, dtype=torch.float32, device=dev)
            d_scale = lam ** (K0 + t)
            chunk = [torch.stack(v, 2) if v else None for v in new]
            old_g = (state.U[0], state.V[0], w_old)
            old_i = (state.U[1], state.V[1], w_old)
            new_g = (chunk[0], chunk[1], w_new)
            new_i = (chunk[2], chunk[3], w_new)
            # --- inference
            x_f = (1 - alpha) * x_f + alpha * self.two_hot[obs[:, t]][:, None, :]
            xr = torch.relu(x_f - x_f.mean(-1, keepdim=True))
            x_t = w_p * xr / (xr.norm(dim=-1, keepdim=True) + _EPS)  # (B, n_f, n_x)
            q_x = (tile * x_t[:, :, None, :]).flatten(-2)  # x̃ tiled over g_down units
            read_inf = partial(self._read_all, old=old_i, new=new_i, D=Di, d_scale=d_scale,
                               conn=self.conn_inf)
            p_x = attractor(q_x[:, None], read_inf, kappa, self.iters_inf)[:, 0]
            g_sum = p_x.unflatten(-1, (self.g_max, self.n_x)).sum(-1).flatten(1)
            mu_mem = self.g_mem(g_sum[:, self.sub_pos])
            with torch.no_grad():
                err = 0.5 * (onehot[:, t] - self._x_logits(p_x).softmax(-1)).pow(2).sum(-1)
            sq = mu_mem.new_zeros(B, self.n_f).index_add(1, self.g_mod, mu_mem.pow(2))
            sig_in = torch.stack([sq, err[:, None].expand(-1, self.n_f)], -1).flatten(1)
            sig_mem = self.sigma_mem(sig_in) + self.p2g_offset * P2G_SIGMA
            mu_mem = mu_mem.clamp(-1.0, 1.0)
            prec_path, prec_mem = sig_path.pow(-2), sig_mem.pow(-2)
            g_inf = (g_gen * prec_path + mu_mem * prec_mem) / (prec_path + prec_mem)
            p_inf = f_p((self._g_pad(g_inf)[..., None] * x_t[:, :, None, :]).flatten(-2))
            # --- generative: retrieve p from g_gen (the prediction) and g_inf, together
            q_g = self._g_pad(torch.stack([g_gen, g_inf], 1))[..., None]
            q_g = q_g.expand(-1, -1, -1, -1, self.n_x).flatten(-2)
            read_gen = partial(self._read_all, old=old_g, new=new_g, D=Dg, d_scale=d_scale,
                               conn=self.conn_gen)
            p_g = attractor(q_g, read_gen, kappa, self.iters_gen)
            p_gen, p_gi = p_g[:, 0], p_g[:, 1]
            # --- Hebbian writes (generative: p̂ from g_inf; inference: p̂ from x)
            for lst, v in zip(new, (p_inf + p_gi, eta * (p_inf - p_gi), p_inf + p_x,
                                    eta * (p_inf - p_x)), strict=True):
                lst.append(v)
            for lst, v in zip((gs, ggens, ps, pgens, pgis, pxs),
                              (g_inf, g_gen, p_inf, p_gen, p_gi, p_x), strict=True):
                lst.append(v)
            g_prev = g_inf
        g, g_gen = torch.stack(gs, 1), torch.stack(ggens, 1)
        p, p_gen, p_gi, p_x = (torch.stack(v, 1) for v in (ps, pgens, pgis, pxs))
        logits = self._x_logits(torch.stack([p_gen, p_gi, p], 0))

        def ce(lg):
            return F.cross_entropy(lg.flatten(0, 1), obs.flatten(), reduction="none").view(B, L)

        step_terms = {
            "p_g": 0.5 * (p - p_gi).pow(2).sum((-2, -1)),
            "p_x": 0.5 * (p - p_x).pow(2).sum((-2, -1)),
            "x_gen": ce(logits[0]), "x_g": ce(logits[1]), "x_p": ce(logits[2]),
            "g": 0.5 * (g - g_gen).pow(2).sum(-1),
            "reg_g": g.pow(2).sum(-1),
            "reg_p": p.abs().sum((-2, -1)),
        }
        terms = {k: v.mean() for k, v in step_terms.items()}
        # No memory slots (as TEM-t's "hebbian" variant): the matrices change at every step.
        written = torch.zeros(B, L, dtype=torch.bool, device=dev)
        slot = torch.full((B, L), -1, dtype=torch.long, device=dev)
        out = TEMOutput(logits_pi=logits[0], logits_g=logits[1], g=g, g_pi=g_gen,
                        written=written, slot=slot, p=self.p_units(p), terms=terms,
                        p_hat_gen=self.p_units(p_gi), p_hat_inf=self.p_units(p_x),
                        step_terms=step_terms)
        terms_new = torch.stack([torch.stack(v, 2) for v in new]).unflatten(0, (2, 2))
        new_state = replace(state, g=g[:, -1], x_f=x_f,
                            U=torch.cat([state.U, terms_new[:, 0]], 3),
                            V=torch.cat([state.V, terms_new[:, 1]], 3), t=state.t + L)
        return out, new_state


def _cat_outputs(outs: list[TEMOutput], return_activity: bool) -> TEMOutput:
    """Concatenate per-sub-chunk outputs along time (terms: means of the joined step terms)."""
    cat = {f: torch.cat([getattr(o, f) for o in outs], 1)
           for f in ("logits_pi", "logits_g", "g", "g_pi", "written", "slot", "p",
                     "p_hat_gen", "p_hat_inf")}
    step_terms = {k: torch.cat([o.step_terms[k] for o in outs], 1) for k in LOSS_NAMES}
    return TEMOutput(**cat, activity=cat["p"] if return_activity else None,
                     terms={k: v.mean() for k, v in step_terms.items()}, step_terms=step_terms)
