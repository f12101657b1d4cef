"""A fused time loop for TEM-t: :meth:`TEMt._loop` with a hand-written backward-through-time.

:meth:`TEMt._loop` runs ~116 small tensor operations per walk step and leaves ~52 autograd
nodes per step for backward; at the sizes trained here (batch 16, n_g 64) their dispatch
overhead, not arithmetic, is the cost. :class:`FusedLoop` computes the same forward with the
same arithmetic, so g, g_pi and the gate are bit-for-bit those of the eager loop, but records
no autograd graph and issues about half the operations (~55 per step forward, ~40 backward at
the ``small`` preset: ``benchmarks/bench_training.py --ops``; buffer rows are written
unconditionally into each environment's next free slot, which stays masked unless the step is
new; see :func:`_loop_forward`). One difference: the add-if-novel similarity takes the same dot
products in another orientation, (B, 1, d) @ (B, d, M) instead of (B, M, d) @ (B, d, 1), ~5x
faster here; they may differ in the last bit, so a write decision can differ only for a
similarity within ~1e-7 of ``write_threshold``. Its backward runs only the sequential per-step
products in reverse time (grad-input of the transition, of the retrieval and gate MLPs and of
the retrieval softmax); every weight gradient is computed after that loop with one matrix
product over all steps (the transition matrices' grouped by action).

Memory reads in backward use the buffers as they are at the end of the chunk: the buffer is
append-only within a chunk and a step only reads slots that were already written when it ran
(the others are masked, with zero weight and zero gradient), as in ``_ConstBmm``.

Covered: ``model.kind = "temt"`` with memory "full" or "window", every transition activation,
``g_norm`` rms/plane/none, ``transition_param`` free/orthogonal/waves (the matrices come in through
autograd, so matrix_exp's backward stays torch's), both conjunctions, the landmark on or off,
a context stream, one retrieval iteration or more (retrieval iterations concern only the
prediction, which stays eager). :func:`unsupported` names what is not; the model then runs
its eager loop.

The loop over steps, forward and backward, runs in C++ where :mod:`hippo_rep.models.fused_cpp`
covers the model (a full memory, every other covered option) and builds (``fused_loop.cpp``,
compiled once per machine): the same aten operations in the same order, and for float32 on
the CPU some elementwise chains by hand with the same float operations, so every output,
buffer and gradient is ``torch.equal`` to this module's Python loop (tests/test_fused.py).
Where it cannot build, this Python loop runs, said once (``fused_cpp.CppLoopFallback``);
``TEMt.cpp_loop = False`` or ``HIPPO_REP_CPP_LOOP=0`` chooses the Python loop.

Shapes: B environments, L steps of the chunk, d = n_g, A actions, H hidden units, M slots.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hippo_rep.models import fused_cpp

#: Added to denominators of the unit-RMS normalisation (the value of ``memory._EPS``).
_EPS = 1e-6
#: The eps of ``F.layer_norm`` (the z-score of g, ``temt._z``).
_LN_EPS = 1e-5
#: Slope of ``transition_activation = "leaky_relu"`` (``TEMt._activation``).
_LEAKY = 0.1


class FastStepFallback(UserWarning):
    """``train.fast_step`` is on but the model has no fused step: it trains eagerly (the same
    numbers as ``train.fast_step = false``)."""


def unsupported(model) -> str | None:
    """Why ``model`` has no fused time loop (None when it has, and for the sinusoidal
    baseline, which has no time loop to fuse)."""
    cfg = model.config
    if cfg.kind == "tem":
        return "model.kind = \"tem\" (TEM) has no fused step"
    if cfg.kind == "temt" and cfg.memory not in ("full", "window"):
        return f"model.memory = {cfg.memory!r} is not covered by the fused step"
    return None


#: Torch's own backward kernels of relu, the layer norm and the activations.
_relu_bw = torch.ops.aten.threshold_backward
_ln_bw = torch.ops.aten.native_layer_norm_backward
_IN_ONLY = [True, False, False]  # native_layer_norm_backward: the input's gradient only


def _act_backward(kind: str, du, h, u):
    """Gradient through u = f(h) for ``transition_activation`` ``kind``."""
    if kind == "relu":
        return _relu_bw(du, u, 0)
    if kind == "tanh":
        return torch.ops.aten.tanh_backward(du, u)
    if kind == "leaky_relu":
        return torch.ops.aten.leaky_relu_backward(du, h, _LEAKY, False)
    return du


def _activation(kind: str, h):
    if kind == "relu":
        return torch.relu(h)
    if kind == "tanh":
        return torch.tanh(h)
    if kind == "leaky_relu":
        return F.leaky_relu(h, _LEAKY)
    return h


def _action_columns(actions, d: int):
    """(L, B, 1, d) long: the columns of action a_t's block in a (B, 1, A·d) product with every
    action's matrix side by side (one matmul for all actions, then a gather)."""
    return ((actions.t() * d)[:, :, None] + torch.arange(d, device=actions.device))[:, :, None]


