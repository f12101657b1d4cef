"""TEM (model.kind = "tem"): Hebbian memory, attractor, chunking, schedule, config errors."""

import pytest
import torch

from hippo_rep import cli
from hippo_rep.config import ConfigError, load_config
from hippo_rep.models import build_model
from hippo_rep.models.tem import TEM, attractor, f_p, tem_schedule
from hippo_rep.training import trainer as T
from hippo_rep.training.evaluate import evaluate_checkpoint

#: A TEM small enough for tests: two modules (6 and 4 units, 3 and 2 in the memory), x_c of
#: 5 units → p has (3 + 2) x 5 = 25 units, so walks of > 12 steps fold the memory.
SMALL = ['model.kind="tem"', "model.tem.n_g=[6,4]", "model.tem.n_g_sub=[3,2]",
         "model.tem.freqs=[0.9,0.2]", "model.tem.iters_gen=[2,1]", "model.tem.iters_inf=[2,2]",
         "model.tem.n_x_c=5", "model.tem.transition_hidden=4"]


def hebbian_update(M: torch.Tensor, p: torch.Tensor, p_hat: torch.Tensor, lam: float,
                   eta: float, mask: torch.Tensor | None = None) -> torch.Tensor:
    """One dense Hebbian step M ← λ M + η (p + p̂)ᵀ (p − p̂) (row = from unit, column = to).

    M (B, n, n); p, p_hat (B, n); ``mask`` (n, n) keeps allowed connections. The reference
    the factored memory of :class:`~hippo_rep.models.tem.TEM` is tested against.
    """
    new = (p + p_hat)[:, :, None] * (p - p_hat)[:, None, :]
    if mask is not None:
        new = new * mask
    return lam * M + eta * new


def memory_matrices(model: TEM, state) -> torch.Tensor:
    """[M_gen, M_inf] of ``state`` as dense (2, B, n_p, n_p) matrices over the units of
    ``model.p_units`` (row = from unit): the factored memory folded."""
    folded = model.fold(state)
    B = state.g.shape[0]
    if folded.D is None:
        return state.U.new_zeros(2, B, model.n_p, model.n_p)
    return folded.D[:, :, model.p_pos][:, :, :, model.p_pos]


def small_cfg(*extra):
    return load_config("tiny", [*SMALL, *extra])


def small_model(seed=0, *extra) -> TEM:
    cfg = small_cfg(*extra)
    model = build_model(cfg.model, 5, cfg.world.n_obs, seed=seed)
    # Non-trivial transitions and η, λ (a fresh model's D_a is zero).
    with torch.no_grad():
        model.D_out.weight.normal_(0, 0.3)
        model.lam.fill_(0.8)
        model.eta.fill_(0.5)
    return model.eval()


def walk(B=3, L=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 10, (B, L), generator=g), torch.randint(1, 5, (B, L), generator=g)


# ------------------------------------------------------------------ hand-computed cases
def test_hebbian_update_hand_case():
    M0 = torch.eye(2)[None]
    p, p_hat = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.5, 0.5]])
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])  # no connection from unit 0 to unit 1
    M = hebbian_update(M0, p, p_hat, lam=0.9, eta=0.5, mask=mask)
    # (p + p̂)ᵀ(p − p̂) = [1.5, 0.5]ᵀ[0.5, −0.5] = [[0.75, −0.75], [0.25, −0.25]], masked,
    # then 0.9 I + 0.5 · that
    expected = torch.tensor([[0.9 + 0.375, 0.0], [0.125, 0.9 - 0.125]])
    torch.testing.assert_close(M[0], expected)


def test_f_p_and_attractor_hand_case():
    torch.testing.assert_close(f_p(torch.tensor([-2.0, -0.5, 0.3, 3.0])),
                               torch.tensor([-0.01, -0.005, 0.3, 1.0]))
    M = torch.tensor([[0.5, 0.0], [0.25, 0.5]])
    q = torch.tensor([[0.5, 0.25]])
    iters = torch.tensor([2, 1])  # unit 1's module stops after one iteration
    h = attractor(q, lambda h: h @ M, kappa=0.8, iters=iters)
    # iteration 1: 0.8 [0.5, 0.25] + [0.25 + 0.0625, 0.125] = [0.7125, 0.325]
    # iteration 2 (unit 0 only): 0.8 · 0.7125 + 0.7125 · 0.5 + 0.325 · 0.25 = 1.0075 → 1
    torch.testing.assert_close(h, torch.tensor([[1.0, 0.325]]))


