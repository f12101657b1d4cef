"""Bounded-memory TEM-t variants (model.memory = window | fam | hebbian) against references."""

import math

import pytest
import torch
import torch.nn.functional as F

from hippo_rep.config import ConfigError, load_config
from hippo_rep.models.memory import _rescale, hebbian_matrix, hebbian_retrieve
from hippo_rep.models.registry import build_model
from hippo_rep.models.temt import _z

N_ACT, N_OBS = 5, 7


def model(memory="full", seed=0, **kw):
    sets = [f"model.memory={memory}"] + [f"model.{k}={v}" for k, v in kw.items()]
    cfg = load_config("tiny", sets)
    return build_model(cfg.model, N_ACT, N_OBS, seed=seed).eval()


def walk(B=3, L=48, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randint(0, N_OBS, (B, L), generator=gen),
            torch.randint(0, N_ACT, (B, L), generator=gen))


@torch.no_grad()
@pytest.mark.parametrize("block, blocks", [(4, 0), (4, 2), (8, 1)])
def test_window_hides_memories_outside_the_window(block, blocks):
    m = model("window", memory_block=block, memory_blocks=blocks, write_threshold=1.5)
    obs, act = walk()
    out, state = m(obs, act, return_activity=True)
    L = obs.shape[1]
    T = state.T  # step each memory was written; threshold > 1: every step writes
    for t in range(L):
        lo = (t // block - blocks) * block
        visible = (T >= 0) & (T < t) & (T >= lo)
        a = out.activity[:, t, :T.shape[1]]
        assert (a[~visible] == 0).all()
        if visible.any(1).all():
            assert torch.allclose(a.sum(-1), torch.ones(3))


@torch.no_grad()
def test_window_wider_than_the_walk_equals_full():
    obs, act = walk(L=40)
    full = model("full")
    wide = model("window", memory_block=8, memory_blocks=10)
    a, _ = full(obs, act)
    b, _ = wide(obs, act)
    torch.testing.assert_close(a.logits_pi, b.logits_pi)
    torch.testing.assert_close(a.g, b.g)


@torch.no_grad()
@pytest.mark.parametrize("memory", ["window", "fam", "hebbian"])
def test_chunked_walk_equals_whole_walk(memory):
    m = model(memory, memory_block=4, memory_blocks=1)
    obs, act = walk(L=36)
    whole, _ = m(obs, act)
    state, parts = None, []
    for s in range(0, 36, 10):  # chunks that straddle block boundaries
        out, state = m(obs[:, s:s + 10], act[:, s:s + 10], state)
        parts.append(out.logits_pi)
    torch.testing.assert_close(torch.cat(parts, 1), whole.logits_pi, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_window_touches_a_bounded_part_of_the_buffer():
    m = model("window", memory_block=4, memory_blocks=1, write_threshold=1.5)
    obs, act = walk(L=64)
    state = None
    for s in range(0, 64, 16):
        _, state = m(obs[:, s:s + 16], act[:, s:s + 16], state)
    # Memories before the window of the next step are never read again.
    # step 64 opens block 16; with one previous block its window starts at step 60
    assert m.window_start(64) == 60
    assert m._first_slot(state, m.window_start(state.t)) == 60


def _fam_update_reference(m, fam_g, fam_p, G, ZG, X, T, count, block_start):
    """Slow loop: each environment, each slot, attention over [slots; block memories]."""
    B, F_, _ = fam_g.shape
    beta = F.softplus(m.fam_beta_raw)
    new_g, new_p = torch.empty_like(fam_g), torch.empty_like(fam_p)
    for b in range(B):
        idx = [i for i in range(int(count[b])) if T[b, i] >= block_start]
        keys_g = [fam_g[b, f] for f in range(F_)] + [G[b, i] for i in idx]
        keys_z = [_z(fam_g[b, f]) for f in range(F_)] + [ZG[b, i] for i in idx]
        vals = [fam_p[b, f] for f in range(F_)] + [F.one_hot(X[b, i], N_OBS).float()
                                                    for i in idx]
        for f in range(F_):
            q = m.W_e(_z(fam_g[b, f]))
            logits = torch.stack([beta * (q @ m.W_e(k)) / math.sqrt(m.config.d_key)
                                  for k in keys_z])
            w = torch.softmax(logits, 0)
            new_g[b, f] = _rescale(sum(wi * k for wi, k in zip(w, keys_g, strict=True)))
            new_p[b, f] = sum(wi * v for wi, v in zip(w, vals, strict=True))
    return new_g, new_p


@torch.no_grad()
def test_fam_update_equals_slow_loop_reference():
    m = model("fam", memory_block=6, memory_blocks=1, fam_slots=3)
    torch.nn.init.normal_(m.W_e.weight)
    obs, act = walk(L=11)
    _, state = m(obs, act)  # one FAM update (after step 5); memories up to step 10
    before_g, before_p = state.fam_g.clone(), state.fam_p.clone()
    ref = _fam_update_reference(m, before_g, before_p, state.G, state.ZG, state.X, state.T,
                                state.count, block_start=6)
    m._fam_update(state, 6)
    torch.testing.assert_close(state.fam_g, ref[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(state.fam_p, ref[1], atol=1e-6, rtol=1e-5)
    assert torch.allclose(state.fam_p.sum(-1), torch.ones(3, 3))


@torch.no_grad()
def test_fam_slots_join_the_prediction():
    m = model("fam", memory_block=4, memory_blocks=0, fam_slots=2)
    obs, act = walk(L=20)
    out, state = m(obs, act, return_activity=True)
    assert out.fam_activity.shape == (3, 20, 2)
    # memories + slots share one softmax
    total = out.activity.sum(-1) + out.fam_activity.sum(-1)
    torch.testing.assert_close(total, torch.ones(3, 20))
    assert state.fam_g.shape == (3, 2, m.config.n_g)


def test_fam_slots_get_gradient():
    m = model("fam", memory_block=4, memory_blocks=0, fam_slots=2).train()
    obs, act = walk(L=24)
    out, _ = m(obs, act)
    F.cross_entropy(out.logits_pi.flatten(0, 1), obs.flatten()).backward()
    assert m.fam_init.grad is not None and m.fam_init.grad.abs().sum() > 0
    assert m.fam_beta_raw.grad is not None


# ------------------------- Hebbian (Whittington, Warren & Behrens 2022, appendix A.1)
def _rand(T=9, d=5, n=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    G = torch.randn(T, d, generator=gen, dtype=torch.float64)
    X = torch.rand(T, n, generator=gen, dtype=torch.float64)  # not one-hot: the general case
    return G, X, torch.randn(d, generator=gen, dtype=torch.float64), \
        torch.rand(n, generator=gen, dtype=torch.float64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hebbian_identities_eq14_to_17(seed):
    G, X, g, x = _rand(seed=seed)
    M = hebbian_matrix(G, X)
    lam_g, lam_x = torch.diag(G.sum(1)), torch.diag(X.sum(1))
    ones_d, ones_n = torch.ones_like(g), torch.ones_like(x)
    # (14) query g_PI: retrieves observations, g_PI G^T Λ_g Λ_x X
    torch.testing.assert_close(hebbian_retrieve(M, torch.outer(g, ones_n), "x"),
                               g @ G.T @ lam_g @ lam_x @ X)
    # (15) and (17) query x: retrieves positions, x X^T Λ_g Λ_x G
    torch.testing.assert_close(hebbian_retrieve(M, torch.outer(ones_d, x), "g"),
                               x @ X.T @ lam_g @ lam_x @ G)
    # (16) query g_PI (x) x: (x X^T ⊙ g_PI G^T) Λ_x G. The paper's last line prints Λ_g; its
    # own middle line sums x over l, i.e. Λ_x (the two agree only up to this for one-hot x,
    # where Λ_x = I).
    torch.testing.assert_close(hebbian_retrieve(M, torch.outer(g, x), "g"),
                               ((x @ X.T) * (g @ G.T)) @ lam_x @ G)
    assert not torch.allclose(hebbian_retrieve(M, torch.outer(g, x), "g"),
                              ((x @ X.T) * (g @ G.T)) @ lam_g @ G)


def test_hebbian_retrieve_rejects_unknown_output():
    G, X, g, x = _rand()
    with pytest.raises(ValueError, match="'x' or 'g'"):
        hebbian_retrieve(hebbian_matrix(G, X), torch.outer(g, x), "p")


@torch.no_grad()
def test_model_hebbian_state_is_the_matrix_read_out():
    m = model("hebbian")
    obs, act = walk(B=2, L=15)
    out, state = m(obs, act)
    for b in range(2):
        phi = torch.relu(_z(out.g[b])).double()
        X = F.one_hot(obs[b], N_OBS).double()
        M = hebbian_matrix(phi, X)
        q = torch.randn(m.config.n_g, dtype=torch.float64).relu()
        # eq. 14 from the full matrix equals the model's stored read-out V
        torch.testing.assert_close(hebbian_retrieve(M, torch.outer(q, torch.ones(N_OBS,
                                                    dtype=torch.float64)), "x"),
                                   state.hebb_V[b].double() @ q, atol=1e-3, rtol=1e-4)
        # the position memory H[j] = sum over visits of j of g phi^T
        j = int(obs[b, 3])
        H = sum(out.g[b, t, :, None] * phi[t].float()[None] for t in range(15)
                if int(obs[b, t]) == j)
        torch.testing.assert_close(state.hebb_H[b, j], H, atol=1e-4, rtol=1e-4)


@torch.no_grad()
def test_hebbian_predicts_a_revisited_observation():
    # Identity transitions: every step is the same place, so the stored x must win.
    m = model("hebbian", landmark="false")
    obs = torch.full((1, 6), 3)
    act = torch.zeros(1, 6, dtype=torch.long)
    out, _ = m(obs, act)
    assert int(out.logits_pi[0, -1].argmax()) == 3
    torch.testing.assert_close(out.logits_pi[0, 0], torch.full((N_OBS,), math.log(
        1 / N_OBS + 1e-3)))


@pytest.mark.parametrize("sets, match", [
    (["model.memory=fam", "model.fam_slots=0"], "fam_slots"),
    (["model.memory=window", "model.memory_blocks=-1"], "memory_blocks"),
    (["model.memory=window", "model.memory_block=0"], "memory_block"),
    (["model.memory=window", "model.kind=sinusoidal"], "kind"),
    (["model.memory=ring"], "memory must be one of"),
    (["model.memory=hebbian", "model.hebbian_decay=0"], "hebbian_decay"),
])
def test_bad_memory_configs(sets, match):
    with pytest.raises(ConfigError, match=match):
        load_config("tiny", sets)


@torch.no_grad()
def test_hebbian_decay_weights_old_memories_less():
    m = model("hebbian", hebbian_decay=0.9)
    obs, act = walk(B=2, L=12)
    out, state = m(obs, act)
    before = state.hebb_H.clone()
    _, state2 = m(obs, act, state)  # a second chunk must not touch the first one's state
    torch.testing.assert_close(state.hebb_H, before)
    for b in range(2):
        phi = torch.relu(_z(out.g[b]))
        j = int(obs[b, 0])
        H = sum(0.9 ** (11 - t) * out.g[b, t, :, None] * phi[t][None] for t in range(12)
                if int(obs[b, t]) == j)
        torch.testing.assert_close(state.hebb_H[b, j], H, atol=1e-4, rtol=1e-4)