class _Step:
    """What backward needs of one step (attributes set only where used). Vectors are
    (B, 1, d), per-environment scalars (B, 1, 1), memory rows (B, 1, m)."""

    __slots__ = ("g_prev", "h", "u", "r_pi", "m", "g_pi", "mean_q", "rstd_q", "zq", "bscale",
                 "logits", "w", "amax", "x_raw", "hid_r", "g_ret", "r_ret", "zr", "mean_r",
                 "rstd_r", "feats", "hid_g", "sig", "has", "dsig", "gate", "diff", "landmark")


def _pow2(d: int) -> bool:
    """Whether dividing by ``d`` is exact (then sim / d is never formed: see _tables)."""
    return d & (d - 1) == 0


def _tables(rbeta, cap: int, d: int, dtype, dev, multiplicative: bool):
    """Per memory count n = 0..cap: β(n) = softplus(β') · log(max(n, 1)) (the eager loop's
    float32 log and product) — over d for the multiplicative conjunction with d a power of two,
    whose similarity is then taken unscaled (the same bits) — and has(n) = min(n, 1), as
    (cap + 1, 1, 1) tables gathered by each environment's count."""
    n = torch.arange(cap + 1, device=dev)
    beta = rbeta * torch.log(n.clamp(min=1).float())
    if multiplicative and _pow2(d):
        beta = beta / d
    return beta.view(-1, 1, 1), n.clamp(max=1).to(dtype).view(-1, 1, 1)


def _rms(u, k_d, eps, norm: int = 1):
    """Unit-RMS rescaling, bit-for-bit ``memory._rescale`` (pow(2) is u·u, and mean is sum / d
    on the CPU), in place on its temporaries; ``k_d``, ``eps`` 0-dim tensors of u's dtype
    (no conversion of a Python scalar per operation). Returns (u * r, r), r (B, 1, 1); for
    ``norm`` 2 (``g_norm = "plane"``) per rotation plane of two units, r (B, 1, d / 2, 1)
    (the mean of two is an exact halving). Cheaper here than ``aten._fused_rms_norm`` (the
    same bits, more conversions inside)."""
    if norm == 2:
        u2 = u.unflatten(-1, (-1, 2))
        r = (u2 * u2).sum(-1, keepdim=True)
        r.div_(2.0).add_(eps).rsqrt_()
        return (u2 * r).flatten(-2), r
    r = (u * u).sum(-1, keepdim=True)
    r.div_(k_d).add_(eps).rsqrt_()
    return u * r, r


def _agree_over_d(W1g, d: int):
    """The gate's first layer with the agreement's column over d, for d a power of two (else
    W1g): the loop then feeds it the sum, not the mean (the same bits), and the backward's
    product with it gives the mean's gradient."""
    if not _pow2(d):
        return W1g
    return torch.cat([W1g[:, :2 * d], W1g[:, 2 * d:2 * d + 1] / d, W1g[:, 2 * d + 1:]], 1)


