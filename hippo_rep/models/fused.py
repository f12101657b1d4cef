"""A fused time loop for TEM-t: :meth:`TEMt._loop` with a hand-written backward-through-time.

:meth:`TEMt._loop` runs ~116 small tensor operations per walk step and leaves ~52 autograd
nodes per step for backward; at the sizes trained here (batch 16, n_g 64) their dispatch
overhead, not arithmetic, is the cost. :class:`FusedLoop` computes the same forward with the
same operations in the same order, so g, g_pi and the gate are bit-for-bit those of the eager
loop, but records no autograd graph and issues fewer operations (buffer rows are written
unconditionally into each environment's next free slot, which stays masked unless the step
is new). One difference: the add-if-novel similarity takes the same dot products in another
orientation, (B, 1, d) @ (B, d, M) instead of (B, M, d) @ (B, d, 1), ~5x faster here; they may
differ in the last bit, so a write decision can differ only for a similarity within ~1e-7 of
``write_threshold``. Its backward runs only the sequential per-step products in reverse time
(grad-input of the transition, of the retrieval and gate MLPs and of the retrieval softmax);
every weight gradient is computed after that loop with one matrix product over all steps
(the transition matrices' grouped by action).

Memory reads in backward use the buffers as they are at the end of the chunk: the buffer is
append-only within a chunk and a step only reads slots that were already written when it ran
(the others are masked, with zero weight and zero gradient), as in ``_ConstBmm``.

Covered: ``model.kind = "temt"`` with memory "full" or "window", every transition activation,
``g_norm`` rms/none, ``transition_param`` free/orthogonal (the matrices come in through
autograd, so matrix_exp's backward stays torch's), both conjunctions, the landmark on or off,
a context stream, one retrieval iteration or more (retrieval iterations concern only the
prediction, which stays eager). :func:`unsupported` names what is not; the model then runs
its eager loop.

Shapes: B environments, L steps of the chunk, d = n_g, A actions, H hidden units, M slots.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

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


def _rms(u, k):
    """Unit-RMS rescaling, bit-for-bit ``memory._rescale`` (pow(2) is u·u, and mean is sum / d
    on the CPU); ``k`` holds the constants as 0-dim tensors (:func:`_constants`), which spare
    the conversion a Python scalar costs per operation. Returns (u * r, r), r (B, 1)."""
    r = torch.rsqrt((u * u).sum(-1, keepdim=True) / k["d"] + k["eps"])
    return u * r, r


def _constants(like, d: int) -> dict:
    """d, the normalisation's eps and 1 as 0-dim tensors of ``like``'s dtype and device."""
    return {k: torch.tensor(v, dtype=like.dtype, device=like.device)
            for k, v in (("d", float(d)), ("eps", _EPS), ("one", 1.0))}


def _rms_backward(dy, y, r):
    """Gradient through y = u * r, r = rsqrt(mean(u²) + eps) (dy, y (B, d); r (B, 1)):
    r (dy − y mean(dy y))."""
    c = (dy * y).sum(-1, keepdim=True)
    return torch.addcmul(dy, y, c, value=-1.0 / y.shape[-1]) * r


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
    """(L, B, d) long: the columns of action a_t's block in a (B, A·d) product with every
    action's matrix side by side (one matmul for all actions, then a gather)."""
    return (actions.t() * d)[:, :, None] + torch.arange(d, device=actions.device)


class _Step:
    """What backward needs of one step (attributes set only where used)."""

    __slots__ = ("g_prev", "h", "u", "r_pi", "m", "g_pi", "mean_q", "rstd_q", "zq", "sx",
                 "conj", "beta", "logn", "w", "amax", "x_raw", "hid_r", "g_ret", "r_ret", "zr",
                 "mean_r", "rstd_r", "feats", "hid_g", "dsig", "gate", "diff", "landmark")


