"""TEM's Hebbian memory is attention: appendix A.1 of Whittington, Warren & Behrens 2022
(the TEM-t paper, eqs. 12-17), checked on a trained tiny TEM's memory.

Eq. 12: p_ij = g̃_i x̃_j. Eq. 13: M_ijkl = Σ_τ g̃_i^τ x̃_j^τ g̃_k^τ x̃_l^τ (every memory
stored in full). Retrieval by one read of M is then attention over the stored steps:
eq. 14 (query g̃^PI ⊗ 1, read x̃): g̃^PI G̃ᵀ Λ_g Λ_x X̃; eq. 15 (query 1 ⊗ x̃, read g̃):
x̃ X̃ᵀ Λ_g Λ_x G̃; eq. 16 (query g̃^PI ⊗ x̃, read g̃): (x̃ X̃ᵀ ⊙ g̃^PI G̃ᵀ) Λ_x G̃; eq. 17: eq. 15
as a sum over τ. Λ_g = diag(Σ_k g̃_k^τ), Λ_x = diag(Σ_l x̃_l^τ). (Eq. 16 of the paper prints
Λ_g; its own derivation, Σ_l x̃_l^τ, and appendix A.2 give Λ_x, which is what holds.)

TEM itself stores only what it did not predict, with forgetting: M = Σ_τ λ^(t−1−τ) η
(p_τ + p̂_τ)ᵀ(p_τ − p̂_τ), so one read q M is linear attention with keys p_τ + p̂_τ, values
η(p_τ − p̂_τ) and weights λ^age (per receiving module, from lower frequencies only, in the
generative memory).
"""

import pytest
import torch

from hippo_rep.models.tem import attractor, f_p
from hippo_rep.training import trainer as T
from hippo_rep.training.checkpoint import load_checkpoint
from tests.test_tem import hebbian_update, memory_matrices, small_cfg, walk