def _loop_forward(model, W, g_start, rbeta, wr, wg, obs, actions, state, context,
                  fresh: bool, s0: int, save: bool, cpp=None):
    """The time loop's forward (``TEMt._loop`` for the covered variants), writing into
    ``state``'s buffers in place. ``wr``/``wg``: (W1, b1, W2, b2) of the retrieval and gate
    MLPs. Returns g, g_pi, gate (B, L, d), written (B, L) bool and, with ``save``, the
    per-step records for backward.

    Fewer operations than the eager loop, for the same values: every per-step vector is kept
    (B, 1, d) (no views to and from the memory products), the buffers' views are made once per
    memory size, β·log(#memories) and has-a-memory are gathered from per-count tables, the
    observation buffer holds -1 on every slot that is not a memory (so that "same
    observation" is also "a valid memory"), and the time stamps of a full memory are written
    once after the loop.

    ``cpp``: :func:`fused_cpp.ops` (the loop in C++, the same operations; a full memory
    only), or None. The records for backward are then its flat list and per-step table."""
    cfg = model.config
    B, L = obs.shape
    d = cfg.n_g
    dev = obs.device
    dt = state.G.dtype
    act_kind, norm = cfg.transition_activation, fused_cpp.NORMS[cfg.g_norm]
    window = cfg.memory == "window"
    multiplicative = cfg.conjunction == "multiplicative"
    # The eager loop compares sim / d with the threshold cast to the buffers' dtype; for d a
    # power of two the similarity is taken unscaled here (the same decision).
    pow2 = _pow2(d)
    thr = torch.tensor(cfg.write_threshold, dtype=dt, device=dev)
    thr_d = thr * d if pow2 else thr
    k_d = torch.tensor(float(d), dtype=dt, device=dev)
    k_eps = torch.tensor(_EPS, dtype=dt, device=dev)
    cap = state.capacity
    # Steps first: each step's observations and action columns without a per-step view.
    obs_t = obs.t().contiguous()
    obs_b = obs_t.unbind(0)  # (B,) per step
    obs_k = obs_t.view(L, B, 1, 1).unbind(0)  # (B, 1, 1) per step
    ctx_t = context.t().contiguous()
    use_c = bool(context.any()) or bool(state.C.any())
    if use_c:
        ctx_b, ctx_k = ctx_t.unbind(0), ctx_t.view(L, B, 1, 1).unbind(0)
    Wcat = W.transpose(0, 1).reshape(d, -1)
    aidx_all = _action_columns(actions, d)
    aidx = aidx_all.unbind(0)
    count = state.count.clone()
    flat = torch.arange(B, device=dev) * cap  # row offsets into the flattened buffers
    G3, ZG3, X3 = state.G, state.ZG, state.X.view(B, 1, cap)
    ZG3T = ZG3.transpose(1, 2)
    C3, T3 = state.C.view(B, 1, cap), state.T.view(B, 1, cap)
    Gf, ZGf = state.G.view(B * cap, 1, d), state.ZG.view(B * cap, 1, d)
    Xf, Cf, Tf = state.X.view(-1), state.C.view(-1), state.T.view(-1)
    # The invariant the loop keeps: no observation on a slot that holds no memory.
    state.X.masked_fill_(torch.arange(cap, device=dev) >= count[:, None], -1)
    landmark = cfg.landmark
    if landmark:
        W1r, b1r, W2r, b2r = wr
        W1g, b1g, W2g, b2g = wg
        W1g = _agree_over_d(W1g, d)
        beta_tab, has_tab = _tables(rbeta, cap, d, dt, dev, multiplicative)
    # Full memory: every environment sees all its memories (s0 = 0), so their number is its
    # count, and once each has one, has = 1.
    count_visible = window or s0 > 0
    all_has = False
    ones = torch.ones(B, dtype=torch.bool, device=dev)
    g_prev = g_start.contiguous().view(B, 1, d)
    gs, gpis, gates, steps, news, fis = [], [], [], [], [], []
    zero_gate = torch.zeros(B, 1, d, dtype=dt, device=dev)
    views, m_views = None, -1
    if cpp is not None:
        nil = W.new_empty(0)
        lw = (W1r, b1r, W2r, b2r, W1g, b1g, W2g, b2g, beta_tab, has_tab) if landmark \
            else (nil,) * 10
        out = cpp.loop_forward(Wcat, g_start, aidx_all, obs_t, ctx_t, state.G,
                               state.ZG, state.X, state.C, count, flat, *lw, thr_d, k_d, k_eps,
                               fused_cpp.ACTIVATIONS[act_kind], norm, multiplicative, landmark,
                               use_c, fresh, save)
        g, g_pi, gate, written, fis, count, meta = out[:7]
        steps = (out[7:], meta) if save else []
        return _after_loop(state, count, flat, written, fis, window, g, g_pi, gate, steps)
    for t in range(L):
        tg = state.t + t
        rec = _Step() if save else None
        if fresh and t == 0:
            g_pi = g_prev
            if save:
                rec.g_prev = None
        else:
            h = torch.matmul(g_prev, Wcat).gather(2, aidx[t])
            u = _activation(act_kind, h)
            if norm:
                g_pi, r_pi = _rms(u, k_d, k_eps, norm)
            else:
                g_pi, r_pi = u, None
            if save:
                rec.g_prev, rec.h, rec.u, rec.r_pi, rec.g_pi = g_prev, h, u, r_pi, g_pi
        m = int(count.max())
        if m > s0:
            if m != m_views:
                views = (ZG3T[:, :, s0:m], G3[:, s0:m], X3[:, :, s0:m],
                         C3[:, :, s0:m] if use_c else None, T3[:, :, s0:m] if window else None)
                m_views = m
            ZGt, Gs, Xs, Cs, Ts = views
            # same observation (and context) and a valid memory: X is -1 on every other slot
            eq = Xs == obs_k[t]
            if use_c:
                eq = eq.logical_and_(Cs == ctx_k[t])
            invalid = Xs < 0
            if window:
                seen = Ts >= model.memory.window_start(tg)
                eq = eq.logical_and_(seen)
                invalid = invalid.logical_or_(seen.logical_not_())
        if landmark and m > s0:
            if count_visible:
                n_vis = (~invalid).sum((1, 2))
            else:
                n_vis = count
            zq, mean_q, rstd_q = torch.native_layer_norm(g_pi, (d,), None, None, _LN_EPS)
            s = torch.bmm(zq, ZGt)  # d · the similarity
            if multiplicative:
                # β sim sx = (β / d) · s · sx: the same bits for d a power of two
                bscale = beta_tab.index_select(0, n_vis) * eq
                logits = (s if pow2 else s / k_d) * bscale
            else:
                bscale = beta_tab.index_select(0, n_vis)
                logits = bscale * (s / k_d + eq)
            # memory_activation(..., "softmax"); a row with no valid memory keeps its uniform
            # weights (the eager loop zeroes them): its gate is 0, so neither g nor any
            # gradient sees them.
            logits.masked_fill_(invalid, -1e30)
            w = torch.softmax(logits, dim=-1)
            x_raw = torch.bmm(w, Gs)
            conf, amax = w.max(-1, keepdim=True)
            # TEMt._correct
            hid_r = torch.relu_(F.linear(x_raw, W1r, b1r))
            v = x_raw + F.linear(hid_r, W2r, b2r)
            if norm:
                g_ret, r_ret = _rms(v, k_d, k_eps, norm)
            else:
                g_ret, r_ret = v, None
            zr, mean_r, rstd_r = torch.native_layer_norm(x_raw, (d,), None, None, _LN_EPS)
            agree = (zr * zq).sum(-1, keepdim=True)  # d · the mean: W1g's column is over d
            if not pow2:
                agree = agree / k_d
            feats = torch.cat([g_ret, g_pi, agree, conf], -1)
            hid_g = torch.relu_(F.linear(feats, W1g, b1g))
            sig = torch.sigmoid(F.linear(hid_g, W2g, b2g))
            if not all_has and not count_visible:
                all_has = bool(count.min() > 0)
            has = None if all_has else has_tab.index_select(0, n_vis)
            gate = sig if has is None else sig * has
            diff = g_ret - g_pi
            g_t = g_pi + gate * diff
            if save:
                rec.landmark, rec.m = True, m
                rec.g_pi, rec.mean_q, rec.rstd_q, rec.zq = g_pi, mean_q, rstd_q, zq
                rec.bscale, rec.logits = bscale, logits
                rec.w, rec.amax, rec.x_raw, rec.hid_r = w, amax, x_raw, hid_r
                rec.g_ret, rec.r_ret, rec.zr, rec.feats = g_ret, r_ret, zr, feats
                rec.mean_r, rec.rstd_r = mean_r, rstd_r
                rec.hid_g, rec.gate, rec.diff = hid_g, gate, diff
                rec.sig, rec.has = sig, has  # has·σ'(s) made for all steps after the loop
        else:
            g_t = g_pi
            gate = zero_gate
            if save:
                rec.landmark = False
        # Add-if-novel (as TEMt._loop). The step's row is written unconditionally into the
        # environment's next free slot, which stays masked (slot >= count) unless the step is
        # new; the free slots are reset to their unused values after the loop.
        zt = F.layer_norm(g_t, (d,))
        if m > s0:
            # (B, 1, d) @ (B, d, m): the eager loop's (B, m, d) @ (B, d, 1) takes ~5x as long
            # here; the same dot products, summed in another order (last-bit differences,
            # which matter only for a similarity within ~1e-7 of the threshold).
            s_t = torch.bmm(zt, ZGt)
            if not pow2:
                s_t = s_t / k_d
            new = torch.where(eq, s_t, -torch.inf).amax((1, 2)) <= thr_d
        else:
            new = ones
        fi = flat + count
        Gf.index_copy_(0, fi, g_t)
        ZGf.index_copy_(0, fi, zt)
        Xf.index_copy_(0, fi, torch.where(new, obs_b[t], -1))
        if use_c:  # else C is 0 everywhere and stays so
            Cf.index_copy_(0, fi, ctx_b[t])
        if window:  # read in the loop; a full memory's are written after it
            Tf.index_fill_(0, fi, tg)
        count.add_(new)
        news.append(new)
        fis.append(fi)
        gs.append(g_t)
        gpis.append(g_pi)
        gates.append(gate)
        if save:
            steps.append(rec)
        g_prev = g_t
    written = torch.stack(news, 1)  # (B, L)
    if save:
        lm = [rec for rec in steps if rec.landmark]
        if lm:
            sig = torch.stack([rec.sig for rec in lm])
            dsig = sig * (1 - sig)
            if any(rec.has is not None for rec in lm):
                one = has_tab[1].expand(B, 1, 1)
                dsig = dsig * torch.stack([one if rec.has is None else rec.has for rec in lm])
            for rec, ds in zip(lm, dsig.unbind(0), strict=True):
                rec.dsig = ds
    return _after_loop(state, count, flat, written, torch.stack(fis, 1), window,
                       torch.cat(gs, 1), torch.cat(gpis, 1), torch.cat(gates, 1), steps)