def test_schedule_ramps_and_decays():
    cfg = load_config("tem")
    mc, tc = cfg.model, cfg.train
    s0, s_half, s_end = (tem_schedule(mc, tc, i) for i in (0, tc.tem.p2g_half, 10**6))
    assert s0["eta"] == pytest.approx(mc.tem.eta / tc.tem.eta_ramp)
    assert s0["lambda"] == pytest.approx(mc.tem.lambda_ / tc.tem.lambda_ramp)
    assert s_end["eta"] == mc.tem.eta and s_end["lambda"] == mc.tem.lambda_
    assert s_half["p2g_offset"] == pytest.approx(0.5)
    assert s0["p2g_offset"] > 0.8 and s_end["p2g_offset"] < 1e-6
    assert s0["weights"]["g"] == pytest.approx(tc.tem.loss_g / tc.tem.latent_ramp)
    assert s0["weights"]["reg_p"] == tc.tem.loss_reg_p and s_end["weights"]["reg_p"] == 0
    assert s_end["weights"]["p_x"] == pytest.approx(tc.tem.loss_p)


def test_tem_preset_trains_as_torch_tem():
    """torch_tem: an Adam step per 20-step chunk, 20,000 of them, losses at revisits only."""
    cfg = load_config("tem")
    assert cfg.train.chunk_len == 20 and cfg.train.tem.loss_on == "revisits"
    assert T.updates_per_walk(cfg) * cfg.train.iterations == 20_000


def _loop_loss(model, out, iteration, tc, revisit):
    """torch_tem's reduction, written as its loop: per step, the weighted term vector of
    each environment that revisits there, averaged over those environments; summed over
    steps (here / L, a constant scale)."""
    w = tem_schedule(model.config, tc, iteration)["weights"]
    B, L = revisit.shape
    total = torch.tensor(0.0)
    for t in range(L):
        envs = [b for b in range(B) if revisit[b, t]]
        if envs:
            total = total + sum(sum(w[k] * out.step_terms[k][b, t] for k in w)
                                for b in envs) / len(envs)
    return total / L


@pytest.mark.parametrize("pattern", ["mixed", "all", "none"])
def test_revisit_only_loss_is_torch_tems_reduction(pattern):
    model = small_model()
    obs, act = walk(B=3, L=12)
    out, _ = model(obs, act)
    tc = small_cfg('train.tem.loss_on="revisits"').train
    g = torch.Generator().manual_seed(1)
    revisit = {"mixed": torch.rand(3, 12, generator=g) < 0.5,
               "all": torch.ones(3, 12, dtype=torch.bool),
               "none": torch.zeros(3, 12, dtype=torch.bool)}[pattern]
    revisit[:, 0] = False  # a walk's first step is never a revisit
    got = model.training_losses(out, 700, tc, revisit=revisit)["loss"]
    torch.testing.assert_close(got, _loop_loss(model, out, 700, tc, revisit))
    every = model.training_losses(out, 700, small_cfg().train)["loss"]  # tem.loss_on "all"
    if pattern == "none":
        assert got == 0
    elif pattern == "mixed":  # first visits and unequal env counts change the loss
        assert abs(float(got.detach() - every.detach())) > 1e-3
    with pytest.raises(ValueError, match="revisit mask"):
        model.training_losses(out, 700, tc)


# ------------------------------------------------------------------ the model's memory
#: Module frequencies falling with the index (TEM's order) or rising (the general path).
FREQ_ORDERS = [("model.tem.freqs=[0.9,0.2]",), ("model.tem.freqs=[0.2,0.9]",)]


