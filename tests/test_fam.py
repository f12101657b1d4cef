import math

import pytest
import torch

from hippo_rep.models.fam import (
    VARIANTS,
    FAMConfig,
    FAMConfigError,
    FAMTransformer,
    _neg_entropy,
    _rope,
    block_mask,
    build_fam_model,
)

torch.set_num_threads(1)

SMALL = dict(d_model=16, n_heads=2, d_ff=32, block_size=4, n_fam=3, init_std=0.3)


def token_visibility(cfg: FAMConfig, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Which tokens each query position attends to directly, for ``cfg``'s variant.

    Returns ``(tokens, fam)``: ``tokens[i, j]`` is True when query i sees token j's key (for
    fm: token j's layer output), ``fam[i]`` when it also sees FAM_{τ-1}. Derived from the same
    :func:`block_mask` the efficient forward uses (the tests' reference).
    """
    if cfg.variant == "full":
        tokens = torch.ones(length, length, dtype=torch.bool).tril()
        return tokens, torch.zeros(length, dtype=torch.bool)
    B, M, nf = cfg.block_size, cfg.n_mem, cfg.slots
    T = -(-length // B)
    mask = block_mask(T, B, M, nf)
    tokens = torch.zeros(T * B, T * B, dtype=torch.bool)
    for tau in range(T):
        rows = slice(tau * B, tau * B + B)
        for s in range(M):
            src = tau - M + s
            if src >= 0:
                tokens[rows, src * B:src * B + B] = mask[tau, :, s * B:s * B + B]
        tokens[rows, tau * B:tau * B + B] = mask[tau, :, M * B + nf:]
    fam = mask[:, :, M * B:M * B + nf].any(-1).reshape(-1) if nf else \
        torch.zeros(T * B, dtype=torch.bool)
    return tokens[:length, :length], fam[:length]


def model(variant="fam", seed=0, **kw) -> FAMTransformer:
    return build_fam_model(FAMConfig(variant=variant, **{**SMALL, **kw}), seed=seed).eval()


def tokens(n=3, length=23, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 36, (n, length), generator=g)


# --------------------------------------------------------------------------- config
@pytest.mark.parametrize("kw, word", [
    (dict(variant="fam", n_fam=0), "n_fam"),
    (dict(variant="sum", n_fam=0), "n_fam"),
    (dict(n_mem=-1), "n_mem"),
    (dict(block_size=0), "block_size"),
    (dict(variant="window"), "variant"),
    (dict(d_model=30, n_heads=4), "divisible"),
    (dict(d_model=12, n_heads=4), "even"),
    (dict(n_layers=1.5), "n_layers"),
    (dict(mem_stop_grad=1), "mem_stop_grad"),
    (dict(pos_encoding="alibi"), "pos_encoding"),
])
def test_bad_config_raises_naming_the_field(kw, word):
    with pytest.raises(FAMConfigError, match=word):
        FAMConfig(**kw)


def test_bswa_accepts_zero_slots_and_config_round_trips():
    cfg = FAMConfig(variant="bswa", n_fam=0, n_mem=0)
    assert cfg.slots == 0
    assert FAMConfig.from_dict(cfg.to_dict()) == cfg
    assert FAMConfig.from_dict({"rope_base": 500}).rope_base == 500.0
    with pytest.raises(FAMConfigError, match="unknown key"):
        FAMConfig.from_dict({"n_memory": 2})


def test_bad_inputs_raise():
    m = model("fam")
    with pytest.raises(FAMConfigError, match="integer tensor"):
        m(torch.zeros(2, 5))
    with pytest.raises(FAMConfigError, match="vocab_size"):
        m(torch.full((1, 5), 36))
    with pytest.raises(FAMConfigError, match="state must have shape"):
        m(tokens(2, 8), torch.zeros(2, 3, 3, 16))
    with pytest.raises(FAMConfigError, match="carries no FAM state"):
        model("bswa")(tokens(1, 8), torch.zeros(2, 1, 3, 16))
    with pytest.raises(FAMConfigError, match="unknown loss"):
        m(tokens(1, 8), aux=("entropy",))
    with pytest.raises(FAMConfigError, match="needs FAM slots"):
        model("bswa")(tokens(1, 8), aux=("recon",))


# ---------------------------------------------------------------------------- masks
def expected_visibility(variant, n, B, M, F):
    """The definition: which keys query i sees, written position by position."""
    tok = torch.zeros(n, n, dtype=torch.bool)
    fam = torch.zeros(n, dtype=torch.bool)
    for i in range(n):
        for j in range(n):
            if variant == "full":
                tok[i, j] = j <= i
            else:
                bi, bj = i // B, j // B
                tok[i, j] = (bj == bi and j <= i) or (bi - M <= bj < bi)
        fam[i] = variant in ("fam", "sum") and F > 0
    return tok, fam


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("M", [0, 1, 3])
def test_token_visibility_matches_definition(variant, M):
    cfg = FAMConfig(variant=variant, block_size=4, n_mem=M, n_fam=2)
    for n in (1, 4, 13, 24):
        got_tok, got_fam = token_visibility(cfg, n)
        want_tok, want_fam = expected_visibility(variant, n, 4, M, cfg.slots)
        assert torch.equal(got_tok, want_tok), (variant, M, n)
        assert torch.equal(got_fam, want_fam), (variant, M, n)


def test_block_mask_layout():
    m = block_mask(n_blocks=3, block_size=2, n_mem=2, n_fam=1)
    assert m.shape == (3, 2, 2 * 2 + 1 + 2)
    # block 0: no memory, FAM, causal block
    assert m[0].tolist() == [[0, 0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1, 1]]
    # block 1: only the newest memory segment (block 0) exists
    assert m[1, 1].tolist() == [0, 0, 1, 1, 1, 1, 1]
    # block 2: both memory segments
    assert m[2, 0].tolist() == [1, 1, 1, 1, 1, 1, 0]


def _dependence(m: FAMTransformer, x: torch.Tensor) -> torch.Tensor:
    """dep[i, j]: the logits at i change when token j is changed."""
    n = x.shape[1]
    base = m(x).logits
    dep = torch.zeros(n, n, dtype=torch.bool)
    for j in range(n):
        y = x.clone()
        y[:, j] = (y[:, j] + 7) % 36
        dep[:, j] = (m(y).logits - base).abs().amax(dim=(0, 2)) > 1e-6
    return dep


@torch.no_grad()
@pytest.mark.parametrize("variant, M", [("bswa", 0), ("bswa", 1), ("bswa", 2), ("full", 0)])
def test_one_layer_window_sees_exactly_its_mask(variant, M):
    m = model(variant, n_layers=1, n_mem=M)
    x = tokens(2, 18)
    want, _ = token_visibility(m.cfg, 18)
    assert torch.equal(_dependence(m, x), want)


@torch.no_grad()
@pytest.mark.parametrize("variant", ["fam", "sum", "fm"])
def test_memory_carries_beyond_the_window(variant):
    # one layer, M = 1: the window alone sees 2 blocks; FAM/SUM/FM reach every earlier token
    m = model(variant, n_layers=1, n_mem=1)
    x = tokens(2, 18)
    dep = _dependence(m, x)
    assert torch.equal(dep, torch.ones(18, 18, dtype=torch.bool).tril())
    window, _ = token_visibility(FAMConfig(variant="bswa", block_size=4, n_mem=1), 18)
    assert (dep & ~window).any()


# ------------------------------------------------------------------ FAM update reference
def slow_fam_states(m: FAMTransformer, x: torch.Tensor) -> torch.Tensor:
    """FAM_τ of a one-layer model, computed with explicit loops over batch, head, slot, key
    (no batched attention), from the definition of Hwang et al. 2024 (Fig. 2)."""
    cfg = m.cfg
    lay = m.layers[0]
    B, nf, H, dh, d = cfg.block_size, cfg.n_fam, cfg.n_heads, cfg.d_model // cfg.n_heads, \
        cfg.d_model
    h = m.embed(x)
    N, L, _ = h.shape
    W, b = lay.qkv.weight, lay.qkv.bias

    def qkv(vec):
        y = W @ lay.ln1(vec) + b
        return y[:d], y[d:2 * d], y[2 * d:]

    def rot(vec, p):
        return _rope(vec.view(1, dh), torch.tensor(float(p)), cfg.rope_base).view(dh)

    states = []
    for n in range(N):
        f = [lay.fam_init[s] for s in range(nf)]
        static = [lay.fam_init[s] for s in range(nf)]
        per_block = []
        for t in range(-(-L // B)):
            blk = [h[n, j] for j in range(t * B, min(L, t * B + B))]
            kv_f = [qkv(v) for v in f]
            kv_b = [qkv(v) for v in blk]
            src = static if cfg.variant == "sum" else f
            new = []
            for s in range(nf):
                q_all = qkv(src[s])[0]
                heads = []
                for hd in range(H):
                    sl = slice(hd * dh, (hd + 1) * dh)
                    q = rot(q_all[sl], (t + 1) * B)
                    keys = [rot(k[sl], t * B) for _, k, _ in kv_f] + \
                        [rot(k[sl], t * B + j) for j, (_, k, _) in enumerate(kv_b)]
                    vals = [v[sl] for _, _, v in kv_f] + [v[sl] for _, _, v in kv_b]
                    scores = torch.stack([q @ k / math.sqrt(dh) for k in keys])
                    w = torch.exp(scores - scores.max())
                    w = w / w.sum()
                    heads.append(sum(wi * vi for wi, vi in zip(w, vals, strict=True)))
                o = lay.proj.weight @ torch.cat(heads) + lay.proj.bias
                r = src[s] + o  # the "FAM copy" residual (sum: the static token)
                new.append(r + lay.ff(lay.ln2(r)))
            f = new
            per_block.append(torch.stack(f))
        states.append(torch.stack(per_block))
    return torch.stack(states)  # (N, T, F, d)


@torch.no_grad()
@pytest.mark.parametrize("variant", ["fam", "sum"])
@pytest.mark.parametrize("length", [12, 14])
def test_fam_update_equals_slow_loop_reference(variant, length):
    m = model(variant, n_layers=1, n_mem=1)
    x = tokens(2, length)
    ref = slow_fam_states(m, x)
    got = m(x).state[0]
    torch.testing.assert_close(got, ref[:, -1], atol=1e-5, rtol=1e-5)
    # every intermediate FAM_τ too: the final state of each prefix of whole blocks
    for t in range(ref.shape[1] - 1):
        pre = m(x[:, :(t + 1) * 4]).state[0]
        torch.testing.assert_close(pre, ref[:, t], atol=1e-5, rtol=1e-5)


# ------------------------------------------------------ efficient == block by block
@pytest.mark.parametrize("variant", ["full", "bswa", "fam", "sum"])
@pytest.mark.parametrize("M", [0, 1, 3])
@pytest.mark.parametrize("stop", [False, True])
def test_efficient_equals_blockwise(variant, M, stop):
    m = model(variant, n_mem=M, mem_stop_grad=stop, init_std=0.1)
    x = tokens(3, 23)  # not a multiple of B = 4: padded and masked
    aux = ("diversity", "recon") if variant in ("fam", "sum") else ("diversity",)
    state = None
    if m.cfg.slots:
        state = torch.randn(2, 3, 3, 16) * 0.1
    a = m(x, state, aux=aux)
    b = m.forward_blockwise(x, state, aux=aux)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=0)
    if m.cfg.slots:
        torch.testing.assert_close(a.state, b.state, atol=1e-5, rtol=1e-5)
    for k in aux:
        torch.testing.assert_close(a.aux[k], b.aux[k], atol=1e-5, rtol=1e-5)
    # and the gradients (through memory segments and the FAM chain) agree
    ga = torch.autograd.grad(a.logits.square().mean(), list(m.parameters()), allow_unused=True)
    gb = torch.autograd.grad(b.logits.square().mean(), list(m.parameters()), allow_unused=True)
    for u, v in zip(ga, gb, strict=True):
        if u is None or v is None:
            assert u is None and v is None
        else:
            torch.testing.assert_close(u, v, atol=1e-5, rtol=1e-4)


def _aux_sets(variant):
    """Every subset of the auxiliary losses the variant accepts (recon needs FAM slots)."""
    names = ("diversity", "recon") if variant in ("fam", "sum") else ("diversity",)
    return [(), *[(a,) for a in names], *([names] if len(names) > 1 else [])]


@pytest.mark.parametrize("variant, aux", [(v, a) for v in VARIANTS for a in _aux_sets(v)],
                         ids=lambda p: "+".join(p) or "no_aux" if isinstance(p, tuple) else p)
def test_blockwise_equals_efficient_with_and_without_aux_losses(variant, aux):
    m = model(variant, n_mem=1, init_std=0.1)
    x = tokens(2, 14)  # a partial last block: the padding mask is exercised
    a = m(x, aux=aux)
    b = m.forward_blockwise(x, aux=aux)
    assert set(a.aux) == set(b.aux) == set(aux)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=0)
    if m.cfg.slots:
        torch.testing.assert_close(a.state, b.state, atol=1e-5, rtol=1e-5)
    else:
        assert a.state is None and b.state is None
    for k in aux:
        torch.testing.assert_close(a.aux[k], b.aux[k], atol=1e-5, rtol=1e-5)
    # requesting auxiliary losses never changes the prediction
    plain = m.forward_blockwise(x)
    torch.testing.assert_close(b.logits, plain.logits, atol=1e-6, rtol=0)
    # gradients of the prediction and of the auxiliary losses agree too
    params = list(m.parameters())
    la = a.logits.square().mean() + sum(a.aux.values())
    lb = b.logits.square().mean() + sum(b.aux.values())
    ga = torch.autograd.grad(la, params, allow_unused=True)
    gb = torch.autograd.grad(lb, params, allow_unused=True)
    for u, v in zip(ga, gb, strict=True):
        if u is None or v is None:
            assert u is None and v is None
        else:
            torch.testing.assert_close(u, v, atol=1e-5, rtol=1e-4)


@torch.no_grad()
@pytest.mark.parametrize("variant", ["fam", "sum"])
@pytest.mark.parametrize("aux", [(), ("diversity",), ("recon",)], ids=["no_aux", "diversity",
                                                                      "recon"])
def test_blockwise_fam_update_equals_slow_loop_reference(variant, aux):
    m = model(variant, n_layers=1, n_mem=1)
    x = tokens(2, 14)
    ref = slow_fam_states(m, x)
    got = m.forward_blockwise(x, aux=aux).state[0]
    torch.testing.assert_close(got, ref[:, -1], atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_bswa_with_a_window_over_everything_is_full_attention():
    x = tokens(2, 22)
    full = model("full", seed=3)(x).logits
    bswa = model("bswa", seed=3, n_mem=6)(x).logits
    torch.testing.assert_close(bswa, full, atol=1e-5, rtol=0)


@torch.no_grad()
def test_padding_content_never_matters():
    m = model("fam", n_mem=1)
    x = tokens(2, 22)
    a = m(x)
    m.pad_id = 17
    b = m(x)
    torch.testing.assert_close(a.logits, b.logits, atol=0, rtol=0)
    torch.testing.assert_close(a.state, b.state, atol=0, rtol=0)


# ------------------------------------------------------------------------ causality
@torch.no_grad()
@pytest.mark.parametrize("variant", VARIANTS)
def test_no_future_token_changes_an_earlier_prediction(variant):
    m = model(variant, n_mem=1)
    x = tokens(2, 21)
    base = m(x).logits
    for p in (0, 3, 4, 9, 20):
        y = x.clone()
        y[:, p] = (y[:, p] + 5) % 36
        out = m(y).logits
        torch.testing.assert_close(out[:, :p], base[:, :p], atol=0, rtol=0)
        assert (out[:, p] - base[:, p]).abs().max() > 1e-6


# -------------------------------------------------------------------- memory options
def test_stop_grad_cuts_gradients_into_memory_segments():
    x = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])  # block 0 ids 1–4, block 1 ids 5–8
    for stop, expect_zero in ((False, False), (True, True)):
        m = model("bswa", n_layers=1, n_mem=1, mem_stop_grad=stop)
        m(x).logits[0, 7].sum().backward()
        g = m.embed.weight.grad[1:5].abs().sum()
        assert (g == 0) == expect_zero


def test_state_passing_changes_the_start_and_gradients_reach_the_initial_fam():
    m = model("fam")
    x = tokens(2, 9)
    a = m(x)
    b = m(x, a.state.detach())
    assert not torch.allclose(a.logits, b.logits)
    assert a.state.shape == (2, 2, 3, 16)
    a.logits.sum().backward()
    assert all(lay.fam_init.grad.abs().sum() > 0 for lay in m.layers)


def test_diversity_of_uniform_attention_is_minus_log_k():
    p = torch.full((2, 4, 3, 5), 0.2)  # (batch, heads, queries, keys)
    torch.testing.assert_close(_neg_entropy(p), torch.full((2,), -math.log(5)))
    one_hot = torch.zeros(1, 1, 2, 5)
    one_hot[..., 0] = 1
    torch.testing.assert_close(_neg_entropy(one_hot), torch.zeros(1))


def test_rope_depends_only_on_offsets():
    q, k = torch.randn(8), torch.randn(8)

    def dot(p, s):
        return _rope(q[None], torch.tensor(float(p)), 1e4)[0] @ \
            _rope(k[None], torch.tensor(float(s)), 1e4)[0]

    torch.testing.assert_close(dot(3, 1), dot(103, 101))
    torch.testing.assert_close(dot(16, 16), q @ k)


def test_fm_has_no_efficient_form_but_runs_and_learns_gradients():
    m = model("fm", n_mem=2)
    x = tokens(2, 13)
    out = m(x, aux=("diversity",))
    (out.logits.sum() + out.aux["diversity"]).backward()
    assert all(p.grad is not None for p in m.parameters())


@torch.no_grad()
def test_fm_memory_holds_the_layer_outputs():
    # one layer, M = 1, two blocks, written out by hand from the definition
    m = model("fm", n_layers=1, n_mem=1)
    lay, B, H = m.layers[0], 4, 2
    x = tokens(1, 8)
    h = m.embed(x)[0]  # (8, d)

    def heads(z):
        return z.view(-1, H, 8).transpose(0, 1)  # (H, n, dh)

    def layer(hb, pos, mem_h=None, mem_pos=None):
        q, k, v = (heads(z) for z in lay.qkv(lay.ln1(hb)).chunk(3, -1))
        q, k = _rope(q, pos, 1e4), _rope(k, pos, 1e4)
        mask = torch.ones(B, B).tril().bool()
        if mem_h is not None:
            _, mk, mv = (heads(z) for z in lay.qkv(lay.ln1(mem_h)).chunk(3, -1))
            k = torch.cat([_rope(mk, mem_pos, 1e4), k], 1)
            v = torch.cat([mv, v], 1)
            mask = torch.cat([torch.ones(B, B).bool(), mask], 1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(8)
        o = s.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        r = hb + lay.proj(o.transpose(0, 1).reshape(B, 16))
        return r + lay.ff(lay.ln2(r))

    p0, p1 = torch.arange(4.0), torch.arange(4.0, 8.0)
    out0 = layer(h[:4], p0)
    out1 = layer(h[4:], p1, mem_h=out0, mem_pos=p0)  # memory = block 0's *outputs*
    want = m.head(m.ln_f(torch.cat([out0, out1])))
    torch.testing.assert_close(m(x).logits[0], want, atol=1e-5, rtol=1e-5)