def _after_loop(state, count, flat, written, fis, window, g, g_pi, gate, steps):
    """The loop's end (Python or C++): a full memory's time stamps, the free slots reset,
    the count. ``fis`` (B, L): the flat slot each step wrote into."""
    B, L = written.shape
    cap = state.capacity
    d = state.G.shape[-1]
    Gf, ZGf = state.G.view(B * cap, 1, d), state.ZG.view(B * cap, 1, d)
    Cf, Tf = state.C.view(-1), state.T.view(-1)
    if not window:
        Tf.index_copy_(0, fis[written],
                       (state.t + torch.arange(L, device=written.device)).expand(B, L)[written])
    # Reset the free slot each environment may have left a non-new row in (its X is -1).
    free = count < cap
    if bool(free.any()):
        fi = (flat + count)[free]
        Gf.index_fill_(0, fi, 0.0)
        ZGf.index_fill_(0, fi, 0.0)
        Cf.index_fill_(0, fi, 0)
        Tf.index_fill_(0, fi, -1)
    state.count = count
    return g, g_pi, gate, written, steps


def _linear_grads(dout, x):
    """Weight and bias gradients of ``out = x @ W^T + b`` from stacked rows (N, ·)."""
    return dout.t() @ x, dout.sum(0)


def _rms_bw(dy, y, r, inv_d: float, norm: int = 1):
    """Gradient through y = u * r, r = rsqrt(mean(u²) + eps) (dy, y (B, 1, d); r (B, 1, 1)):
    r (dy − y mean(dy y)); the mean per rotation plane for ``norm`` 2 (see :func:`_rms`)."""
    if norm == 2:
        dy2, y2 = dy.unflatten(-1, (-1, 2)), y.unflatten(-1, (-1, 2))
        c = (dy2 * y2).sum(-1, keepdim=True)
        return (torch.addcmul(dy2, y2, c, value=-0.5) * r).flatten(-2)
    c = (dy * y).sum(-1, keepdim=True)
    return torch.addcmul(dy, y, c, value=-inv_d) * r