@pytest.mark.parametrize("extra", FREQ_ORDERS)
def test_memory_holds_the_hebbian_rule_of_p_inf(extra):
    """The stored rank-one terms are TEM's rule applied to p_inf and the retrieved p̂: the
    dense recursion M ← λM + η(p + p̂)ᵀ(p − p̂) over the same steps gives the same matrices,
    the generative one without connections from high- to low-frequency modules."""
    model = small_model(0, *extra)
    obs, act = walk(L=10)
    with torch.no_grad():
        out, state = model(obs, act)
    eta, lam = float(model.eta), float(model.lam)
    n_p = model.n_p
    mask = torch.ones(n_p, n_p)
    if model.config.tem.freqs[0] > model.config.tem.freqs[1]:
        mask[:15, 15:] = 0  # module 0 (units 0-14, high frequency) does not send to module 1
    else:
        mask[15:, :15] = 0  # module 1 (units 15-24) is the high-frequency one
    for i, m in enumerate((mask, None)):
        U = model.p_units(state.U[i].transpose(1, 2))  # (B, K, n_p)
        V = model.p_units(state.V[i].transpose(1, 2)) / eta
        p, p_hat = (U + V) / 2, (U - V) / 2
        torch.testing.assert_close(p, out.p, atol=1e-6, rtol=0)  # what is stored is p_inf
        M = torch.zeros(obs.shape[0], n_p, n_p)
        for t in range(obs.shape[1]):
            M = hebbian_update(M, p[:, t], p_hat[:, t], lam, eta, m)
        torch.testing.assert_close(memory_matrices(model, state)[i], M, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("extra", FREQ_ORDERS)
def test_factored_read_equals_dense_matrix_product(extra):
    model = small_model(0, *extra)
    assert model.conn_suffix == (model.config.tem.freqs[0] > model.config.tem.freqs[1])
    obs, act = walk(L=20)
    with torch.no_grad():
        _, state = model(obs[:, :8], act[:, :8])
        _, state = model(obs[:, 8:], act[:, 8:], state)  # folds the first 8 steps
        assert state.D is not None and state.n_terms == 12
        M = memory_matrices(model, state)
        h = torch.randn(obs.shape[0], 1, model.n_f, model.P) * model.pad_mask.repeat_interleave(
            model.n_x, -1)
        K = state.n_terms
        w = float(model.lam) ** torch.arange(K - 1, -1, -1, dtype=torch.float32)
        none = (None, None, torch.zeros(0))
        for i, conn in enumerate((model.conn_gen, model.conn_inf)):
            got = model._read_all(h, (state.U[i], state.V[i], w), none, state.D[i],
                                  float(model.lam) ** K, conn)
            want = model.p_units(h) @ M[i]
            torch.testing.assert_close(model.p_units(got), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("extra", FREQ_ORDERS)
@pytest.mark.parametrize("grad", [False, True])
def test_chunked_walk_equals_whole_walk(grad, extra):
    model = small_model(0, *extra)
    obs, act = walk(L=40)
    with torch.set_grad_enabled(grad):
        whole, s_whole = model(obs, act)
        outs, state = [], None
        for s in range(0, 40, 7):
            out, state = model(obs[:, s:s + 7], act[:, s:s + 7], state)
            outs.append(out)
            state = state.detach()
    for f in ("logits_pi", "logits_g", "g", "g_pi", "p"):
        torch.testing.assert_close(torch.cat([getattr(o, f) for o in outs], 1),
                                   getattr(whole, f), atol=1e-5, rtol=1e-4)
    assert state.t == s_whole.t == 40
    torch.testing.assert_close(memory_matrices(model, state), memory_matrices(model, s_whole),
                               atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(state.x_f, s_whole.x_f)


def test_long_walk_without_gradient_is_split_and_unchanged():
    model = small_model()
    obs, act = walk(L=150)
    with torch.no_grad():
        whole, _ = model(obs, act)  # internally in sub-chunks of NOGRAD_CHUNK steps
    with torch.enable_grad():
        ref, _ = model(obs, act)
    torch.testing.assert_close(whole.logits_pi, ref.logits_pi.detach(), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(whole.p, ref.p.detach(), atol=1e-5, rtol=1e-4)


def test_first_prediction_depends_on_nothing_seen():
    """x_t is predicted from g_gen and the memory before x_t: changing x_t leaves it."""
    model = small_model()
    obs, act = walk(L=12)
    obs2 = obs.clone()
    obs2[:, 9] = (obs2[:, 9] + 1) % 10
    with torch.no_grad():
        a, _ = model(obs, act)
        b, _ = model(obs2, act)
    torch.testing.assert_close(a.logits_pi[:, :10], b.logits_pi[:, :10])
    assert not torch.allclose(a.logits_pi[:, 10:], b.logits_pi[:, 10:])


# ------------------------------------------------------------------ training
def test_resume_after_interrupt_equals_uninterrupted(tmp_path, monkeypatch):
    cfg = small_cfg("train.iterations=6", "train.chunk_len=16", "train.checkpoint_every=2",
                    "train.tem.eta_ramp=4", "train.tem.lambda_ramp=3")
    T.train(cfg, tmp_path / "a", progress=False)
    ref = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=True)["model_state"]
    header = (tmp_path / "a" / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"tem_p_g", "tem_x_gen", "tem_reg_p"} <= set(header)
    real_step = T.Trainer.step

    def interrupted(self, iteration):
        if iteration == 3:
            raise KeyboardInterrupt
        return real_step(self, iteration)

    monkeypatch.setattr(T.Trainer, "step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        T.train(cfg, tmp_path / "b", progress=False)
    monkeypatch.setattr(T.Trainer, "step", real_step)
    T.train(cfg, tmp_path / "b", resume=True, progress=False)
    got = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)["model_state"]
    assert set(got) == set(ref)
    for k in ref:
        torch.testing.assert_close(got[k], ref[k], rtol=0, atol=0)
    res = evaluate_checkpoint(tmp_path / "b" / "checkpoint.pt", n_envs=2)
    assert res["meta"]["model_kind"] == "tem" and 0 <= res["model"]["all"] <= 1


def test_delay_refuses_tem_in_one_line(tmp_path, capsys):
    """``delay`` works on TEM-t's memory variants only (recording TEM: test_tem_recording)."""
    T.train(small_cfg("train.iterations=1"), tmp_path / "a", progress=False)
    ck = str(tmp_path / "a" / "checkpoint.pt")
    rc = cli.main(["delay", ck, "--out", str(tmp_path / "delay.nc")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "TEM" in err, err
    assert not (tmp_path / "delay.nc").exists()


def test_evaluate_reports_no_memory_count_for_tem(tmp_path, capsys):
    """TEM has no memory slots: the evaluation says nothing about memories per node (it
    printed a misleading 0.00) while TEM-t's evaluation still counts them."""
    T.train(small_cfg("train.iterations=1"), tmp_path / "a", progress=False)
    ck = str(tmp_path / "a" / "checkpoint.pt")
    assert evaluate_checkpoint(ck, n_envs=2, n_steps=30)["memory"] is None
    assert cli.main(["evaluate", ck, "--envs", "2", "--steps", "30"]) == 0
    assert "memories per node" not in capsys.readouterr().out
    T.train(load_config("tiny", ["train.iterations=1"]), tmp_path / "t", progress=False)
    res = evaluate_checkpoint(tmp_path / "t" / "checkpoint.pt", n_envs=2, n_steps=30)
    assert res["memory"]["memories_per_node"] > 0


def test_tiny_tem_beats_chance_on_held_out_revisits(tmp_path):
    """~1 minute of training on the tiny preset (4x4 worlds, 10 observations). TEM's own
    schedule ramps η over 16,000 iterations and lets inference trust memory-inferred g only
    after ~400; here η, λ and the latent losses are on from the start and inference keeps
    to path integration (p2g offset held at 1), the setting that learned fastest here.
    Measured (100 iterations, 20–50 s on a busy 2-core machine; 16 held-out walks), training
    seeds 0 / 1 / 2: revisit 0.28 / 0.28 / 0.20, loop closure 0.26 / 0.28 / 0.19, first visit
    0.08 / 0.07 / 0.11 (chance 0.1); the bounds below hold for all three."""
    cfg = load_config("tiny", [*SMALL[:1], "model.tem.n_g=[12,12]", "model.tem.n_g_sub=[4,4]",
                               "model.tem.freqs=[0.99,0.3]", "model.tem.iters_gen=[2,1]",
                               "model.tem.iters_inf=[2,2]", "model.tem.n_x_c=5",
                               "train.iterations=100", "train.lr=1e-2",
                               "train.tem.eta_ramp=1", "train.tem.lambda_ramp=1",
                               "train.tem.latent_ramp=1", "train.tem.reg_p_decay=1",
                               "train.tem.p2g_half=100000"])
    T.train(cfg, tmp_path / "r", progress=False)
    res = evaluate_checkpoint(tmp_path / "r" / "checkpoint.pt", n_envs=16, seed=5)
    chance = 1 / cfg.world.n_obs
    assert res["model"]["revisit"] > 1.5 * chance
    assert res["model"]["revisit_new_edge"] > 1.5 * chance
    assert res["model"]["first_visit"] < 2 * chance  # nothing can be known there


# ------------------------------------------------------------------ config errors
@pytest.mark.parametrize("override,needle", [
    ("model.tem.n_g_sub=[7,2]", "model.tem.n_g_sub[0] = 7 exceeds model.tem.n_g[0] = 6"),
    ("model.tem.freqs=[0.9]", "model.tem.freqs must have one entry per module"),
    ("model.tem.freqs=[0.9,1.5]", "model.tem.freqs entries must be > 0 and < 1"),
    ("model.tem.iters_gen=[2,-1]", "model.tem.iters_gen entries must be ≥ 0"),
    ("model.tem.n_g=[6,0]", "model.tem.n_g entries must be ≥ 1"),
    ("model.tem.n_x_c=4", "model.tem.n_x_c = 4 has 6 two-hot codes, fewer than world.n_obs"),
    ("model.tem.n_g=6", "model.tem.n_g must be a list"),
])
def test_bad_tem_values_are_one_line_errors(tmp_path, capsys, override, needle):
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        small_cfg(override)
    args = ["train", "--config", "tiny", "--out", str(tmp_path / "r"), "--no-progress"]
    for o in [*SMALL, override]:
        args += ["--set", o]
    rc = cli.main(args)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "r").exists()