#: TEM's annealing switched off so that the trained memory runs at its final η and λ.
FINAL_SCHEDULE = ("train.tem.eta_ramp=1", "train.tem.lambda_ramp=1", "train.tem.latent_ramp=1",
                  "train.tem.p2g_half=100000", "model.tem.lambda_=0.9")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny TEM (modules of 6 and 4 g units, 3 and 2 in the memory, 25 p units) trained
    for 10 iterations with λ = 0.9 (so that forgetting shows) and η = 0.5."""
    out = tmp_path_factory.mktemp("tem_a1") / "run"
    T.train(small_cfg("train.iterations=10", *FINAL_SCHEDULE), out, progress=False)
    m, _, _ = load_checkpoint(out / "checkpoint.pt")
    assert float(m.lam) == pytest.approx(0.9) and float(m.eta) == pytest.approx(0.5)
    return m.eval()


@pytest.fixture(scope="module")
def run(model):
    """A 30-step walk in two chunks (the second folds the first's terms into a matrix)."""
    obs, act = walk(B=3, L=30, seed=4)
    with torch.no_grad():
        a, state = model(obs[:, :8], act[:, :8])
        b, state = model(obs[:, 8:], act[:, 8:], state)
    assert state.D is not None  # the memory read below is (partly) the dense matrix
    cat = {k: torch.cat([getattr(a, k), getattr(b, k)], 1)
           for k in ("p", "p_hat_gen", "p_hat_inf", "g", "g_pi")}
    return obs, state, cat


def test_tem_hebbian_read_is_linear_attention_over_stored_pairs(model, run):
    obs, state, out = run
    T_ = obs.shape[1]
    eta, lam, kappa = float(model.eta), float(model.lam), model.config.tem.kappa
    weights = lam ** torch.arange(T_ - 1, -1, -1, dtype=torch.float32)  # age of each write
    module = model.unit_coords()["p_module"]
    conn = model.conn_gen.bool()  # conn[m, f]: module m sends to module f
    send_gen = conn[module][:, module].T  # [f unit, m unit]: unit m's module sends to f's
    M = memory_matrices(model, state)  # [M_gen, M_inf], (B, n_p, n_p), row = from
    torch.manual_seed(0)
    queries = torch.cat([out["p"][:, -1:], torch.rand(3, 4, model.n_p)], 1)  # (B, Q, n_p)
    for i, (p_hat, send) in enumerate(((out["p_hat_gen"], send_gen),
                                       (out["p_hat_inf"], None))):
        keys, values = out["p"] + p_hat, eta * (out["p"] - p_hat)
        if send is None:
            read = (queries @ keys.transpose(-1, -2) * weights) @ values
        else:  # one head per receiving unit's module: scores from its sending modules only
            scores = torch.einsum("bqn,fn,btn->bqft", queries, send.float(), keys)
            read = torch.einsum("bqft,t,btf->bqf", scores, weights, values)
        torch.testing.assert_close(queries @ M[i], read, atol=1e-5, rtol=1e-4)
        # one step of TEM's attractor retrieval is f_p(κ h + that attention read of h)
        h = f_p(queries)
        step = attractor(queries, lambda x, m=M[i]: x @ m, kappa,
                         torch.ones(model.n_p, dtype=torch.long))
        if send is None:
            att = (h @ keys.transpose(-1, -2) * weights) @ values
        else:
            att = torch.einsum("bqft,t,btf->bqf",
                               torch.einsum("bqn,fn,btn->bqft", h, send.float(), keys),
                               weights, values)
        torch.testing.assert_close(step, f_p(kappa * h + att), atol=1e-5, rtol=1e-4)
    # and the write rule itself: the dense recursion gives the same matrices
    dense = torch.zeros(2, 3, model.n_p, model.n_p)
    mask = send_gen.T.float()  # [from unit, to unit]
    for t in range(T_):
        for i, (p_hat, m) in enumerate(((out["p_hat_gen"], mask), (out["p_hat_inf"], None))):
            dense[i] = hebbian_update(dense[i], out["p"][:, t], p_hat[:, t], lam, eta, m)
    torch.testing.assert_close(M, dense, atol=1e-5, rtol=1e-4)


def x_tilde(model, obs):
    """TEM's filtered, normalised sensory input x̃ per module, (B, L, n_f, n_x), recomputed
    from the observations with the model's learned rates α and weights w_p."""
    alpha = torch.sigmoid(model.alpha_raw)[None, :, None]
    w_p = torch.sigmoid(model.w_p)[None, :, None]
    x_f = torch.zeros(obs.shape[0], model.n_f, model.n_x)
    out = []
    for t in range(obs.shape[1]):
        x_f = (1 - alpha) * x_f + alpha * model.two_hot[obs[:, t]][:, None, :]
        xr = torch.relu(x_f - x_f.mean(-1, keepdim=True))
        out.append(w_p * xr / (xr.norm(dim=-1, keepdim=True) + 1e-8))
    return torch.stack(out, 1)


def test_a1_identities_on_trained_tem_memory(model, run):
    obs, _, out = run
    n_sub = model.config.tem.n_g_sub[0]
    g_idx = model.pad_idx[0, :n_sub]  # g̃ of module 0: its first n_sub units
    X = x_tilde(model, obs)[:, :, 0]  # (B, L, n_x)
    G = out["g"][..., g_idx]  # (B, L, n_sub)
    # the test's g̃ and x̃ are the trained model's: p_inf = f_p(g̃ ⊗ x̃) (eq. 12 and f_p)
    p0 = out["p"][..., model.unit_coords()["p_module"] == 0]
    torch.testing.assert_close(p0, f_p((G[..., :, None] * X[..., None, :]).flatten(-2)),
                               atol=1e-6, rtol=1e-5)
    a, c = n_sub, model.n_x
    for b in range(obs.shape[0]):
        Gb, Xb = G[b, :-1].double(), X[b, :-1].double()  # stored steps τ < t
        g_pi, x_t = out["g_pi"][b, -1, g_idx].double(), X[b, -1].double()  # queries at t
        P = (Gb[:, :, None] * Xb[:, None, :]).flatten(1)  # eq. 12, (τ, a c)
        # eq. 13 with TEM's own Hebbian rule, every memory stored in full (p̂ = 0, λ = η = 1)
        M = torch.zeros(1, a * c, a * c, dtype=torch.float64)
        for tau in range(P.shape[0]):
            M = hebbian_update(M, P[tau][None], torch.zeros_like(P[tau][None]), 1.0, 1.0)
        M4 = M[0].view(a, c, a, c)
        torch.testing.assert_close(M4, torch.einsum("ti,tj,tk,tl->ijkl", Gb, Xb, Gb, Xb))
        lam_g, lam_x = torch.diag(Gb.sum(1)), torch.diag(Xb.sum(1))
        # eq. 14: query g̃^PI on every sensory unit, read the sensory part
        q = (g_pi[:, None] * torch.ones(c, dtype=torch.float64)).flatten()
        torch.testing.assert_close((q @ M[0]).view(a, c).sum(0),
                                   g_pi @ Gb.T @ lam_g @ lam_x @ Xb)
        # eq. 15: query x̃ on every g unit, read the g part
        q = (torch.ones(a, dtype=torch.float64)[:, None] * x_t).flatten()
        read = (q @ M[0]).view(a, c).sum(1)
        torch.testing.assert_close(read, x_t @ Xb.T @ lam_g @ lam_x @ Gb)
        # eq. 17: the same as a sum over the stored steps
        torch.testing.assert_close(read, sum(Gb[tau] * Gb[tau].sum() * Xb[tau].sum()
                                             * (x_t @ Xb[tau]) for tau in range(len(Gb))))
        # eq. 16: the conjunctive query g̃^PI ⊗ x̃: TEM-t's landmark query, scores the
        # elementwise product of the two attentions, weighted by Λ_x
        q = (g_pi[:, None] * x_t[None, :]).flatten()
        read = (q @ M[0]).view(a, c).sum(1)
        scores = (x_t @ Xb.T) * (g_pi @ Gb.T)
        torch.testing.assert_close(read, scores @ lam_x @ Gb)
        assert not torch.allclose(read, scores @ lam_g @ Gb)  # the printed Λ_g does not hold