class FusedLoop(torch.autograd.Function):
    """The covered time loop as one autograd node (see the module docstring).

    ``apply(W, g_start, rbeta, W1r, b1r, W2r, b2r, W1g, b1g, W2g, b2g, ctx_args)`` with ``W``
    the transition matrices (A, d, d), ``g_start`` (B, d) the previous g (or, for a fresh walk,
    step 0's g_pi), ``rbeta`` the landmark inverse temperature (softplus applied), the
    retrieval and gate MLPs' weights, and ``ctx_args`` = (model, obs, actions, state, context,
    fresh, s0). Returns g, g_pi, gate (B, L, d) and written (B, L) bool.
    """

    @staticmethod
    def forward(ctx, W, g_start, rbeta, W1r, b1r, W2r, b2r, W1g, b1g, W2g, b2g, args):
        model, obs, actions, state, context, fresh, s0, cpp = args
        g, g_pi, gate, written, steps = _loop_forward(
            model, W, g_start, rbeta, (W1r, b1r, W2r, b2r), (W1g, b1g, W2g, b2g), obs,
            actions, state, context, fresh, s0, save=True, cpp=cpp)
        ctx.cpp = cpp
        ctx.save_for_backward(W, rbeta, W1r, W2r, W1g, W2g)
        ctx.steps, ctx.actions, ctx.fresh, ctx.s0 = steps, actions, fresh, s0
        ctx.B = obs.shape[0]
        # Outputs the loss does not use (the gate) come back as None, not as zeros.
        ctx.set_materialize_grads(False)
        ctx.act_kind = model.config.transition_activation
        ctx.norm = fused_cpp.NORMS[model.config.g_norm]
        ctx.multiplicative = model.config.conjunction == "multiplicative"
        # The buffers as they end the chunk (append-only within it, see the module docstring).
        ctx.G, ctx.ZG = state.G, state.ZG
        ctx.mark_non_differentiable(written)
        return g, g_pi, gate, written

    @staticmethod
    def backward(ctx, grad_g, grad_gpi, grad_gate, _grad_written):
        W, rbeta, W1r, W2r, W1g, W2g = ctx.saved_tensors
        if ctx.cpp is not None:
            return _backward_cpp(ctx, W, rbeta, W1r, W2r, W1g, W2g, grad_g, grad_gpi,
                                 grad_gate)
        steps = ctx.steps
        d = W.shape[-1]
        L = len(steps)
        inv_d = 1.0 / d
        pow2 = _pow2(d)

        def per_step(gr):
            return None if gr is None else gr.unsqueeze(2).unbind(1)  # (B, 1, d) each

        gg, ggpi, ggate = per_step(grad_g), per_step(grad_gpi), per_step(grad_gate)
        # (carry) @ W[a]^T for every action at once, then pick each environment's.
        WTcat = W.transpose(1, 2).transpose(0, 1).reshape(d, -1)
        aidx = _action_columns(ctx.actions, d).unbind(0)
        W1g_s = _agree_over_d(W1g, d)
        k_d = torch.tensor(float(d), dtype=W.dtype, device=W.device)
        G, ZG, s0 = ctx.G, ctx.ZG, ctx.s0
        GT = G.transpose(1, 2)
        mul = ctx.multiplicative
        carry = None
        rb_rows = []  # the landmark inverse temperature's gradient (· rbeta), per step
        # Per-step inputs and output-gradients of every weight, stacked after the loop.
        tr_in, tr_dh, tr_t = [], [], []
        gate_in, gate_hid, gate_ds, gate_dpre = [], [], [], []
        ret_in, ret_hid, ret_dv, ret_dpre = [], [], [], []
        d_start = None
        views, m_views = None, -1
        split = [d, d, 1, 1]
        for t in range(L - 1, -1, -1):
            s = steps[t]
            if gg is None:
                dg = carry
            else:
                dg = gg[t] if carry is None else gg[t] + carry
            if s.landmark:
                if dg is None:
                    dg = torch.zeros_like(s.g_pi)
                dgate = dg * s.diff
                if ggate is not None:
                    dgate = dgate + ggate[t]
                dret = dg * s.gate
                dpi = dg - dret
                ds = dgate * s.dsig  # through the sigmoid and the has-memory mask
                dpre_g = _relu_bw(torch.matmul(ds, W2g), s.hid_g, 0)
                df_ret, df_pi, dagree, dconf = torch.matmul(dpre_g, W1g_s).split(split, -1)
                gate_in.append(s.feats)
                gate_hid.append(s.hid_g)
                gate_ds.append(ds)
                gate_dpre.append(dpre_g)
                dret = dret + df_ret
                dpi = dpi + df_pi
                dv = _rms_bw(dret, s.g_ret, s.r_ret, inv_d, ctx.norm) if ctx.norm else dret
                dpre_r = _relu_bw(torch.matmul(dv, W2r), s.hid_r, 0)
                ret_in.append(s.x_raw)
                ret_hid.append(s.hid_r)
                ret_dv.append(dv)
                ret_dpre.append(dpre_r)
                # agree = mean(z(x_raw) * zq) (dagree is already over d for d a power of two)
                dx = dv + torch.matmul(dpre_r, W1r)
                dzr = dagree * s.zq if pow2 else dagree * s.zq / k_d
                dx = dx + _ln_bw(dzr, s.x_raw, (d,), s.mean_r, s.rstd_r, None, None,
                                 _IN_ONLY)[0]
                m = s.m
                if m != m_views:
                    views, m_views = (GT[:, :, s0:m], ZG[:, s0:m]), m
                GsT, ZGs = views
                dw = torch.bmm(dx, GsT)
                dw.scatter_add_(2, s.amax, dconf)
                # masked slots have w = 0: no gradient there
                dlogit = torch._softmax_backward_data(dw, s.w, -1, dw.dtype)
                # d logits / d rbeta = logits / rbeta (masked slots: dlogit = 0)
                rb_rows.append(torch.linalg.vecdot(dlogit, s.logits))
                # d logits / d s, s = d · sim = zq · ZG (bscale holds the 1 / d for d a power of
                # two, the same bits as dividing the sum)
                if pow2:
                    dsim = dlogit * s.bscale if mul else dlogit * (s.bscale * inv_d)
                    dzq = torch.baddbmm(dagree * s.zr, dsim, ZGs)
                else:
                    dzq = torch.baddbmm(dagree * s.zr, dlogit * s.bscale, ZGs) / k_d
                dpi = dpi + _ln_bw(dzq, s.g_pi, (d,), s.mean_q, s.rstd_q, None, None,
                                   _IN_ONLY)[0]
            else:
                dpi = dg
            if ggpi is not None:
                dpi = ggpi[t] if dpi is None else dpi + ggpi[t]
            if s.g_prev is None:  # step 0 of a fresh walk: g_pi is g_start
                d_start = dpi
                carry = None
                continue
            if dpi is None:
                dpi = torch.zeros_like(s.g_pi)
            du = _rms_bw(dpi, s.g_pi, s.r_pi, inv_d, ctx.norm) if ctx.norm else dpi
            dh = _act_backward(ctx.act_kind, du, s.h, s.u)
            tr_in.append(s.g_prev)
            tr_dh.append(dh)
            tr_t.append(t)
            carry = torch.matmul(dh, WTcat).gather(2, aidx[t])
        if d_start is None:
            d_start = carry

        def cat(rows):
            return torch.cat(rows) if rows else None

        return _weight_grads(
            ctx, W, rbeta, W1g, d_start, cat(tr_in), cat(tr_dh),
            torch.tensor(tr_t, device=W.device) if tr_in else None,
            *[cat(x) for x in (gate_in, gate_hid, gate_ds, gate_dpre, ret_in, ret_hid, ret_dv,
                               ret_dpre)],
            torch.stack(rb_rows) if rb_rows else None)