def _loop_forward(model, W, g_start, rbeta, wr, wg, obs, actions, state, context,
                  fresh: bool, s0: int, save: bool):
    """The time loop's forward (``TEMt._loop`` for the covered variants), writing into
    ``state``'s buffers in place. ``wr``/``wg``: (W1, b1, W2, b2) of the retrieval and gate
    MLPs. Returns g, g_pi, gate (B, L, d), written (B, L) bool and, with ``save``, the
    per-step records for backward."""
    cfg = model.config
    B, L = obs.shape
    d = cfg.n_g
    dev = obs.device
    act_kind, rms = cfg.transition_activation, cfg.g_norm == "rms"
    window = cfg.memory == "window"
    multiplicative = cfg.conjunction == "multiplicative"
    thr = torch.tensor(cfg.write_threshold, dtype=state.G.dtype, device=dev)  # as eager's cast
    # Steps first, contiguous: a step's observations index_copy_ without a copy.
    obs_t, ctx_t = obs.t().contiguous(), context.t().contiguous()
    # One matmul against all actions, then pick (as TEMt.transition).
    Wcat = W.transpose(0, 1).reshape(d, -1)
    aidx = _action_columns(actions, d)
    cap = state.capacity
    slots = torch.arange(cap, device=dev)
    flat = torch.arange(B, device=dev) * cap  # row offsets into the flattened buffers
    Gf, ZGf = state.G.view(B * cap, d), state.ZG.view(B * cap, d)
    Xf, Cf, Tf = state.X.view(-1), state.C.view(-1), state.T.view(-1)
    # Contexts are compared only when some context is set (zeros everywhere otherwise).
    use_c = bool(context.any()) or bool(state.C.any())
    k = _constants(state.G, d)
    W1r, b1r, W2r, b2r = wr
    W1g, b1g, W2g, b2g = wg
    g_prev = state.g
    gs, gpis, gates, steps = [], [], [], []
    news = []
    count = state.count
    zero_gate = None
    for t in range(L):
        tg = state.t + t
        rec = _Step() if save else None
        if fresh and t == 0:
            g_pi = g_start
            if save:
                rec.g_prev = None
        else:
            h = (g_prev @ Wcat).gather(1, aidx[t])
            u = _activation(act_kind, h)
            if rms:
                g_pi, r_pi = _rms(u, k)
            else:
                g_pi, r_pi = u, None
            if save:
                rec.g_prev, rec.h, rec.u, rec.r_pi, rec.g_pi = g_prev, h, u, r_pi, g_pi
        m = int(count.max())
        if m > s0:
            ZGt = state.ZG[:, s0:m].transpose(1, 2)
            same_x = state.X[:, s0:m] == obs_t[t, :, None]
            if use_c:
                same_x = same_x & (state.C[:, s0:m] == ctx_t[t, :, None])
            valid = slots[s0:m] < count[:, None]
            if window:
                valid = valid & (state.T[:, s0:m] >= model.memory.window_start(tg))
            invalid = ~valid
        if cfg.landmark and m > s0:
            # Memories visible, as float32 like the eager loop's log(n.clamp(min=1).float()) and
            # (n > 0).float() (small integers: the same values, fewer conversions).
            n_vis = valid.sum(1, dtype=torch.float32)
            zq, mean_q, rstd_q = torch.native_layer_norm(g_pi, (d,), None, None, _LN_EPS)
            sim = torch.bmm(zq[:, None], ZGt)[:, 0] / k["d"]
            sx = same_x.float()
            conj = sim * sx if multiplicative else sim + sx
            logn = torch.log(n_vis.clamp(min=1))[:, None]
            beta = rbeta * logn
            # memory_activation(..., "softmax"); zeroing by masked_fill_ = multiplying by valid
            w = torch.softmax((beta * conj).masked_fill(invalid, -1e30), dim=-1)
            w.masked_fill_(invalid, 0.0)
            x_raw = torch.bmm(w[:, None], state.G[:, s0:m])[:, 0]
            conf, amax = w.max(-1, keepdim=True)
            has = n_vis.clamp(max=1)[:, None]  # 1 with a visible memory, else 0
            # TEMt._correct
            pre_r = F.linear(x_raw, W1r, b1r)
            hid_r = torch.relu(pre_r)
            v = x_raw + F.linear(hid_r, W2r, b2r)
            if rms:
                g_ret, r_ret = _rms(v, k)
            else:
                g_ret, r_ret = v, None
            zr, mean_r, rstd_r = torch.native_layer_norm(x_raw, (d,), None, None, _LN_EPS)
            agree = (zr * zq).sum(-1, keepdim=True) / k["d"]  # the mean
            feats = torch.cat([g_ret, g_pi, agree, conf], -1)
            pre_g = F.linear(feats, W1g, b1g)
            hid_g = torch.relu(pre_g)
            sig = torch.sigmoid(F.linear(hid_g, W2g, b2g))
            gate = sig * has
            diff = g_ret - g_pi
            g_t = g_pi + gate * diff
            if save:
                rec.landmark, rec.m = True, m
                rec.g_pi, rec.mean_q, rec.rstd_q, rec.zq = g_pi, mean_q, rstd_q, zq
                rec.sx, rec.conj, rec.beta, rec.logn = sx, conj, beta, logn
                rec.w, rec.amax, rec.x_raw, rec.hid_r = w, amax, x_raw, hid_r
                rec.g_ret, rec.r_ret, rec.zr, rec.feats = g_ret, r_ret, zr, feats
                rec.mean_r, rec.rstd_r = mean_r, rstd_r
                rec.hid_g, rec.gate, rec.diff = hid_g, gate, diff
                rec.dsig = (has, sig)  # made has·σ'(s) for all steps at once after the loop
        else:
            g_t = g_pi
            if zero_gate is None:
                zero_gate = torch.zeros_like(g_pi)
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
            sim_t = torch.bmm(zt[:, None], ZGt)[:, 0] / k["d"]
            new = ~((sim_t > thr) & same_x & valid).any(1)
        else:
            new = torch.ones(B, dtype=torch.bool, device=dev)
        news.append(new)
        fi = flat + count
        Gf.index_copy_(0, fi, g_t)
        ZGf.index_copy_(0, fi, zt)
        Xf.index_copy_(0, fi, obs_t[t])
        if use_c:  # else C is 0 everywhere and stays so
            Cf.index_copy_(0, fi, ctx_t[t])
        Tf.index_fill_(0, fi, tg)
        count = count + new.long()
        gs.append(g_t)
        gpis.append(g_pi)
        gates.append(gate)
        if save:
            steps.append(rec)
        g_prev = g_t
    if save:
        lm = [rec for rec in steps if rec.landmark]
        if lm:
            has, sig = (torch.stack(x) for x in zip(*(rec.dsig for rec in lm), strict=True))
            for rec, ds in zip(lm, has * sig * (k["one"] - sig), strict=True):
                rec.dsig = ds
    # Reset the free slot each environment may have left a non-new row in.
    free = count < cap
    if bool(free.any()):
        fi = (flat + count)[free]
        Gf.index_fill_(0, fi, 0.0)
        ZGf.index_fill_(0, fi, 0.0)
        Xf.index_fill_(0, fi, -1)
        Cf.index_fill_(0, fi, 0)
        Tf.index_fill_(0, fi, -1)
    state.count = count
    return (torch.stack(gs, 1), torch.stack(gpis, 1), torch.stack(gates, 1),
            torch.stack(news, 1), steps)