def _backward_cpp(ctx, W, rbeta, W1r, W2r, W1g, W2g, grad_g, grad_gpi, grad_gate):
    """FusedLoop.backward with its loop over steps in C++ (``fused_loop.cpp``: the same
    operations in the same order)."""
    d = W.shape[-1]
    recs, meta = ctx.steps
    WTcat = W.transpose(1, 2).transpose(0, 1).reshape(d, -1)
    k_d = torch.tensor(float(d), dtype=W.dtype, device=W.device)
    out = ctx.cpp.loop_backward(
        recs, meta, grad_g, grad_gpi, grad_gate, WTcat, _action_columns(ctx.actions, d),
        W2g, _agree_over_d(W1g, d), W2r, W1r, ctx.G, ctx.ZG, k_d,
        fused_cpp.ACTIVATIONS[ctx.act_kind], ctx.norm, ctx.multiplicative)
    # empty lists come back as 0-element tensors
    d_start, *rest = [x if x.numel() else None for x in out]
    return _weight_grads(ctx, W, rbeta, W1g, d_start, *rest)


def _weight_grads(ctx, W, rbeta, W1g, d_start, tr_in, tr_dh, tr_t, gate_in, gate_hid, gate_ds,
                  gate_dpre, ret_in, ret_hid, ret_dv, ret_dpre, rb_rows):
    """Every weight gradient from the per-step rows (concatenated in reverse time), after
    the loop over steps; FusedLoop.backward's return value."""
    A, d = W.shape[0], W.shape[-1]
    B = ctx.B
    pow2 = _pow2(d)
    if d_start is not None:
        d_start = d_start.reshape(B, d)
    dW = torch.zeros_like(W) if ctx.needs_input_grad[0] else None
    if tr_in is not None and dW is not None:
        gp = tr_in.reshape(-1, d)
        dh = tr_dh.reshape(-1, d)
        acts = ctx.actions.t()[tr_t].reshape(-1)
        order = torch.argsort(acts, stable=True)
        sizes = torch.bincount(acts, minlength=A).tolist()
        gp, dh = gp[order], dh[order]
        start = 0
        for a, n in enumerate(sizes):
            if n:
                dW[a] = gp[start:start + n].t() @ dh[start:start + n]
            start += n
    grads_r = grads_g = (None, None, None, None)
    rbeta_grad = None
    if gate_in is not None:
        H = W1g.shape[0]
        dW2g, db2g = _linear_grads(gate_ds.view(-1, d), gate_hid.view(-1, H))
        dW1g, db1g = _linear_grads(gate_dpre.view(-1, H), gate_in.view(-1, W1g.shape[1]))
        if pow2:  # the stored agreement is d times the mean
            dW1g[:, 2 * d].div_(d)
        grads_g = (dW1g, db1g, dW2g, db2g)
        dW2r, db2r = _linear_grads(ret_dv.view(-1, d), ret_hid.view(-1, H))
        dW1r, db1r = _linear_grads(ret_dpre.view(-1, H), ret_in.view(-1, d))
        grads_r = (dW1r, db1r, dW2r, db2r)
        rbeta_grad = rb_rows.sum() / rbeta
    return (dW, d_start, rbeta_grad, *grads_r, *grads_g, None)


def fused_loop(model, obs, actions, state, context, fresh: bool, s0: int):
    """``TEMt._loop`` through :class:`FusedLoop` (same return values: g, g_pi, gate,
    written, and None for the FAM slot trace)."""
    B = obs.shape[0]
    W = model.transition_matrices()
    g_start = model._g0(B) if fresh else state.g
    rbeta = F.softplus(model.retrieval_beta_raw)
    r1, r2 = model.retrieval_mlp[0], model.retrieval_mlp[2]
    q1, q2 = model.gate_mlp[0], model.gate_mlp[2]
    tensors = (W, g_start, rbeta, r1.weight, r1.bias, r2.weight, r2.bias,
               q1.weight, q1.bias, q2.weight, q2.bias)
    cpp = fused_cpp.ops() if model.cpp_loop and fused_cpp.covers(model) else None
    args = (model, obs, actions, state, context, fresh, s0, cpp)
    if torch.is_grad_enabled() and any(x.requires_grad for x in tensors):
        g, g_pi, gate, written = FusedLoop.apply(*tensors, args)
    else:
        g, g_pi, gate, written, _ = _loop_forward(
            model, W, g_start, rbeta, tensors[3:7], tensors[7:11], obs, actions, state,
            context, fresh, s0, save=False, cpp=cpp)
    return g, g_pi, gate, written, None