def _linear_grads(dout, x):
    """Weight and bias gradients of ``out = x @ W^T + b`` from stacked rows (N, ·)."""
    return dout.t() @ x, dout.sum(0)


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
        model, obs, actions, state, context, fresh, s0 = args
        g, g_pi, gate, written, steps = _loop_forward(
            model, W, g_start, rbeta, (W1r, b1r, W2r, b2r), (W1g, b1g, W2g, b2g), obs,
            actions, state, context, fresh, s0, save=True)
        ctx.save_for_backward(W, W1r, W2r, W1g, W2g)
        ctx.steps, ctx.actions, ctx.fresh, ctx.s0 = steps, actions, fresh, s0
        ctx.B = obs.shape[0]
        # Outputs the loss does not use (the gate) come back as None, not as zeros.
        ctx.set_materialize_grads(False)
        ctx.act_kind = model.config.transition_activation
        ctx.rms = model.config.g_norm == "rms"
        ctx.multiplicative = model.config.conjunction == "multiplicative"
        # The buffers as they end the chunk (append-only within it, see the module docstring).
        ctx.G, ctx.ZG = state.G, state.ZG
        ctx.mark_non_differentiable(written)
        return g, g_pi, gate, written

    @staticmethod
    def backward(ctx, grad_g, grad_gpi, grad_gate, _grad_written):
        W, W1r, W2r, W1g, W2g = ctx.saved_tensors
        steps = ctx.steps
        A, d = W.shape[0], W.shape[-1]
        L = len(steps)
        B = ctx.B
        zeros = None

        def grad_at(gr, t):
            nonlocal zeros
            if gr is not None:
                return gr[:, t]
            if zeros is None:
                zeros = W.new_zeros(B, d)
            return zeros

        # (carry) @ W[a]^T for every action at once, then pick each environment's.
        WTcat = W.transpose(1, 2).transpose(0, 1).reshape(d, -1)
        aidx = _action_columns(ctx.actions, d)
        G, ZG, s0 = ctx.G, ctx.ZG, ctx.s0
        k = _constants(G, d)
        mul = ctx.multiplicative
        carry = None
        rb_rows, rb_logn = [], []  # the landmark inverse temperature's gradient, per step
        # Per-step inputs and output-gradients of every weight, stacked after the loop.
        tr_in, tr_dh, tr_t = [], [], []
        gate_in, gate_hid, gate_ds, gate_dpre = [], [], [], []
        ret_in, ret_hid, ret_dv, ret_dpre = [], [], [], []
        d_start = None
        for t in range(L - 1, -1, -1):
            s = steps[t]
            dg = grad_at(grad_g, t)
            if carry is not None:
                dg = dg + carry
            if s.landmark:
                dgate = dg * s.diff
                if grad_gate is not None:
                    dgate = dgate + grad_gate[:, t]
                dret = dg * s.gate
                dpi = dg - dret
                ds = dgate * s.dsig  # through the sigmoid and the has-memory mask
                dpre_g = _relu_bw(ds @ W2g, s.hid_g, 0)
                dfeats = dpre_g @ W1g
                gate_in.append(s.feats)
                gate_hid.append(s.hid_g)
                gate_ds.append(ds)
                gate_dpre.append(dpre_g)
                dret = dret + dfeats[:, :d]
                dpi = dpi + dfeats[:, d:2 * d]
                dagree = dfeats[:, 2 * d:2 * d + 1]
                dconf = dfeats[:, 2 * d + 1:]
                dv = _rms_backward(dret, s.g_ret, s.r_ret) if ctx.rms else dret
                dpre_r = _relu_bw(dv @ W2r, s.hid_r, 0)
                ret_in.append(s.x_raw)
                ret_hid.append(s.hid_r)
                ret_dv.append(dv)
                ret_dpre.append(dpre_r)
                # agree = mean(z(x_raw) * zq)
                dx = torch.addmm(dv, dpre_r, W1r)
                dx = dx + _ln_bw(dagree * s.zq / k["d"], s.x_raw, (d,), s.mean_r, s.rstd_r,
                                 None, None, _IN_ONLY)[0]
                m = s.m
                dw = torch.bmm(dx[:, None], G[:, s0:m].transpose(1, 2))[:, 0]
                dw = dw.scatter_add(1, s.amax, dconf)
                # w is 0 on masked slots (and on rows with none valid): no gradient there
                dlogit = torch._softmax_backward_data(dw, s.w, -1, dw.dtype)
                rb_rows.append((dlogit * s.conj).sum(-1, keepdim=True))
                rb_logn.append(s.logn)
                dsim = dlogit * s.beta
                if mul:
                    dsim = dsim * s.sx
                dzq = torch.baddbmm((dagree * s.zr)[:, None], dsim[:, None], ZG[:, s0:m])[:, 0]
                dzq = dzq / k["d"]
                dpi = dpi + _ln_bw(dzq, s.g_pi, (d,), s.mean_q, s.rstd_q, None, None,
                                   _IN_ONLY)[0]
            else:
                dpi = dg
            if grad_gpi is not None:
                dpi = dpi + grad_gpi[:, t]
            if s.g_prev is None:  # step 0 of a fresh walk: g_pi is g_start
                d_start = dpi
                carry = None
                continue
            du = _rms_backward(dpi, s.g_pi, s.r_pi) if ctx.rms else dpi
            dh = _act_backward(ctx.act_kind, du, s.h, s.u)
            tr_in.append(s.g_prev)
            tr_dh.append(dh)
            tr_t.append(t)
            carry = (dh @ WTcat).gather(1, aidx[t])
        if d_start is None:
            d_start = carry
        dW = torch.zeros_like(W) if ctx.needs_input_grad[0] else None
        if tr_in and dW is not None:
            gp = torch.stack(tr_in).reshape(-1, d)
            dh = torch.stack(tr_dh).reshape(-1, d)
            acts = ctx.actions.t()[torch.tensor(tr_t, device=gp.device)].reshape(-1)
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
        if gate_in:
            dW2g, db2g = _linear_grads(torch.cat(gate_ds), torch.cat(gate_hid))
            dW1g, db1g = _linear_grads(torch.cat(gate_dpre), torch.cat(gate_in))
            grads_g = (dW1g, db1g, dW2g, db2g)
            dW2r, db2r = _linear_grads(torch.cat(ret_dv), torch.cat(ret_hid))
            dW1r, db1r = _linear_grads(torch.cat(ret_dpre), torch.cat(ret_in))
            grads_r = (dW1r, db1r, dW2r, db2r)
            rbeta_grad = (torch.stack(rb_rows) * torch.stack(rb_logn)).sum()
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
    args = (model, obs, actions, state, context, fresh, s0)
    if torch.is_grad_enabled() and any(x.requires_grad for x in tensors):
        g, g_pi, gate, written = FusedLoop.apply(*tensors, args)
    else:
        g, g_pi, gate, written, _ = _loop_forward(
            model, W, g_start, rbeta, tensors[3:7], tensors[7:11], obs, actions, state,
            context, fresh, s0, save=False)
    return g, g_pi, gate, written, None
